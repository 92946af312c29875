//! Lanes across processes: `arena` processes started together on one data
//! directory share the local server's lane, judged from the scripted
//! server's own request log; a process killed while it holds the lane frees
//! it at once, and its battle resumes later without re-running finished work.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use arena_testserver::{most_at_once, ModelScript};
use serde_json::Value;

mod common;
use common::Setup;

/// `arena battle run --json --no-analysis` with these contestants, in the background.
fn spawn(s: &Setup, prompt: &str, contestants: &[&str]) -> Child {
    s.battle_run(prompt, contestants, &["--no-analysis"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a child and returns its battle JSON; fails with its stderr.
async fn finished(child: Child) -> Value {
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "arena failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Polls `battle list --json` until a battle with this prompt satisfies `ready`.
async fn wait_for_battle(
    s: &Setup,
    prompt: &str,
    what: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Value::Null;
    loop {
        assert!(
            Instant::now() < deadline,
            "timed out waiting: {what}; last seen: {seen:#}"
        );
        let list = s.arena(&["battle", "list", "--json"]).await;
        if let Ok(Value::Array(list)) = serde_json::from_slice::<Value>(&list.stdout) {
            if let Some(b) = list.iter().find(|b| b["prompt"] == prompt) {
                if ready(b) {
                    return b.clone();
                }
                seen = b.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

#[tokio::test]
async fn ten_processes_started_together_on_a_fresh_data_directory_all_succeed() {
    let s = Setup::new().await;
    s.local.set_model("l1", ModelScript::tokens(8).rate(400.0));
    s.local.set_model("l2", ModelScript::tokens(8).rate(400.0));
    assert!(
        !s.dir.path().join("data").exists(),
        "a fresh data directory"
    );
    let children: Vec<Child> = (0..10)
        .map(|i| spawn(&s, &format!("run {i}"), &["debugger@l1", "explainer@l2"]))
        .collect();
    for child in children {
        let b = finished(child).await;
        assert_eq!(b["status"], "done", "{b}");
    }
    let list = s.json(&["battle", "list", "--json"]).await;
    assert_eq!(list.as_array().unwrap().len(), 10);
    let requests = s.local.requests();
    assert_eq!(requests.iter().filter(|r| r.is_generation()).count(), 20);
    assert_eq!(most_at_once(&requests), 1, "two local requests overlapped");
    // Every process seeded or found the one persona registry.
    let registry = std::fs::read_to_string(s.dir.path().join("data/AGENTS.md")).unwrap();
    assert!(registry.contains("Debugger"));
}

#[tokio::test]
async fn two_processes_take_turns_on_the_local_lane_and_show_who_holds_it() {
    let s = Setup::new().await;
    s.local.set_model("l1", ModelScript::tokens(40).rate(200.0));
    s.local.set_model("l2", ModelScript::tokens(40).rate(200.0));
    s.cloud.set_model("c1", ModelScript::tokens(20).rate(200.0));
    let first = spawn(&s, "first", &["debugger@l1", "explainer@l2", "debugger@c1"]);
    let a = wait_for_battle(&s, "first", "the first battle running", |b| {
        b["contestants"][0]["status"] == "running"
    })
    .await;
    let second = spawn(
        &s,
        "second",
        &["debugger@l1", "explainer@l2", "debugger@c1"],
    );
    // The second process's local contestants wait, saying for what and whom.
    let waiting = wait_for_battle(&s, "second", "the second battle waiting", |b| {
        b["contestants"][0]["waiting"].is_string()
    })
    .await;
    let reason = waiting["contestants"][0]["waiting"].as_str().unwrap();
    // The battle holding the lane is named by its title, not its id.
    let title = arena_core::battle::title(a["prompt"].as_str().unwrap());
    assert!(
        reason.starts_with(&format!(
            "waiting for local ({}): {title}, contestant",
            s.local.addr()
        )),
        "{reason}"
    );
    assert_eq!(waiting["contestants"][0]["status"], "queued");
    let shown = s
        .arena(&["battle", "show", waiting["id"].as_str().unwrap()])
        .await;
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("waiting for local ("), "battle show:\n{text}");
    // The cloud contestant did not wait for the local lane.
    assert!(!waiting["contestants"][2]["waiting"].is_string());

    let (a, b) = (finished(first).await, finished(second).await);
    assert_eq!(
        (a["status"].as_str(), b["status"].as_str()),
        (Some("done"), Some("done"))
    );
    assert!(b["contestants"][0]["waiting"].is_null());
    let local = s.local.requests();
    assert_eq!(local.iter().filter(|r| r.is_generation()).count(), 4);
    assert_eq!(
        most_at_once(&local),
        1,
        "the two processes' local requests overlapped"
    );
    let c = &b["contestants"][1];
    assert!(c["prompt_per_sec"].as_f64().is_some(), "{c}");
    assert_eq!(c["model_switched"], true, "l2 after l1 on one server: {c}");
}

#[tokio::test]
async fn killing_the_process_that_holds_the_lane_frees_it_at_once() {
    let s = Setup::new().await;
    s.local
        .set_model("quick", ModelScript::tokens(5).rate(400.0));
    s.local
        .set_model("slow", ModelScript::tokens(400).rate(40.0));
    s.local
        .set_model("next", ModelScript::tokens(5).rate(400.0));
    let mut holder = spawn(&s, "holder", &["debugger@quick", "explainer@slow"]);
    let a = wait_for_battle(&s, "holder", "the slow contestant streaming", |b| {
        b["contestants"][0]["status"] == "done" && b["contestants"][1]["status"] == "running"
    })
    .await;
    while s.local.requests_for("slow").is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let waiter = spawn(&s, "waiter", &["debugger@next", "explainer@next"]);
    wait_for_battle(&s, "waiter", "the second process waiting", |b| {
        b["contestants"][0]["waiting"].is_string()
    })
    .await;
    assert!(s.local.requests_for("next").is_empty());

    holder.kill().unwrap();
    holder.wait().unwrap();
    let killed = Instant::now();
    let deadline = killed + Duration::from_secs(10);
    let started = loop {
        if let Some(r) = s.local.requests_for("next").first() {
            break r.received_at;
        }
        assert!(
            Instant::now() < deadline,
            "the waiting contestant never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let handover = started.saturating_duration_since(killed);
    assert!(
        handover < Duration::from_secs(2),
        "started {handover:?} after the holder died"
    );
    assert_eq!(finished(waiter).await["status"], "done");

    // The killed battle resumes later; its finished contestant is not run again.
    s.local
        .set_model("slow", ModelScript::tokens(5).rate(400.0));
    let id = a["id"].as_str().unwrap();
    let out = s.arena(&["battle", "resume", id, "--json"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = s.json(&["battle", "show", id, "--json"]).await;
    assert_eq!(shown["status"], "done", "{shown}");
    assert_eq!(
        s.local.requests_for("quick").len(),
        1,
        "a finished contestant ran twice"
    );
    assert_eq!(s.local.requests_for("slow").len(), 2);
    assert_eq!(shown["contestants"][1]["attempts"], 2);
}
