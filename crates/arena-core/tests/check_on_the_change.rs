//! The verdict is computed on what would be applied (issue 39): a
//! contestant's check runs on its change applied to a fresh tree of the
//! base, never in the agent's working tree. An agent (a `[[backend]]`
//! script) that ships a wrong `calc.py` in its visible change and hides a
//! correct package `calc/` where no diff carries it fails the check, and
//! the result names what was left out; one whose change touches the
//! check's own files is named beside "check passed".

mod common;

use std::time::Instant;

use arena_core::battle::{CheckResult, ContestantStatus};
use arena_core::config::CustomBackend;
use arena_core::Battle;
use arena_testserver::ModelScript;
use common::*;

/// The user's check: `calc.add(2, 2) == 4`. (The system's Python: a
/// pyenv shim in `~/.pyenv` is the jail's toolchain question, not this
/// test's.)
const CHECK: &str = r#"/usr/bin/python3 -c "from calc import add; assert add(2, 2) == 4""#;

/// A wrong `calc.py`, the agent's visible change.
const WRONG: &str = r#"printf 'def add(a, b):\n    return a - b\n' > calc.py"#;

/// A correct package `calc/` (imported before `calc.py`).
const HIDDEN: &str =
    r#"mkdir -p calc && printf 'def add(a, b):\n    return a + b\n' > calc/__init__.py"#;

/// The harness's engine with the `fake` backend running `script` (`bash -c
/// script agent <prompt>`: the prompt is `$1`; `$PWD` names the seat, `m1`
/// or `m2`).
fn configure(h: &mut Harness, script: &str) {
    let command = vec![
        "bash".into(),
        "-c".into(),
        script.to_string(),
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

/// A script where seat `m1` runs `first` and seat `m2` runs `second`.
fn seats(first: &str, second: &str) -> String {
    format!("set -e\ncase \"$PWD\" in\n*m1*) {first} ;;\n*) {second} ;;\nesac\necho done\n")
}

fn check_of(b: &Battle, i: usize) -> CheckResult {
    let c = &b.contestants[i];
    assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
    c.check.clone().expect("a check result")
}

fn result_md(b: &Battle, i: usize) -> String {
    std::fs::read_to_string(b.contestants[i].result_path.as_ref().expect("result.md"))
        .expect("result.md")
}

fn patch_of(b: &Battle, i: usize) -> String {
    let dir = b.contestants[i]
        .result_path
        .as_ref()
        .and_then(|p| p.parent())
        .expect("a results folder");
    std::fs::read_to_string(dir.join("diff.patch")).expect("diff.patch")
}

/// No fresh tree is left behind in the data folder.
fn no_fresh_trees(h: &Harness, b: &Battle) {
    let root = h.data.path().join("worktrees").join(&b.id);
    let left: Vec<String> = std::fs::read_dir(&root)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with("-check"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "fresh trees left behind: {left:?}");
}

/// Attack (a): the correct package hides in a git repository of its own,
/// which no diff carries. The check fails on the change; the seat whose
/// visible change is correct passes.
#[tokio::test]
async fn a_package_hidden_in_a_nested_repository_does_not_pass_the_check() {
    let mut h = Harness::new().await;
    let project = repo();
    let hide = format!(
        "{WRONG} && {HIDDEN} && git -C calc init -q && git -C calc add . && \
         git -C calc -c user.email=a@b.invalid -c user.name=a commit -q -m hidden"
    );
    let honest = r#"printf 'def add(a, b):\n    return a + b\n' > calc.py"#;
    configure(&mut h, &seats(&hide, honest));
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], Some(CHECK)).await;

    // The agent's tree has the package; the change does not.
    let wt = b.contestants[0].worktree.clone().expect("a worktree");
    assert!(wt.join("calc/__init__.py").is_file());
    let patch = patch_of(&b, 0);
    assert!(
        patch.contains("b/calc.py") && !patch.contains("calc/__init__.py"),
        "{patch}"
    );

    let hidden = check_of(&b, 0);
    assert!(
        !hidden.passed,
        "the check passed on a change that fails it: {hidden:?}"
    );
    assert!(
        hidden
            .not_in_change
            .iter()
            .any(|p| p == "calc/ (a git repository of its own)"),
        "{hidden:?}"
    );
    assert_eq!(hidden.not_in_change_count, hidden.not_in_change.len());
    let md = result_md(&b, 0);
    assert!(
        md.contains("Not part of the change")
            && md.contains("`calc/ (a git repository of its own)`"),
        "{md}"
    );

    let honest = check_of(&b, 1);
    assert!(honest.passed, "{honest:?}");
    assert!(honest.not_in_change.is_empty(), "{honest:?}");
    assert!(honest.touches_check.is_empty(), "{honest:?}");
    assert!(!result_md(&b, 1).contains("Not part of the change"));
    no_fresh_trees(&h, &b);
}

