//! The verifier judges what would be applied, after the agent is gone
//! (issue 40): real pytest, real agents (`[[backend]]` scripts) in the real
//! jail, a sealed base. A correct fix resolves the task; no fix does not;
//! no spoof resolves it — fake `PASSED` lines, a `conftest.py` that marks
//! everything passed, the runner's configuration loading a plugin that
//! does the same, replaced and deleted tests, fake reports in the agent's
//! tree, a report swapped for a link at exit; a change that breaks the
//! module, ends the runner before it reports or hangs it fails the task
//! (the tests run and report on the base). A suite that never starts and a
//! suite that runs past its time on the base too are errors of the run.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use arena_core::battle::{BattleRequest, BattleType, ContestantSpec, ContestantStatus};
use arena_core::config::CustomBackend;
use arena_core::test_report::{Outcome, TestLists};
use arena_core::{Battle, Contestant, VerifyTask};
use arena_testserver::ModelScript;
use common::*;

/// The peers' virtualenv's Python, when it has pytest (scripts/peers.sh
/// makes it).
fn pytest_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let python = arena_core::agent::sandbox::lexical(&python);
    let has = std::process::Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(
            std::env::var_os("ARENA_REQUIRE_PEERS").is_none(),
            "no pytest in {} (scripts/peers.sh installs it)",
            python.display()
        );
        eprintln!("skipped: no pytest in {}", python.display());
        return None;
    }
    Some(python)
}

/// The jail's inner layer and the apply-first step are Arena's own binary
/// (`__arena_confine`, `__arena_apply`), as in the app and the CLI: the
/// workspace's `arena` when it is built (`ARENA_BIN` names another), so
/// the verifier's tree is an overlay of the base tree with the change and
/// the test patch applied inside the jail. Without one, the verifier's
/// tree is a fresh checkout.
fn use_arena_binary() {
    let arena = std::env::var_os("ARENA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/arena"));
    let arena = arena_core::agent::sandbox::lexical(&arena);
    if arena.is_file() {
        arena_core::agent::jail::set_confiner(arena);
    } else {
        eprintln!(
            "no {}: the verifier's tree is a fresh checkout",
            arena.display()
        );
    }
}

fn jail_ready() -> bool {
    use_arena_binary();
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

const CALC: &str =
    "def add(a, b):\n    return a - b  # add\n\n\ndef sub(a, b):\n    return a - b\n";

/// The base: a calculator whose `add` is wrong, a test of `sub`, another
/// test file. Outside /tmp, as a user's project is.
fn project() -> tempfile::TempDir {
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verify");
    std::fs::create_dir_all(&parent).unwrap();
    let dir = tempfile::tempdir_in(&parent).unwrap();
    let p = dir.path();
    git(p, &["init", "-q", "-b", "main"]);
    git(p, &["config", "user.email", "arena@example.invalid"]);
    git(p, &["config", "user.name", "Arena Test"]);
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::create_dir_all(p.join("tests")).unwrap();
    std::fs::write(p.join("src/__init__.py"), "").unwrap();
    std::fs::write(p.join("src/calc.py"), CALC).unwrap();
    std::fs::write(
        p.join("tests/test_calc.py"),
        "from src.calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n",
    )
    .unwrap();
    std::fs::write(
        p.join("tests/test_other.py"),
        "def test_other():\n    assert True\n",
    )
    .unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "base"]);
    dir
}

/// The hidden tests: `test_add` joins tests/test_calc.py.
const TEST_PATCH: &str = "diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,9 @@
-from src.calc import sub
+from src.calc import add, sub
 
 
 def test_sub():
     assert sub(3, 1) == 2
+
+
+def test_add():
+    assert add(2, 2) == 4
";

fn lists() -> TestLists {
    TestLists {
        fail_to_pass: vec!["tests/test_calc.py::test_add".into()],
        pass_to_pass: vec![
            "tests/test_calc.py::test_sub".into(),
            "tests/test_other.py::test_other".into(),
        ],
    }
}

/// A report that says every listed test passed.
const FAKE_REPORT: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="3"><testcase classname="tests.test_calc" name="test_add" file="tests/test_calc.py"/><testcase classname="tests.test_calc" name="test_sub" file="tests/test_calc.py"/><testcase classname="tests.test_other" name="test_other" file="tests/test_other.py"/></testsuite></testsuites>"#;

