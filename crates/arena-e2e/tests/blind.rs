//! A blind battle in the real window: started from the launcher with the
//! Blind switch, it shows no model, provider or persona name anywhere in
//! the page (text or attributes) until the vote; the vote comes before the
//! last contestant finished; the reveal shows the judge's verdict beside
//! the vote; and after a restart the vote is the winner in the history and
//! on the leaderboard (mine).
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_core::battle::ContestantStatus;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, BattleForm, Harness, ProviderEntry, MODEL};

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Names that must not show while the battle is blind (lower case).
const SECRETS: [&str; 5] = ["m-star", "m-slow", "debugger", "explainer", "provx"];

/// Every name of `SECRETS` in the page's markup (text and attributes).
async fn leaks(app: &App) -> Result<Vec<&'static str>> {
    let html: String = app
        .js(
            "return document.documentElement.outerHTML.toLowerCase();",
            vec![],
        )
        .await?;
    Ok(SECRETS
        .iter()
        .copied()
        .filter(|s| html.contains(s))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blind_battle_hides_names_until_the_vote_which_survives_a_restart() -> Result<()> {
    let Some(h) =
        Harness::start("a_blind_battle_hides_names_until_the_vote_which_survives_a_restart")
            .await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model(
        "m-star",
        ModelScript::text("The STAR answer: two and two make four.").rate(60.0),
    );
    // Slow, so it is still running when the user votes.
    server.set_model("m-slow", ModelScript::tokens(300).rate(15.0));
    server.set_model(MODEL, ModelScript::judge_preferring("STAR"));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("provx", server)],
        Some(MODEL),
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();

    app.open_launcher().await?;
    app.fill_launcher(&BattleForm::qa(
        &project,
        "What is 2+2?",
        &[("Debugger", "m-star"), ("Explainer", "m-slow")],
    ))
    .await?;
    app.click("[data-testid=launcher-blind]").await?;
    let tags = app.wait_for("[data-testid=launcher-tags]").await?;
    app.fill(&tags, "blind-test").await?;
    app.press_start().await?;
    let id = app
        .wait_until("the battle view", Duration::from_secs(20), || async {
            Ok(app
                .hash()
                .await?
                .strip_prefix("#/battle/")
                .filter(|id| !id.is_empty())
                .map(str::to_string))
        })
        .await?;
    app.wait_for("[data-testid=blind-badge]").await?;

    // Which label is whose: the test may know, the page may not.
    let engine = h.engine()?;
    let battle = engine.battle(&id).await?;
    let label_of = |model: &str| -> Result<String> {
        battle
            .contestants
            .iter()
            .find(|c| c.model == model)
            .and_then(|c| c.label.clone())
            .with_context(|| format!("no label for {model}"))
    };
    let (star, slow) = (label_of("m-star")?, label_of("m-slow")?);

    // The star answer streams and finishes; the slow one is still running.
    app.wait_for_text_within("The STAR answer", BATTLE_TIMEOUT)
        .await?;
    app.wait_until("the star answer to finish", BATTLE_TIMEOUT, || async {
        let b = engine.battle(&id).await?;
        Ok(b.contestants
            .iter()
            .any(|c| c.model == "m-star" && c.status == ContestantStatus::Done)
            .then_some(()))
    })
    .await?;
    let leaked = leaks(&app).await?;
    ensure!(leaked.is_empty(), "the blind battle shows {leaked:?}");
    app.wait_for(&format!("[data-testid=vote-{star}]")).await?;
    app.wait_for(&format!("[data-testid=vote-{slow}]")).await?;
    app.wait_for("[data-testid=vote-tie]").await?;
    app.wait_for("[data-testid=vote-all-bad]").await?;
    app.screenshot("blind-before-vote").await?;
    // The history too shows it blind, and nothing more.
    app.goto("#/history").await?;
    app.wait_for(&format!(
        "[data-testid=history-row][data-battle-id=\"{id}\"] [data-testid=history-blind]"
    ))
    .await?;
    let leaked = leaks(&app).await?;
    ensure!(leaked.is_empty(), "the history shows {leaked:?}");
    app.goto(&format!("#/battle/{id}")).await?;

    // Vote before the slow one is done.
    let now = engine.battle(&id).await?;
    ensure!(
        now.contestants
            .iter()
            .any(|c| c.model == "m-slow" && c.status == ContestantStatus::Running),
        "the slow contestant already finished; the vote would not come early"
    );
    app.click(&format!("[data-testid=vote-{star}]")).await?;
    let banner = app.wait_for("[data-testid=verdict-banner]").await?;
    let said = banner.text().await?;
    ensure!(
        said.contains(&format!("You chose {star} · Debugger@m-star.")),
        "the banner reads {said:?}"
    );
    app.wait_for_text("m-slow").await?;
    ensure!(
        app.count("[data-testid=blind-badge]").await? == 0,
        "still marked blind after the vote"
    );
    // When the battle ends the judge runs; its verdict shows beside the vote.
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    app.wait_until("the judge's verdict", BATTLE_TIMEOUT, || async {
        let text = app.text_of("[data-testid=verdict-banner]").await?;
        Ok(text.contains("The judge agreed.").then_some(()))
    })
    .await?;
    app.screenshot("blind-revealed").await?;
    app.close().await?;

    // After a restart: the vote is the winner in history and on the
    // leaderboard (mine).
    let app = h.launch().await?;
    app.goto("#/history").await?;
    let row = app
        .wait_for(&format!(
            "[data-testid=history-row][data-battle-id=\"{id}\"]"
        ))
        .await?;
    let text = row.text().await?;
    ensure!(
        text.contains("Debugger@m-star") && text.contains("blind-test"),
        "the history row reads {text:?}"
    );
    let winner: String = app
        .js(
            "return document.querySelector(`[data-testid=history-row][data-battle-id=\"${arguments[0]}\"] .winner`).innerText;",
            vec![id.clone().into()],
        )
        .await?;
    ensure!(
        winner.contains("Debugger@m-star"),
        "the history's winner reads {winner:?}"
    );
    app.goto("#/leaderboard").await?;
    let source = app.wait_for("select[data-testid=lb-source]").await?;
    app.choose(&source, "mine").await?;
    let row = app
        .wait_for("[data-testid=leaderboard-row][data-model=m-star]")
        .await?;
    let text = row.text().await?;
    ensure!(text.contains("1/0/0"), "m-star's row reads {text:?}");
    let agreement = app.text_of("[data-testid=lb-agreement]").await?;
    ensure!(
        agreement.contains("agreed in 1 of 1"),
        "the agreement reads {agreement:?}"
    );
    app.screenshot("blind-leaderboard").await?;
    app.close().await
}

