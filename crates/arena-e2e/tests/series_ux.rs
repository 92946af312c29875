//! A series' numbers in the real window (issue 42, item 6): once it is
//! done it still says what it spent — the known costs, with what is not
//! counted and "set a price" for the model that has none (it read "spent
//! $0" while running and "—" when done); after ties only it names no
//! leader, saying how little three battles tell; and its charts show every
//! contestant's whole name (long names were cut off at the left edge).
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, BattleForm, Harness, ProviderEntry, MODEL};
use serde::Deserialize;

const SERIES_TIMEOUT: Duration = Duration::from_secs(120);
/// A model whose name makes a long contestant name, with no price.
const UNPRICED: &str = "gpt-4.1-mini-2025-04-14";

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

/// A name in a chart, where it is drawn against the chart's own box.
#[derive(Debug, Deserialize)]
struct Label {
    chart: String,
    text: String,
    left: f64,
    right: f64,
    width: f64,
}

const LABELS: &str = r#"
const out = [];
for (const chart of document.querySelectorAll('figure.chart')) {
  const svg = chart.querySelector('svg');
  const box = svg.viewBox.baseVal;
  for (const t of svg.querySelectorAll('text')) {
    if (t.getAttribute('text-anchor') !== 'end' || t.classList.contains('value')) continue;
    const b = t.getBBox();
    const text = [...t.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join('').trim();
    out.push({ chart: chart.dataset.testid, text, left: b.x - box.x, right: b.x + b.width, width: box.width });
  }
}
return out;
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_series_keeps_its_cost_names_no_leader_after_ties_and_whole_names() -> Result<()> {
    let Some(h) = Harness::start("a_done_series_keeps_its_cost_names_no_leader").await? else {
        return Ok(());
    };
    let server = h.server();
    // Neither answer has the word the judge looks for: its two runs (in
    // opposite orders) pick opposite answers, so every battle is a tie.
    server.set_model(
        UNPRICED,
        ModelScript::text("The capital is Paris, I believe.").rate(60.0),
    );
    // The server reports this one's cost itself; no model has a price.
    server.set_model(
        "priced",
        ModelScript::text("Paris, the capital of France.")
            .rate(60.0)
            .cost(0.002),
    );
    server.set_model(MODEL, ModelScript::judge_preferring("Zanzibar"));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", server)],
        Some(MODEL),
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();

    app.open_launcher().await?;
    app.fill_launcher(&BattleForm::qa(
        &project,
        "What is the capital of France?",
        &[("Code Reviewer", UNPRICED), ("Explainer", "priced")],
    ))
    .await?;
    app.click("[data-testid=series-toggle]").await?;
    for (field, value) in [("series-runs", "3"), ("series-parallel", "3")] {
        let input = app.wait_for(&format!("[data-testid={field}]")).await?;
        app.fill(&input, value).await?;
    }
    app.press_start().await?;
    app.wait_for("[data-testid=series-view]").await?;
    let status = wait_series_end(&app).await?;
    ensure!(status == "done", "the series ended {status}");
    app.wait_for_text("3 of 3 battles done").await?;

    // Done, it still says what it spent: the server-reported costs, and
    // what is not counted, naming the model without a price.
    let spent = app
        .wait_until("the series' spending", Duration::from_secs(10), || async {
            let spent = app.text_of("[data-testid=series-spent]").await?;
            Ok((!spent.is_empty()).then_some(spent))
        })
        .await?;
    ensure!(
        spent == "$0.00600",
        "a done series reads spent {spent:?}, not the $0.006 its priced model cost"
    );
    let missing = app.text_of("[data-testid=series-unpriced]").await?;
    ensure!(
        missing.contains("without a known cost")
            && missing.contains(&format!("{UNPRICED} at scripted"))
            && missing.contains("set a price"),
        "what the amount leaves out reads {missing:?}"
    );
    let link = app.wait_for("[data-testid=set-price]").await?;
    let target = link.attr("href").await?;
    ensure!(
        target.as_deref().is_some_and(|t| t.ends_with("#/settings")),
        "'set a price' links to {target:?}"
    );

    // Three ties: no leader, and how little three battles tell.
    let headline = app.text_of("[data-testid=series-leader]").await?;
    ensure!(
        headline.starts_with("No leader yet: 3 ties in 3 decided battles")
            && headline.contains("0–")
            && !headline.contains("Leader:"),
        "after three ties the headline reads {headline:?}"
    );

    // Every name in the charts is drawn whole, inside the chart.
    app.wait_for("[data-testid=series-chart-wins] svg").await?;
    let labels: Vec<Label> = app.js(LABELS, vec![]).await?;
    ensure!(
        labels.iter().any(
            |l| l.chart == "series-chart-wins" && l.text == format!("Code Reviewer@{UNPRICED}")
        ),
        "the charts' names: {labels:?}"
    );
    let cut: Vec<&Label> = labels
        .iter()
        .filter(|l| l.left < 0.0 || l.right > l.width)
        .collect();
    ensure!(cut.is_empty(), "chart names drawn past the chart: {cut:?}");
    let chart = app.wait_for("[data-testid=series-chart-wins]").await?;
    app.scroll_to(&chart).await?;
    app.screenshot("series-charts-names").await?;
    let progress = app.wait_for("[data-testid=series-progress]").await?;
    app.scroll_to(&progress).await?;
    app.screenshot("series-done-cost").await?;

    // "set a price" leads to Settings.
    app.click("[data-testid=set-price]").await?;
    app.wait_for("[data-testid=settings]").await?;
    app.close().await
}
