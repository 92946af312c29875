//! A Coding battle's check in the real window (issue 42, item 4): a check
//! that could not run is one warning on the battle, said once, and each
//! roster row says so; a passed and a failed check read in the roster's
//! status cells; Apply on the failed contestant is a secondary button that
//! says why; a battle that lost a contestant reads "done, 1 failed" in its
//! header and in History.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Result};
use arena_e2e::arena_core::check_outcome::battle_warning;
use arena_e2e::arena_testserver::{Fault, ModelScript, ToolCall, Turn};
use arena_e2e::{config_toml, contestant_with_model, App, BattleForm, Harness, ProviderEntry};
use serde_json::json;

const BATTLE_TIMEOUT: Duration = Duration::from_secs(120);

/// A native agent that writes `notes.txt` in one turn, then says so.
fn writer(text: &str) -> ModelScript {
    ModelScript::turns(vec![
        Turn::ToolCalls {
            text: None,
            calls: vec![ToolCall::new(
                "write_file",
                json!({"path": "notes.txt", "content": text}),
            )],
        },
        Turn::text("Wrote notes.txt."),
    ])
}

async fn wait_done(app: &App) -> Result<()> {
    app.wait_attr(
        "[data-testid=battle-view]",
        "data-status",
        "done",
        BATTLE_TIMEOUT,
    )
    .await
}

