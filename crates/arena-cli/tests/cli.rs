//! The `arena` binary as a user runs it: real child processes, a real
//! SQLite file, scripted model servers on loopback.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use arena_testserver::ModelScript;
use serde_json::Value;

mod common;
use common::{git, write_turns, Setup};

fn is_rfc3339_millis(v: &Value) -> bool {
    let s = v.as_str().unwrap_or("");
    chrono_like(s)
}

/// `2026-11-21T09:15:03.123Z`
fn chrono_like(s: &str) -> bool {
    s.len() == 24 && s.as_bytes()[10] == b'T' && s.as_bytes()[19] == b'.' && s.ends_with('Z')
}

#[tokio::test]
async fn run_prints_the_final_battle_as_json() {
    let s = Setup::new().await;
    s.local.set_model(
        "qwen3-8b",
        ModelScript::text("Local answer here.").rate(300.0),
    );
    s.cloud
        .set_model("gpt-test", ModelScript::tokens(20).rate(300.0));
    let project = s.project();
    let b = s
        .json(&[
            "battle",
            "run",
            "--type",
            "qa",
            "--project",
            project.to_str().unwrap(),
            "--prompt",
            "What is a lane?",
            "-c",
            "debugger@qwen3-8b",
            "-c",
            "explainer@gpt-test",
            "--json",
        ])
        .await;
    for key in [
        "id",
        "battle_type",
        "status",
        "prompt",
        "results_path",
        "created_at",
        "finished_at",
        "winner",
        "contestants",
    ] {
        assert!(b.get(key).is_some(), "missing {key}");
    }
    assert_eq!(b["battle_type"], "qa");
    assert_eq!(b["status"], "done");
    assert_eq!(b["prompt"], "What is a lane?");
    assert!(b["winner"].is_null());
    assert!(is_rfc3339_millis(&b["created_at"]) && is_rfc3339_millis(&b["finished_at"]));
    let cs = b["contestants"].as_array().unwrap();
    assert_eq!(cs.len(), 2);
    for c in cs {
        for key in [
            "id",
            "identity",
            "model",
            "lane",
            "status",
            "error",
            "started_at",
            "finished_at",
            "duration_ms",
            "ttft_ms",
            "prompt_tokens",
            "completion_tokens",
            "tokens_per_sec",
            "result_path",
        ] {
            assert!(c.get(key).is_some(), "contestant missing {key}");
        }
        assert_eq!(c["status"], "done");
        assert!(is_rfc3339_millis(&c["started_at"]));
        assert!(c["duration_ms"].as_u64().unwrap() > 0);
        assert!(c["tokens_per_sec"].as_f64().unwrap() > 0.0);
        assert!(Path::new(c["result_path"].as_str().unwrap()).exists());
    }
    assert_eq!(cs[0]["identity"], "Debugger");
    assert_eq!(cs[0]["lane"], "local");
    assert_eq!(cs[0]["output"], "Local answer here.");
    assert_eq!(cs[0]["prompt_tokens"], 12);
    assert_eq!(cs[1]["lane"], "cloud");
    assert_eq!(cs[1]["completion_tokens"], 20);
    assert!(Path::new(b["results_path"].as_str().unwrap())
        .join("manifest.json")
        .exists());

    // list / show / winner agree with the database.
    let id = b["id"].as_str().unwrap();
    let list = s.json(&["battle", "list", "--json"]).await;
    assert_eq!(list[0]["id"], id);
    let shown = s.json(&["battle", "show", &id[..13], "--json"]).await;
    assert_eq!(shown["id"], id);
    let won = s.json(&["battle", "winner", id, "2", "--json"]).await;
    assert_eq!(won["winner"]["contestant_id"], cs[1]["id"]);
    assert_eq!(won["winner"]["source"], "user");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(b["results_path"].as_str().unwrap()).join("manifest.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["winner"]["contestant_id"], cs[1]["id"]);
    let cleared = s.json(&["battle", "winner", id, "--clear", "--json"]).await;
    assert!(cleared["winner"].is_null());

    // Human output too.
    let out = s.arena(&["battle", "show", id]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Debugger@qwen3-8b") && text.contains("done"),
        "{text}"
    );
}

#[tokio::test]
async fn invalid_input_exits_2_with_one_line() {
    let s = Setup::new().await;
    s.local.set_model("m", ModelScript::tokens(2));
    let project = s.project();
    let p = project.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "battle",
                "run",
                "--type",
                "qa",
                "--project",
                p,
                "--prompt",
                "x",
                "-c",
                "debugger@m",
            ],
            "2 to 6 contestants",
        ),
        (
            vec![
                "battle",
                "run",
                "--type",
                "qa",
                "--project",
                p,
                "--prompt",
                "",
                "-c",
                "debugger@m",
                "-c",
                "explainer@m",
            ],
            "prompt is empty",
        ),
        (
            vec![
                "battle",
                "run",
                "--type",
                "qa",
                "--project",
                p,
                "--prompt",
                "x",
                "-c",
                "debugger@m",
                "-c",
                "explainerm",
            ],
            "IDENTITY@MODEL",
        ),
        (
            vec![
                "battle",
                "run",
                "--type",
                "poetry",
                "--project",
                p,
                "--prompt",
                "x",
                "-c",
                "a@m",
                "-c",
                "b@m",
            ],
            "unknown battle type",
        ),
        (
            vec![
                "battle",
                "run",
                "--type",
                "qa",
                "--project",
                p,
                "--prompt-file",
                "/no/such/file",
                "-c",
                "debugger@m",
                "-c",
                "explainer@m",
            ],
            "cannot read the prompt file",
        ),
        (vec!["battle", "show", "does-not-exist"], "not found"),
        (
            vec![
                "battle",
                "run",
                "--type",
                "qa",
                "--project",
                p,
                "--prompt",
                "x",
                "-c",
                "debugger@m",
                "-c",
                "debugger@zzz",
            ],
            "unknown model `zzz`",
        ),
    ];
    for (args, needle) in cases {
        let out = s.arena(&args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{args:?}: not one line: {stderr}"
        );
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
    assert!(!project.join("Arena").exists());

    // A config mistake is the user's too.
    std::fs::write(
        s.dir.path().join("arena.toml"),
        "[[provider]]\nname = 'x'\n",
    )
    .unwrap();
    let out = s.arena(&["providers"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("arena.toml"));
}

#[tokio::test]
async fn providers_lists_models_and_unreachable_servers() {
    let s = Setup::new().await;
    s.local.set_model("qwen3-8b", ModelScript::tokens(2));
    s.cloud.shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let v = s.json(&["providers", "--json"]).await;
    let ps = v["providers"].as_array().unwrap();
    assert_eq!(ps[0]["name"], "local");
    assert_eq!(ps[0]["lane"], "local");
    assert_eq!(ps[0]["models"], serde_json::json!(["qwen3-8b"]));
    assert_eq!(ps[1]["reachable"], false);
    assert!(ps[1]["error"].as_str().unwrap().contains("cannot reach"));
}

/// The battle as the database has it, read through the CLI.
async fn show(s: &Setup, id: &str) -> Value {
    s.json(&["battle", "show", id, "--json"]).await
}

#[tokio::test]
async fn a_killed_run_resumes_without_running_finished_work_twice() {
    let s = Setup::new().await;
    s.local
        .set_model("first", ModelScript::tokens(10).rate(200.0));
    s.local
        .set_model("second", ModelScript::tokens(400).rate(40.0)); // ~10 s
    s.local
        .set_model("third", ModelScript::tokens(10).rate(200.0));
    s.cloud
        .set_model("cloudy", ModelScript::tokens(10).rate(200.0));
    let mut child = s.spawn_run(
        &[
            "debugger@first",
            "debugger@second",
            "debugger@third",
            "debugger@cloudy",
        ],
        Stdio::null,
    );
    let id = s
        .wait_for_latest("`first` done and `second` streaming", |b| {
            let cs = &b["contestants"];
            cs[0]["status"] == "done"
                && cs[1]["status"] == "running"
                && !s.local.requests_for("second").is_empty()
        })
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let before = show(&s, &id).await;
    assert_eq!(before["status"], "running");
    assert_eq!(before["contestants"][1]["status"], "running");

    let resumed = s.json(&["battle", "resume", "--json"]).await;
    assert_eq!(resumed.as_array().unwrap().len(), 1);
    let b = &resumed[0];
    assert_eq!(b["id"], id.as_str());
    assert_eq!(b["status"], "done");
    for c in b["contestants"].as_array().unwrap() {
        assert_eq!(c["status"], "done", "{c}");
        assert!(Path::new(c["result_path"].as_str().unwrap()).exists());
    }
    assert_eq!(
        s.local.requests_for("first").len(),
        1,
        "a finished contestant ran twice"
    );
    assert_eq!(
        s.cloud.requests_for("cloudy").len(),
        1,
        "a finished contestant ran twice"
    );
    assert_eq!(
        s.local.requests_for("second").len(),
        2,
        "the interrupted contestant is run again"
    );
    assert_eq!(s.local.requests_for("third").len(), 1);
    assert_eq!(b["contestants"][1]["attempts"], 2);

    // Nothing is left to resume.
    let again = s.json(&["battle", "resume", "--json"]).await;
    assert_eq!(again, serde_json::json!([]));
}

#[tokio::test]
async fn cancel_from_another_process_stops_a_running_battle() {
    let s = Setup::new().await;
    s.local
        .set_model("slow", ModelScript::tokens(1000).rate(20.0));
    s.cloud
        .set_model("slowc", ModelScript::tokens(1000).rate(20.0));
    let child = s.spawn_run(&["debugger@slow", "debugger@slowc"], Stdio::piped);
    let id = s
        .wait_for_latest("the first contestant running", |b| {
            b["contestants"][0]["status"] == "running"
        })
        .await;
    let cancelled = s.json(&["battle", "cancel", &id, "--json"]).await;
    assert_eq!(cancelled["status"], "cancelled");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let final_battle: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(final_battle["status"], "cancelled");
}

/// A judge that names whichever answer's digest mentions "Paris".
fn paris_judge() -> ModelScript {
    ModelScript::respond_with(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let system = messages[0]["content"].as_str().unwrap_or("");
        let user = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        if system.contains("You summarise one answer") {
            return if user.contains("Paris") {
                "Says Paris, correct."
            } else {
                "Says Lyon, wrong."
            }
            .into();
        }
        let mut label = "A";
        let mut best = "A";
        for line in user.lines() {
            if let Some(rest) = line.strip_prefix("Answer ") {
                label = &rest[..1];
            }
            if line.contains("correct.") {
                best = label;
            }
        }
        format!("{{\"winner\": \"{best}\", \"reasons\": {{\"{best}\": \"names the capital\"}}}}")
    })
}

