//! The battle launcher: inline validation of the contestant count, and the
//! first-run banner when no provider answers.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_core::Lane;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, BattleForm, Harness, ProviderEntry, MODEL};

/// How long the page gets to (wrongly) start a battle after Start is pressed.
const NOTHING_STARTS_WITHIN: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launcher_rejects_one_and_seven_contestants() -> Result<()> {
    let Some(h) = Harness::start("launcher_rejects_one_and_seven_contestants").await? else {
        return Ok(());
    };
    h.server().set_model("second", ModelScript::tokens(3));
    let project = h.project_dir();
    let app = h.launch().await?;
    app.open_launcher().await?;

    let one = BattleForm::qa(&project, "Which is better?", &[("Debugger", MODEL)]);
    app.fill_launcher(&one).await?;
    app.press_start().await?;
    expect_count_error(&app, &h, 1).await?;

    // Seven distinct contestants; the add button stays enabled past six.
    let seven = [
        ("Debugger", MODEL),
        ("Explainer", MODEL),
        ("Architect", MODEL),
        ("Code Reviewer", MODEL),
        ("Debugger", "second"),
        ("Explainer", "second"),
        ("Architect", "second"),
    ];
    app.fill_launcher(&BattleForm::qa(&project, "Which is better?", &seven))
        .await?;
    app.press_start().await?;
    expect_count_error(&app, &h, 7).await?;
    app.screenshot("launcher-validation").await?;

    // Back to two: the message goes, and the battle starts.
    let two = BattleForm::qa(
        &project,
        "Which is better?",
        &[("Debugger", MODEL), ("Explainer", MODEL)],
    );
    app.fill_launcher(&two).await?;
    ensure!(
        !app.is_visible("[data-testid=contestants-error]").await?,
        "the contestant-count message still shows with 2 contestants"
    );
    app.press_start().await?;
    app.wait_until("the battle view", Duration::from_secs(30), || async {
        Ok(app.hash().await?.starts_with("#/battle/").then_some(()))
    })
    .await?;
    app.close().await
}

/// The count message shows, the launcher stays, and nothing was started:
/// no battle in the database, no request to the model server.
async fn expect_count_error(app: &App, h: &Harness, rows: usize) -> Result<()> {
    let message = app
        .wait_until(
            &format!("the contestant-count message with {rows} contestants"),
            Duration::from_secs(10),
            || async {
                let visible = app.is_visible("[data-testid=contestants-error]").await?;
                if !visible {
                    return Ok(None);
                }
                let text = app.text_of("[data-testid=contestants-error]").await?;
                Ok(Some(text))
            },
        )
        .await?;
    ensure!(
        message.contains('2') && message.contains('6'),
        "with {rows} contestants the message should give the allowed range 2–6: {message:?}"
    );
    let class = app
        .wait_for("[data-testid=contestants-error]")
        .await?
        .attr("class")
        .await?
        .unwrap_or_default();
    ensure!(
        class.split_whitespace().any(|c| c == "field-error"),
        "the contestant-count message has class {class:?}, not field-error"
    );

    tokio::time::sleep(NOTHING_STARTS_WITHIN).await;
    let hash = app.hash().await?;
    ensure!(
        !hash.starts_with("#/battle/"),
        "with {rows} contestants pressing Start opened {hash}"
    );
    ensure!(
        app.is_visible("[data-testid=launcher]").await?,
        "the launcher is gone after pressing Start with {rows} contestants"
    );
    let battles = h
        .engine()?
        .battle_count()
        .await
        .context("counting battles")?;
    ensure!(
        battles == 0,
        "with {rows} contestants the database has {battles} battle(s)"
    );
    let generations = h
        .server()
        .requests()
        .iter()
        .filter(|r| r.is_generation())
        .count();
    ensure!(
        generations == 0,
        "with {rows} contestants the model server got {generations} generation request(s)"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_run_banner_links_to_settings() -> Result<()> {
    let Some(h) = Harness::start("first_run_banner_links_to_settings").await? else {
        return Ok(());
    };
    // The only provider is a port nobody listens on.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding a port")?;
        listener.local_addr()?.port()
    };
    h.write_config(&config_toml(
        &[ProviderEntry::at(
            "local-server",
            &format!("http://127.0.0.1:{closed}/v1"),
            Lane::Local,
        )],
        None,
    ))?;
    let app = h.launch().await?;
    app.open_launcher().await?;

    let banner = app.text_of("[data-testid=first-run]").await?;
    ensure!(
        banner.contains("Settings"),
        "the first-run banner does not say where to configure: {banner:?}"
    );
    let link = app.wait_for("a[data-testid=first-run-settings]").await?;
    let target = link.attr("href").await?.unwrap_or_default();
    ensure!(
        target.ends_with("#/settings"),
        "the first-run link goes to {target:?}, not #/settings"
    );
    app.screenshot("first-run").await?;

    link.click().await.context("clicking the settings link")?;
    app.wait_for("[data-testid=settings]").await?;
    let hash = app.hash().await?;
    ensure!(hash == "#/settings", "the link opened {hash:?}");
    app.close().await
}

/// The project folder is checked as it is typed (the engine's
/// `check_project`): a missing folder, a file, a relative path and, for a
/// Coding battle, a folder that is not a git repository are each said at
/// the field, which is marked invalid, before anything starts; no error
/// code reaches the page; a good folder clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_folder_is_checked_at_the_field_as_it_is_typed() -> Result<()> {
    let Some(h) =
        Harness::start("the_project_folder_is_checked_at_the_field_as_it_is_typed").await?
    else {
        return Ok(());
    };
    let project = h.project_dir();
    std::fs::create_dir_all(&project)?;
    let file = project.join("notes.txt");
    std::fs::write(&file, "notes")?;
    let app = h.launch().await?;
    app.open_launcher().await?;
    let field = "input[data-testid=project-input]";
    let said = |path: String, says: &'static str| {
        let app = &app;
        async move {
            let input = app.wait_for(field).await?;
            app.fill(&input, &path).await?;
            app.wait_until(
                &format!("the field to say {says:?} of {path}"),
                Duration::from_secs(10),
                || async {
                    let shown = app.text_content("[data-testid=launcher]").await?;
                    let invalid = app
                        .js::<Option<String>>(
                            "return document.querySelector(arguments[0]).getAttribute('aria-invalid');",
                            vec![serde_json::json!(field)],
                        )
                        .await?;
                    Ok((shown.contains(says) && invalid.as_deref() == Some("true")).then_some(()))
                },
            )
            .await
        }
    };
    said(
        project.join("gone").display().to_string(),
        "There is no folder",
    )
    .await?;
    said(file.display().to_string(), "is a file").await?;
    said("some/relative/folder".into(), "full path").await?;
    app.screenshot("launcher-project-field").await?;
    ensure!(
        !app.page_text().await?.contains("invalid_input"),
        "an error code reached the page"
    );

    // A plain folder is fine for Q&A...
    let input = app.wait_for(field).await?;
    app.fill(&input, &project.display().to_string()).await?;
    app.wait_until("the field to clear", Duration::from_secs(10), || async {
        Ok((!app.is_visible("#launcher-project-error").await?).then_some(()))
    })
    .await?;
    // ...and not a git repository for a Coding battle.
    app.click("input[data-testid=battle-type-coding]").await?;
    said(project.display().to_string(), "git init").await?;
    app.close().await
}