/// A pytest hook that turns every test's result into a pass.
const ALL_PASS_HOOK: &str = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n";

/// The agents, by name: each a bash script run in its worktree.
fn agents() -> Vec<(&'static str, String)> {
    let fix = "sed -i 's/return a - b  # add/return a + b  # add/' src/calc.py".to_string();
    vec![
        ("fix", fix),
        ("none", "echo 'I looked and changed nothing'".into()),
        (
            "printer",
            // Fake pytest lines, printed when the module is imported.
            "cat >> src/calc.py <<'EOF'\n\nprint('tests/test_calc.py::test_add PASSED')\nprint('tests/test_calc.py::test_sub PASSED')\nprint('=================== 3 passed in 0.01s ===================')\nEOF\n".into(),
        ),
        (
            "conftest",
            format!(
                "for f in conftest.py tests/conftest.py src/conftest.py; do cat > $f <<'EOF'\n{ALL_PASS_HOOK}EOF\ndone\n"
            ),
        ),
        (
            "config",
            // The runner's configuration loads a plugin (kept: it is a
            // source file) that marks everything passed.
            format!(
                "cat > src/fakeplugin.py <<'EOF'\n{ALL_PASS_HOOK}EOF\n\
                 printf '[pytest]\\naddopts = -p src.fakeplugin\\n' > pytest.ini\n\
                 printf '[tool:pytest]\\naddopts = -p src.fakeplugin\\n' > setup.cfg\n\
                 printf '[pytest]\\naddopts = -p src.fakeplugin\\n' > tox.ini\n\
                 printf '[tool.pytest.ini_options]\\naddopts = \"-p src.fakeplugin\"\\n' > pyproject.toml\n"
            ),
        ),
        (
            "replacer",
            // The tests rewritten to pass, another test file deleted, a
            // new file among the tests.
            "printf 'def test_add():\\n    pass\\n\\n\\ndef test_sub():\\n    pass\\n' > tests/test_calc.py\n\
             rm tests/test_other.py\n\
             printf 'x = 1\\n' > tests/helper.py\n"
                .into(),
        ),
    ]
}

/// Agents of the second battle: fake reports.
fn report_fakers() -> Vec<(&'static str, String)> {
    vec![
        (
            "reporter",
            // Fake reports in its tree, where a verifier might look, and
            // an attempt at the verifier's folder in its own jail.
            format!(
                "mkdir -p logs/verifier && for f in report.xml junit.xml logs/verifier/report.xml logs/verifier/junit.xml; do cat > $f <<'EOF'\n{FAKE_REPORT}\nEOF\ndone\n\
                 mkdir -p /logs/verifier 2>/dev/null && cp report.xml /logs/verifier/ 2>/dev/null\n\
                 echo 1 > logs/verifier/reward.txt\n"
            ),
        ),
        (
            "breaker",
            // A change that breaks the module the tests import.
            "printf 'def add(a, b)\n    return a +\n' > src/calc.py\n".into(),
        ),
        (
            "exiter",
            // A change that ends the test process, successfully, as soon
            // as the tests import it: no report is written.
            "printf '\\nimport os\\nos._exit(0)\\n' >> src/calc.py\n".into(),
        ),
        (
            "hanger",
            "printf '\\nimport time\\ntime.sleep(600)\\n' >> src/calc.py\n".into(),
        ),
        (
            "swapper",
            // At the test process's exit, the report becomes a link to a
            // fake one.
            format!(
                "cat >> src/calc.py <<'EOF'\n\nimport atexit, os, sys\n\n\ndef _swap():\n    for a in sys.argv:\n        if a.startswith('--junitxml='):\n            path = a.split('=', 1)[1]\n            fake = os.path.join(os.path.dirname(path), 'fake.xml')\n            with open(fake, 'w') as f:\n                f.write('''{FAKE_REPORT}''')\n            os.remove(path)\n            os.symlink(fake, path)\n\n\natexit.register(_swap)\nEOF\n"
            ),
        ),
    ]
}

