//! Mining into a pack, the CLI's and the app's one path
//! (`Engine::mine_pack`, issue 41): with real pytest in the real jail and
//! a scripted local writer, the validated task is written as a pack with
//! its instruction, the yield's "instructions approved" is counted from
//! the pack's review states (0 after mining, 1 after an approval); a stop
//! ends the candidate at hand (its test runs), not only the run between
//! two candidates; an out folder that exists is refused before any
//! candidate runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arena_core::pack::mine::MineOptions;
use arena_core::{InstructionCounts, Instructions, MineEvent, MinePackOptions, ValidateOptions};
use arena_testserver::ModelScript;

mod common;

/// The peers' virtualenv's Python, when it has pytest (scripts/peers.sh
/// installs it), named without `..`.
fn pytest_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("ARENA_REQUIRE_PYTEST").is_none(),
            "no pytest in {}",
            python.display()
        );
        eprintln!("skipped: no pytest in {}", python.display());
        return None;
    }
    Some(arena_core::agent::sandbox::lexical(&python))
}

/// Arena's own binary as the jail's inner layer, as in the app and the CLI.
fn jail_ready() -> bool {
    let arena = std::env::var_os("ARENA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/arena"));
    let arena = arena_core::agent::sandbox::lexical(&arena);
    if arena.is_file() {
        arena_core::agent::jail::set_confiner(arena);
    }
    match arena_core::agent::jail::jail_info() {
        Ok(_) => true,
        Err(why) => {
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail: {why}"
            );
            eprintln!("skipped: {why}");
            false
        }
    }
}

