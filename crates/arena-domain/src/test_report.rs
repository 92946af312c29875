//! Reading a verifier's machine-readable test report and grading a task
//! run from it.
//!
//! A task's `tests/tests.json` names the tests that decide it, in
//! SWE-bench's convention: [`TestLists`]. The verifier runs the task's
//! test command with the flags of [`report_command`], which make the runner
//! write a report into the verifier's logs folder; [`parse`] reads that
//! report into [`TestResults`], and [`grade`] decides the run.
//!
//! # Test names
//!
//! Each ecosystem has one normal form, the key of [`TestResults::tests`]:
//!
//! - **pytest**: the node id, `tests/test_x.py::TestC::test_y[1-2]`
//!   (parameters kept as they are). A pytest JUnit report gives the
//!   classname `tests.test_x.TestC` and the name `test_y[1-2]`, sometimes a
//!   `file` attribute: all are mapped to the node id (without `file`, the
//!   module path ends before the first classname part that starts with a
//!   capital letter, pytest's `Test*` classes).
//! - **Go**: `<import path>::TestName/sub` (subtest names as `go test`
//!   prints them, spaces turned into `_`). A list may name the test with or
//!   without its package.
//! - **Rust** (libtest, nextest): the libtest path `module::tests::name`;
//!   nextest's `binary-id$` prefix is dropped.
//! - **jest, vitest**: `file > Describe > inner > title`, the file as the
//!   report gives it (often absolute: [`TestResults::relative_to`] strips
//!   the tree's root). A list may name the test that way, without the file
//!   (`Describe > title`), or by jest's `fullName` (`Describe title`).
//! - **Other JUnit** (jest-junit, go-junit-report, nextest's JUnit):
//!   `classname::name`, or `name` alone when the classname is empty or the
//!   name already starts with it.
//!
//! [`matches`] decides whether a listed name (from `tests.json`) names a
//! test of the report; see its rules.
//!
//! # What a report can and cannot prove
//!
//! A report is written by the runner, in the same processes as the code
//! under test, so code that sets out to lie can print lines a text report
//! believes. The grade therefore never trusts the report alone: the exit
//! code must agree, every listed test must appear, a test that appears
//! twice counts at its worst, libtest's text is read only inside a
//! binary's result block (never the `failures:` section, where captured
//! output is printed), and a block whose count disagrees with its header
//! makes the report inconsistent. The strongest of these is the exit
//! code: a run whose listed tests were made to "pass" by printed lines
//! still exits non-zero when they really failed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use serde::{Deserialize, Serialize};

/// The tests that decide a task (its `tests/tests.json`, SWE-bench's
/// convention): those the change must make pass and those it must keep
/// passing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestLists {
    /// Tests that fail on the base and must pass after the change.
    #[serde(rename = "FAIL_TO_PASS", default)]
    pub fail_to_pass: Vec<String>,
    /// Tests that pass on the base and must still pass (or be skipped).
    #[serde(rename = "PASS_TO_PASS", default)]
    pub pass_to_pass: Vec<String>,
}

/// What became of one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestStatus {
    Passed,
    /// Skipped, ignored, pending, todo, or an expected failure (pytest's
    /// `xfail` is reported as skipped).
    Skipped,
    /// An assertion failed.
    Failed,
    /// The test could not run to its end: an error in a fixture or in its
    /// setup or teardown.
    Errored,
}

impl TestStatus {
    /// How bad a status is; a test reported twice keeps its worst.
    fn severity(self) -> u8 {
        match self {
            TestStatus::Passed => 0,
            TestStatus::Skipped => 1,
            TestStatus::Failed => 2,
            TestStatus::Errored => 3,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TestStatus::Passed => "passed",
            TestStatus::Skipped => "skipped",
            TestStatus::Failed => "failed",
            TestStatus::Errored => "errored",
        }
    }
}

/// The kinds of report Arena reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportFormat {
    /// `<testsuite>`/`<testcase>` with `<failure>`, `<error>`,
    /// `<skipped>` (pytest `--junitxml`, jest-junit, go-junit-report,
    /// nextest).
    JunitXml,
    /// `go test -json` (test2json events).
    GoTestJson,
    /// `cargo test`'s plain text: cargo on stable has no JSON output
    /// without `-Z unstable-options`, so this is what a stable toolchain
    /// gives.
    LibtestText,
    /// libtest's JSON lines (`--format json` on nightly) and nextest's
    /// `--message-format libtest-json`.
    LibtestJson,
    /// jest's and vitest's `--json` output.
    JestJson,
    /// No report: the runner's output is kept for the reader, and only the
    /// exit code decides (the test command could not be given a reporter,
    /// for example `npm test` whose script is unknown).
    ExitCode,
}

impl ReportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ReportFormat::JunitXml => "junit_xml",
            ReportFormat::GoTestJson => "go_test_json",
            ReportFormat::LibtestText => "libtest_text",
            ReportFormat::LibtestJson => "libtest_json",
            ReportFormat::JestJson => "jest_json",
            ReportFormat::ExitCode => "exit_code",
        }
    }
}

impl fmt::Display for ReportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a report says: each test's status under its normal name, and the
/// units (packages, modules, files, the build) that never got to run
/// their tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResults {
    pub format: ReportFormat,
    /// Normal name (see the module's documentation) -> status. A test
    /// reported twice keeps its worst status.
    pub tests: BTreeMap<String, TestStatus>,
    /// Units whose tests never ran because they did not build or load: a
    /// Go package whose build failed, a pytest module that failed to
    /// collect, a jest/vitest file that failed to run, a Rust crate that
    /// did not compile.
    pub not_built: Vec<String>,
    /// Where the report contradicts itself (a libtest block with fewer
    /// results than it announced, a binary that never printed its
    /// result). A report with a problem never resolves a task.
    pub problems: Vec<String>,
}