/// Attack (b): the correct package hidden from the diff by ignore rules.
/// Ignored by a `.gitignore` the agent wrote (part of its change), it is
/// not carried: the check fails and names it. Listed in the agent
/// repository's `.git/info/exclude` (which Arena's diff does not read),
/// it is carried: the check passes on the change, and the patch holds it —
/// the verdict and what `apply` gives agree either way.
#[tokio::test]
async fn a_package_hidden_by_ignore_rules_is_checked_as_the_change_carries_it() {
    let mut h = Harness::new().await;
    let project = repo();
    let ignored = format!("{WRONG} && {HIDDEN} && printf 'calc/\\n' > .gitignore");
    let excluded = format!(
        "{WRONG} && {HIDDEN} && mkdir -p .git/info && printf 'calc/\\n' >> .git/info/exclude"
    );
    configure(&mut h, &seats(&ignored, &excluded));
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], Some(CHECK)).await;

    let patch = patch_of(&b, 0);
    assert!(
        patch.contains("b/.gitignore") && !patch.contains("calc/__init__.py"),
        "{patch}"
    );
    let ignored = check_of(&b, 0);
    assert!(
        !ignored.passed,
        "the check passed on a change that fails it: {ignored:?}"
    );
    assert!(
        ignored.not_in_change.iter().any(|p| p == "calc/"),
        "{ignored:?}"
    );
    assert!(result_md(&b, 0).contains("`calc/`"));

    let patch = patch_of(&b, 1);
    assert!(patch.contains("b/calc/__init__.py"), "{patch}");
    let excluded = check_of(&b, 1);
    assert!(excluded.passed, "{excluded:?}");
    assert!(excluded.not_in_change.is_empty(), "{excluded:?}");
    no_fresh_trees(&h, &b);
}

/// A change that edits the test the check runs passes, and the result
/// says it touched the check's files; a change to the code alone does not.
#[tokio::test]
async fn a_change_to_the_checks_own_files_is_named_beside_the_verdict() {
    let mut h = Harness::new().await;
    let project = repo();
    std::fs::write(
        project.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .expect("calc.py");
    std::fs::create_dir(project.path().join("tests")).expect("tests/");
    std::fs::write(
        project.path().join("tests/test_calc.py"),
        "from calc import add\nassert add(2, 2) == 4\n",
    )
    .expect("test_calc.py");
    git(project.path(), &["add", "."]);
    git(project.path(), &["commit", "-q", "-m", "calc and its test"]);
    let cheat = r#"printf 'print("fine")\n' > tests/test_calc.py"#;
    let fix = r#"printf 'def add(a, b):\n    return a + b\n' > calc.py"#;
    configure(&mut h, &seats(cheat, fix));
    let b = run_coding(
        &h,
        project.path(),
        &["fake@m1", "fake@m2"],
        Some("PYTHONPATH=. /usr/bin/python3 tests/test_calc.py"),
    )
    .await;

    let cheat = check_of(&b, 0);
    assert!(cheat.passed, "{cheat:?}");
    assert_eq!(cheat.touches_check, vec!["tests/test_calc.py".to_string()]);
    let md = result_md(&b, 0);
    assert!(
        md.contains("touches the check's own files") && md.contains("`tests/test_calc.py`"),
        "{md}"
    );
    let fix = check_of(&b, 1);
    assert!(fix.passed, "{fix:?}");
    assert!(fix.touches_check.is_empty(), "{fix:?}");
    assert!(!result_md(&b, 1).contains("touches the check's own files"));
}

/// A refine round continues in the agent's tree, and its check runs on its
/// own fresh tree: a package hidden in a nested repository in that round
/// does not pass it.
#[tokio::test]
async fn a_refine_rounds_check_runs_on_a_fresh_tree_too() {
    let mut h = Harness::new().await;
    let project = repo();
    let script = format!(
        "set -e\ncase \"$1\" in\n*feedback*) {HIDDEN} && git -C calc init -q && \
         git -C calc add . && git -C calc -c user.email=a@b.invalid -c user.name=a commit -q -m h ;;\n\
         *) {WRONG} ;;\nesac\necho done\n"
    );
    configure(&mut h, &script);
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], Some(CHECK)).await;
    let c = &b.contestants[0];
    assert!(!check_of(&b, 0).passed);
    let round = h
        .engine
        .refine(&b.id, &c.id, "Make add work.")
        .await
        .expect("a round");
    assert_eq!(
        round.status,
        Some(ContestantStatus::Done),
        "{:?}",
        round.error
    );
    // The round worked in the agent's tree…
    let wt = c.worktree.clone().expect("a worktree");
    assert!(wt.join("calc/__init__.py").is_file() && wt.join("calc.py").is_file());
    // …and its check ran on the round's change, without the hidden package.
    let check = round.check.clone().expect("the round's check");
    assert!(!check.passed, "{check:?}");
    assert!(
        check
            .not_in_change
            .iter()
            .any(|p| p == "calc/ (a git repository of its own)"),
        "{check:?}"
    );
    let dir = round
        .result_path
        .as_ref()
        .and_then(|p| p.parent())
        .expect("the round's folder");
    let md = std::fs::read_to_string(dir.join("result.md")).expect("the round's result.md");
    assert!(md.contains("Not part of the change"), "{md}");
    no_fresh_trees(&h, &b);
}

