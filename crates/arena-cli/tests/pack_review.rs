//! `arena pack write` and `arena pack review` through the real binary: the
//! writer on the scripted local model server writes a copy of the sample
//! pack's instructions, then a person reviews them — with flags where there
//! is no terminal, and key by key on a pseudo-terminal (approve, drop, edit
//! in $EDITOR, quit).

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arena_testserver::ModelScript;
use common::{stdout, Setup};
use serde_json::Value;

const MEDIAN: &str = "textkit__add-median";
const ROMAN: &str = "textkit__roman-range";
const TITLE: &str = "textkit__title-case-apostrophes";

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A writer whose statements are clean: one per task, named by its tests.
fn writer() -> ModelScript {
    ModelScript::respond_with(|body| {
        let text = body.to_string();
        let what = if text.contains("MedianTest") {
            "Statistics cannot give a middle value"
        } else if text.contains("ToRomanTest") {
            "Roman numerals accept impossible numbers"
        } else {
            "Title case mangles apostrophes"
        };
        format!("{what}\n\nThe behaviour is wrong today and should follow the examples.")
    })
}

/// The sample pack written by `arena pack write`, in the setup's folder.
async fn written(s: &Setup) -> PathBuf {
    s.local.set_model("judge", writer());
    let pack = s.dir.path().join("pack");
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample"),
        &pack,
    );
    let report = s
        .json(&["pack", "write", pack.to_str().unwrap(), "--json"])
        .await;
    assert_eq!(report["writer"], "local/judge");
    assert_eq!(report["left_the_machine"], false);
    let states: Vec<&str> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["pending", "pending", "pending"]);
    pack
}

