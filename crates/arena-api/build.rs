//! What this build is, for `arena --version` and the app's About: the
//! commit it was built from (`ARENA_COMMIT`, else `git rev-parse`, else
//! "unknown") and the day it was built (`SOURCE_DATE_EPOCH` when set, for
//! reproducible packages, else today), both UTC. Written by hand rather
//! than with a build-info crate: it is two facts and a git call.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=ARENA_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // A new commit (or a checkout) changes HEAD or the branch it names.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        for name in ["HEAD", "packed-refs", "refs/heads"] {
            let path = std::path::Path::new(&git_dir).join(name);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let commit = std::env::var("ARENA_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    let built = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0))
        .unwrap_or_else(chrono::Utc::now);
    println!("cargo:rustc-env=ARENA_BUILD_COMMIT={}", commit.trim());
    println!(
        "cargo:rustc-env=ARENA_BUILD_DATE={}",
        built.format("%Y-%m-%d")
    );
}

/// `git ARGS` in this crate's folder, trimmed; `None` when git or the
/// repository is missing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}
