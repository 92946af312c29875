//! `arena battle list` searching and paging battles that ran for real:
//! real child processes, a real SQLite file, scripted model servers.

use arena_testserver::ModelScript;
use serde_json::Value;

mod common;
use common::Setup;

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a JSON array")
        .iter()
        .map(|b| b["id"].as_str().unwrap().to_string())
        .collect()
}

/// Runs a command to its end off the test's runtime (the scripted servers
/// answer on it).
async fn output(mut cmd: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// The ids `arena battle list --json ARGS` prints.
async fn list(s: &Setup, args: Vec<&str>) -> Vec<String> {
    let mut all = vec!["battle", "list", "--json"];
    all.extend(args);
    ids(&s.json(&all).await)
}

#[tokio::test]
async fn battle_list_searches_filters_and_pages_in_the_engine() {
    let s = Setup::new().await;
    s.cloud.set_model("gpt-test", ModelScript::text("Answer."));
    s.cloud
        .set_model("claude-test", ModelScript::text("Other answer."));
    s.local.set_model("qwen-local", ModelScript::text("Local."));
    let mut ran = Vec::new();
    for (prompt, contestants) in [
        (
            "Explain Rust lifetimes",
            ["debugger@gpt-test", "explainer@claude-test"],
        ),
        (
            "Am I 100% sure?",
            ["architect@qwen-local", "debugger@gpt-test"],
        ),
        (
            "Write a haiku about lanes",
            ["explainer@qwen-local", "architect@claude-test"],
        ),
    ] {
        let out = output(s.battle_run(prompt, &contestants, &["--no-analysis"])).await;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let b: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(b["status"], "done");
        ran.push(b["id"].as_str().unwrap().to_string());
    }
    let (rust, sure, haiku) = (ran[0].as_str(), ran[1].as_str(), ran[2].as_str());

    // The JSON is the plain array of battles it always was.
    let all = s.json(&["battle", "list", "--json"]).await;
    assert_eq!(ids(&all), [haiku, sure, rust]);
    assert_eq!(all[0]["prompt"], "Write a haiku about lanes");
    assert_eq!(all[0]["contestants"].as_array().unwrap().len(), 2);
    assert_eq!(all[0]["contestants"][0]["identity"], "Explainer");

    let search = |text: &'static str| list(&s, vec!["--search", text]);
    assert_eq!(search("RUST").await, [rust]);
    assert_eq!(search("claude-test").await, [haiku, rust], "by model");
    assert_eq!(search("architect").await, [haiku, sure], "by identity");
    assert_eq!(search("local").await, [haiku, sure], "by provider");
    assert_eq!(search("debugger@gpt").await, [sure, rust]);
    assert_eq!(search("lanes claude").await, [haiku]);
    assert_eq!(search("100%").await, [sure], "% is taken literally");
    assert!(search("no-such-thing").await.is_empty());

    // Filters and pages.
    let list = |args: &[&'static str]| list(&s, args.to_vec());
    assert_eq!(list(&["--type", "qa", "--status", "done"]).await.len(), 3);
    assert!(list(&["--type", "coding"]).await.is_empty());
    assert!(list(&["--status", "running"]).await.is_empty());
    assert_eq!(list(&["--limit", "1", "--offset", "1"]).await, [sure]);
    assert_eq!(list(&["--limit", "2", "--offset", "2"]).await, [rust]);
    assert_eq!(
        list(&["--search", "debugger", "--limit", "1", "--offset", "1"]).await,
        [rust]
    );

    // Text: the page, and where it sits in the whole.
    let text = s.arena(&["battle", "list", "--limit", "2"]).await;
    let text = String::from_utf8(text.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with(haiku) && lines[1].starts_with(sure));
    assert_eq!(lines[2], "showing 1–2 of 3");
    let text = s.arena(&["battle", "list", "--search", "haiku"]).await;
    let text = String::from_utf8(text.stdout).unwrap();
    assert_eq!(
        text.lines().count(),
        1,
        "everything shown: no footer\n{text}"
    );
    let text = s
        .arena(&["battle", "list", "--search", "nothing-here"])
        .await;
    assert_eq!(String::from_utf8_lossy(&text.stdout), "No battles match.\n");

    // Bad filters are the user's to fix (exit 2).
    for bad in [
        &["battle", "list", "--type", "poetry"][..],
        &["battle", "list", "--status", "finished"],
        &["battle", "list", "--series", "no-such-series"],
    ] {
        let out = s.arena(bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

#[tokio::test]
async fn battle_list_shows_one_series() {
    let s = Setup::new().await;
    s.cloud
        .set_model("judge", ModelScript::judge_preferring("Paris"));
    s.local.set_model("good", ModelScript::text("Paris."));
    s.local.set_model("bad", ModelScript::text("Lyon."));
    let lone = output(s.battle_run(
        "Capital?",
        &["debugger@good", "explainer@bad"],
        &["--no-analysis"],
    ))
    .await;
    assert!(lone.status.success());
    let project = s.project().to_string_lossy().into_owned();
    let series = s
        .json(&[
            "series",
            "run",
            "--type",
            "qa",
            "--project",
            &project,
            "--prompt",
            "What is the capital of France?",
            "-c",
            "debugger@good",
            "-c",
            "explainer@bad",
            "--runs",
            "2",
            "--no-analysis",
            "--json",
        ])
        .await;
    let id = series["id"].as_str().unwrap();
    let listed = s.json(&["battle", "list", "--series", id, "--json"]).await;
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed
        .iter()
        .all(|b| b["prompt"] == "What is the capital of France?"));
    // Its short name works too.
    let short = &id[id.len() - 8..];
    let again = s
        .json(&["battle", "list", "--series", short, "--json"])
        .await;
    assert_eq!(again.as_array().unwrap().len(), 2);
    assert_eq!(
        s.json(&["battle", "list", "--json"])
            .await
            .as_array()
            .unwrap()
            .len(),
        3
    );
}