impl TestResults {
    pub fn new(format: ReportFormat) -> TestResults {
        TestResults {
            format,
            tests: BTreeMap::new(),
            not_built: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Records a test; a test seen twice keeps its worst status (a
    /// printed "ok" never hides a real "FAILED").
    pub fn record(&mut self, name: impl Into<String>, status: TestStatus) {
        let entry = self.tests.entry(name.into()).or_insert(status);
        if status.severity() > entry.severity() {
            *entry = status;
        }
    }

    /// Whether the suite ran at all: some test reported, or some unit
    /// reported as not built (the runner started and judged the code).
    pub fn started(&self) -> bool {
        !self.tests.is_empty() || !self.not_built.is_empty()
    }

    /// Strips `root` (the tree's path, as the runner saw it) from the
    /// start of every name, for reports that give absolute file paths
    /// (jest, vitest). Names not under `root` are kept as they are.
    pub fn relative_to(&mut self, root: &str) {
        let root = root.trim_end_matches('/');
        if root.is_empty() {
            return;
        }
        let prefix = format!("{root}/");
        let tests = std::mem::take(&mut self.tests);
        for (name, status) in tests {
            let name = name
                .strip_prefix(&prefix)
                .map(str::to_string)
                .unwrap_or(name);
            self.record(name, status);
        }
        for unit in &mut self.not_built {
            if let Some(rest) = unit.strip_prefix(&prefix) {
                *unit = rest.to_string();
            }
        }
    }

    /// The statuses of the tests `list_name` names (see [`matches`]): the
    /// tests whose names are the same up to the separators when there are
    /// any, else those it names by a suffix or by jest's `fullName`.
    /// (Grading many names at once goes through [`NameIndex`], which gives
    /// the same answers without a pass over every test per name.)
    pub fn lookup(&self, list_name: &str) -> Vec<(&str, TestStatus)> {
        let wanted = canon(list_name);
        let exact: Vec<(&str, TestStatus)> = self
            .tests
            .iter()
            .filter(|(name, _)| name.as_str() == list_name || canon(name) == wanted)
            .map(|(n, s)| (n.as_str(), *s))
            .collect();
        if !exact.is_empty() {
            return exact;
        }
        self.tests
            .iter()
            .filter(|(name, _)| matches(list_name, name))
            .map(|(n, s)| (n.as_str(), *s))
            .collect()
    }
}

/// The report's names indexed for [`TestResults::lookup`]'s rules: by
/// their separator-free form, by the last part of that form (where every
/// name a listed name ends must be), and by jest's `fullName`.
pub struct NameIndex<'a> {
    tests: Vec<(&'a str, TestStatus)>,
    canons: Vec<String>,
    exact: HashMap<String, Vec<usize>>,
    by_last: HashMap<String, Vec<usize>>,
    full_names: HashMap<String, Vec<usize>>,
}

impl<'a> NameIndex<'a> {
    pub fn new(results: &'a TestResults) -> NameIndex<'a> {
        let n = results.tests.len();
        let mut index = NameIndex {
            tests: Vec::with_capacity(n),
            canons: Vec::with_capacity(n),
            exact: HashMap::with_capacity(n),
            by_last: HashMap::with_capacity(n),
            full_names: HashMap::new(),
        };
        for (i, (name, status)) in results.tests.iter().enumerate() {
            index.tests.push((name.as_str(), *status));
            let c = canon(name);
            index
                .by_last
                .entry(last_part(&c).to_string())
                .or_default()
                .push(i);
            index.exact.entry(c.clone()).or_default().push(i);
            index.canons.push(c);
            if let Some((_, titles)) = name.split_once(" > ") {
                index
                    .full_names
                    .entry(titles.replace(" > ", " "))
                    .or_default()
                    .push(i);
            }
        }
        index
    }

    /// As [`TestResults::lookup`].
    pub fn lookup(&self, list_name: &str) -> Vec<(&'a str, TestStatus)> {
        if list_name.trim().is_empty() {
            return Vec::new();
        }
        let wanted = canon(list_name);
        if let Some(found) = self.exact.get(&wanted) {
            return found.iter().map(|i| self.tests[*i]).collect();
        }
        let ending = format!(".{wanted}");
        let mut found: BTreeSet<usize> = BTreeSet::new();
        found.extend(
            self.by_last
                .get(last_part(&wanted))
                .into_iter()
                .flatten()
                .filter(|i| self.canons[**i].ends_with(&ending)),
        );
        found.extend(self.full_names.get(list_name).into_iter().flatten());
        found.into_iter().map(|i| self.tests[i]).collect()
    }
}

/// A report that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReportError {
    #[error("the JUnit report is not well-formed XML: {0}")]
    Xml(String),
    #[error("the JSON report cannot be read: {0}")]
    Json(String),
    #[error("the report is empty")]
    Empty,
    #[error("the report is not a {format} report: {detail}")]
    NotThisFormat {
        format: ReportFormat,
        detail: String,
    },
}

/// Reads a report of the given format. [`ReportFormat::ExitCode`] reads
/// nothing and gives empty results (its text is the runner's output).
pub fn parse(format: ReportFormat, text: &str) -> Result<TestResults, ReportError> {
    match format {
        ReportFormat::JunitXml => parse_junit(text),
        ReportFormat::GoTestJson => parse_go_json(text),
        ReportFormat::LibtestText => parse_libtest_text(text),
        ReportFormat::LibtestJson => parse_libtest_json(text),
        ReportFormat::JestJson => parse_jest_json(text),
        ReportFormat::ExitCode => Ok(TestResults::new(ReportFormat::ExitCode)),
    }
}

// ---------------------------------------------------------------- JUnit

/// Reads a JUnit XML report: every `<testcase>` anywhere under
/// `<testsuites>`/`<testsuite>`, failed when it holds `<failure>`, errored
/// with `<error>`, skipped with `<skipped>`, passed otherwise. A pytest
/// collection error (an `<error>` whose message is "collection failure",
/// in a testcase named after the module) is a unit that did not build.
pub fn parse_junit(text: &str) -> Result<TestResults, ReportError> {
    if text.trim().is_empty() {
        return Err(ReportError::Empty);
    }
    let mut reader = Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let mut results = TestResults::new(ReportFormat::JunitXml);
    let mut saw_root = false;
    // The innermost <testsuite>'s name ("pytest" for pytest's reports).
    let mut suites: Vec<String> = Vec::new();
    let mut case: Option<Case> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| ReportError::Xml(e.to_string()))?;
        match event {
            Event::Start(e) if e.local_name().as_ref() == "testsuite" => {
                saw_root = true;
                suites.push(attr(&e, "name")?.unwrap_or_default());
            }
            Event::Start(e) | Event::Empty(e)
                if matches!(e.local_name().as_ref(), "testsuite" | "testsuites") =>
            {
                saw_root = true;
            }
            Event::Start(e) if e.local_name().as_ref() == "testcase" => {
                case = Some(Case::from(&e, suites.last().map(String::as_str))?);
            }
            Event::Empty(e) if e.local_name().as_ref() == "testcase" => {
                let c = Case::from(&e, suites.last().map(String::as_str))?;
                c.finish(&mut results);
            }
            Event::Start(e) | Event::Empty(e) if case.is_some() => {
                if let Some(c) = case.as_mut() {
                    match e.local_name().as_ref() {
                        "failure" => c.raise(TestStatus::Failed),
                        "error" => {
                            c.raise(TestStatus::Errored);
                            if attr(&e, "message")?.as_deref() == Some("collection failure") {
                                c.collection_failure = true;
                            }
                        }
                        "skipped" => c.raise(TestStatus::Skipped),
                        _ => {}
                    }
                }
            }
            Event::End(e) if e.local_name().as_ref() == "testcase" => {
                if let Some(c) = case.take() {
                    c.finish(&mut results);
                }
            }
            Event::End(e) if e.local_name().as_ref() == "testsuite" => {
                suites.pop();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root {
        return Err(ReportError::NotThisFormat {
            format: ReportFormat::JunitXml,
            detail: "no <testsuite> or <testsuites> element".into(),
        });
    }
    Ok(results)
}

fn attr(e: &BytesStart<'_>, key: &str) -> Result<Option<String>, ReportError> {
    for a in e.attributes() {
        let a = a.map_err(|err| ReportError::Xml(err.to_string()))?;
        if a.key.local_name().as_ref() == key {
            let value = a
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(|err| ReportError::Xml(err.to_string()))?;
            return Ok(Some(value.into_owned()));
        }
    }
    Ok(None)
}

/// One `<testcase>` being read.
struct Case {
    name: String,
    /// The `file` attribute, when there is one.
    file: Option<String>,
    status: TestStatus,
    collection_failure: bool,
}

impl Case {
    fn from(e: &BytesStart<'_>, suite: Option<&str>) -> Result<Case, ReportError> {
        let name = attr(e, "name")?.unwrap_or_default();
        let classname = attr(e, "classname")?.unwrap_or_default();
        let file = attr(e, "file")?.filter(|f| !f.is_empty());
        let pytest = suite == Some("pytest")
            || file.as_deref().is_some_and(|f| f.ends_with(".py"))
            || name.contains(".py::");
        let name = if pytest {
            pytest_node_id(&classname, &name, file.as_deref())
        } else if classname.is_empty() || classname == name || name.starts_with(&classname) {
            name
        } else {
            format!("{classname}::{name}")
        };
        Ok(Case {
            name,
            file,
            status: TestStatus::Passed,
            collection_failure: false,
        })
    }

    fn raise(&mut self, status: TestStatus) {
        if status.severity() > self.status.severity() {
            self.status = status;
        }
    }

    fn finish(self, results: &mut TestResults) {
        if self.collection_failure {
            results.not_built.push(self.file.unwrap_or(self.name));
        } else if !self.name.is_empty() {
            results.record(self.name, self.status);
        }
    }
}

/// A pytest JUnit testcase's node id: `file::Class::name`. See the
/// module's documentation for how the file is found without `file`.
fn pytest_node_id(classname: &str, name: &str, file: Option<&str>) -> String {
    if classname.is_empty() {
        return name.to_string();
    }
    if let Some(file) = file.filter(|f| f.ends_with(".py")) {
        let module = file.trim_end_matches(".py").replace('/', ".");
        if classname == module {
            return format!("{file}::{name}");
        }
        if let Some(classes) = classname.strip_prefix(&format!("{module}.")) {
            return format!("{file}::{}::{name}", classes.replace('.', "::"));
        }
    }
    let parts: Vec<&str> = classname.split('.').collect();
    let split = parts
        .iter()
        .position(|p| p.starts_with(|c: char| c.is_ascii_uppercase()))
        .unwrap_or(parts.len());
    if split == 0 {
        return format!("{}::{name}", parts.join("::"));
    }
    let mut id = format!("{}.py", parts[..split].join("/"));
    for class in &parts[split..] {
        id.push_str("::");
        id.push_str(class);
    }
    id.push_str("::");
    id.push_str(name);
    id
}

// ---------------------------------------------------------------- go test -json

#[derive(Deserialize)]
struct GoEvent {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Package", default)]
    package: String,
    #[serde(rename = "Test", default)]
    test: Option<String>,
    #[serde(rename = "Output", default)]
    output: Option<String>,
    #[serde(rename = "FailedBuild", default)]
    failed_build: Option<String>,
    /// Go 1.24's `build-output`/`build-fail` events name the package here,
    /// as `path [path.test]`.
    #[serde(rename = "ImportPath", default)]
    import_path: Option<String>,
}

/// Reads `go test -json`: each test's `pass`, `fail` or `skip` action,
/// named `<package>::<Test>`. A package whose `fail` comes without any
/// test of its own having run (its build failed, or its setup) is a unit
/// that did not build, as is a package on a `FAIL\tpkg [build failed]`
/// line (how Go before 1.24 says it, outside test2json). Other lines that
/// are not JSON are passed over; a report with neither is not this format.
/// A test reported both passed and failed counts as failed: before Go
/// 1.20, test2json believed a `--- PASS: TestX` line the test printed
/// itself, and the real `fail` still follows it.
pub fn parse_go_json(text: &str) -> Result<TestResults, ReportError> {
    if text.trim().is_empty() {
        return Err(ReportError::Empty);
    }
    let mut results = TestResults::new(ReportFormat::GoTestJson);
    let mut events = 0usize;
    let mut packages_with_tests: BTreeSet<String> = BTreeSet::new();
    let mut failed_packages: Vec<(String, bool)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            // Before Go 1.24 a build failure is only `go`'s own text (on
            // stderr, which the report command sends along).
            if let Some(rest) = line.strip_prefix("FAIL") {
                let rest = rest.trim();
                for marker in [" [build failed]", " [setup failed]"] {
                    if let Some(package) = rest.strip_suffix(marker) {
                        failed_packages.push((package.trim().to_string(), true));
                    }
                }
            }
            continue;
        }
        let Ok(event) = serde_json::from_str::<GoEvent>(line) else {
            continue;
        };
        events += 1;
        match (&event.test, event.action.as_str()) {
            (Some(test), action) => {
                packages_with_tests.insert(event.package.clone());
                let status = match action {
                    "pass" => TestStatus::Passed,
                    "fail" => TestStatus::Failed,
                    "skip" => TestStatus::Skipped,
                    _ => continue,
                };
                results.record(format!("{}::{test}", event.package), status);
            }
            (None, "fail") => {
                let build = event.failed_build.is_some()
                    || event.output.as_deref().is_some_and(|o| {
                        o.contains("[build failed]") || o.contains("[setup failed]")
                    });
                failed_packages.push((event.package.clone(), build));
            }
            (None, "build-fail") => {
                let package = match event.import_path.as_deref() {
                    Some(path) => path.split(" [").next().unwrap_or(path).to_string(),
                    None => event.package.clone(),
                };
                failed_packages.push((package, true));
            }
            (None, _) => {
                if event.failed_build.is_some() {
                    failed_packages.push((event.package.clone(), true));
                }
            }
        }
    }
    if events == 0 && failed_packages.is_empty() {
        return Err(ReportError::NotThisFormat {
            format: ReportFormat::GoTestJson,
            detail: "no test2json event in it".into(),
        });
    }
    for (package, build) in failed_packages {
        if (build || !packages_with_tests.contains(&package))
            && !results.not_built.contains(&package)
        {
            results.not_built.push(package);
        }
    }
    Ok(results)
}

// ---------------------------------------------------------------- libtest text

/// Reads `cargo test`'s plain text. A test counts only inside a binary's
/// block, from `running N tests` to its `test result:` line, and only on
/// a line `test NAME ... ok|FAILED|ignored`; reading stops at the block's
/// `failures:` (or `successes:`) section, where the tests' captured output
/// is printed, so nothing a test prints there can count. A block whose
/// results are fewer or more than it announced, or that never ends, is a
/// problem of the report. `error[E…]` or `error: could not compile`
/// outside a block means the code did not build.
pub fn parse_libtest_text(text: &str) -> Result<TestResults, ReportError> {
    if text.trim().is_empty() {
        return Err(ReportError::Empty);
    }
    #[derive(PartialEq)]
    enum State {
        Outside,
        Block { announced: usize, seen: usize },
        Captured { announced: usize, seen: usize },
    }
    let mut results = TestResults::new(ReportFormat::LibtestText);
    let mut state = State::Outside;
    let mut blocks = 0usize;
    for raw in text.lines() {
        let line = raw.trim_end_matches('\r');
        match state {
            State::Outside => {
                if let Some(n) = running_count(line) {
                    state = State::Block {
                        announced: n,
                        seen: 0,
                    };
                    blocks += 1;
                } else if (line.starts_with("error[E")
                    || line.starts_with("error: could not compile"))
                    && !results.not_built.iter().any(|u| u == "build")
                {
                    results.not_built.push("build".into());
                }
            }
            State::Block { announced, seen } => {
                if let Some((name, status)) = libtest_line(line) {
                    results.record(name, status);
                    state = State::Block {
                        announced,
                        seen: seen + 1,
                    };
                } else if line == "failures:" || line == "successes:" {
                    state = State::Captured { announced, seen };
                } else if let Some(total) = summary_total(line) {
                    end_block(&mut results, announced, seen, total);
                    state = State::Outside;
                }
            }
            State::Captured { announced, seen } => {
                // Captured output may print a summary of its own: only one
                // that counts the block's tests ends it.
                if summary_total(line) == Some(announced) {
                    end_block(&mut results, announced, seen, announced);
                    state = State::Outside;
                }
            }
        }
    }
    if let State::Block { announced, seen } | State::Captured { announced, seen } = state {
        results.problems.push(format!(
            "a test binary announced {announced} tests, reported {seen} and never printed its result"
        ));
    }
    if blocks == 0 && results.not_built.is_empty() {
        return Err(ReportError::NotThisFormat {
            format: ReportFormat::LibtestText,
            detail: "no `running N tests` line".into(),
        });
    }
    Ok(results)
}

fn end_block(results: &mut TestResults, announced: usize, seen: usize, total: usize) {
    if announced != seen || announced != total {
        results.problems.push(format!(
            "a test binary announced {announced} tests, listed {seen} and counted {total} in its result"
        ));
    }
}

/// The number of tests a libtest summary counts (`test result: ok. 1
/// passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; …`): passed,
/// failed, ignored and measured.
fn summary_total(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("test result: ")?;
    let (_, counts) = rest.split_once(". ")?;
    let mut total = 0usize;
    let mut found = 0;
    for part in counts.split("; ") {
        let Some((n, what)) = part.split_once(' ') else {
            continue;
        };
        if matches!(what, "passed" | "failed" | "ignored" | "measured") {
            total += n.parse::<usize>().ok()?;
            found += 1;
        }
    }
    (found == 4).then_some(total)
}

fn running_count(line: &str) -> Option<usize> {
    let rest = line.strip_prefix("running ")?;
    let n = rest
        .strip_suffix(" tests")
        .or_else(|| rest.strip_suffix(" test"))?;
    n.parse().ok()
}

fn libtest_line(line: &str) -> Option<(String, TestStatus)> {
    let rest = line.strip_prefix("test ")?;
    let (name, result) = rest.rsplit_once(" ... ")?;
    let status = if result == "ok" {
        TestStatus::Passed
    } else if result == "FAILED" {
        TestStatus::Failed
    } else if result == "ignored" || result.starts_with("ignored, ") {
        TestStatus::Skipped
    } else if result.starts_with("bench:") {
        TestStatus::Passed
    } else {
        return None;
    };
    Some((name.to_string(), status))
}

// ---------------------------------------------------------------- libtest JSON

#[derive(Deserialize)]
struct LibtestEvent {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    #[serde(default)]
    name: Option<String>,
}

/// Reads libtest's JSON lines (nightly `--format json`) and nextest's
/// `libtest-json`: `{"type":"test","event":"ok|failed|ignored|timeout",
/// "name":…}`. nextest's `binary-id$` prefix is dropped from names. A
/// test's captured output is a string inside its event, so it cannot be
/// mistaken for an event; lines that are not JSON are passed over.
/// (nextest's suites do not count their own tests consistently, so counts
/// are not checked here.)
pub fn parse_libtest_json(text: &str) -> Result<TestResults, ReportError> {
    if text.trim().is_empty() {
        return Err(ReportError::Empty);
    }
    let mut results = TestResults::new(ReportFormat::LibtestJson);
    let mut events = 0usize;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(event) = serde_json::from_str::<LibtestEvent>(line) else {
            continue;
        };
        events += 1;
        if event.kind != "test" {
            continue;
        }
        let status = match event.event.as_str() {
            "ok" => TestStatus::Passed,
            "failed" | "timeout" => TestStatus::Failed,
            "ignored" => TestStatus::Skipped,
            _ => continue,
        };
        let Some(name) = event.name else { continue };
        let name = match name.split_once('$') {
            Some((_, test)) => test.to_string(),
            None => name,
        };
        results.record(name, status);
    }
    if events == 0 {
        return Err(ReportError::NotThisFormat {
            format: ReportFormat::LibtestJson,
            detail: "no libtest event in it".into(),
        });
    }
    Ok(results)
}

// ---------------------------------------------------------------- jest / vitest

#[derive(Deserialize)]
struct JestReport {
    #[serde(rename = "testResults")]
    test_results: Vec<JestFile>,
}

#[derive(Deserialize)]
struct JestFile {
    name: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(rename = "assertionResults", default)]
    assertion_results: Vec<JestAssertion>,
}

