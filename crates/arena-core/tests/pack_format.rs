//! Task packs on disk: a Harbor task folder and SWE-bench instances import
//! and export back with nothing lost, docs/packs.md's example is a pack,
//! hostile packs are refused with the file named and nothing half-written,
//! and the sample pack's bundle, patches and tests.json agree (its tests run
//! for real with python3).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use arena_core::pack::{
    self, export, import, materialize_project, ExportFormat, ImportOptions, Pack, PackError,
    Solution, TaskKind,
};
use serde_json::{Map, Value};

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
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn executable(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Every file under `dir`: its bytes and whether it is executable.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, bool)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let mode = std::fs::metadata(&p).expect("meta").permissions().mode();
                out.insert(
                    p.strip_prefix(dir).expect("inside").to_path_buf(),
                    (std::fs::read(&p).expect("read"), mode & 0o111 != 0),
                );
            }
        }
    }
    out
}

/// A Harbor task folder as Harbor's docs describe it.
fn harbor_task(dir: &Path) {
    write(
        &dir.join("task.toml"),
        r#"version = "1.0"
# a comment Arena must keep

[metadata]
author_name = "Someone"
difficulty = "easy"
tags = ["trivial", "alpine"]

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 300.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
"#,
    );
    write(
        &dir.join("instruction.md"),
        "Write hello.txt saying `Hello, world!`.\n",
    );
    write(
        &dir.join("environment/Dockerfile"),
        "FROM alpine:3.20\nWORKDIR /app\n",
    );
    write(
        &dir.join("tests/test.sh"),
        "#!/bin/sh\nif grep -q 'Hello, world!' /app/hello.txt; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n",
    );
    executable(&dir.join("tests/test.sh"));
    write(
        &dir.join("tests/test_state.py"),
        "def test_hello():\n    pass\n",
    );
    write(
        &dir.join("solution/solve.sh"),
        "#!/bin/sh\necho 'Hello, world!' > /app/hello.txt\n",
    );
    executable(&dir.join("solution/solve.sh"));
}

#[test]
fn a_harbor_task_folder_imports_and_exports_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("tmp");
    let source = tmp.path().join("hello-world");
    harbor_task(&source);
    let out = tmp.path().join("pack");
    let report = import(
        &source,
        &ImportOptions {
            out: out.clone(),
            ..ImportOptions::default()
        },
    )
    .expect("imports");
    assert_eq!(report.tasks.len(), 1);
    assert_eq!(report.tasks[0].id, "hello-world");
    assert!(
        report.tasks[0].needs_docker,
        "environment/Dockerfile means Docker"
    );

    let loaded = Pack::load(&out).expect("loads");
    assert_eq!(loaded.manifest.name, "pack");
    let task = &loaded.tasks[0];
    assert_eq!(task.kind(), TaskKind::Harbor);
    assert!(task.meta.needs_docker);
    assert_eq!(task.toml.agent_timeout_sec, Some(300.0));
    assert_eq!(task.solution, Solution::SolveScript);
    assert_eq!(
        task.instruction,
        "Write hello.txt saying `Hello, world!`.\n"
    );

    let back = tmp.path().join("exported");
    let exported = export(&loaded, ExportFormat::Harbor, &back).expect("exports");
    assert_eq!(exported.exported, vec!["hello-world"]);
    assert_eq!(
        tree(&back.join("hello-world")),
        tree(&source),
        "nothing lost"
    );

    // SWE-bench has no place for it: skipped, with the reason.
    let jsonl = tmp.path().join("out.jsonl");
    let exported = export(&loaded, ExportFormat::Swebench, &jsonl).expect("exports");
    assert!(exported.exported.is_empty());
    assert!(
        exported.skipped[0].1.contains("--format harbor"),
        "{:?}",
        exported.skipped
    );

    // A dataset's folder of task folders imports every one.
    let dataset = tmp.path().join("dataset");
    harbor_task(&dataset.join("one"));
    harbor_task(&dataset.join("two"));
    let out = tmp.path().join("pack2");
    import(
        &dataset,
        &ImportOptions {
            out: out.clone(),
            ..ImportOptions::default()
        },
    )
    .expect("imports");
    let ids: Vec<String> = Pack::load(&out)
        .expect("loads")
        .tasks
        .iter()
        .map(|t| t.id.to_string())
        .collect();
    assert_eq!(ids, vec!["one", "two"]);

    // Terminal-Bench 1's task.yaml is not Harbor's format: said, not guessed.
    let old = tmp.path().join("tb1");
    write(&old.join("task.yaml"), "instruction: |\n  Do it.\n");
    let err = import(
        &old,
        &ImportOptions {
            out: tmp.path().join("pack3"),
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    assert!(err.to_string().contains("Terminal-Bench 1"), "{err}");
    assert!(!tmp.path().join("pack3").exists());
}

/// A project with two commits; returns (dir, first, second).
fn project(tmp: &Path) -> (PathBuf, String, String) {
    let dir = tmp.join("project");
    std::fs::create_dir_all(&dir).expect("mkdir");
    git(&dir, &["init", "-q", "-b", "main"]);
    write(&dir.join("pyproject.toml"), "[project]\nname = \"p\"\n");
    write(&dir.join("p/__init__.py"), "");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "one"]);
    let first = git(&dir, &["rev-parse", "HEAD"]);
    write(&dir.join("p/x.py"), "X = 1\n");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-q", "-m", "two"]);
    let second = git(&dir, &["rev-parse", "HEAD"]);
    (dir, first, second)
}