/// The launcher orders of the shuffled battles: a fixed sequence, so a
/// failure can be replayed (the labels are what the app shuffles).
fn launcher_orders(n: usize, battles: usize) -> Vec<Vec<usize>> {
    let mut state: u64 = 0x5eed_b11d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..battles)
        .map(|_| {
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            order
        })
        .collect()
}

/// Kendall's tau between `0, 1, …` and `ranks` (the launcher places seen
/// in some observed order): 1 the same order, -1 reversed, 0 unrelated.
fn kendall_tau(ranks: &[usize]) -> f64 {
    let n = ranks.len();
    let (mut agree, mut pairs) = (0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            pairs += 1;
            agree += if ranks[i] < ranks[j] { 1 } else { -1 };
        }
    }
    agree as f64 / pairs.max(1) as f64
}

/// Starts a blind battle from the page through the app's own command and
/// returns its id (the page's IPC, as the launcher would call it).
async fn start_from_page(app: &App, request: serde_json::Value) -> Result<String> {
    let _: bool = app
        .js(
            "window.__arenaStart = null;
             window.__TAURI_INTERNALS__.invoke('start_battle', { request: arguments[0] }).then(
               (b) => { window.__arenaStart = { id: b.id }; },
               (e) => { window.__arenaStart = { error: JSON.stringify(e) }; });
             return true;",
            vec![request],
        )
        .await?;
    let started: serde_json::Value = app
        .wait_until("the battle to start", Duration::from_secs(20), || async {
            let v: serde_json::Value = app.js("return window.__arenaStart;", vec![]).await?;
            Ok((!v.is_null()).then_some(v))
        })
        .await?;
    started["id"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("start_battle failed: {started}"))
}

