//! Real projects in the jail (issue 38's acceptance): a Node project
//! (`is-odd`, tested with vitest), a Python one (a `.venv` with pytest,
//! attrs and the pytest-timeout plugin), a Rust crate on `regex` with a warm
//! `target/`, and a Go module on go-cmp, each installed from the package
//! registries the way its users install it (`scripts/projects.sh`, into
//! `.peers/projects`). On each, a Coding battle whose two contestants (a
//! `[[backend]]` script) fix the project's one-line bug, run its tests
//! while they work, and whose checks (the project's own test command,
//! relative to its root) pass, offline, in the jail; the user's dependency
//! folders hash the same before and after; a contestant that deletes
//! `node_modules` or corrupts `.venv` harms only itself.
//!
//! Without `.peers/projects` the tests are skipped, saying why, unless
//! `ARENA_REQUIRE_PEERS=1` (as `scripts/test.sh` sets it), where they fail.

mod common;

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use arena_core::battle::ContestantStatus;
use arena_core::config::CustomBackend;
use arena_core::Battle;
use arena_testserver::ModelScript;
use common::*;

/// The projects made by `scripts/projects.sh`.
fn projects() -> PathBuf {
    std::env::var_os("ARENA_PROJECTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/projects"))
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(".peers/projects (missing)"))
}

/// Go's module cache of the projects': `GOMODCACHE` for every test of
/// this file (set once, before any engine of theirs starts), as a user's
/// shell would have it.
fn go_module_cache() -> &'static Path {
    static CACHE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| {
        let cache = projects().join("go-mod");
        // SAFETY: set once, while every other test of this file waits on
        // this lock before it starts anything.
        unsafe { std::env::set_var("GOMODCACHE", &cache) };
        cache
    })
}

/// The jail, overlays and the projects are here; otherwise the test is
/// skipped, saying why (or fails, where the run requires them).
fn ready() -> bool {
    go_module_cache();
    let made = projects().join("made.stamp");
    if !made.is_file() {
        assert!(
            std::env::var("ARENA_REQUIRE_PEERS").as_deref() != Ok("1"),
            "ARENA_REQUIRE_PEERS=1 but {} is missing: run scripts/projects.sh",
            made.display()
        );
        eprintln!(
            "skipped: no real projects ({} missing; run scripts/projects.sh)",
            made.display()
        );
        return false;
    }
    match (
        arena_core::agent::jail::jail_info(),
        arena_core::agent::environment::copy_on_write(),
    ) {
        (Ok(_), Ok(_)) => true,
        (jail, cow) => {
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail or no overlays: {jail:?} {cow:?}"
            );
            eprintln!("skipped: {jail:?} {cow:?}");
            false
        }
    }
}

/// A copy of the project `name` (`cp -a`, so the cache stays clean) in a
/// folder outside `/tmp`, as a user's project is.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("environment");
    std::fs::create_dir_all(&parent).unwrap();
    let dir = tempfile::tempdir_in(&parent).unwrap();
    run(
        Path::new("/"),
        "cp",
        &[
            "-a",
            &projects().join(name).display().to_string(),
            &dir.path().display().to_string(),
        ],
    );
    let root = dir.path().join(name);
    (dir, root)
}

/// The Python project, with a `.venv` of its own made at the copy's place
/// the way its user makes one (a virtualenv's scripts name its path, so the
/// cached one cannot move): `python3 -m venv`, then pip, offline, from the
/// wheels the script downloaded.
fn python_project() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = copy("python");
    std::fs::remove_dir_all(root.join(".venv")).unwrap();
    run(&root, "python3", &["-m", "venv", ".venv"]);
    let wheels = projects().join("python-wheels");
    run(
        &root,
        ".venv/bin/pip",
        &[
            "install",
            "-q",
            "--no-index",
            "--find-links",
            &wheels.display().to_string(),
            "pytest",
            "attrs",
            "pytest-timeout",
        ],
    );
    (dir, root)
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let out = std::process::Command::new(if program.starts_with(".venv") {
        dir.join(program)
    } else {
        PathBuf::from(program)
    })
    .args(args)
    .current_dir(dir)
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file, folder and link under `root`: its path, kind, mode and a
/// hash of its content (a link's target, as a link).
fn hashes(root: &Path) -> BTreeMap<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let mode = meta.permissions().mode();
            let what = if meta.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                stack.push(path);
                format!("dir {mode:o}")
            } else {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&path).unwrap().hash(&mut h);
                format!("file {mode:o} {} {:016x}", meta.len(), h.finish())
            };
            out.insert(rel, what);
        }
    }
    out
}

