//! A team's project fetched from its git remote, for a worker on a
//! machine that does not have it: a repository without working files under
//! Arena's data folder, from which contestants' worktrees are made as from
//! any project.
//!
//! The URL and the commit come from the team database, so they are
//! handled as untrusted: a URL that could be read as an option of git's is
//! refused; git may use only network transports (no `ext::` commands, and
//! no local paths — which would let a row in the database copy any
//! repository this machine can read into a contestant's reach — unless this
//! machine allows them); it runs in a session of its own, without a
//! terminal, so neither git nor ssh can ask for a password; and it gives
//! up after [`FETCH_TIMEOUT`]. Only the one commit a series starts from is
//! fetched (`fetch --depth 1 URL COMMIT`), never the remote's branches.
//! Whether this machine's git credentials (credential helpers, SSH agent
//! and keys, `.netrc`, its git configuration) serve the fetch is the
//! caller's [`Credentials`]: a worker lends them only to remotes its user
//! named. One process at a time updates a folder (a lock file beside it).

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

/// Whether the git repository at `project` (that folder itself) has a
/// remote whose URL, as it would be shared, is `url`: a project this
/// machine already has.
pub fn is_remote_of(project: &Path, url: &str) -> bool {
    let Ok(repo) = git2::Repository::open(project) else {
        return false;
    };
    let Ok(names) = repo.remotes() else {
        return false;
    };
    names.iter().flatten().any(|name| {
        repo.find_remote(name)
            .ok()
            .and_then(|r| r.url().map(shareable))
            .is_some_and(|u| u == url)
    })
}

/// The folder (under `root`) that holds the clone of `url`: one per URL.
pub fn folder(root: &Path, url: &str) -> PathBuf {
    // FNV-1a: a stable name from the URL (not a secret, not a key).
    let hash = url.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    root.join(format!("{hash:016x}"))
}

/// Whose git credentials serve a fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// This machine's: its git configuration, credential helpers, SSH
    /// agent and keys (never a terminal prompt).
    Machine,
    /// None: git reads no configuration but the repository's own, no
    /// credential helper runs, ssh gets no agent and no key, and curl no
    /// `.netrc`. Only what anyone may read can be fetched.
    Anonymous,
}

/// Makes `dir` a repository holding `commit` (created the first time),
/// its HEAD at `commit`: only that commit is fetched from `url`, at depth
/// 1, and only when `dir` lacks it. A local `url` only with `allow_local`.
pub fn update(
    url: &str,
    dir: &Path,
    commit: &str,
    allow_local: bool,
    credentials: Credentials,
) -> Result<(), MirrorError> {
    if url.is_empty() || url.starts_with('-') || url.chars().any(char::is_control) {
        return Err(MirrorError::BadUrl(url.to_string()));
    }
    let local = is_local(url);
    if local && !allow_local {
        return Err(MirrorError::Local(url.to_string()));
    }
    if !commit.chars().all(|c| c.is_ascii_hexdigit()) || !matches!(commit.len(), 40 | 64) {
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
    let git = Git {
        url,
        local,
        credentials,
    };
    if !dir.join(".git").is_dir() {
        // A folder left half-made is made again from nothing.
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(io(dir))?;
        }
        let target = dir.to_string_lossy().into_owned();
        git.run(
            "make a repository for",
            parent,
            &["init", "--quiet", "--", &target],
        )?;
    }
    let object = format!("{commit}^{{commit}}");
    let has = |git: &Git<'_>| git.run("look up the commit in", dir, &["cat-file", "-e", &object]);
    if has(&git).is_err() {
        git.run(
            "fetch from",
            dir,
            &[
                "fetch",
                "--quiet",
                "--depth",
                "1",
                "--no-tags",
                "--no-write-fetch-head",
                "--",
                url,
                commit,
            ],
        )?;
        has(&git).map_err(|_| MirrorError::MissingCommit {
            commit: commit.to_string(),
            url: url.to_string(),
        })?;
    }
    // Kept by a ref of its own (another series' base may move HEAD), and
    // HEAD at it: where a battle starts.
    let kept = format!("refs/arena/bases/{commit}");
    git.run("keep the commit in", dir, &["update-ref", &kept, commit])?;
    git.run(
        "point the repository at the commit of",
        dir,
        &["update-ref", "--no-deref", "HEAD", commit],
    )
}

