//! A judge is picked from the models the providers serve, not typed into a
//! free-text box (issue 42, item 12): the verdict card's "Choose another
//! judge" and the series' goal judge list the served models by provider,
//! and a model the list does not show can still be typed.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, Harness, ProviderEntry, MODEL};

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// `value / label` of each option of the select matching `css`.
async fn options(app: &App, css: &str) -> Result<Vec<String>> {
    app.wait_for(css).await?;
    app.js(
        "return [...document.querySelector(arguments[0]).options].map(o => o.value + ' / ' + o.label.trim());",
        vec![css.into()],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_judge_and_the_goal_judge_are_picked_from_the_served_models() -> Result<()> {
    let Some(h) =
        Harness::start("the_judge_and_the_goal_judge_are_picked_from_the_served_models").await?
    else {
        return Ok(());
    };
    let server = h.server();
    server.set_model("m-one", ModelScript::text("Paris is the capital."));
    server.set_model("m-two", ModelScript::text("Lyon, I think."));
    server.set_model("other-judge", ModelScript::judge_preferring("Paris"));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloudy", server)],
        Some(MODEL),
    ))?;
    // Run to the end, not judged: the card offers a judge.
    let battle = h
        .run_qa_battle(
            "What is the capital of France?",
            &["Debugger@m-one", "Explainer@m-two"],
        )
        .await?;
    let app = h.launch().await?;
    app.goto(&format!("#/battle/{}", battle.id)).await?;

    // The served models, by provider, and a way to type one.
    let judge = "select[data-testid=verdict-judge]";
    let listed = app
        .wait_until(
            "the served models in the judge picker",
            BATTLE_TIMEOUT,
            || async {
                let listed = options(&app, judge).await?;
                Ok(listed
                    .iter()
                    .any(|o| o.starts_with("other-judge /"))
                    .then_some(listed))
            },
        )
        .await?;
    ensure!(
        listed
            .first()
            .is_some_and(|o| o.ends_with("The default judge"))
            && listed.iter().any(|o| o.ends_with("Type a model id…")),
        "the judge picker offers {listed:?}"
    );
    ensure!(
        app.count("[data-testid=verdict-card] input[type=text], [data-testid=analysis-panel] input[type=text]")
            .await?
            == 0,
        "a free-text judge box shows before the user asks to type"
    );
    // Typing a model: the list gives way to a field, and the judge is that model.
    // (The select gives way to the field as the option is clicked.)
    let option = app
        .wait_for("select[data-testid=verdict-judge] option[value=__type_model__]")
        .await?;
    app.click_element(&option).await?;
    let typed = app
        .wait_for("input[data-testid=verdict-judge-typed]")
        .await?;
    app.fill(&typed, "other-judge").await?;
    let card = app.wait_for("[data-testid=verdict-card]").await?;
    app.scroll_to(&card).await?;
    app.screenshot("analysis-judge-picker").await?;
    app.click("button[data-testid=analyze]").await?;
    app.wait_attr(
        "[data-testid=verdict-card]",
        "data-kind",
        "judged",
        BATTLE_TIMEOUT,
    )
    .await?;
    let analysis = h
        .engine()?
        .analysis(&battle.id)
        .await?
        .context("no analysis stored")?;
    ensure!(
        analysis.model == "other-judge",
        "the battle was judged by {:?}",
        analysis.model
    );

    // The series' goal judge: the same picker in the launcher.
    app.open_launcher().await?;
    app.click("[data-testid=series-toggle]").await?;
    let goal = "select[data-testid=series-goal-model]";
    let listed = app
        .wait_until(
            "the served models in the goal judge picker",
            BATTLE_TIMEOUT,
            || async {
                let listed = options(&app, goal).await?;
                Ok(listed
                    .iter()
                    .any(|o| o.starts_with("other-judge /"))
                    .then_some(listed))
            },
        )
        .await?;
    ensure!(
        listed
            .first()
            .is_some_and(|o| o.ends_with("The default model"))
            && listed.iter().any(|o| o.ends_with("Type a model id…")),
        "the goal judge picker offers {listed:?}"
    );
    let select = app.wait_for(goal).await?;
    app.choose(&select, "other-judge").await?;
    app.close().await
}