#[tokio::test]
async fn run_waits_for_the_analysis_and_the_leaderboard_agrees_in_json_and_csv() {
    let s = Setup::new().await;
    s.cloud.set_model("judge", paris_judge());
    s.cloud.set_model("good", ModelScript::text("Paris."));
    s.cloud.set_model("bad", ModelScript::text("Lyon."));
    let project = s.project();
    let p = project.to_str().unwrap();
    let run = |extra: &'static [&'static str]| {
        let mut args = vec![
            "battle",
            "run",
            "--type",
            "qa",
            "--project",
            p,
            "--prompt",
            "Capital of France?",
            "-c",
            "debugger@good",
            "-c",
            "debugger@bad",
            "--json",
        ];
        args.extend(extra);
        args
    };
    let b = s.json(&run(&[])).await;
    let good_id = b["contestants"][0]["id"].clone();
    assert_eq!(b["analysis"]["status"], "done", "{:#}", b["analysis"]);
    assert_eq!(b["analysis"]["outcome"], "winner");
    assert_eq!(b["analysis"]["winner"], good_id);
    assert_eq!(b["analysis"]["no_clear_winner"], false);
    assert_eq!(b["analysis"]["judge_runs"].as_array().unwrap().len(), 2);
    assert_eq!(b["winner"]["contestant_id"], good_id);
    assert_eq!(b["winner"]["source"], "analysis");

    // Without analysis: no judge calls, no winner.
    let judged = s.cloud.requests_for("judge").len();
    let b2 = s.json(&run(&["--no-analysis"])).await;
    assert!(b2["analysis"].is_null());
    assert!(b2["winner"].is_null());
    assert_eq!(s.cloud.requests_for("judge").len(), judged);

    // Re-analyse on demand; then the user overrides, and re-analysis keeps it.
    let id2 = b2["id"].as_str().unwrap();
    let analysed = s.json(&["battle", "analyze", id2, "--json"]).await;
    assert_eq!(analysed["winner"]["source"], "analysis");
    let overridden = s.json(&["battle", "winner", id2, "2", "--json"]).await;
    assert_eq!(overridden["winner"]["source"], "user");
    let again = s.json(&["battle", "analyze", id2, "--json"]).await;
    assert_eq!(
        again["winner"]["contestant_id"],
        overridden["contestants"][1]["id"]
    );
    assert_eq!(again["winner"]["source"], "user");

    // Cross-examination.
    s.cloud.set_model(
        "examiner",
        ModelScript::text("A is right.\n{\"winner\": \"A\", \"reason\": \"correct\"}"),
    );
    let x = s
        .json(&[
            "battle",
            "cross-examine",
            id2,
            "-c",
            "code-reviewer@examiner",
            "--json",
        ])
        .await;
    assert_eq!(x["status"], "done");
    assert!(Path::new(x["path"].as_str().unwrap()).exists());
    let refused = s
        .arena(&["battle", "cross-examine", id2, "-c", "aider@examiner"])
        .await;
    assert_eq!(refused.status.code(), Some(2));
    let shown = s.json(&["battle", "show", id2, "--json"]).await;
    assert_eq!(shown["cross_examinations"].as_array().unwrap().len(), 1);

    // Leaderboard: good won battle 1, bad won battle 2 (the user's pick).
    let board = s.json(&["leaderboard", "--json"]).await;
    let rows = board["standings"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        assert_eq!(r["battles"], 2);
        assert_eq!(r["wins"], 1);
        assert!(r["rating_low"].as_f64().unwrap() <= r["rating"].as_f64().unwrap());
        assert!(r["rating"].as_f64().unwrap() <= r["rating_high"].as_f64().unwrap());
    }
    let csv = s.arena(&["leaderboard", "--csv"]).await;
    let csv = String::from_utf8(csv.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("rank,identity,model,rating"));
    for (line, row) in lines[1..].iter().zip(rows) {
        let cols: Vec<&str> = line.split(',').collect();
        assert_eq!(cols[1], row["identity"]);
        assert_eq!(cols[2], row["model"]);
        assert_eq!(cols[3], format!("{:.1}", row["rating"].as_f64().unwrap()));
        assert_eq!(cols[8], row["wins"].to_string());
    }
    let text = s.arena(&["leaderboard", "--type", "coding"]).await;
    assert!(String::from_utf8_lossy(&text.stdout).contains("No finished battles"));
}