fn instances(first: &str, second: &str) -> Vec<Map<String, Value>> {
    let one = serde_json::json!({
        "repo": "owner/p", "instance_id": "owner__p-1", "base_commit": first,
        "patch": "diff --git a/p/x.py b/p/x.py\n--- /dev/null\n+++ b/p/x.py\n@@ -0,0 +1 @@\n+X = 1\n",
        "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
        "problem_statement": "Add X.\n\nIt should be 1 — “one”.\n",
        "hints_text": "see p/x.py", "created_at": "2023-05-01T12:00:00Z", "version": "0.1",
        "FAIL_TO_PASS": "[\"tests.test_x.T.test_x\"]", "PASS_TO_PASS": "[]",
        "environment_setup_commit": first,
    });
    let two = serde_json::json!({
        "repo": "owner/p", "instance_id": "owner/p#2 weird id", "base_commit": second,
        "patch": "", "test_patch": "", "problem_statement": "Nothing.",
        "created_at": null, "FAIL_TO_PASS": ["a", "b"], "PASS_TO_PASS": ["c"],
        "difficulty": "<15 min fix", "image_assets": {"problem_statement": []}, "score": 3.5,
    });
    [one, two]
        .into_iter()
        .map(|v| v.as_object().expect("object").clone())
        .collect()
}

