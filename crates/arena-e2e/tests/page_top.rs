//! Each page starts at its top (issue 42, item 12): moving from a page
//! scrolled down to another, by the top bar's links or by a link in the
//! page, shows the new page from its first line, not at the last page's
//! scroll position.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, Harness, ProviderEntry};

/// Scrolls the window to the bottom of the page; returns how far it went.
async fn scroll_down(app: &App) -> Result<f64> {
    app.js(
        "window.scrollTo(0, document.documentElement.scrollHeight); return window.scrollY;",
        vec![],
    )
    .await
}

/// Waits for `css` (the new page), then for the window to stand at its top.
async fn at_top(app: &App, css: &str, how: &str) -> Result<()> {
    app.wait_for(css).await?;
    let y = app
        .wait_until(
            &format!("the page reached {how} to start at its top"),
            Duration::from_secs(5),
            || async {
                let y: f64 = app.js("return window.scrollY;", vec![]).await?;
                Ok((y == 0.0).then_some(y))
            },
        )
        .await;
    ensure!(
        y.is_ok(),
        "{how}: the page kept the last one's scroll position: {y:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_starts_at_its_top() -> Result<()> {
    let Some(h) = Harness::start("every_page_starts_at_its_top").await? else {
        return Ok(());
    };
    let server = h.server();
    for m in ["m-one", "m-two", "m-three", "m-four", "m-five", "m-six"] {
        server.set_model(m, ModelScript::tokens(200));
    }
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloudy", server)],
        None,
    ))?;
    // Six answers make a battle page taller than the window; thirty
    // battles a long History.
    let six = [
        "Debugger@m-one",
        "Explainer@m-two",
        "Architect@m-three",
        "Debugger@m-four",
        "Explainer@m-five",
        "Architect@m-six",
    ];
    let battle = h.run_qa_battle("A long page.", &six).await?;
    for i in 0..30 {
        h.run_qa_battle(&format!("Filler battle {i}."), &six[..2])
            .await?;
    }
    let app = h.launch().await?;

    app.goto(&format!("#/battle/{}", battle.id)).await?;
    app.wait_for("[data-testid=roster]").await?;
    let y = scroll_down(&app).await?;
    ensure!(y > 200.0, "the battle page is too short to scroll ({y} px)");
    app.click("[data-testid=nav-history]").await?;
    at_top(
        &app,
        "[data-testid=history-row]",
        "History from the top bar",
    )
    .await?;

    // History, scrolled down, to a battle by its row's link.
    app.wait_until(
        "thirty battles in History",
        Duration::from_secs(30),
        || async { Ok((app.count("[data-testid=history-row]").await? >= 30).then_some(())) },
    )
    .await?;
    let y = scroll_down(&app).await?;
    ensure!(y > 200.0, "History is too short to scroll ({y} px)");
    let row = format!(
        "[data-testid=history-row][data-battle-id=\"{}\"] [data-testid=history-row-link]",
        battle.id
    );
    let link = app.wait_for(&row).await?;
    app.click_element(&link).await?;
    at_top(&app, "[data-testid=roster]", "a battle from History").await?;

    // The battle, scrolled down, to Settings.
    scroll_down(&app).await?;
    app.click("[data-testid=nav-settings]").await?;
    at_top(&app, "[data-testid=settings]", "Settings from the top bar").await?;
    app.close().await
}
