//! The crates stay in their layers: the pure domain pulls in no I/O, no
//! async runtime and no clock, and no workspace crate depends on one above
//! it (the order in `docs/ARCHITECTURE.md`).

use std::path::Path;
use std::process::Command;

/// The workspace crates, lowest layer first; each may depend only on
/// crates before it.
const LAYERS: &[&str] = &[
    "arena-domain",
    "arena-store",
    "arena-provider",
    "arena-agent",
    "arena-core",
    "arena-api",
    "arena-cli",
    "arena-app",
];

fn cargo(args: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(args)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn the_domain_depends_on_nothing_that_does_io() {
    let tree = cargo(&[
        "tree",
        "--locked",
        "--offline",
        "-p",
        "arena-domain",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    for forbidden in [
        "tokio ",
        "rusqlite ",
        "reqwest ",
        "git2 ",
        "hyper ",
        "keyring ",
        "notify ",
        "dirs ",
    ] {
        assert!(
            !tree.lines().any(|l| l.starts_with(forbidden)),
            "arena-domain depends on {forbidden}:\n{tree}"
        );
    }
    // chrono without its `clock` feature: no `Utc::now()` to call.
    let features = cargo(&[
        "tree",
        "--locked",
        "--offline",
        "-p",
        "arena-domain",
        "-e",
        "features",
        "-i",
        "chrono",
        "--prefix",
        "none",
    ]);
    assert!(!features.contains("\"clock\""), "{features}");
}

#[test]
fn the_domain_reads_no_clock_outside_its_tests() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for clock in ["Instant::now", "SystemTime::now", "Utc::now", "Local::now"] {
            assert!(
                !code.contains(clock),
                "{} reads the clock ({clock})",
                path.display()
            );
        }
    }
}

#[test]
fn no_crate_depends_on_a_crate_above_it() {
    let metadata: serde_json::Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--locked",
        "--offline",
        "--format-version",
        "1",
        "--no-deps",
    ]))
    .unwrap();
    let rank = |name: &str| LAYERS.iter().position(|l| *l == name);
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        let Some(own) = rank(name) else { continue };
        for dep in package["dependencies"].as_array().unwrap() {
            if dep["kind"].as_str() == Some("dev") {
                continue;
            }
            let dep_name = dep["name"].as_str().unwrap();
            if let Some(theirs) = rank(dep_name) {
                assert!(
                    theirs < own,
                    "{name} depends on {dep_name}, which is not below it"
                );
            }
        }
    }
}

/// The modules of one folder of a crate: each `.rs` file and each
/// sub-folder, by name (the folder's own `mod.rs`/`lib.rs`/`main.rs` is
/// their parent, not one of them).
fn siblings(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        if path.is_dir()
            || (path.extension().is_some_and(|e| e == "rs")
                && !["mod", "lib", "main"].contains(&name.as_str()))
        {
            out.push((name, path));
        }
    }
    out.sort();
    out
}

/// The text of a module: its file, or every file of its folder.
fn module_text(path: &Path) -> String {
    if path.is_dir() {
        let mut text = String::new();
        for entry in std::fs::read_dir(path).expect("a module folder") {
            text.push_str(&module_text(&entry.expect("an entry").path()));
        }
        text
    } else if path.extension().is_some_and(|e| e == "rs") {
        // Comments (doc links) import nothing.
        let text = std::fs::read_to_string(path).expect("a source file");
        text.lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        String::new()
    }
}

/// The names `prefix` is followed by in `text`: `super::lane`, and each
/// name of `super::{lane, turn::Turn}`.
fn named_after(text: &str, prefix: &str) -> std::collections::BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = std::collections::BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or_default();
            for part in group.split(',') {
                names.insert(ident(part.trim()));
            }
        } else {
            names.insert(ident(rest));
        }
    }
    names
}

/// A circle in `edges` (module → the siblings it imports), if any.
fn circle(edges: &std::collections::BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &std::collections::BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

/// Within each folder of a crate, its modules import one another without a
/// circle (`a` uses `b` uses `a`): shared pieces live below the modules
/// that use them. A module may use its parent (`super::Engine`); the
/// parent's declarations of its children do not count.
fn folder_circles(dir: &Path, top: bool, found: &mut Vec<String>) {
    let modules = siblings(dir);
    let names: std::collections::BTreeSet<&str> = modules.iter().map(|(n, _)| n.as_str()).collect();
    let mut edges = std::collections::BTreeMap::new();
    for (name, path) in &modules {
        let text = module_text(path);
        // A crate's top modules name each other as `crate::x`; the modules
        // of a folder as `super::x` (from a file) or `crate::folder::x`.
        let mut used = named_after(&text, "crate::");
        if !top {
            let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            used = named_after(&text, &format!("crate::{folder}::"));
            if !path.is_dir() {
                used.extend(named_after(&text, "super::"));
            }
        } else if !path.is_dir() {
            used.extend(named_after(&text, "super::"));
        }
        let to: Vec<String> = used
            .into_iter()
            .filter(|u| u != name && names.contains(u.as_str()))
            .collect();
        edges.insert(name.clone(), to);
        if path.is_dir() {
            folder_circles(path, false, found);
        }
    }
    if let Some(c) = circle(&edges) {
        found.push(format!("{}: {}", dir.display(), c.join(" → ")));
    }
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    let crates = std::fs::read_dir(root.join("crates")).expect("crates/");
    let mut sources: Vec<_> = crates
        .map(|e| e.expect("an entry").path().join("src"))
        .collect();
    sources.push(root.join("src-tauri"));
    for src in sources.iter().filter(|s| s.is_dir()) {
        folder_circles(src, true, &mut found);
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_circle_finder_finds_circles() {
    let edges = std::collections::BTreeMap::from([
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), vec!["c".to_string()]),
        ("c".to_string(), vec!["a".to_string()]),
        ("d".to_string(), vec!["a".to_string()]),
    ]);
    assert_eq!(
        circle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let line = std::collections::BTreeMap::from([
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), Vec::new()),
    ]);
    assert_eq!(circle(&line), None);
    assert_eq!(
        named_after(
            "use super::{lane, turn::Turn};\nsuper::files::x()",
            "super::"
        ),
        ["files", "lane", "turn"].map(String::from).into()
    );
}
