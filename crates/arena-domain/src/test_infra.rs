//! Which of an agent's edits the verifier drops before it runs a task's
//! hidden tests: the edits to the files the test patch touches and to the
//! test infrastructure — what decides how tests are found, run and
//! reported rather than what they test. A contestant that edits the
//! runner's configuration, adds a `conftest.py` that marks everything
//! passed, or replaces the tests gains nothing: those edits are not in the
//! tree the verifier runs, and the result lists them ([`Dropped`]).
//!
//! Pure: a patch's text in, the kept patch's text and the dropped files
//! out. The rules are one table, [`RULES`], each with its reason; the files
//! the test patch and the test lists name are protected besides
//! ([`Protected`]).
//!
//! Decisions where a finer cut was possible: a runner's configuration file
//! is dropped whole (`setup.cfg`, `pyproject.toml`, `package.json`,
//! `Cargo.toml`), not hunk by hunk — a hunk's section is not always in its
//! context lines, the task's environment is prepared for the base (a new
//! dependency would not be installed anyway), and a fix rarely needs them.
//! Every `_test.go` file and every `conftest.py` is dropped, wherever it is:
//! Go compiles a package's test files together (a `TestMain` of the agent's
//! would run the hidden tests and print what it likes) and pytest loads a
//! `conftest.py` from every folder on a test's path.

use serde::{Deserialize, Serialize};

use crate::patch;
use crate::test_report::TestLists;

