//! Coding battles on real git repositories in temp dirs: the native agent
//! over scripted tool calls, a user-defined command backend (the fake agent
//! script), diffs, the check command, and refusals.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use arena_core::battle::{
    BattleRequest, BattleStatus, BattleType, ContestantSpec, ContestantStatus,
};
use arena_core::config::CustomBackend;
use arena_core::store::SqlValue;
use arena_core::Battle;
use arena_testserver::{ModelScript, ToolCall, Turn};
use common::*;
use serde_json::json;

fn fake_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../arena-agent/tests/fixtures/fake-agent")
}

/// The harness engine, with a `fake` command backend.
fn with_fake_backend(h: &mut Harness, args: &[&str]) {
    let mut command = vec![fake_agent().to_string_lossy().into_owned()];
    command.extend(args.iter().map(|a| a.to_string()));
    with_backend(h, command);
}

/// The harness engine, with a `fake` command backend running `command`.
fn with_backend(h: &mut Harness, command: Vec<String>) {
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command,
        }]
    });
}

async fn coding(h: &Harness, project: &Path, contestants: &[&str], check: Option<&str>) -> Battle {
    run_coding(h, project, contestants, check).await
}

fn patch_of(b: &Battle, i: usize) -> String {
    let dir = b.contestants[i]
        .result_path
        .as_ref()
        .unwrap()
        .parent()
        .unwrap();
    std::fs::read_to_string(dir.join("diff.patch")).unwrap()
}

fn edit_turns(file: &str, content: &str) -> ModelScript {
    ModelScript::turns(vec![
        Turn::ToolCalls {
            text: Some("Looking around.".into()),
            calls: vec![ToolCall::new("list_dir", json!({"path": "."}))],
        },
        Turn::ToolCalls {
            text: None,
            calls: vec![
                ToolCall::new("write_file", json!({"path": file, "content": content})),
                ToolCall::new(
                    "edit_file",
                    json!({"path": "src/lib.rs", "old": "    1\n", "new": "    2\n"}),
                ),
            ],
        },
        Turn::Text(format!("I created {file} and changed one() to return 2.")),
    ])
}

#[tokio::test]
async fn native_contestants_edit_in_their_own_worktrees() {
    let h = Harness::new().await;
    let project = repo();
    h.local
        .set_model("coder-a", edit_turns("a.txt", "from a\n"));
    h.local
        .set_model("coder-b", edit_turns("b.txt", "from b\n"));
    let b = coding(
        &h,
        project.path(),
        &["native@coder-a", "native@coder-b"],
        Some("test -f a.txt"),
    )
    .await;
    assert_eq!(b.status, BattleStatus::Done);
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let wt = c.worktree.as_ref().unwrap();
        assert!(
            wt.starts_with(h.data.path()),
            "worktrees live in the data dir"
        );
        assert_ne!(wt, project.path());
        let d = c.diff.as_ref().unwrap();
        assert_eq!((d.files, d.insertions, d.deletions), (2, 2, 1));
    }
    let (pa, pb) = (patch_of(&b, 0), patch_of(&b, 1));
    assert!(pa.contains("+++ b/a.txt") && !pa.contains("b.txt"), "{pa}");
    assert!(pb.contains("+++ b/b.txt") && !pb.contains("a.txt"), "{pb}");
    assert!(pa.contains("-    1\n+    2\n"));
    // The project itself is untouched; each worktree has only its own file.
    assert!(!project.path().join("a.txt").exists());
    // Its results are kept out of `git status` by the repository's own
    // exclude file: nothing new in its tree, not even a `.gitignore`.
    let status = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(project.path())
        .output()
        .unwrap();
    assert!(status.stdout.is_empty(), "{status:?}");
    assert!(!project.path().join(".gitignore").exists());
    let exclude = std::fs::read_to_string(project.path().join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "/Arena/"), "{exclude}");
    let (wa, wb) = (
        b.contestants[0].worktree.clone().unwrap(),
        b.contestants[1].worktree.clone().unwrap(),
    );
    assert!(wa.join("a.txt").exists() && !wa.join("b.txt").exists());
    assert!(wb.join("b.txt").exists() && !wb.join("a.txt").exists());
    // The check ran in each worktree.
    assert!(b.contestants[0].check.as_ref().unwrap().passed);
    let failed = b.contestants[1].check.as_ref().unwrap();
    assert!(!failed.passed && failed.exit_code == Some(1));
    // result.md explains, counts and points at the patch; the manifest has the stats.
    let md = std::fs::read_to_string(b.contestants[0].result_path.as_ref().unwrap()).unwrap();
    assert!(
        md.contains("## Explanation") && md.contains("I created a.txt"),
        "{md}"
    );
    assert!(
        md.contains("2 files changed, 2 insertions(+), 1 deletions(-)"),
        "{md}"
    );
    assert!(md.contains("`test -f a.txt` passed"), "{md}");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(b.results_path.join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["base_commit"].as_str().unwrap().len(), 40);
    assert_eq!(manifest["contestants"][0]["diff"]["files"], 2);
    assert_eq!(manifest["contestants"][1]["check"]["passed"], false);
    // Tool use streamed through the events.
    let events = h.engine.store().events_since(&b.id, 0, 10_000).unwrap();
    assert!(events.iter().any(
        |e| matches!(&e.kind, arena_core::EventKind::Tool { name, .. } if name == "write_file")
    ));
    // Every patch applies to the base commit.
    for i in 0..2 {
        let check = tempfile::tempdir().unwrap();
        git(
            check.path(),
            &["clone", "-q", project.path().to_str().unwrap(), "."],
        );
        let patch = check.path().join("x.patch");
        std::fs::write(&patch, patch_of(&b, i)).unwrap();
        git(check.path(), &["apply", "--check", patch.to_str().unwrap()]);
    }
}

