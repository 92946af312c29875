//! The roster (issue 42, item 2): every contestant named in full (the
//! model on a second line), its figures grouped in a few columns, so that
//! at 1024×700 no name is cut and no header overlaps another.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, BattleForm, Harness, ProviderEntry};

/// How long the battle may take in the window.
const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Long model names, as local servers name their quantised models.
const CONTESTANTS: [(&str, &str); 4] = [
    ("Debugger", "qwen3-coder-30b-a3b-instruct-q4_k_m"),
    ("Code Reviewer", "gpt-4.1-mini-2025-04-14"),
    ("Architect", "deepseek-r1-distill-llama-70b"),
    ("Explainer", "llama-3.3-70b-instruct-q5_k_s"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roster_names_everyone_in_full_at_1024x700() -> Result<()> {
    let Some(h) = Harness::start("the_roster_names_everyone_in_full_at_1024x700").await? else {
        return Ok(());
    };
    let cloud = h.server();
    for (i, (_, model)) in CONTESTANTS.iter().enumerate() {
        cloud.set_model(
            model,
            ModelScript::text(&format!("Answer {i}: a short one.")).rate(30.0),
        );
    }
    h.write_config(&config_toml(&[ProviderEntry::cloud("cloud", cloud)], None))?;
    let app = h.launch().await?;
    app.resize(1024, 700).await?;
    let project = h.project_dir();
    app.start_battle(&BattleForm::qa(
        &project,
        "Name the files of a Rust workspace.",
        &CONTESTANTS,
    ))
    .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    // The final figures land a moment after the status.
    tokio::time::sleep(Duration::from_millis(800)).await;

    // Every name whole: its text is the identity, and nothing is cut off.
    let names: Vec<(String, String)> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=roster-row]')].map((row) => [
               row.querySelector('[data-testid=roster-name]').textContent.trim(),
               row.querySelector('.model').textContent.replace(/\\s+/g, ' ').trim()]);",
            vec![],
        )
        .await?;
    ensure!(
        names.len() == CONTESTANTS.len(),
        "{} roster rows",
        names.len()
    );
    for (identity, model) in CONTESTANTS {
        ensure!(
            names
                .iter()
                .any(|(n, m)| n == identity && m.contains(&format!("@{model}"))),
            "no row names {identity}@{model} in full: {names:?}"
        );
    }
    let cut: Vec<_> = app
        .rects("[data-testid=roster-name], [data-testid=roster-row] .model")
        .await?
        .into_iter()
        .filter(|r| r.overflows())
        .collect();
    ensure!(cut.is_empty(), "names cut off at 1024 px: {cut:?}");

    // The headers: none overflows its cell or runs into the next.
    let heads = app.rects("[data-testid=roster] thead th").await?;
    ensure!(heads.len() >= 5, "{} header cells", heads.len());
    for pair in heads.windows(2) {
        ensure!(
            pair[0].right <= pair[1].left + 0.5,
            "two headers overlap: {pair:?}"
        );
    }
    let spilled: Vec<_> = heads.iter().filter(|h| h.overflows()).collect();
    ensure!(
        spilled.is_empty(),
        "header text runs out of its cell: {spilled:?}"
    );
    // The table fits its card: no sideways scrolling at 1024 px.
    let scroller = app
        .rects("[data-testid=roster]")
        .await?
        .into_iter()
        .chain(app.rects(".roster .table-scroll").await?)
        .collect::<Vec<_>>();
    let (width, _, _) = app.viewport().await?;
    ensure!(
        scroller.iter().all(|r| !r.overflows() && r.right <= width),
        "the roster is wider than the window ({width} px): {scroller:?}"
    );
    // The figures are there, grouped: time, output, cost per row.
    for testid in [
        "cell-status",
        "cell-elapsed",
        "cell-tokens",
        "cell-tps",
        "cell-cost",
    ] {
        let n = app.count(&format!("[data-testid={testid}]")).await?;
        ensure!(
            n == CONTESTANTS.len(),
            "{n} cells {testid} for {} rows",
            CONTESTANTS.len()
        );
    }

    let roster = app.wait_for("[data-testid=roster]").await?;
    app.scroll_to(&roster).await?;
    app.screenshot("roster-1024").await?;
    app.close().await
}
