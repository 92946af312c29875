//! Cancelling an analysis from the battle view: the Cancel button stops the
//! judge, and the analysis ends failed, "cancelled by the user", in the
//! window and in the engine.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_core::analysis::AnalysisStatus;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, Harness, ProviderEntry};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_analysis_is_cancelled_from_the_battle_view() -> Result<()> {
    let Some(h) = Harness::start("a_running_analysis_is_cancelled_from_the_battle_view").await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("a", ModelScript::text("Paris.").rate(200.0));
    server.set_model("b", ModelScript::text("Lyon.").rate(200.0));
    // A judge slow enough to cancel: its first digest takes ~20 s.
    server.set_model("judge", ModelScript::tokens(400).rate(20.0));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloud", server)],
        Some("judge"),
    ))?;
    let battle = h
        .run_qa_battle("Capital of France?", &["debugger@a", "explainer@b"])
        .await?;
    let app = h.launch().await?;
    app.goto(&format!("#/battle/{}", battle.id)).await?;
    app.click("[data-testid=analyze]").await?;
    app.click("[data-testid=cancel-analysis]").await?;
    let shown = app
        .wait_until(
            "the analysis to say it was cancelled",
            // Generous for a loaded machine; an analysis that was not
            // cancelled ends with a verdict instead, which fails below.
            Duration::from_secs(30),
            || async {
                let text: String = app
                    .js(
                        "const p = document.querySelector('[data-testid=analysis-outcome]');\n\
                         return p ? p.parentElement.textContent : '';",
                        Vec::new(),
                    )
                    .await?;
                Ok(text.contains("cancelled by the user").then_some(text))
            },
        )
        .await?;
    ensure!(
        !shown.contains("Judging…"),
        "the panel still says it is judging: {shown}"
    );
    ensure!(
        app.count("[data-testid=cancel-analysis]").await? == 0,
        "no Cancel button once the analysis ended"
    );
    app.screenshot("analysis-cancelled").await?;
    let analysis = h
        .engine()?
        .analysis(&battle.id)
        .await?
        .context("an analysis was recorded")?;
    ensure!(
        analysis.status == AnalysisStatus::Error
            && analysis.error.as_deref() == Some("cancelled by the user"),
        "the engine has {:?}: {:?}",
        analysis.status,
        analysis.error
    );
    // The two digests were asked at once; no judge run followed.
    let asked = server.requests_for("judge").len();
    ensure!(asked <= 2, "the judge was asked {asked} times");
    Ok(())
}