/// A patch Arena's apply rules refuse fails the check with the reason,
/// before anything runs: here, a change that makes `.gitmodules`.
#[tokio::test]
async fn a_change_the_apply_rules_refuse_fails_the_check_with_the_reason() {
    let mut h = Harness::new().await;
    let project = repo();
    let fix = r#"printf 'def add(a, b):\n    return a + b\n' > calc.py"#;
    let refused = format!("{fix} && printf '[submodule \"x\"]\\n\\tpath = x\\n' > .gitmodules");
    configure(&mut h, &seats(&refused, fix));
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], Some(CHECK)).await;
    let refused = check_of(&b, 0);
    assert!(!refused.passed, "{refused:?}");
    assert!(
        refused
            .output_tail
            .starts_with("the change could not be applied to a fresh tree of the base: "),
        "{refused:?}"
    );
    assert!(refused.output_tail.contains(".gitmodules"), "{refused:?}");
    assert!(check_of(&b, 1).passed);
    no_fresh_trees(&h, &b);
}

/// The fresh tree's cost on a 10,000-file repository: made, the change
/// applied, removed (what a check costs beyond today's). Printed for
/// BENCHMARKS.md; the bound here is loose (debug builds, a shared machine).
#[test]
fn a_fresh_tree_of_ten_thousand_files_is_cheap() {
    let project = repo();
    for d in 0..100 {
        let dir = project.path().join(format!("d{d:03}"));
        std::fs::create_dir(&dir).expect("folder");
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:03}.txt")), format!("{d} {f}\n")).expect("file");
        }
    }
    git(project.path(), &["add", "."]);
    git(project.path(), &["commit", "-q", "-m", "10,000 files"]);
    let patch = "diff --git a/d000/f000.txt b/d000/f000.txt\n--- a/d000/f000.txt\n+++ b/d000/f000.txt\n@@ -1 +1 @@\n-0 0\n+changed\n";
    let root = tempfile::tempdir().expect("root");
    let mut times = Vec::new();
    for round in 0..3 {
        let started = Instant::now();
        let tree = arena_core::worktree::create(
            project.path(),
            root.path(),
            &format!("t{round}-check"),
            "HEAD",
        )
        .expect("a fresh tree");
        let made = started.elapsed();
        let applied = arena_core::agent::apply::apply(
            &tree.path,
            patch,
            arena_core::agent::apply::Consent::Given,
        )
        .expect("applied");
        assert!(applied.is_written());
        assert_eq!(
            std::fs::read_to_string(tree.path.join("d000/f000.txt")).expect("read"),
            "changed\n"
        );
        let applied_at = started.elapsed();
        arena_core::worktree::remove(project.path(), &tree.path, true).expect("removed");
        let total = started.elapsed();
        eprintln!(
            "fresh tree of 10,000 files: made {} ms, applied {} ms, removed {} ms",
            made.as_millis(),
            (applied_at - made).as_millis(),
            (total - applied_at).as_millis()
        );
        times.push(total.as_millis());
    }
    times.sort();
    let median = times[times.len() / 2];
    eprintln!("fresh tree of 10,000 files, median of 3 (made + applied + removed): {median} ms");
    assert!(median < 60_000, "{median} ms");
}
