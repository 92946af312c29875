//! Errors in plain words, and an app that never dies on its own
//! configuration (issue 42, item 9): a folder no file manager can show says
//! so with the path to open by hand (no launcher's exit status) and the
//! error goes once a later try works; a config file `ARENA_CONFIG` names
//! but that does not exist leaves the app running on the defaults, saying
//! so, with a button that writes the file; About shows the data directory
//! in use.
//!
//! Needs a display and the drivers; see the crate docs.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, Harness, ProviderEntry};

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_config_file_is_offered_and_the_app_runs() -> Result<()> {
    let Some(h) = Harness::start("a_missing_config_file_is_offered_and_the_app_runs").await? else {
        return Ok(());
    };
    std::fs::remove_file(h.config_path()).context("removing the test's config")?;
    let app = h.launch().await?;

    let banner = app.text_of("[data-testid=config-missing]").await?;
    ensure!(
        banner.contains(&h.config_path().display().to_string()),
        "the banner does not name the file: {banner:?}"
    );
    ensure!(
        app.count("[data-testid=startup-error]").await? == 0,
        "the app says it could not start: {:?}",
        app.text_of("[data-testid=startup-error]").await?
    );
    // The app works: Settings loads its sections without an error.
    app.goto("#/settings").await?;
    app.wait_for("[data-testid=backend-row][data-name=native]")
        .await?;
    let data_dir = app.definition("Data directory").await?;
    ensure!(
        data_dir == h.data_dir().display().to_string(),
        "About shows the data directory {data_dir:?}, the app uses {}",
        h.data_dir().display()
    );
    let alerts = app.count("[role=alert]").await?;
    ensure!(
        alerts == 0,
        "{alerts} errors on Settings with no config file"
    );
    app.screenshot("config-missing").await?;

    app.click("[data-testid=create-config]").await?;
    app.wait_for("[data-testid=config-created]").await?;
    let text = std::fs::read_to_string(h.config_path()).context("the created config")?;
    let config = arena_e2e::arena_core::config::Config::parse(&text).map_err(anyhow::Error::msg)?;
    ensure!(
        config == arena_e2e::arena_core::config::Config::default(),
        "the created config is not the defaults the app ran with:\n{text}"
    );
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_that_cannot_be_shown_says_so_in_plain_words() -> Result<()> {
    let Some(h) = Harness::start("a_folder_that_cannot_be_shown_says_so_in_plain_words").await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("answer", ModelScript::text("Paris."));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", server)],
        None,
    ))?;
    let battle = h
        .run_qa_battle(
            "What is the capital of France?",
            &["debugger@answer", "explainer@answer"],
        )
        .await?;

    // The only file managers: they fail (exit 2, as gio does without a
    // desktop) until the test arms them, then show the folder.
    let bin = h.project_dir().join("..").join("opener-bin");
    std::fs::create_dir_all(&bin)?;
    let state = bin.join("armed");
    let opener = format!(
        "#!/bin/sh\nif [ -e '{0}' ]; then for a; do last=$a; done; echo \"$last\" > '{0}.opened'; exit 0; fi\nexit 2\n",
        state.display()
    );
    for name in ["xdg-open", "gio", "gnome-open", "kde-open", "wslview"] {
        let path = bin.join(name);
        std::fs::write(&path, &opener)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let app = h.launch_with_env(&[("PATH", &path)]).await?;
    app.goto(&format!("#/battle/{}", battle.id)).await?;
    app.wait_battle_status("done", TIMEOUT).await?;

    app.click("[data-testid=open-results]").await?;
    let error = app.text_of("[data-testid=folder-error]").await?;
    for developer_speak in ["ExitStatus", "unix_wait_status", "Launcher"] {
        ensure!(
            !error.contains(developer_speak),
            "the error speaks {developer_speak}: {error:?}"
        );
    }
    ensure!(
        error.contains("no file manager") && error.contains("Open it yourself"),
        "the error does not say what happened and what to do: {error:?}"
    );
    let shown_path = app.text_of("[data-testid=folder-error-path]").await?;
    ensure!(
        shown_path == battle.results_path.display().to_string(),
        "the error gives the path {shown_path:?}, the results are in {}",
        battle.results_path.display()
    );
    ensure!(
        app.count("[data-testid=folder-error] button").await? == 1,
        "no button copies the path"
    );
    let shown = app.wait_for("[data-testid=folder-error]").await?;
    app.scroll_to(&shown).await?;
    app.screenshot("open-folder-error").await?;

    // The next try works: the error goes.
    std::fs::write(&state, "")?;
    app.click("[data-testid=open-results]").await?;
    app.wait_until("the error to go", Duration::from_secs(10), || async {
        Ok((app.count("[data-testid=folder-error]").await? == 0).then_some(()))
    })
    .await?;
    let opened = std::fs::read_to_string(format!("{}.opened", state.display()))?;
    ensure!(
        opened.trim() == battle.results_path.display().to_string(),
        "the file manager was asked to show {opened:?}"
    );
    app.close().await
}