#[derive(Deserialize)]
struct JestAssertion {
    #[serde(rename = "ancestorTitles", default)]
    ancestor_titles: Vec<String>,
    title: String,
    status: String,
}

/// Reads jest's and vitest's `--json` output:
/// `testResults[].assertionResults[]`, each named `file > ancestors… >
/// title`; `passed` passes, `failed` fails, `pending`, `skipped`, `todo`
/// and `disabled` are skipped. A file that failed with no assertion
/// reported (a syntax error, a missing import) did not build.
pub fn parse_jest_json(text: &str) -> Result<TestResults, ReportError> {
    if text.trim().is_empty() {
        return Err(ReportError::Empty);
    }
    let report: JestReport =
        serde_json::from_str(text).map_err(|e| ReportError::Json(e.to_string()))?;
    let mut results = TestResults::new(ReportFormat::JestJson);
    for file in report.test_results {
        if file.assertion_results.is_empty() {
            let failed = file.status.as_deref() == Some("failed")
                || file
                    .message
                    .as_deref()
                    .is_some_and(|m| !m.trim().is_empty());
            if failed {
                results.not_built.push(file.name.clone());
            }
            continue;
        }
        for a in file.assertion_results {
            let status = match a.status.as_str() {
                "passed" => TestStatus::Passed,
                "failed" => TestStatus::Failed,
                "pending" | "skipped" | "todo" | "disabled" => TestStatus::Skipped,
                _ => TestStatus::Errored,
            };
            let mut name = file.name.clone();
            for part in a.ancestor_titles.iter().chain(std::iter::once(&a.title)) {
                name.push_str(" > ");
                name.push_str(part);
            }
            results.record(name, status);
        }
    }
    Ok(results)
}

