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
/// (`ARENA_PROJECTS_DIR`, or the repository's), without `..` (a jail
/// binds real paths, and Go's `GOMODCACHE` must name one).
fn projects() -> PathBuf {
    let dir = std::env::var_os("ARENA_PROJECTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/projects"));
    dir.canonicalize().unwrap_or(dir)
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

// Benchmarks (ignored; scripts/bench-environment.sh runs them) ------------

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn rounds() -> usize {
    std::env::var("ARENA_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5)
}

/// Seconds `cmd` (a shell line) took in `dir`; it must succeed.
fn timed(dir: &Path, cmd: &str) -> f64 {
    let start = std::time::Instant::now();
    let out = std::process::Command::new("sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd}: {out:?}");
    start.elapsed().as_secs_f64()
}

/// (a) A warm Rust check after a one-line change (the check's own
/// duration, in its jail, on a fresh tree over the user's warm `target/`)
/// against the user's own incremental `cargo test --offline` of the same
/// change, round by round.
#[tokio::test]
#[ignore = "a benchmark: scripts/bench-environment.sh"]
async fn bench_a_warm_rust_check_against_the_users_own_cargo_test() {
    if !ready() {
        return;
    }
    let (_dir, root) = copy("rust");
    let mut h = Harness::new().await;
    // A battle has two contestants: the second changes nothing and takes
    // its time, so its check (which builds the crate on its own tree) does
    // not share the two cores with the first's, which is measured.
    configure(&mut h, RUST_FIX, "sleep 10");
    let revert = "sed -i 's/count()$/count() + 1/' src/lib.rs";
    let (mut check, mut own) = (Vec::new(), Vec::new());
    for round in 0..rounds() {
        let b = run_coding(
            &h,
            &root,
            &["fake@m1", "fake@m2"],
            Some("cargo test --offline"),
        )
        .await;
        let result = b.contestants[0].check.clone().expect("a check");
        assert!(result.passed, "{result:?}");
        assert!(
            !result.output_tail.contains("Compiling regex"),
            "{result:?}"
        );
        check.push(result.duration_ms as f64 / 1000.0);
        if round == 0 {
            eprintln!("the check's output: {}", result.output_tail);
        }
        // The user's own: the change, its tests, then back to the base
        // (built again, untimed, so target/ is warm at the base again).
        timed(&root, RUST_FIX);
        own.push(timed(&root, "cargo test --offline -q >/dev/null 2>&1"));
        timed(&root, revert);
        timed(&root, "cargo test --offline -q >/dev/null 2>&1 || true");
        eprintln!(
            "round {round}: check in the jail {:.2} s, the user's own {:.2} s",
            check[round], own[round]
        );
    }
    let ratios: Vec<f64> = check.iter().zip(&own).map(|(c, o)| c / o).collect();
    println!(
        "BENCH warm rust check: jail median {:.2} s, user's own median {:.2} s, ratio median {:.2} (min {:.2}, max {:.2}) over {} rounds",
        median(check.clone()),
        median(own.clone()),
        median(ratios.clone()),
        ratios.iter().cloned().fold(f64::INFINITY, f64::min),
        ratios.iter().cloned().fold(0.0, f64::max),
        ratios.len()
    );
}

/// A `node_modules` of about 300 MB: the Node project's real packages,
/// copied until it is that big (made once, kept in the target folder).
fn big_node_modules() -> PathBuf {
    let big = Path::new(env!("CARGO_TARGET_TMPDIR")).join("environment-bench/node_modules");
    let stamp = big.with_file_name("made");
    if !stamp.is_file() {
        let _ = std::fs::remove_dir_all(&big);
        std::fs::create_dir_all(&big).unwrap();
        let from = projects().join("node/node_modules");
        let mut copies = 0;
        while arena_core::agent::environment::size(&big, 10_000_000).unwrap_or(0) < 300 << 20 {
            let to = big.join(format!("copy-{copies}"));
            run(
                Path::new("/"),
                "cp",
                &["-a", &from.display().to_string(), &to.display().to_string()],
            );
            copies += 1;
        }
        std::fs::write(&stamp, "").unwrap();
    }
    big
}

/// (b) Setting up the environment for one contestant over a 300 MB
/// `node_modules`: a jail's start (`/bin/true`) with the folder as an
/// overlay against the same jail without it, and the disk its layer takes.
#[test]
#[ignore = "a benchmark: scripts/bench-environment.sh"]
fn bench_b_environment_setup_over_a_300_mb_node_modules() {
    use arena_core::agent::environment::Layer;
    use arena_core::agent::jail::{Jail, Network};
    use std::os::unix::process::CommandExt;
    if !ready() {
        return;
    }
    let lower = big_node_modules();
    let bytes = arena_core::agent::environment::size(&lower, 10_000_000).unwrap();
    let dir = tempfile::tempdir_in(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("node_modules")).unwrap();
    let start = |with_layer: bool, round: usize| -> (f64, Option<PathBuf>) {
        let state = dir.path().join(format!("layers/{round}"));
        let jail = Jail {
            read: Vec::new(),
            write: vec![tree.clone()],
            protect: Vec::new(),
            cwd: tree.clone(),
            network: Network::None,
            tmp_bytes: arena_core::agent::jail::TMP_BYTES,
            layers: if with_layer {
                vec![Layer {
                    lower: lower.clone(),
                    at: tree.join("node_modules"),
                    state: Some(state.clone()),
                }]
            } else {
                Vec::new()
            },
            links: Vec::new(),
            tree_at: None,
        };
        let began = std::time::Instant::now();
        let prepared = jail
            .command(
                Path::new("/bin/sh"),
                &["-c".into(), "test -d node_modules/copy-0 || exit 3".into()],
            )
            .unwrap();
        let mut cmd = std::process::Command::new(&prepared.program);
        cmd.args(&prepared.args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        // SAFETY: as the jail asks: async-signal-safe calls on descriptors
        // `prepared` keeps open until the child is spawned.
        unsafe {
            cmd.pre_exec(prepared.pre_exec());
        }
        let status = cmd.status().unwrap();
        let took = began.elapsed().as_secs_f64();
        if with_layer {
            assert!(status.success(), "the layer was not there: {status}");
        }
        (took, with_layer.then_some(state))
    };
    // One of each first, not counted: the machine's one trial overlay
    // (whether copy-on-write works here) and the first reads of the folder.
    start(false, usize::MAX);
    start(true, usize::MAX);
    let (mut with, mut without, mut disk) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds().max(10) {
        without.push(start(false, round).0);
        let (took, state) = start(true, round);
        with.push(took);
        let state = state.unwrap();
        let du = std::process::Command::new("du")
            .args(["-sk", &state.display().to_string()])
            .output()
            .unwrap();
        let kib: f64 = String::from_utf8_lossy(&du.stdout)
            .split_whitespace()
            .next()
            .and_then(|k| k.parse().ok())
            .unwrap();
        disk.push(kib);
    }
    let extra: Vec<f64> = with.iter().zip(&without).map(|(w, o)| w - o).collect();
    println!(
        "BENCH environment setup over node_modules of {} MB: jail start with the layer median {:.0} ms, without {:.0} ms, the layer's cost median {:.0} ms (max {:.0} ms); its disk {} KiB (max) over {} rounds",
        bytes >> 20,
        median(with.clone()) * 1000.0,
        median(without.clone()) * 1000.0,
        median(extra.clone()) * 1000.0,
        extra.iter().cloned().fold(0.0, f64::max) * 1000.0,
        disk.iter().cloned().fold(0.0, f64::max),
        with.len()
    );
}