#[tokio::test]
async fn the_native_agent_refuses_paths_outside_its_worktree() {
    let h = Harness::new().await;
    let project = repo();
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("escaped.txt");
    h.local.set_model(
        "sneaky",
        ModelScript::turns(vec![
            Turn::ToolCalls {
                text: None,
                calls: vec![
                    ToolCall::new("write_file", json!({"path": "../../../../../../../../tmp/arena-escape-test.txt", "content": "x"})),
                    ToolCall::new("write_file", json!({"path": escape.to_str().unwrap(), "content": "x"})),
                    ToolCall::new("read_file", json!({"path": "/etc/hostname"})),
                    ToolCall::new("write_file", json!({"path": ".git/hooks/pre-commit", "content": "x"})),
                    // Its commands run in the sandbox.
                    ToolCall::new("run_command", json!({"command": format!("echo x > {}", escape.display())})),
                ],
            },
            Turn::Text("Gave up.".into()),
        ]),
    );
    h.local.set_model("honest", edit_turns("ok.txt", "ok\n"));
    let b = coding(
        &h,
        project.path(),
        &["native@sneaky", "native@honest"],
        None,
    )
    .await;
    assert_eq!(b.contestants[0].status, ContestantStatus::Done);
    assert!(!escape.exists());
    assert!(!Path::new("/tmp/arena-escape-test.txt").exists());
    assert_eq!(b.contestants[0].diff.as_ref().unwrap().files, 0);
    // The refusals went back to the model as tool errors.
    let second = &h.local.requests_for("sneaky")[1];
    let tool_msgs: Vec<&str> = second.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(tool_msgs.len(), 5);
    assert!(
        tool_msgs[..4].iter().all(|m| m.starts_with("error:")),
        "{tool_msgs:?}"
    );
    if arena_core::agent::sandbox::supported() {
        assert!(
            tool_msgs[4].starts_with("exit status 1") || tool_msgs[4].starts_with("exit status 2"),
            "the sandbox refused the command's write: {tool_msgs:?}"
        );
    }
}

