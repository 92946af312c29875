//! `arena pack run` through the real binary (issue 40): the sample pack's
//! tasks run as a series of sealed Coding battles, each result decided by
//! the task's verifier. Two scripted agents — one applies each task's gold
//! patch, one does nothing — score 100 % and 0 %, with intervals that
//! never read as certain; a run killed with SIGKILL resumes without running
//! a finished run again; the report comes out in every format.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arena_testserver::ModelScript;
use common::pack::{gold_agent_backend, sample, tasks};
use common::*;
use serde_json::Value;

fn ready() -> bool {
    let jail = arena_core::agent::jail::jail_info();
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if jail.is_ok() && python {
        return true;
    }
    assert!(
        std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
        "no jail or no python3: {jail:?}"
    );
    eprintln!("skipped: no jail or no python3: {jail:?}");
    false
}

/// The sample pack's scripted agent (see [`gold_agent_backend`]) in the
/// set-up's config, with room for the verifiers.
fn setup(s: &Setup) {
    let config = s.dir.path().join("arena.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&gold_agent_backend());
    text = text.replace(
        "stall_timeout_secs = 30",
        "stall_timeout_secs = 120\ncheck_timeout_secs = 300",
    );
    std::fs::write(&config, text).unwrap();
    s.cloud.set_model("gold", ModelScript::tokens(1));
    s.cloud.set_model("none", ModelScript::tokens(1));
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn contestant<'a>(report: &'a Value, model: &str) -> &'a Value {
    report["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == model)
        .unwrap_or_else(|| panic!("no {model}: {report}"))
}

#[tokio::test]
async fn a_pack_run_scores_a_gold_agent_and_an_idle_one_with_honest_intervals() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    setup(&s);
    let config = s.dir.path().join("arena.toml");
    let text = std::fs::read_to_string(&config).unwrap()
        + "\n[[model_cutoff]]\nmodel = \"gold\"\ndate = \"2024-03-02\"\n";
    std::fs::write(&config, text).unwrap();
    let n = tasks().len();
    let pack = sample();
    let out = s
        .arena(&[
            "pack",
            "run",
            pack.to_str().unwrap(),
            "-c",
            "agent@gold",
            "-c",
            "agent@none",
            "--runs",
            "2",
            "--json",
        ])
        .await;
    let report = json_of(&out);
    assert!(out.status.success(), "{report}");
    assert_eq!(report["status"], "done", "{report}");
    let gold = contestant(&report, "gold");
    let none = contestant(&report, "none");
    assert_eq!(gold["identity"], "agent");
    assert_eq!(gold["runs"], 2 * n as u64, "{gold}");
    assert_eq!(gold["resolved"], 2 * n as u64, "{report}");
    assert_eq!(gold["pass_at"]["1"], 1.0);
    assert_eq!(gold["pass_at"]["2"], 1.0);
    assert_eq!(gold["pass_hat_k"]["2"], 1.0);
    assert_eq!(none["resolved"], 0, "{report}");
    assert_eq!(none["pass_at"]["1"], 0.0);
    // A handful of tasks all solved is not certainty.
    let low = gold["pass_at_1_interval"]["low"].as_f64().unwrap();
    assert!(low < 1.0 && low > 0.0, "{gold}");
    assert!(none["pass_at_1_interval"]["high"].as_f64().unwrap() > 0.0);
    // Each task's runs are there, each decided by the verifier.
    let tasks = report["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), n);
    for t in tasks {
        let runs = t["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4, "{t}");
        for r in runs {
            let want = if r["contestant"] == "agent@gold" {
                "resolved"
            } else {
                "unresolved"
            };
            assert_eq!(r["outcome"], want, "{r}");
            assert!(
                r["reason"].as_str().unwrap().contains("FAIL_TO_PASS"),
                "{r}"
            );
        }
    }
    // The tasks before and after each model's training cutoff: `gold`'s
    // is set between the sample's commit days (2024-03-02, -03, -04);
    // `none` has none known.
    let cutoffs = report["cutoffs"].as_array().unwrap();
    let cut = |model: &str| cutoffs.iter().find(|c| c["model"] == model).unwrap();
    assert_eq!(cut("gold")["cutoff"], "2024-03-02", "{report}");
    assert_eq!(cut("gold")["after"]["tasks"], 2, "{report}");
    assert_eq!(cut("gold")["before"]["tasks"], 1, "{report}");
    assert_eq!(cut("gold")["gap"], 0.0, "{report}");
    assert!(cut("none")["cutoff"].is_null(), "{report}");
    assert!(
        cut("none")["summary"]
            .as_str()
            .unwrap()
            .contains("[[model_cutoff]]"),
        "{report}"
    );
    // The report in every format, from the database.
    let id = report["series_id"].as_str().unwrap();
    for (format, needle) in [
        ("md", "| agent@gold |"),
        ("md", "gold (cutoff 2024-03-02): 100 % on 2 task(s) after"),
        ("csv", "task,contestant,run"),
        ("html", "<h1>Pack"),
        ("json", "\"pass_at_1_interval\""),
    ] {
        let out = s.arena(&["pack", "report", id, "--format", format]).await;
        assert!(out.status.success(), "{out:?}");
        assert!(stdout(&out).contains(needle), "{format}: {}", stdout(&out));
    }
    // The pack's tasks are a leaderboard source of their own: each task a
    // match the gold agent won; the battles' own verdicts (none here) do
    // not count, and the judge's board has nothing from the pack.
    let out = s
        .arena(&["leaderboard", "--source", "packs", "--json"])
        .await;
    let board = json_of(&out);
    assert!(out.status.success(), "{board}");
    let rows = board["standings"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{board}");
    assert_eq!(rows[0]["model"], "gold", "{board}");
    assert_eq!(rows[0]["wins"], n as u64, "{board}");
    assert_eq!(rows[1]["model"], "none", "{board}");
    assert_eq!(rows[1]["losses"], n as u64, "{board}");
    assert!(
        rows[0]["rating"].as_f64() > rows[1]["rating"].as_f64(),
        "{board}"
    );
    let only_run = s
        .arena(&["leaderboard", "--source", "packs", "--series", id, "--json"])
        .await;
    assert_eq!(json_of(&only_run)["standings"], board["standings"]);
    let judged = json_of(
        &s.arena(&["leaderboard", "--source", "judge", "--json"])
            .await,
    );
    for row in judged["standings"].as_array().unwrap() {
        assert_eq!(row["wins"], 0, "{judged}");
    }
}

/// The pack run (the only series) and its runs with a verdict: each
/// one's battle, contestant and verdict.
/// A run with a verdict: its battle, and its contestant and verdict.
type Verdict = (String, Vec<String>);

fn runs_so_far(s: &Setup) -> Option<(String, Vec<Verdict>)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["series", "list", "--json"])
        .env("ARENA_CONFIG", s.dir.path().join("arena.toml"))
        .env("ARENA_DATA_DIR", s.dir.path().join("data"))
        .output()
        .ok()?;
    let list: Value = serde_json::from_slice(&out.stdout).ok()?;
    let series = list.as_array()?.first()?;
    let id = series["id"].as_str()?.to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["pack", "report", &id, "--format", "json"])
        .env("ARENA_CONFIG", s.dir.path().join("arena.toml"))
        .env("ARENA_DATA_DIR", s.dir.path().join("data"))
        .output()
        .ok()?;
    let report: Value = serde_json::from_slice(&out.stdout).ok()?;
    let mut done = Vec::new();
    for t in report["tasks"].as_array()? {
        for r in t["runs"].as_array()? {
            if r["reason"].is_string() {
                done.push((
                    r["battle_id"].as_str()?.to_string(),
                    vec![r["contestant"].to_string(), r["reason"].to_string()],
                ));
            }
        }
    }
    Some((id, done))
}

