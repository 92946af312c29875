//! Reading real test reports and grading task runs from them.
//!
//! The reports in `tests/reports/` were written by the real runners (see
//! `tests/reports/README.md` for the projects and commands): pytest 9
//! (`--junitxml`, both JUnit families, and a collection error), Go 1.19
//! (`go test -json`, with a package that does not build and a test that
//! prints a fake `--- PASS` line), cargo test (stable, plain text, with a
//! failing test whose captured output forges result lines and a summary;
//! and a compile error), nextest 0.9 (`libtest-json`), jest 30 and
//! vitest 4 (`--json`, with a file that fails to load).

use std::path::{Path, PathBuf};
use std::process::Command;

use arena_domain::test_report::{
    grade, grade_report, matches, parse, report_command, sh_quote, Ecosystem, Exit, Outcome,
    ReportFormat, TestLists, TestResults, TestStatus,
};

fn report(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reports")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn status(results: &TestResults, name: &str) -> Option<TestStatus> {
    results.tests.get(name).copied()
}

fn lists(f2p: &[&str], p2p: &[&str]) -> TestLists {
    TestLists {
        fail_to_pass: f2p.iter().map(|s| s.to_string()).collect(),
        pass_to_pass: p2p.iter().map(|s| s.to_string()).collect(),
    }
}

// ---------------------------------------------------------------- parsers

#[test]
fn pytest_junit_of_both_families_gives_node_ids() {
    let one = parse(ReportFormat::JunitXml, &report("pytest-xunit1.xml")).expect("xunit1");
    let two = parse(ReportFormat::JunitXml, &report("pytest-xunit2.xml")).expect("xunit2");
    // xunit1 has a `file` attribute, xunit2 does not: the same node ids.
    assert_eq!(one.tests, two.tests);
    use TestStatus::*;
    for (name, want) in [
        ("tests/test_calc.py::TestAdd::test_small", Passed),
        ("tests/test_calc.py::TestAdd::test_param[1-2]", Passed),
        ("tests/test_calc.py::TestAdd::test_param[2-2]", Failed),
        ("tests/test_calc.py::test_fails", Failed),
        ("tests/test_calc.py::test_skipped", Skipped),
        ("tests/test_calc.py::test_xfail", Skipped),
        ("tests/test_calc.py::test_errors", Errored),
    ] {
        assert_eq!(status(&two, name), Some(want), "{name} in {:?}", two.tests);
    }
    assert_eq!(two.tests.len(), 7);
    assert!(two.not_built.is_empty());
    assert!(two.started());
}

#[test]
fn a_pytest_collection_error_is_a_module_that_did_not_build() {
    let r = parse(
        ReportFormat::JunitXml,
        &report("pytest-collection-error.xml"),
    )
    .expect("parses");
    assert!(r.tests.is_empty(), "{:?}", r.tests);
    assert_eq!(r.not_built, vec!["tests/test_broken.py".to_string()]);
    // The change broke the import: not an error of the run, the agent's
    // failure (the pack check showed the base and the solution collect).
    let g = grade(
        &lists(&["tests/test_broken.py::test_never"], &[]),
        Some(&r),
        Exit::code(2),
    );
    assert_eq!(g.outcome, Outcome::Unresolved, "{g:?}");
    assert!(
        g.reason.contains("did not build: tests/test_broken.py"),
        "{}",
        g.reason
    );
    assert_eq!(
        g.missing,
        vec!["tests/test_broken.py::test_never".to_string()]
    );
}

#[test]
fn go_test_json_keeps_the_real_failure_over_a_printed_pass() {
    let r = parse(ReportFormat::GoTestJson, &report("go-test.json")).expect("parses");
    use TestStatus::*;
    let p = "example.com/calc/calc";
    for (name, want) in [
        ("TestAdd", Passed),
        // The test printed "--- PASS: TestFails"; Go 1.19's test2json
        // believed it, then the real fail came.
        ("TestFails", Failed),
        ("TestSkip", Skipped),
        ("TestTable", Failed),
        ("TestTable/one_plus_two", Passed),
        ("TestTable/bad", Failed),
    ] {
        assert_eq!(
            status(&r, &format!("{p}::{name}")),
            Some(want),
            "{name}: {:?}",
            r.tests
        );
    }
    assert_eq!(r.not_built, vec!["example.com/calc/broken".to_string()]);
    let g = grade(
        &lists(&["TestFails"], &["TestAdd"]),
        Some(&r),
        Exit::code(2),
    );
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert_eq!(g.failed, vec!["TestFails (failed)".to_string()]);
}

#[test]
fn go_1_24_build_failures_come_as_events() {
    let text = r#"{"Action":"build-output","ImportPath":"m/p [m/p.test]","Output":"p.go:3:1: undefined: x\n"}
{"Action":"build-fail","ImportPath":"m/p [m/p.test]"}
{"Action":"start","Package":"m/p"}
{"Action":"output","Package":"m/p","Output":"FAIL\tm/p [build failed]\n","FailedBuild":"m/p [m/p.test]"}
{"Action":"fail","Package":"m/p","Elapsed":0,"FailedBuild":"m/p [m/p.test]"}
{"Action":"run","Package":"m/q","Test":"TestQ"}
{"Action":"pass","Package":"m/q","Test":"TestQ","Elapsed":0}
{"Action":"pass","Package":"m/q","Elapsed":0.01}
"#;
    let r = parse(ReportFormat::GoTestJson, text).expect("parses");
    assert_eq!(r.not_built, vec!["m/p".to_string()]);
    assert_eq!(status(&r, "m/q::TestQ"), Some(TestStatus::Passed));
}

