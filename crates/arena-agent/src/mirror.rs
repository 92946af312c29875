//! A team's project fetched from its git remote, for a worker on a
//! machine that does not have it: a clone without working files under
//! Arena's data folder, made on first use and fetched after, from which
//! contestants' worktrees are made as from any project.
//!
//! The URL comes from the team database, so it is handled as untrusted:
//! one that could be read as an option of git's is refused, git may use
//! only the usual transports (no `ext::` commands), never asks on a
//! terminal for credentials (the machine's SSH agent or credential helper
//! serve), and gives up after [`FETCH_TIMEOUT`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a clone or fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error("`{0}` is not a git remote's URL Arena fetches from")]
    BadUrl(String),
    #[error("git {what} {url} failed: {detail}")]
    Git {
        what: &'static str,
        url: String,
        detail: String,
    },
    #[error(
        "commit {commit} is not in {url}; push it there (the series' project was at it when \
         the series started)"
    )]
    MissingCommit { commit: String, url: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The folder (under `root`) that holds the clone of `url`: one per URL.
pub fn folder(root: &Path, url: &str) -> PathBuf {
    // FNV-1a: a stable name from the URL (not a secret, not a key).
    let hash = url.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    root.join(format!("{hash:016x}"))
}

/// Makes `dir` a clone of `url` holding `commit` (cloning it the first
/// time, fetching after), its HEAD at `commit`.
pub fn update(url: &str, dir: &Path, commit: &str) -> Result<(), MirrorError> {
    if url.is_empty() || url.starts_with('-') || url.chars().any(char::is_control) {
        return Err(MirrorError::BadUrl(url.to_string()));
    }
    if !commit.chars().all(|c| c.is_ascii_hexdigit()) || commit.len() < 7 {
        return Err(MirrorError::MissingCommit {
            commit: commit.to_string(),
            url: url.to_string(),
        });
    }
    if dir.join(".git").is_dir() {
        git(
            url,
            "fetch from",
            dir,
            &["fetch", "--quiet", "--prune", "origin"],
        )?;
    } else {
        let parent = dir.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(|source| MirrorError::Io {
            path: parent.to_path_buf(),
            source,
        })?;
        // A clone cut off half-way is made again from nothing.
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|source| MirrorError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let target = dir.to_string_lossy().into_owned();
        git(
            url,
            "clone",
            parent,
            &["clone", "--quiet", "--no-checkout", "--", url, &target],
        )?;
    }
    let object = format!("{commit}^{{commit}}");
    git(
        url,
        "look up the commit in",
        dir,
        &["cat-file", "-e", &object],
    )
    .map_err(|_| MirrorError::MissingCommit {
        commit: commit.to_string(),
        url: url.to_string(),
    })?;
    // The clone's HEAD at the commit (whatever the remote's HEAD names,
    // even a branch it lacks): where a battle starts.
    git(
        url,
        "point the clone at the commit of",
        dir,
        &["update-ref", "--no-deref", "HEAD", commit],
    )
}

/// Runs `git ARGS` in `dir` with the restrictions of the module's
/// documentation; its error output on failure.
fn git(url: &str, what: &'static str, dir: &Path, args: &[&str]) -> Result<(), MirrorError> {
    let failed = |detail: String| MirrorError::Git {
        what,
        url: url.to_string(),
        detail,
    };
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", "file:git:http:https:ssh")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    let deadline = Instant::now() + FETCH_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "it took longer than {} s",
                    FETCH_TIMEOUT.as_secs()
                )));
            }
            Err(e) => return Err(failed(e.to_string())),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        let text = String::from_utf8_lossy(&out.stderr);
        Err(failed(text.lines().last().unwrap_or("").trim().to_string()))
    }
}