#[tokio::test]
async fn a_pack_run_killed_mid_way_resumes_without_running_a_finished_run_again() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    setup(&s);
    let pack = sample();
    let args = [
        "pack",
        "run",
        pack.to_str().unwrap(),
        "-c",
        "agent@gold",
        "-c",
        "agent@none",
        "--runs",
        "2",
        "--key",
        "nightly",
        "--json",
    ];
    let mut child = s
        .command(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once a few runs have their verdicts.
    let started = Instant::now();
    let before = loop {
        if let Some((id, done)) = runs_so_far(&s) {
            if done.len() >= 2 {
                break (id, done);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no verdict in time"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    child.kill().unwrap();
    child.wait().unwrap();
    // The same command again resumes the run it started.
    let out = s.arena(&args).await;
    let report = json_of(&out);
    assert!(out.status.success(), "{report}");
    assert_eq!(report["series_id"], before.0.as_str());
    assert_eq!(report["status"], "done", "{report}");
    let n = tasks().len();
    assert_eq!(
        contestant(&report, "gold")["resolved"],
        2 * n as u64,
        "{report}"
    );
    // Every verdict recorded before the kill is the one reported now.
    let (_, after) = runs_so_far(&s).unwrap();
    for run in &before.1 {
        assert!(after.contains(run), "{run:?} was run again: {after:?}");
    }
    assert_eq!(after.len(), 2 * 2 * n, "{after:?}");
}

/// A clone of `pack`'s bundle (in a folder dropped with the first value)
/// checked out at `task`'s base commit.
fn at_base(pack: &Path, task: &str) -> (tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    let bundle = pack.join("repo.bundle");
    git(
        work.path(),
        &[
            "clone",
            "-q",
            bundle.to_str().unwrap(),
            repo.to_str().unwrap(),
        ],
    );
    let toml = std::fs::read_to_string(pack.join("tasks").join(task).join("task.toml")).unwrap();
    let base = toml
        .lines()
        .find_map(|l| l.strip_prefix("base_commit = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap()
        .to_string();
    git(&repo, &["checkout", "-q", &base]);
    (work, repo)
}

/// The file a task's gold patch leaves at `path`: the pack's bundle cloned,
/// the base checked out, the gold patch applied.
fn solved_file(task: &str, path: &str) -> String {
    let (_work, repo) = at_base(&sample(), task);
    let gold = sample()
        .join("tasks")
        .join(task)
        .join("solution/gold.patch");
    git(&repo, &["apply", gold.to_str().unwrap()]);
    std::fs::read_to_string(repo.join(path)).unwrap()
}

/// Arena's built-in agent, its model on the scripted server writing the
/// solved file, resolves the task through the same sealed battle and
/// verifier; the idle agent does not.
#[tokio::test]
async fn the_built_in_agent_on_a_scripted_model_resolves_a_task() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    setup(&s);
    let task = "textkit__add-median";
    let fixed = solved_file(task, "textkit/stats.py");
    s.local
        .set_model("solver", write_turns_each("textkit/stats.py", &fixed));
    let pack = sample();
    let out = s
        .arena(&[
            "pack",
            "run",
            pack.to_str().unwrap(),
            "-c",
            "native@solver",
            "-c",
            "agent@none",
            "--tasks",
            task,
            "--runs",
            "2",
            "--json",
        ])
        .await;
    let report = json_of(&out);
    assert!(out.status.success(), "{report}");
    let solver = contestant(&report, "solver");
    assert_eq!(solver["identity"], "native");
    assert_eq!(solver["resolved"], 2, "{report}");
    assert_eq!(contestant(&report, "none")["resolved"], 0, "{report}");
    assert_eq!(report["tasks"].as_array().unwrap().len(), 1, "{report}");
}

/// `arena pack check`: the sample's solutions resolve their tasks and
/// their bases do not; a task whose gold patch fixes nothing is broken
/// (exit status 1, the reason given) and a later run leaves it out.
#[tokio::test]
async fn pack_check_finds_a_broken_task_and_a_run_leaves_it_out() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    setup(&s);
    let pack = s.dir.path().join("pack");
    let copied = std::process::Command::new("cp")
        .args(["-a", sample().to_str().unwrap(), pack.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(copied.success());
    // The median task's "solution" touches only the README.
    let task = "textkit__add-median";
    let (_work, repo) = at_base(&pack, task);
    let readme = repo.join("README.md");
    let mut text = std::fs::read_to_string(&readme).unwrap();
    text.push_str("\nSee also: nothing.\n");
    std::fs::write(&readme, text).unwrap();
    let wrong = git(&repo, &["diff"]);
    std::fs::write(
        pack.join("tasks").join(task).join("solution/gold.patch"),
        wrong,
    )
    .unwrap();

    let out = s
        .arena(&["pack", "check", pack.to_str().unwrap(), "--json"])
        .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let check = json_of(&out);
    let tasks = check["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 3, "{check}");
    for t in tasks {
        if t["id"] == task {
            let why = t["broken"].as_str().unwrap();
            assert!(why.contains("solution does not resolve"), "{why}");
        } else {
            assert!(t["broken"].is_null(), "{t}");
            assert_eq!(t["solution"]["outcome"], "resolved", "{t}");
            assert_eq!(t["base"]["outcome"], "unresolved", "{t}");
        }
    }
    // A run now leaves the broken task out, and says why.
    let out = s
        .arena(&[
            "pack",
            "run",
            pack.to_str().unwrap(),
            "-c",
            "agent@gold",
            "-c",
            "agent@none",
            "--runs",
            "1",
            "--json",
        ])
        .await;
    let report = json_of(&out);
    assert!(out.status.success(), "{report}");
    let ids: Vec<&str> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&task), "{ids:?}");
    assert_eq!(ids.len(), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("found it broken"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// SWE-bench's format round-trips through a run: the sample pack exported
/// as SWE-bench JSONL, imported against its repository, run (the gold
/// agent resolves every task, the idle one none), and exported again —
/// every instance as it was.
#[tokio::test]
async fn a_swe_bench_file_imports_runs_and_exports_back_as_it_was() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    setup(&s);
    let dir = s.dir.path();
    let first = dir.join("instances.jsonl");
    let ok = |out: &std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let sample = sample();
    ok(&s
        .arena(&[
            "pack",
            "export",
            sample.to_str().unwrap(),
            "--format",
            "swebench",
            "--out",
            first.to_str().unwrap(),
        ])
        .await);
    let project = dir.join("textkit");
    git(
        dir,
        &[
            "clone",
            "-q",
            sample.join("repo.bundle").to_str().unwrap(),
            project.to_str().unwrap(),
        ],
    );
    let imported = dir.join("imported");
    ok(&s
        .arena(&[
            "pack",
            "import",
            first.to_str().unwrap(),
            "--project",
            project.to_str().unwrap(),
            "--out",
            imported.to_str().unwrap(),
            "--test-command",
            "python3 -m unittest",
        ])
        .await);
    let out = s
        .arena(&[
            "pack",
            "run",
            imported.to_str().unwrap(),
            "--project",
            project.to_str().unwrap(),
            "-c",
            "agent@gold",
            "-c",
            "agent@none",
            "--runs",
            "1",
            "--json",
        ])
        .await;
    let report = json_of(&out);
    assert!(out.status.success(), "{report}");
    let n = tasks().len() as u64;
    assert_eq!(contestant(&report, "gold")["resolved"], n, "{report}");
    assert_eq!(contestant(&report, "none")["resolved"], 0, "{report}");
    let again = dir.join("again.jsonl");
    ok(&s
        .arena(&[
            "pack",
            "export",
            imported.to_str().unwrap(),
            "--format",
            "swebench",
            "--out",
            again.to_str().unwrap(),
        ])
        .await);
    let lines = |p: &Path| -> Vec<Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(lines(&again), lines(&first));
    assert_eq!(lines(&first).len() as u64, n);
}