async fn sealed_battle(h: &mut Harness, project: &Path, agents: &[(&str, String)]) -> Battle {
    let backends = agents
        .iter()
        .map(|(name, script)| CustomBackend {
            name: name.to_string(),
            command: vec!["bash".into(), "-c".into(), script.clone()],
        })
        .collect();
    h.reconfigure(|config| config.backends = backends);
    h.cloud.set_model("m1", ModelScript::tokens(1));
    let request = BattleRequest {
        battle_type: BattleType::Coding,
        project: project.to_path_buf(),
        prompt: "Fix add.".into(),
        contestants: agents
            .iter()
            .map(|(name, _)| ContestantSpec::parse(&format!("{name}@m1")).unwrap())
            .collect(),
        check_command: None,
        blind: false,
        tags: Vec::new(),
    };
    let battle = h
        .engine
        .create_sealed_battle(request, "HEAD")
        .await
        .expect("create");
    let battle = tokio::time::timeout(Duration::from_secs(300), h.engine.run_battle(&battle.id))
        .await
        .expect("the battle ends")
        .expect("run");
    for c in &battle.contestants {
        assert_eq!(
            c.status,
            ContestantStatus::Done,
            "{}: {:?}",
            c.identity,
            c.error
        );
    }
    battle
}

fn contestant<'a>(battle: &'a Battle, name: &str) -> &'a Contestant {
    battle
        .contestants
        .iter()
        .find(|c| c.identity == name)
        .expect("the contestant")
}

fn task(python: &Path) -> VerifyTask {
    VerifyTask {
        test_patch: TEST_PATCH.into(),
        lists: lists(),
        test_command: format!("{} -m pytest", python.display()),
        time_limit: Duration::from_secs(120),
    }
}

#[tokio::test]
async fn a_fix_resolves_and_no_spoof_does() {
    if !jail_ready() {
        return;
    }
    let Some(python) = pytest_python() else {
        return;
    };
    let project = project();
    let mut h = Harness::new().await;
    let battle = sealed_battle(&mut h, project.path(), &agents()).await;
    let task = task(&python);

    let fix = h
        .engine
        .verify(&battle, contestant(&battle, "fix"), &task)
        .await
        .unwrap();
    assert_eq!(fix.grade.outcome, Outcome::Resolved, "{fix:#?}");
    assert_eq!(
        (fix.grade.fail_to_pass_passed, fix.grade.fail_to_pass_total),
        (1, 1)
    );
    assert!(fix.dropped.is_empty(), "{:?}", fix.dropped);
    assert!(fix.command.contains("--junitxml="), "{}", fix.command);
    eprintln!(
        "verified a fix in {:.2} s, of which the tests took {:.2} s",
        fix.seconds, fix.test_seconds
    );

    let none = h
        .engine
        .verify(&battle, contestant(&battle, "none"), &task)
        .await
        .unwrap();
    assert_eq!(none.grade.outcome, Outcome::Unresolved, "{none:#?}");
    assert_eq!(none.grade.failed.len(), 1, "{none:#?}");
    assert!(
        none.grade.failed[0].starts_with("tests/test_calc.py::test_add"),
        "{none:#?}"
    );

    let printer = h
        .engine
        .verify(&battle, contestant(&battle, "printer"), &task)
        .await
        .unwrap();
    assert_eq!(printer.grade.outcome, Outcome::Unresolved, "{printer:#?}");
    assert!(printer.dropped.is_empty());

    let conftest = h
        .engine
        .verify(&battle, contestant(&battle, "conftest"), &task)
        .await
        .unwrap();
    assert_eq!(conftest.grade.outcome, Outcome::Unresolved, "{conftest:#?}");
    let mut dropped: Vec<&str> = conftest.dropped.iter().map(|d| d.path.as_str()).collect();
    dropped.sort();
    assert_eq!(
        dropped,
        ["conftest.py", "src/conftest.py", "tests/conftest.py"]
    );

    let config = h
        .engine
        .verify(&battle, contestant(&battle, "config"), &task)
        .await
        .unwrap();
    assert_eq!(config.grade.outcome, Outcome::Unresolved, "{config:#?}");
    let mut dropped: Vec<&str> = config.dropped.iter().map(|d| d.path.as_str()).collect();
    dropped.sort();
    assert_eq!(
        dropped,
        ["pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"]
    );

    let replacer = h
        .engine
        .verify(&battle, contestant(&battle, "replacer"), &task)
        .await
        .unwrap();
    assert_eq!(replacer.grade.outcome, Outcome::Unresolved, "{replacer:#?}");
    let mut dropped: Vec<&str> = replacer.dropped.iter().map(|d| d.path.as_str()).collect();
    dropped.sort();
    assert_eq!(
        dropped,
        [
            "tests/helper.py",
            "tests/test_calc.py",
            "tests/test_other.py"
        ]
    );
    // The P2P tests the agent deleted or emptied ran as the task has them.
    assert!(replacer.grade.missing.is_empty(), "{replacer:#?}");

    // The spoofs were real: the same edits kept, outside any verifier,
    // make pytest call every test passed.
    for name in ["conftest", "config"] {
        let tree = contestant(&battle, name).worktree.clone().unwrap();
        std::fs::write(
            tree.join("tests/test_calc.py"),
            "from src.calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
        )
        .unwrap();
        let out = std::process::Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .current_dir(&tree)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("passed"),
            "{name}'s spoof does not work on its own:\n{text}"
        );
    }
}

