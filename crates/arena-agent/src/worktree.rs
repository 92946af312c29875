//! Git worktrees for Coding battles: one per contestant, each on its own
//! `arena/<name>` branch at the battle's base commit, so contestants can
//! edit, build and commit without seeing each other or touching the user's
//! checkout.
//!
//! Everything here is synchronous (libgit2 through `git2`); callers run it
//! in `spawn_blocking`. What git2 does is kept compatible with the `git`
//! CLI: `git worktree list` shows the same worktrees, and a worktree made
//! here can be removed with `git worktree remove` (and the other way round).

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use git2::{
    BranchType, ErrorCode, Repository, StatusOptions, WorktreeAddOptions, WorktreeLockStatus,
    WorktreePruneOptions,
};

/// The prefix of every branch Arena creates (`arena/<name>`).
pub const BRANCH_PREFIX: &str = "arena/";

/// What went wrong with a project or a worktree. Each message says what was
/// wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("project folder {0} does not exist or is not a folder; choose an existing folder")]
    Missing(PathBuf),
    #[error(
        "{0} is not a git repository, and a Coding battle needs one; run `git init` there and \
         commit your files, or choose another folder"
    )]
    NotARepository(PathBuf),
    #[error(
        "{path} is inside the git repository at {top} but is not its top folder; choose {top} \
         as the project, or run `git init` in {path} to make it a repository of its own"
    )]
    NotTopLevel { path: PathBuf, top: PathBuf },
    #[error(
        "{0} is a bare git repository (it has no working files to edit); clone it with \
         `git clone {0} SOMEWHERE` and choose the clone"
    )]
    Bare(PathBuf),
    #[error(
        "{0} has no commits yet, so contestants have no base to start from; make a first \
         commit (`git add -A && git commit -m \"initial\"`) and try again"
    )]
    NoCommits(PathBuf),
    #[error(
        "git refuses to open {0} because it belongs to another user; if you trust it, run \
         `git config --global --add safe.directory {0}`"
    )]
    NotOwned(PathBuf),
    #[error(
        "worktree name `{0}` is not a single folder name; use letters, digits, `-`, `_` and `.` \
         (not `.` or `..` alone)"
    )]
    InvalidName(String),
    #[error(
        "commit `{commit}` was not found in {project}; was the history rewritten since the \
         battle started? Start a new battle from the current HEAD"
    )]
    UnknownCommit { commit: String, project: PathBuf },
    #[error("{0} already exists; remove it or use another worktree name")]
    PathExists(PathBuf),
    #[error(
        "git already has a worktree named `{name}` (at {path}); remove it first with \
         `git worktree remove --force {path}`, or use another name"
    )]
    NameTaken { name: String, path: PathBuf },
    #[error(
        "branch `{0}` already exists in the project; delete it with `git branch -D {0}` if it \
         is left over from an old battle, or use another worktree name"
    )]
    BranchExists(String),
    #[error("{project} has no Arena worktree named `{name}`; list them to see the names")]
    NotFound { name: String, project: PathBuf },
    #[error(
        "worktree `{name}` at {path} has uncommitted changes; commit or stash them (or save its \
         diff) first, or pass --force to discard them"
    )]
    Dirty { name: String, path: PathBuf },
    #[error(
        "worktree `{name}` is locked{reason}; unlock it with `git worktree unlock {name}`, or \
         pass --force"
    )]
    Locked { name: String, reason: String },
    #[error(
        "{0} exists but is not the worktree git has on record (its `.git` file is missing or \
         points elsewhere), so Arena will not delete it; remove that folder by hand, then run \
         the command again"
    )]
    Foreign(PathBuf),
    #[error(
        "git could not create the worktree ({message}): an unreadable entry under {admins} \
         confuses it; run `git worktree prune` in the project and try again"
    )]
    BrokenBookkeeping { admins: PathBuf, message: String },
    #[error(
        "the worktree is gone but its branch `{branch}` stays ({message}); switch the checkout \
         that uses it to another branch (if none does, run `git worktree prune` in the project), \
         then remove again"
    )]
    BranchInUse { branch: String, message: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("git could not {what}: {}", .source.message())]
    Git {
        what: String,
        #[source]
        source: git2::Error,
    },
}

impl WorktreeError {
    fn git(what: impl Into<String>) -> impl FnOnce(git2::Error) -> WorktreeError {
        let what = what.into();
        move |source| WorktreeError::Git { what, source }
    }

