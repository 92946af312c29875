//! What a mined Rust candidate's test runs need beyond its test targets
//! (issue 41, point 4), from the texts of its files, **pure**:
//!
//! - the cargo **features** that gate the code its test patch touches: a
//!   test module in `src/kv/value.rs` is compiled only with the features
//!   of `#[cfg(feature = "…")]` on `mod kv` (in `src/lib.rs`) and on `mod
//!   value` (in `src/kv.rs` or `src/kv/mod.rs`); an integration test file
//!   only with those of its own `#![cfg(feature = "…")]`;
//! - the test **targets** a manifest declares (`[[test]]` with a `path`),
//!   and whether it declares only those (`autotests = false`, or a 2015
//!   edition manifest with any `[[test]]`, where cargo infers no others).
//!
//! A `cfg` that says `not(…)` is left alone: enabling its feature would
//! take the code out.

/// The features named in `cfg` attributes of `text`: each
/// `feature = "name"` of an attribute that starts `#[cfg(` or `#![cfg(`
/// and says no `not(`.
fn features_in(attrs: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for attr in attrs {
        let a = attr.trim();
        if !(a.starts_with("#[cfg(") || a.starts_with("#![cfg(")) || a.contains("not(") {
            continue;
        }
        let mut rest = a;
        while let Some(at) = rest.find("feature") {
            rest = &rest[at + "feature".len()..];
            let after = rest.trim_start();
            let Some(value) = after.strip_prefix('=') else {
                continue;
            };
            let value = value.trim_start();
            let Some(value) = value.strip_prefix('"') else {
                continue;
            };
            if let Some(end) = value.find('"') {
                let name = &value[..end];
                if !name.is_empty() && !found.iter().any(|f| f == name) {
                    found.push(name.to_string());
                }
            }
        }
    }
    found
}

/// Whether `line` declares the module `name` (`mod name;` or `mod name {`,
/// with any visibility).
fn declares(line: &str, name: &str) -> bool {
    let mut words = line.trim().trim_start_matches("pub").trim_start();
    if words.starts_with('(') {
        match words.find(')') {
            Some(end) => words = words[end + 1..].trim_start(),
            None => return false,
        }
    }
    let Some(rest) = words.strip_prefix("mod ") else {
        return false;
    };
    let rest = rest.trim_start();
    rest.strip_prefix(name)
        .is_some_and(|after| matches!(after.trim_start().chars().next(), Some(';' | '{')))
}

/// The attribute lines just above line `at` (comments between them
/// skipped).
fn attributes_above<'a>(lines: &[&'a str], at: usize) -> Vec<&'a str> {
    let mut attrs = Vec::new();
    for line in lines[..at].iter().rev() {
        let t = line.trim();
        if t.starts_with("#[") {
            attrs.push(*line);
        } else if !(t.starts_with("//") || t.is_empty()) {
            break;
        }
    }
    attrs
}

/// The features `parent` gates its module `name` with (`None`: it does not
/// declare it).
pub fn module_features(parent: &str, name: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = parent.lines().collect();
    let at = lines.iter().position(|l| declares(l, name))?;
    Some(features_in(&attributes_above(&lines, at)))
}

/// The features a file gates itself with: its inner `#![cfg(…)]`
/// attributes, and those on its `mod tests` (or any `mod` under
/// `#[cfg(test)]`-like attributes that name features).
pub fn file_features(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut attrs: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.trim_start().starts_with("#![cfg("))
        .collect();
    for (i, line) in lines.iter().enumerate() {
        let above = attributes_above(&lines, i);
        if line
            .trim_start()
            .trim_start_matches("pub ")
            .starts_with("mod ")
            && above.iter().any(|a| a.contains("test"))
        {
            attrs.extend(above);
        }
    }
    features_in(&attrs)
}

/// The modules from the crate's root down to `file` (a path under the
/// package's `src/`): each step's parent file candidates (the first that
/// exists is it) and the module's name. Empty for the root itself
/// (`src/lib.rs`, `src/main.rs`) and for a file outside `src/`.
pub fn module_steps(file: &str) -> Vec<(Vec<String>, String)> {
    let Some(rel) = file
        .strip_prefix("src/")
        .and_then(|f| f.strip_suffix(".rs"))
    else {
        return Vec::new();
    };
    let mut parts: Vec<&str> = rel.split('/').collect();
    if parts.last() == Some(&"mod") {
        parts.pop();
    }
    if parts.len() == 1 && matches!(parts[0], "lib" | "main") || parts.first() == Some(&"bin") {
        return Vec::new();
    }
    let mut steps = Vec::new();
    for (i, name) in parts.iter().enumerate() {
        let parents = if i == 0 {
            vec!["src/lib.rs".to_string(), "src/main.rs".to_string()]
        } else {
            let dir = parts[..i].join("/");
            vec![format!("src/{dir}.rs"), format!("src/{dir}/mod.rs")]
        };
        steps.push((parents, name.to_string()));
    }
    steps
}