fn states(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_review_without_a_terminal_takes_flags_and_says_so_otherwise() {
    let s = Setup::new().await;
    let pack = written(&s).await;
    let p = pack.to_str().unwrap();
    let instruction =
        std::fs::read_to_string(pack.join("tasks").join(MEDIAN).join("instruction.md")).unwrap();
    assert!(instruction.starts_with("Statistics cannot give a middle value"));
    assert!(instruction.contains("function `median(xs)` in `textkit/stats.py`"));

    // No terminal, no flag: a clear error naming the flags.
    let out = s.arena(&["pack", "review", p]).await;
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a terminal") && err.contains("--approve"),
        "{err}"
    );

    let out = s
        .arena(&[
            "pack",
            "review",
            p,
            "--approve",
            MEDIAN,
            "--drop",
            ROMAN,
            "--reason",
            "too vague",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains(&format!("{MEDIAN} approved")));
    let list = s.json(&["pack", "review", p, "--json"]).await;
    assert_eq!(
        states(&list),
        [
            (MEDIAN.to_string(), "approved".to_string()),
            (ROMAN.to_string(), "dropped".to_string()),
            (TITLE.to_string(), "pending".to_string()),
        ]
    );
    assert_eq!(list[1]["reason"], "too vague");
    assert_eq!(list[0]["writer"], "local/judge");
    // The state is in task.toml, beside what was there.
    let toml = std::fs::read_to_string(pack.join("tasks").join(ROMAN).join("task.toml")).unwrap();
    assert!(toml.contains("review = \"dropped\"") && toml.contains("[metadata.arena.swebench]"));
    // An unknown task is refused by name.
    let out = s.arena(&["pack", "review", p, "--approve", "nope"]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no task `nope`"));

    // A cloud writer is used only when named, and says the code leaves.
    s.cloud.set_model("big", writer());
    let out = s
        .arena(&["pack", "write", p, "--writer", "big", "--tasks", TITLE])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("leave this machine"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A pseudo-terminal: (master, slave).
fn pty() -> (File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 50,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty only writes the two descriptors it opened; no name
    // buffer, default terminal settings, a valid window size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are open and owned by nothing else.
    unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

#[tokio::test]
async fn a_review_on_a_terminal_is_one_task_a_screen_driven_by_keys() {
    let s = Setup::new().await;
    let pack = written(&s).await;
    let editor = s.dir.path().join("edit.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'Titles keep apostrophes\\n\\nA person wrote this.\\n' > \"$1\"\n",
    )
    .unwrap();
    let p = pack.clone();
    let mut cmd: Command = s.command(&["pack", "review", p.to_str().unwrap()]);
    cmd.env("EDITOR", format!("sh {}", editor.display()))
        .env_remove("VISUAL")
        .env("TERM", "xterm-256color");
    let seen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let seen_by_reader = seen.clone();
    let seen_here = seen.clone();
    let status = tokio::task::spawn_blocking(move || {
        let (mut master, slave) = pty();
        let child_in = slave.try_clone().unwrap();
        let child_out = slave.try_clone().unwrap();
        let mut child = cmd
            .stdin(Stdio::from(child_in))
            .stdout(Stdio::from(child_out))
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        drop(cmd);
        let mut reader = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                seen_by_reader.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let wait_for = |what: &str, screens: usize| {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let text = String::from_utf8_lossy(&seen_here.lock().unwrap()).into_owned();
                if text.matches(what).count() >= screens {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "no `{what}` on the screen:\n{text}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        // Each key after the screen it answers.
        wait_for("Task 1 of 3: textkit__add-median", 1);
        wait_for("a approve", 1);
        master.write_all(b"a").unwrap();
        wait_for("Task 2 of 3: textkit__roman-range", 1);
        master.write_all(b"d").unwrap();
        wait_for("Task 3 of 3: textkit__title-case-apostrophes", 1);
        master.write_all(b"e").unwrap();
        wait_for("the audit finds nothing", 1);
        master.write_all(b"p").unwrap();
        wait_for("Task 2 of 3: textkit__roman-range   [dropped]", 1);
        master.write_all(b"q").unwrap();
        child.wait().unwrap()
    })
    .await
    .unwrap();
    let screen = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    assert!(status.success(), "{screen}");
    assert!(
        screen.contains("1 approved, 1 pending, 1 dropped."),
        "{screen}"
    );
    assert!(screen.contains("Statistics cannot give a middle value"));

    let list = s
        .json(&["pack", "review", pack.to_str().unwrap(), "--json"])
        .await;
    assert_eq!(
        states(&list),
        [
            (MEDIAN.to_string(), "approved".to_string()),
            (ROMAN.to_string(), "dropped".to_string()),
            (TITLE.to_string(), "pending".to_string()),
        ]
    );
    assert_eq!(list[1]["reason"], "dropped in review");
    assert_eq!(
        std::fs::read_to_string(pack.join("tasks").join(TITLE).join("instruction.md")).unwrap(),
        "Titles keep apostrophes\n\nA person wrote this.\n"
    );
}

/// The peers' virtualenv's Python, when it has pytest and a jail runs
/// here, named without `..` (as `pack_mine_run.rs` finds it).
fn pytest_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok || arena_core::agent::jail::jail_info().is_err() {
        assert!(
            std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
            "no jail or no pytest in {}",
            python.display()
        );
        eprintln!("skipped: no jail or no pytest in {}", python.display());
        return None;
    }
    Some(arena_core::agent::sandbox::lexical(&python))
}

/// A one-fix history: a start, then a fix with its test.
fn history(dir: &Path) {
    let git = |args: &[&str]| common::git(dir, args);
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.name", "Ada"]);
    git(&["config", "user.email", "ada@example.org"]);
    let write = |path: &str, text: &str| {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let commit = |subject: &str, hour: u32| {
        git(&["add", "-A"]);
        let date = format!("2025-08-01T{hour:02}:00:00+00:00");
        let out = Command::new("git")
            .current_dir(dir)
            .args(["commit", "-q", "-m", subject])
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    write("calc.py", "def div(a, b):\n    return a / b\n");
    write(
        "tests/test_calc.py",
        "from calc import div\n\n\ndef test_div():\n    assert div(4, 2) == 2\n",
    );
    commit("Start", 1);
    write(
        "calc.py",
        "def div(a, b):\n    # Nothing divides by zero in this calculator.\n    if b == 0:\n        return None\n    return a / b\n",
    );
    write("tests/test_calc.py", "from calc import div\n\n\ndef test_div():\n    assert div(4, 2) == 2\n\n\ndef test_div_zero():\n    assert div(1, 0) is None\n");
    commit(
        "Divide by zero gives None\n\nIt raised ZeroDivisionError.",
        2,
    );
}

#[tokio::test]
async fn mining_writes_the_validated_tasks_instructions_at_its_end() {
    let Some(python) = pytest_python() else {
        return;
    };
    let s = Setup::new().await;
    s.local.set_model(
        "judge",
        ModelScript::respond_with(|_| {
            "Dividing by zero crashes\n\n`div(1, 0)` raises today; it should give None.".into()
        }),
    );
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mine-write");
    std::fs::create_dir_all(&parent).unwrap();
    let work = tempfile::tempdir_in(&parent).unwrap();
    let repo = work.path().join("calc");
    std::fs::create_dir_all(&repo).unwrap();
    history(&repo);
    let pack = work.path().join("pack");
    let command = format!("{} -m pytest -p no:cacheprovider", python.display());
    let mined = s
        .json(&[
            "pack",
            "mine",
            "--project",
            repo.to_str().unwrap(),
            "--out",
            pack.to_str().unwrap(),
            "--test-command",
            &command,
            "--json",
        ])
        .await;
    assert_eq!(mined["validated"], 1, "{mined}");
    let list = s
        .json(&["pack", "review", pack.to_str().unwrap(), "--json"])
        .await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["state"], "pending", "{list}");
    assert_eq!(list[0]["writer"], "local/judge");
    let id = list[0]["id"].as_str().unwrap();
    let text = std::fs::read_to_string(pack.join("tasks").join(id).join("instruction.md")).unwrap();
    assert!(text.starts_with("Dividing by zero crashes"), "{text}");
    // The writer was given the commit message and the RED run's failure.
    let asked = s.local.requests_for("judge");
    assert_eq!(asked.len(), 1);
    let body = asked[0].body.to_string();
    assert!(body.contains("It raised ZeroDivisionError"), "{body}");
    assert!(body.contains("test_div_zero"), "{body}");
    assert!(
        !body.contains("Nothing divides by zero in this calculator"),
        "{body}"
    );
}
