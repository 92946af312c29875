//! `arena pack mine` run as a user runs it: the real binary on a real git
//! project; the JSON's fields, the yield table, a written pack that `arena
//! pack show` says is not validated yet.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn arena(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(args)
        .env("ARENA_DATA_DIR", data)
        .env("ARENA_CONFIG", data.join("arena.toml"))
        .output()
        .expect("arena runs")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "arena failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn git(dir: &Path, args: &[&str], date: &str) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn project(dir: &Path) {
    let write = |p: &str, t: &str| {
        let p = dir.join(p);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, t).expect("write");
    };
    git(
        dir,
        &["init", "-q", "-b", "main"],
        "2024-03-01T10:00:00+00:00",
    );
    write("pkg/calc.py", "def add(a, b):\n    return a + b\n");
    write(
        "tests/test_calc.py",
        "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    git(dir, &["add", "-A"], "2024-03-01T10:00:00+00:00");
    git(
        dir,
        &["commit", "-qm", "Start"],
        "2024-03-01T10:00:00+00:00",
    );
    write("pkg/calc.py", "def add(a, b):\n    # None is refused.\n    if a is None or b is None:\n        raise ValueError('None')\n    return a + b\n");
    write("tests/test_calc.py", "import pytest\nfrom pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_none():\n    with pytest.raises(ValueError):\n        add(None, 1)\n");
    git(dir, &["add", "-A"], "2024-03-02T10:00:00+00:00");
    git(
        dir,
        &["commit", "-qm", "Refuse None in add"],
        "2024-03-02T10:00:00+00:00",
    );
    write("README.md", "calc\n");
    git(dir, &["add", "-A"], "2024-03-03T10:00:00+00:00");
    git(
        dir,
        &["commit", "-qm", "Say what it is"],
        "2024-03-03T10:00:00+00:00",
    );
}

#[test]
fn a_static_mine_prints_its_yield_and_writes_a_pack_not_validated_yet() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::create_dir_all(&repo).expect("mkdir");
    project(&repo);
    let repo_s = repo.to_str().expect("utf-8");

    let json: Value = serde_json::from_str(&ok(&arena(
        &data,
        &[
            "pack",
            "mine",
            "--static-only",
            "--project",
            repo_s,
            "--json",
        ],
    )))
    .expect("JSON");
    assert_eq!(json["scanned"], 3);
    assert_eq!(json["candidates"], 1);
    assert_eq!(json["dropped"]["no_tests"], 1);
    assert_eq!(json["dropped"]["no_parent"], 1);
    let task = &json["tasks"][0];
    assert_eq!(task["subject"], "Refuse None in add");
    assert!(task["committed_at"]
        .as_str()
        .is_some_and(|d| d.starts_with("2024-03-02T10:00:00")));
    assert_eq!(task["files"], serde_json::json!(["pkg/calc.py"]));
    assert_eq!(
        task["test_files"],
        serde_json::json!(["tests/test_calc.py"])
    );
    assert_eq!(task["ecosystem"], "python");
    assert_eq!(task["lines"], 3);
    assert_eq!(task["environment_changes"], serde_json::json!([]));
    assert!(task["test_patch_bytes"].as_u64().expect("a number") > 0);
    assert!(task["gold_patch_bytes"].as_u64().expect("a number") > 0);
    assert_eq!(task["base"].as_str().map(str::len), Some(40));
    for stage in ["walk", "classify", "split"] {
        assert!(json["seconds_per_stage"][stage].is_number(), "{stage}");
    }

    let text = ok(&arena(
        &data,
        &["pack", "mine", "--static-only", "--project", repo_s],
    ));
    assert!(text.contains("commits scanned"), "{text}");
    assert!(text.contains("dropped: no test changed"), "{text}");
    assert!(text.contains("Refuse None in add"), "{text}");

    let pack = tmp.path().join("mined");
    let pack_s = pack.to_str().expect("utf-8");
    ok(&arena(
        &data,
        &[
            "pack",
            "mine",
            "--static-only",
            "--project",
            repo_s,
            "--out",
            pack_s,
            "--test-command",
            "python -m pytest",
        ],
    ));
    let shown = ok(&arena(&data, &["pack", "show", pack_s, "--json"]));
    assert!(
        shown.contains("FAIL_TO_PASS"),
        "show says why the task cannot run: {shown}"
    );
}
