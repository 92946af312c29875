//! A Coding battle from "my working tree as it is": the user's tracked
//! and untracked-but-not-ignored files, as they are on disk, made a commit
//! (its parent HEAD) in a repository of Arena's own
//! (`<data>/snapshots/<commit>`, sealed like a task's base: only the
//! objects reachable from the snapshot). The user's repository is only
//! read: no object, ref, index or configuration of it is written (its
//! status is read with libgit2, which does not refresh the index on disk).
//!
//! Hostile trees: a link is stored as a link (its target as text, never
//! followed), a path through a linked folder is not read, a file past
//! `[limits] max_file_bytes` (the jail's file bound) refuses the snapshot
//! naming it, anything under a `.git` (a nested repository's pointer file
//! or folder) and anything that is neither file nor link is left out. A
//! new file that may hold a secret (`.env*`, what the jail hides as a
//! credential: `.npmrc`, `credentials.json`, a private key …) is left out
//! too: the snapshot is every agent's tree.
//!
//! Applying a result made from a snapshot: the change is against the
//! snapshot, so it is applied only while the user's tree still is that
//! snapshot ([`unchanged_since`]); otherwise it is refused saying so.

use std::io::Read;
use std::path::{Path, PathBuf};

use git2::{Index, IndexEntry, IndexTime, Oid, Repository, Status, StatusOptions};

use crate::battle::{Battle, BattleRequest};
use crate::coding_base::{CodingBase, UncommittedFile, UncommittedKind, SNAPSHOTS_DIR};
use crate::error::{Error, Invalid, Result};

use super::{validate, Engine};

/// What differs from HEAD in the working tree, by path: the entries a
/// snapshot takes over HEAD's tree.
fn uncommitted(user: &Repository) -> std::result::Result<Vec<UncommittedFile>, git2::Error> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true)
        .renames_head_to_index(false)
        .renames_index_to_workdir(false);
    let statuses = user.statuses(Some(&mut options))?;
    let mut files: Vec<UncommittedFile> = statuses
        .iter()
        .filter_map(|e| {
            let path = e.path()?.to_string();
            let s = e.status();
            let kind = if s.intersects(Status::WT_DELETED | Status::INDEX_DELETED)
                && !s.contains(Status::WT_NEW)
            {
                UncommittedKind::Deleted
            } else if s.contains(Status::WT_NEW) {
                UncommittedKind::Untracked
            } else if s.contains(Status::INDEX_NEW) {
                UncommittedKind::Added
            } else if s.intersects(
                Status::WT_MODIFIED
                    | Status::WT_TYPECHANGE
                    | Status::INDEX_MODIFIED
                    | Status::INDEX_TYPECHANGE
                    | Status::WT_RENAMED
                    | Status::INDEX_RENAMED,
            ) {
                UncommittedKind::Modified
            } else {
                return None;
            };
            Some(UncommittedFile { path, kind })
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    Ok(files)
}

fn git_error(what: &str) -> impl Fn(git2::Error) -> Error + '_ {
    move |e| Error::Git(format!("{what}: {}", e.message()))
}

/// HEAD's commit, subject and branch, and the uncommitted files (the first
/// [`crate::coding_base::UNCOMMITTED_LISTED`] and their count).
pub fn coding_base_of(project: &Path) -> Result<CodingBase> {
    let user = Repository::open(project).map_err(git_error("open the project's repository"))?;
    let head = user
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(git_error("read HEAD (a Coding battle needs a commit)"))?;
    let branch = user
        .head()
        .ok()
        .filter(|h| h.is_branch())
        .and_then(|h| h.shorthand().map(str::to_string));
    let mut files = uncommitted(&user).map_err(git_error("read the working tree's status"))?;
    let count = files.len();
    files.truncate(crate::coding_base::UNCOMMITTED_LISTED);
    let commit = head.id().to_string();
    Ok(CodingBase {
        short_commit: commit[..8].to_string(),
        commit,
        subject: head.summary().unwrap_or("").to_string(),
        branch,
        uncommitted: files,
        uncommitted_count: count,
    })
}

/// Whether every folder on the way from `root` to `rel` is a real folder
/// (no link): a path through a linked folder is not the project's.
fn inside(root: &Path, rel: &Path) -> bool {
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            _ => return false,
        }
    }
    true
}

/// Reads a regular file without following a link at its last component,
/// at most `max` bytes (a larger one is refused naming it).
fn read_file(path: &Path, rel: &str, max: u64) -> Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::Task(format!("{rel} is not a regular file")));
    }
    if meta.len() > max {
        return Err(Invalid::Other(format!(
            "{rel} is {} bytes, past the jail's file bound ([limits] max_file_bytes = {max}): ignore it (.gitignore) or start from HEAD",
            meta.len()
        ))
        .into());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > max {
        return Err(Invalid::Other(format!(
            "{rel} grew past the jail's file bound ([limits] max_file_bytes = {max}) while it was read"
        ))
        .into());
    }
    Ok(bytes)
}