/// How a rule recognises a path (relative to the tree's top, `/`-separated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// The file's name is exactly this.
    Name(&'static str),
    /// The file's name starts with this (`jest.config.` covers `.js`,
    /// `.ts`, `.mjs`, `.cjs`, `.json`).
    NamePrefix(&'static str),
    /// The file's name ends with this.
    NameSuffix(&'static str),
    /// The path is this or ends with `/` and this (a file in a folder).
    PathEnd(&'static str),
}

impl Match {
    fn matches(self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        match self {
            Match::Name(n) => name == n,
            Match::NamePrefix(p) => name.starts_with(p),
            Match::NameSuffix(s) => name.ends_with(s),
            Match::PathEnd(end) => path == end || path.ends_with(&format!("/{end}")),
        }
    }
}

/// One rule of the test infrastructure: what it matches and why its edits
/// are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub matches: Match,
    /// Why, in words for the result ("pytest's configuration").
    pub why: &'static str,
}

const fn rule(matches: Match, why: &'static str) -> Rule {
    Rule { matches, why }
}

/// The test infrastructure, by ecosystem. An agent's edit to a file any
/// rule matches (created, changed, deleted or renamed, on either side of a
/// rename) is dropped.
pub const RULES: &[Rule] = &[
    // Python: pytest's hooks and configuration; what Python runs at start.
    rule(
        Match::Name("conftest.py"),
        "a pytest conftest.py (hooks that can rewrite results)",
    ),
    rule(Match::Name("pytest.ini"), "pytest's configuration"),
    rule(Match::Name(".pytest.ini"), "pytest's configuration"),
    rule(
        Match::Name("tox.ini"),
        "tox's and pytest's configuration ([pytest])",
    ),
    rule(
        Match::Name("setup.cfg"),
        "a Python runner's configuration ([tool:pytest]), dropped whole",
    ),
    rule(
        Match::Name("pyproject.toml"),
        "a Python runner's configuration ([tool.pytest.ini_options]), dropped whole",
    ),
    rule(
        Match::Name("sitecustomize.py"),
        "code Python runs at every start",
    ),
    rule(
        Match::Name("usercustomize.py"),
        "code Python runs at every start",
    ),
    rule(
        Match::NameSuffix(".pth"),
        "a path file Python runs at every start",
    ),
    // JavaScript and TypeScript: jest, vitest, vite, babel; package.json
    // carries the test script and jest's configuration.
    rule(Match::NamePrefix("jest.config."), "jest's configuration"),
    rule(Match::NamePrefix("jest.setup."), "jest's setup file"),
    rule(
        Match::NamePrefix("vitest.config."),
        "vitest's configuration",
    ),
    rule(Match::NamePrefix("vitest.workspace."), "vitest's workspace"),
    rule(Match::NamePrefix("vitest.setup."), "vitest's setup file"),
    rule(
        Match::NamePrefix("vite.config."),
        "vite's configuration (vitest reads it)",
    ),
    rule(
        Match::NamePrefix("babel.config."),
        "babel's configuration (jest transforms tests with it)",
    ),
    rule(
        Match::NamePrefix(".babelrc"),
        "babel's configuration (jest transforms tests with it)",
    ),
    rule(
        Match::Name("package.json"),
        "package.json (its test script and jest's configuration), dropped whole",
    ),
    // Rust: cargo's configuration, the manifest (a `[[test]]` with
    // `harness = false` replaces libtest), the toolchain.
    rule(
        Match::PathEnd(".cargo/config.toml"),
        "cargo's configuration (runners, flags)",
    ),
    rule(
        Match::PathEnd(".cargo/config"),
        "cargo's configuration (runners, flags)",
    ),
    rule(
        Match::Name("Cargo.toml"),
        "a Cargo manifest (its test targets and harness), dropped whole",
    ),
    rule(
        Match::Name("rust-toolchain.toml"),
        "the Rust toolchain's pin",
    ),
    rule(Match::Name("rust-toolchain"), "the Rust toolchain's pin"),
    // Go: test files are compiled together per package.
    rule(
        Match::NameSuffix("_test.go"),
        "a Go test file (a TestMain of its own would run the tests)",
    ),
];

/// Folder names that hold tests: a folder of one of these names on the
/// path of a file the test patch touches is the tests', whole.
pub const TEST_FOLDERS: &[&str] = &["tests", "test", "__tests__", "testing", "spec"];

/// What the task protects beyond [`RULES`]: the files its test patch
/// touches, the test folders they are in, and the files its test lists
/// name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    /// Every path the test patch touches (old and new side).
    pub files: Vec<String>,
    /// Test folders on those paths (`tests`, `pkg/tests`), without the
    /// trailing `/`.
    pub folders: Vec<String>,
    /// Files the FAIL_TO_PASS and PASS_TO_PASS names start with
    /// (`tests/test_x.py` of `tests/test_x.py::test_y`).
    pub listed: Vec<String>,
}

impl Protected {
    /// What `test_patch` and `lists` protect.
    pub fn of(test_patch: &str, lists: &TestLists) -> Protected {
        let mut files: Vec<String> = Vec::new();
        for file in patch::parse(test_patch) {
            for path in std::iter::once(file.file.path).chain(file.file.old_path) {
                if !path.is_empty() && !files.contains(&path) {
                    files.push(path);
                }
            }
        }
        let mut folders: Vec<String> = Vec::new();
        for file in &files {
            let parts: Vec<&str> = file.split('/').collect();
            for (i, part) in parts.iter().enumerate().take(parts.len().saturating_sub(1)) {
                if TEST_FOLDERS.contains(part) {
                    let folder = parts[..=i].join("/");
                    if !folders.contains(&folder) {
                        folders.push(folder);
                    }
                }
            }
        }
        let mut listed: Vec<String> = Vec::new();
        for name in lists.fail_to_pass.iter().chain(&lists.pass_to_pass) {
            if let Some((file, _)) = name.split_once("::") {
                let looks_like_a_file = file.contains('/') || file.contains('.');
                if looks_like_a_file && !listed.iter().any(|l| l == file) {
                    listed.push(file.to_string());
                }
            }
        }
        Protected {
            files,
            folders,
            listed,
        }
    }

    /// Why an edit to `path` is dropped, if it is.
    pub fn why(&self, path: &str) -> Option<String> {
        let path = path.trim_start_matches("./");
        if self.files.iter().any(|f| f == path) {
            return Some("a file the task's test patch touches".into());
        }
        if let Some(folder) = self
            .folders
            .iter()
            .find(|f| path.starts_with(&format!("{f}/")))
        {
            return Some(format!("in {folder}/, a test folder of the task's"));
        }
        if self.listed.iter().any(|f| f == path) {
            return Some("a file of a test the task names".into());
        }
        RULES
            .iter()
            .find(|r| r.matches.matches(path))
            .map(|r| r.why.to_string())
    }
}

/// An edit the verifier left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    /// The file (its new path; a renamed file's old path is in the reason).
    pub path: String,
    pub reason: String,
}

