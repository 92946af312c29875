//! A check that could not run (issue 42, item 4): its program missing
//! (exit 127, "not found") or not executable (exit 126) is a battle-level
//! warning, said before the battle by a dry run of its first word in the
//! check's real jail, recorded as `could_not_run` after it, and left out
//! of every contestant's score: no one "failed the check". A program the
//! project's environment brings (`.venv/bin/pytest`) is found.

mod common;

use arena_core::battle::BattleType;
use arena_core::check_outcome::{battle_warning, CheckOutcome};
use arena_core::config::CustomBackend;
use arena_core::leaderboard::Source;
use arena_core::LeaderboardQuery;
use arena_testserver::ModelScript;
use common::*;

/// Both seats write the same correct `calc.py`.
const SCRIPT: &str = "set -e\nprintf 'def add(a, b):\\n    return a + b\\n' > calc.py\necho done\n";

fn configure(h: &mut Harness) {
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command: vec![
                "bash".into(),
                "-c".into(),
                SCRIPT.into(),
                "agent".into(),
                "{prompt}".into(),
            ],
        }];
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
}

/// `pytest` is on no PATH of the check's jail (this machine has none): a
/// warning before the battle; after it, each contestant's check could not
/// run, the battle carries one warning, and the leaderboard counts no win
/// or loss for anyone.
#[tokio::test]
async fn a_missing_pytest_is_a_warning_before_and_could_not_run_after() {
    let mut h = Harness::new().await;
    configure(&mut h);
    let project = repo();

    let probe = h
        .engine
        .probe_check(project.path(), "pytest -q")
        .await
        .expect("probe");
    assert_eq!(probe.program.as_deref(), Some("pytest"));
    let warning = probe.warning.expect("a warning before the battle");
    assert!(warning.contains("`pytest` is not found"), "{warning}");

    let b = run_coding(
        &h,
        project.path(),
        &["fake@m1", "fake@m2"],
        Some("pytest -q"),
    )
    .await;
    for c in &b.contestants {
        let check = c.check.as_ref().expect("a check result");
        assert_eq!(check.exit_code, Some(127), "{check:?}");
        let why = check.could_not_run.as_deref().expect("could_not_run");
        assert!(why.contains("pytest"), "{why}");
        assert_eq!(CheckOutcome::of(Some(check)), CheckOutcome::CouldNotRun);
    }
    let said = battle_warning(&b).expect("a battle-level warning");
    assert!(
        said.contains("`pytest -q` could not run") && said.contains("counts for no contestant"),
        "{said}"
    );

    let board = h
        .engine
        .leaderboard(LeaderboardQuery {
            battle_type: Some(BattleType::Coding),
            source: Source::Both,
            ..Default::default()
        })
        .await
        .expect("leaderboard")
        .standings;
    assert_eq!(board.len(), 2, "{board:?}");
    for s in &board {
        assert_eq!((s.wins, s.losses, s.decided), (0, 0, 0), "{s:?}");
    }
}

/// A check script without its executable bit: exit 126, could not run.
#[tokio::test]
async fn a_check_that_cannot_be_executed_could_not_run() {
    let mut h = Harness::new().await;
    configure(&mut h);
    let project = repo();
    std::fs::write(project.path().join("check.sh"), "#!/bin/sh\nexit 0\n").expect("check.sh");
    git(project.path(), &["add", "check.sh"]);
    git(project.path(), &["commit", "-q", "-m", "check"]);

    let probe = h
        .engine
        .probe_check(project.path(), "./check.sh")
        .await
        .expect("probe");
    assert!(probe.warning.is_some(), "{probe:?}");

    let b = run_coding(
        &h,
        project.path(),
        &["fake@m1", "fake@m2"],
        Some("./check.sh"),
    )
    .await;
    for c in &b.contestants {
        let check = c.check.as_ref().expect("a check result");
        assert_eq!(check.exit_code, Some(126), "{check:?}");
        assert_eq!(
            CheckOutcome::of(Some(check)),
            CheckOutcome::CouldNotRun,
            "{check:?}"
        );
    }
}

