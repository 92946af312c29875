//! A team's project fetched from its git remote, for a worker on a
//! machine that does not have it: a clone without working files under
//! Arena's data folder, made on first use and fetched after, from which
//! contestants' worktrees are made as from any project.
//!
//! The URL comes from the team database, so it is handled as untrusted:
//! one that could be read as an option of git's is refused; git may use
//! only network transports (no `ext::` commands, and no local paths — which
//! would let a row in the database copy any repository this machine can
//! read into a contestant's reach — unless this machine allows them); it
//! runs in a session of its own, without a terminal, so neither git nor
//! ssh can ask for a password (the machine's SSH agent or credential
//! helper serve); and it gives up after [`FETCH_TIMEOUT`]. One process at
//! a time updates a clone (a lock file beside it).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a clone or fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error("`{0}` is not a git remote's URL Arena fetches from")]
    BadUrl(String),
    #[error(
        "`{0}` is a folder on this machine, and workers fetch only over the network; set \
         ARENA_ALLOW_LOCAL_REMOTES=1 for this worker to allow it"
    )]
    Local(String),
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

/// Whether git reads `url` as a path on this machine (`file://`, or no
/// `scheme://` and no `host:` before the first `/`).
pub fn is_local(url: &str) -> bool {
    if let Some((scheme, _)) = url.split_once("://") {
        return scheme.eq_ignore_ascii_case("file");
    }
    match url.find(':') {
        None => true,
        Some(i) => url[..i].contains('/'),
    }
}

/// `url` as it may be kept in a shared database: a password written into
/// it (`https://user:secret@host/…`) taken out (the user stays).
pub fn shareable(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{host}{path}")
        }
        None => url.to_string(),
    }
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
/// time, fetching after), its HEAD at `commit`. A local `url` only with
/// `allow_local`.
pub fn update(url: &str, dir: &Path, commit: &str, allow_local: bool) -> Result<(), MirrorError> {
    if url.is_empty() || url.starts_with('-') || url.chars().any(char::is_control) {
        return Err(MirrorError::BadUrl(url.to_string()));
    }
    let local = is_local(url);
    if local && !allow_local {
        return Err(MirrorError::Local(url.to_string()));
    }
    if !commit.chars().all(|c| c.is_ascii_hexdigit()) || commit.len() < 7 {
        return Err(MirrorError::MissingCommit {
            commit: commit.to_string(),
            url: url.to_string(),
        });
    }
    let parent = dir.parent().unwrap_or(dir);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MirrorError::Io { path, source }
    };
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let lock_path = dir.with_extension("lock");
    let lock = std::fs::File::create(&lock_path).map_err(io(&lock_path))?;
    lock.lock().map_err(io(&lock_path))?;
    let git = Git { url, local };
    if dir.join(".git").is_dir() {
        git.run(
            "fetch from",
            dir,
            &["fetch", "--quiet", "--prune", "origin"],
        )?;
    } else {
        // A clone cut off half-way is made again from nothing.
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(io(dir))?;
        }
        let target = dir.to_string_lossy().into_owned();
        git.run(
            "clone",
            parent,
            &["clone", "--quiet", "--no-checkout", "--", url, &target],
        )?;
    }
    let object = format!("{commit}^{{commit}}");
    git.run("look up the commit in", dir, &["cat-file", "-e", &object])
        .map_err(|_| MirrorError::MissingCommit {
            commit: commit.to_string(),
            url: url.to_string(),
        })?;
    // The clone's HEAD at the commit (whatever the remote's HEAD names,
    // even a branch it lacks): where a battle starts.
    git.run(
        "point the clone at the commit of",
        dir,
        &["update-ref", "--no-deref", "HEAD", commit],
    )
}

/// git as this module runs it (see the module's documentation).
struct Git<'u> {
    url: &'u str,
    /// Local transports allowed (the URL is a path here).
    local: bool,
}

impl Git<'_> {
    /// Runs `git ARGS` in `dir`; the last line of its error output when it
    /// fails.
    fn run(&self, what: &'static str, dir: &Path, args: &[&str]) -> Result<(), MirrorError> {
        let failed = |detail: String| MirrorError::Git {
            what,
            url: self.url.to_string(),
            detail,
        };
        let protocols = if self.local {
            "file:git:http:https:ssh"
        } else {
            "git:http:https:ssh"
        };
        let mut command = Command::new("git");
        command
            .args(["-c", "credential.interactive=never"])
            .args(args)
            .current_dir(dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ALLOW_PROTOCOL", protocols)
            .env("SSH_ASKPASS_REQUIRE", "never")
            .env_remove("SSH_ASKPASS")
            .env_remove("GIT_ASKPASS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: setsid is async-signal-safe; the child only calls it
        // before exec. A session of its own has no controlling terminal, so
        // ssh cannot ask for a passphrase there.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| failed(e.to_string()))?;
        // Read while it runs: a full pipe would stall it until the timeout.
        let mut stderr = child.stderr.take();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(err) = stderr.as_mut() {
                let _ = err.take(64 * 1024).read_to_string(&mut text);
                let _ = std::io::copy(err, &mut std::io::sink());
            }
            text
        });
        let deadline = Instant::now() + FETCH_TIMEOUT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
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
        };
        let text = reader.join().unwrap_or_default();
        if status.success() {
            Ok(())
        } else {
            Err(failed(text.lines().last().unwrap_or("").trim().to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_urls_are_told_from_network_ones() {
        for local in [
            "/srv/repo.git",
            "../repo",
            "file:///srv/repo",
            "repo",
            "./a:b",
        ] {
            assert!(is_local(local), "{local}");
        }
        for remote in [
            "https://example.invalid/r.git",
            "ssh://git@example.invalid/r",
            "git@example.invalid:team/r.git",
            "git://example.invalid/r",
        ] {
            assert!(!is_local(remote), "{remote}");
        }
    }

    #[test]
    fn a_password_in_a_url_is_not_shared() {
        assert_eq!(
            shareable("https://ada:s3cret@example.invalid/team/r.git"),
            "https://ada@example.invalid/team/r.git"
        );
        assert_eq!(
            shareable("https://example.invalid/r.git"),
            "https://example.invalid/r.git"
        );
        assert_eq!(
            shareable("git@example.invalid:team/r.git"),
            "git@example.invalid:team/r.git"
        );
    }

    #[test]
    fn hostile_urls_and_commits_are_refused_before_git_runs() {
        let dir = tempfile::tempdir().unwrap();
        let clone = dir.path().join("clone");
        for url in ["--upload-pack=touch /tmp/x", "", "https://a\nb"] {
            assert!(matches!(
                update(url, &clone, "abcdef0", false),
                Err(MirrorError::BadUrl(_))
            ));
        }
        assert!(matches!(
            update("/srv/repo.git", &clone, "abcdef0", false),
            Err(MirrorError::Local(_))
        ));
        // `ext::` runs a command: not a transport git may use here.
        let marker = dir.path().join("ran");
        let url = format!("ext::sh -c touch% {}", marker.display());
        let e = update(&url, &clone, "abcdef0", true).unwrap_err();
        assert!(matches!(e, MirrorError::Git { .. }), "{e}");
        assert!(!marker.exists());
        assert!(matches!(
            update("https://example.invalid/r.git", &clone, "HEAD; rm", false),
            Err(MirrorError::MissingCommit { .. })
        ));
    }
}
