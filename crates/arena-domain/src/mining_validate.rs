//! Validating a mined candidate by running it (issue 41, point 4): the pure
//! half. Which test targets a test patch touches, and so which command
//! runs only them; whether the runs of a stage disagree (then two more are
//! made); and from the runs of BASE (the parent), RED (parent + test
//! patch) and GOLD (RED + gold patch), the FAIL_TO_PASS and PASS_TO_PASS
//! lists, or the reason the candidate is dropped. The running is in
//! `arena_core::engine::mine_validate`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::test_report::{sh_quote, Ecosystem, TestLists, TestStatus};

/// Runs of each stage, and how many when they disagree.
pub const RUNS: u32 = 3;
pub const RUNS_WHEN_MIXED: u32 = 5;

/// The longest a GOLD run may take before the candidate is dropped.
pub const GOLD_SECONDS: u64 = 5 * 60;

/// The three trees a candidate is run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The parent commit.
    Base,
    /// The parent with the test patch.
    Red,
    /// The parent with the test patch and the gold patch.
    Gold,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Base => "base",
            Stage::Red => "red",
            Stage::Gold => "gold",
        }
    }
}

/// One run of the selected tests on one tree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageRun {
    /// The runner started and reported (a test, or a unit it could not
    /// build): a Rust target that does not compile is reported as not built.
    pub started: bool,
    /// Every test it reported, by name.
    pub tests: BTreeMap<String, TestStatus>,
    pub timed_out: bool,
    pub seconds: f64,
}

/// Why a candidate is not a task after running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValidateDrop {
    /// The environment for the base's lockfiles could not be prepared.
    EnvironmentNotPrepared,
    /// The tests never started (or never reported) with the gold patch.
    SuiteDidNotStart,
    /// Arena's apply rules refuse the commit's change on a fresh tree of
    /// its base (so no tree of the task can be made).
    PatchDoesNotApply,
    /// A GOLD run took longer than [`GOLD_SECONDS`].
    GoldTooSlow,
    /// A test the test patch makes fail is still failing with the gold
    /// patch in every run.
    GoldFails,
    /// A test that fails in every RED run does not pass in every GOLD run.
    GoldNotAlwaysPassing,
    /// A test that passes with the gold patch fails in some RED runs only.
    FlakyFailToPass,
    /// No test fails without the gold patch and passes with it.
    NoFailToPass,
}

impl ValidateDrop {
    pub fn as_str(self) -> &'static str {
        match self {
            ValidateDrop::EnvironmentNotPrepared => "environment_not_prepared",
            ValidateDrop::SuiteDidNotStart => "suite_did_not_start",
            ValidateDrop::PatchDoesNotApply => "patch_does_not_apply",
            ValidateDrop::GoldTooSlow => "gold_too_slow",
            ValidateDrop::GoldFails => "gold_fails",
            ValidateDrop::GoldNotAlwaysPassing => "gold_not_always_passing",
            ValidateDrop::FlakyFailToPass => "flaky_fail_to_pass",
            ValidateDrop::NoFailToPass => "no_fail_to_pass",
        }
    }
}

/// A drop reason's code (the key of the drop counts: the static scan's
/// [`crate::mining::DropReason`], running's [`ValidateDrop`], and
/// `no_test_command`, `validation_error`) in words, for the CLI's table and
/// the app; an unknown code with its underscores as spaces.
pub fn drop_words(reason: &str) -> String {
    let words = match reason {
        "no_parent" => "the first commit (no parent to start from)",
        "revert" => "a revert",
        "bot" => "made by a bot",
        "ci_only" => "CI configuration only",
        "generated_or_vendored" => "generated or vendored code",
        "mixed_test_hunk" => "a hunk mixes test and fix code",
        "no_tests" => "no test changed",
        "no_code" => "only tests changed",
        "binary" => "binary files",
        "too_many_files" => "more than 10 code files",
        "too_small" => "under 3 lines of code",
        "too_big" => "over 400 lines of code",
        "formatting_only" => "a change of formatting only",
        "no_test_command" => "no test command found",
        "environment_not_prepared" => "its environment could not be prepared",
        "suite_did_not_start" => "the tests did not start",
        "patch_does_not_apply" => "the split does not apply",
        "gold_too_slow" => "the fixed tests took over 5 minutes",
        "gold_fails" => "the fix does not pass its tests",
        "gold_not_always_passing" => "the fix passes its tests only sometimes",
        "flaky_fail_to_pass" => "a flaky test",
        "no_fail_to_pass" => "no test fails before the fix",
        "validation_error" => "Arena could not run it",
        other => return other.replace('_', " "),
    };
    words.to_string()
}