    fn io(path: &Path) -> impl FnOnce(io::Error) -> WorktreeError + '_ {
        move |source| WorktreeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A worktree Arena created for one contestant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Worktree {
    /// The worktree's name in git's bookkeeping (`.git/worktrees/<name>`),
    /// also its folder name under the root.
    pub name: String,
    /// Its folder (absolute, symlinks resolved).
    pub path: PathBuf,
    /// Its branch, `arena/<name>` (short form, without `refs/heads/`).
    pub branch: String,
    /// The full id of the commit it started from.
    pub base_commit: String,
}

/// One of Arena's worktrees of a project, as git knows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WorktreeInfo {
    /// The name in git's bookkeeping; what [`remove`] takes.
    pub name: String,
    /// The folder git has on record for it.
    pub path: PathBuf,
    /// The branch its HEAD is on (short form), `None` when HEAD is detached.
    pub branch: Option<String>,
    /// Whether that folder still exists.
    pub exists: bool,
    /// Whether it has uncommitted changes (false when the folder is gone;
    /// true when git cannot tell, so nothing is discarded by mistake).
    pub dirty: bool,
}

/// What a project must be for a Coding battle: a non-bare git repository
/// (its top folder) with at least one commit. Returns the full id of the
/// HEAD commit.
pub fn check_project(project: &Path) -> Result<String, WorktreeError> {
    let repo = open_project(project)?;
    head_commit(&repo, project)
}

/// Creates a worktree at `root/<name>` on a new branch `arena/<name>` at
/// `base_commit` (HEAD's commit when the battle started; any revision git
/// understands). Creates `root` if needed. Refuses if `root/<name>`, a
/// worktree called `name` or the branch already exists; on failure, nothing
/// it made is left behind.
pub fn create(
    project: &Path,
    root: &Path,
    name: &str,
    base_commit: &str,
) -> Result<Worktree, WorktreeError> {
    check_name(name)?;
    let repo = open_project(project)?;
    let commit = repo
        .revparse_single(base_commit)
        .and_then(|object| object.peel_to_commit())
        .map_err(|_| WorktreeError::UnknownCommit {
            commit: base_commit.to_string(),
            project: project.to_path_buf(),
        })?;

    fs::create_dir_all(root).map_err(WorktreeError::io(root))?;
    let root = root.canonicalize().map_err(WorktreeError::io(root))?;
    let path = root.join(name);
    if path.symlink_metadata().is_ok() {
        return Err(WorktreeError::PathExists(path));
    }

    let admins = common_dir(&repo).join("worktrees");
    // libgit2 creates this folder with a check-then-mkdir that fails when
    // several worktrees are created at once; make it here first.
    fs::create_dir_all(&admins).map_err(WorktreeError::io(&admins))?;
    let admin = admins.join(name);
    let branch_name = format!("{BRANCH_PREFIX}{name}");

    let guard = bookkeeping_lock();
    if let Ok(existing) = repo.find_worktree(name) {
        let locked = matches!(existing.is_locked(), Ok(WorktreeLockStatus::Locked(_)));
        if existing.path().exists() || locked {
            return Err(WorktreeError::NameTaken {
                name: name.to_string(),
                path: existing.path().to_path_buf(),
            });
        }
        // Left over from a worktree whose folder was deleted by hand: git
        // would prune it too.
        prune(&existing, name)?;
    } else if admin.symlink_metadata().is_ok() {
        // Bookkeeping git2 cannot read (half-written by a crash, say).
        return Err(WorktreeError::NameTaken {
            name: name.to_string(),
            path: admin,
        });
    }
    if repo.find_branch(&branch_name, BranchType::Local).is_ok() {
        return Err(WorktreeError::BranchExists(branch_name));
    }
    repo.branch(&branch_name, &commit, false)
        .map_err(WorktreeError::git(format!("create branch {branch_name}")))?;

    // libgit2 adds the worktree and then checks it out, all in one call.
    // While that worktree's bookkeeping is half-written, libgit2 1.8 takes
    // it for one that has every branch checked out, so another worktree's
    // creation or a branch deletion in this repository would fail. Those
    // hold `guard`, which is kept until this worktree's HEAD file exists;
    // the checkout, the long part, then runs in parallel with the others.
    let adding = {
        let (project, path, name, branch_name) = (
            project.to_path_buf(),
            path.clone(),
            name.to_string(),
            branch_name.clone(),
        );
        std::thread::spawn(move || -> Result<(), git2::Error> {
            let repo = Repository::open(&project)?;
            let branch = repo.find_branch(&branch_name, BranchType::Local)?;
            let mut options = WorktreeAddOptions::new();
            options.reference(Some(branch.get()));
            repo.worktree(&name, &path, Some(&options)).map(|_| ())
        })
    };
    while !adding.is_finished() && !admin.join("HEAD").exists() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(guard);
    let added = adding.join().unwrap_or_else(|_| {
        Err(git2::Error::from_str(
            "the thread adding the worktree panicked",
        ))
    });

    if let Err(source) = added {
        // Undo whatever libgit2 managed to make before it failed. Both paths
        // were checked not to exist above, so they are ours.
        let _guard = bookkeeping_lock();
        let _ = fs::remove_dir_all(&path);
        let _ = fs::remove_dir_all(&admin);
        // Not `Branch::delete`: it refuses when libgit2 wrongly believes the
        // branch is checked out (as below), and this one is brand new.
        if let Ok(mut reference) = repo.find_reference(&format!("refs/heads/{branch_name}")) {
            let _ = reference.delete();
        }
        if source.message().contains("already checked out") {
            // libgit2 says so of every branch when an entry under
            // .git/worktrees cannot be read.
            return Err(WorktreeError::BrokenBookkeeping {
                admins,
                message: source.message().to_string(),
            });
        }
        return Err(WorktreeError::Git {
            what: format!("create the worktree {}", path.display()),
            source,
        });
    }

    Ok(Worktree {
        name: name.to_string(),
        path,
        branch: branch_name,
        base_commit: commit.id().to_string(),
    })
}

