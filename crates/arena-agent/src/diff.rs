//! A Coding contestant's result as a diff, and applying the winner's diff to
//! the project.
//!
//! [`diff_worktree`] compares the battle's base commit with everything in
//! the contestant's worktree: commits it made, staged and unstaged edits,
//! and new files that are not ignored. The patch is in `git diff` format
//! (`a/` and `b/` prefixes, renames, `GIT binary patch` for binary files),
//! so `git apply` accepts it against the base commit. [`apply`] applies
//! such a patch to the project's working tree, all or nothing.
//!
//! Everything here is synchronous (libgit2 through `git2`); callers run it
//! in `spawn_blocking`.

use std::path::{Component, Path, PathBuf};

use git2::{
    ApplyLocation, ApplyOptions, Delta, DiffFindOptions, DiffOptions, ErrorCode, Patch, Repository,
};

use crate::worktree::changed_files;

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
    #[error("git could not {what}: {}", .source.message())]
    Git {
        what: String,
        #[source]
        source: git2::Error,
    },
}

impl DiffError {
    fn git(what: impl Into<String>) -> impl FnOnce(git2::Error) -> DiffError {
        let what = what.into();
        move |source| DiffError::Git { what, source }
    }
}

pub use arena_domain::patch::{ChangeStatus, Diff, DiffStats, FileChange};

/// Everything the contestant changed in `worktree` relative to
/// `base_commit`: commits made on top of it, staged and unstaged changes,
/// and untracked files that are not ignored, i.e. the base tree against
/// the working directory (through the index). Renames are detected
/// (similarity ≥ 50%, untracked files included); binary files come as
/// `GIT binary patch` data, so `git apply` can apply them.
pub fn diff_worktree(worktree: &Path, base_commit: &str) -> Result<Diff, DiffError> {
    let repo = open(worktree)?;
    let base = repo
        .revparse_single(base_commit)
        .and_then(|object| object.peel_to_tree())
        .map_err(|_| DiffError::UnknownCommit {
            commit: base_commit.to_string(),
            path: worktree.to_path_buf(),
        })?;
    let what = || format!("diff {} against {base_commit}", worktree.display());

    let diff = workdir_diff(&repo, &base, false).map_err(DiffError::git(what()))?;
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
                    as_binary =
                        Some(workdir_diff(&repo, &base, true).map_err(DiffError::git(what()))?);
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
        out.patch.push_str(&text);
        let old_path = path_of(&delta.old_file());
        let new_path = path_of(&delta.new_file());
        out.files.push(FileChange {
            path: if status == ChangeStatus::Deleted {
                old_path.clone()
            } else {
                new_path
            },
            old_path: (status == ChangeStatus::Renamed).then_some(old_path),
            status,
            binary,
            insertions,
            deletions,
        });
    }
    out.stats = DiffStats {
        files: out.files.len(),
        insertions: out.files.iter().map(|f| f.insertions).sum(),
        deletions: out.files.iter().map(|f| f.deletions).sum(),
    };
    Ok(out)
}