#[test]
fn swe_bench_instances_import_and_export_with_nothing_lost() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (project, first, second) = project(tmp.path());
    let originals = instances(&first, &second);
    let source = tmp.path().join("instances.jsonl");
    let text: String = originals
        .iter()
        .map(|o| serde_json::to_string(o).expect("json") + "\n")
        .collect();
    write(&source, &text);
    let out = tmp.path().join("pack");
    let report = import(
        &source,
        &ImportOptions {
            out: out.clone(),
            project: Some(project.clone()),
            ..ImportOptions::default()
        },
    )
    .expect("imports");
    // Detected from the base's files, recorded and said.
    assert_eq!(
        report.tasks[0].test_command.as_deref(),
        Some("python3 -m unittest")
    );
    assert!(report.tasks[0]
        .test_command_from
        .as_deref()
        .is_some_and(|f| f.contains("pyproject.toml")));
    assert_eq!(report.tasks[1].id, "owner-p-2-weird-id");
    assert_eq!(report.tasks[1].original_id, "owner/p#2 weird id");

    let loaded = Pack::load(&out).expect("loads");
    let roots = git(&project, &["rev-list", "--max-parents=0", "HEAD"]);
    assert_eq!(
        loaded
            .manifest
            .repository
            .as_ref()
            .expect("repository")
            .roots,
        vec![roots]
    );
    loaded
        .check_project(&project)
        .expect("the project is the pack's");
    let task = loaded.task("owner__p-1").expect("task");
    assert_eq!(task.kind(), TaskKind::Repo);
    assert_eq!(task.base_commit(), Some(first.as_str()));
    assert_eq!(task.test_command(), Some("python3 -m unittest"));
    assert!(
        task.meta.environment_key.is_some(),
        "the base's key is recorded"
    );
    assert_eq!(
        task.meta.committed_at.as_deref(),
        Some("2023-05-01T12:00:00Z")
    );
    // Field by field into the files.
    let dir = out.join("tasks/owner__p-1");
    let read = |rel: &str| std::fs::read_to_string(dir.join(rel)).expect(rel);
    assert_eq!(read("instruction.md"), originals[0]["problem_statement"]);
    assert_eq!(read("tests/test.patch"), originals[0]["test_patch"]);
    assert_eq!(read("solution/gold.patch"), originals[0]["patch"]);
    let lists: Value = serde_json::from_str(&read("tests/tests.json")).expect("json");
    assert_eq!(
        lists,
        serde_json::json!({"FAIL_TO_PASS": ["tests.test_x.T.test_x"], "PASS_TO_PASS": []})
    );
    let script = read("tests/test.sh");
    assert!(script.contains("\npython3 -m unittest\n"), "{script}");
    assert!(
        std::fs::metadata(dir.join("tests/test.sh"))
            .expect("meta")
            .permissions()
            .mode()
            & 0o111
            != 0
    );
    let summary = pack::summarize(&loaded, Some(&project));
    assert!(
        summary.tasks.iter().all(|t| t.runnable),
        "{:?}",
        summary.tasks
    );
    let weird = summary.tasks.iter().find(|t| t.id == "owner-p-2-weird-id");
    assert_eq!(weird.map(|t| t.fail_to_pass), Some(2));

    // And back: the same instances, every field.
    let jsonl = tmp.path().join("back.jsonl");
    export(&loaded, ExportFormat::Swebench, &jsonl).expect("exports");
    let back: Vec<Value> = std::fs::read_to_string(&jsonl)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    // A pack's tasks are in the order of their ids.
    let mut originals: Vec<Value> = originals.into_iter().map(Value::Object).collect();
    let by_id = |v: &Value| v["instance_id"].as_str().unwrap_or("").to_string();
    originals.sort_by_key(|v| pack::TaskId::sanitize(&by_id(v), &Default::default()));
    assert_eq!(back, originals);

    // The exported instances import again into the same tasks.
    let again = tmp.path().join("again");
    import(
        &jsonl,
        &ImportOptions {
            out: again.clone(),
            project: Some(project.clone()),
            ..ImportOptions::default()
        },
    )
    .expect("imports again");
    assert_eq!(tree(&again.join("tasks")), tree(&out.join("tasks")));
}

