//! A Coding contestant's result as a diff.
//!
//! [`diff_worktree`] compares the battle's base commit with everything in
//! the contestant's worktree: commits it made, staged and unstaged edits,
//! and new files that are not ignored. The patch is in `git diff` format
//! (`a/` and `b/` prefixes, renames, `GIT binary patch` for binary files),
//! so `git apply` accepts it against the base commit. [`apply`](super::apply)
//! applies such a patch to the project's working tree, all or nothing.
//!
//! Everything here is synchronous (libgit2 through `git2`); callers run it
//! in `spawn_blocking`.

use std::path::{Path, PathBuf};

use git2::{Delta, DiffFindOptions, DiffOptions, ErrorCode, Oid, Patch, Repository};

use crate::worktree;

/// Renames are detected from this similarity (percent) up, like git's
/// default.
pub const RENAME_THRESHOLD: u16 = 50;

/// What went wrong making or applying a diff. Each message says what was
/// wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error(
        "{0} is not a git worktree or repository (was it removed?); check the path, or run \
         `git init` there for a project"
    )]
    NotARepository(PathBuf),
    #[error("{0} is a bare git repository, with no working files to diff or patch; use a clone")]
    Bare(PathBuf),
    #[error(
        "git refuses to open {0} because it belongs to another user; if you trust it, run \
         `git config --global --add safe.directory {0}`"
    )]
    NotOwned(PathBuf),
    #[error(
        "base commit `{commit}` was not found in {path}; was the history rewritten since the \
         battle started? Pass a commit that exists there"
    )]
    UnknownCommit { commit: String, path: PathBuf },
    #[error(
        "{project} has uncommitted changes ({files}); commit or stash them (`git stash`) first, \
         so the patch does not mix with them, then apply again"
    )]
    Dirty { project: PathBuf, files: String },
    #[error(
        "the patch does not apply cleanly to {project}: {file}: {detail}{others}; the project \
         has changed since the battle's base commit. Nothing was changed. Save the patch and \
         merge it by hand with `git apply --3way`"
    )]
    Conflict {
        project: PathBuf,
        file: String,
        detail: String,
        others: String,
    },
    #[error(
        "the patch creates {file}, which already exists in {project}; move that file away (or \
         commit its removal) and apply again. Nothing was changed"
    )]
    Exists { project: PathBuf, file: String },
    #[error("this is not a patch in `git diff` format: {0}")]
    InvalidPatch(String),
    #[error(
        "the patch touches `{file}`, which is outside the project (an absolute path, or one \
         that climbs with `..`); a patch may only change files inside it. Nothing was changed. \
         Check where this patch came from"
    )]
    OutsidePath { file: String },
    #[error(
        "the patch touches `{file}`, {what}; a contestant may not change git's own files or \
         configuration, so Arena refuses the patch. Nothing was changed. If you want that \
         change, review it and make it by hand"
    )]
    GitData { file: String, what: &'static str },
    #[error(
        "the patch touches `{file}` beyond `{link}`, {origin}; through a link a patch can write \
         wherever it points (into `.git`, where hooks run, or outside the project), so Arena \
         refuses it, as `git apply` does. Nothing was changed. If the link is yours, make the \
         change in the folder it points to by hand"
    )]
    BeyondLink {
        file: String,
        link: String,
        origin: &'static str,
    },
    #[error(
        "the patch makes `{link}` a symbolic link to `{target}`; {why}, so Arena refuses it. \
         Nothing was changed. If you want that link, review it and make it by hand"
    )]
    UnsafeLink {
        link: String,
        target: String,
        why: String,
    },
    #[error(
        "the patch changes, moves or deletes `{file}`, a symbolic link; libgit2, which Arena \
         applies patches with, would read what the link points to instead of the link, so \
         Arena leaves existing links alone. Nothing was changed. Make that change to the link \
         by hand"
    )]
    ChangesLink { file: String },
    #[error(
        "the patch changes `{file}` in more than one file section, which `git diff` never \
         writes; libgit2 would apply the later section on top of the earlier one, which Arena \
         cannot check, so it refuses. Nothing was changed. Check where this patch came from"
    )]
    Repeated { file: String },
    #[error(
        "the patch changes `{file}` as a file, but in {project} it is {kind}; libgit2, which \
         Arena applies patches with, would read through it, so Arena refuses. Nothing was \
         changed. Check that the patch was made for this project, or make the change by hand"
    )]
    NotAFile {
        project: PathBuf,
        file: String,
        kind: &'static str,
    },
    #[error(
        "the patch gives `{file}` mode {mode} ({what}); Arena applies regular files (100644), \
         executables (100755) and symbolic links (120000) only, each created, changed or \
         deleted, never turned into another in place. Nothing was changed. {hint}"
    )]
    Mode {
        file: String,
        mode: String,
        what: &'static str,
        hint: String,
    },
    #[error(transparent)]
    Worktree(#[from] worktree::WorktreeError),
    #[error(
        "`{file}` in the worktree is {kind}, not a file; git reads that name for its rules \
         (and would wait on it), so the contestant's change cannot be read. \
         Agents must leave `.gitignore`, `.gitattributes` and `.gitmodules` as plain files"
    )]
    OddGitFile { file: String, kind: &'static str },
    #[error("could not {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("git could not {what}: {}", .source.message())]
    Git {
        what: String,
        #[source]
        source: git2::Error,
    },
}

