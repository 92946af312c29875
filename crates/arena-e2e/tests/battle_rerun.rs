//! A finished battle runs again (issue 42, item 12): "Run again" starts
//! the same battle anew at once (the same prompt, contestants on the same
//! providers, check, tags and base choice), "Edit & rerun" opens the
//! launcher filled in with all of it; both for Q&A and Coding. Cancelling
//! a Coding battle whose agents are at work asks first, in the page, and
//! says what is lost.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_core::coding_base::{base_of, BaseChoice};
use arena_e2e::arena_core::{Battle, BattleStatus, BattleType};
use arena_e2e::arena_testserver::{ModelScript, ToolCall, Turn};
use arena_e2e::{config_toml, App, BattleForm, Harness, ProviderEntry};
use serde_json::json;

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The battle id the window shows (`#/battle/<id>`), once it is not `old`;
/// the error says what Run again or the launcher said.
async fn battle_shown(app: &App, old: Option<&str>) -> Result<String> {
    let waited = app
        .wait_until("a battle view", Duration::from_secs(30), || async {
            Ok(app
                .hash()
                .await?
                .strip_prefix("#/battle/")
                .filter(|id| !id.is_empty() && Some(*id) != old)
                .map(str::to_string))
        })
        .await;
    match waited {
        Ok(id) => Ok(id),
        Err(err) => {
            let said = app
                .text_now("[data-testid=run-again-error], [data-testid=launcher-error]")
                .await
                .ok()
                .flatten();
            Err(err.context(format!("the page said {said:?}")))
        }
    }
}

async fn wait_status(app: &App, status: &str) -> Result<()> {
    app.wait_attr(
        "[data-testid=battle-view]",
        "data-status",
        status,
        BATTLE_TIMEOUT,
    )
    .await?;
    // The header settles once the stored battle is read again (its end
    // time shows): only then are its buttons where a click lands.
    app.wait_until("the battle's end time", BATTLE_TIMEOUT, || async {
        let header = app.text_now("header.card").await?;
        Ok(header.is_some_and(|h| h.contains("finished")).then_some(()))
    })
    .await
}

/// `(identity, model, provider)` of each contestant, in launch order.
fn lineup(b: &Battle) -> Vec<(String, String, String)> {
    b.contestants
        .iter()
        .map(|c| (c.identity.clone(), c.model.clone(), c.provider.clone()))
        .collect()
}

/// What the launcher's fields hold now.
#[derive(Debug, serde::Deserialize, PartialEq)]
struct LauncherShown {
    battle_type: Option<String>,
    project: String,
    prompt: String,
    rows: Vec<(String, String)>,
    check: Option<String>,
    tags: String,
    blind: bool,
    base: Option<String>,
}

const READ_LAUNCHER: &str = r#"
const value = (css) => { const e = document.querySelector(css); return e ? e.value : null; };
const type = document.querySelector('input[name=battle-type]:checked');
const base = document.querySelector('[data-testid=coding-base] input[type=radio]:checked');
return {
  battle_type: type ? type.value : null,
  project: value('[data-testid=project-input]') ?? '',
  prompt: value('[data-testid=prompt-input]') ?? '',
  rows: [...document.querySelectorAll('[data-testid=contestant-row]')].map(r => {
    const model = r.querySelector('[data-testid=contestant-model]')
      ?? r.querySelector('[data-testid=contestant-model-typed]');
    return [r.querySelector('[data-testid=contestant-identity]').value, model ? model.value : ''];
  }),
  check: value('[data-testid=check-input]'),
  tags: value('[data-testid=launcher-tags]') ?? '',
  blind: document.querySelector('[data-testid=launcher-blind]').checked,
  base: base ? base.getAttribute('data-testid') : null,
};
"#;