#[tokio::test]
async fn fake_reports_a_suite_that_never_starts_and_a_timeout() {
    if !jail_ready() {
        return;
    }
    let Some(python) = pytest_python() else {
        return;
    };
    let project = project();
    let mut h = Harness::new().await;
    let mut agents = report_fakers();
    agents.push(agents_fix());
    let battle = sealed_battle(&mut h, project.path(), &agents).await;
    let task = task(&python);

    let reporter = h
        .engine
        .verify(&battle, contestant(&battle, "reporter"), &task)
        .await
        .unwrap();
    assert_eq!(reporter.grade.outcome, Outcome::Unresolved, "{reporter:#?}");
    // Its fake reports were in its change (applied, then never read).
    let tree = contestant(&battle, "reporter").worktree.clone().unwrap();
    assert!(tree.join("logs/verifier/report.xml").is_file());

    let swapper = h
        .engine
        .verify(&battle, contestant(&battle, "swapper"), &task)
        .await
        .unwrap();
    assert_eq!(swapper.grade.outcome, Outcome::Unresolved, "{swapper:#?}");
    assert!(
        swapper.grade.reason.contains("not a plain file"),
        "{swapper:#?}"
    );

    // A change that breaks what the tests import fails the task: the
    // suite ran and found the tests failing to load.
    let breaker = h
        .engine
        .verify(&battle, contestant(&battle, "breaker"), &task)
        .await
        .unwrap();
    assert_eq!(breaker.grade.outcome, Outcome::Unresolved, "{breaker:#?}");
    let exiter = h
        .engine
        .verify(&battle, contestant(&battle, "exiter"), &task)
        .await
        .unwrap();
    // A change that ends the runner before it reports, or hangs it, fails
    // the task (on the base the tests run and report): an agent cannot
    // turn a failure into an error of the run, which scores leave out.
    assert_eq!(exiter.grade.outcome, Outcome::Unresolved, "{exiter:#?}");
    assert!(
        exiter.grade.reason.contains("wrote no report"),
        "{exiter:#?}"
    );
    let quick = VerifyTask {
        time_limit: Duration::from_secs(10),
        ..task.clone()
    };
    let hanger = h
        .engine
        .verify(&battle, contestant(&battle, "hanger"), &quick)
        .await
        .unwrap();
    assert!(hanger.timed_out, "{hanger:#?}");
    assert_eq!(hanger.grade.outcome, Outcome::Unresolved, "{hanger:#?}");

    // The fix, under a runner that is not there: an error of the run.
    let missing = VerifyTask {
        test_command: "/nonexistent/python3 -m pytest".into(),
        ..task.clone()
    };
    let fix = contestant(&battle, "fix");
    let never = h.engine.verify(&battle, fix, &missing).await.unwrap();
    assert!(
        matches!(never.grade.outcome, Outcome::Error(_)),
        "{never:#?}"
    );

    // The fix, under tests that run past their time: an error of the run.
    let slow = VerifyTask {
        test_command: format!("sleep 30 && {} -m pytest", python.display()),
        time_limit: Duration::from_secs(2),
        ..task.clone()
    };
    let late = h.engine.verify(&battle, fix, &slow).await.unwrap();
    assert!(late.timed_out, "{late:#?}");
    assert!(matches!(late.grade.outcome, Outcome::Error(_)), "{late:#?}");
    assert!(late.seconds < 20.0, "{late:#?}");

    // And the same fix, in time, resolves; its logs folder is at
    // $ARENA_VERIFIER_LOGS and /logs/verifier (the same folder).
    let seen = VerifyTask {
        test_command: format!(
            "touch \"$ARENA_VERIFIER_LOGS\"/mark && test -f /logs/verifier/mark && {} -m pytest",
            python.display()
        ),
        ..task.clone()
    };
    let fix = h.engine.verify(&battle, fix, &seen).await.unwrap();
    assert_eq!(fix.grade.outcome, Outcome::Resolved, "{fix:#?}");
}