/// The tree of the working tree of `user` as it is, written into `into`
/// (a repository of Arena's whose alternates name the user's objects):
/// HEAD's tree with each uncommitted path as it is on disk.
fn working_tree(user: &Repository, into: &Repository, max_file_bytes: u64) -> Result<(Oid, Oid)> {
    let workdir = user
        .workdir()
        .ok_or_else(|| Invalid::Other("the project is a bare repository".into()))?
        .to_path_buf();
    let head = user
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(git_error("read HEAD"))?
        .id();
    let head_tree = into
        .find_commit(head)
        .and_then(|c| c.tree())
        .map_err(git_error("read HEAD's tree"))?;
    let mut index = Index::new().map_err(git_error("make an index in memory"))?;
    index
        .read_tree(&head_tree)
        .map_err(git_error("read HEAD's tree into the index"))?;
    for file in uncommitted(user).map_err(git_error("read the working tree's status"))? {
        let rel = Path::new(&file.path);
        if rel
            .components()
            .any(|c| c.as_os_str() == ".git" || !matches!(c, std::path::Component::Normal(_)))
        {
            continue;
        }
        let path = workdir.join(rel);
        let meta = if inside(&workdir, rel) {
            std::fs::symlink_metadata(&path).ok()
        } else {
            None
        };
        let (id, mode, size) = match meta {
            None => {
                let _ = index.remove_path(rel);
                continue;
            }
            Some(m) if m.file_type().is_symlink() => {
                use std::os::unix::ffi::OsStrExt;
                let target = std::fs::read_link(&path).map_err(|e| Error::io(&path, e))?;
                let bytes = target.as_os_str().as_bytes();
                let id = into.blob(bytes).map_err(git_error("store a link"))?;
                (id, 0o120000, bytes.len())
            }
            Some(m) if m.is_file() => {
                use std::os::unix::fs::PermissionsExt;
                let bytes = read_file(&path, &file.path, max_file_bytes)?;
                // A new file that holds a secret (a `.env`, an `.npmrc`,
                // a private key) stays out: the snapshot is every agent's
                // tree, and the jail hides such files everywhere else.
                let new = matches!(
                    file.kind,
                    UncommittedKind::Untracked | UncommittedKind::Added
                );
                if new && holds_secret(rel, &bytes) {
                    tracing::warn!(path = %file.path, "left a file that may hold a secret out of the snapshot");
                    let _ = index.remove_path(rel);
                    continue;
                }
                let id = into.blob(&bytes).map_err(git_error("store a file"))?;
                let mode = if m.permissions().mode() & 0o111 != 0 {
                    0o100755
                } else {
                    0o100644
                };
                (id, mode, bytes.len())
            }
            // A nested repository, a FIFO, a socket: not a file of the tree.
            Some(_) => {
                let _ = index.remove_path(rel);
                continue;
            }
        };
        let bytes = file.path.as_bytes().to_vec();
        index
            .add(&IndexEntry {
                ctime: IndexTime::new(0, 0),
                mtime: IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode,
                uid: 0,
                gid: 0,
                file_size: size as u32,
                id,
                flags: bytes.len().min(0xfff) as u16,
                flags_extended: 0,
                path: bytes,
            })
            .map_err(git_error("add a file to the snapshot"))?;
    }
    let tree = index
        .write_tree_to(into)
        .map_err(git_error("write the snapshot's tree"))?;
    Ok((tree, head))
}

/// Whether a new file of the working tree may hold a secret: what the jail
/// hides as a credential, and a `.env` file (`.env`, `.env.local`, …).
fn holds_secret(rel: &Path, bytes: &[u8]) -> bool {
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let head = &bytes[..bytes.len().min(8192)];
    name == ".env" || name.starts_with(".env.") || crate::agent::jail::is_credential_file(rel, head)
}

/// A bare repository at `dir` whose objects borrow `borrow` (read only).
fn scratch_repository(dir: &Path, borrow: &[PathBuf]) -> Result<Repository> {
    Repository::init_bare(dir).map_err(git_error("make a scratch repository"))?;
    let alternates = dir.join("objects/info/alternates");
    let text: String = borrow
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    std::fs::write(&alternates, text).map_err(|e| Error::io(&alternates, e))?;
    Repository::open_bare(dir).map_err(git_error("open a scratch repository"))
}

/// The user's object stores (its common folder's for a linked worktree,
/// and its alternates).
fn objects_of(project: &Path) -> Result<Vec<PathBuf>> {
    crate::worktree::object_dirs(project)
        .map_err(|e| Error::Git(format!("find the project's objects: {e}")))
}