/// Subscribes the page to a battle's events with a channel of its own and
/// keeps every message (index, batch) it is sent.
async fn capture_events(app: &App, id: &str) -> Result<()> {
    let _: bool = app
        .js(
            "const got = []; window.__arenaEvents = got;
             const cb = window.__TAURI_INTERNALS__.transformCallback((raw) => {
               if (raw && 'message' in raw) { got.push([raw.index, raw.message]); }
             });
             window.__TAURI_INTERNALS__.invoke('subscribe_battle',
               { battleId: arguments[0], sinceSeq: 0, onEvent: '__CHANNEL__:' + cb });
             return true;",
            vec![id.into()],
        )
        .await?;
    Ok(())
}

/// Every event the page's channel was sent, in the order they were sent.
async fn captured_events(app: &App) -> Result<Vec<serde_json::Value>> {
    let mut batches: Vec<(u64, Vec<serde_json::Value>)> =
        app.js("return window.__arenaEvents;", vec![]).await?;
    batches.sort_by_key(|(index, _)| *index);
    Ok(batches.into_iter().flat_map(|(_, b)| b).collect())
}

/// While a blind battle is masked nothing that reaches the page follows the
/// launcher's order: over 20 battles whose contestants were launched in
/// shuffled orders, the order of the contestants in the battle as the page
/// is sent it, of their ids, of their first events and of those events'
/// times, and of the answer panes and roster rows in the page, are each
/// compared with the launcher order (Kendall's tau, averaged); every one
/// must be unrelated to it. The contestants share one local lane, so the
/// order they are served in would show it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_masked_battle_tells_nothing_of_the_launcher_order() -> Result<()> {
    let Some(h) = Harness::start("a_masked_battle_tells_nothing_of_the_launcher_order").await?
    else {
        return Ok(());
    };
    const BATTLES: usize = 20;
    let server = h.server();
    let models = ["m-one", "m-two", "m-three", "m-four"];
    let personas = ["debugger", "explainer", "architect", "code-reviewer"];
    for m in models {
        // Alike in every way but the name, so only the order could tell.
        server.set_model(m, ModelScript::tokens(6).rate(300.0));
    }
    h.write_config(&config_toml(&[ProviderEntry::local("provl", server)], None))?;
    let app = h.launch().await?;
    let engine = h.engine()?;
    app.goto("#/history").await?;
    app.wait_for("[data-testid=history]").await?;

    // Observable name → the launcher places in the order it shows them, per battle.
    let mut seen: std::collections::BTreeMap<&str, Vec<Vec<usize>>> = Default::default();
    for (n, order) in launcher_orders(models.len(), BATTLES)
        .into_iter()
        .enumerate()
    {
        let contestants: Vec<String> = order
            .iter()
            .map(|&i| format!("{}@{}", personas[i], models[i]))
            .collect();
        let id = start_from_page(
            &app,
            serde_json::json!({
                "battle_type": "qa",
                "project": h.project_dir(),
                "prompt": format!("Shuffle {n}: which is which?"),
                "contestants": contestants,
                "check_command": null,
                "blind": true,
                "tags": [],
            }),
        )
        .await?;
        capture_events(&app, &id).await?;
        let battle = engine.battle(&id).await?;
        // Contestant id → its launcher place (where its model was in the request).
        let place = |cid: &str| -> Result<usize> {
            let c = battle
                .contestants
                .iter()
                .find(|c| c.id == cid)
                .with_context(|| format!("no contestant {cid} in battle {id}"))?;
            Ok(c.position as usize)
        };
        app.goto(&format!("#/battle/{id}")).await?;
        app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
        app.wait_for("[data-testid=blind-badge]").await?;

        // What the page is sent, read as the page reads it.
        let _: bool = app
            .js(
                "window.__arenaDetail = null;
                 window.__TAURI_INTERNALS__.invoke('get_battle', { id: arguments[0] })
                   .then((d) => { window.__arenaDetail = d; });
                 return true;",
                vec![id.clone().into()],
            )
            .await?;
        let detail: serde_json::Value = app
            .wait_until("the battle's detail", Duration::from_secs(10), || async {
                let v: serde_json::Value = app.js("return window.__arenaDetail;", vec![]).await?;
                Ok((!v.is_null()).then_some(v))
            })
            .await?;
        ensure!(
            detail["masked"] == true,
            "battle {id} is not masked: {detail}"
        );
        let dto_ids: Vec<String> = detail["contestants"]
            .as_array()
            .context("contestants")?
            .iter()
            .filter_map(|c| c["id"].as_str().map(str::to_string))
            .collect();
        for c in detail["contestants"].as_array().context("contestants")? {
            for field in [
                "started_at",
                "finished_at",
                "duration_ms",
                "ttft_ms",
                "lane",
            ] {
                ensure!(c[field].is_null(), "masked {field} is {} in {c}", c[field]);
            }
        }
        let mut sorted_ids = dto_ids.clone();
        sorted_ids.sort();

        // The events, each contestant's first one, by when it came and by its time.
        let events = app
            .wait_until(
                "the events up to the end",
                Duration::from_secs(10),
                || async {
                    let events = captured_events(&app).await?;
                    let ended = events
                        .iter()
                        .any(|e| e["type"] == "battle_status" && e["status"] == "done");
                    Ok(ended.then_some(events))
                },
            )
            .await?;
        let mut first_seen: Vec<String> = Vec::new();
        let mut first_at: Vec<(String, String)> = Vec::new();
        for e in &events {
            if let Some(cid) = e["contestant_id"].as_str() {
                if !first_seen.iter().any(|x| x == cid) {
                    first_seen.push(cid.to_string());
                    first_at.push((
                        e["at"].as_str().unwrap_or_default().to_string(),
                        cid.to_string(),
                    ));
                }
            }
        }
        first_at.sort();
        let by_time: Vec<String> = first_at.into_iter().map(|(_, c)| c).collect();

        // The page itself.
        let panes: Vec<String> = app
            .js(
                "return [...document.querySelectorAll('[data-testid=output-pane]')].map((e) => e.dataset.contestantId);",
                vec![],
            )
            .await?;
        let rows: Vec<String> = app
            .js(
                "return [...document.querySelectorAll('[data-testid=roster-row]')].map((e) => e.dataset.contestantId);",
                vec![],
            )
            .await?;
        let leaked = leaks_of(&app, &models).await?;
        ensure!(
            leaked.is_empty(),
            "battle {id} shows {leaked:?} while masked"
        );

        for (name, ids) in [
            ("the battle's contestants as sent", &dto_ids),
            ("contestant ids, sorted", &sorted_ids),
            ("first events, in the order sent", &first_seen),
            ("first events, by their times", &by_time),
            ("answer panes in the page", &panes),
            ("roster rows in the page", &rows),
        ] {
            ensure!(
                ids.len() == models.len(),
                "{name}: {} of {} contestants in battle {id}",
                ids.len(),
                models.len()
            );
            let places = ids.iter().map(|c| place(c)).collect::<Result<Vec<_>>>()?;
            seen.entry(name).or_default().push(places);
        }
    }

    let mut report = Vec::new();
    for (name, orders) in &seen {
        let mean = orders.iter().map(|o| kendall_tau(o)).sum::<f64>() / orders.len() as f64;
        let identical = orders
            .iter()
            .filter(|o| o.iter().enumerate().all(|(i, p)| i == *p))
            .count();
        report.push(format!(
            "{name}: mean tau {mean:+.2}, launcher order {identical} of {BATTLES}"
        ));
        // Unrelated orders average near 0 (sd ≈ 0.11 over 20 battles of 4);
        // the launcher order itself scores 1.
        ensure!(
            mean.abs() < 0.5 && identical <= BATTLES / 2,
            "{name} follows the launcher order: {}",
            report.join("; ")
        );
    }
    println!("{}", report.join("\n"));
    app.screenshot("blind-shuffled").await?;
    app.close().await
}

/// Which of `names` the page's markup shows (text and attributes).
async fn leaks_of<'a>(app: &App, names: &[&'a str]) -> Result<Vec<&'a str>> {
    let html: String = app
        .js(
            "return document.documentElement.outerHTML.toLowerCase();",
            vec![],
        )
        .await?;
    Ok(names.iter().copied().filter(|s| html.contains(s)).collect())
}