/// Whether the worktree (or repository) at `path` has uncommitted changes:
/// modified or staged files, or untracked files that are not ignored.
pub fn is_dirty(path: &Path) -> Result<bool, WorktreeError> {
    let repo = Repository::open(path).map_err(|e| open_error(path, e))?;
    if repo.is_bare() {
        return Err(WorktreeError::Bare(path.to_path_buf()));
    }
    Ok(!changed_files(&repo, true, 1)
        .map_err(WorktreeError::git(format!(
            "read the status of {}",
            path.display()
        )))?
        .is_empty())
}

/// Arena's worktrees of `project`: those whose HEAD is on an `arena/*`
/// branch, or whose `arena/<name>` branch still exists (HEAD detached or
/// moved to another branch by the contestant). Sorted by name.
pub fn list(project: &Path) -> Result<Vec<WorktreeInfo>, WorktreeError> {
    let repo = open_project(project)?;
    let names = repo
        .worktrees()
        .map_err(WorktreeError::git("list the worktrees"))?;
    let admin_root = common_dir(&repo).join("worktrees");
    let mut found = Vec::new();
    for name in names.iter().flatten() {
        let Ok(worktree) = repo.find_worktree(name) else {
            // Bookkeeping without a readable `gitdir`: not ours to report.
            continue;
        };
        let branch = head_branch(&admin_root.join(name));
        let ours = branch
            .as_deref()
            .is_some_and(|b| b.starts_with(BRANCH_PREFIX))
            || repo
                .find_branch(&format!("{BRANCH_PREFIX}{name}"), BranchType::Local)
                .is_ok();
        if !ours {
            continue;
        }
        let path = worktree.path().to_path_buf();
        let exists = path.is_dir();
        let dirty = exists
            && is_dirty(&path).unwrap_or_else(|error| {
                tracing::warn!(worktree = %path.display(), %error, "cannot tell whether the worktree is dirty");
                true
            });
        found.push(WorktreeInfo {
            name: name.to_string(),
            path,
            branch,
            exists,
            dirty,
        });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// Removes the worktree `name` of `project`: its folder, git's bookkeeping
/// and its `arena/<name>` branch. Refuses a dirty or locked one unless
/// `force`. A worktree whose folder is already gone is pruned from git's
/// bookkeeping (and its branch deleted). A leftover `arena/<name>` branch
/// with no worktree is deleted too.
pub fn remove(project: &Path, name: &str, force: bool) -> Result<(), WorktreeError> {
    check_name(name)?;
    let repo = open_project(project)?;
    let branch_name = format!("{BRANCH_PREFIX}{name}");

    match repo.find_worktree(name) {
        Ok(worktree) => {
            if let WorktreeLockStatus::Locked(reason) = worktree.is_locked().map_err(
                WorktreeError::git(format!("read the lock of worktree {name}")),
            )? {
                if !force {
                    return Err(WorktreeError::Locked {
                        name: name.to_string(),
                        reason: reason.map(|r| format!(" ({r})")).unwrap_or_default(),
                    });
                }
            }
            let path = worktree.path().to_path_buf();
            if path.symlink_metadata().is_ok() {
                let admin = common_dir(&repo).join("worktrees").join(name);
                if !links_back(&path, &admin) {
                    return Err(WorktreeError::Foreign(path));
                }
                if !force && is_dirty(&path)? {
                    return Err(WorktreeError::Dirty {
                        name: name.to_string(),
                        path,
                    });
                }
                remove_dir_all(&path)?;
            }
            let _guard = bookkeeping_lock();
            prune(&worktree, name)?;
        }
        Err(_) => {
            if repo.find_branch(&branch_name, BranchType::Local).is_err() {
                return Err(WorktreeError::NotFound {
                    name: name.to_string(),
                    project: project.to_path_buf(),
                });
            }
        }
    }

    if let Ok(mut branch) = repo.find_branch(&branch_name, BranchType::Local) {
        let _guard = bookkeeping_lock();
        branch.delete().map_err(|source| {
            if source.message().contains("checked out") {
                WorktreeError::BranchInUse {
                    branch: branch_name.clone(),
                    message: source.message().to_string(),
                }
            } else {
                WorktreeError::Git {
                    what: format!("delete branch {branch_name}"),
                    source,
                }
            }
        })?;
    }
    Ok(())
}

/// Serializes changes to worktree bookkeeping and branch deletions within
/// this process (see [`create`]).
fn bookkeeping_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Opens the repository whose top folder is `project`, refusing a bare
/// one, a missing folder, or a subfolder of a repository.
fn open_project(project: &Path) -> Result<Repository, WorktreeError> {
    if !project.is_dir() {
        return Err(WorktreeError::Missing(project.to_path_buf()));
    }
    let repo = match Repository::open(project) {
        Ok(repo) => repo,
        Err(error) if error.code() == ErrorCode::NotFound => {
            return Err(match Repository::discover(project) {
                Ok(outer) => match outer.workdir() {
                    Some(top) => WorktreeError::NotTopLevel {
                        path: project.to_path_buf(),
                        top: top.to_path_buf(),
                    },
                    None => WorktreeError::NotARepository(project.to_path_buf()),
                },
                Err(_) => WorktreeError::NotARepository(project.to_path_buf()),
            });
        }
        Err(error) => return Err(open_error(project, error)),
    };
    if repo.is_bare() {
        return Err(WorktreeError::Bare(project.to_path_buf()));
    }
    Ok(repo)
}

fn open_error(path: &Path, error: git2::Error) -> WorktreeError {
    match error.code() {
        ErrorCode::NotFound => WorktreeError::NotARepository(path.to_path_buf()),
        ErrorCode::Owner => WorktreeError::NotOwned(path.to_path_buf()),
        _ => WorktreeError::Git {
            what: format!("open the repository at {}", path.display()),
            source: error,
        },
    }
}

fn head_commit(repo: &Repository, project: &Path) -> Result<String, WorktreeError> {
    let head = match repo.head() {
        Ok(head) => head,
        Err(error) if matches!(error.code(), ErrorCode::UnbornBranch | ErrorCode::NotFound) => {
            return Err(WorktreeError::NoCommits(project.to_path_buf()));
        }
        Err(source) => {
            return Err(WorktreeError::Git {
                what: format!("read HEAD of {}", project.display()),
                source,
            })
        }
    };
    let commit = head.peel_to_commit().map_err(WorktreeError::git(format!(
        "read HEAD of {}",
        project.display()
    )))?;
    Ok(commit.id().to_string())
}

/// The paths (up to `limit`) of files that differ from HEAD in the index or
/// the working tree; untracked, not ignored files count when
/// `include_untracked`.
pub(crate) fn changed_files(
    repo: &Repository,
    include_untracked: bool,
    limit: usize,
) -> Result<Vec<String>, git2::Error> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(include_untracked)
        .recurse_untracked_dirs(false)
        .include_ignored(false)
        .include_unmodified(false);
    let statuses = repo.statuses(Some(&mut options))?;
    Ok(statuses
        .iter()
        .filter(|entry| {
            let status = entry.status();
            !status.is_empty() && !status.is_ignored()
        })
        .take(limit)
        .map(|entry| String::from_utf8_lossy(entry.path_bytes()).into_owned())
        .collect())
}

/// The folder shared by all worktrees of `repo` (the main `.git`).
fn common_dir(repo: &Repository) -> PathBuf {
    let git_dir = repo.path();
    match fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => {
            let common = Path::new(text.trim_end_matches(['\n', '\r']));
            let joined = git_dir.join(common);
            joined.canonicalize().unwrap_or(joined)
        }
        Err(_) => git_dir.to_path_buf(),
    }
}

