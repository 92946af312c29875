//! The `arena-testserver` binary.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// Kills the child when the test ends, even on panic.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> (Kill, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arena-testserver"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Kill(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    (child, line)
}

fn base_url(line: &str) -> String {
    let url = line
        .strip_prefix("listening on ")
        .and_then(|l| l.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(url.ends_with("/v1"), "{url}");
    let port: u16 = url["http://127.0.0.1:".len()..url.len() - 3]
        .parse()
        .unwrap();
    assert_ne!(port, 0);
    url.to_string()
}

#[tokio::test]
async fn binary_prints_its_address_and_serves_models() {
    let (_child, line) = spawn(&[
        "--port",
        "0",
        "--model",
        "qwen3:8b:3:0",
        "--model",
        "b:2:100",
    ]);
    let base = base_url(&line);
    let v: Value = reqwest::get(format!("{base}/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["b", "qwen3:8b"]);

    let text = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&serde_json::json!({"model": "qwen3:8b", "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("\"tok2 \""));
    assert!(text.ends_with("data: [DONE]\n\n"));
}

#[tokio::test]
async fn binary_loads_a_script_file() {
    let dir = std::env::temp_dir().join(format!("arena-testserver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("script.json");
    std::fs::write(
        &path,
        r#"{"models": {
            "scripted": {"text": "hello from file", "rate": 0, "faults": [{"status": 500}]},
            "thinker": {"tokens": 2, "reasoning_tokens": 1}
        }}"#,
    )
    .unwrap();
    let (_child, line) = spawn(&["--script", path.to_str().unwrap()]);
    let base = base_url(&line);
    let client = reqwest::Client::new();
    let post = |model: &str| {
        client
            .post(format!("{base}/chat/completions"))
            .json(&serde_json::json!({"model": model, "stream": false}))
            .send()
    };
    assert_eq!(post("scripted").await.unwrap().status(), 500);
    let v: Value = post("scripted").await.unwrap().json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "hello from file");
    let v: Value = post("thinker").await.unwrap().json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["reasoning_content"], "think0 ");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn binary_script_file_turns() {
    let dir = std::env::temp_dir().join(format!("arena-testserver-turns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("script.json");
    std::fs::write(
        &path,
        r#"{"models": {"agent": {"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}],
             "text": "Writing."},
            {"text": "fin"}
        ]}}}"#,
    )
    .unwrap();
    let (_child, line) = spawn(&["--script", path.to_str().unwrap()]);
    let base = base_url(&line);
    let client = reqwest::Client::new();
    let post = |tools: bool| {
        let mut body = serde_json::json!({"model": "agent", "messages": [], "stream": false});
        if tools {
            body["tools"] =
                serde_json::json!([{"type": "function", "function": {"name": "write_file"}}]);
        }
        client
            .post(format!("{base}/chat/completions"))
            .json(&body)
            .send()
    };
    let v: Value = post(false).await.unwrap().json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "Arena test");
    let v: Value = post(true).await.unwrap().json().await.unwrap();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Writing.");
    let call = &choice["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "write_file");
    assert_eq!(call["arguments"], r#"{"content":"hi","path":"a.txt"}"#);
    let v: Value = post(true).await.unwrap().json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "fin");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn binary_rejects_a_bad_model_spec() {
    let out = Command::new(env!("CARGO_BIN_EXE_arena-testserver"))
        .args(["--model", "nonsense"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NAME:TOKENS:RATE"));
}
