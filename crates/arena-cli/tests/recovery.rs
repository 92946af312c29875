//! Analyses and cross-examinations can be cancelled from any process, and
//! crashes never leave work stuck: an `arena` process SIGKILLed while it
//! judges a battle, or while it cross-examines one, leaves that work
//! `running` in the database; `arena battle resume` then finds it, marks it
//! failed with a clear reason and judges the battle again.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use arena_testserver::ModelScript;
use serde_json::Value;

mod common;
use common::Setup;

/// A judge that digests slowly (so there is time to kill it) or quickly,
/// and always picks answer A.
fn judge(rate: f64) -> ModelScript {
    ModelScript::respond_with(|body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        if system.contains("You summarise one answer") {
            "A plain summary of the answer, with its main points and omissions.".into()
        } else {
            r#"{"winner": "A", "ranking": ["A", "B"], "reasons": {"A": "clearer"}}"#.into()
        }
    })
    .rate(rate)
}

/// A finished battle of two quick local contestants, not judged yet.
async fn finished_battle(s: &Setup) -> String {
    s.local.set_model("l1", ModelScript::tokens(5).rate(400.0));
    s.local.set_model("l2", ModelScript::tokens(5).rate(400.0));
    let mut run = s.battle_run(
        "Which is better?",
        &["debugger@l1", "explainer@l2"],
        &["--no-analysis"],
    );
    let out = tokio::task::spawn_blocking(move || run.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b["status"], "done");
    b["id"].as_str().unwrap().to_string()
}

/// Kills `child` once the scripted server has seen `requests` requests for `model`.
async fn kill_after_requests(s: &Setup, mut child: Child, model: &str, requests: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.local.requests_for(model).len() < requests {
        assert!(Instant::now() < deadline, "{model} was never asked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test]
async fn an_analysis_killed_half_way_is_judged_again_on_resume() {
    let s = Setup::new().await;
    let id = finished_battle(&s).await;
    s.local.set_model("judge", judge(5.0));
    let analyze = s
        .command(&["battle", "analyze", &id, "--model", "judge", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_after_requests(&s, analyze, "judge", 1).await;
    let shown = s.json(&["battle", "show", &id, "--json"]).await;
    assert_eq!(
        shown["analysis"]["status"], "running",
        "left running by the dead process"
    );

    s.local.set_model("judge", judge(500.0));
    let resumed = s.json(&["battle", "resume", "--json"]).await;
    let b = resumed
        .as_array()
        .and_then(|all| all.iter().find(|b| b["id"] == id.as_str()))
        .unwrap_or_else(|| panic!("resume did not report the battle: {resumed}"));
    assert_eq!(b["analysis"]["status"], "done", "{b:#}");
    assert_ne!(
        b["analysis"]["id"], shown["analysis"]["id"],
        "a new analysis ran"
    );
    // (The judge always names the first answer shown: position bias, so
    // the two runs in opposite orders disagree.)
    assert_eq!(b["analysis"]["outcome"], "no_clear_winner");
    // A second resume finds nothing more to do.
    let again = s.json(&["battle", "resume", "--json"]).await;
    assert_eq!(
        again,
        Value::Array(vec![]),
        "nothing is left after the first resume"
    );
}

#[tokio::test]
async fn a_cross_examination_killed_half_way_is_marked_failed_with_the_reason() {
    let s = Setup::new().await;
    let id = finished_battle(&s).await;
    s.local
        .set_model("examiner", ModelScript::tokens(400).rate(20.0));
    let examine = s
        .command(&[
            "battle",
            "cross-examine",
            &id,
            "-c",
            "debugger@examiner",
            "--json",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_after_requests(&s, examine, "examiner", 1).await;
    let shown = s.json(&["battle", "show", &id, "--json"]).await;
    assert_eq!(shown["cross_examinations"][0]["status"], "running");

    let out = s.arena(&["battle", "resume"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("Battle {id}: a cross-examination was interrupted")),
        "{text}"
    );
    let shown = s.json(&["battle", "show", &id, "--json"]).await;
    let x = &shown["cross_examinations"][0];
    assert_eq!(x["status"], "error", "{x:#}");
    assert!(
        x["error"].as_str().unwrap_or("").contains("interrupted"),
        "{x:#}"
    );
}

/// Cancelling work another process runs: the request is recorded, and that
/// process stops it within a quarter of a second.
async fn cancel_from_another_process(s: &Setup, id: &str, running: Child, flag: &str) -> Value {
    let started = Instant::now();
    let out = s.arena(&["battle", "cancel", id, flag]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Cancelled the running"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let out = tokio::task::spawn_blocking(move || running.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.json(&["battle", "show", id, "--json"]).await
}

#[tokio::test]
async fn an_analysis_and_a_cross_examination_can_be_cancelled_from_another_process() {
    let s = Setup::new().await;
    let id = finished_battle(&s).await;
    s.local.set_model("judge", judge(5.0));
    let analyze = s
        .command(&["battle", "analyze", &id, "--model", "judge", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while s.local.requests_for("judge").is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let shown = cancel_from_another_process(&s, &id, analyze, "--analysis").await;
    assert_eq!(shown["analysis"]["status"], "error", "{shown:#}");
    assert_eq!(shown["analysis"]["error"], "cancelled by the user");

    s.local
        .set_model("examiner", ModelScript::tokens(400).rate(20.0));
    let examine = s
        .command(&[
            "battle",
            "cross-examine",
            &id,
            "-c",
            "debugger@examiner",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while s.local.requests_for("examiner").is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let shown = cancel_from_another_process(&s, &id, examine, "--cross-exam").await;
    let x = &shown["cross_examinations"][0];
    assert_eq!(x["status"], "error", "{x:#}");
    assert_eq!(x["error"], "cancelled by the user");
    // Nothing left to cancel.
    let out = s.arena(&["battle", "cancel", &id, "--analysis"]).await;
    assert!(String::from_utf8_lossy(&out.stdout).contains("No analysis was running"));
}