// ---------------------------------------------------------------- names

/// A name with its separators made one: `::`, ` > `, `/` and nextest's
/// `$` become `.`, a `.py` module's suffix is dropped, and unittest's
/// `test_y (pkg.mod.Class)` becomes `pkg.mod.Class.test_y`. Only the part
/// before the first `[` (pytest's parameters) is touched.
fn canon(name: &str) -> String {
    let name = name.trim();
    match unittest_form(name) {
        Some(form) => canon_of(&form),
        None => canon_of(name),
    }
}

/// [`canon`] once unittest's form is settled, in one pass.
fn canon_of(name: &str) -> String {
    let (head, params) = name.split_at(name.find('[').unwrap_or(name.len()));
    let head = head.trim_start_matches("./");
    let mut out = String::with_capacity(name.len());
    let mut rest = head;
    while let Some(c) = rest.chars().next() {
        let skip = if rest.starts_with(".py::") {
            5
        } else if rest.starts_with("::") {
            2
        } else if rest.starts_with(" > ") {
            3
        } else {
            0
        };
        if skip > 0 {
            out.push('.');
            rest = &rest[skip..];
            continue;
        }
        out.push(if c == '/' || c == '$' { '.' } else { c });
        rest = &rest[c.len_utf8()..];
    }
    if head.ends_with(".py") {
        out.truncate(out.len() - 3);
    }
    out.push_str(params);
    out
}

/// The text after the last `.` of a [`canon`] form (all of it when there
/// is none): a report name that ends with `.` + a listed name has the same.
fn last_part(canon: &str) -> &str {
    canon
        .rsplit_once('.')
        .map(|(_, last)| last)
        .unwrap_or(canon)
}

