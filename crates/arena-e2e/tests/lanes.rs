//! Machine-wide lanes in the real window: two battles started from the
//! launcher take turns on the one local server (the second one's roster
//! says for whom it waits), and the app and an `arena` CLI process started
//! beside it share that lane too — judged from the scripted server's own
//! request log.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::{ModelScript, RecordedRequest};
use arena_e2e::{config_toml, BattleForm, Harness, ProviderEntry};

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Pairs of local streams that overlapped, as `(model, model)`.
fn overlapping(requests: &[RecordedRequest]) -> Vec<(String, String)> {
    let streams: Vec<(Instant, Instant, String)> = requests
        .iter()
        .filter(|r| r.is_generation())
        .filter_map(|r| {
            Some((
                r.stream_started_at?,
                r.stream_finished_at?,
                r.model.clone().unwrap_or_default(),
            ))
        })
        .collect();
    let mut pairs = Vec::new();
    for (i, a) in streams.iter().enumerate() {
        for b in &streams[i + 1..] {
            if a.0 < b.1 && b.0 < a.1 {
                pairs.push((a.2.clone(), b.2.clone()));
            }
        }
    }
    pairs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_battles_from_the_launcher_take_turns_and_show_who_they_wait_for() -> Result<()> {
    let Some(h) = Harness::start("two_battles_from_the_launcher_take_turns").await? else {
        return Ok(());
    };
    let local = h.server();
    // ~1.6 s per answer: long enough to start the second battle meanwhile.
    for model in ["local-a", "local-b"] {
        local.set_model(model, ModelScript::tokens(40).rate(25.0));
    }
    h.write_config(&config_toml(&[ProviderEntry::local("local", local)], None))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let first = app
        .start_battle(&BattleForm::qa(
            &project,
            "First battle",
            &[("Debugger", "local-a"), ("Explainer", "local-b")],
        ))
        .await?;
    let second = app
        .start_battle(&BattleForm::qa(
            &project,
            "Second battle",
            &[("Debugger", "local-a"), ("Explainer", "local-b")],
        ))
        .await?;
    ensure!(first != second, "two battles were started");
    // The second battle's view: its local contestants wait for the first's,
    // named by its title.
    let expected = format!(
        "waiting for local ({}): “First battle”, contestant",
        local.addr()
    );
    let reason = app
        .wait_until(
            "the second battle's roster to say what it waits for",
            Duration::from_secs(20),
            || async {
                let text = app.text_content("[data-testid=cell-waiting]").await?;
                Ok(text.contains(&expected).then_some(text))
            },
        )
        .await?;
    ensure!(
        app.text_content("[data-testid=roster-row] [data-testid=cell-status]")
            .await?
            .contains("queued"),
        "a waiting contestant is queued: {reason}"
    );
    app.screenshot("battle-waiting-for-lane").await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    ensure!(
        app.count("[data-testid=cell-waiting]").await? == 0,
        "no contestant still says it waits once the battle is done"
    );
    let engine = h.engine()?;
    for id in [&first, &second] {
        let b = engine.battle(id).await?;
        ensure!(
            b.status == arena_core::BattleStatus::Done,
            "battle {id} is {}",
            b.status
        );
    }
    let requests = local.requests();
    ensure!(
        requests.iter().filter(|r| r.is_generation()).count() == 4,
        "four local requests, got {}",
        requests.len()
    );
    let overlaps = overlapping(&requests);
    ensure!(
        overlaps.is_empty(),
        "local requests overlapped: {overlaps:?}"
    );
    // The roster shows prompt processing apart from generation, and the
    // model load of the second contestant (local-b after local-a).
    app.wait_for_text("includes model load").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_and_a_cli_process_share_the_local_lane() -> Result<()> {
    let Some(h) = Harness::start("the_app_and_a_cli_process_share_the_local_lane").await? else {
        return Ok(());
    };
    let local = h.server();
    for model in ["app-a", "app-b", "cli-a", "cli-b"] {
        local.set_model(model, ModelScript::tokens(30).rate(30.0));
    }
    h.write_config(&config_toml(&[ProviderEntry::local("local", local)], None))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let mut cli = h.arena_cli()?;
    cli.args(["battle", "run", "--type", "qa", "--json", "--no-analysis"])
        .arg("--project")
        .arg(&project)
        .args(["--prompt", "From the terminal"])
        .args(["-c", "debugger@cli-a", "-c", "explainer@cli-b"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "From the window",
            &[("Debugger", "app-a"), ("Explainer", "app-b")],
        ))
        .await?;
    let child = cli.spawn().context("starting arena")?;
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await?
        .context("waiting for arena")?;
    ensure!(
        out.status.success(),
        "arena failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let battle: serde_json::Value = serde_json::from_slice(&out.stdout).context("arena's JSON")?;
    ensure!(battle["status"] == "done", "the CLI battle: {battle}");
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    ensure!(
        h.engine()?.battle(&id).await?.status == arena_core::BattleStatus::Done,
        "the app's battle is done"
    );
    let requests = local.requests();
    ensure!(
        requests.iter().filter(|r| r.is_generation()).count() == 4,
        "four local requests"
    );
    let overlaps = overlapping(&requests);
    ensure!(
        overlaps.is_empty(),
        "the app's and the CLI's local requests overlapped: {overlaps:?}"
    );
    Ok(())
}
