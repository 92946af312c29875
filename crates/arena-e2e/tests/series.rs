//! A series driven from the app: started in the launcher, followed live on
//! its screen, reported (table and charts, each battle a link), exported,
//! and its `report.html` opened in the real webview, where the markup in a
//! contestant's answer runs nothing and loads nothing. And a series a
//! stopped process left running is finished when the app starts.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_core::battle::{BattleType, ContestantSpec};
use arena_e2e::arena_core::series::{SeriesPrompt, SeriesRequest};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, BattleForm, Beacon, Harness, ProviderEntry, MODEL};
use serde::Deserialize;

const SERIES_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the opened report gets to (wrongly) load its remote resources.
const LOAD_GRACE: Duration = Duration::from_millis(1500);

/// An answer that names Paris, with markup that must stay inert.
fn good_answer(beacon: &str) -> String {
    format!(
        "Paris is the capital.\n\n<script>window.__arenaPwned=1</script>\n\n\
         <img src=x onerror=\"window.__arenaPwned2=1\">\n\n<img src=\"{beacon}/img.png\">\n\n\
         ![remote]({beacon}/markdown.png)\n"
    )
}

/// What the opened report holds that it should not.
#[derive(Debug, Deserialize)]
struct Findings {
    flags: Vec<String>,
    markup: Vec<String>,
    /// Whether the page is the report (its heading is there).
    report: bool,
}

const INSPECT: &str = r#"
const flags = ['__arenaPwned', '__arenaPwned2'].filter(n => typeof window[n] !== 'undefined');
const markup = [];
for (const el of document.querySelectorAll('*')) {
  const tag = el.tagName.toLowerCase();
  if (['script', 'iframe', 'object', 'embed', 'link'].includes(tag)) markup.push(`<${tag}>`);
  for (const attr of el.attributes) {
    const name = attr.name.toLowerCase();
    if (name.startsWith('on')) markup.push(`${tag} ${name}`);
    if (/^(https?:)?\/\//i.test(attr.value.trim()) && ['src', 'href', 'srcset', 'poster'].includes(name)) {
      markup.push(`${tag} ${name}=${attr.value}`);
    }
  }
}
return { flags, markup, report: document.body.innerText.includes('Debugger@good') };
"#;

