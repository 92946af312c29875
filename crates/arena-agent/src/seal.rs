//! A sealed repository: a bare repository holding **only** the objects
//! reachable from one base commit, so a task's future (a later commit, the
//! fix, the hidden tests, another branch, a stash, the reflog, a dangling
//! object) is not in any object store an agent's jail can read.
//!
//! A contestant's worktree reads its objects through
//! `objects/info/alternates` ([`crate::worktree`]); a battle whose source
//! is sealed has its worktrees, its base tree and its reader borrow the
//! sealed store instead of the user's project's. The environment
//! (`node_modules`, `.venv`, `target/`) still comes from the user's project.
//!
//! The sealed repository has one ref (`refs/heads/base`, HEAD on it), no
//! reflog, no remotes, no hooks, a configuration of two lines and a mark
//! ([`MARK`]) naming its base commit. It is made in a temporary folder
//! beside `dest` and renamed into place, so a crash never leaves a half
//! store where a whole one is expected; one that is present and sound is
//! reused (seal once per task, run it many times).
//!
//! The objects are packed by git itself (`git pack-objects --revs` from the
//! base, no new delta search, the project's deltas reused): about 70 ms for
//! a 10,000-file history whose objects are packed, 0.6-1.2 s when all of
//! them are loose (each is inflated and compressed again) — once per task;
//! a sound one is reused in a few milliseconds. libgit2's pack builder
//! would search every delta again. git
//! runs without the system's or the user's global configuration, without
//! replace objects, and with none of the caller's `GIT_*` variables that
//! would send it to another repository.
//!
//! Everything here is synchronous; callers run it in `spawn_blocking`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use git2::{Oid, Repository};

/// The file in a sealed repository naming its base commit: what tells Arena
/// (and [`crate::worktree`]) that a bare repository is one it sealed.
pub const MARK: &str = "arena-sealed";

/// The one ref of a sealed repository.
pub const REF: &str = "refs/heads/base";

/// A sealed repository's configuration: nothing worth reading.
const CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n";

/// What went wrong sealing a base. Each message says what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("{0} is not a git repository Arena can read")]
    NotARepository(PathBuf),
    #[error("commit `{commit}` was not found in {project}; fetch it there first")]
    UnknownCommit { commit: String, project: PathBuf },
    #[error("git could not {what}: {detail}")]
    Git { what: String, detail: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl SealError {
    fn io(path: &Path) -> impl FnOnce(io::Error) -> SealError + '_ {
        move |source| SealError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A sealed repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Its folder (the bare repository's git folder).
    pub path: PathBuf,
    /// The full id of its base commit.
    pub base: String,
    /// Whether a sound one was already there (nothing was made).
    pub reused: bool,
}

impl Sealed {
    /// Its object store: what a worktree's alternates name.
    pub fn objects(&self) -> PathBuf {
        self.path.join("objects")
    }
}

/// Seals `base` (any revision git understands in `project`, resolved to its
/// commit) of the repository at `project` (a working folder or a bare
/// repository) into the bare repository `dest`, holding only the objects
/// reachable from that commit. Reuses `dest` when it is a sound sealed
/// repository of the same commit; replaces it otherwise.
pub fn seal(project: &Path, base: &str, dest: &Path) -> Result<Sealed, SealError> {
    let repo =
        Repository::open(project).map_err(|_| SealError::NotARepository(project.to_path_buf()))?;
    let commit = repo
        .revparse_single(base)
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| SealError::UnknownCommit {
            commit: base.to_string(),
            project: project.to_path_buf(),
        })?
        .id();
    if is_sound(dest, commit) {
        return Ok(Sealed {
            path: dest.to_path_buf(),
            base: commit.to_string(),
            reused: true,
        });
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(SealError::io(&parent))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sealed".into());
    let temp = tempfile::Builder::new()
        .prefix(&format!(".{name}.making-"))
        .tempdir_in(&parent)
        .map_err(SealError::io(&parent))?;
    make(repo.path(), commit, temp.path())?;
    if !is_sound(temp.path(), commit) {
        return Err(SealError::Git {
            what: format!("seal commit {commit}"),
            detail: "the sealed repository does not read back whole".into(),
        });
    }
    // Another process may have sealed the same base meanwhile: keep a
    // sound one, replace anything else.
    if fs::symlink_metadata(dest).is_ok() {
        if is_sound(dest, commit) {
            return Ok(Sealed {
                path: dest.to_path_buf(),
                base: commit.to_string(),
                reused: true,
            });
        }
        remove(dest)?;
    }
    let made = temp.keep();
    if let Err(e) = fs::rename(&made, dest) {
        let _ = fs::remove_dir_all(&made);
        if is_sound(dest, commit) {
            return Ok(Sealed {
                path: dest.to_path_buf(),
                base: commit.to_string(),
                reused: true,
            });
        }
        return Err(SealError::Io {
            path: dest.to_path_buf(),
            source: e,
        });
    }
    tracing::debug!(base = %commit, dest = %dest.display(), "sealed the base");
    Ok(Sealed {
        path: dest.to_path_buf(),
        base: commit.to_string(),
        reused: false,
    })
}

/// The full id of the commit `base` (any revision git understands) names
/// in the repository at `project`: what a sealed repository of it is
/// named by.
pub fn resolve(project: &Path, base: &str) -> Result<String, SealError> {
    let repo =
        Repository::open(project).map_err(|_| SealError::NotARepository(project.to_path_buf()))?;
    let commit = repo
        .revparse_single(base)
        .and_then(|o| o.peel_to_commit())
        .map_err(|_| SealError::UnknownCommit {
            commit: base.to_string(),
            project: project.to_path_buf(),
        })?;
    Ok(commit.id().to_string())
}

/// Whether `path` is a repository Arena sealed (a real folder holding the
/// [`MARK`]), whatever its base.
pub fn is_sealed(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
        && fs::symlink_metadata(path.join(MARK)).is_ok_and(|m| m.is_file())
}

/// The base commit a sealed repository names in its mark.
pub fn sealed_base(path: &Path) -> Option<String> {
    if !is_sealed(path) {
        return None;
    }
    let text = fs::read_to_string(path.join(MARK)).ok()?;
    Some(text.trim().to_string())
}

/// Whether `path` is a whole sealed repository of `base`: its mark names
/// it, its one ref points at it, and the commit and its tree read.
fn is_sound(path: &Path, base: Oid) -> bool {
    if sealed_base(path).as_deref() != Some(base.to_string().as_str()) {
        return false;
    }
    let Ok(repo) = Repository::open_bare(path) else {
        return false;
    };
    let at_base = repo
        .find_reference(REF)
        .ok()
        .and_then(|r| r.target())
        .is_some_and(|t| t == base);
    at_base
        && repo
            .find_commit(base)
            .and_then(|c| c.tree().map(|_| ()))
            .is_ok()
}

/// Lays the sealed repository out in `dir` (empty): packs the objects
/// reachable from `base` in `git_dir` there, then writes its ref, HEAD,
/// configuration and mark.
fn make(git_dir: &Path, base: Oid, dir: &Path) -> Result<(), SealError> {
    for sub in ["objects/pack", "refs/heads", "refs/tags"] {
        let p = dir.join(sub);
        fs::create_dir_all(&p).map_err(SealError::io(&p))?;
    }
    pack(git_dir, base, &dir.join("objects/pack/pack"))?;
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        fs::write(&p, text).map_err(SealError::io(&p))
    };
    write(REF, &format!("{base}\n"))?;
    write("HEAD", &format!("ref: {REF}\n"))?;
    write("config", CONFIG)?;
    write(MARK, &format!("{base}\n"))
}

/// `git pack-objects --revs` of `base` from `git_dir` into packs named
/// `prefix-<hash>.pack` (and `.idx`).
fn pack(git_dir: &Path, base: Oid, prefix: &Path) -> Result<(), SealError> {
    let failed = |detail: String| SealError::Git {
        what: format!("pack the objects of commit {base}"),
        detail,
    };
    let mut command = Command::new("git");
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_GRAFT_FILE",
        "GIT_REPLACE_REF_BASE",
        "GIT_SHALLOW_FILE",
    ] {
        command.env_remove(var);
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["pack-objects", "--revs", "--quiet", "--window=0"])
        .arg(prefix)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| failed(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(format!("{base}\n").as_bytes())
            .map_err(|e| failed(e.to_string()))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let last = text.lines().last().unwrap_or("").to_string();
        return Err(failed(if last.is_empty() {
            format!("it exited with {}", out.status)
        } else {
            last
        }));
    }
    Ok(())
}

