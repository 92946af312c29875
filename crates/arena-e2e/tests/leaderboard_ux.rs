//! The leaderboard claims no more than it knows (issue 42, item 7): Q&A
//! and Coding ranked apart by default, ranks as ranges where the 95%
//! intervals overlap, provisional rows greyed (fewer than 10 decided
//! battles), and nothing about length bias below 30 decided battles.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, contestant_with_model, Harness, ProviderEntry};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_battles_give_overlapping_ranks_provisional_rows_and_no_length_claim() -> Result<()> {
    let Some(h) =
        Harness::start("five_battles_give_overlapping_ranks_provisional_rows_and_no_length_claim")
            .await?
    else {
        return Ok(());
    };
    h.server().set_model(
        "strong",
        ModelScript::text("A strong, long and careful answer."),
    );
    h.server().set_model("weak", ModelScript::text("Weak."));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", h.server())],
        None,
    ))?;
    // Five decided battles through the engine (the app closed): strong
    // wins three, weak two — every interval overlaps.
    let engine = h.engine()?;
    for (n, winner) in ["strong", "weak", "strong", "weak", "strong"]
        .into_iter()
        .enumerate()
    {
        let battle = h
            .run_qa_battle(
                &format!("Question {n}"),
                &["debugger@strong", "explainer@weak"],
            )
            .await?;
        let id = contestant_with_model(&battle, winner)?;
        engine.set_winner(&battle.id, Some(&id)).await?;
    }
    drop(engine);

    let app = h.launch().await?;
    app.goto("#/leaderboard").await?;
    let rows = "[data-testid=leaderboard-row]";
    app.wait_until("two ranked rows", Duration::from_secs(30), || async {
        Ok((app.count(rows).await? == 2).then_some(()))
    })
    .await?;

    // Apart by default: a Q&A board and a Coding board.
    let type_filter: String = app
        .js(
            "return document.querySelector('[data-testid=leaderboard-filter-type]').value;",
            vec![],
        )
        .await?;
    ensure!(
        type_filter == "apart",
        "the type filter starts at {type_filter:?}"
    );
    let boards: Vec<String> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=lb-board]')].map(b => b.dataset.title);",
            vec![],
        )
        .await?;
    ensure!(
        boards == ["Q&A", "Coding"],
        "the boards shown are {boards:?}"
    );

    // Ranks as ranges: the intervals overlap, so neither is firmly first.
    let ranks: Vec<String> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=lb-rank]')].map(c => c.textContent.trim());",
            vec![],
        )
        .await?;
    ensure!(
        ranks == ["1–2", "1–2"],
        "the ranks read {ranks:?}; every interval overlaps"
    );
    // Provisional rows, greyed.
    let provisional: Vec<(Option<String>, String)> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=leaderboard-row]')].map(r =>
               [r.getAttribute('data-provisional'), getComputedStyle(r.querySelector('td')).fontStyle]);",
            vec![],
        )
        .await?;
    ensure!(
        provisional
            .iter()
            .all(|(p, style)| p.as_deref() == Some("true") && style == "italic"),
        "the rows after five battles are not shown provisional: {provisional:?}"
    );
    // No length claim from five battles; the threshold is stated.
    let page = app.page_text().await?;
    ensure!(
        !page.contains("length coefficient") && !page.contains("Length-controlled"),
        "the board talks about length bias after five battles"
    );
    let note = app
        .text_of("[data-testid=lb-board][data-title='Q&A'] [data-testid=lb-lc-note]")
        .await?;
    ensure!(
        note.contains("from 30 decided battles") && note.contains("holds 5"),
        "the length note reads {note:?}"
    );
    let honesty = app.text_of("[data-testid=lb-honesty]").await?;
    ensure!(
        honesty.contains("fewer than 10 decided battles"),
        "the provisional threshold is not stated: {honesty:?}"
    );
    let board = app
        .wait_for("[data-testid=lb-board][data-title='Q&A']")
        .await
        .context("the Q&A board")?;
    app.scroll_to(&board).await?;
    app.screenshot("leaderboard-provisional").await?;
    app.close().await
}