/// `(data-outcome, text)` of contestant `id`'s check in the roster, once
/// it shows one.
async fn roster_check(app: &App, id: &str) -> Result<(String, String)> {
    let css =
        format!("[data-testid=roster-row][data-contestant-id=\"{id}\"] [data-testid=cell-check]");
    app.wait_until(
        &format!("the roster's check of {id}"),
        BATTLE_TIMEOUT,
        || async {
            app.js(
                "const e = document.querySelector(arguments[0]);
                 return e ? [e.getAttribute('data-outcome'), e.textContent.trim()] : null;",
                vec![css.clone().into()],
            )
            .await
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_could_not_run_is_said_once_on_the_battle_and_in_each_row() -> Result<()> {
    let Some(h) =
        Harness::start("a_check_that_could_not_run_is_said_once_on_the_battle_and_in_each_row")
            .await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("coder-a", writer("fixed by a\n"));
    server.set_model("coder-b", writer("fixed by b\n"));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloudy", server)],
        None,
    ))?;
    let project = h.git_project(&[("notes.txt", "broken\n")])?;
    let app = h.launch().await?;
    let mut form = BattleForm::coding(
        &project,
        "Fix notes.txt.",
        &[("native", "coder-a"), ("native", "coder-b")],
    );
    form.check = Some("no-such-test-runner -q");
    let id = app.start_battle(&form).await?;
    wait_done(&app).await?;
    let battle = h.engine()?.battle(&id).await?;
    let expected = battle_warning(&battle);
    ensure!(
        expected.is_some(),
        "the engine has no could-not-run warning for the battle"
    );
    let shown = app
        .wait_until("the battle's check warning", BATTLE_TIMEOUT, || async {
            app.text_now("[data-testid=battle-check-warning]").await
        })
        .await?;
    let shown = shown.trim();
    ensure!(
        Some(shown) == expected.as_deref(),
        "the banner reads {shown:?}, the engine's warning is {expected:?}"
    );
    ensure!(
        shown.matches("could not run").count() == 1 && shown.contains("no-such-test-runner"),
        "the banner says it more than once, or not which check: {shown:?}"
    );
    for c in &battle.contestants {
        let (outcome, text) = roster_check(&app, &c.id).await?;
        ensure!(
            outcome == "could_not_run" && text == "check could not run",
            "{}'s roster row reads {outcome:?} {text:?}",
            c.model
        );
    }
    let banner = app.wait_for("[data-testid=battle-check-warning]").await?;
    app.scroll_to(&banner).await?;
    app.screenshot("check-could-not-run-battle").await?;
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_makes_apply_secondary_and_the_battle_reads_done_1_failed() -> Result<()> {
    let Some(h) =
        Harness::start("a_failed_check_makes_apply_secondary_and_the_battle_reads_done_1_failed")
            .await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("coder-good", writer("fixed\n"));
    server.set_model("coder-bad", writer("still broken\n"));
    // Refused every time: this contestant fails.
    server.set_model(
        "coder-down",
        ModelScript::text("never").with_faults(vec![Fault::Status(400); 20]),
    );
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloudy", server)],
        None,
    ))?;
    let project = h.git_project(&[("notes.txt", "broken\n")])?;
    let app = h.launch().await?;
    let mut form = BattleForm::coding(
        &project,
        "Fix notes.txt.",
        &[
            ("native", "coder-good"),
            ("native", "coder-bad"),
            ("native", "coder-down"),
        ],
    );
    form.check = Some("grep -q fixed notes.txt");
    let id = app.start_battle(&form).await?;
    wait_done(&app).await?;
    let battle = h.engine()?.battle(&id).await?;
    let good = contestant_with_model(&battle, "coder-good")?;
    let bad = contestant_with_model(&battle, "coder-bad")?;
    let down = contestant_with_model(&battle, "coder-down")?;

    // The roster's status cells.
    let (outcome, text) = roster_check(&app, &good).await?;
    ensure!(
        outcome == "passed" && text == "check passed",
        "the good row reads {outcome:?} {text:?}"
    );
    let (outcome, text) = roster_check(&app, &bad).await?;
    ensure!(
        outcome == "failed" && text == "check failed",
        "the bad row reads {outcome:?} {text:?}"
    );
    ensure!(
        app.count(&format!(
            "[data-testid=roster-row][data-contestant-id=\"{down}\"] [data-testid=cell-check]"
        ))
        .await?
            == 0,
        "the contestant that failed before its check shows a check"
    );

    // Apply: primary where the check passed; secondary with the reason where it failed.
    let apply = |id: &str| {
        format!("section.coding[data-contestant-id=\"{id}\"] button[data-testid=apply-diff]")
    };
    #[derive(serde::Deserialize, Debug)]
    struct Button {
        primary: bool,
        advised: Option<String>,
        advice: Option<String>,
    }
    let read = |id: String| {
        let app = &app;
        let css = apply(&id);
        async move {
            app.wait_for(&css).await?;
            app.js::<Button>(
                "const b = document.querySelector(arguments[0]);
                 const advice = b.closest('section').querySelector('[data-testid=apply-advice]');
                 return { primary: b.classList.contains('primary'),
                          advised: b.getAttribute('data-advised'),
                          advice: advice ? advice.textContent.trim() : null };",
                vec![css.into()],
            )
            .await
        }
    };
    let good_button = read(good.clone()).await?;
    ensure!(
        good_button.primary && good_button.advice.is_none(),
        "the passed contestant's Apply: {good_button:?}"
    );
    let bad_button = read(bad.clone()).await?;
    ensure!(
        !bad_button.primary
            && bad_button.advised.as_deref() == Some("against")
            && bad_button
                .advice
                .as_deref()
                .is_some_and(|a| a.contains("its check failed")),
        "the failed contestant's Apply: {bad_button:?}"
    );
    let panel = app
        .wait_for(&format!("section.coding[data-contestant-id=\"{bad}\"]"))
        .await?;
    app.scroll_to(&panel).await?;
    app.screenshot("check-failed-apply").await?;

    // "done, 1 failed": in the header, and in History.
    let status = app.text_content("[data-testid=battle-status]").await?;
    ensure!(
        status.trim() == "done, 1 failed",
        "the header reads {status:?}"
    );
    app.goto("#/history").await?;
    let row =
        format!("[data-testid=history-row][data-battle-id=\"{id}\"] [data-testid=history-status]");
    let said = app.text_content(&row).await?;
    ensure!(said.trim() == "done, 1 failed", "History reads {said:?}");
    app.close().await
}