#[tokio::test]
async fn backends_lists_what_is_installed() {
    let s = Setup::new().await;
    let v = s.json(&["backends", "--json"]).await;
    let rows = v.as_array().unwrap();
    let by_name = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap().clone();
    assert_eq!(by_name("native")["installed"], true);
    assert_eq!(by_name("goose")["installed"], false);
    // In the agent sandbox every CLI agent can cross-examine read-only…
    assert_eq!(by_name("qwen")["read_only"], true);
    assert_eq!(by_name("aider")["read_only"], true);
    assert_eq!(by_name("native")["read_only"], false);
    assert_eq!(rows.len(), 7);
    // …without it, only those with a read-only mode of their own.
    let config = s.dir.path().join("arena.toml");
    let text = std::fs::read_to_string(&config).unwrap() + "sandbox = \"off\"\n";
    std::fs::write(&config, text).unwrap();
    let v = s.json(&["backends", "--json"]).await;
    let rows = v.as_array().unwrap();
    let by_name = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap().clone();
    assert_eq!(by_name("claude-code")["read_only"], true);
    assert_eq!(by_name("aider")["read_only"], false);
}

#[tokio::test]
async fn coding_battle_apply_and_worktree_cleanup() {
    let s = Setup::new().await;
    let project = s.project();
    std::fs::remove_dir_all(project.join(".git")).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    git(&project, &["config", "user.email", "arena@example.invalid"]);
    git(&project, &["config", "user.name", "Arena Test"]);
    std::fs::write(project.join("README.md"), "hello\n").unwrap();
    git(&project, &["add", "."]);
    git(&project, &["commit", "-q", "-m", "initial"]);
    s.local
        .set_model("coder-a", write_turns("a.txt", "alpha\n"));
    s.local.set_model("coder-b", write_turns("b.txt", "beta\n"));
    let p = project.to_str().unwrap();
    let b = s
        .json(&[
            "battle",
            "run",
            "--type",
            "coding",
            "--project",
            p,
            "--prompt",
            "Add a file.",
            "-c",
            "native@coder-a",
            "-c",
            "native@coder-b",
            "--check",
            "ls a.txt",
            "--no-analysis",
            "--json",
        ])
        .await;
    assert_eq!(b["status"], "done", "{b:#}");
    assert_eq!(b["base_commit"].as_str().unwrap().len(), 40);
    assert_eq!(b["check_command"], "ls a.txt");
    let cs = b["contestants"].as_array().unwrap();
    assert_eq!(cs[0]["diff"]["files"], 1);
    assert_eq!(cs[0]["check"]["passed"], true);
    assert_eq!(cs[1]["check"]["passed"], false);
    let id = b["id"].as_str().unwrap();

    // Apply refuses with no winner, and on a dirty project; then applies.
    let out = s.arena(&["battle", "apply", id]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no winner"));
    s.json(&["battle", "winner", id, "1", "--json"]).await;
    std::fs::write(project.join("README.md"), "hello\nlocal edit\n").unwrap();
    let out = s.arena(&["battle", "apply", id]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !project.join("a.txt").exists(),
        "a refused apply changed nothing"
    );
    git(&project, &["checkout", "--", "README.md"]);
    let applied = s.json(&["battle", "apply", id, "--json"]).await;
    assert_eq!(applied["contestant_id"], cs[0]["id"]);
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "alpha\n"
    );

    // Worktrees: both listed, their work kept (by Arena's records). One
    // edited by hand since: prune keeps it and removes the other; --force
    // removes it too.
    let list = s.json(&["worktrees", "list", "--json"]).await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert!(list
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["dirty"] == false && w["exists"] == true));
    let edited = Path::new(list[0]["path"].as_str().unwrap());
    std::fs::write(edited.join("by-hand.txt"), "mine\n").unwrap();
    let pruned = s.json(&["worktrees", "prune", "--json"]).await;
    assert_eq!(pruned["removed"].as_array().unwrap().len(), 1, "{pruned:#}");
    assert_eq!(pruned["kept"].as_array().unwrap().len(), 1, "{pruned:#}");
    assert!(edited.exists());
    // Each worktree's repository is its own: the project's git knows none.
    assert_eq!(
        git(&project, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_eq!(git(&project, &["branch", "--list", "arena/*"]), "");
    let pruned = s.json(&["worktrees", "prune", "--force", "--json"]).await;
    assert_eq!(pruned["removed"].as_array().unwrap().len(), 1);
    assert_eq!(
        git(&project, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    for w in list.as_array().unwrap() {
        assert!(!Path::new(w["path"].as_str().unwrap()).exists());
    }
    // The results stay.
    assert!(Path::new(cs[0]["result_path"].as_str().unwrap()).exists());
}

/// Makes the setup's project a git repository with one commit.
fn commit_project(s: &Setup) -> std::path::PathBuf {
    let project = s.project();
    std::fs::remove_dir_all(project.join(".git")).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    std::fs::write(project.join("README.md"), "hello\n").unwrap();
    git(&project, &["add", "."]);
    git(
        &project,
        &[
            "-c",
            "user.email=a@example.invalid",
            "-c",
            "user.name=A",
            "commit",
            "-q",
            "-m",
            "initial",
        ],
    );
    project
}

/// `PATH` with the stand-in agents of `tests/fixtures/bin` first.
fn fixture_path() -> String {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin");
    format!(
        "{}:{}",
        fixtures.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `arena battle run --type coding --no-analysis --json` on `project`
/// with these contestants, the stand-in agents first on `PATH` and `env`
/// added; the battle's JSON (the run must succeed).
async fn run_coding(
    s: &Setup,
    project: &Path,
    contestants: &[&str],
    env: &[(&str, &str)],
) -> Value {
    let mut args = vec![
        "battle",
        "run",
        "--type",
        "coding",
        "--project",
        project.to_str().unwrap(),
        "--prompt",
        "Say hi.",
        "--no-analysis",
        "--json",
    ];
    for c in contestants {
        args.extend(["-c", c]);
    }
    let mut cmd = s.command(&args);
    cmd.env("PATH", fixture_path()).envs(env.iter().copied());
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn an_agents_key_stays_in_its_environment_and_its_scratch_folder_is_private_and_removed() {
    const KEY: &str = "sk-arena-scratch-test-4f1c9e";
    let s = Setup::new().await;
    let project = commit_project(&s);
    // The local provider needs a key, from the environment.
    let config = s.dir.path().join("arena.toml");
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "lane = \"local\"\n",
        "lane = \"local\"\napi_key_env = \"ARENA_TEST_PROVIDER_KEY\"\n",
        1,
    );
    std::fs::write(&config, text).unwrap();
    s.local.set_model("m", ModelScript::tokens(1));
    s.cloud.set_model("other", write_turns("x.txt", "x\n"));
    let b = run_coding(
        &s,
        &project,
        &["opencode@m", "native@other"],
        &[("ARENA_TEST_PROVIDER_KEY", KEY)],
    )
    .await;
    let opencode = &b["contestants"][0];
    assert_eq!(opencode["status"], "done", "{opencode:#}");
    let output = opencode["output"].as_str().unwrap();
    assert!(output.contains("scratch mode: 700"), "{output}");
    assert!(output.contains("key in config: no"), "{output}");
    assert!(output.contains("key in env: yes"), "{output}");
    let scratch = output
        .lines()
        .find_map(|l| l.strip_prefix("scratch: "))
        .expect("the scratch folder");
    assert!(!Path::new(scratch).exists(), "{scratch} was left behind");
    // No key anywhere on disk: database, results, worktrees.
    for root in [s.dir.path().join("data"), project] {
        let grep = Command::new("grep")
            .args(["-rlaF", KEY])
            .arg(&root)
            .output()
            .unwrap();
        assert!(
            grep.stdout.is_empty(),
            "the key is written in {}",
            String::from_utf8_lossy(&grep.stdout)
        );
    }
}

#[tokio::test]
async fn the_goose_adapter_runs_goose_run_in_the_worktree() {
    let s = Setup::new().await;
    let project = commit_project(&s);
    s.local.set_model("m", ModelScript::tokens(1));
    s.cloud.set_model("other", write_turns("x.txt", "x\n"));
    let b = run_coding(&s, &project, &["goose@m", "native@other"], &[]).await;
    let goose = &b["contestants"][0];
    assert_eq!(goose["status"], "done", "{goose:#}");
    assert!(goose["output"].as_str().unwrap().contains("goose model: m"));
    assert_eq!(goose["diff"]["files"], 1);
    let patch = std::fs::read_to_string(
        Path::new(goose["result_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .join("diff.patch"),
    )
    .unwrap();
    assert!(patch.contains("+written by goose for: Say hi."), "{patch}");
}

/// An agent that keeps its own configuration reads it (linked into its
/// scratch home), and nothing else of your home.
#[tokio::test]
async fn an_agent_with_its_own_configuration_reads_it_and_nothing_beside_it() {
    let s = Setup::new().await;
    let project = commit_project(&s);
    let home = s.dir.path().join("home");
    std::fs::create_dir_all(home.join(".config/goose")).unwrap();
    std::fs::write(
        home.join(".config/goose/config.yaml"),
        "GOOSE_PROVIDER: stand-in\n",
    )
    .unwrap();
    std::fs::write(home.join("secret.txt"), "top secret\n").unwrap();
    s.local.set_model("m", ModelScript::tokens(1));
    s.cloud.set_model("other", write_turns("x.txt", "x\n"));
    let home_var = home.to_str().unwrap();
    let b = run_coding(
        &s,
        &project,
        &["goose@m", "native@other"],
        &[("HOME", home_var)],
    )
    .await;
    let goose = &b["contestants"][0];
    assert_eq!(goose["status"], "done", "{goose:#}");
    let output = goose["output"].as_str().unwrap();
    assert!(
        output.contains("goose config: GOOSE_PROVIDER: stand-in"),
        "{output}"
    );
    if arena_core::agent::sandbox::supported() {
        assert!(output.contains("goose kept to its config"), "{output}");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".config/goose/config.yaml")).unwrap(),
        "GOOSE_PROVIDER: stand-in\n"
    );
}

#[tokio::test]
async fn without_a_kernel_sandbox_coding_battles_are_refused_unless_it_is_switched_off() {
    let s = Setup::new().await;
    let project = commit_project(&s);
    s.local.set_model("m", write_turns("x.txt", "x\n"));
    s.local.set_model("n", write_turns("y.txt", "y\n"));
    let run = |s: &Setup| {
        let mut cmd = s.command(&[
            "battle",
            "run",
            "--type",
            "coding",
            "--project",
            project.to_str().unwrap(),
            "--prompt",
            "Add a file.",
            "-c",
            "native@m",
            "-c",
            "native@n",
            "--no-analysis",
            "--json",
        ]);
        cmd.env("ARENA_TEST_NO_JAIL", "1");
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
    };
    let out = run(&s).await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bubblewrap is not installed")
            && stderr.contains("apt install bubblewrap")
            && stderr.contains("sandbox = \"off\""),
        "{stderr}"
    );
    let list = s.json(&["battle", "list", "--json"]).await;
    assert_eq!(list, Value::Array(vec![]), "nothing was created");
    assert!(!project.join("Arena").exists());

    let config = s.dir.path().join("arena.toml");
    let text = std::fs::read_to_string(&config).unwrap() + "sandbox = \"off\"\n";
    std::fs::write(&config, text).unwrap();
    let out = run(&s).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b["contestants"][0]["status"], "done", "{b:#}");
}

#[tokio::test]
async fn battle_export_makes_a_report_that_runs_nothing_and_colours_diffs() {
    let s = Setup::new().await;
    // Q&A: markup in an answer is rendered inert.
    s.cloud.set_model(
        "evil",
        ModelScript::text(
            "**Paris**. <script>alert(1)</script> <img src=x onerror=\"alert(2)\"> ![b](http://127.0.0.1:9/b.png)",
        ),
    );
    s.cloud.set_model("plain", ModelScript::text("Lyon."));
    let out = s
        .arena(&[
            "battle",
            "run",
            "--type",
            "qa",
            "--json",
            "--no-analysis",
            "--prompt",
            "Capital?",
            "--project",
            s.project().to_str().unwrap(),
            "-c",
            "debugger@evil",
            "-c",
            "explainer@plain",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = b["id"].as_str().unwrap();
    let html = s.arena(&["battle", "export", id]).await;
    let html = String::from_utf8_lossy(&html.stdout);
    assert!(html.starts_with("<!doctype html>"), "{html}");
    assert!(html.contains("<strong>Paris</strong>") && html.contains("Debugger@evil"));
    for bad in ["<script", "onerror", "<img", "127.0.0.1:9"] {
        assert!(!html.contains(bad), "{bad} in the report");
    }
    assert!(html.contains("Content-Security-Policy"));
    let file = s.dir.path().join("report.md");
    let out = s
        .arena(&[
            "battle",
            "export",
            id,
            "--format",
            "md",
            "-o",
            file.to_str().unwrap(),
        ])
        .await;
    assert!(out.status.success());
    let md = std::fs::read_to_string(&file).unwrap();
    assert!(
        md.contains("## Explainer@plain") && md.contains("Lyon."),
        "{md}"
    );
    let json = s.json(&["battle", "export", id, "--format", "json"]).await;
    assert_eq!(json["id"], b["id"]);

    // Coding: the diff in colour.
    let project = commit_project(&s);
    s.cloud.set_model("coder", write_turns("a.txt", "alpha\n"));
    let b = run_coding(&s, &project, &["native@coder", "native@evil"], &[]).await;
    let id = b["id"].as_str().unwrap();
    let html = s.arena(&["battle", "export", id, "--format", "html"]).await;
    let html = String::from_utf8_lossy(&html.stdout);
    assert!(html.contains("<p class=\"file\">a.txt"), "{html}");
    assert!(html.contains("<span class=\"add\">+alpha</span>"), "{html}");
    assert!(
        html.contains(".diff .add{background:#e6f6ea"),
        "the colours are inline"
    );
}

/// `arena --version` says the version, the commit this build was made from
/// and the day it was built; a database an older Arena meets after a newer
/// one laid it out is refused in one line that names what to install.
#[tokio::test]
async fn version_says_the_commit_and_a_newer_database_is_refused() {
    let s = Setup::new().await;
    let out = s.arena(&["--version"]).await;
    assert!(out.status.success());
    let line = common::stdout(&out);
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let expected = format!(
        "arena {} (commit {commit}, built ",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        line.starts_with(&expected),
        "{line:?} starts with {expected:?}"
    );
    let day = line
        .trim_end()
        .trim_end_matches(')')
        .rsplit(' ')
        .next()
        .unwrap_or("");
    assert!(
        day.len() == 10 && chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").is_ok(),
        "{line:?} ends with the build day"
    );

    // A newer Arena laid the database out: one more migration, its version.
    let listed = s.arena(&["battle", "list", "--json"]).await;
    assert!(listed.status.success(), "the database is created");
    let db = s.dir.path().join("data/arena.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let schema: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        conn.execute(
            "UPDATE meta SET value = '99.0.0' WHERE key = 'last_version'",
            [],
        )
        .unwrap();
        conn.pragma_update(None, "user_version", schema + 1)
            .unwrap();
    }
    let refused = s.arena(&["battle", "list"]).await;
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err:?}");
    assert!(
        err.contains("Arena 99.0.0") && err.contains("Install Arena 99.0.0 or newer"),
        "{err:?}"
    );
}