/// `test_y (pkg.mod.Class)` (Django's and unittest's form, also
/// `test_y (pkg.mod.Class.test_y)` since Python 3.11) as `pkg.mod.Class.test_y`.
fn unittest_form(name: &str) -> Option<String> {
    let (test, rest) = name.split_once(" (")?;
    let inner = rest.strip_suffix(')')?;
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    if !ident(test) || !ident(inner) || !inner.contains('.') {
        return None;
    }
    if inner.ends_with(&format!(".{test}")) {
        Some(inner.to_string())
    } else {
        Some(format!("{inner}.{test}"))
    }
}

/// Whether `list_name` (a name from `tests.json`) names the report's test
/// `report_name`. The rules, in order:
///
/// 1. The same text, or the same after the separators are made one
///    (`tests/test_x.py::TestC::test_y` = `tests.test_x.TestC.test_y`;
///    `test_y (tests.test_x.TestC)`, unittest's form, too).
/// 2. The listed name is the report's name without a leading part, cut at
///    a separator: `TestFoo` names `example.com/m/pkg::TestFoo`,
///    `D > t` names `src/a.test.ts > D > t`, `test_y` names
///    `tests/test_x.py::test_y` (a bare name may name several tests; the
///    grade then wants them all). Never the other way: a listed
///    `tests/test_x.py::test_y` does not name a report's `test_y`.
/// 3. A jest/vitest `fullName` (`D inner t`) names `file > D > inner > t`.
///
/// Parameters are part of the name: `test_y` does not name `test_y[1]`.
pub fn matches(list_name: &str, report_name: &str) -> bool {
    if list_name.trim().is_empty() {
        return false;
    }
    if list_name == report_name {
        return true;
    }
    let (l, r) = (canon(list_name), canon(report_name));
    if l == r || r.ends_with(&format!(".{l}")) {
        return true;
    }
    if let Some((_, titles)) = report_name.split_once(" > ") {
        if titles.replace(" > ", " ") == list_name {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------- grading

/// How the verifier's test run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Exit {
    /// The exit code, when the process exited by itself.
    pub code: Option<i32>,
    /// Arena stopped it at the task's time limit.
    pub timed_out: bool,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
}

impl Exit {
    pub fn code(code: i32) -> Exit {
        Exit {
            code: Some(code),
            ..Exit::default()
        }
    }
}

/// The outcome of a task run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "reason", rename_all = "lowercase")]
pub enum Outcome {
    /// Every FAIL_TO_PASS test passed, every PASS_TO_PASS test passed or
    /// was skipped, and the exit code agrees.
    Resolved,
    /// The tests ran and the change did not make them pass.
    Unresolved,
    /// The run could not judge the change (no report, a report that
    /// cannot be read, a suite that never started, a crash, a timeout):
    /// an error of the run, not a failure of the agent; scores leave it
    /// out.
    Error(String),
}

/// A task run's grade.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grade {
    pub outcome: Outcome,
    /// Why, in a sentence.
    pub reason: String,
    pub fail_to_pass_passed: usize,
    pub fail_to_pass_total: usize,
    /// Listed tests the report does not hold.
    pub missing: Vec<String>,
    /// Listed tests that did not pass (FAIL_TO_PASS: anything but passed;
    /// PASS_TO_PASS: failed or errored), with their status.
    pub failed: Vec<String>,
}

impl Grade {
    /// The part of the FAIL_TO_PASS tests that passed; none when the run
    /// is an error or the task lists none.
    pub fn fail_to_pass_fraction(&self) -> Option<f64> {
        if matches!(self.outcome, Outcome::Error(_)) || self.fail_to_pass_total == 0 {
            None
        } else {
            Some(self.fail_to_pass_passed as f64 / self.fail_to_pass_total as f64)
        }
    }

    fn error(lists: &TestLists, reason: String) -> Grade {
        Grade {
            outcome: Outcome::Error(reason.clone()),
            reason,
            fail_to_pass_passed: 0,
            fail_to_pass_total: lists.fail_to_pass.len(),
            missing: Vec::new(),
            failed: Vec::new(),
        }
    }
}

/// Exit codes of a shell whose command could not run: 126 (found, not
/// executable), 127 (not found).
const COULD_NOT_RUN: [i32; 2] = [126, 127];

/// Grades a run from its report and its exit. The rules, in order:
///
/// 1. **Timeout** — the run was stopped at its time limit: Error.
/// 2. **Crash** — a signal ended it: Error.
/// 3. **No exit code** (and no signal): Error, nothing can be cross-checked.
/// 4. **Could not run** — exit 126 or 127 (the runner or interpreter not
///    found or not executable): Error, whatever a report says.
/// 5. **No lists** — the task names no FAIL_TO_PASS test: Error (the task
///    is broken, not the run's change).
/// 6. **No report** (`results` is `None`): Error.
/// 7. **Exit code only** ([`ReportFormat::ExitCode`]): Resolved iff the
///    exit code is 0 (FAIL_TO_PASS counted all or none).
/// 8. **Never started** — the report holds no test and names no unit that
///    did not build: Error.
/// 9. **Listed tests** — each listed name's tests are found by
///    [`TestResults::lookup`]; a test reported twice counts at its worst.
///    A FAIL_TO_PASS test must have passed; a PASS_TO_PASS test must have
///    passed or been skipped. A listed name with no test is missing. Any
///    missing or failing: Unresolved (a unit that did not build is named
///    as the likely cause: the pack check has shown that the base and the
///    solution build, so a build failure is the change's).
/// 10. **Exit code agrees** — all listed passed but the exit code is not
///     0: Unresolved. Either tests outside the lists failed (named), or
///     the report says nothing failed and the exit says otherwise, so the
///     report is not the whole story of the run.
/// 11. **Consistent report** — the report contradicts itself
///     ([`TestResults::problems`]): Unresolved.
/// 12. Otherwise Resolved.
pub fn grade(lists: &TestLists, results: Option<&TestResults>, exit: Exit) -> Grade {
    let f2p_total = lists.fail_to_pass.len();
    if exit.timed_out {
        return Grade::error(lists, "the tests ran past the task's time limit".into());
    }
    if let Some(signal) = exit.signal {
        return Grade::error(lists, format!("the test run was killed by signal {signal}"));
    }
    let Some(code) = exit.code else {
        return Grade::error(lists, "the test run's exit status is unknown".into());
    };
    if COULD_NOT_RUN.contains(&code) {
        return Grade::error(
            lists,
            format!(
                "the test command could not run (exit {code}: {})",
                if code == 127 {
                    "a command was not found"
                } else {
                    "a command is not executable"
                }
            ),
        );
    }
    if f2p_total == 0 {
        return Grade::error(lists, "the task lists no FAIL_TO_PASS test".into());
    }
    let Some(results) = results else {
        return Grade::error(lists, "the test run wrote no report".into());
    };
    if results.format == ReportFormat::ExitCode {
        let resolved = code == 0;
        return Grade {
            outcome: if resolved {
                Outcome::Resolved
            } else {
                Outcome::Unresolved
            },
            reason: if resolved {
                "the test command exited with 0 (its exit code alone decides: it gives no report)"
                    .into()
            } else {
                format!(
                    "the test command exited with {code} (its exit code alone decides: it gives no report)"
                )
            },
            fail_to_pass_passed: if resolved { f2p_total } else { 0 },
            fail_to_pass_total: f2p_total,
            missing: Vec::new(),
            failed: Vec::new(),
        };
    }
    if !results.started() {
        return Grade::error(
            lists,
            format!("the suite never started: the report holds no test (exit {code})"),
        );
    }

    let mut missing = Vec::new();
    let mut failed = Vec::new();
    let mut f2p_passed = 0usize;
    let mut listed: BTreeSet<&str> = BTreeSet::new();
    let index = NameIndex::new(results);
    for (name, must_pass) in lists
        .fail_to_pass
        .iter()
        .map(|n| (n, true))
        .chain(lists.pass_to_pass.iter().map(|n| (n, false)))
    {
        let found = index.lookup(name);
        listed.extend(found.iter().map(|(n, _)| *n));
        let Some(worst) = found.iter().map(|(_, s)| *s).max_by_key(|s| s.severity()) else {
            missing.push(name.clone());
            continue;
        };
        let ok = match worst {
            TestStatus::Passed => true,
            TestStatus::Skipped => !must_pass,
            TestStatus::Failed | TestStatus::Errored => false,
        };
        if ok {
            if must_pass {
                f2p_passed += 1;
            }
        } else {
            failed.push(format!("{name} ({})", worst.as_str()));
        }
    }

    let outcome_with = |outcome: Outcome, reason: String, missing, failed| Grade {
        outcome,
        reason,
        fail_to_pass_passed: f2p_passed,
        fail_to_pass_total: f2p_total,
        missing,
        failed,
    };

    if !missing.is_empty() || !failed.is_empty() {
        let mut parts = Vec::new();
        if !failed.is_empty() {
            parts.push(format!(
                "{} listed did not pass: {}",
                failed.len(),
                failed.join(", ")
            ));
        }
        if !missing.is_empty() {
            parts.push(format!(
                "{} listed not in the report: {}",
                missing.len(),
                missing.join(", ")
            ));
        }
        if !results.not_built.is_empty() {
            parts.push(format!("did not build: {}", results.not_built.join(", ")));
        }
        return outcome_with(Outcome::Unresolved, parts.join("; "), missing, failed);
    }
    if code != 0 {
        let others: Vec<String> = results
            .tests
            .iter()
            .filter(|(n, s)| {
                !listed.contains(n.as_str())
                    && matches!(s, TestStatus::Failed | TestStatus::Errored)
            })
            .map(|(n, _)| n.clone())
            .collect();
        let reason = if !others.is_empty() {
            format!(
                "every listed test passed, but the run exited with {code}: tests outside the lists failed ({})",
                others.join(", ")
            )
        } else if !results.not_built.is_empty() {
            format!(
                "every listed test passed, but the run exited with {code}: did not build: {}",
                results.not_built.join(", ")
            )
        } else {
            format!(
                "the report says every test passed, but the run exited with {code}: the report does not account for the exit, so it is not trusted"
            )
        };
        return outcome_with(Outcome::Unresolved, reason, missing, failed);
    }
    if !results.problems.is_empty() {
        return outcome_with(
            Outcome::Unresolved,
            format!(
                "the report contradicts itself: {}",
                results.problems.join("; ")
            ),
            missing,
            failed,
        );
    }
    outcome_with(
        Outcome::Resolved,
        format!(
            "all {f2p_total} FAIL_TO_PASS and {} PASS_TO_PASS tests passed, exit 0",
            lists.pass_to_pass.len()
        ),
        missing,
        failed,
    )
}

/// Reads a report's text (none when the run wrote none) and grades the
/// run: a report that cannot be read is an error of the run, said with
/// why. The rules are [`grade`]'s.
pub fn grade_report(
    lists: &TestLists,
    format: ReportFormat,
    text: Option<&str>,
    root: Option<&str>,
    exit: Exit,
) -> Grade {
    let parsed = text.map(|t| parse(format, t));
    match parsed {
        Some(Err(e)) => {
            // The exit rules come first: a timeout is a timeout even when
            // the report it left is cut off.
            let g = grade(lists, None, exit);
            if g.reason == "the test run wrote no report" {
                Grade::error(lists, format!("the test report cannot be read: {e}"))
            } else {
                g
            }
        }
        Some(Ok(mut results)) => {
            if let Some(root) = root {
                results.relative_to(root);
            }
            grade(lists, Some(&results), exit)
        }
        None => grade(lists, None, exit),
    }
}

// ---------------------------------------------------------------- the command

/// The test runners Arena knows how to ask for a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    Pytest,
    Cargo,
    Nextest,
    Go,
    Vitest,
    Jest,
    /// Anything else (`npm test` whose script is unknown, `make test`):
    /// the exit code alone decides.
    Other,
}

