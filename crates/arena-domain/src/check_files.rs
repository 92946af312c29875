//! Which files of a change decide what a check command runs, or how: the
//! tests themselves, the test runners' configuration and the build files
//! a check goes through. A contestant whose change touches them may have
//! made its own check pass; the result says so beside "check passed".
//!
//! Judged by the path only (never the content): a `#[cfg(test)]` module
//! inside a Rust source file is not seen, a file under `tests/` is.

/// Folders whose files are tests (any depth).
const TEST_FOLDERS: &[&str] = &["tests", "test", "__tests__", "spec", "testdata", "fixtures"];

/// Files that configure a test runner or the build a check goes through.
const CONFIG_FILES: &[&str] = &[
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "noxfile.py",
    "pyproject.toml",
    "makefile",
    "gnumakefile",
    "justfile",
    "package.json",
    "cargo.toml",
    ".cargo/config.toml",
    "phpunit.xml",
    ".mocharc.json",
    ".mocharc.js",
    ".mocharc.yml",
];

/// Prefixes of runner configurations with any extension (`jest.config.ts`).
const CONFIG_PREFIXES: &[&str] = &[
    "jest.config.",
    "vitest.config.",
    "vitest.workspace.",
    "karma.conf.",
    "playwright.config.",
    "cypress.config.",
    "babel.config.",
];

/// Whether a file at `path` (relative, `/`-separated) is one a check runs
/// or is configured by.
pub fn runs_the_check(path: &str) -> bool {
    let path = path.replace('\\', "/").to_lowercase();
    let names: Vec<&str> = path.split('/').filter(|n| !n.is_empty()).collect();
    let Some((name, folders)) = names.split_last() else {
        return false;
    };
    if folders.iter().any(|f| TEST_FOLDERS.contains(f)) {
        return true;
    }
    if CONFIG_FILES.contains(name) || CONFIG_FILES.contains(&path.as_str()) {
        return true;
    }
    if CONFIG_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return true;
    }
    let stem = name.split('.').next().unwrap_or(name);
    let python = name.ends_with(".py") && (stem.starts_with("test_") || stem.ends_with("_test"));
    let go = name.ends_with("_test.go");
    let ruby = name.ends_with("_spec.rb") || name.ends_with("_test.rb");
    let java = [".java", ".kt", ".cs"]
        .iter()
        .any(|ext| name.ends_with(ext))
        && (stem.ends_with("test") || stem.ends_with("tests"));
    // `*.test.*`, `*.spec.*`: `sum.test.ts`, `app.spec.js`.
    let dotted = names.last().is_some_and(|n| {
        let parts: Vec<&str> = n.split('.').collect();
        parts.len() >= 3
            && parts[1..parts.len() - 1]
                .iter()
                .any(|p| *p == "test" || *p == "spec")
    });
    python || go || ruby || java || dotted
}

/// The paths among `paths` that [`runs_the_check`], each once, in order.
pub fn touched<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for path in paths {
        if runs_the_check(path) && !found.iter().any(|f| f == path) {
            found.push(path.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_and_their_configuration_run_the_check() {
        for path in [
            "tests/test_calc.py",
            "test_calc.py",
            "pkg/calc_test.py",
            "src/conftest.py",
            "pytest.ini",
            "tox.ini",
            "setup.cfg",
            "pyproject.toml",
            "calc_test.go",
            "internal/x/y_test.go",
            "src/sum.test.ts",
            "src/app.spec.js",
            "src/__tests__/app.js",
            "jest.config.ts",
            "vitest.config.mjs",
            "Makefile",
            "package.json",
            "web/package.json",
            "Cargo.toml",
            "crates/x/tests/it.rs",
            "spec/models/user_spec.rb",
            "src/test/java/FooTest.java",
            "Tests/x.py",
        ] {
            assert!(runs_the_check(path), "{path} runs the check");
        }
    }

    #[test]
    fn ordinary_sources_do_not() {
        for path in [
            "calc.py",
            "src/lib.rs",
            "src/testing.rs",
            "contest.py",
            "latest.py",
            "src/attest.go",
            "README.md",
            "docs/test-plan.md.txt/notes",
            "src/protest.ts",
            "package-lock.json",
            "",
        ] {
            assert!(!runs_the_check(path), "{path} does not run the check");
        }
    }

    #[test]
    fn touched_lists_each_once_in_order() {
        let paths = [
            "calc.py",
            "tests/test_calc.py",
            "pytest.ini",
            "tests/test_calc.py",
        ];
        assert_eq!(
            touched(paths),
            vec!["tests/test_calc.py".to_string(), "pytest.ini".to_string()]
        );
        assert!(touched(["calc.py"]).is_empty());
    }
}
