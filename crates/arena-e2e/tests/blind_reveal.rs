//! A blind battle after the vote names each contestant one way (issue 42,
//! item 12): its letter beside its revealed name, in the roster and the
//! answers' headings, with no second numbering (once "3, 1, 2" beside
//! "A, B, C").
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, BattleForm, Harness, ProviderEntry};

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// What the roster and the panes show of each contestant.
#[derive(Debug, serde::Deserialize)]
struct Naming {
    /// The roster's column headings.
    headings: Vec<String>,
    /// Per roster row: the text of its first cell, and its name.
    rows: Vec<(String, String)>,
    /// The answers' headings.
    panes: Vec<String>,
    /// Position numbers shown in the answers' headings.
    pane_numbers: usize,
}

const READ_NAMING: &str = r#"
const text = (e) => (e ? e.textContent.replace(/\s+/g, ' ').trim() : '');
return {
  headings: [...document.querySelectorAll('[data-testid=roster] thead th')].map(text),
  rows: [...document.querySelectorAll('[data-testid=roster-row]')].map(r => [
    text(r.cells[0]),
    text(r.querySelector('[data-testid=roster-name]')),
  ]),
  panes: [...document.querySelectorAll('[data-testid=pane-name]')].map(text),
  pane_numbers: document.querySelectorAll('[data-testid=output-pane] .position').length,
};
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revealed_blind_battle_names_each_contestant_by_its_letter_only() -> Result<()> {
    let Some(h) =
        Harness::start("a_revealed_blind_battle_names_each_contestant_by_its_letter_only").await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("m-one", ModelScript::text("One answer."));
    server.set_model("m-two", ModelScript::text("Another answer."));
    server.set_model("m-three", ModelScript::text("A third answer."));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloudy", server)],
        None,
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    app.open_launcher().await?;
    app.fill_launcher(&BattleForm::qa(
        &project,
        "Name a prime number.",
        &[
            ("Debugger", "m-one"),
            ("Explainer", "m-two"),
            ("Architect", "m-three"),
        ],
    ))
    .await?;
    app.click("[data-testid=launcher-blind]").await?;
    app.press_start().await?;
    let id = app
        .wait_until("the battle view", Duration::from_secs(30), || async {
            Ok(app
                .hash()
                .await?
                .strip_prefix("#/battle/")
                .filter(|id| !id.is_empty())
                .map(str::to_string))
        })
        .await?;
    app.wait_attr(
        "[data-testid=battle-view]",
        "data-status",
        "done",
        BATTLE_TIMEOUT,
    )
    .await?;
    app.click("[data-testid=vote-A]").await?;
    app.wait_for("[data-testid=blind-revealed]").await?;

    let battle = h.engine()?.battle(&id).await?;
    let naming: Naming = app
        .wait_until("the revealed names", Duration::from_secs(30), || async {
            let n: Naming = app.js(READ_NAMING, vec![]).await?;
            Ok(
                (n.rows.len() == 3 && n.rows.iter().all(|(_, name)| !name.contains("Contestant")))
                    .then_some(n),
            )
        })
        .await?;
    ensure!(
        !naming.headings.iter().any(|h| h == "#"),
        "the roster keeps a column of numbers: {:?}",
        naming.headings
    );
    for (i, (first_cell, name)) in naming.rows.iter().enumerate() {
        let letter = ["A", "B", "C"][i];
        let c = battle
            .contestants
            .iter()
            .find(|c| c.label.as_deref() == Some(letter))
            .with_context(|| format!("no contestant labelled {letter}"))?;
        ensure!(
            name == &format!("{letter} · {}", c.identity),
            "roster row {i} is named {name:?}, expected {letter} · {}",
            c.identity
        );
        ensure!(
            first_cell.starts_with(letter)
                && !first_cell
                    .chars()
                    .next()
                    .is_some_and(|ch| ch.is_ascii_digit()),
            "roster row {i} starts with {first_cell:?}"
        );
    }
    ensure!(
        naming.pane_numbers == 0
            && naming
                .panes
                .iter()
                .zip(["A", "B", "C"])
                .all(|(p, letter)| p.starts_with(&format!("{letter} · "))),
        "the answers are headed {:?} ({} numbers)",
        naming.panes,
        naming.pane_numbers
    );
    let roster = app.wait_for("[data-testid=roster]").await?;
    app.scroll_to(&roster).await?;
    app.screenshot("blind-reveal").await?;
    app.close().await
}