/// The branch (short form) named by the `HEAD` file in a worktree's
/// bookkeeping folder, `None` when detached or unreadable.
fn head_branch(admin: &Path) -> Option<String> {
    let text = fs::read_to_string(admin.join("HEAD")).ok()?;
    parse_head(&text)
}

fn parse_head(text: &str) -> Option<String> {
    text.trim()
        .strip_prefix("ref:")
        .map(str::trim)
        .and_then(|r| r.strip_prefix("refs/heads/"))
        .map(str::to_string)
}

/// Whether the `.git` file in `path` points at the bookkeeping folder
/// `admin`, i.e. `path` really is that worktree.
fn links_back(path: &Path, admin: &Path) -> bool {
    let Ok(text) = fs::read_to_string(path.join(".git")) else {
        return false;
    };
    let Some(target) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return false;
    };
    let target = path.join(target);
    match (target.canonicalize(), admin.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn prune(worktree: &git2::Worktree, name: &str) -> Result<(), WorktreeError> {
    let mut options = WorktreePruneOptions::new();
    options.valid(true).locked(true).working_tree(false);
    worktree
        .prune(Some(&mut options))
        .map_err(WorktreeError::git(format!("prune worktree {name}")))
}

/// `fs::remove_dir_all`, retrying once after making read-only folders
/// writable (build tools like Go's leave some behind).
fn remove_dir_all(path: &Path) -> Result<(), WorktreeError> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {
            make_writable(path);
            fs::remove_dir_all(path).map_err(WorktreeError::io(path))
        }
        Err(error) => Err(WorktreeError::Io {
            path: path.to_path_buf(),
            source: error,
        }),
    }
}