/// A yield table's rows for the terminal: each label padded to the widest,
/// each value right-aligned to the widest.
pub fn two_columns(rows: &[(String, String)]) -> String {
    let label = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let value = rows
        .iter()
        .map(|(_, v)| v.chars().count())
        .max()
        .unwrap_or(0);
    rows.iter()
        .map(|(l, v)| format!("{l:<label$}  {v:>value$}\n"))
        .collect()
}

/// What the runs of a candidate came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Validation {
    Validated(TestLists),
    /// Dropped, with the tests that show it (at most a few, for the log).
    Dropped(ValidateDrop, Vec<String>),
}

fn passed(run: &StageRun, test: &str) -> bool {
    run.tests.get(test) == Some(&TestStatus::Passed)
}

/// A test fails in a run: reported failed or errored, or not there at all
/// (it does not exist, or its target did not compile).
fn failed(run: &StageRun, test: &str) -> bool {
    matches!(
        run.tests.get(test),
        None | Some(TestStatus::Failed | TestStatus::Errored)
    )
}

/// A test is reported failing or errored in a run (there, unlike [`failed`]).
fn reported_failing(run: &StageRun, test: &str) -> bool {
    matches!(
        run.tests.get(test),
        Some(TestStatus::Failed | TestStatus::Errored)
    )
}

/// Whether the runs of one stage disagree on some test (or on whether the
/// suite started): then [`RUNS_WHEN_MIXED`] runs are made instead of
/// [`RUNS`].
pub fn disagree(runs: &[StageRun]) -> bool {
    let Some(first) = runs.first() else {
        return false;
    };
    runs.iter().skip(1).any(|r| {
        r.started != first.started
            || r.tests.len() != first.tests.len()
            || r.tests.iter().any(|(k, v)| first.tests.get(k) != Some(v))
    })
}

