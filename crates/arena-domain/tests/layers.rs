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