/// Waits until the series screen says the series ended.
async fn wait_series_end(app: &App) -> Result<String> {
    app.wait_until("the series to end", SERIES_TIMEOUT, || async {
        let status = app
            .client()
            .find(arena_e2e::Locator::Css("[data-testid=series-status]"))
            .await?
            .attr("data-status")
            .await?;
        Ok(status.filter(|s| s != "running"))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_series_runs_from_the_launcher_with_progress_report_and_export() -> Result<()> {
    let Some(h) =
        Harness::start("a_series_runs_from_the_launcher_with_progress_report_and_export").await?
    else {
        return Ok(());
    };
    let beacon = Beacon::start().await?;
    beacon.self_test().await?;
    let server = h.server();
    server.set_model(
        "good",
        ModelScript::text(&good_answer(&beacon.url))
            .rate(30.0)
            .cost(0.002),
    );
    server.set_model(
        "bad",
        ModelScript::text("Lyon, I think.").rate(30.0).cost(0.001),
    );
    server.set_model(MODEL, ModelScript::judge_preferring("Paris").cost(0.0005));
    // Prices, so a budget may be set; the server's own `usage.cost` wins.
    let mut config = config_toml(&[ProviderEntry::cloud("scripted", server)], Some(MODEL));
    for model in ["good", "bad", MODEL] {
        config.push_str(&format!(
            "\n[[price]]\nprovider = \"scripted\"\nmodel = \"{model}\"\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n"
        ));
    }
    h.write_config(&config)?;
    let app = h.launch_with_env(&[("ARENA_MACHINE", "e2e-box")]).await?;
    let project = h.project_dir();

    app.open_launcher().await?;
    app.fill_launcher(&BattleForm::qa(
        &project,
        "What is the capital of France?",
        &[("Debugger", "good"), ("Explainer", "bad")],
    ))
    .await?;
    app.click("[data-testid=series-toggle]").await?;
    for (field, value) in [
        ("series-runs", "4"),
        ("series-parallel", "2"),
        ("series-goal", "names Paris"),
        ("series-turns", "2"),
        ("series-budget", "5"),
        ("series-tags", "geography"),
    ] {
        let input = app.wait_for(&format!("[data-testid={field}]")).await?;
        app.fill(&input, value).await?;
    }
    app.screenshot("series-launcher").await?;
    app.press_start().await?;
    let id = app
        .wait_until("the series screen", Duration::from_secs(20), || async {
            Ok(app
                .hash()
                .await?
                .strip_prefix("#/series/")
                .map(str::to_string))
        })
        .await?;
    app.wait_for("[data-testid=series-view]").await?;

    // Live: the progress line counts battles as they end.
    let progress = app.text_of("[data-testid=series-progress]").await?;
    ensure!(
        progress.contains("of 4 battles done"),
        "the progress line reads {progress:?}"
    );
    // Where it started, among its facts; its own driver serves it, so no
    // battle waits for a worker.
    let machine = app.text_of("[data-testid=series-machine]").await?;
    ensure!(machine == "e2e-box", "the series started on {machine:?}");
    let started = app.definition("Started").await?;
    ensure!(
        started.ends_with(" on e2e-box"),
        "the Started fact reads {started:?}"
    );
    app.screenshot("series-progress").await?;
    ensure!(
        app.count("[data-testid=series-waiting]").await? == 0,
        "the series says it waits: {:?}",
        app.text_of("[data-testid=series-waiting]").await?
    );
    let status = wait_series_end(&app).await?;
    ensure!(status == "done", "the series ended {status}");
    app.wait_for_text("4 of 4 battles done").await?;

    // The report: the good answer wins every battle and passes the goal.
    let rows = app.find_all("[data-testid=series-row]").await?;
    ensure!(rows.len() == 2, "{} report rows", rows.len());
    let first = rows[0].text().await?;
    ensure!(
        first.starts_with("Debugger@good") && first.contains("100%"),
        "the first report row reads {first:?}"
    );
    let wins = app.text_of("[data-testid=series-wins]").await?;
    ensure!(wins == "4", "Debugger@good has {wins} wins");
    let pass = app.text_of("[data-testid=series-pass-rate]").await?;
    ensure!(pass.starts_with("100%"), "its pass rate reads {pass:?}");
    let spent = app.text_of("[data-testid=series-spent]").await?;
    ensure!(
        spent.starts_with('$') && spent != "$0",
        "spent reads {spent:?}"
    );
    for chart in [
        "series-chart-wins",
        "series-chart-pass",
        "series-chart-duration",
        "series-chart-cost",
    ] {
        app.wait_for(&format!("[data-testid={chart}] svg")).await?;
    }
    // Titled by its prompt, not its id.
    let title = app.text_of("[data-testid=series-title]").await?;
    ensure!(
        title.starts_with("What is the capital of France?"),
        "the series is titled {title:?}"
    );
    // Each battle's link says how it ended and who won.
    let links = app.find_all("[data-testid=series-battles] a").await?;
    ensure!(links.len() == 4, "{} battle links", links.len());
    app.wait_until("the battle links' winners", Duration::from_secs(10), || async {
        let chips: Vec<String> = app
            .js(
                "return [...document.querySelectorAll('[data-testid=series-battle]')].map(c => c.innerText);",
                vec![],
            )
            .await?;
        Ok(chips
            .iter()
            .all(|c| c.contains("done") && c.contains("Debugger@good"))
            .then_some(()))
    })
    .await?;
    // The wide report scrolls sideways with its names kept in view.
    let sticky: String = app
        .js(
            "return getComputedStyle(document.querySelector('[data-testid=series-report] td')).position;",
            vec![],
        )
        .await?;
    ensure!(sticky == "sticky", "the report's first column is {sticky}");
    let leader = app.text_of("[data-testid=series-leader]").await?;
    ensure!(
        leader.contains("Debugger@good"),
        "the headline reads {leader:?}"
    );
    app.screenshot("series-report").await?;

    // The series' tags are edited here; its battles follow.
    let input = app.wait_for("[data-testid=tags-input]").await?;
    app.fill(&input, "geography, capitals").await?;
    app.click("[data-testid=tags-save]").await?;
    app.wait_until("the series' tags", Duration::from_secs(10), || async {
        let chips: Vec<String> = app
            .js(
                "return [...document.querySelectorAll('[data-testid=battle-tag]')].map(c => c.textContent.trim());",
                vec![],
            )
            .await?;
        Ok((chips == ["geography", "capitals"]).then_some(()))
    })
    .await?;
    let engine = h.engine()?;
    let first = engine.series_summary(&id).await?.battles[0].clone();
    let tags = engine.battle(&first).await?.tags;
    ensure!(
        tags == ["capitals", "geography"],
        "a battle of the series has the tags {tags:?}"
    );

    // Each battle is an ordinary battle of the series.
    app.click_element(&links[0]).await?;
    app.wait_until(
        "a battle of the series",
        Duration::from_secs(10),
        || async { Ok(app.hash().await?.starts_with("#/battle/").then_some(())) },
    )
    .await?;
    app.wait_for("[data-testid=roster]").await?;
    // The answer that missed the goal got a second turn in its conversation.
    let turn = app
        .wait_for("[data-testid=turn][data-turn=\"2\"][data-status=done]")
        .await?;
    let told = turn.text().await?;
    ensure!(told.contains("Not yet"), "turn 2 reads {told:?}");
    app.screenshot("series-battle-turns").await?;
    app.wait_for("[data-testid=battle-series]").await?;
    // The battle's own report, written into its results folder.
    app.click("[data-testid=export-battle]").await?;
    let written = app.text_of("[data-testid=battle-report-file]").await?;
    let battle_file = written
        .split_whitespace()
        .find(|w| w.ends_with("report.html"))
        .with_context(|| format!("no report path in {written:?}"))?;
    app.wait_for("[data-testid=battle-report-show]").await?;
    let battle_html = std::fs::read_to_string(battle_file)?;
    ensure!(
        battle_html.contains("Paris is the capital") && !battle_html.contains("<script"),
        "the battle report: {battle_html}"
    );

    // Export, then open report.html in this very webview.
    app.goto(&format!("#/series/{id}")).await?;
    app.click("[data-testid=series-export]").await?;
    let written = app.text_of("[data-testid=series-report-file]").await?;
    let file = written
        .split_whitespace()
        .find(|w| w.ends_with("report.html"))
        .with_context(|| format!("no report path in {written:?}"))?
        .to_string();
    ensure!(
        std::path::Path::new(&file).is_file(),
        "{file} was not written"
    );
    let html = std::fs::read_to_string(&file)?;
    ensure!(!html.contains("<script"), "report.html has a script");
    let app_url = app.client().current_url().await?;
    app.client()
        .goto(&format!("file://{file}"))
        .await
        .context("opening report.html in the webview")?;
    let started = Instant::now();
    let findings: Findings = app
        .wait_until("the report to show", Duration::from_secs(10), || async {
            let f: Findings = app.js(INSPECT, vec![]).await?;
            Ok(f.report.then_some(f))
        })
        .await?;
    tokio::time::sleep(LOAD_GRACE.saturating_sub(started.elapsed())).await;
    let after: Findings = app.js(INSPECT, vec![]).await?;
    ensure!(
        findings.flags.is_empty() && after.flags.is_empty() && after.markup.is_empty(),
        "the opened report ran or holds {after:?}"
    );
    ensure!(
        beacon.hits().is_empty(),
        "the opened report loaded remote resources: {:?}",
        beacon.hits()
    );
    app.screenshot("series-report-html").await?;

    // Back in the app, the series is in the history.
    app.client().goto(app_url.as_str()).await?;
    app.goto("#/history").await?;
    app.wait_for(&format!(
        "[data-testid=history-series-row][data-series-id=\"{id}\"]"
    ))
    .await?;
    app.screenshot("series-history").await?;
    // A battle of the series links to it from its history row.
    let link = app
        .wait_for(&format!(
            "[data-testid=history-row][data-battle-id=\"{first}\"] [data-testid=history-row-series]"
        ))
        .await?;
    app.click_element(&link).await?;
    app.wait_until(
        "the series from its battle's row",
        Duration::from_secs(10),
        || async { Ok((app.hash().await? == format!("#/series/{id}")).then_some(())) },
    )
    .await?;
    app.wait_for("[data-testid=series-view]").await?;

    // The leaderboard of this series alone: its two contestants.
    app.goto("#/leaderboard").await?;
    let select = app
        .wait_for("select[data-testid=leaderboard-filter-series]")
        .await?;
    app.choose(&select, &id).await?;
    app.wait_for("[data-testid=leaderboard-row][data-identity=Debugger][data-model=good]")
        .await?;
    let rows = app.count("[data-testid=leaderboard-row]").await?;
    ensure!(rows == 2, "the series' leaderboard has {rows} rows");
    app.screenshot("series-leaderboard").await?;
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_series_left_running_is_finished_when_the_app_starts() -> Result<()> {
    let Some(h) = Harness::start("a_series_left_running_is_finished_when_the_app_starts").await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("good", ModelScript::text("Paris is the capital."));
    server.set_model("bad", ModelScript::text("Lyon, I think."));
    server.set_model(MODEL, ModelScript::judge_preferring("Paris"));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", server)],
        Some(MODEL),
    ))?;
    // Recorded, as by a process that stopped before running it.
    let series = {
        let engine = h.engine()?;
        let request = SeriesRequest {
            runs: 3,
            ..SeriesRequest::new(
                BattleType::Qa,
                h.project_dir(),
                vec![
                    ContestantSpec::parse("Debugger@good")?,
                    ContestantSpec::parse("Explainer@bad")?,
                ],
                vec![SeriesPrompt {
                    prompt: "What is the capital of France?".into(),
                    goal: None,
                    check: None,
                    tags: Vec::new(),
                    task: None,
                }],
            )
        };
        engine
            .create_series(request, None)
            .await?
            .series()
            .id
            .clone()
    };
    let app = h.launch().await?;
    app.goto(&format!("#/series/{series}")).await?;
    app.wait_for("[data-testid=series-view]").await?;
    let status = wait_series_end(&app).await?;
    ensure!(status == "done", "the resumed series ended {status}");
    app.wait_for_text("3 of 3 battles done").await?;
    let wins = app.text_of("[data-testid=series-wins]").await?;
    ensure!(
        wins == "3",
        "Debugger@good has {wins} wins after the resume"
    );
    app.close().await
}