#[test]
fn cargo_test_text_never_counts_what_a_failing_test_printed() {
    let r = parse(ReportFormat::LibtestText, &report("cargo-test.txt")).expect("parses");
    use TestStatus::*;
    assert_eq!(status(&r, "tests::adds"), Some(Passed));
    assert_eq!(status(&r, "tests::fails_and_lies"), Some(Failed));
    assert_eq!(status(&r, "tests::slow"), Some(Skipped));
    assert_eq!(status(&r, "outside_passes"), Some(Passed));
    assert_eq!(status(&r, "src/lib.rs - add (line 3)"), Some(Passed));
    // Printed in the failures section, with a forged summary and a forged
    // `running 1 test` block after it: none of it counts.
    assert_eq!(status(&r, "tests::secret"), None, "{:?}", r.tests);
    assert_eq!(status(&r, "tests::forged"), None, "{:?}", r.tests);
    assert_eq!(r.tests.len(), 5, "{:?}", r.tests);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    // Even were the exit 0, the forged names are missing, not passed.
    let g = grade(
        &lists(&["tests::forged"], &["tests::secret"]),
        Some(&r),
        Exit::code(0),
    );
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert_eq!(g.missing.len(), 2);
}

#[test]
fn a_libtest_block_that_lies_about_its_count_is_a_problem() {
    // A program under test that writes straight to the terminal (not
    // through the captured print!) adds a line inside the block.
    let text = "running 1 test\ntest a ... ok\ntest planted ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
    let r = parse(ReportFormat::LibtestText, text).expect("parses");
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let g = grade(&lists(&["planted"], &["a"]), Some(&r), Exit::code(0));
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert!(g.reason.contains("contradicts itself"), "{}", g.reason);
    // A binary that announced tests and never ended (it exited midway).
    let r = parse(
        ReportFormat::LibtestText,
        "running 2 tests\ntest a ... ok\n",
    )
    .expect("parses");
    assert_eq!(r.problems.len(), 1);
}

#[test]
fn a_compile_error_is_the_changes_failure() {
    let r = parse(
        ReportFormat::LibtestText,
        &report("cargo-compile-error.txt"),
    )
    .expect("parses");
    assert!(r.tests.is_empty());
    assert_eq!(r.not_built, vec!["build".to_string()]);
    let g = grade(&lists(&["tests::adds"], &[]), Some(&r), Exit::code(101));
    assert_eq!(g.outcome, Outcome::Unresolved, "{g:?}");
    assert!(g.reason.contains("did not build"), "{}", g.reason);
}

#[test]
fn nextest_libtest_json_drops_the_binary_prefix() {
    let r = parse(ReportFormat::LibtestJson, &report("nextest.json")).expect("parses");
    use TestStatus::*;
    assert_eq!(status(&r, "tests::adds"), Some(Passed));
    assert_eq!(status(&r, "tests::fails_and_lies"), Some(Failed));
    assert_eq!(status(&r, "tests::slow"), Some(Skipped));
    assert_eq!(status(&r, "outside_passes"), Some(Passed));
    // The forged lines are inside the failed event's "stdout" string.
    assert_eq!(status(&r, "tests::forged"), None);
    assert_eq!(r.tests.len(), 4, "{:?}", r.tests);
}

#[test]
fn jest_and_vitest_json_name_tests_by_file_and_titles() {
    for (file, test_file, broken) in [
        ("jest.json", "src/calc.test.js", "src/broken.test.js"),
        (
            "vitest.json",
            "src/calc.vitest.test.js",
            "src/broken.vitest.test.js",
        ),
    ] {
        let mut r = parse(ReportFormat::JestJson, &report(file)).expect(file);
        r.relative_to("/tmp/sc/js/");
        use TestStatus::*;
        for (name, want) in [
            ("add > small numbers > one plus two", Passed),
            ("add > fails", Failed),
            ("add > skipped", Skipped),
            ("add > later", Skipped),
            ("top level", Passed),
        ] {
            let full = format!("{test_file} > {name}");
            assert_eq!(
                status(&r, &full),
                Some(want),
                "{file} {full}: {:?}",
                r.tests
            );
        }
        assert_eq!(r.not_built, vec![broken.to_string()], "{file}");
        // Listed by fullName, by titles alone, or with the file.
        let g = grade(
            &lists(
                &["add small numbers one plus two"],
                &[
                    "top level",
                    &format!("{test_file} > add > small numbers > one plus two"),
                ],
            ),
            Some(&r),
            Exit::code(0),
        );
        assert_eq!(g.outcome, Outcome::Resolved, "{file}: {g:?}");
    }
}