#[test]
fn a_base_the_project_lacks_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (project, first, _) = project(tmp.path());
    let absent = "0123456789abcdef0123456789abcdef01234567";
    let originals = instances(&first, absent);
    let source = tmp.path().join("instances.json");
    write(
        &source,
        &serde_json::to_string(&originals).expect("json array"),
    );
    let out = tmp.path().join("pack");
    let err = import(
        &source,
        &ImportOptions {
            out: out.clone(),
            project: Some(project.clone()),
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    let message = err.to_string();
    assert!(
        message.contains(absent) && message.contains("git fetch") && message.contains("item 2"),
        "{message}"
    );
    assert!(!out.exists());

    // Without a project, it says to give one.
    let err = import(
        &source,
        &ImportOptions {
            out: out.clone(),
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    assert!(err.to_string().contains("--project"), "{err}");

    // A bad instance after good ones: nothing half-written beside --out.
    let mut bad = instances(&first, &first);
    bad[1].insert("FAIL_TO_PASS".into(), Value::String("not a list".into()));
    write(&source, &serde_json::to_string(&bad).expect("json"));
    let err = import(
        &source,
        &ImportOptions {
            out: out.clone(),
            project: Some(project),
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    assert!(err.to_string().contains("FAIL_TO_PASS"), "{err}");
    assert!(!out.exists());
    let leftovers: Vec<String> = std::fs::read_dir(tmp.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".arena"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A minimal valid pack with one Harbor task; returns its folder.
fn small_pack(tmp: &Path) -> PathBuf {
    let dir = tmp.join("pack");
    write(&dir.join("pack.toml"), "name = \"small\"\n");
    harbor_task(&dir.join("tasks/hello"));
    Pack::load(&dir).expect("the small pack loads");
    dir
}

fn refused(dir: &Path) -> String {
    match Pack::load(dir) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => {
            assert!(e.is_user_error(), "{e:?}");
            e.to_string()
        }
    }
}

#[test]
fn hostile_packs_are_refused_naming_the_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let secret = tmp.path().join("secret.txt");
    write(&secret, "the fix\n");

    // An instruction that is a link out of the pack.
    let dir = small_pack(&tmp.path().join("a"));
    let instruction = dir.join("tasks/hello/instruction.md");
    std::fs::remove_file(&instruction).expect("rm");
    std::os::unix::fs::symlink(&secret, &instruction).expect("link");
    let message = refused(&dir);
    assert!(
        message.contains("instruction.md") && message.contains("symbolic link"),
        "{message}"
    );

    // A tests/ folder that is a link (the verifier would bind what it points to).
    let dir = small_pack(&tmp.path().join("b"));
    let tests = dir.join("tasks/hello/tests");
    std::fs::remove_dir_all(&tests).expect("rm");
    std::os::unix::fs::symlink(tmp.path(), &tests).expect("link");
    assert!(refused(&dir).contains("symbolic link"));

    // The tasks folder itself a link.
    let dir = small_pack(&tmp.path().join("c"));
    std::fs::rename(dir.join("tasks"), tmp.path().join("elsewhere")).expect("mv");
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), dir.join("tasks")).expect("link");
    assert!(refused(&dir).contains("symbolic link"));

    // pack.toml a link.
    let dir = small_pack(&tmp.path().join("d"));
    std::fs::remove_file(dir.join("pack.toml")).expect("rm");
    write(&tmp.path().join("other.toml"), "name = \"x\"\n");
    std::os::unix::fs::symlink(tmp.path().join("other.toml"), dir.join("pack.toml")).expect("link");
    assert!(refused(&dir).contains("pack.toml"));

    // A pipe in tests/ (opening it would hang a reader).
    let dir = small_pack(&tmp.path().join("e"));
    let fifo = dir.join("tasks/hello/tests/pipe");
    let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("cstring");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    assert!(refused(&dir).contains("pipe"));

    // A task folder whose name is not a safe id.
    for (n, bad) in [".hidden", "a b", "-rf"].into_iter().enumerate() {
        let dir = small_pack(&tmp.path().join(format!("f{n}")));
        std::fs::rename(dir.join("tasks/hello"), dir.join("tasks").join(bad)).expect("mv");
        let message = refused(&dir);
        assert!(message.contains("rename the folder"), "{message}");
    }

    // An instruction too large to be one.
    let dir = small_pack(&tmp.path().join("g"));
    write(&instruction_of(&dir), &"x".repeat((1 << 20) + 1));
    let message = refused(&dir);
    assert!(
        message.contains("instruction.md") && message.contains("larger than"),
        "{message}"
    );

    // Not UTF-8.
    let dir = small_pack(&tmp.path().join("h"));
    std::fs::write(instruction_of(&dir), [0xff, 0xfe, 0x00]).expect("write");
    assert!(refused(&dir).contains("UTF-8"));

    // A task.toml that does not parse, and a wrong [metadata.arena].
    let dir = small_pack(&tmp.path().join("i"));
    write(&dir.join("tasks/hello/task.toml"), "[verifier\n");
    let message = refused(&dir);
    assert!(message.contains("tasks/hello/task.toml"), "{message}");
    write(
        &dir.join("tasks/hello/task.toml"),
        "[metadata.arena]\nkind = \"repo\"\nbase_commit = \"HEAD~1\"\ntest_command = \"x\"\n",
    );
    assert!(refused(&dir).contains("base_commit must be a full commit id"));

    // A bundle named outside the pack.
    let dir = small_pack(&tmp.path().join("j"));
    write(
        &dir.join("pack.toml"),
        "name = \"x\"\n[repository]\nroots = [\"0123456789abcdef0123456789abcdef01234567\"]\nbundle = \"../../secret.txt\"\n",
    );
    assert!(refused(&dir).contains("bundle"));

    // A tests.json that is not lists.
    let dir = small_pack(&tmp.path().join("k"));
    write(
        &dir.join("tasks/hello/tests/tests.json"),
        "{\"FAIL_TO_PASS\": \"x\"}",
    );
    assert!(refused(&dir).contains("tests.json"));

    // Import refuses a link as its source, and an --out that exists.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&secret, &link).expect("link");
    let err = import(
        &link,
        &ImportOptions {
            out: tmp.path().join("never"),
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    assert!(matches!(err, PackError::Refused { .. }), "{err}");
    let source = tmp.path().join("task-src");
    harbor_task(&source);
    let err = import(
        &source,
        &ImportOptions {
            out: secret.clone(),
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    assert!(err.to_string().contains("exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&secret).expect("read"), "the fix\n");

    // A Harbor task whose tests/ holds a link out of it: not imported.
    let linked = tmp.path().join("linked-task");
    harbor_task(&linked);
    std::os::unix::fs::symlink(&secret, linked.join("tests/expected.txt")).expect("link");
    let out = tmp.path().join("never2");
    let err = import(
        &linked,
        &ImportOptions {
            out: out.clone(),
            ..ImportOptions::default()
        },
    )
    .expect_err("refused");
    assert!(err.to_string().contains("tests/expected.txt"), "{err}");
    assert!(!out.exists());
}

#[test]
fn a_clone_of_another_repository_is_not_taken_for_the_pack_s() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample");
    let loaded = Pack::load(&sample).expect("loads");
    let tmp = tempfile::tempdir().expect("tmp");
    let (other, _, _) = project(tmp.path());
    let err = materialize_project(&loaded, Some(&other)).expect_err("refused");
    assert!(
        err.to_string().contains("not the pack's repository"),
        "{err}"
    );
    let err = loaded.check_project(&other).expect_err("refused");
    assert!(err.to_string().contains("root commit"), "{err}");
    // A pack without a bundle says to give the project.
    let dir = small_pack(tmp.path());
    let err = materialize_project(
        &Pack::load(&dir).expect("loads"),
        Some(&tmp.path().join("x")),
    )
    .expect_err("no bundle");
    assert!(err.to_string().contains("--project"), "{err}");
}

fn instruction_of(pack: &Path) -> PathBuf {
    pack.join("tasks/hello/instruction.md")
}

/// The fenced blocks of docs/packs.md marked with the file they are
/// (```toml file=pack.toml).
fn docs_files() -> Vec<(String, String)> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/packs.md");
    let text = std::fs::read_to_string(&docs).expect("docs/packs.md");
    let mut files = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        match &mut current {
            None => {
                if let Some(rest) = line.strip_prefix("```") {
                    if let Some(name) = rest
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("file="))
                    {
                        current = Some((name.to_string(), String::new()));
                    }
                }
            }
            Some((name, body)) => {
                if line == "```" {
                    files.push((name.clone(), std::mem::take(body)));
                    current = None;
                } else {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    files
}

#[test]
fn the_example_in_docs_packs_md_loads_and_round_trips() {
    let files = docs_files();
    assert!(
        files.len() >= 6,
        "docs/packs.md's example has its files: {files:?}"
    );
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("example");
    for (name, body) in &files {
        let path = dir.join(name);
        write(&path, body);
        if name.ends_with(".sh") {
            executable(&path);
        }
    }
    let loaded = Pack::load(&dir).expect("the example loads");
    assert!(!loaded.tasks.is_empty());
    let repo = loaded
        .tasks
        .iter()
        .find(|t| t.kind() == TaskKind::Repo)
        .expect("a repo-native task");
    assert!(repo.defect().is_none(), "{:?}", repo.defect());
    assert!(matches!(repo.solution, Solution::GoldPatch(_)));
    assert!(repo.test_patch.is_some());

    let harbor = tmp.path().join("harbor");
    export(&loaded, ExportFormat::Harbor, &harbor).expect("exports");
    assert_eq!(tree(&harbor), tree(&dir.join("tasks")), "byte for byte");

    let jsonl = tmp.path().join("x.jsonl");
    let report = export(&loaded, ExportFormat::Swebench, &jsonl).expect("exports");
    assert!(report.exported.contains(&repo.id.to_string()));
    let line = std::fs::read_to_string(&jsonl).expect("read");
    let instance: Map<String, Value> =
        serde_json::from_str(line.lines().next().expect("a line")).expect("json");
    let content = pack::task_from_instance(
        "docs",
        &instance,
        repo.test_command().expect("command"),
        &Default::default(),
    )
    .expect("maps back");
    assert_eq!(content.instruction, repo.instruction);
    assert_eq!(Some(&content.lists), repo.lists.as_ref());
    assert_eq!(content.meta.base_commit, repo.meta.base_commit);
}

fn python(dir: &Path, args: &[&str]) -> bool {
    Command::new("python3")
        .args(args)
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs")
        .status
        .success()
}

fn apply(dir: &Path, patch: &str) {
    let file = dir.join("../change.patch");
    std::fs::write(&file, patch).expect("write");
    git(
        dir,
        &["apply", "--whitespace=nowarn", &file.to_string_lossy()],
    );
}

#[test]
fn the_sample_pack_agrees_with_its_bundle_and_its_tests_run() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample");
    let loaded = Pack::load(&sample).expect("the sample pack loads");
    assert!(loaded.tasks.len() >= 3);
    let tmp = tempfile::tempdir().expect("tmp");
    let project = materialize_project(&loaded, Some(&tmp.path().join("repo"))).expect("clones");
    // Once: the second call finds the clone.
    let again = materialize_project(&loaded, Some(&tmp.path().join("repo"))).expect("found");
    assert_eq!(project, again);
    loaded
        .check_project(&project)
        .expect("the bundle is the pack's repository");
    let summary = pack::summarize(&loaded, None);
    assert!(
        summary.tasks.iter().all(|t| t.runnable),
        "{:?}",
        summary.tasks
    );

    for task in &loaded.tasks {
        let base = task.base_commit().expect("a base");
        let lists = task.lists.clone().expect("tests.json");
        let Solution::GoldPatch(gold) = &task.solution else {
            panic!("{} has no gold.patch", task.id)
        };
        let test_patch = task.test_patch.clone().expect("test.patch");
        let work = tmp.path().join(format!("work-{}", task.id)).join("tree");
        std::fs::create_dir_all(work.parent().expect("parent")).expect("mkdir");
        git(
            tmp.path(),
            &[
                "clone",
                "-q",
                &project.to_string_lossy(),
                &work.to_string_lossy(),
            ],
        );
        git(&work, &["checkout", "-q", base]);
        apply(&work, &test_patch);
        for t in &lists.fail_to_pass {
            assert!(
                !python(&work, &["-m", "unittest", t]),
                "{}: {t} passes on the base",
                task.id
            );
        }
        for t in &lists.pass_to_pass {
            assert!(
                python(&work, &["-m", "unittest", t]),
                "{}: {t} fails on the base",
                task.id
            );
        }
        // The verifier says 0 on the base.
        let logs = work.parent().expect("parent").join("logs");
        let verify = |logs: &Path| {
            Command::new("sh")
                .arg(task.tests_dir().join("test.sh"))
                .current_dir(&work)
                .env("ARENA_VERIFIER_LOGS", logs)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .output()
                .expect("test.sh runs");
            std::fs::read_to_string(logs.join("reward.txt")).expect("reward.txt")
        };
        assert_eq!(verify(&logs), "0\n", "{}", task.id);
        apply(&work, gold);
        for t in lists.fail_to_pass.iter().chain(&lists.pass_to_pass) {
            assert!(
                python(&work, &["-m", "unittest", t]),
                "{}: {t} fails with the gold patch",
                task.id
            );
        }
        let logs = logs.with_file_name("logs-gold");
        assert_eq!(verify(&logs), "1\n", "{}", task.id);
        let reward: Value =
            serde_json::from_str(&std::fs::read_to_string(logs.join("reward.json")).expect("json"))
                .expect("reward.json");
        assert_eq!(reward["reward"], 1);
    }
}
