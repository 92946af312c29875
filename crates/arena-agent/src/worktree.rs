//! A Coding contestant's worktree: a folder under Arena's data directory
//! holding its working files and a git repository of its own (`.git/`, on
//! branch `arena/<name>` at the battle's base commit). The repository reads
//! the project's objects through `objects/info/alternates` (the sandbox
//! opens the project's object store read-only) and writes its own, so an
//! agent can commit, branch and rewrite its history without reaching the
//! user's `.git` or another contestant's work.
//!
//! Nothing an agent leaves in its repository is trusted. [`restore`] runs
//! after every agent or check and before Arena reads the repository: it
//! puts back Arena's configuration, hooks, `info/` and alternates; removes
//! what would send git elsewhere (`commondir`, `gitdir`, replace refs,
//! grafts, `shallow`, linked worktrees, submodule repositories) and every
//! entry that is not a plain file or folder (links, FIFOs, sockets,
//! devices). Arena opens the repository by its recorded path only
//! ([`open`]), never by following a `.git` file.
//!
//! Before this layout, worktrees were linked worktrees of the project (a
//! `.git` file, an `arena/<name>` branch in the user's repository);
//! [`restore`] turns such a one into the new layout and drops its
//! bookkeeping from the project.
//!
//! Everything here is synchronous (libgit2 through `git2`); callers run it
//! in `spawn_blocking`.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use git2::{
    build::CheckoutBuilder, BranchType, ErrorCode, Oid, Repository, RepositoryInitOptions,
    StatusOptions, WorktreePruneOptions,
};

/// The prefix of every branch Arena creates (`arena/<name>`).
pub const BRANCH_PREFIX: &str = "arena/";

/// A contestant repository's configuration, whatever the agent wrote there:
/// no hooks run (`hooksPath` leads nowhere), no file-system monitor.
const CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                      \tlogallrefupdates = true\n\tsymlinks = true\n\thooksPath = /dev/null\n\
                      \tfsmonitor = false\n";

/// Entries of a repository that only send git elsewhere or run things;
/// Arena's repositories have none of them.
const REDIRECTS: &[&str] = &[
    "commondir",
    "gitdir",
    "shallow",
    "modules",
    "worktrees",
    "refs/replace",
    "info",
    "hooks",
    "objects/info",
];

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
        "worktree `{name}` at {path} has uncommitted changes; commit or stash them (or save its \
         diff) first, or pass --force to discard them"
    )]
    Dirty { name: String, path: PathBuf },
    #[error(
        "{0} is not a folder Arena made for a contestant (it is a link or a file), so Arena \
         will not use or delete it; look at it, remove it by hand, then run the command again"
    )]
    Foreign(PathBuf),
    #[error(
        "the repository of worktree {0} is not as Arena left it (its `.git` is missing, a link \
         or a file), so Arena cannot tell what is uncommitted there; pass --force to remove it \
         anyway (its diff.patch is in the results folder)"
    )]
    Unknown(PathBuf),
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
    /// Its folder name under the root.
    pub name: String,
    /// Its folder (absolute, symlinks resolved).
    pub path: PathBuf,
    /// Its branch, `arena/<name>` (short form, without `refs/heads/`).
    pub branch: String,
    /// The full id of the commit it started from.
    pub base_commit: String,
}

/// What a project must be for a Coding battle: a non-bare git repository
/// (its top folder) with at least one commit. Returns the full id of the
/// HEAD commit.
pub fn check_project(project: &Path) -> Result<String, WorktreeError> {
    let repo = open_project(project)?;
    head_commit(&repo, project)
}

/// The URL of a remote of `project` whose branches (as last fetched or
/// pushed) hold `commit`: `origin` first, then the others by name. `None`
/// when none does (the commit was never pushed), or there is no remote.
pub fn remote_holding(project: &Path, commit: &str) -> Result<Option<String>, WorktreeError> {
    let repo = open_project(project)?;
    let Ok(target) = git2::Oid::from_str(commit) else {
        return Ok(None);
    };
    let mut names: Vec<String> = repo
        .remotes()
        .map_err(WorktreeError::git("list the remotes"))?
        .iter()
        .flatten()
        .map(str::to_string)
        .collect();
    names.sort_by_key(|n| (n != "origin", n.clone()));
    for name in names {
        let Some(url) = repo
            .find_remote(&name)
            .ok()
            .and_then(|r| r.url().map(str::to_string))
        else {
            continue;
        };
        let refs = repo
            .references_glob(&format!("refs/remotes/{name}/*"))
            .map_err(WorktreeError::git(format!(
                "list the branches of remote {name}"
            )))?;
        for tip in refs.flatten().filter_map(|r| r.target()) {
            if tip == target || repo.graph_descendant_of(tip, target).unwrap_or(false) {
                return Ok(Some(url));
            }
        }
    }
    Ok(None)
}