/// An agent's change, split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The change without the dropped files' sections (`git diff` format).
    pub kept: String,
    pub dropped: Vec<Dropped>,
}

/// Splits `change` (a patch in `git diff` format, as Arena takes a
/// contestant's change) into what the verifier applies and what it drops:
/// every file section whose path (either side of a rename) is protected or
/// test infrastructure ([`Protected::why`]) is dropped whole. Text before
/// the first `diff --git` line is not a file's and is left out.
pub fn split(change: &str, protected: &Protected) -> Split {
    let mut out = Split::default();
    for section in sections(change) {
        let parsed = patch::parse(section);
        let Some(file) = parsed.first().map(|p| &p.file) else {
            continue;
        };
        let paths = std::iter::once(file.path.as_str()).chain(file.old_path.as_deref());
        let why = paths
            .filter_map(|p| protected.why(p).map(|w| (p, w)))
            .next();
        match why {
            Some((p, why)) => out.dropped.push(Dropped {
                path: file.path.clone(),
                reason: if p == file.path {
                    why
                } else {
                    format!("renamed from {p}: {why}")
                },
            }),
            None => out.kept.push_str(section),
        }
    }
    out
}

/// The file sections of a `git diff` patch: each from its `diff --git`
/// line to the next (a hunk's lines start with ` `, `+`, `-` or `\`, and a
/// binary patch's with a length letter and no space, so none is taken for
/// one).
fn sections(patch: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = Vec::new();
    let mut at = 0;
    for line in patch.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            starts.push(at);
        }
        at += line.len();
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(patch.len());
        out.push(&patch[*start..end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modified(path: &str) -> String {
        format!(
            "diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-old\n+new\n"
        )
    }

    fn added(path: &str) -> String {
        format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..2222222\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+new\n"
        )
    }

    fn deleted(path: &str) -> String {
        format!(
            "diff --git a/{path} b/{path}\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
        )
    }

    fn renamed(from: &str, to: &str) -> String {
        format!("diff --git a/{from} b/{to}\nsimilarity index 100%\nrename from {from}\nrename to {to}\n")
    }

    fn protected() -> Protected {
        let test_patch = format!(
            "{}{}",
            modified("tests/test_calc.py"),
            added("pkg/tests/test_new.py")
        );
        let lists = TestLists {
            fail_to_pass: vec!["tests/test_calc.py::test_add".into()],
            pass_to_pass: vec!["tests/test_other.py::test_keep".into(), "TestGo/sub".into()],
        };
        Protected::of(&test_patch, &lists)
    }

    #[test]
    fn the_test_patch_protects_its_files_folders_and_listed_files() {
        let p = protected();
        assert_eq!(p.files, vec!["tests/test_calc.py", "pkg/tests/test_new.py"]);
        assert_eq!(p.folders, vec!["tests", "pkg/tests"]);
        assert_eq!(p.listed, vec!["tests/test_calc.py", "tests/test_other.py"]);
    }

    /// Every rule of the table drops the file it names, with its reason,
    /// and a source file next to it is kept.
    #[test]
    fn every_rule_drops_what_it_names() {
        let cases = [
            ("conftest.py", "conftest"),
            ("src/pkg/conftest.py", "conftest"),
            ("pytest.ini", "pytest's configuration"),
            (".pytest.ini", "pytest's configuration"),
            ("tox.ini", "tox"),
            ("setup.cfg", "tool:pytest"),
            ("pyproject.toml", "tool.pytest"),
            ("sitecustomize.py", "every start"),
            ("lib/usercustomize.py", "every start"),
            ("site-packages/evil.pth", "path file"),
            ("jest.config.js", "jest's configuration"),
            ("web/jest.config.ts", "jest's configuration"),
            ("jest.setup.js", "jest's setup"),
            ("vitest.config.mts", "vitest's configuration"),
            ("vitest.workspace.ts", "vitest's workspace"),
            ("vitest.setup.ts", "vitest's setup"),
            ("vite.config.ts", "vite's"),
            ("babel.config.js", "babel"),
            (".babelrc", "babel"),
            ("package.json", "test script"),
            (".cargo/config.toml", "cargo's configuration"),
            ("crates/x/.cargo/config", "cargo's configuration"),
            ("Cargo.toml", "harness"),
            ("crates/x/Cargo.toml", "harness"),
            ("rust-toolchain.toml", "toolchain"),
            ("rust-toolchain", "toolchain"),
            ("pkg/calc_test.go", "TestMain"),
        ];
        let p = Protected::default();
        for (path, why) in cases {
            let change = format!("{}{}", modified("src/calc.py"), modified(path));
            let split = split(&change, &p);
            assert_eq!(split.kept, modified("src/calc.py"), "{path}");
            assert_eq!(split.dropped.len(), 1, "{path}");
            assert_eq!(split.dropped[0].path, path);
            assert!(
                split.dropped[0].reason.contains(why),
                "{path}: {:?}",
                split.dropped[0]
            );
        }
        // Every rule in the table is exercised above.
        for rule in RULES {
            assert!(
                cases.iter().any(|(path, _)| rule.matches.matches(path)),
                "{rule:?} has no case"
            );
        }
    }

    #[test]
    fn look_alikes_are_kept() {
        let p = protected();
        for path in [
            "src/conftest_helpers.py",
            "src/mypytest.ini.py",
            "src/package.json.md",
            "docs/cargo/config.md",
            "src/calc_test.py",
            "src/testsuite/calc.py",
            "contests/a.py",
            "src/tests.py",
        ] {
            let change = modified(path);
            let split = split(&change, &p);
            assert!(split.dropped.is_empty(), "{path}: {:?}", split.dropped);
            assert_eq!(split.kept, change);
        }
    }

    #[test]
    fn edits_to_the_tests_are_dropped_however_they_are_made() {
        let p = protected();
        let change = [
            modified("tests/test_calc.py"),
            deleted("tests/test_other.py"),
            added("tests/helpers/fake.py"),
            added("pkg/tests/test_new.py"),
            renamed("tests/test_calc.py", "src/moved.py"),
            renamed("src/a.py", "tests/a.py"),
            modified("src/calc.py"),
        ]
        .concat();
        let split = split(&change, &p);
        assert_eq!(split.kept, modified("src/calc.py"));
        let dropped: Vec<(&str, &str)> = split
            .dropped
            .iter()
            .map(|d| (d.path.as_str(), d.reason.as_str()))
            .collect();
        assert_eq!(
            dropped,
            vec![
                ("tests/test_calc.py", "a file the task's test patch touches"),
                (
                    "tests/test_other.py",
                    "in tests/, a test folder of the task's"
                ),
                (
                    "tests/helpers/fake.py",
                    "in tests/, a test folder of the task's"
                ),
                (
                    "pkg/tests/test_new.py",
                    "a file the task's test patch touches"
                ),
                (
                    "src/moved.py",
                    "renamed from tests/test_calc.py: a file the task's test patch touches"
                ),
                ("tests/a.py", "in tests/, a test folder of the task's"),
            ]
        );
    }

    #[test]
    fn a_listed_test_file_outside_the_test_patch_is_protected() {
        let lists = TestLists {
            fail_to_pass: vec!["src/test_inline.py::test_x".into()],
            pass_to_pass: vec![],
        };
        let p = Protected::of("", &lists);
        let split = split(&deleted("src/test_inline.py"), &p);
        assert!(split.kept.is_empty());
        assert_eq!(split.dropped[0].reason, "a file of a test the task names");
    }

    #[test]
    fn an_empty_or_odd_change_splits_to_nothing() {
        let p = protected();
        assert_eq!(split("", &p), Split::default());
        let preamble = format!("From: someone\nSubject: x\n\n{}", modified("src/a.py"));
        assert_eq!(split(&preamble, &p).kept, modified("src/a.py"));
    }

    #[test]
    fn a_binary_section_is_kept_or_dropped_whole() {
        let binary = "diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 3\nKcmZ?wbN>JTCj$T)\n\nliteral 0\nHcmV?d00001\n\n";
        let change = format!("{binary}{}", modified("conftest.py"));
        let split = split(&change, &Protected::default());
        assert_eq!(split.kept, binary);
        assert_eq!(split.dropped.len(), 1);
    }
}
