//! `arena series` as a user runs it: a series to its end with its JSON and
//! report files, caps refused with exit 2, an idempotency key across
//! processes, and a process SIGKILLed mid-series whose series `arena series
//! resume` finishes without running any place twice.

use std::process::Stdio;
use std::time::{Duration, Instant};

use arena_testserver::ModelScript;
use serde_json::{json, Value};

mod common;
use common::Setup;

/// Digests and a judge that pick the answer naming Paris; a goal judge
/// that passes it.
fn judge() -> ModelScript {
    ModelScript::judge_preferring("Paris")
}

fn models(s: &Setup, rate: f64) {
    s.cloud.set_model("judge", judge());
    s.local.set_model(
        "good",
        ModelScript::text("Paris is the capital.").rate(rate),
    );
    s.local
        .set_model("bad", ModelScript::text("Lyon, I think.").rate(rate));
}

fn series_args<'a>(s: &'a Setup, project: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let _ = s;
    let mut args = vec![
        "series",
        "run",
        "--type",
        "qa",
        "--project",
        project,
        "--prompt",
        "What is the capital of France?",
        "-c",
        "debugger@good",
        "-c",
        "explainer@bad",
        "--json",
    ];
    args.extend_from_slice(extra);
    args
}

#[tokio::test]
async fn a_series_runs_to_its_end_with_json_and_report_files() {
    let s = Setup::new().await;
    models(&s, 0.0);
    let project = s.project().to_string_lossy().into_owned();
    let out = s
        .arena(&series_args(
            &s,
            &project,
            &["--runs", "3", "--parallel", "2", "--goal", "names Paris"],
        ))
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["status"], "done", "{json:#}");
    assert_eq!(
        (json["runs_planned"].as_u64(), json["runs_done"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(json["battles"].as_array().map(Vec::len), Some(3));
    let good = &json["contestants"][0];
    assert_eq!(
        (&good["identity"], &good["model"]),
        (&json!("Debugger"), &json!("good"))
    );
    assert_eq!(good["wins"], 3);
    assert_eq!(good["goal_pass_rate"], 1.0);
    assert!(good["win_rate_ci"][0].as_f64().unwrap() > 0.0, "{good:#}");
    assert_eq!(json["contestants"][1]["goal_pass_rate"], 0.0);
    // Local models are free, but the cloud judge has no [[price]]: the
    // spend is unknown, not zero.
    assert!(json["spent_usd"].is_null(), "{json:#}");
    let dir = std::path::PathBuf::from(json["report_path"].as_str().unwrap());
    for file in ["report.md", "report.json", "runs.csv"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    // `series show` and `series list` agree.
    let id = json["id"].as_str().unwrap();
    let shown = s.arena(&["series", "show", id, "--json"]).await;
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["contestants"], json["contestants"]);
    let list = s.arena(&["series", "list", "--json"]).await;
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list[0]["id"], json["id"]);
    let text = s.arena(&["series", "show", &id[id.len() - 8..]]).await;
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("| Debugger@good | 3 | 3 | 100%"), "{text}");
    // The leaderboard of the series: its contestants, Debugger first.
    let board = s.json(&["leaderboard", "--series", id, "--json"]).await;
    assert_eq!(
        board["standings"].as_array().map(Vec::len),
        Some(2),
        "{board:#}"
    );
    assert_eq!(board["standings"][0]["identity"], "Debugger");
    let none = s.arena(&["leaderboard", "--series", "nosuchseries"]).await;
    assert_eq!(
        none.status.code(),
        Some(2),
        "an unknown series is an input error"
    );
    // `series report --format` prints one of the files.
    let csv = s.arena(&["series", "report", id, "--format", "csv"]).await;
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert_eq!(
        csv.lines().count(),
        1 + 3 * 2,
        "a header and a row per contestant per run: {csv}"
    );
    let html = s.arena(&["series", "report", id, "--format", "html"]).await;
    let html = String::from_utf8_lossy(&html.stdout);
    assert!(
        html.starts_with("<!doctype html>") && !html.contains("<script"),
        "{html}"
    );
}