/// `after` is `before`, or the first differences.
fn assert_same(what: &Path, before: &BTreeMap<PathBuf, String>, after: &BTreeMap<PathBuf, String>) {
    let changed: Vec<_> = before
        .iter()
        .filter(|(p, h)| after.get(*p) != Some(h))
        .map(|(p, _)| format!("changed or gone: {}", p.display()))
        .chain(
            after
                .keys()
                .filter(|p| !before.contains_key(*p))
                .map(|p| format!("new: {}", p.display())),
        )
        .take(10)
        .collect();
    assert!(
        changed.is_empty(),
        "{} changed: {changed:#?}",
        what.display()
    );
    assert!(!before.is_empty(), "{} was empty", what.display());
}

/// Two contestants of the `[[backend]]` script: `m1` runs `first`, `m2`
/// runs `second`, each in its tree.
fn configure(h: &mut Harness, first: &str, second: &str) {
    let script = format!("case \"$PWD\" in *m1*) {first} ;; *) {second} ;; esac; echo done");
    let command = vec![
        "bash".into(),
        "-c".into(),
        script,
        "agent".into(),
        "{prompt}".into(),
    ];
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command,
        }];
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
}

/// The fix, then the project's tests during the agent's own run: their
/// output and exit status in files of its tree.
fn fix_and_test(fix: &str, test: &str) -> String {
    format!("{fix}; {test} > agent-tests.txt 2>&1; echo $? > agent-tests-exit.txt")
}

/// The exit status the agent's own test run wrote.
fn agent_tests_exit(b: &Battle, i: usize) -> (String, String) {
    let wt = b.contestants[i].worktree.clone().expect("a worktree");
    let exit = std::fs::read_to_string(wt.join("agent-tests-exit.txt"))
        .unwrap_or_else(|e| format!("no exit status: {e}"));
    let out = std::fs::read_to_string(wt.join("agent-tests.txt")).unwrap_or_default();
    (exit.trim().to_string(), out)
}

/// The contestant's check passed; its output.
fn passed(b: &Battle, i: usize) -> String {
    let c = &b.contestants[i];
    assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
    let check = c.check.clone().expect("a check");
    assert!(check.passed, "contestant {i}'s check failed: {check:?}");
    check.output_tail
}

/// A battle of two contestants that both fix the bug and run the tests
/// themselves; both checks pass and the user's `folders` hash the same.
async fn both_fix(name: &str, root: &Path, folders: &[&Path], fix: &str, test: &str) -> Battle {
    let mut h = Harness::new().await;
    let before: Vec<_> = folders.iter().map(|f| hashes(f)).collect();
    let both = fix_and_test(fix, test);
    configure(&mut h, &both, &both);
    let b = run_coding(&h, root, &["fake@m1", "fake@m2"], Some(test)).await;
    for i in 0..2 {
        let out = passed(&b, i);
        eprintln!("{name} check {i}: {out}");
        let (exit, agent_out) = agent_tests_exit(&b, i);
        assert_eq!(
            exit, "0",
            "{name}: contestant {i}'s own `{test}` failed: {agent_out}"
        );
    }
    for (folder, before) in folders.iter().zip(&before) {
        assert_same(folder, before, &hashes(folder));
    }
    b
}

const NODE_FIX: &str = "sed -i 's/=> isOdd(n)/=> !isOdd(n)/' index.js";
const PYTHON_FIX: &str =
    "sed -i 's/abs(self.x) - abs(self.y)/abs(self.x) + abs(self.y)/' shapes.py";
const RUST_FIX: &str = "sed -i 's/count() + 1/count()/' src/lib.rs";
const GO_FIX: &str = "sed -i 's/return fields\\[:len(fields)-1\\]/return fields/' words.go";
const GO_TEST: &str = "GOFLAGS=-mod=mod GOPROXY=off go test ./...";

#[tokio::test]
async fn node_with_is_odd_and_vitest_passes_npm_test_in_the_jail() {
    if !ready() {
        return;
    }
    let (_dir, root) = copy("node");
    let b = both_fix(
        "node",
        &root,
        &[&root.join("node_modules")],
        NODE_FIX,
        "npm test",
    )
    .await;
    let out = passed(&b, 0);
    assert!(out.contains("1 passed"), "{out}");
}

#[tokio::test]
async fn python_with_a_venv_and_a_plugin_passes_pytest_in_the_jail() {
    if !ready() {
        return;
    }
    let (_dir, root) = python_project();
    let b = both_fix(
        "python",
        &root,
        &[&root.join(".venv")],
        PYTHON_FIX,
        ".venv/bin/pytest -q",
    )
    .await;
    let out = passed(&b, 1);
    assert!(out.contains("1 passed"), "{out}");
}