#[tokio::test]
async fn a_command_backend_runs_in_its_worktree_and_failures_keep_stderr() {
    let mut h = Harness::new().await;
    with_fake_backend(
        &mut h,
        &["edit", "NOTES.md", "{model} was here", "{prompt}"],
    );
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    let project = repo();
    let b = coding(&h, project.path(), &["fake@m1", "fake@m2"], None).await;
    for (i, c) in b.contestants.iter().enumerate() {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        assert!(c
            .output
            .as_deref()
            .unwrap()
            .contains("Appended a line to NOTES.md"));
        let patch = patch_of(&b, i);
        assert!(patch.contains(&format!("+m{} was here", i + 1)), "{patch}");
    }

    let mut h = Harness::new().await;
    with_fake_backend(&mut h, &["fail", "{prompt}"]);
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    let b = coding(&h, project.path(), &["fake@m1", "fake@m2"], None).await;
    let c = &b.contestants[0];
    assert_eq!(c.status, ContestantStatus::Error);
    let error = c.error.as_deref().unwrap();
    assert!(
        error.contains("exited with status 3")
            && error.ends_with("fatal: the model refused the edit"),
        "{error}"
    );
}

#[tokio::test]
async fn coding_refusals_leave_nothing_behind() {
    let h = Harness::new().await;
    h.local.set_model("m", ModelScript::tokens(1));
    let empty = tempfile::tempdir().unwrap();
    git(empty.path(), &["init", "-q"]);
    let e = h
        .engine
        .create_battle(BattleRequest {
            battle_type: BattleType::Coding,
            project: empty.path().to_path_buf(),
            prompt: "x".into(),
            contestants: vec![
                ContestantSpec::parse("native@m").unwrap(),
                ContestantSpec::parse("native@m2").unwrap(),
            ],
            check_command: None,
            blind: false,
            tags: Vec::new(),
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("commit"), "{e}");
    let project = repo();
    let e = h
        .engine
        .create_battle(BattleRequest {
            battle_type: BattleType::Coding,
            project: project.path().to_path_buf(),
            prompt: "x".into(),
            contestants: vec![
                ContestantSpec::parse("native@m").unwrap(),
                ContestantSpec::parse("claude-code@m").unwrap(),
            ],
            check_command: None,
            blind: false,
            tags: Vec::new(),
        })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("claude"), "{e}");
    assert!(h.engine.battles(10).await.unwrap().is_empty());
    assert!(!project.path().join("Arena").exists());
    assert!(!h.data.path().join("worktrees").exists());
}