impl Ecosystem {
    pub fn as_str(self) -> &'static str {
        match self {
            Ecosystem::Pytest => "pytest",
            Ecosystem::Cargo => "cargo",
            Ecosystem::Nextest => "nextest",
            Ecosystem::Go => "go",
            Ecosystem::Vitest => "vitest",
            Ecosystem::Jest => "jest",
            Ecosystem::Other => "other",
        }
    }

    /// The runner of a test command's last simple command (after the last
    /// `&&`, `||`, `;`, `|` or newline): `pytest`, `py.test`, `python -m
    /// pytest`, `.venv/bin/pytest`, `uv run pytest` (also `poetry`,
    /// `pipenv`, `pdm`), `cargo test`, `cargo nextest run`, `go test`,
    /// `vitest`, `npx vitest`, `pnpm exec vitest`, `jest`, `npx jest`,
    /// `node_modules/.bin/jest`. Anything else, `npm test` included, is
    /// [`Ecosystem::Other`].
    pub fn detect(command: &str) -> Ecosystem {
        match last_command(command) {
            Some(words) => runner_of(&words)
                .map(|(e, _)| e)
                .unwrap_or(Ecosystem::Other),
            None => Ecosystem::Other,
        }
    }
}

impl fmt::Display for Ecosystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to run a task's tests so that they leave a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportPlan {
    /// The `sh` command to run (in the tree, in the check's jail).
    pub command: String,
    pub format: ReportFormat,
    /// The report's file name inside the verifier's logs folder.
    pub report_file: String,
    /// Whether the command runs only the listed tests.
    pub selects: bool,
}