impl DiffError {
    pub(crate) fn git(what: impl Into<String>) -> impl FnOnce(git2::Error) -> DiffError {
        let what = what.into();
        move |source| DiffError::Git { what, source }
    }
}

pub use arena_domain::patch::{ChangeStatus, Diff, DiffStats, FileChange};

/// How much of an agent's work a diff carries. A file over `file_bytes`,
/// and every file once the patch has reached `total_bytes`, is listed with
/// its size and hash instead of its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffLimits {
    pub file_bytes: u64,
    pub total_bytes: u64,
}

impl Default for DiffLimits {
    fn default() -> Self {
        DiffLimits {
            file_bytes: 1024 * 1024,
            total_bytes: 20 * 1024 * 1024,
        }
    }
}

/// Everything the contestant changed in `worktree` relative to
/// `base_commit`: the files in the working tree now against the base tree,
/// with untracked files that are not ignored. Renames are detected
/// (similarity ≥ 50%, untracked files included); binary files come as
/// `GIT binary patch` data, so `git apply` can apply them.
///
/// Nothing of the agent's repository is used: not its index (whose stat
/// data an agent can forge, and whose entries can point at any object),
/// not its HEAD, refs, `info/exclude` or objects. The diff is made in a
/// private repository of its own (in a temporary folder) that reads the
/// project's object stores `objects` (where the base commit is) and has
/// the worktree as its working folder. So every file is read and hashed,
/// links are diffed as links (never followed), FIFOs, sockets and devices
/// are never opened, and no file over `limits.file_bytes` is read whole
/// (see [`DiffLimits`]).
pub fn diff_files(
    worktree: &Path,
    base_commit: &str,
    objects: &[PathBuf],
    limits: DiffLimits,
) -> Result<Diff, DiffError> {
    if !worktree.is_dir() {
        return Err(DiffError::NotARepository(worktree.to_path_buf()));
    }
    let private = tempfile::Builder::new()
        .prefix("arena-diff-")
        .tempdir()
        .map_err(|source| DiffError::Io {
            what: "make a private repository to diff in".into(),
            source,
        })?;
    let repo = private_repository(private.path(), worktree, objects)?;
    diff_in(&repo, worktree, base_commit, limits)
}

/// [`diff_files`] of a contestant's worktree with the object stores its
/// repository borrows, as Arena wrote them (`objects/info/alternates`,
/// put back by [`worktree::restore`]: call it first); of a repository
/// without alternates (a project), with its own object store.
pub fn diff_worktree(
    worktree: &Path,
    base_commit: &str,
    limits: DiffLimits,
) -> Result<Diff, DiffError> {
    let own = worktree.join(".git/objects");
    if !own.is_dir() {
        return Err(DiffError::NotARepository(worktree.to_path_buf()));
    }
    let objects: Vec<PathBuf> = match std::fs::read_to_string(own.join("info/alternates")) {
        Ok(text) => text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(PathBuf::from)
            .collect(),
        Err(_) => vec![own],
    };
    diff_files(worktree, base_commit, &objects, limits)
}

