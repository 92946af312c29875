//! Cross-examination by a REAL CLI agent: Qwen Code from the npm registry
//! (installed by scripts/peers.sh into .peers/npm), run read-only
//! (`--approval-mode plan`) in the battle's results folder, its model served
//! by the scripted server. Skipped without ARENA_PEERS_BIN unless
//! ARENA_REQUIRE_PEERS=1.

use std::path::{Path, PathBuf};
use std::process::Command;

use arena_testserver::{ModelScript, TestServer};
use serde_json::Value;

fn peers_bin() -> Option<PathBuf> {
    match std::env::var("ARENA_PEERS_BIN")
        .ok()
        .filter(|s| !s.is_empty())
    {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var("ARENA_REQUIRE_PEERS").as_deref() == Ok("1") => {
            panic!("ARENA_REQUIRE_PEERS=1 but ARENA_PEERS_BIN is not set; run scripts/peers.sh and source .peers/env")
        }
        None => None,
    }
}

/// The providers' API key, from the environment: agents must receive it
/// (through theirs, never a file or their command line).
const KEY_VAR: &str = "ARENA_REAL_AGENT_TEST_KEY";
const KEY: &str = "sk-real-agent-test-5e0d";

fn arena(dir: &Path, bin: &Path, args: &[&str]) -> std::process::Output {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(args)
        .env("ARENA_CONFIG", dir.join("arena.toml"))
        .env("ARENA_DATA_DIR", dir.join("data"))
        .env("ARENA_AGENT_HOME", dir.join("agent-home"))
        .env(KEY_VAR, KEY)
        .env("PATH", path)
        .output()
        .unwrap()
}

#[tokio::test]
async fn qwen_code_cross_examines_read_only() {
    agent_cross_examines("qwen").await;
}

#[tokio::test]
async fn claude_code_cross_examines_read_only() {
    agent_cross_examines("claude-code").await;
}

#[tokio::test]
async fn codex_cross_examines_read_only() {
    agent_cross_examines("codex").await;
}

#[tokio::test]
async fn opencode_cross_examines_read_only() {
    agent_cross_examines("opencode").await;
}

#[tokio::test]
async fn aider_cross_examines_read_only() {
    agent_cross_examines("aider").await;
}