/// Creates the worktree `root/<name>`: a repository of its own on a new
/// branch `arena/<name>` at `base_commit` (any revision git understands),
/// reading the project's objects, with every file checked out. Creates
/// `root` if needed; refuses if `root/<name>` exists. On failure nothing it
/// made is left behind. The project is only read.
pub fn create(
    project: &Path,
    root: &Path,
    name: &str,
    base_commit: &str,
) -> Result<Worktree, WorktreeError> {
    check_name(name)?;
    let repo = open_source(project)?;
    let base = repo
        .revparse_single(base_commit)
        .and_then(|object| object.peel_to_commit())
        .map_err(|_| WorktreeError::UnknownCommit {
            commit: base_commit.to_string(),
            project: project.to_path_buf(),
        })?
        .id();
    let objects = object_store(&repo);
    fs::create_dir_all(root).map_err(WorktreeError::io(root))?;
    let root = root.canonicalize().map_err(WorktreeError::io(root))?;
    let path = root.join(name);
    if let Err(error) = fs::create_dir(&path) {
        return Err(match error.kind() {
            io::ErrorKind::AlreadyExists => WorktreeError::PathExists(path),
            _ => WorktreeError::Io {
                path,
                source: error,
            },
        });
    }
    if let Err(error) = build(&path, &objects, name, base, true) {
        let _ = remove_dir_all(&path);
        return Err(error);
    }
    Ok(Worktree {
        name: name.to_string(),
        path,
        branch: format!("{BRANCH_PREFIX}{name}"),
        base_commit: base.to_string(),
    })
}

/// What [`restore`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// The repository was sound; Arena's parts were put back.
    Kept,
    /// The repository was gone, replaced or of the old layout: a new one
    /// was made at the base commit around the working files as they are
    /// (its commits are lost, its changes are not).
    Rebuilt,
}

/// Puts the worktree's repository back in Arena's hands (see the module
/// documentation); run after every agent or check and before Arena reads
/// it. `project` and `base_commit` are Arena's records of the battle.
pub fn restore(
    worktree: &Path,
    project: &Path,
    base_commit: &str,
) -> Result<Restored, WorktreeError> {
    if !is_dir(worktree) {
        return Err(WorktreeError::Foreign(worktree.to_path_buf()));
    }
    let name = folder_name(worktree)?;
    let git_dir = worktree.join(".git");
    let project_repo = open_source(project)?;
    let objects = object_store(&project_repo);
    if !is_sound(&git_dir) {
        let legacy = fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_file());
        remove_entry(&git_dir)?;
        let base = Oid::from_str(base_commit)
            .ok()
            .filter(|oid| project_repo.find_commit(*oid).is_ok())
            .ok_or_else(|| WorktreeError::UnknownCommit {
                commit: base_commit.to_string(),
                project: project.to_path_buf(),
            })?;
        build(worktree, &objects, &name, base, false)?;
        if legacy {
            forget_linked(&project_repo, &name, worktree);
        }
        return Ok(Restored::Rebuilt);
    }
    remove_odd_entries(&git_dir)?;
    for entry in REDIRECTS {
        remove_entry(&git_dir.join(entry))?;
    }
    if !git_dir.join("HEAD").exists() {
        write_file(
            &git_dir.join("HEAD"),
            &format!("ref: refs/heads/{BRANCH_PREFIX}{name}\n"),
        )?;
    }
    arena_parts(&git_dir, &objects)?;
    // Replace refs may also sit in `packed-refs`.
    let repo = open(worktree)?;
    let replaced: Vec<String> = repo
        .references_glob("refs/replace/*")
        .map_err(WorktreeError::git("list replace refs"))?
        .flatten()
        .filter_map(|r| r.name().map(str::to_string))
        .collect();
    for name in replaced {
        if let Ok(mut reference) = repo.find_reference(&name) {
            reference
                .delete()
                .map_err(WorktreeError::git(format!("delete {name}")))?;
        }
    }
    Ok(Restored::Kept)
}

/// Opens a contestant's repository the way Arena does: `<worktree>/.git`
/// by its path (no discovery, no `.git` file followed, no `core.worktree`),
/// with `worktree` as its working folder. Call [`restore`] first.
pub fn open(worktree: &Path) -> Result<Repository, WorktreeError> {
    let git_dir = worktree.join(".git");
    if !is_sound(&git_dir) {
        return Err(WorktreeError::Unknown(worktree.to_path_buf()));
    }
    let repo = Repository::open_bare(&git_dir).map_err(|e| open_error(worktree, e))?;
    repo.set_workdir(worktree, false)
        .map_err(WorktreeError::git(format!("open {}", worktree.display())))?;
    Ok(repo)
}

