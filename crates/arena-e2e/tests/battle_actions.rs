//! What the user does in the battle view besides watching: cancelling one
//! contestant and then the battle, and cross-examining the results.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_core::BattleStatus;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, BattleForm, Harness, ProviderEntry};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Waits until the roster row of `id` reads `status`.
async fn wait_row(app: &App, id: &str, status: &str) -> Result<()> {
    app.wait_attr(
        &format!("[data-testid=roster-row][data-contestant-id=\"{id}\"]"),
        "data-status",
        status,
        TIMEOUT,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_one_contestant_then_the_battle() -> Result<()> {
    let Some(h) = Harness::start("cancel_one_contestant_then_the_battle").await? else {
        return Ok(());
    };
    // 30 s each at 10 tok/s: long enough that nothing finishes on its own.
    for model in ["slow-a", "slow-b", "slow-c"] {
        h.server()
            .set_model(model, ModelScript::tokens(300).rate(10.0));
    }
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", h.server())],
        None,
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "Take your time.",
            &[
                ("Debugger", "slow-a"),
                ("Explainer", "slow-b"),
                ("Architect", "slow-c"),
            ],
        ))
        .await?;
    let battle = h.engine()?.battle(&id).await?;
    let ids: Vec<String> = battle.contestants.iter().map(|c| c.id.clone()).collect();
    for c in &ids {
        wait_row(&app, c, "running").await?;
    }

    // One contestant: it stops, the others go on.
    app.click(&format!(
        "[data-testid=roster-row][data-contestant-id=\"{}\"] button[data-testid=cancel-contestant]",
        ids[0]
    ))
    .await?;
    wait_row(&app, &ids[0], "cancelled").await?;
    let snap = app.battle_snapshot().await?;
    ensure!(
        snap.status.as_deref() == Some("running")
            && ids[1..]
                .iter()
                .all(|c| snap.row(c).and_then(|r| r.status.as_deref()) == Some("running")),
        "after cancelling one contestant the others should still run: {}",
        snap.describe()
    );

    // The whole battle.
    app.click("button[data-testid=cancel-battle]").await?;
    app.wait_attr(
        "[data-testid=battle-view]",
        "data-status",
        "cancelled",
        TIMEOUT,
    )
    .await?;
    for c in &ids[1..] {
        wait_row(&app, c, "cancelled").await?;
    }
    app.screenshot("battle-cancelled").await?;
    let battle = h.engine()?.battle(&id).await?;
    ensure!(
        battle.status == BattleStatus::Cancelled,
        "the engine has the battle {}",
        battle.status
    );
    // The streams were cut: no request ran to its end.
    for model in ["slow-a", "slow-b", "slow-c"] {
        let requests = h.server().requests_for(model);
        let sent = requests
            .iter()
            .filter_map(|r| r.flushes.last().map(|f| f.tokens))
            .max()
            .unwrap_or(0);
        ensure!(
            sent < 300,
            "{model} streamed all its {sent} tokens despite the cancel"
        );
    }
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_examination_reports_in_the_battle_view() -> Result<()> {
    let Some(h) = Harness::start("cross_examination_reports_in_the_battle_view").await? else {
        return Ok(());
    };
    let server = h.server();
    server.set_model(
        "good",
        ModelScript::text("The capital of France is Paris.").rate(40.0),
    );
    server.set_model(
        "bad",
        ModelScript::text("The capital of France is Lyon.").rate(40.0),
    );
    server.set_model(
        "examiner",
        ModelScript::text(
            "Answer A is right: Paris is the capital. Answer B confuses it with Lyon.\n\
             {\"winner\": \"A\", \"reason\": \"names the capital\"}",
        ),
    );
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", server)],
        None,
    ))?;
    // The battle through the engine, the app closed; then the app opens it.
    let battle = h
        .run_qa_battle(
            "What is the capital of France?",
            &["debugger@good", "explainer@bad"],
        )
        .await?;
    let app = h.launch().await?;
    app.goto(&format!("#/battle/{}", battle.id)).await?;
    app.wait_battle_status("done", TIMEOUT).await?;

    // The examiner is picked like a contestant: a persona, then a model.
    let identity = app
        .wait_for("select[data-testid=examiner-identity]")
        .await?;
    app.choose(&identity, "Code Reviewer").await?;
    let model = app.wait_for("select[data-testid=examiner-model]").await?;
    app.choose(&model, "examiner").await?;
    let question = app
        .wait_for("textarea[data-testid=cross-exam-question]")
        .await?;
    app.fill(&question, "Which answer is right?").await?;
    app.click("button[data-testid=cross-exam-start]").await?;
    app.wait_attr(
        "[data-testid=cross-exam-report]",
        "data-status",
        "done",
        TIMEOUT,
    )
    .await?;
    let report = app.text_content("[data-testid=cross-exam-report]").await?;
    ensure!(
        report.contains("Paris is the capital"),
        "the cross-examination report reads {report:?}"
    );
    let stored = h
        .engine()?
        .cross_examinations(&battle.id)
        .await
        .context("reading the cross-examinations")?;
    ensure!(
        stored.len() == 1,
        "the engine has {} cross-examinations",
        stored.len()
    );
    let shown = app.wait_for("[data-testid=cross-exam-report]").await?;
    app.scroll_to(&shown).await?;
    app.screenshot("battle-cross-exam").await?;
    app.close().await
}
