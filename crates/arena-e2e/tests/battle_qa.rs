//! Q&A battles started from the launcher and watched in the battle view:
//! the two lanes, streaming output, the winner picker over the analysis,
//! and history across an app restart.
//!
//! Needs a display and the drivers; see the crate docs.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use arena_core::battle::WinnerSource;
use arena_core::{Battle, Lane};
use arena_e2e::arena_testserver::{Fault, ModelScript, TestServer};
use arena_e2e::{
    config_toml, contestant_with_model, App, BattleForm, BattleSnapshot, Harness, ProviderEntry,
};

/// How long a whole battle may take in the window.
const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);
/// How soon the winner display must follow the winner picker.
const WINNER_SHOWS_WITHIN: Duration = Duration::from_secs(2);

/// `words` words of plain text (no Markdown syntax), distinct per `label`.
fn answer(label: &str, words: usize) -> String {
    let body: Vec<String> = (1..=words).map(|i| format!("{label}{i}")).collect();
    format!("Answer from {label}: {}.", body.join(" "))
}

/// Whitespace collapsed, ends trimmed: rendered Markdown and the streamed
/// text differ only in that.
fn normalise(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The battle as the engine has it (the app may still be running: reading
/// the database is fine from any process).
async fn engine_battle(h: &Harness, id: &str) -> Result<Battle> {
    h.engine()?
        .battle(id)
        .await
        .with_context(|| format!("reading battle {id} through the engine"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qa_battle_runs_local_one_at_a_time_and_cloud_together() -> Result<()> {
    let Some(h) = Harness::start("qa_battle_runs_local_one_at_a_time_and_cloud_together").await?
    else {
        return Ok(());
    };
    // Slow enough to watch: ~2.4 s per local answer, ~3 s per cloud answer.
    let local = h.server();
    let cloud = TestServer::start()
        .await
        .context("starting the cloud server")?;
    let mut expected = BTreeMap::new();
    for (server, model, rate) in [
        (local, "local-a", 25.0),
        (local, "local-b", 25.0),
        (&cloud, "cloud-a", 20.0),
        (&cloud, "cloud-b", 20.0),
    ] {
        let text = answer(model, 58);
        let script = ModelScript::text(&text).rate(rate);
        expected.insert(model, (text, script.content.len()));
        server.set_model(model, script);
    }
    h.write_config(&config_toml(
        &[
            ProviderEntry::local("local", local),
            ProviderEntry::cloud("cloud", &cloud),
        ],
        None,
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let form = BattleForm::qa(
        &project,
        "Explain lanes in two sentences.",
        &[
            ("Debugger", "local-a"),
            ("Explainer", "local-b"),
            ("Architect", "cloud-a"),
            ("Code Reviewer", "cloud-b"),
        ],
    );
    app.open_launcher().await?;
    app.fill_launcher(&form).await?;
    app.screenshot("launcher").await?;
    app.press_start().await?;
    let id = wait_for_battle_route(&app).await?;

    // Watch the roster until the battle is done.
    let watched = watch_battle(&app).await?;
    let battle = engine_battle(&h, &id).await?;
    ensure!(
        battle.contestants.len() == 4,
        "the engine has {} contestants",
        battle.contestants.len()
    );
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    // The finished outputs render as Markdown and the final figures land
    // (possibly a moment after the status).
    let final_snap = app
        .wait_until(
            "every output rendered and every token count shown",
            Duration::from_secs(10),
            || async {
                let snap = app.battle_snapshot().await?;
                let mut settled =
                    snap.outputs.len() == 4 && snap.outputs.iter().all(|o| o.markdown);
                for c in &battle.contestants {
                    settled &= row_cells(&app, &c.id)
                        .await?
                        .tokens
                        .chars()
                        .any(|ch| ch.is_ascii_digit());
                }
                Ok(settled.then_some(snap))
            },
        )
        .await?;
    app.screenshot("battle-qa").await?;

    let mut cloud_ids = BTreeSet::new();
    for c in &battle.contestants {
        let row = final_snap
            .row(&c.id)
            .with_context(|| format!("no roster row for {} ({})", c.id, c.model))?;
        ensure!(
            row.lane.as_deref() == Some(c.lane.as_str()),
            "{} runs in the {} lane, its row says data-lane={:?}",
            c.model,
            c.lane,
            row.lane
        );
        if c.lane == Lane::Cloud {
            cloud_ids.insert(c.id.clone());
        }
        // Streamed: seen at two different lengths while running.
        let lengths = watched.lengths_while_running.get(&c.id);
        ensure!(
            lengths.is_some_and(|l| l.len() >= 2),
            "the output of {} was not seen growing while it ran (lengths seen: {:?})",
            c.model,
            lengths
        );
        let (want, tokens) = expected
            .get(c.model.as_str())
            .with_context(|| format!("unexpected model {}", c.model))?;
        let cells = row_cells(&app, &c.id).await?;
        ensure!(
            cells.tokens.replace(|ch: char| !ch.is_ascii_digit(), "") == tokens.to_string(),
            "the roster shows {:?} tokens for {}, the server sent {tokens}",
            cells.tokens,
            c.model
        );
        ensure!(
            cells.status == "done" && cells.lane == c.lane.as_str(),
            "the status and lane cells of {} read {:?} and {:?}",
            c.model,
            cells.status,
            cells.lane
        );
        ensure!(
            !cells.elapsed.is_empty()
                && cells.elapsed != "—"
                && !cells.tps.is_empty()
                && cells.tps != "—",
            "the roster shows no elapsed time ({:?}) or tok/s ({:?}) for {}",
            cells.elapsed,
            cells.tps,
            c.model
        );
        let shown = final_snap.output(&c.id);
        ensure!(
            normalise(shown) == normalise(want),
            "the output of {} reads {shown:?}, the server sent {want:?}",
            c.model
        );
        ensure!(
            final_snap.pane(&c.id).is_some_and(|p| p.markdown),
            "the finished output of {} is not rendered as Markdown (class markdown)",
            c.model
        );
    }
    ensure!(
        watched.cancel_offered,
        "no cancel-battle button was seen while the battle ran"
    );
    app.wait_for("[data-testid=bench-chart]").await?;
    ensure!(
        app.count("[data-testid=bench-chart] rect").await? >= 2 * 4,
        "the speed chart lacks a duration and a tok/s bar per contestant"
    );
    ensure!(
        cloud_ids.len() == 2,
        "expected 2 cloud contestants, the engine has {cloud_ids:?}"
    );
    ensure!(
        watched
            .cloud_together
            .as_ref()
            .is_some_and(|together| *together == cloud_ids),
        "the two cloud contestants were never seen running at the same time; \
         running sets seen: {:?}",
        watched.running_sets
    );
    app.close().await
}

/// What was seen while polling the battle view.
struct Watched {
    /// Per contestant, the distinct non-empty output lengths while its row
    /// said running.
    lengths_while_running: BTreeMap<String, BTreeSet<usize>>,
    /// The cloud contestants seen running at the same instant, if ever.
    cloud_together: Option<BTreeSet<String>>,
    /// Each distinct set of running contestants, in order, for messages.
    running_sets: Vec<Vec<String>>,
    /// Whether the cancel-battle button was seen while the battle ran.
    cancel_offered: bool,
}

/// The text of one roster row's cells.
#[derive(Debug, serde::Deserialize)]
struct Cells {
    status: String,
    lane: String,
    elapsed: String,
    tokens: String,
    tps: String,
}

async fn row_cells(app: &App, id: &str) -> Result<Cells> {
    app.js(
        "const row = document.querySelector(`[data-testid=roster-row][data-contestant-id=\"${arguments[0]}\"]`);
         if (!row) return null;
         const cell = name => (row.querySelector(`[data-testid=cell-${name}]`)?.textContent ?? '').trim();
         return { status: cell('status'), lane: cell('lane'), elapsed: cell('elapsed'), tokens: cell('tokens'), tps: cell('tps') };",
        vec![id.into()],
    )
    .await
    .with_context(|| format!("reading the roster cells of {id}"))
}

/// Polls the battle view until it reads done; fails at once if two local
/// contestants ever run at the same instant.
async fn watch_battle(app: &App) -> Result<Watched> {
    let mut watched = Watched {
        lengths_while_running: BTreeMap::new(),
        cloud_together: None,
        running_sets: Vec::new(),
        cancel_offered: false,
    };
    let deadline = Instant::now() + BATTLE_TIMEOUT;
    let mut shot = false;
    loop {
        let snap = app.battle_snapshot().await?;
        check_lanes(&snap, &mut watched)?;
        if !watched.cancel_offered && snap.status.as_deref() == Some("running") {
            watched.cancel_offered = app.is_visible("button[data-testid=cancel-battle]").await?;
        }
        if watched.cloud_together.is_some() && !shot {
            shot = true;
            app.screenshot("battle-qa-running").await?;
        }
        if snap.all("done") {
            return Ok(watched);
        }
        if Instant::now() > deadline {
            bail!(
                "the battle was not done within {BATTLE_TIMEOUT:?}; last seen: {}\n{}",
                snap.describe(),
                app.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn check_lanes(snap: &BattleSnapshot, watched: &mut Watched) -> Result<()> {
    let running: Vec<_> = snap
        .rows
        .iter()
        .filter(|r| r.status.as_deref() == Some("running"))
        .collect();
    let local: Vec<_> = running
        .iter()
        .filter(|r| r.lane.as_deref() == Some("local"))
        .collect();
    ensure!(
        local.len() <= 1,
        "two local contestants ran at the same time: {}",
        snap.describe()
    );
    let cloud: BTreeSet<String> = running
        .iter()
        .filter(|r| r.lane.as_deref() == Some("cloud"))
        .filter_map(|r| r.id.clone())
        .collect();
    if cloud.len() == 2 {
        watched.cloud_together.get_or_insert(cloud);
    }
    let ids: Vec<String> = running.iter().filter_map(|r| r.id.clone()).collect();
    if watched.running_sets.last() != Some(&ids) {
        watched.running_sets.push(ids);
    }
    for row in running {
        let Some(id) = &row.id else { continue };
        let len = snap.output(id).len();
        if len > 0 {
            watched
                .lengths_while_running
                .entry(id.clone())
                .or_default()
                .insert(len);
        }
    }
    Ok(())
}

/// Waits for the launcher to open the new battle; returns its id.
async fn wait_for_battle_route(app: &App) -> Result<String> {
    app.wait_until(
        "the launcher to open #/battle/<id>",
        Duration::from_secs(30),
        || async {
            let hash = app.hash().await?;
            Ok(hash
                .strip_prefix("#/battle/")
                .filter(|id| !id.is_empty())
                .map(str::to_string))
        },
    )
    .await
}

/// A judge that prefers the answer whose digest says "correct" (the
/// engine's two-stage analysis: a digest per answer, then the verdict).
fn paris_judge() -> ModelScript {
    ModelScript::respond_with(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let system = messages
            .first()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let user = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        if system.contains("You summarise one answer") {
            return if user.contains("Paris") {
                "Says Paris, correct."
            } else {
                "Says Lyon, wrong."
            }
            .into();
        }
        let mut label = "A";
        let mut best = "A";
        for line in user.lines() {
            if let Some(rest) = line.strip_prefix("Answer ") {
                label = rest.get(..1).unwrap_or("A");
            }
            if line.contains("correct.") {
                best = label;
            }
        }
        format!("{{\"winner\": \"{best}\", \"reasons\": {{\"{best}\": \"names the capital\"}}}}")
    })
}

/// The winner display's `(data-contestant-id, data-source)`.
async fn winner_shown(app: &App) -> Result<(Option<String>, Option<String>)> {
    let display = app
        .client()
        .find(arena_e2e::Locator::Css("[data-testid=winner-display]"))
        .await?;
    Ok((
        display.attr("data-contestant-id").await?,
        display.attr("data-source").await?,
    ))
}

/// Waits until the winner display shows `id` chosen by `source`; returns
/// how long that took.
async fn wait_winner(app: &App, id: &str, source: &str, timeout: Duration) -> Result<Duration> {
    let start = Instant::now();
    let last = std::sync::Mutex::new(None);
    let waited = app
        .wait_until(
            &format!("the winner display to show {id} ({source})"),
            timeout,
            || async {
                let shown = winner_shown(app).await?;
                let ok = shown.0.as_deref() == Some(id) && shown.1.as_deref() == Some(source);
                if let Ok(mut seen) = last.lock() {
                    *seen = Some(shown);
                }
                Ok(ok.then(|| start.elapsed()))
            },
        )
        .await;
    waited.with_context(|| {
        let seen = last.lock().ok().and_then(|s| s.clone());
        format!("the winner display showed (contestant, source) = {seen:?}")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn winner_picker_overrides_the_analysis_at_once() -> Result<()> {
    let Some(h) = Harness::start("winner_picker_overrides_the_analysis_at_once").await? else {
        return Ok(());
    };
    let cloud = h.server();
    // A judge that takes its time on each request, as a real one does.
    cloud.set_model(
        "judge",
        paris_judge().first_token_delay(Duration::from_millis(700)),
    );
    cloud.set_model("good", ModelScript::text("The capital of France is Paris."));
    cloud.set_model("bad", ModelScript::text("The capital of France is Lyon."));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloud", cloud)],
        Some("judge"),
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "What is the capital of France?",
            &[("Debugger", "good"), ("Explainer", "bad")],
        ))
        .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    let battle = engine_battle(&h, &id).await?;
    let by_model = |model: &str| contestant_with_model(&battle, model);
    let (good, bad) = (by_model("good")?, by_model("bad")?);

    // The app judges the finished battle: while it does, the winner's place
    // and the header say so, naming the judge; then the analysis names the
    // winner.
    app.wait_for("[data-testid=winner-display] [data-testid=winner-judging]")
        .await?;
    app.wait_for("[data-testid=battle-judging]").await?;
    app.wait_for_text_within("Judging… (judge, ", Duration::from_secs(10))
        .await?;
    wait_winner(&app, &good, "analysis", BATTLE_TIMEOUT).await?;
    ensure!(
        app.find_all("[data-testid=battle-judging]")
            .await?
            .is_empty(),
        "the header still says judging after the verdict"
    );
    app.wait_for("[data-testid=winner-display] [data-testid=trophy]")
        .await?;
    app.wait_attr(
        "[data-testid=analysis-panel]",
        "data-status",
        "done",
        Duration::from_secs(10),
    )
    .await?;
    let outcome = app.text_content("[data-testid=analysis-outcome]").await?;
    ensure!(!outcome.trim().is_empty(), "the analysis outcome is empty");
    let reason = app
        .text_of(&format!(
            "[data-testid=analysis-reason][data-contestant-id=\"{good}\"]"
        ))
        .await?;
    ensure!(
        reason.contains("names the capital"),
        "the winner's reason reads {reason:?}"
    );

    // The user picks the other one: it shows at once, and the engine agrees.
    let select = app.wait_for("select[data-testid=winner-select]").await?;
    app.choose(&select, &bad).await?;
    let took = wait_winner(&app, &bad, "user", WINNER_SHOWS_WITHIN).await?;
    eprintln!("the winner display followed the picker in {took:?}");
    app.screenshot("battle-winner").await?;
    let winner = engine_battle(&h, &id).await?.winner;
    ensure!(
        winner
            .as_ref()
            .is_some_and(|w| w.contestant_id == bad && w.source == WinnerSource::User),
        "after picking {bad} the engine has winner {winner:?}"
    );

    // "Analysis decides" hands it back.
    app.choose(&select, "").await?;
    wait_winner(&app, &good, "analysis", WINNER_SHOWS_WITHIN).await?;
    let winner = engine_battle(&h, &id).await?.winner;
    ensure!(
        winner
            .as_ref()
            .is_some_and(|w| w.contestant_id == good && w.source == WinnerSource::Analysis),
        "after choosing \"Analysis decides\" the engine has winner {winner:?}"
    );

    // Analyse again: a new analysis runs to the end, the panel follows, the
    // winner stays.
    let before = h.engine()?.analysis(&id).await?.map(|a| a.id);
    app.click("button[data-testid=analyze]").await?;
    app.wait_until(
        "a new analysis to finish in the engine",
        BATTLE_TIMEOUT,
        || async {
            let latest = h.engine()?.analysis(&id).await?;
            Ok(latest
                .filter(|a| Some(&a.id) != before.as_ref() && a.finished_at.is_some())
                .map(|_| ()))
        },
    )
    .await?;
    app.wait_attr(
        "[data-testid=analysis-panel]",
        "data-status",
        "done",
        BATTLE_TIMEOUT,
    )
    .await?;
    wait_winner(&app, &good, "analysis", BATTLE_TIMEOUT).await?;
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_lists_the_battle_after_a_restart() -> Result<()> {
    let Some(h) = Harness::start("history_lists_the_battle_after_a_restart").await? else {
        return Ok(());
    };
    h.server()
        .set_model("answers", ModelScript::text("Forty-two, as always."));
    h.write_config(&config_toml(
        &[ProviderEntry::local("scripted", h.server())],
        None,
    ))?;
    let prompt = "What is the answer to history question 7f3?";
    let project = h.project_dir();
    let app = h.launch().await?;
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            prompt,
            &[("Debugger", "answers"), ("Explainer", "answers")],
        ))
        .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    app.close().await?;

    let app = h.launch().await?;
    app.goto("#/history").await?;
    app.wait_for("[data-testid=history]").await?;
    let row_css = format!("[data-testid=history-row][data-battle-id=\"{id}\"]");
    app.wait_for(&row_css).await?;
    app.screenshot("history").await?;
    let row_text = app.text_content(&row_css).await?;
    ensure!(
        row_text.contains(prompt),
        "the history row of {id} reads {row_text:?}, without the prompt {prompt:?}"
    );
    let rows = app.count("[data-testid=history-row]").await?;
    ensure!(rows == 1, "history lists {rows} battles, 1 was run");

    // Search and filters narrow the list.
    let search = app.wait_for("input[data-testid=history-search]").await?;
    app.fill(&search, "no battle matches this").await?;
    wait_rows(&app, 0).await?;
    app.fill(&search, "question 7f3").await?;
    wait_rows(&app, 1).await?;
    let by_type = app
        .wait_for("select[data-testid=history-filter-type]")
        .await?;
    app.choose(&by_type, "coding").await?;
    wait_rows(&app, 0).await?;
    app.choose(&by_type, "qa").await?;
    wait_rows(&app, 1).await?;
    let by_status = app
        .wait_for("select[data-testid=history-filter-status]")
        .await?;
    app.choose(&by_status, "running").await?;
    wait_rows(&app, 0).await?;
    app.choose(&by_status, "done").await?;
    wait_rows(&app, 1).await?;

    app.click(&row_css).await?;
    app.wait_until(
        "the history row to open the battle",
        Duration::from_secs(10),
        || async {
            let hash = app.hash().await?;
            Ok((hash == format!("#/battle/{id}")).then_some(()))
        },
    )
    .await?;
    app.wait_battle_status("done", Duration::from_secs(30))
        .await?;
    app.close().await
}

/// Waits until history lists `n` rows.
async fn wait_rows(app: &App, n: usize) -> Result<()> {
    app.wait_until(
        &format!("history to list {n} battle(s)"),
        Duration::from_secs(10),
        || async { Ok((app.count("[data-testid=history-row]").await? == n).then_some(())) },
    )
    .await
}

/// The output panes' scroll boxes, in page order: how far each is scrolled,
/// how tall its content and box are, and its pane's status.
#[derive(Debug, serde::Deserialize)]
struct Scroll {
    top: f64,
    height: f64,
    box_height: f64,
    status: String,
}

impl Scroll {
    /// Scrolled to within a line of its end.
    fn at_bottom(&self) -> bool {
        self.height - self.top - self.box_height < 40.0
    }

    fn overflows(&self) -> bool {
        self.height > self.box_height + 80.0
    }
}

/// The roster's column widths (px, rounded).
async fn roster_widths(app: &App) -> Result<Vec<i64>> {
    app.js(
        "return [...document.querySelectorAll('[data-testid=roster] th')]
           .map((th) => Math.round(th.getBoundingClientRect().width));",
        vec![],
    )
    .await
}

async fn scrolls(app: &App) -> Result<Vec<Scroll>> {
    app.js(
        "return [...document.querySelectorAll('[data-testid=output-pane]')].map((p) => {
           const s = p.querySelector('[data-testid=output-scroll]');
           return { top: s.scrollTop, height: s.scrollHeight, box_height: s.clientHeight,
                    status: p.dataset.status };
         });",
        vec![],
    )
    .await
}

/// At 1280×800 the answers are in view while a battle streams (the header
/// and roster above them are compact); a streaming answer follows its tail
/// unless the user scrolled it; a finished answer opens at its top, both
/// when it finishes in view and when the battle is opened later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_in_view_while_streaming_and_open_at_their_top() -> Result<()> {
    let Some(h) =
        Harness::start("answers_are_in_view_while_streaming_and_open_at_their_top").await?
    else {
        return Ok(());
    };
    let cloud = h.server();
    let names = [
        ("Debugger", "m-a"),
        ("Explainer", "m-b"),
        ("Architect", "m-c"),
        ("Code Reviewer", "m-d"),
    ];
    for (i, (_, model)) in names.iter().enumerate() {
        // Long enough to overflow a pane, slow enough to watch it stream.
        cloud.set_model(
            model,
            ModelScript::text(&answer(&format!("w{i}x"), 700)).rate(120.0),
        );
    }
    // The last one's provider fails twice before it answers.
    cloud.set_model(
        "m-d",
        ModelScript::text(&answer("w3x", 700))
            .rate(120.0)
            .with_faults(vec![Fault::Status(503), Fault::Status(503)]),
    );
    h.write_config(&config_toml(&[ProviderEntry::cloud("cloud", cloud)], None))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let id = app
        .start_battle(&BattleForm::qa(&project, "Write at length.", &names))
        .await?;

    // Every pane streams, in view.
    app.wait_until("every answer to stream", BATTLE_TIMEOUT, || async {
        let s = scrolls(&app).await?;
        Ok(
            (s.len() == names.len() && s.iter().all(|p| p.height > 40.0 && p.status == "running"))
                .then_some(()),
        )
    })
    .await?;
    let (width, height, pane_top, scroll_y): (f64, f64, f64, f64) = app
        .js(
            "const r = document.querySelector('[data-testid=output-pane]').getBoundingClientRect();
             return [window.innerWidth, window.innerHeight, r.top, window.scrollY];",
            vec![],
        )
        .await?;
    ensure!(
        width >= 1200.0 && (700.0..=820.0).contains(&height),
        "the window is {width}×{height}, not about 1280×800"
    );
    ensure!(
        scroll_y == 0.0 && pane_top + 200.0 <= height,
        "the first answer starts at {pane_top} px of a {height} px window (scrolled {scroll_y}): below the fold"
    );
    app.screenshot("battle-streaming-1280x800").await?;
    let widths_streaming = roster_widths(&app).await?;

    // The first follows its tail once it overflows; the second, scrolled
    // back to its top by the user, stays there while it streams.
    app.wait_until(
        "the first answer to follow its tail",
        BATTLE_TIMEOUT,
        || async {
            let s = scrolls(&app).await?;
            Ok((s[0].overflows() && s[0].at_bottom()).then_some(()))
        },
    )
    .await?;
    let _: bool = app
        .js(
            "const s = document.querySelectorAll('[data-testid=output-scroll]')[1];
             s.scrollTop = 0; s.dispatchEvent(new Event('scroll')); return true;",
            vec![],
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let s = scrolls(&app).await?;
    ensure!(
        s[1].status != "running" || s[1].top < 40.0,
        "the answer the user scrolled to its top was pulled to its tail: {:?}",
        s[1]
    );
    ensure!(
        s[1].status == "running",
        "the second answer finished too soon to tell: {s:?}"
    );

    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    // The roster's columns kept their widths from the first figures to the last.
    let widths_done = roster_widths(&app).await?;
    ensure!(
        widths_streaming == widths_done,
        "the roster's columns moved: {widths_streaming:?} while streaming, {widths_done:?} done"
    );
    // Attempts: one run, its provider asked three times, in words.
    let retried: String = app
        .js(
            "const cells = [...document.querySelectorAll('[data-testid=cell-attempts]')];
             return cells.map((c) => c.innerText.replace(/\\s+/g, ' ').trim()).join(' | ');",
            vec![],
        )
        .await?;
    ensure!(
        retried.contains("1 request retried 2×") && !retried.contains("tries"),
        "the attempts read {retried:?}"
    );
    app.wait_until(
        "the finished answers at their top",
        Duration::from_secs(10),
        || async {
            let s = scrolls(&app).await?;
            Ok(s.iter()
                .all(|p| p.status == "done" && p.top == 0.0)
                .then_some(()))
        },
    )
    .await
    .with_context(|| "a finished answer stays scrolled down")
    .map_err(|e| {
        let now = futures::executor::block_on(scrolls(&app));
        e.context(format!("the answers: {now:?}"))
    })?;

    // Opened again later, every answer starts at its top.
    app.goto("#/history").await?;
    app.wait_for("[data-testid=history]").await?;
    app.goto(&format!("#/battle/{id}")).await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let s = scrolls(&app).await?;
    ensure!(
        s.len() == names.len() && s.iter().all(|p| p.overflows() && p.top == 0.0),
        "reopened, the answers are scrolled: {s:?}"
    );
    app.screenshot("battle-finished-1280x800").await?;
    app.close().await
}

/// History follows a battle without Refresh: the row reads running, then
/// done with the judge's outcome in words ("No clear winner", not "No
/// winner yet") when the judge's two runs disagree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_follows_a_battle_to_the_judges_outcome() -> Result<()> {
    let Some(h) = Harness::start("history_follows_a_battle_to_the_judges_outcome").await? else {
        return Ok(());
    };
    let cloud = h.server();
    cloud.set_model("m-a", ModelScript::text(&answer("a", 40)).rate(20.0));
    cloud.set_model("m-b", ModelScript::text(&answer("b", 40)).rate(20.0));
    // Always the first answer shown: the two runs (in both orders) disagree.
    cloud.set_model(
        "judge",
        ModelScript::text(r#"{"winner": "A", "ranking": ["A", "B"], "reasons": {"A": "first"}}"#)
            .first_token_delay(Duration::from_millis(400)),
    );
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloud", cloud)],
        Some("judge"),
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "Which answer is better?",
            &[("Debugger", "m-a"), ("Explainer", "m-b")],
        ))
        .await?;
    app.goto("#/history").await?;
    let row = format!("[data-testid=history-row][data-battle-id=\"{id}\"]");
    app.wait_for(&row).await?;
    let first = app.text_of(&format!("{row} .badge")).await?;
    ensure!(first == "running", "the new battle's row reads {first:?}");

    // No Refresh from here on: the row follows the battle's events.
    let said = std::sync::Mutex::new(BTreeSet::new());
    app.wait_until(
        "the row to show the judge's outcome",
        BATTLE_TIMEOUT,
        || async {
            let badge = app.text_of(&format!("{row} .badge")).await?;
            let outcome = app
                .text_of(&format!("{row} [data-testid=history-outcome]"))
                .await
                .unwrap_or_default();
            if let Ok(mut said) = said.lock() {
                said.insert(outcome.clone());
            }
            Ok((badge == "done" && outcome.contains("No clear winner")).then_some(()))
        },
    )
    .await
    .with_context(|| format!("the row said {said:?}"))?;
    app.screenshot("history-after-battle").await?;
    let judged = engine_battle(&h, &id).await?;
    ensure!(
        judged.winner.is_none(),
        "the judge named a winner: {judged:?}"
    );
    app.close().await
}