#[tokio::test]
async fn too_many_battles_and_a_bad_prompt_set_are_refused_with_exit_2() {
    let s = Setup::new().await;
    models(&s, 0.0);
    let project = s.project().to_string_lossy().into_owned();
    let set = s.dir.path().join("prompts.jsonl");
    std::fs::write(&set, "{\"prompt\": \"one\"}\n{\"prompt\": \"two\"}\n").unwrap();
    let set = set.to_string_lossy().into_owned();
    let mut args = series_args(&s, &project, &["--runs", "5001"]);
    let at = args.iter().position(|a| *a == "--prompt").unwrap();
    args.splice(at..at + 2, ["--prompts", set.as_str()]);
    let out = s.arena(&args).await;
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("10002 battles") && err.contains("at most 10000"),
        "{err}"
    );
    std::fs::write(s.dir.path().join("prompts.jsonl"), "{\"prompt\": 1}\n").unwrap();
    let last = args.len() - 1;
    args[last] = "1";
    let out = s.arena(&args).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"));
    let list = s.arena(&["series", "list", "--json"]).await;
    assert_eq!(
        serde_json::from_slice::<Value>(&list.stdout).unwrap(),
        serde_json::json!([])
    );
}

#[tokio::test]
async fn the_same_key_in_another_process_starts_nothing() {
    let s = Setup::new().await;
    models(&s, 0.0);
    let project = s.project().to_string_lossy().into_owned();
    let first = s
        .arena(&series_args(&s, &project, &["--runs", "2", "--key", "k1"]))
        .await;
    assert!(first.status.success());
    let first: Value = serde_json::from_slice(&first.stdout).unwrap();
    let requests = s.local.requests_for("good").len();
    let again = s
        .arena(&series_args(&s, &project, &["--runs", "2", "--key", "k1"]))
        .await;
    assert!(again.status.success());
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(s.local.requests_for("good").len(), requests, "nothing ran");
    let other = s
        .arena(&series_args(&s, &project, &["--runs", "3", "--key", "k1"]))
        .await;
    assert_eq!(other.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&other.stderr).contains("different request"));
}

#[tokio::test]
async fn a_killed_series_is_resumed_and_no_place_runs_twice() {
    let s = Setup::new().await;
    // Slow enough to kill the process in the middle of the series.
    models(&s, 40.0);
    let project = s.project().to_string_lossy().into_owned();
    let mut child = s
        .command(&series_args(
            &s,
            &project,
            &["--runs", "4", "--no-analysis"],
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the second battle has started.
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.local.requests_for("good").len() < 2 {
        assert!(Instant::now() < deadline, "the series never got going");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = s.arena(&["series", "resume", "--json"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let resumed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(resumed[0]["status"], "done", "{resumed:#}");
    assert_eq!(resumed[0]["runs_done"], 4);
    let battles = s.arena(&["battle", "list", "--json"]).await;
    let battles: Value = serde_json::from_slice(&battles.stdout).unwrap();
    assert_eq!(battles.as_array().unwrap().len(), 4, "one battle per place");
    assert!(battles
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["status"] == "done"));
    // Finished contestants were not asked again: 4 battles, one request each
    // (plus the one the kill interrupted, which ran again).
    assert!(s.local.requests_for("good").len() <= 5);
}

/// Two processes started at once with the same key: one series, run once.
#[tokio::test]
async fn two_processes_with_one_key_at_once_make_one_series() {
    let s = Setup::new().await;
    models(&s, 200.0);
    let project = s.project().to_string_lossy().into_owned();
    let args = series_args(
        &s,
        &project,
        &["--runs", "2", "--no-analysis", "--key", "same"],
    );
    let children: Vec<_> = (0..2)
        .map(|_| {
            s.command(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids = Vec::new();
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        ids.push(json["id"].as_str().unwrap().to_string());
    }
    assert_eq!(ids[0], ids[1], "both got the same series");
    let list = s.arena(&["series", "list", "--json"]).await;
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    // The one that did not start it may return before the other finishes;
    // either way each place has one battle.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = s.arena(&["series", "show", &ids[0], "--json"]).await;
        let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
        if shown["status"] != "running" {
            assert_eq!(shown["runs_done"], 2);
            break;
        }
        assert!(Instant::now() < deadline, "the series never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let battles = s.arena(&["battle", "list", "--json"]).await;
    let battles: Value = serde_json::from_slice(&battles.stdout).unwrap();
    assert_eq!(battles.as_array().unwrap().len(), 2);
}
