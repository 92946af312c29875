//! The Coding launcher says where the agents start and whether the check
//! can run (issue 42, items 3 and 4): HEAD's commit, the uncommitted files
//! with the choice "start from HEAD" / "start from my working tree as it
//! is", and a warning before Start when the check's program is not found
//! where the check runs.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, BattleForm, Harness, ProviderEntry};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_launcher_shows_the_dirty_base_and_a_check_that_cannot_run() -> Result<()> {
    let Some(h) =
        Harness::start("the_launcher_shows_the_dirty_base_and_a_check_that_cannot_run").await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("coder-a", ModelScript::text("done"));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", server)],
        None,
    ))?;
    let project = h.git_project(&[("calc.py", "def add(a, b):\n    return a - b\n")])?;
    // Work not committed yet: a modified file and a new one.
    std::fs::write(
        project.join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )?;
    std::fs::write(project.join("notes.txt"), "todo\n")?;
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&project)
        .output()
        .context("git rev-parse")?;
    let head = String::from_utf8(head.stdout)?.trim().to_string();

    let app = h.launch().await?;
    let mut form = BattleForm::coding(
        &project,
        "Fix add().",
        &[("native", "coder-a"), ("native", "coder-a")],
    );
    form.check = Some("no-such-test-runner -q");
    app.open_launcher().await?;
    app.fill_launcher(&form).await?;

    let commit = app.text_of("[data-testid=base-commit]").await?;
    ensure!(
        head.starts_with(&commit) && commit.len() >= 7,
        "the launcher shows the base {commit:?}, HEAD is {head}"
    );
    let files = app.text_of("[data-testid=base-files]").await?;
    for file in ["calc.py", "notes.txt"] {
        ensure!(
            files.contains(file),
            "the uncommitted files listed: {files:?}"
        );
    }
    let dirty = app.text_of("[data-testid=base-dirty]").await?;
    ensure!(dirty.contains("2 uncommitted files"), "{dirty:?}");
    // HEAD is the default; the working tree is one click away.
    let checked: bool = app
        .js(
            "return document.querySelector('[data-testid=base-head]').checked;",
            vec![],
        )
        .await?;
    ensure!(checked, "start from HEAD is not the default");
    app.click("[data-testid=base-working-tree]").await?;
    let base = app.wait_for("[data-testid=coding-base]").await?;
    app.scroll_to(&base).await?;
    app.screenshot("coding-dirty-base").await?;

    // The check's program is nowhere the check runs: said before Start.
    let warning = app
        .wait_until("the check's warning", Duration::from_secs(30), || async {
            app.text_now("[data-testid=check-warning]").await
        })
        .await?;
    ensure!(
        warning.contains("no-such-test-runner"),
        "the warning reads {warning:?}"
    );
    let shown = app.wait_for("[data-testid=check-warning]").await?;
    app.scroll_to(&shown).await?;
    app.screenshot("check-could-not-run").await?;
    // The user's repository is as it was: nothing staged, nothing written.
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&project)
        .output()?;
    let status = String::from_utf8(status.stdout)?;
    ensure!(
        status.lines().count() == 2,
        "the project's status changed: {status:?}"
    );
    app.close().await
}
