//! The app shell: the window starts on the launcher, on an isolated data
//! directory, and Settings shows the app info (version, data directory,
//! battle count) from the engine.
//!
//! Needs a display and the drivers; see the crate docs. Run with
//! `xvfb-run -a -s "-screen 0 1280x1024x24" cargo test -p arena-e2e -- --test-threads=1`
//! after `cargo build -p arena-app`.

use anyhow::{ensure, Result};
use arena_core::BattleStatus;
use arena_e2e::{Harness, MODEL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_shows_app_info() -> Result<()> {
    let Some(h) = Harness::start("shell_shows_app_info").await? else {
        return Ok(());
    };
    let app = h.launch().await?;

    app.wait_for_text("Arena").await?;
    let title = app.text_of("header h1").await?;
    ensure!(title == "Arena", "header: {title:?}");
    app.wait_for_text("Run one prompt against").await?;
    app.wait_for("[data-testid=launcher]").await?;
    for nav in ["launcher", "history", "leaderboard", "settings"] {
        app.wait_for(&format!("a[data-testid=nav-{nav}]")).await?;
    }

    app.click("a[data-testid=nav-settings]").await?;
    let version = app.definition("Version").await?;
    // "0.1.0 (commit 1a2b3c4d5e6f, built 2026-11-27)"
    ensure!(
        version.starts_with(&format!("{} (commit ", env!("CARGO_PKG_VERSION")))
            && version.contains(", built 20"),
        "Version shows {version:?}, Cargo says {} (with the commit and the build day)",
        env!("CARGO_PKG_VERSION")
    );
    let data_dir = app.definition("Data directory").await?;
    ensure!(
        data_dir == h.data_dir().display().to_string(),
        "Data directory shows {data_dir:?}, the test set ARENA_DATA_DIR={}",
        h.data_dir().display()
    );
    let battles = app.definition("Battles").await?;
    ensure!(
        battles == "0",
        "Battles shows {battles:?} on a fresh data dir"
    );
    let page = app.page_text().await?;
    ensure!(
        !page.contains("could not start") && !page.contains("Could not load"),
        "the window reports an error: {page:?}"
    );

    let shot = app.screenshot("shell").await?;
    eprintln!("screenshot: {}", shot.display());
    app.close().await?;

    // The app opened the data dir it was given.
    ensure!(
        h.data_dir().join("arena.db").is_file(),
        "no arena.db in {}",
        h.data_dir().display()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_shows_battle_created_by_engine() -> Result<()> {
    let Some(h) = Harness::start("restart_shows_battle_created_by_engine").await? else {
        return Ok(());
    };

    let app = h.launch().await?;
    app.goto("#/settings").await?;
    let battles = app.definition("Battles").await?;
    ensure!(
        battles == "0",
        "Battles shows {battles:?} on a fresh data dir"
    );
    app.close().await?;

    // With the app closed, a battle through the engine, on the same data dir
    // and against the same scripted server.
    let contestants = [format!("debugger@{MODEL}"), format!("explainer@{MODEL}")];
    let contestants: Vec<&str> = contestants.iter().map(String::as_str).collect();
    let battle = h.run_qa_battle("Say hello.", &contestants).await?;
    ensure!(
        battle.status == BattleStatus::Done,
        "the battle ended {:?}",
        battle.status
    );
    ensure!(
        !h.server().requests_for(MODEL).is_empty(),
        "the scripted server saw no request"
    );

    let app = h.launch().await?;
    app.goto("#/settings").await?;
    let battles = app.definition("Battles").await?;
    ensure!(battles == "1", "Battles shows {battles:?} after one battle");
    let shot = app.screenshot("shell-one-battle").await?;
    eprintln!("screenshot: {}", shot.display());
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_config_is_explained_on_every_screen() -> Result<()> {
    let Some(h) = Harness::start("a_broken_config_is_explained_on_every_screen").await? else {
        return Ok(());
    };
    h.write_config(
        "[[provider]]\nname = \"x\"\nkind = \"telepathy\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )?;
    let app = h.launch().await?;
    for screen in ["#/new", "#/history", "#/settings"] {
        app.goto(screen).await?;
        let shown = app.text_of("[data-testid=startup-error]").await?;
        ensure!(
            shown.contains("arena.toml") && shown.contains("telepathy"),
            "{screen}: the banner says {shown:?}"
        );
    }
    app.screenshot("startup-error").await?;
    app.close().await
}