/// `agent` cross-examines a finished battle in its results folder, which it
/// may read but not change (the kernel sandbox; Qwen, Codex and Claude
/// Code also by their own read-only modes when the sandbox is off).
async fn agent_cross_examines(agent: &str) {
    let Some(bin) = peers_bin() else {
        eprintln!("skipped: set ARENA_PEERS_BIN (scripts/peers.sh) to run");
        return;
    };
    let server = TestServer::start().await.unwrap();
    server.set_model("m1", ModelScript::text("Paris is the capital."));
    server.set_model("m2", ModelScript::text("Lyon, probably."));
    server.set_model(
        "examiner",
        ModelScript::text(
            "Result A is correct; B is wrong.\n{\"winner\": \"A\", \"reason\": \"Paris is right\"}",
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("project")).unwrap();
    std::fs::create_dir_all(dir.path().join("agent-home")).unwrap();
    std::fs::write(
        dir.path().join("arena.toml"),
        format!(
            "[[provider]]\nname = \"cloud\"\nkind = \"openai\"\nbase_url = \"{0}\"\nlane = \"cloud\"\n\n\
             [[provider]]\nname = \"anthropic\"\nkind = \"anthropic\"\nbase_url = \"{0}\"\nlane = \"cloud\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let project = dir.path().join("project");
    let out = {
        let (d, b, p) = (dir.path().to_path_buf(), bin.clone(), project.clone());
        tokio::task::spawn_blocking(move || {
            arena(
                &d,
                &b,
                &[
                    "battle",
                    "run",
                    "--type",
                    "qa",
                    "--no-analysis",
                    "--json",
                    "--project",
                    p.to_str().unwrap(),
                    "--prompt",
                    "Capital of France?",
                    "-c",
                    "debugger@m1",
                    "-c",
                    "debugger@m2",
                ],
            )
        })
        .await
        .unwrap()
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let battle: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = battle["id"].as_str().unwrap().to_string();
    let results = PathBuf::from(battle["results_path"].as_str().unwrap());
    let before: Vec<_> = walk(&results);

    let examiner = if agent == "claude-code" {
        format!("{agent}@anthropic/examiner")
    } else {
        format!("{agent}@examiner")
    };
    let out = {
        let (d, b) = (dir.path().to_path_buf(), bin.clone());
        tokio::task::spawn_blocking(move || {
            arena(
                &d,
                &b,
                &["battle", "cross-examine", &id, "-c", &examiner, "--json"],
            )
        })
        .await
        .unwrap()
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let x: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(x["status"], "done", "{agent}: {x:#}");
    assert_eq!(x["identity"], agent);
    assert!(
        x["output"]
            .as_str()
            .unwrap()
            .contains("Result A is correct"),
        "{x:#}"
    );
    let report = PathBuf::from(x["path"].as_str().unwrap());
    assert!(std::fs::read_to_string(&report)
        .unwrap()
        .contains("Result A is correct"));

    // It asked the scripted model, with our task in its prompt.
    let asked = server.requests_for("examiner");
    assert!(!asked.is_empty());
    assert!(
        asked.iter().any(|r| r
            .body
            .to_string()
            .contains("cross-examining the results of a contest")),
        "{agent}"
    );
    // Read-only: nothing in the results folder changed but the new report.
    let mut after = walk(&results);
    after.retain(|p| p != &report);
    assert_eq!(before, after);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The worktree path as it appears in the agent's request (its environment
/// context names the working directory).
fn worktree_in(body: &Value, data_dir: &str) -> Option<String> {
    let text = body.to_string();
    let start = text.find(&format!("{data_dir}/worktrees/"))?;
    let rest = &text[start..];
    let end =
        rest.find(|c: char| c == '"' || c == '\\' || c.is_whitespace() || c == '`' || c == '\'')?;
    Some(rest[..end].trim_end_matches(['.', ',', ')']).to_string())
}

/// The tool call each agent's model makes to write `hello.txt` in `wt`.
fn write_call(agent: &str, wt: &str) -> arena_testserver::ToolCall {
    use arena_testserver::ToolCall;
    let path = format!("{wt}/hello.txt");
    let content = format!("hello from {agent}\n");
    match agent {
        "qwen" => ToolCall::new(
            "write_file",
            serde_json::json!({"file_path": path, "content": content}),
        ),
        "claude-code" => ToolCall::new(
            "Write",
            serde_json::json!({"file_path": path, "content": content}),
        ),
        "opencode" => ToolCall::new(
            "write",
            serde_json::json!({"filePath": path, "content": content}),
        ),
        "codex" => ToolCall::new(
            "exec_command",
            serde_json::json!({"cmd": format!("printf 'hello from codex\\n' > hello.txt")}),
        ),
        other => panic!("no scripted edit for {other}"),
    }
}

/// A Coding battle between `agent` (its model scripted to write hello.txt
/// in its worktree) and the native agent; the agent's diff must be right.
async fn agent_edits(agent: &'static str) {
    use arena_testserver::{tool_results, Turn};
    let Some(bin) = peers_bin() else {
        eprintln!("skipped: set ARENA_PEERS_BIN (scripts/peers.sh) to run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    let data = dir.path().join("data").canonicalize().unwrap();
    let data_str = data.to_string_lossy().into_owned();
    let server = TestServer::start().await.unwrap();
    // A server that reads bodies by their Content-Length only (as small
    // servers on Python's http.server do): the door must keep the framing.
    server.require_content_length(true);
    if agent == "aider" {
        // aider edits through text: a file name and the whole new file.
        server.set_model(
            "coder",
            ModelScript::text("I will create the file.\n\nhello.txt\n```\nhello from aider\n```\n"),
        );
    } else {
        server.set_model(
            "coder",
            ModelScript::turn_with(move |body| {
                if tool_results(body) > 0 {
                    return Turn::Text("I added hello.txt with a greeting.".into());
                }
                let wt = if agent == "codex" {
                    Some(String::new())
                } else {
                    worktree_in(body, &data_str)
                };
                match wt {
                    Some(wt) => Turn::ToolCalls {
                        text: None,
                        calls: vec![write_call(agent, &wt)],
                    },
                    None => Turn::Text("I could not find my working directory.".into()),
                }
            }),
        );
    }
    server.set_model(
        "other",
        ModelScript::turns(vec![Turn::Text("Nothing to do.".into())]),
    );
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(&project)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(project.join("README.md"), "demo\n").unwrap();
    git(&["add", "."]);
    git(&[
        "-c",
        "user.email=a@example.invalid",
        "-c",
        "user.name=A",
        "commit",
        "-q",
        "-m",
        "initial",
    ]);
    std::fs::create_dir_all(dir.path().join("agent-home")).unwrap();
    std::fs::write(
        dir.path().join("arena.toml"),
        format!(
            "[[provider]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"{0}\"\nlane = \"local\"\napi_key_env = \"{1}\"\n\n\
             [[provider]]\nname = \"anthropic\"\nkind = \"anthropic\"\nbase_url = \"{0}\"\nlane = \"cloud\"\napi_key_env = \"{1}\"\n",
            server.base_url(),
            KEY_VAR
        ),
    )
    .unwrap();
    let model = if agent == "claude-code" {
        "anthropic/coder"
    } else {
        "coder"
    };
    let contestant = format!("{agent}@{model}");
    let out = {
        let (d, b, p) = (dir.path().to_path_buf(), bin.clone(), project.clone());
        tokio::task::spawn_blocking(move || {
            arena(
                &d,
                &b,
                &[
                    "battle",
                    "run",
                    "--type",
                    "coding",
                    "--no-analysis",
                    "--json",
                    "--project",
                    p.to_str().unwrap(),
                    "--prompt",
                    "Add hello.txt with a greeting.",
                    "-c",
                    &contestant,
                    "-c",
                    "native@other",
                ],
            )
        })
        .await
        .unwrap()
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let battle: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &battle["contestants"][0];
    assert_eq!(c["status"], "done", "{agent}: {battle:#}");
    assert_eq!(c["diff"]["files"], 1, "{agent}: {c:#}");
    let patch_path = Path::new(c["result_path"].as_str().unwrap())
        .parent()
        .unwrap()
        .join("diff.patch");
    let patch = std::fs::read_to_string(&patch_path).unwrap();
    assert!(
        patch.contains("+++ b/hello.txt") && patch.contains("+hello from"),
        "{agent}: {patch}"
    );
    let out = Command::new("git")
        .current_dir(&project)
        .args(["apply", "--check", patch_path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{agent}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !project.join("hello.txt").exists(),
        "the project itself is untouched"
    );
    let requests = server.requests_for("coder");
    assert!(!requests.is_empty());
    // The key reached the server, so the agent had it.
    for r in &requests {
        let sent = r
            .header("authorization")
            .map(|h| h.trim_start_matches("Bearer ").to_string())
            .or_else(|| r.header("x-api-key").map(str::to_string));
        assert_eq!(sent.as_deref(), Some(KEY), "{agent}: {:?}", r.headers);
    }
}

#[tokio::test]
async fn qwen_code_competes_in_a_coding_battle() {
    agent_edits("qwen").await;
}

#[tokio::test]
async fn claude_code_competes_in_a_coding_battle() {
    agent_edits("claude-code").await;
}

#[tokio::test]
async fn codex_competes_in_a_coding_battle() {
    agent_edits("codex").await;
}

#[tokio::test]
async fn opencode_competes_in_a_coding_battle() {
    agent_edits("opencode").await;
}

#[tokio::test]
async fn aider_competes_in_a_coding_battle() {
    agent_edits("aider").await;
}

/// A real CLI agent in a pack run (issue 40): Qwen Code, its model scripted
/// to write the solved file of the sample pack's `textkit__add-median` in
/// its worktree, resolves the task through the sealed battle and the
/// verifier; the built-in agent whose model does nothing does not.
#[tokio::test]
async fn qwen_code_resolves_a_pack_task() {
    use arena_testserver::{tool_results, ToolCall, Turn};
    let Some(bin) = peers_bin() else {
        eprintln!("skipped: set ARENA_PEERS_BIN (scripts/peers.sh) to run");
        return;
    };
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample");
    let task = "textkit__add-median";
    // The solved file: the bundle's base with the gold patch applied.
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    let run = |dir: &Path, args: &[&str]| {
        let out = Command::new("git")
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    run(
        work.path(),
        &[
            "clone",
            "-q",
            sample.join("repo.bundle").to_str().unwrap(),
            repo.to_str().unwrap(),
        ],
    );
    let toml = std::fs::read_to_string(sample.join("tasks").join(task).join("task.toml")).unwrap();
    let base = toml
        .lines()
        .find_map(|l| l.strip_prefix("base_commit = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap()
        .to_string();
    run(&repo, &["checkout", "-q", &base]);
    let gold = sample.join("tasks").join(task).join("solution/gold.patch");
    run(&repo, &["apply", gold.to_str().unwrap()]);
    let fixed = std::fs::read_to_string(repo.join("textkit/stats.py")).unwrap();

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::create_dir_all(dir.path().join("agent-home")).unwrap();
    let data = dir.path().join("data").canonicalize().unwrap();
    let data_str = data.to_string_lossy().into_owned();
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "coder",
        // Qwen Code overwrites only a file it has read: read, then write.
        ModelScript::turn_with(move |body| {
            let Some(wt) = worktree_in(body, &data_str) else {
                return Turn::Text("I could not find my working directory.".into());
            };
            let file = format!("{wt}/textkit/stats.py");
            let call = match tool_results(body) {
                0 => ToolCall::new("read_file", serde_json::json!({"file_path": file})),
                1 => ToolCall::new(
                    "write_file",
                    serde_json::json!({"file_path": file, "content": fixed}),
                ),
                _ => return Turn::Text("I added median.".into()),
            };
            Turn::ToolCalls {
                text: None,
                calls: vec![call],
            }
        }),
    );
    server.set_model(
        "other",
        ModelScript::turns(vec![Turn::Text("Nothing to do.".into())]),
    );
    std::fs::write(
        dir.path().join("arena.toml"),
        format!(
            "[[provider]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"{}\"\nlane = \"local\"\napi_key_env = \"{}\"\n",
            server.base_url(),
            KEY_VAR
        ),
    )
    .unwrap();
    let out = {
        let (d, b) = (dir.path().to_path_buf(), bin.clone());
        let pack = sample.to_string_lossy().into_owned();
        tokio::task::spawn_blocking(move || {
            arena(
                &d,
                &b,
                &[
                    "pack",
                    "run",
                    &pack,
                    "-c",
                    "qwen@coder",
                    "-c",
                    "native@other",
                    "--tasks",
                    task,
                    "--runs",
                    "1",
                    "--json",
                ],
            )
        })
        .await
        .unwrap()
    };
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success(), "{report:#}");
    let by_model = |m: &str| {
        report["contestants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["model"] == m)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_model("coder")["resolved"], 1, "{report:#}");
    assert_eq!(by_model("other")["resolved"], 0, "{report:#}");
}
