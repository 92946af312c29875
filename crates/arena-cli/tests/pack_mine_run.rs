//! A mined pack runs like any pack (issue 41): `arena pack mine` through
//! the real binary mines a small Python history, validates its candidates
//! by running them with real pytest in the real jail and writes the pack;
//! then `arena pack run` plays two scripted agents on it — one applies the
//! task's gold patch (found by the base commit its worktree starts from),
//! one does nothing — and they score 100 % and 0 %.

mod common;

use std::path::{Path, PathBuf};

use arena_testserver::ModelScript;
use common::*;
use serde_json::Value;

/// The peers' virtualenv's Python, when it has pytest (scripts/peers.sh
/// installs it from the Python package index), named without `..`.
fn pytest_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let ok = std::process::Command::new(&python)
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

fn commit(dir: &Path, subject: &str, hour: u32) {
    git(dir, &["add", "-A"]);
    let date = format!("2024-05-01T{hour:02}:00:00+00:00");
    let out = std::process::Command::new("git")
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
}

/// A calculator's history: a start, then two fixes each with its test.
fn history(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Ada"]);
    git(dir, &["config", "user.email", "ada@example.org"]);
    let write = |path: &str, text: &str| {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n",
    );
    write(
        "tests/test_calc.py",
        "from calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    commit(dir, "Start", 1);
    write(
        "calc.py",
        "def add(a, b):\n    # None is not a number.\n    if a is None or b is None:\n        raise ValueError('None')\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n",
    );
    write("tests/test_calc.py", "import pytest\n\nfrom calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_add_none():\n    with pytest.raises(ValueError):\n        add(None, 1)\n");
    commit(dir, "Refuse None in add", 2);
    write(
        "calc.py",
        "def add(a, b):\n    # None is not a number.\n    if a is None or b is None:\n        raise ValueError('None')\n    return a + b\n\n\ndef div(a, b):\n    # Nothing divides by zero.\n    if b == 0:\n        return None\n    return a / b\n",
    );
    write("tests/test_calc.py", "import pytest\n\nfrom calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_add_none():\n    with pytest.raises(ValueError):\n        add(None, 1)\n\n\ndef test_div_zero():\n    assert div(1, 0) is None\n");
    commit(dir, "Divide by zero gives None", 3);
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

#[tokio::test]
async fn a_mined_pack_scores_a_gold_agent_100_and_an_idle_one_0() {
    let Some(python) = pytest_python() else {
        return;
    };
    let s = Setup::new().await;
    // Outside /tmp, as a user's project is.
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mine-run");
    std::fs::create_dir_all(&parent).unwrap();
    let work = tempfile::tempdir_in(&parent).unwrap();
    let repo = work.path().join("calc");
    std::fs::create_dir_all(&repo).unwrap();
    history(&repo);
    let pack = work.path().join("pack");
    let command = format!("{} -m pytest -p no:cacheprovider", python.display());
    let out = s
        .arena(&[
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
    let mined = json_of(&out);
    assert!(out.status.success(), "{mined}");
    assert_eq!(mined["validated"], 2, "{mined}");
    assert_eq!(mined["instructions_approved"], 0);
    let f2p: Vec<&str> = mined["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["FAIL_TO_PASS"].as_array().unwrap())
        .filter_map(Value::as_str)
        .collect();
    assert!(
        f2p.iter().any(|t| t.contains("test_div_zero"))
            && f2p.iter().any(|t| t.contains("test_add_none")),
        "{f2p:?}"
    );
    assert_eq!(mined["pack"], pack.to_str().unwrap());

    let config = s.dir.path().join("arena.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&common::pack::gold_agent_backend_for(&pack));
    text = text.replace(
        "stall_timeout_secs = 30",
        "stall_timeout_secs = 120\ncheck_timeout_secs = 300",
    );
    std::fs::write(&config, text).unwrap();
    s.cloud.set_model("gold", ModelScript::tokens(1));
    s.cloud.set_model("none", ModelScript::tokens(1));
    let out = s
        .arena(&[
            "pack",
            "run",
            pack.to_str().unwrap(),
            "--project",
            repo.to_str().unwrap(),
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
    assert_eq!(report["status"], "done", "{report}");
    let by = |model: &str| {
        report["contestants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["model"] == model)
            .cloned()
            .unwrap_or_else(|| panic!("no {model}: {report}"))
    };
    let (gold, none) = (by("gold"), by("none"));
    assert_eq!(gold["resolved"], 2, "{report}");
    assert_eq!(gold["pass_at"]["1"], 1.0, "{gold}");
    assert_eq!(none["resolved"], 0, "{report}");
    assert_eq!(none["pass_at"]["1"], 0.0, "{none}");
}