/// The object folders a contestant's repository reads from the project:
/// its object store and the stores that one borrows from (its own
/// alternates, as git follows them). What an agent's sandbox may read of
/// the user's `.git`.
pub fn object_dirs(project: &Path) -> Result<Vec<PathBuf>, WorktreeError> {
    let repo = open_source(project)?;
    let mut dirs = vec![object_store(&repo)];
    let mut next = 0;
    // git follows alternates five deep.
    while next < dirs.len() && dirs.len() < 6 {
        let dir = dirs[next].clone();
        next += 1;
        let Ok(text) = fs::read_to_string(dir.join("info/alternates")) else {
            continue;
        };
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let found = dir.join(line);
            let found = found.canonicalize().unwrap_or(found);
            if !dirs.contains(&found) {
                dirs.push(found);
            }
        }
    }
    Ok(dirs)
}

/// Whether the worktree has uncommitted changes: modified or staged files,
/// or untracked files that are not ignored. A repository that is not as
/// Arena left it counts as dirty (nothing is discarded by mistake).
pub fn is_dirty(worktree: &Path) -> Result<bool, WorktreeError> {
    match has_changes(worktree) {
        Err(WorktreeError::Unknown(_)) => Ok(true),
        other => other,
    }
}

/// Whether the worktree has uncommitted changes; `Unknown` when its
/// repository is not as Arena left it.
fn has_changes(worktree: &Path) -> Result<bool, WorktreeError> {
    let repo = open(worktree)?;
    Ok(!changed_files(&repo, true, 1)
        .map_err(WorktreeError::git(format!(
            "read the status of {}",
            worktree.display()
        )))?
        .is_empty())
}

/// Removes a contestant's worktree (its folder, its repository with it).
/// Refuses one with uncommitted work unless `force`; a folder that is gone
/// is fine. A worktree of the old layout also leaves the project's
/// bookkeeping (its `arena/<name>` branch and `.git/worktrees/<name>`).
pub fn remove(project: &Path, worktree: &Path, force: bool) -> Result<(), WorktreeError> {
    let name = folder_name(worktree)?;
    match fs::symlink_metadata(worktree) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(WorktreeError::Io {
                path: worktree.to_path_buf(),
                source: error,
            })
        }
        Ok(meta) if !meta.is_dir() => return Err(WorktreeError::Foreign(worktree.to_path_buf())),
        Ok(_) => {
            if !force && has_changes(worktree)? {
                return Err(WorktreeError::Dirty {
                    name,
                    path: worktree.to_path_buf(),
                });
            }
            remove_dir_all(worktree)?;
        }
    }
    // Its own layers of the project's environment go with it.
    crate::environment::remove(&crate::environment::layers_of(worktree));
    if let Ok(repo) = open_project(project) {
        forget_linked(&repo, &name, worktree);
    }
    Ok(())
}

/// Makes the repository of `worktree` (an existing folder): Arena's
/// configuration, no hooks, the project's objects as alternates, branch
/// `arena/<name>` at `base` and HEAD on it; then either checks every file
/// out (a new worktree) or only sets the index to the base tree (around an
/// agent's working files, which stay as they are).
fn build(
    worktree: &Path,
    objects: &Path,
    name: &str,
    base: Oid,
    checkout: bool,
) -> Result<(), WorktreeError> {
    let branch = format!("refs/heads/{BRANCH_PREFIX}{name}");
    let mut options = RepositoryInitOptions::new();
    options
        .no_reinit(true)
        .external_template(false)
        .initial_head(&branch);
    Repository::init_opts(worktree, &options).map_err(WorktreeError::git(format!(
        "make a repository in {}",
        worktree.display()
    )))?;
    let git_dir = worktree.join(".git");
    for entry in REDIRECTS {
        remove_entry(&git_dir.join(entry))?;
    }
    arena_parts(&git_dir, objects)?;
    let repo = open(worktree)?;
    let what = || format!("set up the repository in {}", worktree.display());
    let commit = repo.find_commit(base).map_err(WorktreeError::git(what()))?;
    repo.reference(&branch, base, true, "arena: the battle's base commit")
        .map_err(WorktreeError::git(what()))?;
    if checkout {
        let mut files = CheckoutBuilder::new();
        files.force();
        repo.checkout_tree(commit.as_object(), Some(&mut files))
            .map_err(WorktreeError::git(what()))?;
    } else {
        let tree = commit.tree().map_err(WorktreeError::git(what()))?;
        let mut index = repo.index().map_err(WorktreeError::git(what()))?;
        index.read_tree(&tree).map_err(WorktreeError::git(what()))?;
        index.write().map_err(WorktreeError::git(what()))?;
    }
    Ok(())
}