/// Removes the folder (or whatever) at `path`, never following a link.
fn remove(path: &Path) -> Result<(), SealError> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SealError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).map_err(SealError::io(path)),
        Ok(_) => fs::remove_file(path).map_err(SealError::io(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.email=a@b.invalid", "-c", "user.name=a"])
            .args(["-c", "init.defaultBranch=main", "-c", "gc.auto=0"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn project() -> (tempfile::TempDir, String, String) {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        git(p, &["init", "-q"]);
        fs::write(p.join("a.txt"), "base\n").expect("write");
        git(p, &["add", "-A"]);
        git(p, &["commit", "-qm", "base"]);
        let base = git(p, &["rev-parse", "HEAD"]);
        fs::write(p.join("future.txt"), "the future\n").expect("write");
        git(p, &["add", "-A"]);
        git(p, &["commit", "-qm", "future"]);
        let future = git(p, &["rev-parse", "HEAD"]);
        (dir, base, future)
    }

    #[test]
    fn holds_only_the_base_and_is_reused() {
        let (dir, base, future) = project();
        let out = tempfile::tempdir().expect("tempdir");
        let dest = out.path().join("sealed");
        let sealed = seal(dir.path(), &base, &dest).expect("seals");
        assert!(!sealed.reused);
        assert_eq!(sealed.base, base);
        let repo = Repository::open_bare(&dest).expect("opens");
        assert!(repo.find_commit(Oid::from_str(&base).unwrap()).is_ok());
        assert!(repo.find_commit(Oid::from_str(&future).unwrap()).is_err());
        let refs: Vec<String> = repo
            .references()
            .expect("refs")
            .flatten()
            .filter_map(|r| r.name().map(str::to_string))
            .collect();
        assert_eq!(refs, vec![REF.to_string()]);
        assert!(!dest.join("logs").exists() && !dest.join("hooks").exists());
        let again = seal(dir.path(), "HEAD~1", &dest).expect("seals again");
        assert!(again.reused);
        // Another base replaces it.
        let other = seal(dir.path(), &future, &dest).expect("seals the future");
        assert!(!other.reused);
        assert_eq!(sealed_base(&dest).as_deref(), Some(future.as_str()));
        // A broken one is made again.
        fs::remove_file(dest.join(REF)).expect("break it");
        assert!(!seal(dir.path(), &future, &dest).expect("reseals").reused);
        // No temporary folder is left beside it.
        let left: Vec<_> = fs::read_dir(out.path()).expect("list").flatten().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn an_unknown_commit_is_refused() {
        let (dir, _, _) = project();
        let out = tempfile::tempdir().expect("tempdir");
        let error =
            seal(dir.path(), "0123456789abcdef", &out.path().join("s")).expect_err("refused");
        assert!(matches!(error, SealError::UnknownCommit { .. }), "{error}");
        assert!(!out.path().join("s").exists());
    }
}