#[test]
fn generic_junit_names_are_classname_and_name() {
    // go-junit-report and nextest's JUnit shapes.
    let text = r#"<?xml version="1.0"?>
<testsuites>
  <testsuite name="example.com/m/pkg" tests="2">
    <testcase classname="example.com/m/pkg" name="TestA"/>
    <testcase classname="example.com/m/pkg" name="TestB"><failure message="boom"/></testcase>
  </testsuite>
  <testsuite name="calc::calc"><testcase classname="calc::calc" name="tests::adds"/></testsuite>
  <testsuite name="empty"/>
</testsuites>"#;
    let r = parse(ReportFormat::JunitXml, text).expect("parses");
    assert_eq!(
        status(&r, "example.com/m/pkg::TestA"),
        Some(TestStatus::Passed)
    );
    assert_eq!(
        status(&r, "example.com/m/pkg::TestB"),
        Some(TestStatus::Failed)
    );
    assert_eq!(
        status(&r, "calc::calc::tests::adds"),
        Some(TestStatus::Passed)
    );
    assert!(matches("TestA", "example.com/m/pkg::TestA"));
    assert!(matches("tests::adds", "calc::calc::tests::adds"));
}

#[test]
fn unreadable_reports_are_typed_errors() {
    assert!(parse(ReportFormat::JunitXml, "<testsuite><testcase></testsuite>").is_err());
    assert!(parse(ReportFormat::JunitXml, "").is_err());
    assert!(parse(ReportFormat::JunitXml, "<html/>").is_err());
    assert!(parse(ReportFormat::JestJson, "{\"testResults\": 3}").is_err());
    assert!(parse(ReportFormat::GoTestJson, "ok  \tm/p\t0.01s\n").is_err());
    assert!(parse(ReportFormat::LibtestText, "hello\n").is_err());
    assert!(parse(ReportFormat::LibtestJson, "not json\n").is_err());
    let g = grade_report(
        &lists(&["a"], &[]),
        ReportFormat::JunitXml,
        Some("<testsuite"),
        None,
        Exit::code(0),
    );
    assert!(
        matches!(&g.outcome, Outcome::Error(r) if r.contains("cannot be read")),
        "{g:?}"
    );
}

// ---------------------------------------------------------------- names

#[test]
fn matches_names_across_forms_and_only_one_way() {
    let yes = [
        // pytest node id against the JUnit-derived forms.
        (
            "tests/test_x.py::TestC::test_y",
            "tests/test_x.py::TestC::test_y",
        ),
        (
            "tests/test_x.py::TestC::test_y[1-2]",
            "tests/test_x.py::TestC::test_y[1-2]",
        ),
        (
            "tests.test_x.TestC.test_y",
            "tests/test_x.py::TestC::test_y",
        ),
        (
            "test_y (tests.test_x.TestC)",
            "tests/test_x.py::TestC::test_y",
        ),
        (
            "test_y (tests.test_x.TestC.test_y)",
            "tests/test_x.py::TestC::test_y",
        ),
        ("TestC::test_y", "tests/test_x.py::TestC::test_y"),
        ("test_y", "tests/test_x.py::test_y"),
        // Go, with or without the package.
        ("TestFoo", "example.com/m/pkg::TestFoo"),
        ("TestFoo/sub_case", "example.com/m/pkg::TestFoo/sub_case"),
        ("example.com/m/pkg::TestFoo", "example.com/m/pkg::TestFoo"),
        // Rust.
        ("module::tests::name", "module::tests::name"),
        ("tests::name", "module::tests::name"),
        // jest / vitest.
        ("D > inner > t", "src/a.test.ts > D > inner > t"),
        ("D inner t", "src/a.test.ts > D > inner > t"),
        ("src/a.test.ts > D > t", "/abs/root/src/a.test.ts > D > t"),
    ];
    for (list, report) in yes {
        assert!(matches(list, report), "{list} should name {report}");
    }
    let no = [
        // Parameters are part of the name.
        (
            "tests/test_x.py::TestC::test_y",
            "tests/test_x.py::TestC::test_y[1-2]",
        ),
        ("tests/test_x.py::test_y[1]", "tests/test_x.py::test_y[2]"),
        // A longer listed name never names a shorter report name.
        ("tests/test_x.py::test_y", "test_y"),
        ("example.com/m/pkg::TestFoo", "TestFoo"),
        // Cut at a separator only.
        ("Foo", "example.com/m/pkg::TestFoo"),
        ("name", "module::tests::surname"),
        // A parent does not name its subtest, nor the other way.
        ("TestFoo", "example.com/m/pkg::TestFoo/sub"),
        ("TestFoo/sub", "example.com/m/pkg::TestFoo"),
        // Other files, other modules.
        ("tests/test_a.py::test_y", "tests/test_b.py::test_y"),
        ("", "anything"),
        // A name with spaces is not unittest's form unless it is one.
        ("f (line 3)", "src/lib.rs - f (line 3)"),
    ];
    for (list, report) in no {
        assert!(!matches(list, report), "{list} should not name {report}");
    }
}