#[tokio::test]
async fn the_judge_sees_diffs_and_check_results() {
    let mut h = Harness::new().await;
    h.cloud.set_model(
        "judge",
        ModelScript::respond_with(|_| r#"{"winner": "A"}"#.into()),
    );
    h.reconfigure(|config| config.default_model = Some("judge".into()));
    let project = repo();
    h.local
        .set_model("coder-a", edit_turns("a.txt", "from a\n"));
    h.local
        .set_model("coder-b", edit_turns("b.txt", "from b\n"));
    let b = coding(
        &h,
        project.path(),
        &["native@coder-a", "native@coder-b"],
        Some("test -f a.txt"),
    )
    .await;
    h.engine.analyze(&b.id, None).await.unwrap();
    let requests = h.cloud.requests_for("judge");
    let texts: Vec<String> = requests.iter().map(|r| r.body.to_string()).collect();
    assert!(texts
        .iter()
        .any(|t| t.contains("You summarise one answer") && t.contains("+++ b/a.txt")));
    assert!(texts
        .iter()
        .any(|t| t.contains("Evidence: 2 files changed, +2 -1; check `test -f a.txt` passed")));
    assert!(texts
        .iter()
        .any(|t| t.contains("check `test -f a.txt` failed")));
}

#[tokio::test]
async fn refine_continues_in_the_same_worktree_as_a_new_round() {
    use arena_testserver::tool_results;
    let h = Harness::new().await;
    let project = repo();
    h.local.set_model(
        "coder",
        ModelScript::turn_with(|body| {
            let refining = body.to_string().contains("The reviewer's feedback");
            match (refining, tool_results(body)) {
                (false, 0) => Turn::ToolCalls {
                    text: None,
                    calls: vec![ToolCall::new(
                        "write_file",
                        json!({"path": "a.txt", "content": "from a\n"}),
                    )],
                },
                (true, 0) => Turn::ToolCalls {
                    text: None,
                    calls: vec![ToolCall::new(
                        "edit_file",
                        json!({"path": "a.txt", "old": "from a\n", "new": "from a, refined\n"}),
                    )],
                },
                (false, _) => Turn::Text("Wrote a.txt.".into()),
                (true, _) => Turn::Text("Refined a.txt as asked.".into()),
            }
        }),
    );
    h.local.set_model("other", edit_turns("b.txt", "b\n"));
    let b = coding(
        &h,
        project.path(),
        &["native@coder", "native@other"],
        Some("grep -q refined a.txt"),
    )
    .await;
    let c = &b.contestants[0];
    assert!(!c.check.as_ref().unwrap().passed);
    let round = h
        .engine
        .refine(&b.id, &c.id, "Say it was refined.")
        .await
        .unwrap();
    assert_eq!(round.number, 2);
    assert_eq!(
        round.status,
        Some(ContestantStatus::Done),
        "{:?}",
        round.error
    );
    assert_eq!(round.output, "Refined a.txt as asked.");
    assert!(round.check.as_ref().unwrap().passed);
    let dir = round
        .result_path
        .as_ref()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(
        dir.ends_with("01-native-coder/round-2"),
        "{}",
        dir.display()
    );
    let patch = std::fs::read_to_string(dir.join("diff.patch")).unwrap();
    assert!(patch.contains("+from a, refined"), "{patch}");
    // Round 1's result is kept as it was.
    assert!(patch_of(&b, 0).contains("+from a\n"));
    assert_eq!(
        std::fs::read_to_string(c.worktree.as_ref().unwrap().join("a.txt")).unwrap(),
        "from a, refined\n"
    );
    // The refinement prompt carried the feedback and the previous report.
    let asked = h.local.requests_for("coder");
    let text = asked.last().unwrap().body.to_string();
    assert!(text.contains("Say it was refined.") && text.contains("Wrote a.txt."));
    assert_eq!(h.engine.rounds(&c.id).await.unwrap(), vec![round]);
    // Apply brings the latest round's work.
    let (_, applied) = h
        .engine
        .apply(&b.id, Some(&c.id), arena_core::agent::apply::Consent::Ask)
        .await
        .unwrap();
    assert!(applied.is_written(), "{applied:?}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("a.txt")).unwrap(),
        "from a, refined\n"
    );
    // Empty feedback and Q&A battles are refused.
    assert!(h.engine.refine(&b.id, &c.id, "  ").await.is_err());
}

#[tokio::test]
async fn worktrees_of_deleted_battles_are_pruned_but_uncommitted_work_needs_force() {
    let h = Harness::new().await;
    let project = repo();
    h.local.set_model("coder-a", edit_turns("a.txt", "a\n"));
    h.local.set_model("coder-b", edit_turns("b.txt", "b\n"));
    let b = coding(
        &h,
        project.path(),
        &["native@coder-a", "native@coder-b"],
        None,
    )
    .await;
    let paths: Vec<PathBuf> = b
        .contestants
        .iter()
        .map(|c| c.worktree.clone().unwrap())
        .collect();
    h.engine
        .store()
        .transact(|tx| {
            tx.exec_raw(
                "DELETE FROM battles WHERE id = ?1",
                &[SqlValue::Text(b.id.clone())],
            )?;
            Ok(())
        })
        .unwrap();
    let (removed, kept) = h.engine.prune_worktrees(false).await.unwrap();
    assert!(removed.is_empty());
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(paths.iter().all(|p| p.exists()));
    let (removed, _) = h.engine.prune_worktrees(true).await.unwrap();
    assert_eq!(removed.len(), 2);
    assert!(paths.iter().all(|p| !p.exists()));
    let out = Command::new("git")
        .current_dir(project.path())
        .args(["worktree", "list", "--porcelain"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("worktree ")
            .count(),
        1
    );
}

/// An agent process is confined by the kernel: it changes its worktree and
/// commits there, and reaches its model's server, but cannot write or read
/// outside, touch the project's git hooks or config, read Arena's data, or
/// connect anywhere else. (Each attempt prints `blocked …` or `ESCAPED …`.)
#[tokio::test]
async fn an_agent_cannot_leave_its_sandbox() {
    if !arena_core::agent::sandbox::supported() {
        eprintln!("skipped: this kernel has no Landlock");
        return;
    }
    let mut h = Harness::new().await;
    let project = repo_in(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret\n").unwrap();
    let elsewhere = arena_testserver::TestServer::start().await.unwrap();
    let (p, o, d) = (
        project.path().display().to_string(),
        outside.path().display().to_string(),
        h.data.path().display().to_string(),
    );
    let other_port = elsewhere.addr().port();
    let script = format!(
        r#"try() {{ if sh -c "$2" >/dev/null 2>&1; then echo "ESCAPED $1"; else echo "blocked $1"; fi; }}
try write-outside 'touch {o}/escaped'
try read-outside 'cat {o}/secret.txt'
try git-hooks 'touch {p}/.git/hooks/pre-commit'
try git-config 'echo "[alias] x = !evil" >> {p}/.git/config'
try arena-data 'cat {d}/arena.db'
try other-port 'exec 3<>/dev/tcp/127.0.0.1/{other_port}'
echo "home: $HOME"
port=${{OPENAI_BASE_URL##*:}}; port=${{port%%/*}}
if bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"; then echo "reached the provider"; fi
echo inside > INSIDE.md && git add INSIDE.md && git commit -qm inside && echo "committed in the worktree"
"#
    );
    with_backend(
        &mut h,
        vec!["bash".into(), "-c".into(), script, "{prompt}".into()],
    );
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    let b = coding(&h, project.path(), &["fake@m1", "fake@m2"], None).await;
    let c = &b.contestants[0];
    assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
    let output = c.output.clone().unwrap_or_default();
    assert!(!output.contains("ESCAPED"), "{output}");
    for what in [
        "write-outside",
        "read-outside",
        "git-hooks",
        "git-config",
        "arena-data",
        "other-port",
    ] {
        assert!(
            output.contains(&format!("blocked {what}")),
            "{what}: {output}"
        );
    }
    assert!(output.contains("reached the provider"), "{output}");
    assert!(output.contains("committed in the worktree"), "{output}");
    assert!(
        !output.contains(&format!(
            "home: {}",
            std::env::var("HOME").unwrap_or_default()
        )),
        "{output}"
    );
    assert!(!outside.path().join("escaped").exists());
    assert!(!project.path().join(".git/hooks/pre-commit").exists());
    let config = std::fs::read_to_string(project.path().join(".git/config")).unwrap();
    assert!(!config.contains("evil"), "{config}");
    assert!(
        patch_of(&b, 0).contains("+inside"),
        "the commit is in the diff"
    );

    // With `sandbox = "off"` the same agent gets out (which the test above
    // would have caught).
    h.reconfigure(|config| config.limits.sandbox = arena_core::config::SandboxMode::Off);
    let b = coding(&h, project.path(), &["fake@m1", "fake@m2"], None).await;
    let output = b.contestants[0].output.clone().unwrap_or_default();
    assert!(output.contains("ESCAPED write-outside"), "{output}");
    assert!(outside.path().join("escaped").exists());
}

/// The check command runs in the sandbox too (it runs code the agent
/// wrote): it changes the worktree and builds with your toolchain, but
/// cannot write or read outside, touch the project's hooks, or connect
/// anywhere. (Each attempt prints `blocked …` or `ESCAPED …`.)
#[tokio::test]
async fn the_check_command_runs_in_the_sandbox_with_your_toolchain() {
    if !arena_core::agent::sandbox::supported() {
        eprintln!("skipped: this kernel has no Landlock");
        return;
    }
    let mut h = Harness::new().await;
    let project = repo();
    std::fs::write(
        project.path().join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    git(project.path(), &["add", "."]);
    git(project.path(), &["commit", "-q", "-m", "a crate"]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret\n").unwrap();
    let (p, o, port) = (
        project.path().display(),
        outside.path().display(),
        h.cloud.addr().port(),
    );
    let has_cargo = Command::new("cargo")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let check = format!(
        r#"try() {{ if sh -c "$2" >/dev/null 2>&1; then echo "ESCAPED $1"; else echo "blocked $1"; fi; }}
try write-outside 'touch {o}/escaped'
try read-outside 'cat {o}/secret.txt'
try git-hooks 'touch {p}/.git/hooks/pre-commit'
try network 'bash -c "exec 3<>/dev/tcp/127.0.0.1/{port}"'
echo checked > CHECKED && echo "changed the worktree"
if {has_cargo}; then cargo build --offline -q && test -f target/debug/libdemo.rlib && echo "built with cargo"; else echo "built with cargo"; fi"#
    );
    with_backend(&mut h, vec!["true".into(), "{prompt}".into()]);
    let b = coding(&h, project.path(), &["fake@m1", "fake@m2"], Some(&check)).await;
    let result = b.contestants[0].check.clone().expect("a check result");
    let output = result.output_tail;
    assert!(!output.contains("ESCAPED"), "{output}");
    for what in ["write-outside", "read-outside", "git-hooks", "network"] {
        assert!(
            output.contains(&format!("blocked {what}")),
            "{what}: {output}"
        );
    }
    assert!(output.contains("changed the worktree"), "{output}");
    assert!(output.contains("built with cargo"), "{output}");
    assert!(result.passed, "{output}");
    assert!(!outside.path().join("escaped").exists());
    assert!(!project.path().join(".git/hooks/pre-commit").exists());
}

/// A running refine round stops when cancelled (from any process: the
/// request goes through the database), and ends `cancelled`.
#[tokio::test]
async fn a_refine_round_can_be_cancelled() {
    let h = Harness::new().await;
    let project = repo();
    h.local.set_model("coder", edit_turns("a.txt", "a\n"));
    h.local.set_model("other", edit_turns("b.txt", "b\n"));
    let b = coding(&h, project.path(), &["native@coder", "native@other"], None).await;
    assert_eq!(b.status, BattleStatus::Done);
    // The refine round's model answers slowly.
    h.local
        .set_model("coder", ModelScript::tokens(400).rate(20.0));
    let c = b.contestants[0].id.clone();
    let refine = {
        let (engine, bid, cid) = (h.engine.clone(), b.id.clone(), c.clone());
        tokio::spawn(async move { engine.refine(&bid, &cid, "Slower, please.").await })
    };
    while !h
        .local
        .requests_for("coder")
        .iter()
        .any(|r| r.body.to_string().contains("The reviewer's feedback"))
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let other = h.second_engine();
    let stopped = other
        .cancel_work(&b.id, arena_core::store::Work::Round, Some(&c))
        .await
        .unwrap();
    assert_eq!(stopped, 1);
    let round = tokio::time::timeout(Duration::from_secs(5), refine)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(round.status, Some(ContestantStatus::Cancelled), "{round:?}");
}

/// A viewer that asks for a contestant's diff the moment it sees the
/// contestant done gets it: the patch is on disk before `done` is
/// recorded, and is found there, not through `result.md`'s path, which is
/// recorded a moment later (the app's diff view asked in that moment and
/// showed "No diff" for good).
#[tokio::test]
async fn a_diff_is_there_the_moment_its_contestant_is_done() {
    use futures::StreamExt;
    let h = Harness::new().await;
    let project = repo();
    h.cloud
        .set_model("coder-a", edit_turns("a.txt", "from a\n"));
    h.cloud
        .set_model("coder-b", edit_turns("b.txt", "from b\n"));
    let battle = h
        .engine
        .create_battle(BattleRequest {
            battle_type: BattleType::Coding,
            project: project.path().to_path_buf(),
            prompt: "Make the change.".into(),
            contestants: ["native@coder-a", "native@coder-b"]
                .iter()
                .map(|c| ContestantSpec::parse(c).unwrap())
                .collect(),
            check_command: None,
            blind: false,
            tags: Vec::new(),
        })
        .await
        .unwrap();
    let viewer = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move {
            let mut events = std::pin::pin!(engine.subscribe(&id, 0));
            let mut diffs = Vec::new();
            while let Ok(Some(Ok(e))) =
                tokio::time::timeout(Duration::from_secs(60), events.next()).await
            {
                match e.kind {
                    arena_core::EventKind::ContestantStatus {
                        status: ContestantStatus::Done,
                        ..
                    } => {
                        let cid = e.contestant_id.clone().unwrap();
                        diffs.push(
                            engine
                                .contestant_diff(&id, &cid)
                                .await
                                .map(|d| d.files.len()),
                        );
                    }
                    arena_core::EventKind::BattleStatus { status } if status.is_terminal() => break,
                    _ => {}
                }
            }
            diffs
        })
    };
    let done = h.engine.run_battle(&battle.id).await.unwrap();
    assert_eq!(done.status, BattleStatus::Done);
    let diffs = viewer.await.unwrap();
    assert_eq!(diffs.len(), 2, "{diffs:?}");
    for d in diffs {
        assert_eq!(d.expect("the diff at once"), 2);
    }

    // Another machine of a team has no results folder of this battle: the
    // diffs are in the database, to show, judge and apply.
    std::fs::remove_dir_all(&done.results_path).unwrap();
    let first = &done.contestants[0].id;
    let diff = h.engine.contestant_diff(&done.id, first).await.unwrap();
    assert_eq!(diff.round, 1);
    assert!(
        diff.files.iter().any(|f| f.file.path == "a.txt"),
        "{diff:?}"
    );
    let (applied, changes) = h
        .engine
        .apply(
            &done.id,
            Some(first),
            arena_core::agent::apply::Consent::Ask,
        )
        .await
        .unwrap();
    assert_eq!(&applied, first);
    assert!(changes.is_written() && changes.changes().stats.files >= 1);
    assert_eq!(
        std::fs::read_to_string(project.path().join("a.txt")).unwrap(),
        "from a\n"
    );
}

/// A contestant whose driver died mid-run is run again from its base: the
/// worktree of the lost attempt (its files, its commits) is not what the
/// new attempt starts from, so a resumed run is the same task as a fresh one.
#[tokio::test]
async fn a_rerun_after_a_lost_driver_starts_from_the_base_not_the_lost_attempt() {
    let mut h = Harness::new().await;
    let project = repo();
    let base = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(project.path())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    // Both attempts note what they found; the lost one commits and then
    // hangs until its driver is gone.
    let attempt = |hang: bool| {
        format!(
            r#"if [ -e attempt.txt ]; then echo leftover > leftover.txt; fi
git rev-parse HEAD > head.txt
echo one > attempt.txt
git add -A && git commit -qm wip && echo committed > committed.flag
{}"#,
            if hang { "sleep 60" } else { "true" }
        )
    };
    with_backend(
        &mut h,
        vec!["bash".into(), "-c".into(), attempt(true), "{prompt}".into()],
    );
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    let battle = h
        .engine
        .create_battle(BattleRequest {
            battle_type: BattleType::Coding,
            project: project.path().to_path_buf(),
            prompt: "Make the change.".into(),
            contestants: vec![
                ContestantSpec::parse("fake@m1").unwrap(),
                ContestantSpec::parse("fake@m2").unwrap(),
            ],
            check_command: None,
            blind: false,
            tags: Vec::new(),
        })
        .await
        .unwrap();
    let doomed = h.second_engine();
    let run = {
        let (engine, id) = (doomed.clone(), battle.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    // Wait for the lost attempt to have committed its work.
    let mut committed = false;
    for _ in 0..600 {
        let b = h.engine.battle(&battle.id).await.unwrap();
        if let Some(wt) = &b.contestants[0].worktree {
            if wt.join("committed.flag").exists() {
                committed = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(committed, "the first attempt never committed");
    run.abort();
    let _ = run.await;
    drop(doomed);
    h.engine
        .store()
        .transact(|tx| {
            tx.exec_raw("UPDATE leases SET expires_at = 0", &[])?;
            Ok(())
        })
        .unwrap();

    with_backend(
        &mut h,
        vec![
            "bash".into(),
            "-c".into(),
            attempt(false),
            "{prompt}".into(),
        ],
    );
    let resumed = tokio::time::timeout(Duration::from_secs(120), h.engine.resume(None))
        .await
        .expect("the resume ends")
        .unwrap();
    let b = resumed
        .iter()
        .find(|b| b.id == battle.id)
        .expect("the battle is resumed");
    let c = &b.contestants[0];
    assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
    assert_eq!(c.attempts, 2);
    let wt = c.worktree.clone().expect("a worktree");
    assert!(
        !wt.join("leftover.txt").exists(),
        "the second attempt found the first one's files"
    );
    let head = std::fs::read_to_string(wt.join("head.txt")).unwrap();
    assert_eq!(
        head.trim(),
        base,
        "the second attempt started from another commit"
    );
    let patch = patch_of(b, 0);
    assert!(patch.contains("+one"), "{patch}");
    assert!(!patch.contains("leftover"), "{patch}");
}
