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
