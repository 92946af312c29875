//! The battle's numbers in plain words, in the real window (issue 42,
//! item 12): the roster's speeds carry their unit and say what they are, a
//! local model's cost is "free, local" and a cloud model without a price
//! asks for one, a request asked again reads "request retried N×" in the
//! roster and in the error alike, a queued contestant names the battle it
//! waits for by its title, the speed chart charts time to first token —
//! and for agents it charts their time alone and never says "includes
//! model load".
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::{Fault, ModelScript, TestServer, ToolCall, Turn};
use arena_e2e::{config_toml, contestant_with_model, App, BattleForm, Harness, ProviderEntry};
use serde_json::json;

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The text of `testid` within the roster row of contestant `id` (empty
/// when the row has none).
async fn cell(app: &App, id: &str, testid: &str) -> Result<String> {
    app.js(
        "const row = document.querySelector(`[data-testid=roster-row][data-contestant-id=\"${arguments[0]}\"]`);
         const cell = row && row.querySelector(`[data-testid=${arguments[1]}]`);
         return cell ? cell.innerText.replace(/\\s+/g, ' ').trim() : '';",
        vec![id.into(), testid.into()],
    )
    .await
}

/// Waits until the battle view reads `status` (its rows may differ: one
/// contestant failed).
async fn wait_battle(app: &App, status: &str) -> Result<()> {
    app.wait_until(
        &format!("the battle to read {status}"),
        BATTLE_TIMEOUT,
        || async {
            let now: Option<String> = app
                .js(
                    "return document.querySelector('[data-testid=battle-view]')?.dataset.status ?? null;",
                    vec![],
                )
                .await?;
            Ok((now.as_deref() == Some(status)).then_some(()))
        },
    )
    .await
}

/// Scrolls `css` to the top of the window, for a screenshot of it.
async fn show(app: &App, css: &str) -> Result<()> {
    let _: bool = app
        .js(
            "const el = document.querySelector(arguments[0]);
             if (el) { el.scrollIntoView({ block: 'start' }); window.scrollBy(0, -70); }
             return !!el;",
            vec![css.into()],
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(())
}

/// The speed chart's groups (`data-group`) and how many bars each draws.
async fn chart_groups(app: &App) -> Result<Vec<(String, usize)>> {
    app.js(
        "return [...document.querySelectorAll('[data-testid=bench-chart] g[data-group]')].map(g =>
           [g.dataset.group, g.querySelectorAll('g[data-contestant-id]').length]);",
        vec![],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roster_and_the_speed_chart_say_their_numbers_in_words() -> Result<()> {
    let Some(h) = Harness::start("the_roster_and_the_speed_chart_say_their_numbers").await? else {
        return Ok(());
    };
    // ~2.4 s per local answer: long enough to start the second battle.
    let local = h.server();
    for model in ["local-a", "local-b"] {
        local.set_model(model, ModelScript::tokens(60).rate(25.0));
    }
    let cloud = TestServer::start()
        .await
        .context("starting the cloud server")?;
    cloud.set_model(
        "unpriced",
        ModelScript::text("An answer at last.").rate(40.0),
    );
    // Down for good: four attempts (limits.max_attempts), three retries.
    cloud.set_model(
        "flaky",
        ModelScript::text("never sent").with_faults(vec![Fault::Status(503); 4]),
    );
    cloud.set_model(
        "recovers",
        ModelScript::text("Fine in the end.")
            .rate(40.0)
            .with_faults(vec![Fault::Status(503), Fault::Status(503)]),
    );
    h.write_config(&config_toml(
        &[
            ProviderEntry::local("local", local),
            ProviderEntry::cloud("cloud", &cloud),
        ],
        None,
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let first = app
        .start_battle(&BattleForm::qa(
            &project,
            "Tell the long story of Rome",
            &[("Debugger", "local-a"), ("Explainer", "local-b")],
        ))
        .await?;
    let second = app
        .start_battle(&BattleForm::qa(
            &project,
            "Second battle",
            &[
                ("Debugger", "local-a"),
                ("Explainer", "unpriced"),
                ("Architect", "flaky"),
                ("Code Reviewer", "recovers"),
            ],
        ))
        .await?;

    // The queued contestant names the battle it waits for by its title
    // (first it may wait behind a queue, which names no battle at all);
    // no reason it shows quotes the battle's id.
    let short = arena_core::battle::short_id(&first).to_string();
    let seen = std::sync::Mutex::new(Vec::<String>::new());
    let reason = app
        .wait_until(
            "the second battle's local contestant to name the battle it waits for",
            Duration::from_secs(20),
            || async {
                let text = app.text_content("[data-testid=cell-waiting]").await?;
                if !text.is_empty() {
                    if let Ok(mut seen) = seen.lock() {
                        seen.push(text.clone());
                    }
                }
                Ok(text.contains("Tell the long story of Rome").then_some(text))
            },
        )
        .await?;
    ensure!(
        reason.contains("“Tell the long story of Rome”, contestant"),
        "the queue reason reads {reason:?}"
    );
    let seen = seen.into_inner().unwrap_or_default();
    ensure!(
        seen.iter().all(|text| !text.contains(&short)),
        "a queue reason quotes the first battle's id {short}: {seen:?}"
    );

    wait_battle(&app, "done").await?;
    let battle = h.engine()?.battle(&second).await?;
    let id = |model: &str| contestant_with_model(&battle, model);
    let (local_a, unpriced, flaky, recovers) = (
        id("local-a")?,
        id("unpriced")?,
        id("flaky")?,
        id("recovers")?,
    );
    app.wait_until(
        "the figures of the local answer",
        Duration::from_secs(10),
        || async { Ok((!cell(&app, &local_a, "cell-ttft").await?.is_empty()).then_some(())) },
    )
    .await?;

    // Speeds with their unit; the first token named; the model load beside
    // it (local-a after the first battle's local-b).
    let tps = cell(&app, &local_a, "cell-tps").await?;
    ensure!(tps.contains(" tok/s"), "the generation speed reads {tps:?}");
    let pps = cell(&app, &local_a, "cell-pps").await?;
    ensure!(
        pps.starts_with("prompt ") && pps.ends_with(" tok/s"),
        "the prompt speed reads {pps:?}"
    );
    let ttft = cell(&app, &local_a, "cell-ttft").await?;
    ensure!(ttft.starts_with("first token "), "the TTFT reads {ttft:?}");
    let load = cell(&app, &local_a, "model-load").await?;
    ensure!(
        load == "includes model load",
        "local-a after local-b: {load:?}"
    );
    // Costs: free on this machine; a cloud model with no price asks for one.
    let free = cell(&app, &local_a, "cell-cost").await?;
    ensure!(free == "$0 free, local", "the local cost reads {free:?}");
    let ask = cell(&app, &unpriced, "cell-cost").await?;
    ensure!(
        ask == "set a price",
        "the unpriced cloud cost reads {ask:?}"
    );
    let target: Option<String> = app
        .js(
            "return document.querySelector(`[data-testid=roster-row][data-contestant-id=\"${arguments[0]}\"] [data-testid=set-price]`)?.getAttribute('href') ?? null;",
            vec![unpriced.clone().into()],
        )
        .await?;
    ensure!(
        target.as_deref() == Some("#/settings"),
        "'set a price' links to {target:?}"
    );
    // The same number in the same words, in the roster and in the error.
    let attempts = cell(&app, &flaky, "cell-attempts").await?;
    let error = cell(&app, &flaky, "cell-error").await?;
    ensure!(
        attempts.contains("request retried 3×")
            && error.contains("(request retried 3×)")
            && !error.contains("attempts"),
        "the roster reads {attempts:?} beside the error {error:?}"
    );
    let recovered = cell(&app, &recovers, "cell-attempts").await?;
    ensure!(
        recovered.contains("request retried 2×"),
        "a request that worked on its third try reads {recovered:?}"
    );
    show(&app, ".roster").await?;
    app.screenshot("roster-retried").await?;

    // The speed chart: duration, time to first token and tokens per second.
    let groups = chart_groups(&app).await?;
    let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
    ensure!(
        names == ["duration", "ttft", "rate"] && groups.iter().all(|(_, n)| *n == 4),
        "the speed chart's groups: {groups:?}"
    );
    show(&app, ".bench").await?;
    app.screenshot("battle-speed-chart").await?;
    app.close().await
}

/// An agent that writes `notes.txt`, then says so.
fn agent(content: &str) -> ModelScript {
    ModelScript::turns(vec![
        Turn::ToolCalls {
            text: None,
            calls: vec![ToolCall::new(
                "write_file",
                json!({"path": "notes.txt", "content": content}),
            )],
        },
        Turn::text("Rewrote notes.txt."),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_charted_by_their_time_and_never_include_a_model_load() -> Result<()> {
    let Some(h) = Harness::start("agents_are_charted_by_their_time").await? else {
        return Ok(());
    };
    let project = h.git_project(&[("notes.txt", "old notes\n")])?;
    // Two agents on one local server: the second one's lane switched model.
    let local = h.server();
    local.set_model("coder-a", agent("notes by a\n"));
    local.set_model("coder-b", agent("notes by b\n"));
    h.write_config(&config_toml(&[ProviderEntry::local("local", local)], None))?;
    let app = h.launch().await?;
    let id = app
        .start_battle(&BattleForm::coding(
            &project,
            "Rewrite notes.txt.",
            &[("native", "coder-a"), ("native", "coder-b")],
        ))
        .await?;
    app.wait_for("[data-testid=battle-view][data-battle-type=coding]")
        .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    let battle = h.engine()?.battle(&id).await?;
    ensure!(
        battle
            .contestants
            .iter()
            .any(|c| c.benchmark.model_switched),
        "no agent's lane switched model, so the test shows nothing: {:?}",
        battle
            .contestants
            .iter()
            .map(|c| c.benchmark.clone())
            .collect::<Vec<_>>()
    );

    // No first token, so no model load to speak of.
    let loads = app.count("[data-testid=model-load]").await?;
    ensure!(loads == 0, "{loads} agents 'include model load'");
    // Their time alone: no empty token-rate or first-token tracks.
    let groups = chart_groups(&app).await?;
    ensure!(
        groups == [("duration".to_string(), 2)],
        "the agents' speed chart: {groups:?}"
    );
    app.wait_for("[data-testid=bench-agents-note]").await?;
    // An agent on this machine's model is free.
    let coder = contestant_with_model(&battle, "coder-a")?;
    let cost = cell(&app, &coder, "cell-cost").await?;
    ensure!(
        cost == "$0 free, local",
        "the local agent's cost reads {cost:?}"
    );
    show(&app, ".bench").await?;
    app.screenshot("coding-speed-chart").await?;
    app.close().await
}