/// A bare repository in `dir` that reads `objects` (as alternates) and has
/// `worktree` as its working folder: nothing in it comes from an agent.
fn private_repository(
    dir: &Path,
    worktree: &Path,
    objects: &[PathBuf],
) -> Result<Repository, DiffError> {
    let what = || format!("make a private repository in {}", dir.display());
    let mut options = git2::RepositoryInitOptions::new();
    options.bare(true).no_reinit(true).external_template(false);
    let repo = Repository::init_opts(dir, &options).map_err(DiffError::git(what()))?;
    let mut list = String::new();
    for dir in objects {
        list.push_str(&dir.to_string_lossy());
        list.push('\n');
    }
    std::fs::write(dir.join("objects/info/alternates"), list).map_err(|source| DiffError::Io {
        what: what(),
        source,
    })?;
    drop(repo);
    let repo = Repository::open_bare(dir).map_err(DiffError::git(what()))?;
    repo.set_workdir(worktree, false)
        .map_err(DiffError::git(what()))?;
    Ok(repo)
}

/// The diff of `worktree` (the working folder of `repo`) against
/// `base_commit`.
fn diff_in(
    repo: &Repository,
    worktree: &Path,
    base_commit: &str,
    limits: DiffLimits,
) -> Result<Diff, DiffError> {
    let base = repo
        .revparse_single(base_commit)
        .and_then(|object| object.peel_to_tree())
        .map_err(|_| DiffError::UnknownCommit {
            commit: base_commit.to_string(),
            path: worktree.to_path_buf(),
        })?;
    let what = || format!("diff {} against {base_commit}", worktree.display());

    let big = big_files(repo, &base, worktree, limits.file_bytes)?;
    let diff = workdir_diff(repo, &base, false, &big).map_err(DiffError::git(what()))?;
    // Built only if some text file is not UTF-8: the same diff with every
    // file as binary, whose patch text is plain ASCII.
    let mut as_binary: Option<git2::Diff<'_>> = None;

    let mut out = Diff::default();
    for index in 0..diff.deltas().len() {
        let Some(mut patch) = Patch::from_diff(&diff, index).map_err(DiffError::git(what()))?
        else {
            continue;
        };
        let delta = patch.delta();
        let Some(status) = change_status(delta.status()) else {
            if delta.status() == Delta::Unreadable {
                tracing::warn!(
                    file = %path_of(&delta.new_file()),
                    "cannot read a changed file; it is left out of the diff"
                );
            }
            continue;
        };
        let (_, insertions, deletions) = patch.line_stats().map_err(DiffError::git(what()))?;
        let buf = patch.to_buf().map_err(DiffError::git(what()))?;
        let mut binary = delta.flags().is_binary();
        let text = match std::str::from_utf8(&buf) {
            Ok(text) => text.to_string(),
            Err(_) => {
                binary = true;
                if as_binary.is_none() {
                    as_binary = Some(
                        workdir_diff(repo, &base, true, &big).map_err(DiffError::git(what()))?,
                    );
                }
                match as_binary.as_ref() {
                    Some(forced) => binary_patch(forced, &delta)
                        .map_err(DiffError::git(what()))?
                        .unwrap_or_else(|| String::from_utf8_lossy(&buf).into_owned()),
                    None => String::from_utf8_lossy(&buf).into_owned(),
                }
            }
        };
        if text.is_empty() {
            continue;
        }
        let old_path = path_of(&delta.old_file());
        let new_path = path_of(&delta.new_file());
        let path = if status == ChangeStatus::Deleted {
            old_path.clone()
        } else {
            new_path.clone()
        };
        let over_total = (out.patch.len() + text.len()) as u64 > limits.total_bytes;
        let omitted = over_total.then(|| {
            format!(
                "left out: the diff is over its {} total",
                bytes(limits.total_bytes)
            )
        });
        if over_total {
            out.patch.push_str(&omitted_section(
                status,
                &old_path,
                &new_path,
                (delta.old_file().id(), delta.new_file().id()),
            ));
        } else {
            out.patch.push_str(&text);
        }
        out.files.push(FileChange {
            path,
            old_path: (status == ChangeStatus::Renamed).then_some(old_path),
            status,
            binary: binary || over_total,
            insertions: if over_total { 0 } else { insertions },
            deletions: if over_total { 0 } else { deletions },
            omitted,
        });
    }
    for file in big {
        let zero = Oid::zero();
        let (status, old) = match file.base {
            Some(old) => (ChangeStatus::Modified, old),
            None => (ChangeStatus::Added, zero),
        };
        out.patch.push_str(&omitted_section(
            status,
            &file.path,
            &file.path,
            (old, file.oid),
        ));
        out.files.push(FileChange {
            path: file.path,
            old_path: None,
            status,
            binary: true,
            insertions: 0,
            deletions: 0,
            omitted: Some(format!(
                "left out: {}, over the {} limit for one file (blob {})",
                bytes(file.size),
                bytes(limits.file_bytes),
                file.oid
            )),
        });
    }
    out.stats = DiffStats {
        files: out.files.len(),
        insertions: out.files.iter().map(|f| f.insertions).sum(),
        deletions: out.files.iter().map(|f| f.deletions).sum(),
    };
    Ok(out)
}