/// Writes Arena's parts of a repository: its configuration, an empty
/// `hooks/` and `info/`, and `objects/info/alternates` naming the project's
/// object store.
fn arena_parts(git_dir: &Path, objects: &Path) -> Result<(), WorktreeError> {
    write_file(&git_dir.join("config"), CONFIG)?;
    for dir in ["hooks", "info", "objects/info"] {
        let dir = git_dir.join(dir);
        fs::create_dir_all(&dir).map_err(WorktreeError::io(&dir))?;
    }
    write_file(
        &git_dir.join("objects/info/alternates"),
        &format!("{}\n", objects.display()),
    )
}

/// Whether `git_dir` is a repository folder Arena can open without
/// following anything: a real folder with real `objects/` and `refs/`.
fn is_sound(git_dir: &Path) -> bool {
    is_dir(git_dir) && is_dir(&git_dir.join("objects")) && is_dir(&git_dir.join("refs"))
}

/// A real folder (not a link to one).
fn is_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Removes whatever is at `path`, never following a link; nothing there is
/// fine.
fn remove_entry(path: &Path) -> Result<(), WorktreeError> {
    match fs::symlink_metadata(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(WorktreeError::Io {
            path: path.to_path_buf(),
            source: error,
        }),
        Ok(meta) if meta.is_dir() => remove_dir_all(path),
        Ok(_) => fs::remove_file(path).map_err(WorktreeError::io(path)),
    }
}

/// Removes every entry under `dir` that is not a plain file or folder.
fn remove_odd_entries(dir: &Path) -> Result<(), WorktreeError> {
    let entries = fs::read_dir(dir).map_err(WorktreeError::io(dir))?;
    for entry in entries {
        let entry = entry.map_err(WorktreeError::io(dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(WorktreeError::io(&path))?;
        if kind.is_dir() {
            remove_odd_entries(&path)?;
        } else if !kind.is_file() {
            fs::remove_file(&path).map_err(WorktreeError::io(&path))?;
        }
    }
    Ok(())
}

/// Writes `text` to `path` through a new file renamed over it, so a link or
/// a folder left there is replaced, not followed.
fn write_file(path: &Path, text: &str) -> Result<(), WorktreeError> {
    if is_dir(path) {
        remove_dir_all(path)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".arena-new");
    let temporary = PathBuf::from(temporary);
    remove_entry(&temporary)?;
    fs::write(&temporary, text).map_err(WorktreeError::io(&temporary))?;
    fs::rename(&temporary, path).map_err(WorktreeError::io(path))
}

/// The worktree's folder name: its name and its branch's.
fn folder_name(worktree: &Path) -> Result<String, WorktreeError> {
    let name = worktree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_name(&name)?;
    Ok(name)
}

/// Drops an old-layout worktree's bookkeeping from the project: git's entry
/// for it (when it is at `worktree`) and its `arena/<name>` branch. Best
/// effort: what cannot be removed is logged and left.
fn forget_linked(repo: &Repository, name: &str, worktree: &Path) {
    if let Ok(linked) = repo.find_worktree(name) {
        if linked.path() != worktree {
            return;
        }
        let mut options = WorktreePruneOptions::new();
        options.valid(true).locked(true).working_tree(false);
        if let Err(error) = linked.prune(Some(&mut options)) {
            tracing::warn!(worktree = %worktree.display(), %error, "cannot drop an old worktree's entry from the project");
            return;
        }
    }
    if let Ok(mut branch) = repo.find_branch(&format!("{BRANCH_PREFIX}{name}"), BranchType::Local) {
        if let Err(error) = branch.delete() {
            tracing::warn!(%name, %error, "cannot delete an old worktree's branch in the project");
        }
    }
}

// --- Sealed sources (issue 40): a battle's objects may come from a
// repository Arena sealed ([`crate::seal`]) instead of the project.

/// The repository a contestant's worktree takes its objects from: a
/// repository Arena sealed ([`crate::seal::is_sealed`], bare, holding only
/// a base's objects) opened as it is, else the project ([`open_project`]).
/// [`create`], [`restore`] and [`object_dirs`] take either as `project`.
fn open_source(source: &Path) -> Result<Repository, WorktreeError> {
    if crate::seal::is_sealed(source) {
        return Repository::open_bare(source).map_err(|e| open_error(source, e));
    }
    open_project(source)
}

// --- end of sealed sources.

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
        .include_unmodified(false)
        .exclude_submodules(true);
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

/// The project's object store (of the main `.git` when the project is a
/// linked worktree itself), symlinks resolved.
fn object_store(repo: &Repository) -> PathBuf {
    let git_dir = repo.path();
    let common = match fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim_end_matches(['\n', '\r'])),
        Err(_) => git_dir.to_path_buf(),
    };
    let objects = common.join("objects");
    objects.canonicalize().unwrap_or(objects)
}

/// `fs::remove_dir_all`, retrying once after making read-only folders
/// writable (build tools like Go's leave some behind). Links are removed,
/// not followed.
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