/// Applies `patch` (in `git diff` format) to the working tree of the
/// project (the index is left alone, as `git apply` does). Refuses, and
/// changes nothing, when the project has uncommitted changes to tracked
/// files, when the patch would create a file that already exists, or when
/// it does not apply cleanly. Untracked files elsewhere do not matter. An
/// empty patch changes nothing.
pub fn apply(project: &Path, patch: &str) -> Result<DiffStats, DiffError> {
    if patch.trim().is_empty() {
        return Ok(DiffStats::default());
    }
    let patch = quote_spaced_headers(patch);
    let diff = git2::Diff::from_buffer(patch.as_bytes())
        .map_err(|error| DiffError::InvalidPatch(error.message().to_string()))?;
    if diff.deltas().len() == 0 {
        return Err(DiffError::InvalidPatch(
            "no `diff --git` file sections found in it".into(),
        ));
    }
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(path) = file.path() {
                if !safe_path(path) {
                    return Err(DiffError::InvalidPatch(format!(
                        "it touches `{}`, which is outside the project or inside `.git`",
                        path.display()
                    )));
                }
            }
        }
    }

    let repo = open(project)?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| DiffError::Bare(project.to_path_buf()))?
        .to_path_buf();
    let dirty = changed_files(&repo, false, usize::MAX).map_err(DiffError::git(format!(
        "read the status of {}",
        project.display()
    )))?;
    if !dirty.is_empty() {
        return Err(DiffError::Dirty {
            project: project.to_path_buf(),
            files: name_some(&dirty, 3),
        });
    }

    for delta in diff.deltas() {
        let creates = match delta.status() {
            Delta::Added | Delta::Copied => true,
            Delta::Renamed => delta.old_file().path() != delta.new_file().path(),
            _ => false,
        };
        if let (true, Some(path)) = (creates, delta.new_file().path()) {
            if workdir.join(path).symlink_metadata().is_ok() {
                return Err(DiffError::Exists {
                    project: project.to_path_buf(),
                    file: path.to_string_lossy().into_owned(),
                });
            }
        }
    }

    // A dry run first, so a refusal can name the file. (libgit2 computes
    // every result before it writes anything, so even a failure in the
    // real run below would leave the files as they were.)
    let mut check = ApplyOptions::new();
    check.check(true);
    if let Err(error) = repo.apply(&diff, ApplyLocation::WorkDir, Some(&mut check)) {
        return Err(conflict(&repo, &diff, project, error));
    }
    repo.apply(&diff, ApplyLocation::WorkDir, None)
        .map_err(|error| conflict(&repo, &diff, project, error))?;

    let stats = diff
        .stats()
        .map_err(DiffError::git("count the patch's changes"))?;
    Ok(DiffStats {
        files: stats.files_changed(),
        insertions: stats.insertions(),
        deletions: stats.deletions(),
    })
}

fn open(path: &Path) -> Result<Repository, DiffError> {
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

/// The base tree against the working directory (through the index), with
/// untracked files' contents, binary data and renames.
fn workdir_diff<'r>(
    repo: &'r Repository,
    base: &git2::Tree<'_>,
    force_binary: bool,
) -> Result<git2::Diff<'r>, git2::Error> {
    let mut options = DiffOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .include_ignored(false)
        .show_binary(true)
        .force_binary(force_binary)
        .context_lines(3);
    let mut diff = repo.diff_tree_to_workdir_with_index(Some(base), Some(&mut options))?;
    let mut find = DiffFindOptions::new();
    find.renames(true)
        .for_untracked(true)
        .rename_threshold(RENAME_THRESHOLD)
        .rename_limit(1000);
    diff.find_similar(Some(&mut find))?;
    Ok(diff)
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

fn path_of(file: &git2::DiffFile<'_>) -> String {
    file.path_bytes()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
        .unwrap_or_default()
}

/// A path a patch may touch: relative, inside the project, not in `.git`.
fn safe_path(path: &Path) -> bool {
    path.components().all(|component| match component {
        Component::Normal(name) => !name.eq_ignore_ascii_case(".git"),
        Component::CurDir => true,
        _ => false,
    })
}