fn git(dir: &Path, args: &[&str], hour: u32) {
    let date = format!("2025-07-01T{hour:02}:00:00+00:00");
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A start, then one fix with its test; `slow` makes every test run take
/// a minute.
fn history(dir: &Path, slow: bool) {
    let write = |path: &str, text: &str| {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    let wait = if slow {
        "import time\ntime.sleep(60)\n"
    } else {
        ""
    };
    git(dir, &["init", "-q", "-b", "main"], 1);
    write("calc.py", "def div(a, b):\n    return a / b\n");
    write(
        "tests/test_calc.py",
        &format!("{wait}from calc import div\n\n\ndef test_div():\n    assert div(4, 2) == 2\n"),
    );
    git(dir, &["add", "-A"], 1);
    git(dir, &["commit", "-q", "-m", "Start"], 1);
    write(
        "calc.py",
        "def div(a, b):\n    # Nothing divides by zero in this calculator.\n    if b == 0:\n        return None\n    return a / b\n",
    );
    write(
        "tests/test_calc.py",
        &format!("{wait}from calc import div\n\n\ndef test_div():\n    assert div(4, 2) == 2\n\n\ndef test_div_zero():\n    assert div(1, 0) is None\n"),
    );
    git(dir, &["add", "-A"], 2);
    git(dir, &["commit", "-q", "-m", "Divide by zero gives None"], 2);
}

/// A project folder outside /tmp, as a user's is.
fn workdir(name: &str) -> tempfile::TempDir {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&parent).expect("mkdir");
    tempfile::tempdir_in(&parent).expect("tempdir")
}

#[tokio::test]
async fn a_mined_pack_counts_its_approved_instructions_from_its_review_states() {
    let Some(python) = pytest_python() else {
        return;
    };
    if !jail_ready() {
        return;
    }
    let h = common::Harness::new().await;
    h.local.set_model(
        "writer",
        ModelScript::respond_with(|_| {
            "Dividing by zero crashes\n\nIt should give nothing instead of failing.".into()
        }),
    );
    let work = workdir("mine-pack");
    let repo = work.path().join("calc");
    std::fs::create_dir_all(&repo).expect("mkdir");
    history(&repo, false);
    let out = work.path().join("pack");
    let mut stages = Vec::new();
    let mut writers = Vec::new();
    let mined = h
        .engine
        .mine_pack(
            &MineOptions {
                project: repo.clone(),
                ..MineOptions::default()
            },
            &ValidateOptions {
                test_command: Some(format!(
                    "{} -m pytest -p no:cacheprovider",
                    python.display()
                )),
                ..ValidateOptions::default()
            },
            &MinePackOptions {
                out: Some(out.clone()),
                test_command: None,
                writer: Some("writer".into()),
            },
            |event| match event {
                MineEvent::Progress(p) => stages.push(p.stage.clone()),
                MineEvent::Writer {
                    name,
                    leaves_the_machine,
                } => writers.push((name.to_string(), leaves_the_machine)),
            },
        )
        .await
        .expect("mines");
    assert_eq!(mined.run.validated, 1, "{}", mined.run.yield_table());
    assert_eq!(mined.pack.as_deref(), Some(out.as_path()));
    assert_eq!(writers, vec![("local/writer".to_string(), false)]);
    assert!(stages.contains(&"validate".to_string()), "{stages:?}");
    assert!(stages.contains(&"write".to_string()), "{stages:?}");
    assert_eq!(stages.last().map(String::as_str), Some("done"));
    assert_eq!(
        stages.iter().filter(|s| *s == "done").count(),
        1,
        "done once, at the very end: {stages:?}"
    );
    let Instructions::Written(report) = &mined.instructions else {
        panic!("written: {:?}", mined.instructions);
    };
    assert_eq!(report.tasks.len(), 1, "{report:?}");
    let counts = mined.counts.expect("counts");
    assert_eq!(
        (
            counts.tasks,
            counts.pending,
            counts.approved,
            counts.unwritten
        ),
        (1, 1, 0, 0)
    );
    assert_eq!(mined.run.instructions_approved, 0);
    assert!(mined.run.seconds_per_stage.contains_key("write"));

    // Approved in review: the yield's count follows the pack.
    let pack = arena_core::pack::Pack::load(&out).expect("loads");
    let id = pack.tasks[0].id.as_str().to_string();
    arena_core::pack::review::decide(&out, &id, arena_core::pack::review::Decision::Approve)
        .expect("approves");
    let after = InstructionCounts::load(&out).expect("counts");
    assert_eq!((after.approved, after.pending, after.written()), (1, 0, 1));

    // Writing again finds nothing left to write.
    let (again, counts) = h
        .engine
        .write_mined_instructions(&out, Some("writer"), &None, |_| {})
        .await
        .expect("writes");
    let Instructions::Written(again) = again else {
        panic!("written: {again:?}");
    };
    assert!(again.tasks.is_empty(), "{again:?}");
    assert_eq!(counts, after);
    assert_eq!(h.local.requests_for("writer").len(), 1);

    // A pack folder that exists is refused before anything runs.
    let started = Instant::now();
    let err = h
        .engine
        .mine_pack(
            &MineOptions {
                project: repo.clone(),
                ..MineOptions::default()
            },
            &ValidateOptions::default(),
            &MinePackOptions {
                out: Some(out.clone()),
                ..MinePackOptions::default()
            },
            |_| {},
        )
        .await
        .expect_err("the folder exists");
    assert!(err.to_string().contains("exists already"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_stop_ends_the_candidate_at_hand() {
    let Some(python) = pytest_python() else {
        return;
    };
    if !jail_ready() {
        return;
    }
    let h = common::Harness::new().await;
    let work = workdir("mine-stop");
    let repo = work.path().join("calc");
    std::fs::create_dir_all(&repo).expect("mkdir");
    history(&repo, true);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let started = Instant::now();
    let mut asked_at = None;
    let mined = h
        .engine
        .mine_pack(
            &MineOptions {
                project: repo.clone(),
                ..MineOptions::default()
            },
            &ValidateOptions {
                test_command: Some(format!(
                    "{} -m pytest -p no:cacheprovider",
                    python.display()
                )),
                cancel: Some(stop),
                ..ValidateOptions::default()
            },
            &MinePackOptions {
                out: Some(work.path().join("pack")),
                ..MinePackOptions::default()
            },
            |event| {
                // Stop once the candidate's first test run is under way.
                if let MineEvent::Progress(p) = event {
                    if p.stage == "validate" && p.current.is_some() && asked_at.is_none() {
                        let flag = flag.clone();
                        asked_at = Some(Instant::now());
                        std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_secs(3));
                            flag.store(true, Ordering::SeqCst);
                        });
                    }
                }
            },
        )
        .await
        .expect("a stopped run still reports");
    let took = started.elapsed();
    assert!(mined.run.cancelled, "{}", mined.run.yield_table());
    assert_eq!(mined.run.tried, 0, "the candidate at hand is not counted");
    assert_eq!(mined.run.validated, 0);
    assert!(mined.pack.is_none(), "nothing validated, no pack");
    assert!(asked_at.is_some(), "the candidate was started");
    // Each run of the candidate sleeps a minute: one test run alone is
    // more than this.
    assert!(took < Duration::from_secs(45), "the stop took {took:?}");
}
