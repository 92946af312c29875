//! `arena pack import/show/export` run as a user runs them: the real
//! binary on a real git project, a SWE-bench file and the sample pack.

use std::path::{Path, PathBuf};
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

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t.invalid")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A Rust-looking project with one commit, and a SWE-bench JSONL of one
/// instance on it.
fn project_and_instances(tmp: &Path) -> (PathBuf, PathBuf, Value) {
    let dir = tmp.join("project");
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"p\"\n").expect("write");
    std::fs::write(dir.join("src/lib.rs"), "").expect("write");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "one"]);
    let base = git(&dir, &["rev-parse", "HEAD"]);
    let instance = serde_json::json!({
        "repo": "o/p", "instance_id": "o__p-7", "base_commit": base,
        "patch": "diff --git a/src/lib.rs b/src/lib.rs\n", "test_patch": "diff --git a/tests/t.rs b/tests/t.rs\n",
        "problem_statement": "Make it work.\n", "hints_text": "", "created_at": "2024-01-01T00:00:00Z",
        "version": "1", "environment_setup_commit": base,
        "FAIL_TO_PASS": "[\"t::works\"]", "PASS_TO_PASS": "[\"t::still\"]",
    });
    let file = tmp.join("instances.jsonl");
    std::fs::write(&file, format!("{instance}\n")).expect("write");
    (dir, file, instance)
}

#[test]
fn import_show_and_export_a_swe_bench_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    let (project, file, instance) = project_and_instances(tmp.path());
    let pack = tmp.path().join("pack");
    let p = |p: &Path| p.to_string_lossy().into_owned();

    let text = ok(&arena(
        &data,
        &[
            "pack",
            "import",
            &p(&file),
            "--project",
            &p(&project),
            "--out",
            &p(&pack),
        ],
    ));
    assert!(text.contains("Imported 1 task(s)"), "{text}");
    assert!(
        text.contains("test command: cargo test (from Cargo.toml)"),
        "{text}"
    );

    // Without its project (and no bundle), the task cannot run: it says why.
    let shown: Value =
        serde_json::from_str(&ok(&arena(&data, &["pack", "show", &p(&pack), "--json"])))
            .expect("json");
    let task = &shown["tasks"][0];
    assert_eq!(task["id"], "o__p-7");
    assert_eq!(task["kind"], "repo");
    assert_eq!(task["test_command"], "cargo test");
    assert_eq!(task["fail_to_pass"], 1);
    assert_eq!(task["runnable"], false);
    assert!(
        task["why_not"]
            .as_str()
            .is_some_and(|w| w.contains("--project")),
        "{task}"
    );
    let shown: Value = serde_json::from_str(&ok(&arena(
        &data,
        &[
            "pack",
            "show",
            &p(&pack),
            "--project",
            &p(&project),
            "--json",
        ],
    )))
    .expect("json");
    assert_eq!(shown["tasks"][0]["runnable"], true, "{shown}");
    let text = ok(&arena(&data, &["pack", "show", &p(&pack)]));
    assert!(
        text.contains("o__p-7 [repo]") && text.contains("1 FAIL_TO_PASS"),
        "{text}"
    );

    let back = tmp.path().join("back.jsonl");
    ok(&arena(
        &data,
        &[
            "pack",
            "export",
            &p(&pack),
            "--format",
            "swebench",
            "--out",
            &p(&back),
        ],
    ));
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&back)
            .expect("read")
            .lines()
            .next()
            .expect("a line"),
    )
    .expect("json");
    assert_eq!(line, instance, "exported as imported");

    // Export refuses to overwrite.
    let out = arena(
        &data,
        &[
            "pack",
            "export",
            &p(&pack),
            "--format",
            "harbor",
            "--out",
            &p(&back),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists"));
}

#[test]
fn a_hostile_pack_is_refused_with_status_2_naming_the_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pack = tmp.path().join("pack");
    let task = pack.join("tasks/t1");
    std::fs::create_dir_all(task.join("tests")).expect("mkdir");
    std::fs::write(pack.join("pack.toml"), "name = \"x\"\n").expect("write");
    std::fs::write(task.join("task.toml"), "version = \"1.0\"\n").expect("write");
    std::fs::write(task.join("tests/test.sh"), "#!/bin/sh\n").expect("write");
    std::os::unix::fs::symlink("/etc/passwd", task.join("instruction.md")).expect("link");
    let out = arena(
        &tmp.path().join("data"),
        &["pack", "show", &pack.to_string_lossy()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("instruction.md") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(
        !err.contains("root:"),
        "the link's target is never read: {err}"
    );
}

#[test]
fn the_sample_pack_is_runnable_from_its_bundle() {
    let tmp = tempfile::tempdir().expect("tmp");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample");
    let shown: Value = serde_json::from_str(&ok(&arena(
        tmp.path(),
        &["pack", "show", &sample.to_string_lossy(), "--json"],
    )))
    .expect("json");
    assert_eq!(shown["bundle"], "repo.bundle");
    let tasks = shown["tasks"].as_array().expect("tasks");
    assert!(tasks.len() >= 3);
    for t in tasks {
        assert_eq!(t["runnable"], true, "{t}");
        assert_eq!(t["test_command"], "python3 -m unittest");
        assert_eq!(t["solution"], "gold.patch");
    }
}

/// Every file under `dir` but the bundle, with its bytes and executable bit.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "repo.bundle") {
                let mode = std::fs::metadata(&p).expect("meta").permissions().mode();
                let rel = p.strip_prefix(dir).expect("inside").to_path_buf();
                out.push((rel, std::fs::read(&p).expect("read"), mode & 0o111 != 0));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_sample_pack_is_what_its_script_makes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sample = root.join("packs/sample");
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("sample");
    let made = Command::new("bash")
        .arg(root.join("scripts/make-sample-pack.sh"))
        .arg(&out)
        .env("ARENA", env!("CARGO_BIN_EXE_arena"))
        .env("ARENA_DATA_DIR", tmp.path().join("data"))
        .output()
        .expect("the script runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    assert_eq!(
        files(&out),
        files(&sample),
        "packs/sample is out of date: run scripts/make-sample-pack.sh"
    );
    // The bundle's bytes depend on git's version; its commits do not.
    let heads = |dir: &Path| git(dir, &["bundle", "list-heads", "repo.bundle"]);
    assert_eq!(heads(&out), heads(&sample));
}