/// A changed file too big to diff.
struct BigFile {
    /// Relative to the worktree, with `/` separators.
    path: String,
    size: u64,
    /// Its blob id (git's hash of its content).
    oid: Oid,
    /// Its blob in the base tree, if it has one.
    base: Option<Oid>,
}

/// The regular files of the worktree over `limit` bytes that belong in the
/// diff (changed tracked files, untracked files that are not ignored),
/// found by their metadata alone (no link followed, nothing but them read,
/// and those only to hash them), sorted by path.
///
/// The walk also refuses what git would open and block on: a `.gitignore`
/// or `.gitattributes` that is not a regular file (a FIFO, a socket, a
/// device, or a link to one of them), before anything reads one.
fn big_files(
    repo: &Repository,
    base: &git2::Tree<'_>,
    worktree: &Path,
    limit: u64,
) -> Result<Vec<BigFile>, DiffError> {
    let mut large: Vec<(String, PathBuf, u64)> = Vec::new();
    let mut folders = vec![worktree.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let name = entry.file_name();
            if kind.is_dir() {
                if name != ".git" {
                    folders.push(path);
                }
                continue;
            }
            let relative = || {
                path.strip_prefix(worktree)
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default()
            };
            if !kind.is_file() {
                // A link is fine when it leads to a file (a project may
                // link its `.gitignore`): only what it leads to is asked.
                let leads_to_file = kind.is_symlink()
                    && std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_file());
                if GIT_READS.iter().any(|n| name == *n) && !leads_to_file {
                    return Err(DiffError::OddGitFile {
                        file: relative(),
                        kind: odd_kind(&kind),
                    });
                }
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.len() > limit {
                large.push((relative(), path, meta.len()));
            }
        }
    }
    let mut found = Vec::new();
    for (relative, path, size) in large {
        let in_base = base.get_path(Path::new(&relative)).ok().map(|e| e.id());
        if in_base.is_none() && repo.is_path_ignored(&relative).unwrap_or(false) {
            continue;
        }
        let oid = Oid::hash_file(git2::ObjectType::Blob, &path)
            .map_err(DiffError::git(format!("hash {}", path.display())))?;
        if in_base == Some(oid) {
            continue;
        }
        found.push(BigFile {
            path: relative,
            size,
            oid,
            base: in_base,
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// Names in a working folder that git opens for its own rules.
const GIT_READS: &[&str] = &[".gitignore", ".gitattributes", ".gitmodules"];

/// What an entry that is neither a file nor a folder is, in words.
fn odd_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        "a symbolic link that does not lead to a file"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// A patch section that names a file's change without its content, as
/// `git diff` writes a binary file without `--binary` (`git apply`
/// refuses it: the file must be copied by hand).
fn omitted_section(status: ChangeStatus, old: &str, new: &str, (from, to): (Oid, Oid)) -> String {
    let (a, b) = (quoted(&format!("a/{old}")), quoted(&format!("b/{new}")));
    let mut section = format!("diff --git {a} {b}\n");
    let (left, right) = match status {
        ChangeStatus::Added => {
            section.push_str("new file mode 100644\n");
            ("/dev/null".to_string(), b.clone())
        }
        ChangeStatus::Deleted => {
            section.push_str("deleted file mode 100644\n");
            (a.clone(), "/dev/null".to_string())
        }
        ChangeStatus::Renamed => {
            section.push_str(&format!(
                "rename from {}\nrename to {}\n",
                quoted(old),
                quoted(new)
            ));
            (a.clone(), b.clone())
        }
        ChangeStatus::Modified => (a.clone(), b.clone()),
    };
    section.push_str(&format!("index {from}..{to}\n"));
    section.push_str(&format!("Binary files {left} and {right} differ\n"));
    section
}

/// A path as git writes it in a patch: in double quotes with C escapes when
/// it has a quote, a backslash, a control character or a non-ASCII byte.
fn quoted(path: &str) -> String {
    if !path
        .bytes()
        .any(|b| !(0x20..0x7f).contains(&b) || b == b'"' || b == b'\\')
    {
        return path.to_string();
    }
    let mut out = String::from("\"");
    for b in path.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// `1.5 MiB`, `20 MiB`, `512 bytes`.
fn bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n < 1024 {
        format!("{n} bytes")
    } else if n < MIB {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else if n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    }
}

pub(crate) fn open(path: &Path) -> Result<Repository, DiffError> {
    let repo = Repository::open(path).map_err(|error| match error.code() {
        ErrorCode::NotFound => DiffError::NotARepository(path.to_path_buf()),
        ErrorCode::Owner => DiffError::NotOwned(path.to_path_buf()),
        _ => DiffError::Git {
            what: format!("open the repository at {}", path.display()),
            source: error,
        },
    })?;
    if repo.is_bare() {
        return Err(DiffError::Bare(path.to_path_buf()));
    }
    Ok(repo)
}

/// The base tree against the working directory (no index: every file is
/// read), with untracked files' contents, binary data and renames.
fn workdir_diff<'r>(
    repo: &'r Repository,
    base: &git2::Tree<'_>,
    force_binary: bool,
    left_out: &[BigFile],
) -> Result<git2::Diff<'r>, git2::Error> {
    let mut options = DiffOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .include_ignored(false)
        .ignore_submodules(true)
        .show_binary(true)
        .force_binary(force_binary)
        .context_lines(3);
    // Exclusions first: libgit2 takes the first pattern that matches.
    if !left_out.is_empty() {
        for file in left_out {
            options.pathspec(format!("!{}", glob_escaped(&file.path)));
        }
        options.pathspec("*");
    }
    let mut diff = repo.diff_tree_to_workdir(Some(base), Some(&mut options))?;
    let mut find = DiffFindOptions::new();
    find.renames(true)
        .for_untracked(true)
        .rename_threshold(RENAME_THRESHOLD)
        .rename_limit(1000);
    diff.find_similar(Some(&mut find))?;
    Ok(diff)
}

/// `path` as a pathspec pattern that matches only itself.
fn glob_escaped(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The patch text, from the all-binary diff `forced`, of the delta that
/// matches `delta` (same paths and status).
fn binary_patch(
    forced: &git2::Diff<'_>,
    delta: &git2::DiffDelta<'_>,
) -> Result<Option<String>, git2::Error> {
    let same = |other: &git2::DiffDelta<'_>| {
        other.status() == delta.status()
            && other.old_file().path_bytes() == delta.old_file().path_bytes()
            && other.new_file().path_bytes() == delta.new_file().path_bytes()
    };
    let Some(index) = forced.deltas().position(|other| same(&other)) else {
        return Ok(None);
    };
    let Some(mut patch) = Patch::from_diff(forced, index)? else {
        return Ok(None);
    };
    let buf = patch.to_buf()?;
    Ok(std::str::from_utf8(&buf).ok().map(str::to_string))
}

fn change_status(delta: Delta) -> Option<ChangeStatus> {
    match delta {
        Delta::Added | Delta::Untracked | Delta::Copied => Some(ChangeStatus::Added),
        Delta::Deleted => Some(ChangeStatus::Deleted),
        Delta::Renamed => Some(ChangeStatus::Renamed),
        Delta::Modified | Delta::Typechange | Delta::Conflicted => Some(ChangeStatus::Modified),
        Delta::Unmodified | Delta::Ignored | Delta::Unreadable => None,
    }
}

pub(crate) fn path_of(file: &git2::DiffFile<'_>) -> String {
    file.path_bytes()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_serialize_in_snake_case() {
        let json = serde_json::to_string(&ChangeStatus::Renamed).unwrap_or_default();
        assert_eq!(json, "\"renamed\"");
        assert_eq!(change_status(Delta::Untracked), Some(ChangeStatus::Added));
        assert_eq!(
            change_status(Delta::Typechange),
            Some(ChangeStatus::Modified)
        );
        assert_eq!(change_status(Delta::Ignored), None);
    }
}