/// Makes the snapshot of `project`'s working tree: its commit id and the
/// sealed repository holding it under `root` (`<data>/snapshots`).
pub fn make(project: &Path, root: &Path, max_file_bytes: u64) -> Result<(String, PathBuf)> {
    let user = Repository::open(project).map_err(git_error("open the project's repository"))?;
    std::fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
    let scratch = tempfile::Builder::new()
        .prefix(".snapshot-")
        .tempdir_in(root)
        .map_err(|e| Error::io(root, e))?;
    let into = scratch_repository(scratch.path(), &objects_of(project)?)?;
    let (tree, head) = working_tree(&user, &into, max_file_bytes)?;
    let tree = into.find_tree(tree).map_err(git_error("read the tree"))?;
    let parent = into.find_commit(head).map_err(git_error("read HEAD"))?;
    // Signed at HEAD's time: the same tree over the same HEAD is the same
    // commit, and its sealed repository is reused.
    let who = git2::Signature::new("Arena", "arena@localhost", &parent.time())
        .map_err(git_error("sign the snapshot"))?;
    let message = format!(
        "Working tree of {} as it was (HEAD {})\n",
        project.display(),
        &head.to_string()[..12]
    );
    let commit = into
        .commit(None, &who, &who, &message, &tree, &[&parent])
        .map_err(git_error("commit the snapshot"))?
        .to_string();
    let sealed = crate::agent::seal::seal(scratch.path(), &commit, &root.join(&commit))
        .map_err(|e| Error::Git(format!("sealing the snapshot: {e}")))?;
    tracing::info!(project = %project.display(), %commit, "snapshot of the working tree made");
    Ok((commit, sealed.path))
}

/// Whether `project`'s working tree is still the snapshot `commit` kept
/// in `snapshot` (the tree a battle's changes were made against).
pub fn unchanged_since(
    project: &Path,
    snapshot: &Path,
    commit: &str,
    max_file_bytes: u64,
) -> Result<bool> {
    let user = Repository::open(project).map_err(git_error("open the project's repository"))?;
    let root = snapshot.parent().unwrap_or(snapshot);
    let scratch = tempfile::Builder::new()
        .prefix(".compare-")
        .tempdir_in(root)
        .map_err(|e| Error::io(root, e))?;
    let mut borrow = objects_of(project)?;
    borrow.push(snapshot.join("objects"));
    let into = scratch_repository(scratch.path(), &borrow)?;
    let (now, _) = match working_tree(&user, &into, max_file_bytes) {
        Ok(t) => t,
        // A file past the bound now: not the snapshot's tree.
        Err(Error::Invalid(_)) => return Ok(false),
        Err(e) => return Err(e),
    };
    let then = Oid::from_str(commit)
        .and_then(|id| into.find_commit(id))
        .and_then(|c| c.tree())
        .map_err(git_error("read the snapshot's tree"))?;
    Ok(now == then.id())
}

impl Engine {
    /// What the launcher shows of a Coding project's base: HEAD (commit,
    /// subject, branch) and the uncommitted files. Reads only.
    pub async fn coding_base(&self, project: &Path) -> Result<CodingBase> {
        let project = validate::project_folder(project)?;
        tokio::task::spawn_blocking(move || coding_base_of(&project)).await?
    }

    /// Checks and records a Coding battle that starts from the project's
    /// working tree as it is: a snapshot commit in Arena's own repository
    /// (`<data>/snapshots/<commit>`), recorded as the battle's base and
    /// source. The user's repository is only read.
    pub async fn create_battle_from_working_tree(&self, request: BattleRequest) -> Result<Battle> {
        let mut plan = validate::check(self, request).await?;
        if plan.base_commit().is_none() {
            return Err(
                Invalid::Other("only a Coding battle starts from the working tree".into()).into(),
            );
        }
        let (project, root) = (plan.project.clone(), self.data_dir().join(SNAPSHOTS_DIR));
        let max = self.config().limits.max_file_bytes;
        let (commit, sealed) =
            tokio::task::spawn_blocking(move || make(&project, &root, max)).await??;
        plan.start_from(&commit);
        plan.take_objects_from(&sealed);
        validate::record(self, &plan, None).await
    }

    /// Refuses to apply a change made against a working-tree snapshot once
    /// the user's tree is no longer that snapshot; `Ok(true)` when the
    /// battle started from a snapshot and the tree still is it (the change
    /// then applies over uncommitted work), `Ok(false)` for a battle from
    /// HEAD.
    pub(super) async fn snapshot_still_there(
        &self,
        battle: &Battle,
        project: &Path,
    ) -> Result<bool> {
        if crate::coding_base::base_of(battle) != Some(crate::coding_base::BaseChoice::WorkingTree)
        {
            return Ok(false);
        }
        let (Some(source), Some(commit)) = (battle.source.clone(), battle.base_commit.clone())
        else {
            return Ok(false);
        };
        if !source.is_dir() {
            return Err(Error::Conflict(format!(
                "the snapshot of your working tree this battle started from ({}) was pruned, so \
                 Arena cannot tell whether your tree is still as it was; apply the change by hand \
                 from the contestant's diff.patch",
                source.display()
            )));
        }
        let (project, max) = (project.to_path_buf(), self.config().limits.max_file_bytes);
        let c = commit.clone();
        let same = tokio::task::spawn_blocking(move || unchanged_since(&project, &source, &c, max))
            .await??;
        if same {
            Ok(true)
        } else {
            Err(Error::Conflict(format!(
                "this battle started from a snapshot of your working tree (commit {}), and your working tree has changed since: its changes are against that snapshot and would not apply as they were checked. Put the tree back as it was, or run the battle again from the tree as it is now",
                &commit[..12.min(commit.len())]
            )))
        }
    }
}