/// The command that runs `test_command` so that it writes a report of a
/// known format into the folder named by the environment variable
/// `logs_dir_var` (normally `ARENA_VERIFIER_LOGS`), running only `tests`
/// where the runner can select them:
///
/// - pytest: `--junitxml=… -o junit_family=xunit1` and the node ids
///   (when every listed name is one);
/// - cargo test: `--no-fail-fast`, the output into `report.txt` (libtest's
///   text: stable cargo has no JSON), `-- --exact NAMES`;
/// - cargo nextest: `--message-format libtest-json` (with
///   `NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1`), `-- --exact NAMES`;
/// - go test: `-json` into `report.json` (stderr too: before Go 1.24 a
///   package that does not build is said only there), run once per
///   `-run` pattern of [`go_run_patterns`] (the exit is the last failing
///   run's);
/// - jest: `--json --outputFile=…`, `--runTestsByPath` with the listed
///   files; vitest: `run --reporter=default --reporter=json
///   --outputFile.json=…` and the listed files;
/// - `npm test` / `npm run test` when the caller knows the script runs
///   jest or vitest (`kind`): the same flags after `--`;
/// - anything else, or a runner that is not the last simple command, or a
///   command with a comment or a trailing `&`: the output into
///   `output.txt` and [`ReportFormat::ExitCode`].
///
/// The report file is removed first, so a stale one is never read. Every
/// test name is hostile input: it is passed as one single-quoted word
/// (names holding a NUL are left out of the selection), never pasted into
/// the command's syntax.
pub fn report_command(
    test_command: &str,
    kind: Ecosystem,
    tests: &[String],
    logs_dir_var: &str,
) -> ReportPlan {
    let var = shell_variable(logs_dir_var);
    let command = test_command.trim().trim_end_matches(';').trim_end();
    let tests: Vec<&str> = tests
        .iter()
        .map(String::as_str)
        .filter(|t| !t.contains('\0') && !t.trim().is_empty())
        .collect();
    let words = last_command(command);
    let found = words.as_deref().and_then(runner_of);
    let npm_script = words.as_deref().is_some_and(is_npm_test);
    let appendable = words.is_some() && !has_comment_or_background(command);
    let kind = match (found, kind) {
        (Some((detected, _)), _) if appendable => detected,
        (None, Ecosystem::Jest | Ecosystem::Vitest) if appendable && npm_script => kind,
        _ => Ecosystem::Other,
    };
    let sep = if npm_script { " --" } else { "" };
    let report = |file: &str| format!("\"${var}\"/{file}");
    let remove = |file: &str| format!("rm -f -- {}\n", report(file));
    match kind {
        Ecosystem::Pytest => {
            let file = "report.xml";
            let selects = !tests.is_empty() && tests.iter().all(|t| is_pytest_node_id(t));
            let mut cmd = format!(
                "{}{command} --junitxml={} -o junit_family=xunit1",
                remove(file),
                report(file)
            );
            if selects {
                for t in &tests {
                    cmd.push(' ');
                    cmd.push_str(&sh_quote(t));
                }
            }
            plan(cmd, ReportFormat::JunitXml, file, selects)
        }
        Ecosystem::Cargo => {
            let file = "report.txt";
            let selects = !tests.is_empty();
            let mut cmd = command.to_string();
            if !has_word(command, "--") {
                cmd.push_str(" --no-fail-fast");
                if selects {
                    cmd.push_str(" --");
                }
            }
            if selects {
                cmd.push_str(" --exact");
                for t in &tests {
                    cmd.push(' ');
                    cmd.push_str(&sh_quote(strip_package(t)));
                }
            }
            plan(
                format!(
                    "{}(\n{cmd}\n) > {} 2>&1\narena_status=$?\ncat {}\nexit $arena_status",
                    remove(file),
                    report(file),
                    report(file)
                ),
                ReportFormat::LibtestText,
                file,
                selects,
            )
        }
        Ecosystem::Nextest => {
            let file = "report.json";
            let selects = !tests.is_empty();
            let mut cmd = format!("{command} --message-format libtest-json");
            if selects {
                if !has_word(command, "--") {
                    cmd.push_str(" --");
                }
                cmd.push_str(" --exact");
                for t in &tests {
                    cmd.push(' ');
                    cmd.push_str(&sh_quote(strip_package(t)));
                }
            }
            plan(
                format!(
                    "{}export NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1\n(\n{cmd}\n) > {}",
                    remove(file),
                    report(file)
                ),
                ReportFormat::LibtestJson,
                file,
                selects,
            )
        }
        Ecosystem::Go => {
            let file = "report.json";
            let patterns = go_run_patterns(&tests);
            let selects = !patterns.is_empty();
            let mut script = format!("{}arena_status=0\n", remove(file));
            if patterns.is_empty() {
                script.push_str(&format!(
                    "(\n{command} -json\n) >> {} 2>&1 || arena_status=$?\n",
                    report(file)
                ));
            }
            // One run per pattern, into the same report: `-run` cannot say
            // "all of TestA, and only x of TestB".
            for p in &patterns {
                script.push_str(&format!(
                    "(\n{command} -json -run {}\n) >> {} 2>&1 || arena_status=$?\n",
                    sh_quote(p),
                    report(file)
                ));
            }
            script.push_str("exit $arena_status");
            plan(script, ReportFormat::GoTestJson, file, selects)
        }
        Ecosystem::Jest => {
            let file = "report.json";
            let files = test_files(&tests);
            let selects = files.is_some();
            let mut cmd = format!(
                "{}{command}{sep} --json --outputFile={}",
                remove(file),
                report(file)
            );
            if let Some(files) = files {
                cmd.push_str(" --runTestsByPath");
                for f in files {
                    cmd.push(' ');
                    cmd.push_str(&sh_quote(f));
                }
            }
            plan(cmd, ReportFormat::JestJson, file, selects)
        }
        Ecosystem::Vitest => {
            let file = "report.json";
            let files = test_files(&tests);
            let selects = files.is_some();
            let needs_run = !npm_script
                && words.as_deref().is_some_and(|w| {
                    runner_of(w).is_some_and(|(_, at)| {
                        !matches!(w.get(at + 1).map(String::as_str), Some("run" | "related"))
                    })
                });
            // `vitest` alone watches where it sees a terminal; `run` runs once.
            let cmd_base = if needs_run {
                insert_after_runner(command, "run").unwrap_or_else(|| command.to_string())
            } else {
                command.to_string()
            };
            let mut cmd = format!(
                "{}{cmd_base}{sep} --reporter=default --reporter=json --outputFile.json={}",
                remove(file),
                report(file)
            );
            if let Some(files) = files {
                for f in files {
                    cmd.push(' ');
                    cmd.push_str(&sh_quote(f));
                }
            }
            plan(cmd, ReportFormat::JestJson, file, selects)
        }
        Ecosystem::Other => {
            let file = "output.txt";
            plan(
                format!(
                    "{}(\n{command}\n) > {} 2>&1\narena_status=$?\ncat {}\nexit $arena_status",
                    remove(file),
                    report(file),
                    report(file)
                ),
                ReportFormat::ExitCode,
                file,
                false,
            )
        }
    }
}

fn plan(command: String, format: ReportFormat, file: &str, selects: bool) -> ReportPlan {
    ReportPlan {
        command,
        format,
        report_file: file.to_string(),
        selects,
    }
}

/// `s` as one `sh` word: bare when it holds only characters no shell
/// treats specially, else in single quotes (a `'` inside written `'\''`).
/// Nothing inside single quotes is expanded: not `$`, not `` ` ``, not a
/// newline.
pub fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The variable's name with anything but `[A-Za-z0-9_]` dropped
/// (`ARENA_VERIFIER_LOGS` when nothing usable is left), so it can only be
/// a variable reference.
fn shell_variable(name: &str) -> String {
    let clean: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if clean.is_empty() || clean.starts_with(|c: char| c.is_ascii_digit()) {
        "ARENA_VERIFIER_LOGS".into()
    } else {
        clean
    }
}

/// The words of the last simple command of `command`, quotes removed;
/// `None` when the command cannot be split (an unclosed quote).
fn last_command(command: &str) -> Option<Vec<String>> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some('\'') => {
                if c == '\'' {
                    quote = None;
                } else {
                    word.push(c);
                }
            }
            Some(_) => match c {
                '"' => quote = None,
                '\\' => {
                    if let Some(n) = chars.next() {
                        word.push(n);
                    }
                }
                _ => word.push(c),
            },
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '\\' => {
                    if let Some(n) = chars.next() {
                        if n != '\n' {
                            word.push(n);
                            in_word = true;
                        }
                    }
                }
                ';' | '&' | '|' | '\n' | '(' | ')' => {
                    words.clear();
                    word.clear();
                    in_word = false;
                }
                c if c.is_whitespace() => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                _ => {
                    word.push(c);
                    in_word = true;
                }
            },
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// Whether the command has an unquoted `#` starting a word (a comment
/// would swallow what is appended) or ends by sending itself to the
/// background.
fn has_comment_or_background(command: &str) -> bool {
    if command.ends_with('&') {
        return true;
    }
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some('"') if c == '\\' => {
                chars.next();
            }
            Some(_) => {}
            None => {
                if c == '\\' {
                    chars.next();
                    prev = 'x';
                    continue;
                }
                if c == '\'' || c == '"' {
                    quote = Some(c);
                } else if c == '#' && (prev.is_whitespace() || ";&|(".contains(prev)) {
                    return true;
                }
            }
        }
        prev = c;
    }
    false
}

