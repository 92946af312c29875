//! The `arena` binary as a user runs it: a temp data directory and config
//! pointing at two scripted servers on loopback (one local lane, one cloud).

#![allow(dead_code)]

pub mod pack;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use arena_testserver::TestServer;
use serde_json::Value;

pub struct Setup {
    pub local: TestServer,
    pub cloud: TestServer,
    pub dir: tempfile::TempDir,
}

impl Setup {
    pub async fn new() -> Setup {
        let local = TestServer::start().await.unwrap();
        let cloud = TestServer::start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project/.git")).unwrap();
        std::fs::write(
            dir.path().join("arena.toml"),
            format!(
                r#"
default_model = "judge"

[[provider]]
name = "local"
kind = "openai"
base_url = "{}"
lane = "local"

[[provider]]
name = "cloud"
kind = "openai"
base_url = "{}"
lane = "cloud"

[limits]
backoff_base_ms = 20
stall_timeout_secs = 30
"#,
                local.base_url(),
                cloud.base_url()
            ),
        )
        .unwrap();
        Setup { local, cloud, dir }
    }

    pub fn project(&self) -> std::path::PathBuf {
        self.dir.path().join("project")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arena"));
        cmd.args(args)
            .env("ARENA_CONFIG", self.dir.path().join("arena.toml"))
            .env("ARENA_DATA_DIR", self.dir.path().join("data"))
            .env_remove("RUST_LOG");
        cmd
    }

    pub async fn arena(&self, args: &[&str]) -> Output {
        output(self.command(args)).await
    }

    /// `arena battle run --type qa --json --prompt PROMPT --project … -c …`,
    /// then `extra` arguments.
    pub fn battle_run(&self, prompt: &str, contestants: &[&str], extra: &[&str]) -> Command {
        let project = self.project();
        let mut args = vec![
            "battle",
            "run",
            "--type",
            "qa",
            "--json",
            "--prompt",
            prompt,
            "--project",
        ];
        args.push(project.to_str().unwrap());
        for c in contestants {
            args.extend(["-c", c]);
        }
        args.extend(extra);
        self.command(&args)
    }

    /// Starts `arena battle run --json` in the background with these contestants.
    pub fn spawn_run(&self, contestants: &[&str], output: fn() -> Stdio) -> std::process::Child {
        self.battle_run("go", contestants, &[])
            .stdout(output())
            .stderr(output())
            .spawn()
            .unwrap()
    }

    /// Polls `battle list` until the newest battle satisfies `ready`; returns its id.
    pub async fn wait_for_latest(&self, what: &str, ready: impl Fn(&Value) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < deadline, "timed out waiting: {what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
            let list = self.arena(&["battle", "list", "--json"]).await;
            let Ok(list) = serde_json::from_slice::<Value>(&list.stdout) else {
                continue;
            };
            if let Some(b) = list.as_array().and_then(|l| l.first()) {
                if ready(b) {
                    return b["id"].as_str().unwrap().to_string();
                }
            }
        }
    }

    pub async fn json(&self, args: &[&str]) -> Value {
        let out = self.arena(args).await;
        assert!(
            out.status.success(),
            "arena {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "arena {args:?}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }
}

/// Runs a prepared command (off the async runtime) to its end.
pub async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// What a command printed, once it is known to have succeeded.
pub fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git ARGS` in `dir`, which must succeed; what it printed.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A native agent's turns: write `file` with `content`, then say so.
pub fn write_turns(file: &str, content: &str) -> arena_testserver::ModelScript {
    use arena_testserver::{ToolCall, Turn};
    arena_testserver::ModelScript::turns(vec![
        Turn::ToolCalls {
            text: None,
            calls: vec![ToolCall::new(
                "write_file",
                serde_json::json!({"path": file, "content": content}),
            )],
        },
        Turn::Text(format!("Wrote {file}.")),
    ])
}

/// [`write_turns`] for every conversation, not once: each agent that asks
/// writes `file`, then says so (for many battles of one model).
pub fn write_turns_each(file: &str, content: &str) -> arena_testserver::ModelScript {
    use arena_testserver::{tool_results, ToolCall, Turn};
    let (file, content) = (file.to_string(), content.to_string());
    arena_testserver::ModelScript::turn_with(move |body| match tool_results(body) {
        0 => Turn::ToolCalls {
            text: None,
            calls: vec![ToolCall::new(
                "write_file",
                serde_json::json!({"path": file, "content": content}),
            )],
        },
        _ => Turn::Text(format!("Wrote {file}.")),
    })
}