/// The check after a one-line change builds the crate, not its
/// dependencies: `target/` stays warm.
#[tokio::test]
async fn rust_with_regex_passes_cargo_test_offline_on_a_warm_target() {
    if !ready() {
        return;
    }
    let (_dir, root) = copy("rust");
    let b = both_fix(
        "rust",
        &root,
        &[&root.join("target")],
        RUST_FIX,
        "cargo test --offline",
    )
    .await;
    for i in 0..2 {
        let out = passed(&b, i);
        assert!(out.contains("test result: ok. 1 passed"), "{out}");
        assert!(
            !out.contains("Compiling regex") && !out.contains("Compiling memchr"),
            "the dependencies were built again: {out}"
        );
        let (_, agent_out) = agent_tests_exit(&b, i);
        assert!(!agent_out.contains("Compiling regex"), "{agent_out}");
    }
}

#[tokio::test]
async fn go_with_a_module_dependency_passes_go_test_offline_in_the_jail() {
    if !ready() {
        return;
    }
    let (_dir, root) = copy("go");
    let cache = go_module_cache().to_path_buf();
    let b = both_fix("go", &root, &[&cache], GO_FIX, GO_TEST).await;
    let out = passed(&b, 0);
    assert!(out.contains("ok"), "{out}");
}

/// One contestant deletes `node_modules` while it works: its own tests
/// fail then; the other contestant's run and check, and the user's
/// folder, are untouched.
#[tokio::test]
async fn a_contestant_that_deletes_node_modules_harms_only_itself() {
    if !ready() {
        return;
    }
    let (_dir, root) = copy("node");
    let modules = root.join("node_modules");
    let before = hashes(&modules);
    let mut h = Harness::new().await;
    let wrecker = fix_and_test(&format!("{NODE_FIX}; rm -rf node_modules"), "npm test");
    configure(&mut h, &wrecker, &fix_and_test(NODE_FIX, "npm test"));
    let b = run_coding(&h, &root, &["fake@m1", "fake@m2"], Some("npm test")).await;
    let (exit, out) = agent_tests_exit(&b, 0);
    assert_ne!(
        exit, "0",
        "the wrecker's tests ran without node_modules: {out}"
    );
    let (exit, out) = agent_tests_exit(&b, 1);
    assert_eq!(exit, "0", "{out}");
    passed(&b, 1);
    // Its check runs on the environment as the user left it.
    passed(&b, 0);
    assert_same(&modules, &before, &hashes(&modules));
}

/// One contestant corrupts `.venv`: garbage through and over its
/// `bin/python` and over a module of `site-packages`. Its own tests fail;
/// the other contestant's pass, and the user's `.venv` and the
/// interpreter it links to are unchanged.
#[tokio::test]
async fn a_contestant_that_corrupts_the_venv_harms_only_itself() {
    if !ready() {
        return;
    }
    let (_dir, root) = python_project();
    let venv = root.join(".venv");
    let interpreter = std::fs::canonicalize(venv.join("bin/python")).unwrap();
    let interpreter_before = hashes(interpreter.parent().unwrap());
    let before = hashes(&venv);
    let mut h = Harness::new().await;
    let corrupt = format!(
        "{PYTHON_FIX}; echo garbage > .venv/bin/python 2>/dev/null; \
         rm -f .venv/bin/python; printf 'garbage' > .venv/bin/python; chmod +x .venv/bin/python; \
         for f in .venv/lib/python3*/site-packages/attr/__init__.py; do echo garbage > \"$f\"; done"
    );
    let test = ".venv/bin/pytest -q";
    configure(
        &mut h,
        &fix_and_test(&corrupt, test),
        &fix_and_test(PYTHON_FIX, test),
    );
    let b = run_coding(&h, &root, &["fake@m1", "fake@m2"], Some(test)).await;
    let (exit, out) = agent_tests_exit(&b, 0);
    assert_ne!(exit, "0", "the corrupted venv still ran the tests: {out}");
    let (exit, out) = agent_tests_exit(&b, 1);
    assert_eq!(exit, "0", "{out}");
    let out = passed(&b, 1);
    assert!(out.contains("1 passed"), "{out}");
    passed(&b, 0);
    assert_same(&venv, &before, &hashes(&venv));
    assert_same(
        interpreter.parent().unwrap(),
        &interpreter_before,
        &hashes(interpreter.parent().unwrap()),
    );
}