fn has_word(command: &str, word: &str) -> bool {
    last_command(command).is_some_and(|w| w.iter().any(|x| x == word))
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The runner a simple command starts, and the index of its word.
fn runner_of(words: &[String]) -> Option<(Ecosystem, usize)> {
    let mut i = 0;
    // Variable assignments and wrappers that run the next word.
    while let Some(w) = words.get(i) {
        let is_assignment = w.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if is_assignment || matches!(w.as_str(), "exec" | "time" | "env" | "command") {
            i += 1;
        } else {
            break;
        }
    }
    let w = |k: usize| words.get(k).map(String::as_str);
    match w(i).map(basename) {
        Some("uv" | "poetry" | "pipenv" | "pdm" | "hatch") if w(i + 1) == Some("run") => {
            runner_of(&words[i + 2..]).map(|(e, at)| (e, at + i + 2))
        }
        Some("npx" | "pnpx" | "bunx") => {
            let mut k = i + 1;
            while w(k).is_some_and(|x| x.starts_with('-')) {
                k += 1;
            }
            runner_of(&words[k..]).map(|(e, at)| (e, at + k))
        }
        Some("pnpm" | "yarn") => match w(i + 1) {
            Some("exec" | "dlx") => runner_of(&words[i + 2..]).map(|(e, at)| (e, at + i + 2)),
            Some("vitest" | "jest") => runner_of(&words[i + 1..]).map(|(e, at)| (e, at + i + 1)),
            _ => None,
        },
        Some("pytest" | "py.test") => Some((Ecosystem::Pytest, i)),
        Some(p)
            if p.starts_with("python") && w(i + 1) == Some("-m") && w(i + 2) == Some("pytest") =>
        {
            Some((Ecosystem::Pytest, i + 2))
        }
        Some("cargo") => {
            let mut k = i + 1;
            if w(k).is_some_and(|x| x.starts_with('+')) {
                k += 1;
            }
            match (w(k), w(k + 1)) {
                (Some("test" | "t"), _) => Some((Ecosystem::Cargo, k)),
                (Some("nextest"), Some("run" | "r")) => Some((Ecosystem::Nextest, k + 1)),
                _ => None,
            }
        }
        Some("go") if w(i + 1) == Some("test") => Some((Ecosystem::Go, i + 1)),
        Some("vitest") => Some((Ecosystem::Vitest, i)),
        Some("jest") => Some((Ecosystem::Jest, i)),
        _ => None,
    }
}

fn is_npm_test(words: &[String]) -> bool {
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    matches!(
        w.as_slice(),
        ["npm", "test"] | ["npm", "t"] | ["npm", "run", "test"] | ["npm", "run-script", "test"]
    )
}

/// `command` with `word` put right after its runner's word (vitest's
/// `run`), by finding that word's last occurrence in the text.
fn insert_after_runner(command: &str, word: &str) -> Option<String> {
    let at = command.rfind("vitest")?;
    let end = at + "vitest".len();
    let next = command[end..].chars().next();
    if next.is_some_and(|c| !c.is_whitespace()) {
        return None;
    }
    Some(format!("{} {word}{}", &command[..end], &command[end..]))
}

/// A pytest node id: a file (`….py`), optionally `::` and names.
fn is_pytest_node_id(name: &str) -> bool {
    let head = name.split('[').next().unwrap_or(name);
    let file = head.split("::").next().unwrap_or(head);
    file.ends_with(".py") && !head.contains(char::is_whitespace) && !name.starts_with('-')
}

/// A Go or Rust name without a package or binary prefix (`pkg::TestA` ->
/// `TestA` for Go; nextest's `bin$path` -> `path`).
fn strip_package(name: &str) -> &str {
    match name.split_once('$') {
        Some((_, rest)) => rest,
        None => name,
    }
}

/// `go test -run`'s patterns for the listed names (package prefixes
/// dropped), so that each run selects listed tests only: the top-level
/// tests listed whole share one pattern (`^(TestA|TestB)$`, each with all
/// its subtests); each other top-level test gets its own, one anchored
/// alternation per level as deep as its shallowest listed subtest
/// (`^TestC$/^(x|y)$`). Empty when nothing is listed.
fn go_run_patterns(tests: &[&str]) -> Vec<String> {
    let mut whole: BTreeSet<String> = BTreeSet::new();
    let mut parts: BTreeMap<&str, Vec<Vec<&str>>> = BTreeMap::new();
    for t in tests {
        let t = t.rsplit_once("::").map(|(_, n)| n).unwrap_or(t);
        let segments: Vec<&str> = t.split('/').collect();
        if segments.len() == 1 {
            whole.insert(regex_quote(segments[0]));
        } else {
            parts.entry(segments[0]).or_default().push(segments);
        }
    }
    let mut patterns = Vec::new();
    if !whole.is_empty() {
        let alternatives: Vec<String> = whole.iter().cloned().collect();
        patterns.push(format!("^({})$", alternatives.join("|")));
    }
    for (top, names) in parts {
        if whole.contains(&regex_quote(top)) {
            continue;
        }
        let depth = names.iter().map(Vec::len).min().unwrap_or(1);
        let mut levels = Vec::new();
        for level in 0..depth {
            let alternatives: BTreeSet<String> =
                names.iter().map(|n| regex_quote(n[level])).collect();
            let alternatives: Vec<String> = alternatives.into_iter().collect();
            levels.push(format!("^({})$", alternatives.join("|")));
        }
        patterns.push(levels.join("/"));
    }
    patterns
}

/// RE2's metacharacters escaped.
fn regex_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The files of jest/vitest names (`file > D > t`), when every name has
/// one.
fn test_files<'a>(tests: &[&'a str]) -> Option<Vec<&'a str>> {
    if tests.is_empty() {
        return None;
    }
    let mut files = BTreeSet::new();
    for t in tests {
        let (file, _) = t.split_once(" > ")?;
        let looks_like_file = file.contains('.') && !file.starts_with('-');
        if !looks_like_file {
            return None;
        }
        files.insert(file);
    }
    Some(files.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_lists_use_swe_bench_names() {
        let lists: TestLists =
            serde_json::from_str(r#"{"FAIL_TO_PASS":["a::b"],"PASS_TO_PASS":[]}"#).expect("parses");
        assert_eq!(lists.fail_to_pass, vec!["a::b".to_string()]);
        let back = serde_json::to_string(&lists).expect("serializes");
        assert_eq!(back, r#"{"FAIL_TO_PASS":["a::b"],"PASS_TO_PASS":[]}"#);
    }

    #[test]
    fn canon_flattens_separators_but_not_parameters() {
        assert_eq!(
            canon("tests/test_x.py::TestC::test_y[a/b::c]"),
            "tests.test_x.TestC.test_y[a/b::c]"
        );
        assert_eq!(
            canon("test_y (tests.test_x.TestC)"),
            "tests.test_x.TestC.test_y"
        );
        assert_eq!(canon("src/lib.rs - f (line 3)"), "src.lib.rs - f (line 3)");
    }
}