#[test]
fn an_exact_name_wins_over_names_it_only_ends() {
    let mut r = TestResults::new(ReportFormat::JunitXml);
    r.record("tests/test_x.py::test_y", TestStatus::Passed);
    r.record("vendor/tests/test_x.py::test_y", TestStatus::Failed);
    let g = grade(
        &lists(&["tests/test_x.py::test_y"], &[]),
        Some(&r),
        Exit::code(1),
    );
    // The vendored copy's failure explains the exit, but the listed test
    // is the exact one and it passed; the exit still forbids Resolved.
    assert_eq!(g.fail_to_pass_passed, 1);
    assert!(
        g.reason.contains("outside the lists failed"),
        "{}",
        g.reason
    );
    // A bare name names both, and wants both.
    let g = grade(&lists(&["test_y"], &[]), Some(&r), Exit::code(1));
    assert_eq!(g.fail_to_pass_passed, 0);
    assert_eq!(g.outcome, Outcome::Unresolved);
}

// ---------------------------------------------------------------- grade

fn passing() -> TestResults {
    let mut r = TestResults::new(ReportFormat::JunitXml);
    r.record("t.py::f1", TestStatus::Passed);
    r.record("t.py::f2", TestStatus::Passed);
    r.record("t.py::p1", TestStatus::Passed);
    r.record("t.py::p2", TestStatus::Skipped);
    r
}

fn tl() -> TestLists {
    lists(&["t.py::f1", "t.py::f2"], &["t.py::p1", "t.py::p2"])
}

#[test]
fn resolved_needs_every_listed_test_and_a_zero_exit() {
    let g = grade(&tl(), Some(&passing()), Exit::code(0));
    assert_eq!(g.outcome, Outcome::Resolved, "{g:?}");
    assert_eq!((g.fail_to_pass_passed, g.fail_to_pass_total), (2, 2));
    assert_eq!(g.fail_to_pass_fraction(), Some(1.0));
}

#[test]
fn a_skipped_fail_to_pass_test_is_not_a_pass() {
    let mut r = passing();
    r.record("t.py::f2", TestStatus::Skipped);
    let g = grade(&tl(), Some(&r), Exit::code(0));
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert_eq!(g.failed, vec!["t.py::f2 (skipped)".to_string()]);
    assert_eq!(g.fail_to_pass_fraction(), Some(0.5));
}

#[test]
fn a_failing_pass_to_pass_test_unresolves() {
    let mut r = passing();
    r.record("t.py::p1", TestStatus::Errored);
    let g = grade(&tl(), Some(&r), Exit::code(1));
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert_eq!(g.failed, vec!["t.py::p1 (errored)".to_string()]);
    assert_eq!(g.fail_to_pass_passed, 2);
}

#[test]
fn a_test_reported_twice_counts_at_its_worst() {
    let mut r = passing();
    r.record("t.py::f1", TestStatus::Failed);
    r.record("t.py::f1", TestStatus::Passed);
    assert_eq!(r.tests["t.py::f1"], TestStatus::Failed);
    let g = grade(&tl(), Some(&r), Exit::code(0));
    assert_eq!(g.outcome, Outcome::Unresolved);
}

#[test]
fn a_zero_exit_with_a_listed_test_missing_is_not_resolved() {
    let mut r = passing();
    r.tests.remove("t.py::f2");
    let g = grade(&tl(), Some(&r), Exit::code(0));
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert_eq!(g.missing, vec!["t.py::f2".to_string()]);
}

#[test]
fn a_report_of_all_passed_with_a_nonzero_exit_is_not_trusted() {
    let g = grade(&tl(), Some(&passing()), Exit::code(1));
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert!(g.reason.contains("not trusted"), "{}", g.reason);
    let mut r = passing();
    r.record("t.py::unlisted", TestStatus::Failed);
    let g = grade(&tl(), Some(&r), Exit::code(1));
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert!(g.reason.contains("t.py::unlisted"), "{}", g.reason);
}