/// `.venv/bin/pytest`, brought by the project's environment (an ignored
/// virtualenv, found by its `pyvenv.cfg`): no warning, and the check runs
/// and passes. Plain `pytest` is still not on the jail's PATH.
#[tokio::test]
async fn a_pytest_the_environment_brings_is_found() {
    let mut h = Harness::new().await;
    configure(&mut h);
    let project = repo();
    let root = project.path();
    std::fs::write(root.join(".gitignore"), ".venv/\n").expect(".gitignore");
    git(root, &["add", ".gitignore"]);
    git(root, &["commit", "-q", "-m", "ignore the venv"]);
    std::fs::create_dir_all(root.join(".venv/bin")).expect(".venv/bin");
    std::fs::write(
        root.join(".venv/pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\n",
    )
    .expect("pyvenv.cfg");
    let pytest = root.join(".venv/bin/pytest");
    std::fs::write(&pytest, "#!/bin/sh\necho '1 passed'\nexit 0\n").expect("pytest");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pytest, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    let probe = h
        .engine
        .probe_check(root, ".venv/bin/pytest -q")
        .await
        .expect("probe");
    assert_eq!(probe.warning, None, "{probe:?}");
    let plain = h
        .engine
        .probe_check(root, "pytest -q")
        .await
        .expect("probe");
    assert!(plain.warning.is_some(), "{plain:?}");

    let b = run_coding(
        &h,
        root,
        &["fake@m1", "fake@m2"],
        Some(".venv/bin/pytest -q"),
    )
    .await;
    for c in &b.contestants {
        let check = c.check.as_ref().expect("a check result");
        assert_eq!(
            CheckOutcome::of(Some(check)),
            CheckOutcome::Passed,
            "{check:?}"
        );
    }
    assert_eq!(battle_warning(&b), None);
}

/// A contestant cannot make its own failed check read "could not run": a
/// change that rewrites the check's script to print the shell's "not found"
/// and exit 127 is the change's failure, because the check's program is
/// there when it runs on the base (the dry run says so); the honest
/// contestant's check passes, and the battle carries no warning.
#[tokio::test]
async fn a_change_that_fakes_a_missing_program_fails_its_check() {
    let mut h = Harness::new().await;
    let spoof = "set -e\nif [ \"$1\" = m2 ]; then printf 'echo \"sh: 1: pytest: not found\" >&2\\nexit 127\\n' > tests.sh; fi\necho done\n";
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command: vec![
                "bash".into(),
                "-c".into(),
                spoof.into(),
                "agent".into(),
                "{model}".into(),
            ],
        }];
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    let project = repo();
    std::fs::write(project.path().join("tests.sh"), "echo 'all good'\n").expect("tests.sh");
    git(project.path(), &["add", "tests.sh"]);
    git(project.path(), &["commit", "-q", "-m", "tests"]);

    let b = run_coding(
        &h,
        project.path(),
        &["fake@m1", "fake@m2"],
        Some("sh tests.sh"),
    )
    .await;
    let outcome = |model: &str| {
        let c = b
            .contestants
            .iter()
            .find(|c| c.model == model)
            .expect(model);
        let check = c.check.as_ref().expect("a check result");
        (CheckOutcome::of(Some(check)), check.clone())
    };
    let (honest, check) = outcome("m1");
    assert_eq!(honest, CheckOutcome::Passed, "{check:?}");
    let (faked, check) = outcome("m2");
    assert_eq!(check.exit_code, Some(127), "{check:?}");
    assert_eq!(faked, CheckOutcome::Failed, "{check:?}");
    assert!(
        check.output_tail.contains("the change's failure"),
        "{check:?}"
    );
    assert_eq!(battle_warning(&b), None);
}