/// Quotes the paths of `diff --git a/P b/P` lines when `P` has a space, as
/// `diff --git "a/P" "b/P"` (which git reads the same). libgit2 1.8 cannot
/// split the unquoted form, and then fails to apply an added file there.
fn quote_spaced_headers(patch: &str) -> std::borrow::Cow<'_, str> {
    const START: &str = "diff --git ";
    let quoted = |line: &str| -> Option<String> {
        let rest = line.strip_prefix(START)?;
        let (rest, cr) = match rest.strip_suffix('\r') {
            Some(rest) => (rest, "\r"),
            None => (rest, ""),
        };
        if rest.contains(['"', '\\']) || !rest.starts_with("a/") || rest.len() < 5 {
            return None;
        }
        let len = (rest.len() - 5) / 2;
        let path = rest.get(2..2 + len)?;
        let tail = rest.get(2 + len..)?;
        (path.contains(' ') && tail == format!(" b/{path}"))
            .then(|| format!("{START}\"a/{path}\" \"b/{path}\"{cr}"))
    };
    if !patch.lines().any(|line| quoted(line).is_some()) {
        return std::borrow::Cow::Borrowed(patch);
    }
    let mut out = String::with_capacity(patch.len() + 64);
    for line in patch.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        match quoted(body) {
            Some(fixed) => {
                out.push_str(&fixed);
                out.push_str(end);
            }
            None => out.push_str(line),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `a, b, c and 4 more`.
fn name_some(files: &[String], shown: usize) -> String {
    let mut text = files
        .iter()
        .take(shown)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > shown {
        text.push_str(&format!(" and {} more", files.len() - shown));
    }
    text
}

/// The refusal for a patch that does not apply: finds which files fail by
/// checking each file's part alone.
fn conflict(
    repo: &Repository,
    diff: &git2::Diff<'_>,
    project: &Path,
    error: git2::Error,
) -> DiffError {
    let mut failing = Vec::new();
    for (index, delta) in diff.deltas().enumerate() {
        let mut seen = 0usize;
        let mut options = ApplyOptions::new();
        options.check(true).delta_callback(move |_| {
            let this_one = seen == index;
            seen += 1;
            this_one
        });
        if let Err(error) = repo.apply(diff, ApplyLocation::WorkDir, Some(&mut options)) {
            let file = if delta.status() == Delta::Added {
                path_of(&delta.new_file())
            } else {
                path_of(&delta.old_file())
            };
            failing.push((file, error.message().to_string()));
        }
    }
    let mut failing = failing.into_iter();
    match failing.next() {
        Some((file, detail)) => {
            let others = failing.count();
            DiffError::Conflict {
                project: project.to_path_buf(),
                file,
                detail,
                others: match others {
                    0 => String::new(),
                    1 => " (and 1 other file)".into(),
                    n => format!(" (and {n} other files)"),
                },
            }
        }
        None => DiffError::Conflict {
            project: project.to_path_buf(),
            file: "the patch as a whole".into(),
            detail: error.message().to_string(),
            others: String::new(),
        },
    }
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

    #[test]
    fn unsafe_paths_are_refused() {
        assert!(safe_path(Path::new("src/main.rs")));
        assert!(safe_path(Path::new("./a")));
        assert!(!safe_path(Path::new("../outside")));
        assert!(!safe_path(Path::new("/etc/passwd")));
        assert!(!safe_path(Path::new("a/.git/config")));
        assert!(!safe_path(Path::new(".GIT/hooks/pre-commit")));
    }

    #[test]
    fn spaced_paths_get_quoted_headers() {
        let patch = "diff --git a/d s/f n.txt b/d s/f n.txt\nnew file mode 100644\n\
                     --- /dev/null\n+++ b/d s/f n.txt\n@@ -0,0 +1 @@\n+x\n\
                     diff --git a/plain b/plain\n";
        assert_eq!(
            quote_spaced_headers(patch),
            patch.replace(
                "diff --git a/d s/f n.txt b/d s/f n.txt",
                "diff --git \"a/d s/f n.txt\" \"b/d s/f n.txt\""
            )
        );
        let parsed = git2::Diff::from_buffer(quote_spaced_headers(patch).as_bytes());
        let old = parsed.ok().and_then(|d| {
            d.deltas()
                .next()
                .and_then(|x| x.old_file().path().map(Path::to_path_buf))
        });
        assert_eq!(old.as_deref(), Some(Path::new("d s/f n.txt")));
        for untouched in [
            "diff --git a/x b/x\n",
            "diff --git a/a b b/c d\n",
            "diff --git \"a/q\\\"x y\" \"b/q\\\"x y\"\n",
            "diff --git a/é b/é\n",
        ] {
            assert!(matches!(
                quote_spaced_headers(untouched),
                std::borrow::Cow::Borrowed(_)
            ));
        }
    }

    #[test]
    fn names_a_few_files() {
        let files: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).to_vec();
        assert_eq!(name_some(&files[..2], 3), "a, b");
        assert_eq!(name_some(&files, 3), "a, b, c and 2 more");
    }

    #[test]
    fn garbage_is_not_a_patch() {
        let dir = std::env::temp_dir();
        match apply(&dir, "hello, world\n") {
            Err(DiffError::InvalidPatch(_)) => {}
            other => panic!("expected InvalidPatch, got {other:?}"),
        }
        assert_eq!(apply(&dir, "  \n").ok(), Some(DiffStats::default()));
    }
}