/// Whether a test is a Rust doc test (`src/lib.rs - Level::iter (line
/// 551)`): its name holds a line number, which any edit above it moves, so
/// no task lists it (an agent's correct change would lose it).
pub fn is_doc_test(name: &str) -> bool {
    name.contains(" - ")
        && name.rsplit_once(" (line ").is_some_and(|(_, n)| {
            n.strip_suffix(')')
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
}

/// Decides a candidate from its runs (see the module's notes):
/// FAIL_TO_PASS = fails (or is missing) in every RED run and passes in
/// every GOLD run; PASS_TO_PASS = passes in every BASE and every GOLD run
/// and is not FAIL_TO_PASS (a Rust doc test is in neither:
/// [`is_doc_test`]); a test with mixed results is in neither. The
/// candidate is dropped, in this order, when a GOLD run never started (or
/// reported no test: it did not build) or ran over [`GOLD_SECONDS`]; when a test the test patch makes fail (it
/// does not fail in every BASE run) fails in every GOLD run too; when a
/// test failing in every RED run passes in some GOLD runs only; when a
/// test passing in every GOLD run fails in some RED runs only; when no
/// test is FAIL_TO_PASS.
pub fn decide(base: &[StageRun], red: &[StageRun], gold: &[StageRun]) -> Validation {
    let some = |tests: Vec<String>| tests.into_iter().take(5).collect::<Vec<_>>();
    // A GOLD run that reported no test at all (it did not build, or
    // collected nothing) ran no suite either.
    if gold.is_empty()
        || gold
            .iter()
            .any(|r| (!r.started || r.tests.is_empty()) && !r.timed_out)
    {
        return Validation::Dropped(ValidateDrop::SuiteDidNotStart, Vec::new());
    }
    if gold
        .iter()
        .any(|r| r.timed_out || r.seconds > GOLD_SECONDS as f64)
    {
        return Validation::Dropped(ValidateDrop::GoldTooSlow, Vec::new());
    }
    let names: BTreeSet<&String> = red
        .iter()
        .chain(gold)
        .chain(base)
        .flat_map(|r| r.tests.keys())
        .collect();
    let all = |runs: &[StageRun], f: fn(&StageRun, &str) -> bool, t: &str| {
        !runs.is_empty() && runs.iter().all(|r| f(r, t))
    };
    let any =
        |runs: &[StageRun], f: fn(&StageRun, &str) -> bool, t: &str| runs.iter().any(|r| f(r, t));
    let (mut f2p, mut p2p) = (Vec::new(), Vec::new());
    let (mut gold_fails, mut gold_mixed, mut flaky) = (Vec::new(), Vec::new(), Vec::new());
    for t in names {
        if is_doc_test(t) {
            continue;
        }
        let red_fails = all(red, failed, t);
        let gold_passes = all(gold, passed, t);
        if red_fails && gold_passes {
            f2p.push(t.clone());
            continue;
        }
        if all(base, passed, t) && gold_passes {
            p2p.push(t.clone());
            continue;
        }
        if red_fails && all(gold, failed, t) {
            // Failing everywhere already on the base is the project's own
            // failure, not the candidate's: it is in neither list.
            if !all(base, reported_failing, t) {
                gold_fails.push(t.clone());
            }
            continue;
        }
        if red_fails && any(gold, passed, t) {
            gold_mixed.push(t.clone());
            continue;
        }
        if gold_passes && any(red, failed, t) && any(red, passed, t) {
            flaky.push(t.clone());
        }
    }
    if !gold_fails.is_empty() {
        return Validation::Dropped(ValidateDrop::GoldFails, some(gold_fails));
    }
    if !gold_mixed.is_empty() {
        return Validation::Dropped(ValidateDrop::GoldNotAlwaysPassing, some(gold_mixed));
    }
    if !flaky.is_empty() {
        return Validation::Dropped(ValidateDrop::FlakyFailToPass, some(flaky));
    }
    if f2p.is_empty() {
        return Validation::Dropped(ValidateDrop::NoFailToPass, Vec::new());
    }
    Validation::Validated(TestLists {
        fail_to_pass: f2p,
        pass_to_pass: p2p,
    })
}

/// The test command that runs only the targets `test_files` name (the
/// files the test patch touches that exist in the tree run): pytest and
/// jest/vitest get the files; `cargo test` gets `--test NAME` for each
/// `tests/NAME.rs` (or `tests/NAME/main.rs`) and `--lib` for a source file
/// with test modules; `go test` gets each test file's package. The whole
/// command is kept when a file cannot be told as a target (a helper under
/// `tests/`, a crate of a workspace), or when nothing is left.
pub fn targeted_command(command: &str, test_files: &[String]) -> String {
    let command = command.trim();
    if test_files.is_empty() {
        return command.to_string();
    }
    let quoted = |files: &[&String]| -> String {
        files
            .iter()
            .map(|f| sh_quote(f))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match Ecosystem::detect(command) {
        Ecosystem::Pytest => {
            let files: Vec<&String> = test_files
                .iter()
                .filter(|f| {
                    let name = f.rsplit('/').next().unwrap_or(f);
                    name.ends_with(".py")
                        && (name.starts_with("test_") || name.ends_with("_test.py"))
                })
                .collect();
            if files.len() != test_files.len() || files.is_empty() {
                return command.to_string();
            }
            format!("{command} {}", quoted(&files))
        }
        Ecosystem::Jest | Ecosystem::Vitest => {
            let files: Vec<&String> = test_files
                .iter()
                .filter(|f| {
                    f.contains(".test.") || f.contains(".spec.") || f.contains("__tests__/")
                })
                .collect();
            if files.len() != test_files.len() {
                return command.to_string();
            }
            format!("{command} {}", quoted(&files))
        }
        Ecosystem::Go => {
            let mut packages = BTreeSet::new();
            for f in test_files {
                if !f.ends_with("_test.go") {
                    return command.to_string();
                }
                let dir = f.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                packages.insert(if dir.is_empty() {
                    "./.".to_string()
                } else {
                    format!("./{dir}")
                });
            }
            let list: Vec<String> = packages.iter().map(|p| sh_quote(p)).collect();
            match command.strip_suffix("./...") {
                Some(head) => format!("{head}{}", list.join(" ")),
                None if command.split_whitespace().count() == 2 => {
                    format!("{command} {}", list.join(" "))
                }
                None => command.to_string(),
            }
        }
        Ecosystem::Cargo => {
            if command.split_whitespace().any(|w| w == "--") {
                return command.to_string();
            }
            let mut targets = BTreeSet::new();
            for f in test_files {
                let target = if let Some(rest) = f.strip_prefix("tests/") {
                    match rest.split_once('/') {
                        None => rest
                            .strip_suffix(".rs")
                            .map(|n| format!("--test {}", sh_quote(n))),
                        Some((name, "main.rs")) => Some(format!("--test {}", sh_quote(name))),
                        Some(_) => None,
                    }
                } else if f.starts_with("src/") && f.ends_with(".rs") {
                    Some(if f == "src/main.rs" || f.starts_with("src/bin/") {
                        "--bins".to_string()
                    } else {
                        "--lib".to_string()
                    })
                } else {
                    None
                };
                match target {
                    Some(t) => targets.insert(t),
                    None => return command.to_string(),
                };
            }
            let list: Vec<String> = targets.into_iter().collect();
            format!("{command} {}", list.join(" "))
        }
        Ecosystem::Nextest | Ecosystem::Other => command.to_string(),
    }
}

/// The last `max` bytes of `text`, cut at a line's start and at a
/// character's boundary.
pub fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut at = text.len() - max;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    match text[at..].find('\n') {
        Some(n) if n + 1 < text.len() - at => &text[at + n + 1..],
        _ => &text[at..],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tests: &[(&str, TestStatus)]) -> StageRun {
        StageRun {
            started: true,
            tests: tests.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            timed_out: false,
            seconds: 1.0,
        }
    }

    use TestStatus::{Failed as F, Passed as P};

    #[test]
    fn doc_tests_are_in_no_list() {
        let doc = "src/lib.rs - Level::iter (line 551)";
        assert!(is_doc_test(doc));
        assert!(!is_doc_test("tests::level_iter"));
        assert!(!is_doc_test("a - b (line x)"));
        let base = vec![run(&[("old", P), (doc, P)]); 3];
        let red = vec![run(&[("new", F)]); 3];
        let gold = vec![run(&[("old", P), ("new", P), (doc, P)]); 3];
        let Validation::Validated(lists) = decide(&base, &red, &gold) else {
            panic!("validated");
        };
        assert_eq!(lists.fail_to_pass, vec!["new".to_string(), "old".into()]);
        assert!(lists.pass_to_pass.is_empty());
        // Only a doc test failing before: nothing to list.
        let red = vec![run(&[("old", P), ("new", P), (doc, F)]); 3];
        assert_eq!(
            decide(&base, &red, &gold),
            Validation::Dropped(ValidateDrop::NoFailToPass, Vec::new())
        );
    }

    #[test]
    fn every_drop_reason_has_its_words() {
        use crate::mining::DropReason;
        let scan = [
            DropReason::NoParent,
            DropReason::Revert,
            DropReason::Bot,
            DropReason::CiOnly,
            DropReason::GeneratedOrVendored,
            DropReason::MixedTestHunk,
            DropReason::NoTests,
            DropReason::NoCode,
            DropReason::Binary,
            DropReason::TooManyFiles,
            DropReason::TooSmall,
            DropReason::TooBig,
            DropReason::FormattingOnly,
        ]
        .map(DropReason::as_str);
        let running = [
            ValidateDrop::EnvironmentNotPrepared,
            ValidateDrop::SuiteDidNotStart,
            ValidateDrop::PatchDoesNotApply,
            ValidateDrop::GoldTooSlow,
            ValidateDrop::GoldFails,
            ValidateDrop::GoldNotAlwaysPassing,
            ValidateDrop::FlakyFailToPass,
            ValidateDrop::NoFailToPass,
        ]
        .map(ValidateDrop::as_str);
        for code in scan
            .iter()
            .chain(&running)
            .chain(&["no_test_command", "validation_error"])
        {
            assert_ne!(drop_words(code), code.replace('_', " "), "{code}");
        }
        assert_eq!(drop_words("gold_fails"), "the fix does not pass its tests");
        assert_eq!(drop_words("something_new"), "something new");
    }

    #[test]
    fn fail_to_pass_and_pass_to_pass_from_the_three_stages() {
        let base = vec![run(&[("old", P), ("broken", F)]); 3];
        let red = vec![run(&[("old", P), ("new", F), ("broken", F)]); 3];
        let gold = vec![run(&[("old", P), ("new", P), ("broken", F)]); 3];
        assert_eq!(
            decide(&base, &red, &gold),
            Validation::Validated(TestLists {
                fail_to_pass: vec!["new".into()],
                pass_to_pass: vec!["old".into()],
            })
        );
    }

    #[test]
    fn a_red_that_does_not_compile_fails_every_test() {
        let base = vec![run(&[("old", P)]); 3];
        let red = vec![
            StageRun {
                started: true,
                ..StageRun::default()
            };
            3
        ];
        let gold = vec![run(&[("old", P), ("new", P)]); 3];
        let Validation::Validated(lists) = decide(&base, &red, &gold) else {
            panic!("validated");
        };
        assert_eq!(lists.fail_to_pass, vec!["new".to_string(), "old".into()]);
        assert!(lists.pass_to_pass.is_empty());
    }

    #[test]
    fn each_drop_has_its_reason() {
        let base = vec![run(&[("old", P)]); 3];
        let red = vec![run(&[("old", P), ("new", F)]); 3];
        // Flaky: passes in one RED run.
        let mut flaky_red = red.clone();
        flaky_red[1] = run(&[("old", P), ("new", P)]);
        let gold = vec![run(&[("old", P), ("new", P)]); 3];
        assert_eq!(
            decide(&base, &flaky_red, &gold),
            Validation::Dropped(ValidateDrop::FlakyFailToPass, vec!["new".into()])
        );
        // The gold does not fix it.
        assert_eq!(
            decide(&base, &red, &red),
            Validation::Dropped(ValidateDrop::GoldFails, vec!["new".into()])
        );
        // The gold fixes it once in three.
        let mut mixed_gold = red.clone();
        mixed_gold[0] = run(&[("old", P), ("new", P)]);
        assert_eq!(
            decide(&base, &red, &mixed_gold),
            Validation::Dropped(ValidateDrop::GoldNotAlwaysPassing, vec!["new".into()])
        );
        // Nothing changes.
        assert_eq!(
            decide(&base, &base, &base),
            Validation::Dropped(ValidateDrop::NoFailToPass, Vec::new())
        );
        let mut slow = gold.clone();
        slow[2].seconds = 301.0;
        assert_eq!(
            decide(&base, &red, &slow),
            Validation::Dropped(ValidateDrop::GoldTooSlow, Vec::new())
        );
        let mut stopped = gold.clone();
        stopped[0] = StageRun::default();
        assert_eq!(
            decide(&base, &red, &stopped),
            Validation::Dropped(ValidateDrop::SuiteDidNotStart, Vec::new())
        );
        // A GOLD that does not build reports its crate, and no test.
        let mut unbuilt = gold.clone();
        unbuilt[1] = StageRun {
            started: true,
            ..StageRun::default()
        };
        assert_eq!(
            decide(&base, &red, &unbuilt),
            Validation::Dropped(ValidateDrop::SuiteDidNotStart, Vec::new())
        );
    }

    #[test]
    fn runs_disagree_on_a_status_or_a_start() {
        let a = run(&[("t", P)]);
        assert!(!disagree(&[a.clone(), a.clone(), a.clone()]));
        assert!(disagree(&[a.clone(), run(&[("t", F)]), a.clone()]));
        assert!(disagree(&[a.clone(), StageRun::default()]));
        assert!(disagree(&[a.clone(), run(&[("t", P), ("u", P)])]));
    }

    #[test]
    fn only_the_touched_targets_run() {
        let files = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            targeted_command(
                "python -m pytest -q",
                &files(&["tests/test_a.py", "tests/test_b.py"])
            ),
            "python -m pytest -q tests/test_a.py tests/test_b.py"
        );
        // A conftest.py changes what every test sees: the whole suite.
        assert_eq!(
            targeted_command("pytest", &files(&["tests/test_a.py", "tests/conftest.py"])),
            "pytest"
        );
        assert_eq!(
            targeted_command("cargo test", &files(&["tests/parse.rs", "src/lib.rs"])),
            "cargo test --lib --test parse"
        );
        assert_eq!(
            targeted_command("cargo test", &files(&["tests/common/mod.rs"])),
            "cargo test"
        );
        assert_eq!(
            targeted_command(
                "go test ./...",
                &files(&["pkg/x/x_test.go", "pkg/x/y_test.go", "z_test.go"])
            ),
            "go test ./. ./pkg/x"
        );
        assert_eq!(
            targeted_command("npx vitest run", &files(&["src/a.test.ts"])),
            "npx vitest run src/a.test.ts"
        );
        assert_eq!(
            targeted_command("make test", &files(&["tests/test_a.py"])),
            "make test"
        );
        // A hostile file name is one quoted word.
        assert_eq!(
            targeted_command("pytest", &files(&["tests/test_$(x).py"])),
            "pytest 'tests/test_$(x).py'"
        );
    }

    #[test]
    fn a_tail_starts_at_a_line() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("one\ntwo\nthree\n", 8), "three\n");
        assert_eq!(tail("ééé", 3), "é");
    }
}