/// Waits for the launcher to be filled in from a battle as `expected`
/// (its parts load one after another); the error says what it showed.
async fn prefilled(app: &App, expected: &LauncherShown) -> Result<()> {
    let seen = std::sync::Mutex::new(None::<LauncherShown>);
    let waited = app
        .wait_until(
            "the launcher filled in from the battle",
            Duration::from_secs(30),
            || async {
                let note = app.text_now("[data-testid=launcher-rerun-note]").await?;
                if !note.is_some_and(|n| n.contains("Filled in")) {
                    return Ok(None);
                }
                let shown: LauncherShown = app.js(READ_LAUNCHER, vec![]).await?;
                let same = &shown == expected;
                if let Ok(mut last) = seen.lock() {
                    *last = Some(shown);
                }
                Ok(same.then_some(()))
            },
        )
        .await;
    waited.map_err(|err| {
        let last = seen
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(|l| format!("{l:?}")));
        anyhow::anyhow!("{err:#}; the launcher showed {last:?}, expected {expected:?}")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_again_and_edit_and_rerun_start_a_qa_battle_anew() -> Result<()> {
    let Some(h) = Harness::start("run_again_and_edit_and_rerun_start_a_qa_battle_anew").await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("m-one", ModelScript::text("Four, said plainly."));
    server.set_model("m-two", ModelScript::text("Two and two make four."));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloudy", server)],
        None,
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let prompt = "What is 2+2?";

    app.open_launcher().await?;
    app.fill_launcher(&BattleForm::qa(
        &project,
        prompt,
        &[("Debugger", "m-one"), ("Explainer", "m-two")],
    ))
    .await?;
    let tags = app.wait_for("[data-testid=launcher-tags]").await?;
    app.fill(&tags, "rerun-test, arithmetic").await?;
    app.press_start().await?;
    let first = battle_shown(&app, None).await?;
    wait_status(&app, "done").await?;
    let engine = h.engine()?;
    let original = engine.battle(&first).await?;

    // Run again: a new battle at once, the same in every field.
    app.click("button[data-testid=run-again]").await?;
    let again = battle_shown(&app, Some(&first)).await?;
    wait_status(&app, "done").await?;
    let rerun = engine.battle(&again).await?;
    ensure!(
        rerun.battle_type == BattleType::Qa
            && rerun.prompt == original.prompt
            && rerun.project == original.project
            && rerun.tags == original.tags
            && lineup(&rerun) == lineup(&original)
            && !rerun.blind,
        "Run again started {:?} {:?} {:?} {:?}, the battle was {:?} {:?} {:?} {:?}",
        rerun.prompt,
        rerun.project,
        rerun.tags,
        lineup(&rerun),
        original.prompt,
        original.project,
        original.tags,
        lineup(&original)
    );

    // Edit & rerun: the launcher, filled in; the user edits and starts.
    app.click("button[data-testid=edit-rerun]").await?;
    let expected = LauncherShown {
        battle_type: Some("qa".into()),
        project: project.display().to_string(),
        prompt: prompt.into(),
        rows: vec![
            ("Debugger".into(), "m-one".into()),
            ("Explainer".into(), "m-two".into()),
        ],
        check: None,
        // As the engine keeps them.
        tags: original.tags.join(", "),
        blind: false,
        base: None,
    };
    prefilled(&app, &expected).await?;
    let header = app.wait_for("[data-testid=launcher-rerun-note]").await?;
    app.scroll_to(&header).await?;
    app.screenshot("battle-rerun").await?;
    let prompt_field = app.wait_for("[data-testid=prompt-input]").await?;
    app.fill(&prompt_field, "What is 3+3?").await?;
    app.press_start().await?;
    let edited = battle_shown(&app, Some(&again)).await?;
    wait_status(&app, "done").await?;
    let edited = engine.battle(&edited).await?;
    ensure!(
        edited.prompt == "What is 3+3?"
            && edited.tags == original.tags
            && lineup(&edited) == lineup(&original),
        "Edit & rerun started {:?} {:?} {:?}",
        edited.prompt,
        edited.tags,
        lineup(&edited)
    );
    app.close().await
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_again_and_edit_and_rerun_keep_a_coding_battles_check_and_base() -> Result<()> {
    let Some(h) =
        Harness::start("run_again_and_edit_and_rerun_keep_a_coding_battles_check_and_base").await?
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
    // Work not committed yet: the battle starts from the working tree.
    std::fs::write(project.join("draft.txt"), "a draft\n")?;
    let app = h.launch().await?;
    let mut form = BattleForm::coding(
        &project,
        "Fix notes.txt.",
        &[("native", "coder-a"), ("native", "coder-b")],
    );
    form.check = Some("grep -q fixed notes.txt");
    app.open_launcher().await?;
    app.fill_launcher(&form).await?;
    app.click("[data-testid=base-working-tree]").await?;
    app.press_start().await?;
    let first = battle_shown(&app, None).await?;
    wait_status(&app, "done").await?;
    let engine = h.engine()?;
    let original = engine.battle(&first).await?;
    ensure!(
        base_of(&original) == Some(BaseChoice::WorkingTree),
        "the battle did not start from the working tree"
    );

    app.click("button[data-testid=run-again]").await?;
    let again = battle_shown(&app, Some(&first)).await?;
    wait_status(&app, "done").await?;
    let rerun = engine.battle(&again).await?;
    ensure!(
        rerun.battle_type == BattleType::Coding
            && rerun.prompt == original.prompt
            && rerun.check_command.as_deref() == Some("grep -q fixed notes.txt")
            && base_of(&rerun) == Some(BaseChoice::WorkingTree)
            && lineup(&rerun) == lineup(&original),
        "Run again started {:?} with check {:?}, base {:?} and {:?}",
        rerun.prompt,
        rerun.check_command,
        base_of(&rerun),
        lineup(&rerun)
    );

    app.click("button[data-testid=edit-rerun]").await?;
    let expected = LauncherShown {
        battle_type: Some("coding".into()),
        project: project.display().to_string(),
        prompt: "Fix notes.txt.".into(),
        rows: vec![
            ("native".into(), "coder-a".into()),
            ("native".into(), "coder-b".into()),
        ],
        check: Some("grep -q fixed notes.txt".into()),
        tags: String::new(),
        blind: false,
        base: Some("base-working-tree".into()),
    };
    prefilled(&app, &expected).await?;
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_coding_battle_asks_first_and_says_what_is_lost() -> Result<()> {
    let Some(h) =
        Harness::start("cancelling_a_coding_battle_asks_first_and_says_what_is_lost").await?
    else {
        return Ok(());
    };
    let server = h.server();
    // Long answers, slowly: the agents are at work when the user cancels.
    server.set_model("slow-a", ModelScript::tokens(3000).rate(8.0));
    server.set_model("slow-b", ModelScript::tokens(3000).rate(8.0));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloudy", server)],
        None,
    ))?;
    let project = h.git_project(&[("notes.txt", "broken\n")])?;
    let app = h.launch().await?;
    let id = app
        .start_battle(&BattleForm::coding(
            &project,
            "Fix notes.txt.",
            &[("native", "slow-a"), ("native", "slow-b")],
        ))
        .await?;
    app.wait_until("both agents at work", BATTLE_TIMEOUT, || async {
        let snap = app.battle_snapshot().await?;
        Ok((snap.rows.len() == 2
            && snap
                .rows
                .iter()
                .all(|r| r.status.as_deref() == Some("running")))
        .then_some(()))
    })
    .await?;

    // The first click asks, in the page (no browser dialog), what is lost.
    app.click("button[data-testid=cancel-battle]").await?;
    let asked = app.text_of("[data-testid=cancel-confirm]").await?;
    ensure!(
        asked.contains("2 agents still at work") && asked.contains("work in progress is lost"),
        "the confirmation reads {asked:?}"
    );
    ensure!(
        app.client().get_alert_text().await.is_err(),
        "a browser dialog asked instead"
    );
    let confirm = app.wait_for("[data-testid=cancel-confirm]").await?;
    app.scroll_to(&confirm).await?;
    app.screenshot("coding-cancel-confirm").await?;
    let engine = h.engine()?;
    ensure!(
        engine.battle(&id).await?.status == BattleStatus::Running,
        "the battle stopped before the user said yes"
    );

    // "Keep it running" keeps it running.
    app.click("button[data-testid=cancel-confirm-no]").await?;
    app.wait_until("the question to go", Duration::from_secs(5), || async {
        Ok((app.count("[data-testid=cancel-confirm]").await? == 0).then_some(()))
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    ensure!(
        engine.battle(&id).await?.status == BattleStatus::Running,
        "Keep it running stopped the battle"
    );

    // Asked again, yes: cancelled.
    app.click("button[data-testid=cancel-battle]").await?;
    app.click("button[data-testid=cancel-confirm-yes]").await?;
    wait_status(&app, "cancelled").await?;
    let battle = engine.battle(&id).await.context("reading the battle")?;
    ensure!(
        battle.status == BattleStatus::Cancelled,
        "the engine has the battle {}",
        battle.status
    );
    // A cancelled battle too can run again.
    ensure!(
        app.is_visible("button[data-testid=run-again]").await?
            && app.is_visible("button[data-testid=edit-rerun]").await?,
        "a cancelled battle offers no Run again or Edit & rerun"
    );
    app.close().await
}