/// git as this module runs it (see the module's documentation).
struct Git<'u> {
    url: &'u str,
    /// Local transports allowed (the URL is a path here).
    local: bool,
    credentials: Credentials,
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
        command.args(["-c", "credential.interactive=never"]);
        if self.credentials == Credentials::Anonymous {
            anonymous(&mut command);
        }
        command
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

/// `command` without this machine's git credentials: no configuration
/// but the repository's own (no `credential.helper`, `http.extraHeader`,
/// `url.*.insteadOf`), no helper named on the command line either, no
/// home folder (`.netrc`, `.ssh`), and ssh with no agent, no key and no
/// configuration of its own.
fn anonymous(command: &mut Command) {
    const NOWHERE: &str = "/nonexistent";
    command
        .args(["-c", "credential.helper=", "-c", "core.askPass="])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", NOWHERE)
        .env("XDG_CONFIG_HOME", NOWHERE)
        .env("GIT_ASKPASS", "")
        .env("SSH_ASKPASS", "")
        .env(
            "GIT_SSH_COMMAND",
            "ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile=/dev/null \
             -o IdentityAgent=none -o PasswordAuthentication=no \
             -o KbdInteractiveAuthentication=no",
        )
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("GIT_SSH")
        .env_remove("GIT_SSH_VARIANT")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_CONFIG")
        .env_remove("GIT_PROXY_COMMAND");
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

    const COMMIT: &str = "abcdef0123456789abcdef0123456789abcdef01";

    #[test]
    fn hostile_urls_and_commits_are_refused_before_git_runs() {
        let dir = tempfile::tempdir().unwrap();
        let clone = dir.path().join("clone");
        for url in ["--upload-pack=touch /tmp/x", "", "https://a\nb"] {
            assert!(matches!(
                update(url, &clone, COMMIT, false, Credentials::Machine),
                Err(MirrorError::BadUrl(_))
            ));
        }
        assert!(matches!(
            update("/srv/repo.git", &clone, COMMIT, false, Credentials::Machine),
            Err(MirrorError::Local(_))
        ));
        // `ext::` runs a command: not a transport git may use here.
        let marker = dir.path().join("ran");
        let url = format!("ext::sh -c touch% {}", marker.display());
        let e = update(&url, &clone, COMMIT, true, Credentials::Machine).unwrap_err();
        assert!(matches!(e, MirrorError::Git { .. }), "{e}");
        assert!(!marker.exists());
        assert!(matches!(
            update(
                "https://example.invalid/r.git",
                &clone,
                "HEAD; rm",
                false,
                Credentials::Machine
            ),
            Err(MirrorError::MissingCommit { .. })
        ));
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    #[test]
    fn only_the_base_commit_is_fetched_never_another_branch() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        std::fs::write(project.join("a"), "one\n").unwrap();
        git(&project, &["add", "."]);
        git(&project, &["commit", "-q", "-m", "one"]);
        std::fs::write(project.join("a"), "two\n").unwrap();
        git(&project, &["commit", "-q", "-am", "two"]);
        let base = git(&project, &["rev-parse", "HEAD"]);
        let first = git(&project, &["rev-parse", "HEAD~1"]);
        git(&project, &["checkout", "-q", "-b", "secret"]);
        std::fs::write(project.join("secret"), "the team's secret\n").unwrap();
        git(&project, &["add", "."]);
        git(&project, &["commit", "-q", "-m", "secret"]);
        let secret = git(&project, &["rev-parse", "HEAD"]);
        let blob = git(&project, &["rev-parse", "HEAD:secret"]);
        let url = project.to_string_lossy().into_owned();
        let clone = dir.path().join("mirror");
        // Twice: the second finds the commit there and fetches nothing.
        for _ in 0..2 {
            update(&url, &clone, &base, true, Credentials::Anonymous).unwrap();
        }
        assert_eq!(git(&clone, &["rev-parse", "HEAD"]), base);
        for absent in [&secret, &blob, &first] {
            let found = Command::new("git")
                .args(["cat-file", "-e", absent])
                .current_dir(&clone)
                .status()
                .unwrap();
            assert!(!found.success(), "{absent} was fetched");
        }
        assert_eq!(
            git(&clone, &["for-each-ref", "--format=%(refname)"]),
            format!("refs/arena/bases/{base}")
        );
    }
}
