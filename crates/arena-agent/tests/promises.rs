//! The README's promises are tied to the code: every test it names as
//! proof (`arena-core/tests/coding.rs::a_test`, in the table of what each
//! kind of process may read, write and reach, and anywhere else) is a
//! function in that file. A renamed or removed test fails here instead of
//! leaving a promise with nothing behind it.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `` `CRATE/PATH.rs::NAME` `` in `text`: (file under `crates/`, name).
fn cited(text: &str) -> Vec<(String, String)> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|span| {
            let (file, name) = span.split_once("::")?;
            let plain = |s: &str, extra: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || extra.contains(c))
            };
            (file.ends_with(".rs") && plain(file, "-/.") && plain(name, ""))
                .then(|| (file.to_string(), name.to_string()))
        })
        .collect()
}

/// Whether `source` defines a function `name` (a test, sync or async).
fn defines(source: &str, name: &str) -> bool {
    source.lines().map(str::trim_start).any(|l| {
        l.starts_with(&format!("fn {name}("))
            || l.starts_with(&format!("async fn {name}("))
            || l.starts_with(&format!("pub fn {name}("))
            || l.starts_with(&format!("pub async fn {name}("))
    })
}

#[test]
fn every_test_the_readme_cites_exists() {
    let root = workspace();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // The promises table: its header, then its rows.
    let header = "| process | may read | may write | may reach | proved by |";
    let table: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(
        table.len() >= 5,
        "the promises table is gone or short: {table:?}"
    );
    for row in &table {
        let proof = row.trim_end_matches('|').rsplit('|').next().unwrap_or("");
        assert!(
            !cited(proof).is_empty(),
            "a promise names no test that proves it: {row}"
        );
    }
    let all = cited(&readme);
    let mut missing = Vec::new();
    for (file, name) in &all {
        let path = root.join("crates").join(file);
        match std::fs::read_to_string(&path) {
            Ok(source) if defines(&source, name) => {}
            Ok(_) => missing.push(format!("{file}::{name} (no such function)")),
            Err(e) => missing.push(format!("{file}::{name} ({}: {e})", path.display())),
        }
    }
    assert!(
        missing.is_empty(),
        "the README cites tests that do not exist: {missing:#?}"
    );
}

#[test]
fn citations_are_found_and_checked() {
    let text = "proved by `arena-core/tests/a.rs::one_test`, `not a citation`, \
                `arena-agent/src/jail.rs::tests::x y`, `b.rs::two`";
    assert_eq!(
        cited(text),
        vec![
            ("arena-core/tests/a.rs".to_string(), "one_test".to_string()),
            ("b.rs".to_string(), "two".to_string()),
        ]
    );
    let source = "#[tokio::test]\nasync fn one_test() {}\n    fn two() {}\n";
    assert!(defines(source, "one_test") && defines(source, "two"));
    assert!(!defines(source, "one"));
}