fn agents_fix() -> (&'static str, String) {
    agents().remove(0)
}

/// Arena's own time per task run on a 10,000-file repository (issue 40's
/// target: ≤ 300 ms): sealing the base (the first time, and reused), and
/// the verification beyond the tests' own time (the same pytest run on a
/// plain checkout, outside any jail), for the first run of a base (which
/// makes the base tree every later run of that base shares) and a later
/// one. Run: cargo test -p arena-core --test pack_verify -- --ignored --nocapture
/// (`ARENA_BENCH_FILES` resizes the repository).
#[tokio::test]
#[ignore]
async fn arena_overhead_per_task_run_on_a_large_repository() {
    if !jail_ready() {
        return;
    }
    let Some(python) = pytest_python() else {
        return;
    };
    let files: usize = std::env::var("ARENA_BENCH_FILES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let project = project();
    let p = project.path();
    for i in 0..files {
        let dir = p.join(format!("data/d{}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "many files"]);
    let base = {
        let out = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(p)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let mut h = Harness::new().await;
    let started = std::time::Instant::now();
    h.engine.seal_base(p, &base).await.unwrap();
    let seal_first = started.elapsed();
    let started = std::time::Instant::now();
    h.engine.seal_base(p, &base).await.unwrap();
    let seal_again = started.elapsed();

    // The tests' own time: the same command on a plain checkout.
    let plain = tempfile::tempdir().unwrap();
    git(plain.path(), &["clone", "-q", &p.to_string_lossy(), "tree"]);
    let tree = plain.path().join("tree");
    let patch_file = plain.path().join("test.patch");
    std::fs::write(&patch_file, TEST_PATCH).unwrap();
    git(&tree, &["apply", &patch_file.to_string_lossy()]);
    let bare = |tree: &Path| {
        let started = std::time::Instant::now();
        let out = std::process::Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .args(lists().fail_to_pass.iter().chain(&lists().pass_to_pass))
            .current_dir(tree)
            .output()
            .unwrap();
        assert!(!out.stdout.is_empty());
        started.elapsed().as_secs_f64()
    };
    let mut plain_runs: Vec<f64> = (0..3).map(|_| bare(&tree)).collect();
    plain_runs.sort_by(f64::total_cmp);
    let tests_alone = plain_runs[1];

    let task = task(&python);
    let mut overheads = Vec::new();
    for round in 0..3 {
        let battle = sealed_battle(&mut h, p, &[agents_fix(), agents().remove(1)]).await;
        let v = h
            .engine
            .verify(&battle, contestant(&battle, "fix"), &task)
            .await
            .unwrap();
        assert_eq!(v.grade.outcome, Outcome::Resolved, "{v:#?}");
        let overhead = v.seconds - tests_alone;
        eprintln!(
            "run {round}: verified in {:.3} s (tests in the jail {:.3} s); the tests alone {:.3} s; Arena's part {:.0} ms",
            v.seconds,
            v.test_seconds,
            tests_alone,
            overhead * 1000.0
        );
        overheads.push(overhead);
    }
    eprintln!(
        "{files} files: sealing {:.0} ms (reused: {:.1} ms); Arena's part of a verification: {:.0} ms the first run of a base, then {:.0} ms and {:.0} ms",
        seal_first.as_secs_f64() * 1000.0,
        seal_again.as_secs_f64() * 1000.0,
        overheads[0] * 1000.0,
        overheads[1] * 1000.0,
        overheads[2] * 1000.0,
    );
}