/// The test targets a manifest declares, and whether they are its only
/// ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredTests {
    /// `(path, name)` of each `[[test]]` with both.
    pub targets: Vec<(String, String)>,
    /// Cargo infers no other test target: `autotests = false`, or a 2015
    /// edition package (no `edition` said) that declares any `[[test]]`.
    pub only_these: bool,
}

/// What `manifest` (a `Cargo.toml`'s text) declares of its tests; `None`
/// when it does not parse.
pub fn declared_tests(manifest: &str) -> Option<DeclaredTests> {
    let doc: toml::Value = toml::from_str(manifest).ok()?;
    let package = doc.get("package");
    let tests = doc.get("test").and_then(|t| t.as_array());
    let targets: Vec<(String, String)> = tests
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let name = t.get("name")?.as_str()?;
            let path = t
                .get("path")
                .and_then(|p| p.as_str())
                .map(|p| p.trim_start_matches("./").to_string())
                .unwrap_or_else(|| format!("tests/{name}.rs"));
            Some((path, name.to_string()))
        })
        .collect();
    let autotests = package
        .and_then(|p| p.get("autotests"))
        .and_then(|a| a.as_bool());
    let edition = package
        .and_then(|p| p.get("edition"))
        .and_then(|e| e.as_str());
    let only_these = autotests == Some(false)
        || (tests.is_some_and(|t| !t.is_empty()) && matches!(edition, None | Some("2015")));
    Some(DeclaredTests {
        targets,
        only_these,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_s_features_come_from_its_cfg_and_never_from_a_not() {
        let lib = "#![deny(missing_docs)]\n\n#[cfg(feature = \"kv_unstable\")]\n/// Key-values.\npub mod kv;\n\n#[cfg(all(feature = \"serde\", feature = \"std\"))]\nmod serde;\n\n#[cfg(not(feature = \"std\"))]\nmod nostd;\n\nmod plain;\n";
        assert_eq!(
            module_features(lib, "kv"),
            Some(vec!["kv_unstable".to_string()])
        );
        assert_eq!(
            module_features(lib, "serde"),
            Some(vec!["serde".to_string(), "std".to_string()])
        );
        assert_eq!(module_features(lib, "nostd"), Some(Vec::new()));
        assert_eq!(module_features(lib, "plain"), Some(Vec::new()));
        assert_eq!(module_features(lib, "missing"), None);
        assert_eq!(
            module_features("pub(crate) mod value {\n}\n", "value"),
            Some(Vec::new())
        );
        assert_eq!(module_features("mod values;\n", "value"), None);
    }

    #[test]
    fn a_file_gates_itself_and_its_test_module() {
        let text = "#![cfg(feature = \"std\")]\n\nfn f() {}\n\n#[cfg(test)]\n#[cfg(feature = \"sval\")]\nmod tests {\n}\n";
        assert_eq!(file_features(text), vec!["std".to_string(), "sval".into()]);
        assert!(file_features("fn f() {}\n#[cfg(test)]\nmod tests {}\n").is_empty());
    }

    #[test]
    fn module_steps_walk_from_the_crate_root() {
        assert_eq!(
            module_steps("src/kv/value/impls.rs"),
            vec![
                (
                    vec!["src/lib.rs".to_string(), "src/main.rs".to_string()],
                    "kv".to_string()
                ),
                (
                    vec!["src/kv.rs".to_string(), "src/kv/mod.rs".to_string()],
                    "value".to_string()
                ),
                (
                    vec![
                        "src/kv/value.rs".to_string(),
                        "src/kv/value/mod.rs".to_string()
                    ],
                    "impls".to_string()
                ),
            ]
        );
        assert_eq!(module_steps("src/kv/mod.rs").len(), 1);
        assert!(module_steps("src/lib.rs").is_empty());
        assert!(module_steps("src/bin/tool.rs").is_empty());
        assert!(module_steps("tests/it.rs").is_empty());
    }

    #[test]
    fn declared_tests_and_whether_cargo_infers_others() {
        let old = "[package]\nname = \"log\"\nversion = \"0.4.0\"\n\n[[test]]\nname = \"filters\"\nharness = false\n";
        assert_eq!(
            declared_tests(old),
            Some(DeclaredTests {
                targets: vec![("tests/filters.rs".into(), "filters".into())],
                only_these: true,
            })
        );
        let new = "[package]\nname = \"log\"\nedition = \"2021\"\n\n[[test]]\nname = \"integration\"\npath = \"tests/integration.rs\"\n";
        assert!(!declared_tests(new).expect("parses").only_these);
        let off = "[package]\nname = \"x\"\nedition = \"2021\"\nautotests = false\n";
        assert!(declared_tests(off).expect("parses").only_these);
        assert_eq!(declared_tests("not toml ["), None);
    }
}