#[test]
fn errors_of_the_run_are_not_failures() {
    let r = passing();
    let timeout = Exit {
        code: None,
        timed_out: true,
        signal: Some(9),
    };
    for (results, exit, why) in [
        (Some(&r), timeout, "time limit"),
        (
            Some(&r),
            Exit {
                code: None,
                timed_out: false,
                signal: Some(11),
            },
            "signal 11",
        ),
        (Some(&r), Exit::default(), "unknown"),
        (Some(&r), Exit::code(127), "not found"),
        (Some(&r), Exit::code(126), "not executable"),
        (None, Exit::code(0), "no report"),
        (
            Some(&TestResults::new(ReportFormat::JunitXml)),
            Exit::code(0),
            "never started",
        ),
    ] {
        let g = grade(&tl(), results, exit);
        match &g.outcome {
            Outcome::Error(reason) => assert!(reason.contains(why), "{why}: {reason}"),
            other => panic!("{why}: {other:?}"),
        }
        assert_eq!(g.fail_to_pass_fraction(), None);
    }
    // An empty pytest report with exit 5 (no tests collected).
    let g = grade_report(
        &tl(),
        ReportFormat::JunitXml,
        Some(r#"<testsuites><testsuite name="pytest" tests="0"/></testsuites>"#),
        None,
        Exit::code(5),
    );
    assert!(matches!(g.outcome, Outcome::Error(_)), "{g:?}");
    // A task that lists nothing cannot be graded.
    let g = grade(&TestLists::default(), Some(&r), Exit::code(0));
    assert!(matches!(g.outcome, Outcome::Error(_)), "{g:?}");
}

#[test]
fn exit_code_only_decides_by_the_exit() {
    let r = parse(ReportFormat::ExitCode, "whatever was printed\nPASSED\n").expect("parses");
    assert_eq!(
        grade(&tl(), Some(&r), Exit::code(0)).outcome,
        Outcome::Resolved
    );
    let g = grade(&tl(), Some(&r), Exit::code(1));
    assert_eq!(g.outcome, Outcome::Unresolved);
    assert_eq!(g.fail_to_pass_passed, 0);
}

#[test]
fn outcomes_serialize_with_their_reason() {
    let json = serde_json::to_string(&Outcome::Error("no report".into())).expect("serializes");
    assert_eq!(json, r#"{"kind":"error","reason":"no report"}"#);
    let json = serde_json::to_string(&Outcome::Resolved).expect("serializes");
    assert_eq!(json, r#"{"kind":"resolved"}"#);
}

// ---------------------------------------------------------------- the command

#[test]
fn ecosystems_are_detected_from_the_command() {
    use Ecosystem::*;
    for (command, want) in [
        ("pytest", Pytest),
        ("pytest -q tests/", Pytest),
        ("python -m pytest -x", Pytest),
        ("python3.11 -m pytest", Pytest),
        (".venv/bin/pytest", Pytest),
        ("uv run pytest", Pytest),
        ("cd sub && PYTHONPATH=. pytest", Pytest),
        ("cargo test", Cargo),
        ("cargo +stable test -p calc", Cargo),
        ("cargo nextest run", Nextest),
        ("go test ./...", Go),
        ("npx vitest", Vitest),
        ("vitest run", Vitest),
        ("pnpm exec vitest", Vitest),
        ("npx jest", Jest),
        ("jest --ci", Jest),
        ("node_modules/.bin/jest", Jest),
        ("npm test", Other),
        ("make test", Other),
        ("pytest; echo done", Other),
        ("pytest | tee log", Other),
        ("echo 'pytest", Other),
    ] {
        assert_eq!(Ecosystem::detect(command), want, "{command}");
    }
}

#[test]
fn report_plans_ask_each_runner_for_its_report() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let p = report_command(
        "python -m pytest -q",
        Ecosystem::Pytest,
        &names(&["tests/test_x.py::test_y[1-2]"]),
        "ARENA_VERIFIER_LOGS",
    );
    assert_eq!(p.format, ReportFormat::JunitXml);
    assert_eq!(p.report_file, "report.xml");
    assert!(p.selects);
    assert!(
        p.command.contains(
            r#"python -m pytest -q --junitxml="$ARENA_VERIFIER_LOGS"/report.xml -o junit_family=xunit1 'tests/test_x.py::test_y[1-2]'"#
        ),
        "{}",
        p.command
    );
    assert!(p
        .command
        .starts_with("rm -f -- \"$ARENA_VERIFIER_LOGS\"/report.xml\n"));

    // Names that are not node ids: the whole suite, no selection.
    let p = report_command("pytest", Ecosystem::Pytest, &names(&["test_y (a.B)"]), "L");
    assert!(!p.selects);
    assert!(!p.command.contains("test_y"), "{}", p.command);

    let p = report_command("cargo test", Ecosystem::Cargo, &names(&["tests::a"]), "L");
    assert_eq!(p.format, ReportFormat::LibtestText);
    assert!(
        p.command
            .contains("cargo test --no-fail-fast -- --exact tests::a"),
        "{}",
        p.command
    );
    let p = report_command(
        "cargo test -- --test-threads=1",
        Ecosystem::Cargo,
        &names(&["a"]),
        "L",
    );
    assert!(
        p.command
            .contains("cargo test -- --test-threads=1 --exact a"),
        "{}",
        p.command
    );

    let p = report_command(
        "cargo nextest run",
        Ecosystem::Nextest,
        &names(&["t::a"]),
        "L",
    );
    assert_eq!(p.format, ReportFormat::LibtestJson);
    assert!(p.command.contains("NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1"));
    assert!(
        p.command
            .contains("--message-format libtest-json -- --exact t::a"),
        "{}",
        p.command
    );

    let p = report_command(
        "go test ./...",
        Ecosystem::Go,
        &names(&[
            "example.com/m::TestA/x",
            "TestA/y.z",
            "TestB",
            "TestC",
            "TestC/w",
        ]),
        "L",
    );
    assert_eq!(p.format, ReportFormat::GoTestJson);
    // TestB and TestC whole in one run, only x and y.z of TestA in another.
    assert!(
        p.command
            .contains("go test ./... -json -run '^(TestB|TestC)$'\n"),
        "{}",
        p.command
    );
    assert!(
        p.command
            .contains(r"go test ./... -json -run '^(TestA)$/^(x|y\.z)$'"),
        "{}",
        p.command
    );
    assert_eq!(p.command.matches("go test").count(), 2, "{}", p.command);

    let p = report_command(
        "npx jest",
        Ecosystem::Jest,
        &names(&["src/a.test.js > D > t"]),
        "L",
    );
    assert_eq!(p.format, ReportFormat::JestJson);
    assert!(
        p.command.contains(
            r#"npx jest --json --outputFile="$L"/report.json --runTestsByPath src/a.test.js"#
        ),
        "{}",
        p.command
    );
    let p = report_command("npx vitest", Ecosystem::Vitest, &names(&["D > t"]), "L");
    assert!(
        p.command.contains(r#"npx vitest run --reporter=default --reporter=json --outputFile.json="$L"/report.json"#),
        "{}",
        p.command
    );
    assert!(!p.selects);

    // npm test: jest's flags after `--` when the caller knows the script.
    let p = report_command("npm test", Ecosystem::Jest, &[], "L");
    assert!(
        p.command.contains("npm test -- --json --outputFile="),
        "{}",
        p.command
    );
    // ...and the exit code alone when it does not.
    let p = report_command("npm test", Ecosystem::Other, &[], "L");
    assert_eq!(p.format, ReportFormat::ExitCode);
    assert_eq!(p.report_file, "output.txt");

    // A runner that is not the last command, a comment, a background job.
    for command in ["pytest; echo done", "pytest # all of them", "pytest &"] {
        let p = report_command(command, Ecosystem::Pytest, &[], "L");
        assert_eq!(p.format, ReportFormat::ExitCode, "{command}");
    }
    // The variable's name can only be a variable's name.
    let p = report_command("pytest", Ecosystem::Pytest, &[], "X; rm -rf /");
    assert!(p.command.contains("\"$Xrmrf\"/report.xml"), "{}", p.command);
}

#[test]
fn sh_quote_keeps_plain_words_plain() {
    assert_eq!(sh_quote("tests/a.py::b"), "tests/a.py::b");
    assert_eq!(sh_quote("a b"), "'a b'");
    assert_eq!(sh_quote("it's"), r"'it'\''s'");
    assert_eq!(sh_quote(""), "''");
}

/// A runner standing in for pytest, cargo, go and npx: it writes the
/// arguments it was given, each ended by a NUL, and exits 0. (What is
/// attacked here is the shell's reading of the command; the runner's own
/// behaviour is beside the point.)
fn fake_runner(dir: &Path, name: &str) {
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$ARGS_FILE\"\n")
        .expect("writes the runner");
    Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .expect("chmod runs");
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("arena-report-command-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).expect("creates the temp dir");
    std::fs::create_dir_all(dir.join("logs")).expect("creates the logs dir");
    dir
}

#[test]
fn hostile_test_names_never_run_anything() {
    let dir = temp_dir("hostile");
    let canary = dir.join("CANARY");
    let c = canary.display().to_string();
    let hostile: Vec<String> = vec![
        format!("tests/t.py::test_a; touch {c}"),
        format!("tests/t.py::test_$(touch {c})"),
        format!("tests/t.py::test_`touch {c}`"),
        format!("tests/t.py::test_'; touch {c}; echo '"),
        format!("tests/t.py::test_\"; touch {c}; echo \""),
        format!("tests/t.py::test_x\ntouch {c}"),
        format!("tests/t.py::test_${{IFS}}$(touch${{IFS}}{c})"),
        "tests/t.py::test_[a|b&c>d<e]".to_string(),
        format!("tests/t.py::test_x\\\ntouch {c}"),
    ];
    for name in ["pytest", "cargo", "go", "npx"] {
        fake_runner(&dir.join("bin"), name);
    }
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // pytest selects node ids only (no blank before the parameters), so
    // its hostile names carry their payload in the parameters or without
    // blanks.
    let pytest_names: Vec<String> = hostile
        .iter()
        .map(|h| format!("tests/t.py::test_x[{h}]"))
        .chain([
            "tests/t.py::test_$(touch${IFS}CANARY)".to_string(),
            "tests/t.py::test_`touch${IFS}CANARY`".to_string(),
            "tests/t.py::a;touch${IFS}CANARY".to_string(),
            "tests/t.py::a&&touch${IFS}CANARY||".to_string(),
        ])
        .collect();
    let cases: Vec<(&str, Ecosystem, Vec<String>)> = vec![
        ("pytest", Ecosystem::Pytest, pytest_names),
        ("cargo test", Ecosystem::Cargo, hostile.clone()),
        ("go test ./...", Ecosystem::Go, hostile.clone()),
        (
            "npx jest",
            Ecosystem::Jest,
            hostile.iter().map(|h| format!("{h}.js > D > t")).collect(),
        ),
    ];
    for (command, kind, names) in cases {
        let plan = report_command(command, kind, &names, "ARENA_VERIFIER_LOGS");
        assert!(plan.selects, "{command}");
        let args_file = dir.join("args");
        let _ = std::fs::remove_file(&args_file);
        let out = Command::new("sh")
            .arg("-c")
            .arg(&plan.command)
            .current_dir(&dir)
            .env("PATH", &path)
            .env("ARGS_FILE", &args_file)
            .env("ARENA_VERIFIER_LOGS", dir.join("logs"))
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "{command}: {}\n{}",
            plan.command,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!canary.exists(), "{command} ran a name: {}", plan.command);
        let args = std::fs::read(&args_file).expect("the runner ran");
        let args: Vec<String> = args
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        match kind {
            // Each name arrives as one argument, exactly as listed.
            Ecosystem::Pytest => {
                for n in &names {
                    assert!(args.contains(n), "{command}: {n:?} not in {args:?}");
                }
            }
            // A Rust test name has no `$`: what comes before one is
            // nextest's binary id, and is dropped.
            Ecosystem::Cargo => {
                for n in &names {
                    let n = n.split_once('$').map(|(_, t)| t).unwrap_or(n);
                    assert!(
                        args.iter().any(|a| a == n),
                        "{command}: {n:?} not in {args:?}"
                    );
                }
            }
            // The pattern is one argument after -run.
            Ecosystem::Go => {
                let at = args.iter().position(|a| a == "-run").expect("-run");
                assert_eq!(args.len(), at + 2, "{args:?}");
            }
            _ => {
                let files: Vec<&str> = names
                    .iter()
                    .map(|n| n.split(" > ").next().unwrap_or(n))
                    .collect();
                for f in files {
                    assert!(
                        args.iter().any(|a| a == f),
                        "{command}: {f:?} not in {args:?}"
                    );
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_fallback_keeps_the_exit_code_and_the_output() {
    let dir = temp_dir("fallback");
    let plan = report_command(
        "echo hello; exit 3",
        Ecosystem::Other,
        &[],
        "ARENA_VERIFIER_LOGS",
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&plan.command)
        .env("ARENA_VERIFIER_LOGS", dir.join("logs"))
        .output()
        .expect("sh runs");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    let kept = std::fs::read_to_string(dir.join("logs").join(&plan.report_file)).expect("kept");
    assert_eq!(kept, "hello\n");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- real runners

/// Whether `program args…` runs here; when not, the reason, printed by
/// the test that skips.
fn runs_here(program: &str, args: &[&str]) -> Result<(), String> {
    match Command::new(program).args(args).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("`{program}` cannot run: {e}")),
    }
}

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("creates the folder");
    }
    std::fs::write(&path, text).expect("writes the file");
}

/// Runs the plan for `lists` in `dir` with the real runner and grades the
/// report it leaves.
fn run_plan(dir: &Path, command: &str, lists: &TestLists, env: &[(&str, &Path)]) -> Grade {
    let kind = Ecosystem::detect(command);
    let names: Vec<String> = lists
        .fail_to_pass
        .iter()
        .chain(&lists.pass_to_pass)
        .cloned()
        .collect();
    let plan = report_command(command, kind, &names, "ARENA_VERIFIER_LOGS");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).expect("creates the logs folder");
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(&plan.command)
        .current_dir(dir)
        .env("ARENA_VERIFIER_LOGS", &logs);
    for (k, v) in env {
        sh.env(k, v);
    }
    let out = sh.output().expect("sh runs");
    let text = std::fs::read_to_string(logs.join(&plan.report_file)).ok();
    let root = dir.display().to_string();
    let g = grade_report(
        lists,
        plan.format,
        text.as_deref(),
        Some(&root),
        Exit::code(out.status.code().unwrap_or(-1)),
    );
    println!("{command} -> {:?}: {}", g.outcome, g.reason);
    g
}

use arena_domain::test_report::Grade;

#[test]
fn go_test_leaves_the_report_its_plan_names() {
    if let Err(why) = runs_here("go", &["version"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = temp_dir("go");
    write(&dir, "go.mod", "module example.com/calc\n\ngo 1.19\n");
    write(
        &dir,
        "calc/calc.go",
        "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
    );
    write(
        &dir,
        "calc/calc_test.go",
        r#"package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("wrong")
	}
}

func TestFails(t *testing.T) { t.Fatal("no") }

func TestTable(t *testing.T) {
	for _, c := range []struct{ name string; a, b, want int }{{"one plus two", 1, 2, 3}, {"bad", 2, 2, 5}} {
		t.Run(c.name, func(t *testing.T) {
			if Add(c.a, c.b) != c.want {
				t.Fatal("wrong")
			}
		})
	}
}
"#,
    );
    let cache = dir.join("gocache");
    let env = [
        ("GOCACHE", cache.as_path()),
        ("GOFLAGS", Path::new("-mod=mod")),
    ];
    // Only the listed tests run: TestFails and TestTable/bad would fail.
    let g = run_plan(
        &dir,
        "go test ./...",
        &lists(
            &["TestTable/one_plus_two"],
            &["example.com/calc/calc::TestAdd"],
        ),
        &env,
    );
    assert_eq!(g.outcome, Outcome::Resolved, "{g:?}");
    let g = run_plan(
        &dir,
        "go test ./...",
        &lists(&["TestFails"], &["TestAdd"]),
        &env,
    );
    assert_eq!(g.outcome, Outcome::Unresolved, "{g:?}");
    assert_eq!(g.failed, vec!["TestFails (failed)".to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cargo_test_leaves_the_report_its_plan_names() {
    if let Err(why) = runs_here("cargo", &["--version"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = temp_dir("cargo");
    write(
        &dir,
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write(
        &dir,
        "src/lib.rs",
        r#"pub fn add(a: i32, b: i32) -> i32 { a + b }

#[cfg(test)]
mod tests {
    #[test]
    fn adds() { assert_eq!(super::add(1, 2), 3); }
    #[test]
    fn adds_more() { assert_eq!(super::add(2, 2), 4); }
    #[test]
    fn fails() {
        println!("test tests::fails ... ok");
        assert_eq!(super::add(2, 2), 5);
    }
}
"#,
    );
    let target = dir.join("target");
    let env = [("CARGO_TARGET_DIR", target.as_path())];
    // `--exact` keeps `tests::adds` from also running `tests::adds_more`.
    let g = run_plan(
        &dir,
        "cargo test --offline",
        &lists(&["tests::adds"], &[]),
        &env,
    );
    assert_eq!(g.outcome, Outcome::Resolved, "{g:?}");
    let g = run_plan(
        &dir,
        "cargo test --offline",
        &lists(&["tests::fails"], &["tests::adds"]),
        &env,
    );
    assert_eq!(g.outcome, Outcome::Unresolved, "{g:?}");
    assert_eq!(g.failed, vec!["tests::fails (failed)".to_string()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pytest_leaves_the_report_its_plan_names() {
    // pytest from ARENA_TEST_PYTHON (a virtualenv's python), else python3.
    let python = std::env::var("ARENA_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    if let Err(why) = runs_here(&python, &["-m", "pytest", "--version"]) {
        eprintln!("skipped: {why} (set ARENA_TEST_PYTHON to a python with pytest)");
        return;
    }
    let dir = temp_dir("pytest");
    write(&dir, "tests/__init__.py", "");
    write(
        &dir,
        "tests/test_calc.py",
        r#"import pytest

class TestAdd:
    @pytest.mark.parametrize("a,b", [(1, 2), (2, 2)])
    def test_param(self, a, b):
        assert a + b == 3

def test_fails():
    print("tests/test_calc.py::test_fails PASSED")
    assert False
"#,
    );
    let command = format!("{python} -m pytest -q -p no:cacheprovider");
    let g = run_plan(
        &dir,
        &command,
        &lists(&["tests/test_calc.py::TestAdd::test_param[1-2]"], &[]),
        &[],
    );
    assert_eq!(g.outcome, Outcome::Resolved, "{g:?}");
    let g = run_plan(
        &dir,
        &command,
        &lists(&["tests/test_calc.py::test_fails"], &[]),
        &[],
    );
    assert_eq!(g.outcome, Outcome::Unresolved, "{g:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_name_index_answers_as_lookup_does() {
    use arena_domain::test_report::NameIndex;
    let mut all = TestResults::new(ReportFormat::JunitXml);
    for (file, format) in [
        ("pytest-xunit2.xml", ReportFormat::JunitXml),
        ("go-test.json", ReportFormat::GoTestJson),
        ("cargo-test.txt", ReportFormat::LibtestText),
        ("jest.json", ReportFormat::JestJson),
    ] {
        let r = parse(format, &report(file)).expect(file);
        for (n, s) in r.tests {
            all.record(n, s);
        }
    }
    all.record("vendor/tests/test_calc.py::test_fails", TestStatus::Passed);
    all.record("test_y (tests.test_x.TestC)", TestStatus::Passed);
    let index = NameIndex::new(&all);
    let mut probes: Vec<String> = all.tests.keys().cloned().collect();
    for name in all.tests.keys() {
        // Every ending at a separator, and jest's fullName.
        for sep in ["::", "/", " > ", "."] {
            let mut rest = name.as_str();
            while let Some((_, tail)) = rest.split_once(sep) {
                probes.push(tail.to_string());
                rest = tail;
            }
        }
        if let Some((_, titles)) = name.split_once(" > ") {
            probes.push(titles.replace(" > ", " "));
        }
    }
    probes.extend(
        [
            "",
            "nothing",
            "test_y",
            "tests.test_x.TestC.test_y",
            "fails",
        ]
        .map(String::from),
    );
    for probe in &probes {
        let mut a = all.lookup(probe);
        let mut b = index.lookup(probe);
        a.sort();
        b.sort();
        assert_eq!(a, b, "{probe:?}");
    }
    // And many names are graded quickly: 20,000 tests, 2,000 listed.
    let mut big = TestResults::new(ReportFormat::JunitXml);
    for i in 0..20_000 {
        big.record(
            format!("pkg{}/tests/test_m{i}.py::TestC::test_{i}", i % 50),
            TestStatus::Passed,
        );
    }
    let listed: Vec<String> = (0..2_000)
        .map(|i| format!("pkg{}/tests/test_m{i}.py::TestC::test_{i}", i % 50))
        .collect();
    let l = TestLists {
        fail_to_pass: listed[..10].to_vec(),
        pass_to_pass: listed[10..].to_vec(),
    };
    let started = std::time::Instant::now();
    let indexed = NameIndex::new(&big);
    println!("indexed 20,000 names in {:?}", started.elapsed());
    drop(indexed);
    let started = std::time::Instant::now();
    let g = grade(&l, Some(&big), Exit::code(0));
    let took = started.elapsed();
    println!("graded 2,000 listed names over 20,000 tests in {took:?}");
    assert_eq!(g.outcome, Outcome::Resolved);
    assert!(took.as_secs_f64() < 2.0, "{took:?}");
}