fn make_writable(path: &Path) {
    let Ok(meta) = path.symlink_metadata() else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mut permissions = meta.permissions();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        permissions.set_mode(permissions.mode() | 0o700);
    }
    #[cfg(not(unix))]
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    let _ = fs::set_permissions(path, permissions);
    if let Ok(entries) = fs::read_dir(path) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}

/// A worktree name must be one ordinary path component, usable as a folder
/// name and in a branch name.
fn check_name(name: &str) -> Result<(), WorktreeError> {
    let mut components = Path::new(name).components();
    let single = matches!(
        (components.next(), components.next()),
        (Some(Component::Normal(_)), None)
    );
    let branch_safe = !name.starts_with(['.', '-'])
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("@{")
        && name
            .chars()
            .all(|c| !c.is_control() && !" ~^:?*[\\/".contains(c));
    if single && branch_safe {
        Ok(())
    } else {
        Err(WorktreeError::InvalidName(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["alice", "codex-1", "a_b.c", "Qwen3"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "", ".", "..", "a/b", "/abs", "a b", ".hidden", "-x", "x.lock", "a..b", "a:b", "a\\b",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn head_files() {
        assert_eq!(
            parse_head("ref: refs/heads/arena/alice\n").as_deref(),
            Some("arena/alice")
        );
        assert_eq!(
            parse_head("0123456789abcdef0123456789abcdef01234567\n"),
            None
        );
        assert_eq!(parse_head("ref: refs/remotes/origin/main"), None);
    }

    #[test]
    fn messages_say_how_to_fix() {
        let message = WorktreeError::NotARepository("/p".into()).to_string();
        assert!(message.contains("git init"), "{message}");
        let message = WorktreeError::NoCommits("/p".into()).to_string();
        assert!(message.contains("first commit"), "{message}");
        let message = WorktreeError::Dirty {
            name: "a".into(),
            path: "/w/a".into(),
        }
        .to_string();
        assert!(
            message.contains("--force") && message.contains("stash"),
            "{message}"
        );
    }
}
