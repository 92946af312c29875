//! Applying a contestant's patch (in `git diff` format, as
//! [`crate::diff::diff_worktree`] writes it) to the user's project, all or
//! nothing, and no less careful than `git apply`.
//!
//! The patch comes from an agent, so [`apply`] reads it as an attacker's
//! and checks all of it before it writes anything. It refuses, changing
//! nothing, a patch that:
//!
//! - touches a path outside the project (absolute, or climbing with `..`);
//! - touches `.git` anywhere, or a name git takes for `.git` on some
//!   filesystem (`.GIT`, `.git.`, `.git `, `GIT~1`, `.g\u{200c}it`), or the
//!   submodule configuration `.gitmodules` ([`is_gitmodules`] says why, and
//!   why `.gitattributes` is allowed);
//! - goes beyond a symbolic link: a folder on the way to a path it touches
//!   is a link in the project, or a link the patch itself makes;
//! - makes a link whose target is absolute, leaves the project, enters a
//!   `.git`, climbs with `..` after a folder name or passes through another
//!   link, or a link named `.gitattributes`, `.gitignore` or `.mailmap`;
//! - changes, moves, copies or deletes an existing link, or a path that is
//!   not a regular file in the project (libgit2 would read through it);
//! - uses a mode other than 100644, 100755 and 120000 (a gitlink, 160000,
//!   is a submodule), or turns a file into a link, or back, in place;
//! - changes one path in two sections (libgit2 would stack them);
//! - touches the folder git runs hooks from when the project's effective
//!   `core.hooksPath` (local, global or system configuration, as git
//!   resolves it) names one inside the project (husky's `.husky/_`, a
//!   `.githooks`), or a path on the way to it.
//!
//! The working tree must be clean; the index and the refs are left alone.
//!
//! It names every file it writes ([`Changes::files`]), and flags those that
//! run without the user running the project ([`Autorun`]: CI workflows,
//! editor tasks and settings, `.envrc`, hook managers' configurations,
//! `.gitattributes`, …). A patch with any of them is held back, nothing
//! written, unless the user has seen them and said yes ([`Consent`]).
//!
//! Synchronous (libgit2 through `git2`); callers run it in `spawn_blocking`.

use std::collections::HashSet;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use git2::{ApplyLocation, ApplyOptions, Delta, DiffDelta, FileMode, Odb, Repository};

pub use arena_domain::autorun::Autorun;
use arena_domain::patch::ChangeStatus;

use crate::diff::{open, path_of, DiffError, DiffStats};
use crate::worktree::changed_files;

/// Whether files that run by themselves ([`Autorun`]) may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consent {
    /// Hold the whole patch back, writing nothing, when it carries any.
    Ask,
    /// The user has seen them and said yes (`--yes`, "Apply anyway").
    Given,
}

/// One file a patch writes (creates, changes, deletes or moves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedFile {
    /// Its path (the new one for a rename, the old one for a deletion),
    /// relative to the project's top folder, as the patch spells it.
    pub path: String,
    /// The path a renamed file had.
    pub old_path: Option<String>,
    pub status: ChangeStatus,
    /// Why it runs without the user running the project, if it does.
    pub autorun: Option<Autorun>,
}

/// Every file a patch writes, in the patch's order, and its line counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub files: Vec<AppliedFile>,
    pub stats: DiffStats,
}

impl Changes {
    /// The files that run without the user running the project.
    pub fn autorun(&self) -> impl Iterator<Item = &AppliedFile> {
        self.files.iter().filter(|file| file.autorun.is_some())
    }
}

/// What [`apply`] did with a patch that passed every check.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Applied {
    /// Every file listed was written.
    Written(Changes),
    /// Nothing was written: some files run by themselves and the user has
    /// not said yes ([`Consent::Ask`]). Every file is listed, as it would
    /// be written.
    Held(Changes),
}

impl Applied {
    pub fn changes(&self) -> &Changes {
        match self {
            Applied::Written(changes) | Applied::Held(changes) => changes,
        }
    }

    pub fn is_written(&self) -> bool {
        matches!(self, Applied::Written(_))
    }
}

/// The first argument of an Arena binary started to apply a change before
/// a check ([`apply_first_main`]).
pub const APPLY_FIRST: &str = "__arena_apply";

/// The command line that applies the patch in `patch_file` to the tree
/// `dir` with [`apply`]'s rules (all of it written), then becomes
/// `program` with `args`: `APPLY_FIRST DIR PATCH-FILE -- PROGRAM ARGS…`.
pub fn apply_first_args(
    dir: &Path,
    patch_file: &Path,
    program: &str,
    args: &[String],
) -> Vec<String> {
    let mut out = vec![
        APPLY_FIRST.to_string(),
        dir.to_string_lossy().into_owned(),
        patch_file.to_string_lossy().into_owned(),
        "--".into(),
        program.to_string(),
    ];
    out.extend(args.iter().cloned());
    out
}

/// What an Arena binary does first in `main` when it was started as
/// [`apply_first_args`] says (inside a check's jail, where the fresh tree
/// is an overlay of the base only that jail sees): applies the change and
/// becomes the check; `Some(code)` when the change does not apply (the
/// reason on stderr, as the check's output) or the check cannot start.
/// Otherwise `None`: carry on.
pub fn apply_first_main() -> Option<i32> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_none_or(|a| a != APPLY_FIRST) {
        return None;
    }
    let fail = |what: String| {
        eprintln!("{what}");
        Some(APPLY_FAILED)
    };
    let (Some(dir), Some(patch_file), Some(dash)) = (args.get(1), args.get(2), args.get(3)) else {
        return fail("arena: usage: __arena_apply DIR PATCH-FILE -- PROGRAM ARGS…".into());
    };
    if dash != "--" || args.len() < 5 {
        return fail("arena: usage: __arena_apply DIR PATCH-FILE -- PROGRAM ARGS…".into());
    }
    let patch = match fs::read_to_string(patch_file) {
        Ok(text) => text,
        Err(e) => return fail(format!("arena: reading the change: {e}")),
    };
    if let Err(e) = apply_to_clean(Path::new(dir), &patch) {
        return fail(format!(
            "the change could not be applied to a fresh tree of the base: {e}"
        ));
    }
    use std::os::unix::process::CommandExt;
    let error = Command::new(&args[4]).args(&args[5..]).exec();
    fail(format!(
        "arena: cannot start {}: {error}",
        args[4].to_string_lossy()
    ))
}

/// The exit status of [`apply_first_main`] when the change does not apply.
pub const APPLY_FAILED: i32 = 125;

/// Applies `patch` (in `git diff` format) to the working tree of the
/// project (the index is left alone, as `git apply` does). Refuses, and
/// changes nothing, when the patch is unsafe (see the module's notes), when
/// the project has uncommitted changes to tracked files, when the patch
/// would create a file that already exists, or when it does not apply
/// cleanly. Untracked files elsewhere do not matter. An empty patch changes
/// nothing. A patch that passes all of that but carries files that run by
/// themselves is [`Applied::Held`] unless `consent` is given.
pub fn apply(project: &Path, patch: &str, consent: Consent) -> Result<Applied, DiffError> {
    apply_with(project, patch, consent, false)
}

/// [`apply`] to a tree Arena has just made from a commit and nothing else
/// has touched (a check's tree over the base), so its status is not read
/// (a walk of every file); every other rule holds.
pub fn apply_to_clean(project: &Path, patch: &str) -> Result<Applied, DiffError> {
    apply_with(project, patch, Consent::Given, true)
}

/// [`apply`] to a working tree Arena has just found to be exactly the
/// tree the patch was made against (a battle's snapshot of the working
/// tree, uncommitted changes and all), so its status is not read; every
/// other rule holds.
pub fn apply_over_snapshot(
    project: &Path,
    patch: &str,
    consent: Consent,
) -> Result<Applied, DiffError> {
    apply_with(project, patch, consent, true)
}

fn apply_with(
    project: &Path,
    patch: &str,
    consent: Consent,
    known_clean: bool,
) -> Result<Applied, DiffError> {
    if patch.trim().is_empty() {
        return Ok(Applied::Written(Changes::default()));
    }
    // Before anything asks `DiffFile::mode`, which panics on a mode it
    // does not know.
    known_modes(patch)?;
    let quoted = quote_spaced_headers(patch);
    let patch = header_only_files(&quoted);
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
                check_path(path)?;
            }
        }
    }
    let changes: Vec<Change> = diff.deltas().map(|delta| Change::of(&delta)).collect();
    for change in &changes {
        check_modes(change)?;
    }
    check_each_once(&changes)?;
    check_beyond_new_links(&changes)?;

    let repo = open(project)?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| DiffError::Bare(project.to_path_buf()))?
        .to_path_buf();
    let hooks = hooks_folders(&repo, &workdir);
    for change in &changes {
        for path in change.touched() {
            check_hooks(path, &hooks)?;
        }
    }
    for change in &changes {
        check_on_disk(change, &workdir, project)?;
    }
    let links = new_links(&patch).map_err(|error| conflict(&repo, &diff, project, error))?;
    let mut seen: Vec<&Path> = links.iter().map(|(link, _)| link.as_path()).collect();
    let mut made: Vec<&Path> = changes
        .iter()
        .filter(|change| change.makes_link())
        .filter_map(|change| change.new.as_deref())
        .collect();
    seen.sort();
    made.sort();
    if seen != made {
        return Err(DiffError::InvalidPatch(
            "its file sections read differently one by one than together".into(),
        ));
    }
    for (link, target) in &links {
        check_link(link, target, &changes, &workdir)?;
    }

    let dirty = if known_clean {
        Vec::new()
    } else {
        changed_files(&repo, false, usize::MAX).map_err(DiffError::git(format!(
            "read the status of {}",
            project.display()
        )))?
    };
    if !dirty.is_empty() {
        return Err(DiffError::Dirty {
            project: project.to_path_buf(),
            files: name_some(&dirty, 3),
        });
    }

    // A path the patch deletes may be made again (`git diff` writes a file
    // turned into a link so); [`check_each_once`] puts the deletion first.
    let freed: HashSet<Vec<u8>> = changes
        .iter()
        .filter(|change| match change.status {
            Delta::Deleted => true,
            Delta::Renamed => change.old != change.new,
            _ => false,
        })
        .filter_map(|change| change.old.as_deref().map(folded))
        .collect();
    for change in &changes {
        let creates = match change.status {
            Delta::Added | Delta::Copied => true,
            Delta::Renamed => change.old != change.new,
            _ => false,
        };
        if let (true, Some(path)) = (creates, &change.new) {
            if !freed.contains(&folded(path)) && workdir.join(path).symlink_metadata().is_ok() {
                return Err(DiffError::Exists {
                    project: project.to_path_buf(),
                    file: path.to_string_lossy().into_owned(),
                });
            }
        }
    }

    // A dry run first, so a refusal can name the file. (libgit2 computes
    // every result before it writes anything, so even a failure in the
    // real run below would leave the files as they were.) libgit2 stores
    // the patched files' blobs even in a dry run: this one's go to memory,
    // so a patch refused or held back leaves the project's `.git` as it was.
    let probe = open(project)?;
    probe
        .odb()
        .and_then(|odb| odb.add_new_mempack_backend(1000).map(drop))
        .map_err(DiffError::git("prepare a dry run in memory"))?;
    let mut check = ApplyOptions::new();
    check.check(true);
    if let Err(error) = probe.apply(&diff, ApplyLocation::WorkDir, Some(&mut check)) {
        return Err(conflict(&probe, &diff, project, error));
    }

    let stats = diff
        .stats()
        .map_err(DiffError::git("count the patch's changes"))?;
    let listed = Changes {
        files: listed(&diff, &workdir)?,
        stats: DiffStats {
            files: stats.files_changed(),
            insertions: stats.insertions(),
            deletions: stats.deletions(),
        },
    };
    if consent == Consent::Ask && listed.autorun().next().is_some() {
        return Ok(Applied::Held(listed));
    }
    repo.apply(&diff, ApplyLocation::WorkDir, None)
        .map_err(|error| conflict(&repo, &diff, project, error))?;
    Ok(Applied::Written(listed))
}

/// Every file the patch writes, with what runs by itself flagged. Only
/// after [`check_on_disk`] has passed every path: a `package.json` the
/// patch changes is read from the project as a regular file.
fn listed(diff: &git2::Diff<'_>, workdir: &Path) -> Result<Vec<AppliedFile>, DiffError> {
    let mut files = Vec::new();
    for (index, delta) in diff.deltas().enumerate() {
        let (old, new) = (path_of(&delta.old_file()), path_of(&delta.new_file()));
        let status = match delta.status() {
            Delta::Added | Delta::Copied => ChangeStatus::Added,
            Delta::Deleted => ChangeStatus::Deleted,
            Delta::Renamed => ChangeStatus::Renamed,
            _ => ChangeStatus::Modified,
        };
        let touched: Vec<&str> = match status {
            ChangeStatus::Added => vec![&new],
            ChangeStatus::Deleted => vec![&old],
            ChangeStatus::Renamed => vec![&new, &old],
            ChangeStatus::Modified => vec![&new],
        };
        let mut autorun = touched.iter().find_map(|path| autorun_of(path));
        if autorun.is_none() && touched.iter().any(|path| is_package_json(path)) {
            let names_hooks = package_json_names_hooks(diff, index, &delta, workdir)?;
            autorun = names_hooks.then_some(Autorun::HookManager);
        }
        files.push(AppliedFile {
            path: if status == ChangeStatus::Deleted {
                old.clone()
            } else {
                new.clone()
            },
            old_path: (status == ChangeStatus::Renamed).then_some(old),
            status,
            autorun,
        });
    }
    Ok(files)
}

/// [`arena_domain::autorun::classify`] of `path` as a filesystem git
/// guards may read each of its names ([`as_git_sees`]).
fn autorun_of(path: &str) -> Option<Autorun> {
    arena_domain::autorun::classify(&seen_path(path))
}

fn is_package_json(path: &str) -> bool {
    seen_path(path).rsplit('/').next() == Some("package.json")
}

/// `path` with each name as git sees it, joined with `/`.
fn seen_path(path: &str) -> String {
    path.split(['/', '\\'])
        .map(|name| as_git_sees(name.as_bytes()))
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether the patch's section `index` (a `package.json`) can change what
/// a hook manager runs: the file in the project configures one, or a line
/// the section adds names one; a binary section, whose lines cannot be
/// read, is taken as one that can.
fn package_json_names_hooks(
    diff: &git2::Diff<'_>,
    index: usize,
    delta: &DiffDelta<'_>,
    workdir: &Path,
) -> Result<bool, DiffError> {
    let section = git2::Patch::from_diff(diff, index)
        .map_err(DiffError::git("read the patch's `package.json` section"))?;
    let Some(section) = section.filter(|_| !delta.flags().is_binary()) else {
        return Ok(true);
    };
    let mut added = Vec::new();
    for hunk in 0..section.num_hunks() {
        let lines = section
            .num_lines_in_hunk(hunk)
            .map_err(DiffError::git("read the patch's `package.json` section"))?;
        for line in 0..lines {
            let line = section
                .line_in_hunk(hunk, line)
                .map_err(DiffError::git("read the patch's `package.json` section"))?;
            if line.origin() == '+' {
                added.push(String::from_utf8_lossy(line.content()).into_owned());
            }
        }
    }
    let old = match delta.status() {
        Delta::Added => String::new(),
        _ => match fs::read(workdir.join(path_of(&delta.old_file()))) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            // Unread, it could configure anything.
            Err(_) => return Ok(true),
        },
    };
    Ok(arena_domain::autorun::package_json_names_hooks(
        &old,
        added.iter().map(String::as_str),
    ))
}

/// The folders git runs hooks from, when `core.hooksPath` names one inside
/// the project: relative to its top folder, each name as git sees it
/// ([`as_git_sees`]); an empty path when the project itself is inside it.
/// Asked of `git` itself (which reads every configuration file it would
/// read to run a hook: the project's, the user's, `GIT_CONFIG_GLOBAL`, the
/// system's, includes) and of libgit2 (a tool without `git` reads that),
/// both; the default `.git/hooks` is refused as `.git` already.
fn hooks_folders(repo: &Repository, workdir: &Path) -> Vec<Vec<String>> {
    let mut values: Vec<PathBuf> = Vec::new();
    if let Some(value) = hooks_path_from_git(workdir) {
        values.push(value);
    }
    match repo.config().and_then(|mut config| config.snapshot()) {
        Ok(config) => match config.get_path("core.hooksPath") {
            Ok(value) => values.push(value),
            Err(error) if error.code() == git2::ErrorCode::NotFound => {}
            Err(error) => {
                tracing::warn!(%error, "cannot read core.hooksPath with libgit2");
            }
        },
        Err(error) => tracing::warn!(%error, "cannot read the project's git configuration"),
    }
    let Ok(top) = workdir.canonicalize() else {
        return Vec::new();
    };
    let mut folders = Vec::new();
    for value in values {
        if value.as_os_str().is_empty() {
            continue;
        }
        // Relative to the top folder, where git runs hooks from.
        let resolved = resolve(&top.join(&value));
        let inside = if let Ok(rest) = resolved.strip_prefix(&top) {
            rest.components()
                .map(|name| as_git_sees(name.as_os_str().as_encoded_bytes()))
                .collect()
        } else if top.starts_with(&resolved) {
            Vec::new()
        } else {
            continue;
        };
        tracing::debug!(hooks = %resolved.display(), "core.hooksPath is inside the project");
        folders.push(inside);
    }
    folders
}

/// `git config --type=path --get core.hooksPath` in the project (`~`
/// expanded), with `git` found on the `PATH`'s absolute folders only (never
/// in the project). `None` when unset, or when `git` cannot tell.
fn hooks_path_from_git(workdir: &Path) -> Option<PathBuf> {
    let git = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .filter(|folder| folder.is_absolute())
            .map(|folder| folder.join("git"))
            .find(|candidate| candidate.is_file())
    })?;
    let output = Command::new(git)
        .args(["config", "--type=path", "--get", "core.hooksPath"])
        .current_dir(workdir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output();
    match output {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            let value = text.trim_end_matches(['\n', '\r']);
            (!value.is_empty()).then(|| PathBuf::from(value))
        }
        // Exit 1: not set.
        Ok(output) if output.status.code() == Some(1) => None,
        Ok(output) => {
            tracing::warn!(
                status = %output.status,
                stderr = %String::from_utf8_lossy(&output.stderr).trim(),
                "git could not read core.hooksPath"
            );
            None
        }
        Err(error) => {
            tracing::warn!(%error, "cannot run git to read core.hooksPath");
            None
        }
    }
}

/// `path` with the links of its longest existing part followed (as the
/// system follows them when git runs a hook) and the rest read lexically.
fn resolve(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for name in rest.iter().rev() {
                match Path::new(name).components().next() {
                    Some(Component::ParentDir) => {
                        out.pop();
                    }
                    Some(Component::CurDir) | None => {}
                    Some(_) => out.push(name),
                }
            }
            return out;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            // `..` or `.` at the end: read from its parent's real path.
            (None, Some(parent)) if existing.ends_with("..") => {
                rest.push("..".into());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// A path a patch may touch: not in a hooks folder ([`hooks_folders`]),
/// nor on the way to one (a link there would move it).
fn check_hooks(path: &Path, hooks: &[Vec<String>]) -> Result<(), DiffError> {
    let names: Vec<String> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.as_encoded_bytes()),
            _ => None,
        })
        .flat_map(|name| name.split(|byte| *byte == b'\\'))
        .map(as_git_sees)
        .collect();
    for folder in hooks {
        let shared = names.iter().zip(folder).take_while(|(a, b)| a == b).count();
        let what = if shared == folder.len() {
            "which is in the folder git runs hooks from (the project's `core.hooksPath`): \
             git would run it, unconfined, on the next commit, checkout, merge or push"
        } else if shared == names.len() {
            "which is on the way to the folder git runs hooks from (the project's \
             `core.hooksPath`): a link or file there would change which hooks git runs"
        } else {
            continue;
        };
        return Err(DiffError::GitData {
            file: path.to_string_lossy().into_owned(),
            what,
        });
    }
    Ok(())
}

/// One file section of the patch, as the checks see it.
struct Change {
    status: Delta,
    /// The path read (and replaced or removed): none for a new file.
    old: Option<PathBuf>,
    /// The path written: none for a deletion.
    new: Option<PathBuf>,
    old_mode: FileMode,
    new_mode: FileMode,
}

impl Change {
    /// Only after [`known_modes`] has passed the patch.
    fn of(delta: &DiffDelta<'_>) -> Change {
        let status = delta.status();
        let path = |file: git2::DiffFile<'_>| file.path().map(Path::to_path_buf);
        Change {
            status,
            old: (status != Delta::Added)
                .then(|| path(delta.old_file()))
                .flatten(),
            new: (status != Delta::Deleted)
                .then(|| path(delta.new_file()))
                .flatten(),
            old_mode: delta.old_file().mode(),
            new_mode: delta.new_file().mode(),
        }
    }

    fn touched(&self) -> impl Iterator<Item = &PathBuf> {
        self.old.iter().chain(self.new.iter())
    }

    /// Whether this section makes a symbolic link.
    fn makes_link(&self) -> bool {
        self.new.is_some() && self.new_mode == FileMode::Link
    }
}

/// A path a patch may touch: relative, inside the project, in no `.git`
/// (as any filesystem reads the name) and not `.gitmodules`.
fn check_path(path: &Path) -> Result<(), DiffError> {
    let file = || path.to_string_lossy().into_owned();
    let outside = || DiffError::OutsidePath { file: file() };
    for (index, component) in path.components().enumerate() {
        let name = match component {
            Component::Normal(name) => name.as_encoded_bytes(),
            Component::CurDir => continue,
            _ => return Err(outside()),
        };
        // `C:` is a drive on Windows.
        if index == 0 && name.len() >= 2 && name[0].is_ascii_alphabetic() && name[1] == b':' {
            return Err(outside());
        }
        // And `\` a folder separator.
        for piece in name.split(|byte| *byte == b'\\') {
            if piece == b".." {
                return Err(outside());
            }
            let seen = as_git_sees(piece);
            if is_dotgit(&seen) {
                let what = if piece.eq_ignore_ascii_case(b".git") {
                    "which is inside `.git`, where git keeps its hooks, config and history"
                } else {
                    "which git takes for `.git` on Windows or macOS (trailing dots or spaces, \
                     a short name like `GIT~1`, or invisible characters)"
                };
                return Err(DiffError::GitData { file: file(), what });
            }
            if is_gitmodules(&seen) {
                return Err(DiffError::GitData {
                    file: file(),
                    what: "the project's submodule configuration, which tells git what to fetch \
                           and from where",
                });
            }
        }
    }
    Ok(())
}

/// `name` as git compares it with its own names on every filesystem it
/// guards: ASCII lowercase, without the characters HFS+ ignores, cut at an
/// NTFS stream (`:`), without the trailing dots and spaces NTFS drops.
fn as_git_sees(name: &[u8]) -> String {
    let mut seen: String = String::from_utf8_lossy(name)
        .chars()
        .filter(|c| !is_hfs_ignorable(*c))
        .collect();
    seen.make_ascii_lowercase();
    if let Some(stream) = seen.find(':') {
        seen.truncate(stream);
    }
    let kept = seen.trim_end_matches(['.', ' ']).len();
    seen.truncate(kept);
    seen
}

/// The code points HFS+ leaves out of names (git's `next_hfs_char`).
fn is_hfs_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

/// `.git`, or its NTFS short name.
fn is_dotgit(seen: &str) -> bool {
    seen == ".git" || is_short_name(seen, "git~")
}

/// `.gitmodules`, or one of its NTFS short names.
///
/// Refused: it is configuration that tells git which repositories to fetch
/// into the project and from where, so a patch could point a submodule at
/// an attacker's server or, with a crafted name or path, at folders inside
/// `.git` (git's own history of submodule vulnerabilities); and a contestant
/// has no business changing it.
///
/// Allowed on purpose, though flagged for the user's yes ([`Autorun`]):
/// `.gitattributes` (`.gitignore` is not even flagged). Attributes only
/// name drivers (`filter=`, `diff=`, `merge=`); the commands behind a driver
/// come from git's configuration (`.git/config`, the user's and the
/// system's), which no patch can reach, and libgit2, which applies the
/// patch, runs no external filter at all. The built-in attributes (`text`,
/// `eol`, `ident`, `working-tree-encoding`, `export-ignore`) only convert
/// or present content the user reviews. A driver the user has configured
/// (git-lfs, say) may run on more files: the user's own program, as they
/// set it up. Links with these names are refused ([`check_link`]), as git
/// refuses to follow them.
fn is_gitmodules(seen: &str) -> bool {
    seen == ".gitmodules" || is_short_name(seen, "gitmod~") || is_short_name(seen, "gi7eba~")
}

/// `stem` followed by digits only (`git~1`).
fn is_short_name(seen: &str, stem: &str) -> bool {
    seen.strip_prefix(stem)
        .is_some_and(|tail| !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()))
}

/// Every mode the patch's headers give is one `git2` knows (others make
/// `DiffFile::mode` panic); libgit2 reads modes from these headers only.
fn known_modes(patch: &str) -> Result<(), DiffError> {
    const KNOWN: [u64; 7] = [0, 0o40000, 0o100644, 0o100664, 0o100755, 0o120000, 0o160000];
    let mut section = "";
    for line in patch.lines() {
        if let Some(header) = line.strip_prefix("diff --git ") {
            section = header.rsplit_once(" b/").map_or(header, |(_, file)| file);
            continue;
        }
        let mode = [
            "old mode ",
            "new mode ",
            "new file mode ",
            "deleted file mode ",
        ]
        .iter()
        .find_map(|start| line.strip_prefix(start))
        .or_else(|| {
            let oids_and_mode = line.strip_prefix("index ")?;
            oids_and_mode.split_whitespace().nth(1)
        });
        let Some(mode) = mode else { continue };
        let digits: String = mode
            .chars()
            .take_while(|c| ('0'..='7').contains(c))
            .collect();
        if digits.is_empty() {
            continue; // libgit2 refuses the patch itself
        }
        if !u64::from_str_radix(&digits, 8).is_ok_and(|value| KNOWN.contains(&value)) {
            return Err(DiffError::Mode {
                file: section.trim_matches('"').to_string(),
                mode: digits,
                what: "a mode git never writes",
                hint: "Review where this patch came from".into(),
            });
        }
    }
    Ok(())
}

/// Regular files, executables and links only, and no change of one into
/// another in place; existing links are never changed (libgit2 reads the
/// old contents through the link).
fn check_modes(change: &Change) -> Result<(), DiffError> {
    let sides = [
        (&change.old, change.old_mode),
        (&change.new, change.new_mode),
    ];
    for (path, mode) in sides {
        let Some(path) = path else { continue };
        let file = path.to_string_lossy().into_owned();
        let (mode, what) = match mode {
            FileMode::Blob | FileMode::BlobExecutable | FileMode::Link => continue,
            // Not given: libgit2 writes a regular file.
            FileMode::Unreadable => continue,
            FileMode::Commit => ("160000", "a submodule, as git records a nested repository"),
            FileMode::Tree => ("040000", "a folder, which a patch cannot hold"),
            FileMode::BlobGroupWritable => ("100664", "group-writable, which git no longer writes"),
        };
        let hint = if mode == "160000" {
            format!(
                "If the project needs that repository, add it yourself with `git submodule add \
                 <url> {file}`"
            )
        } else {
            "Review the patch and make that change by hand".into()
        };
        return Err(DiffError::Mode {
            file,
            mode: mode.into(),
            what,
            hint,
        });
    }
    if let (Some(path), Some(_)) = (&change.old, &change.new) {
        if change.old_mode == FileMode::Link {
            return Err(DiffError::ChangesLink {
                file: path.to_string_lossy().into_owned(),
            });
        }
        if change.new_mode == FileMode::Link {
            return Err(DiffError::Mode {
                file: path.to_string_lossy().into_owned(),
                mode: format!("120000 in place of {}", octal(change.old_mode)),
                what: "a file turned into a symbolic link in place",
                hint: "`git diff` writes that as a deletion and a new link; review the patch \
                       and make the change by hand"
                    .into(),
            });
        }
    } else if let (Some(path), FileMode::Link) = (&change.old, change.old_mode) {
        return Err(DiffError::ChangesLink {
            file: path.to_string_lossy().into_owned(),
        });
    }
    Ok(())
}

fn octal(mode: FileMode) -> String {
    format!("{:o}", i32::from(mode))
}

/// Each path is read by one section at most and written by one at most,
/// and never read after a section wrote it: libgit2 applies a later section
/// on top of an earlier one's result, so the sections could not be checked
/// one by one. (`git diff` writes a file turned into a link as a deletion,
/// then a creation, of the same path: that is fine.)
fn check_each_once(changes: &[Change]) -> Result<(), DiffError> {
    let mut read = HashSet::new();
    let mut written = HashSet::new();
    for change in changes {
        if let Some(old) = &change.old {
            let key = folded(old);
            if written.contains(&key) || !read.insert(key) {
                return Err(DiffError::Repeated {
                    file: old.to_string_lossy().into_owned(),
                });
            }
        }
        if let Some(new) = &change.new {
            if !written.insert(folded(new)) {
                return Err(DiffError::Repeated {
                    file: new.to_string_lossy().into_owned(),
                });
            }
        }
    }
    Ok(())
}

/// No path the patch touches lies beyond a link the same patch makes
/// (`git diff` never writes that; a hand-made patch can).
fn check_beyond_new_links(changes: &[Change]) -> Result<(), DiffError> {
    let made: HashSet<Vec<u8>> = changes
        .iter()
        .filter(|change| change.makes_link())
        .filter_map(|change| change.new.as_deref().map(folded))
        .collect();
    if made.is_empty() {
        return Ok(());
    }
    for change in changes {
        for path in change.touched() {
            for folder in path.ancestors().skip(1) {
                if !folder.as_os_str().is_empty() && made.contains(&folded(folder)) {
                    return Err(DiffError::BeyondLink {
                        file: path.to_string_lossy().into_owned(),
                        link: folder.to_string_lossy().into_owned(),
                        origin: "a symbolic link this same patch makes",
                    });
                }
            }
        }
    }
    Ok(())
}

/// A path's bytes, ASCII lowercase: a case-insensitive filesystem takes
/// `Tools` for `tools`.
fn folded(path: &Path) -> Vec<u8> {
    path.as_os_str().as_encoded_bytes().to_ascii_lowercase()
}

/// What the project holds on the way to each path the change touches, read
/// without following links: no folder on the way is a link ("beyond a
/// symbolic link", as `git apply` refuses), and the path it reads is a
/// regular file.
fn check_on_disk(change: &Change, workdir: &Path, project: &Path) -> Result<(), DiffError> {
    for path in change.touched() {
        let names: Vec<_> = path.components().collect();
        let mut at = workdir.to_path_buf();
        let mut shown = PathBuf::new();
        for name in names.iter().take(names.len().saturating_sub(1)) {
            at.push(name);
            shown.push(name);
            match fs::symlink_metadata(&at) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(DiffError::BeyondLink {
                        file: path.to_string_lossy().into_owned(),
                        link: shown.to_string_lossy().into_owned(),
                        origin: "a symbolic link in the project",
                    });
                }
                Ok(meta) if meta.is_dir() => {}
                // Missing (made as a folder), or not a folder (libgit2
                // refuses): nothing further to follow either way.
                _ => break,
            }
        }
    }
    if let Some(old) = &change.old {
        if let Ok(meta) = fs::symlink_metadata(workdir.join(old)) {
            let kind = if meta.file_type().is_symlink() {
                "a symbolic link"
            } else if meta.is_dir() {
                "a folder"
            } else if !meta.is_file() {
                "a special file (a FIFO, socket or device)"
            } else {
                return Ok(());
            };
            return Err(DiffError::NotAFile {
                project: project.to_path_buf(),
                file: old.to_string_lossy().into_owned(),
                kind,
            });
        }
    }
    Ok(())
}

/// Each symbolic link the patch makes, with its target as libgit2 will
/// write it: computed by libgit2's own applier in a repository that lives
/// in memory, so a target in hunks or in binary data reads exactly as it
/// will land, and nothing of the project is read or written. Each link's
/// section is applied alone (libgit2's `apply_to_tree` fails on the other
/// sections' deletions); [`check_each_once`] makes that the same result.
fn new_links(patch: &str) -> Result<Vec<(PathBuf, Vec<u8>)>, git2::Error> {
    let mut links = Vec::new();
    let mut memory = None;
    for section in sections(patch) {
        let one = git2::Diff::from_buffer(section.as_bytes())?;
        let Some(delta) = one.deltas().next() else {
            continue;
        };
        if delta.status() == Delta::Deleted || delta.new_file().mode() != FileMode::Link {
            continue;
        }
        let Some(path) = delta.new_file().path().map(Path::to_path_buf) else {
            continue;
        };
        let repo = match &memory {
            Some(repo) => repo,
            None => {
                let odb = Odb::new()?;
                odb.add_new_mempack_backend(1)?;
                memory.insert(Repository::from_odb(odb)?)
            }
        };
        let empty = repo.find_tree(repo.treebuilder(None)?.write()?)?;
        let image = repo.apply_to_tree(&empty, &one, None)?;
        let target = match image.get_path(&path, 0) {
            Some(entry) => repo.find_blob(entry.id)?.content().to_vec(),
            None => Vec::new(),
        };
        links.push((path, target));
    }
    Ok(links)
}

/// The patch's file sections, each from its `diff --git` line on. (Text
/// before the first belongs to none; libgit2 skips it too.)
fn sections(patch: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = patch
        .match_indices("diff --git ")
        .map(|(at, _)| at)
        .filter(|at| *at == 0 || patch.as_bytes()[at - 1] == b'\n')
        .collect();
    starts.push(patch.len());
    starts
        .windows(2)
        .filter_map(|pair| patch.get(pair[0]..pair[1]))
        .collect()
}

/// A link the patch makes stays inside the project and out of `.git`,
/// wherever it is followed from: its target is relative, climbs (`..`)
/// only at its start, names no `.git`, and passes through no other link
/// (in the project or made by the patch), so reading it lexically is
/// reading it truly.
fn check_link(
    link: &Path,
    target: &[u8],
    changes: &[Change],
    workdir: &Path,
) -> Result<(), DiffError> {
    let refuse = |why: String| DiffError::UnsafeLink {
        link: link.to_string_lossy().into_owned(),
        target: String::from_utf8_lossy(target).escape_debug().to_string(),
        why,
    };
    let name = link
        .file_name()
        .map(|name| as_git_sees(name.as_encoded_bytes()))
        .unwrap_or_default();
    if [".gitattributes", ".gitignore", ".mailmap"].contains(&name.as_str()) {
        return Err(refuse(format!(
            "git refuses `{name}` as a link (it must be a regular file)"
        )));
    }
    let through = link_walk(link, target).map_err(refuse)?;
    let made: HashSet<Vec<u8>> = changes
        .iter()
        .filter(|change| change.makes_link())
        .filter_map(|change| change.new.as_deref().map(folded))
        .collect();
    for hop in through {
        let is_link = made.contains(&folded(&hop))
            || fs::symlink_metadata(workdir.join(&hop))
                .is_ok_and(|meta| meta.file_type().is_symlink());
        if is_link {
            return Err(refuse(format!(
                "the target goes through `{}`, another symbolic link, so where it leads is up \
                 to that link",
                hop.display()
            )));
        }
    }
    Ok(())
}

/// Reads `target` lexically from the folder of `link` (both in the
/// project): the folders it passes through on the way (which must not be
/// links), or why it is unsafe.
fn link_walk(link: &Path, target: &[u8]) -> Result<Vec<PathBuf>, String> {
    if target.is_empty() || target.contains(&0) {
        return Err("the target is empty or holds a NUL byte".into());
    }
    let drive = target.len() >= 2 && target[0].is_ascii_alphabetic() && target[1] == b':';
    if target[0] == b'/' || target[0] == b'\\' || drive {
        return Err("an absolute target can point anywhere on this computer".into());
    }
    let mut at: Vec<PathBuf> = link
        .parent()
        .map(|folder| folder.iter().map(PathBuf::from).collect())
        .unwrap_or_default();
    let pieces: Vec<&[u8]> = target
        .split(|byte| *byte == b'/' || *byte == b'\\')
        .filter(|piece| !piece.is_empty() && *piece != b".")
        .collect();
    let mut named = false;
    let mut through = Vec::new();
    for (index, piece) in pieces.iter().enumerate() {
        if *piece == b".." {
            if named {
                return Err(
                    "the target climbs with `..` after a folder name, so where it leads is up \
                     to what that folder is"
                        .into(),
                );
            }
            if at.pop().is_none() {
                return Err("the target leads outside the project".into());
            }
            continue;
        }
        if is_dotgit(&as_git_sees(piece)) {
            return Err(
                "the target leads into `.git`, where git keeps its hooks and config".into(),
            );
        }
        named = true;
        at.push(path_from_bytes(piece));
        if index + 1 < pieces.len() {
            through.push(at.iter().collect());
        }
    }
    Ok(through)
}

/// A name as the filesystem holds it (bytes on Unix, as git2 reads paths).
#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
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

/// Gives an empty file that a section adds or deletes its `---`/`+++`
/// lines. git writes such a section as its header alone (`new file mode`,
/// `index 0000000..e69de29`, nothing after), and libgit2 1.8 cannot read
/// it ("invalid patch header"): an agent that adds an empty `__init__.py`
/// would leave a change nothing could apply. With the two lines it reads
/// the section as git does.
fn header_only_files(patch: &str) -> std::borrow::Cow<'_, str> {
    const START: &str = "diff --git ";
    let starts: Vec<usize> = patch
        .match_indices(START)
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || patch.as_bytes()[i - 1] == b'\n')
        .collect();
    let mut out = String::new();
    let mut copied = 0;
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(patch.len());
        let section = &patch[start..end];
        let lines: Vec<&str> = section.lines().collect();
        let has = |prefix: &str| lines.iter().skip(1).any(|l| l.starts_with(prefix));
        let body = ["--- ", "+++ ", "@@", "Binary files ", "GIT binary patch"];
        if body.iter().any(|b| has(b)) {
            continue;
        }
        let Some((old, new)) = header_paths(lines[0]) else {
            continue;
        };
        let fill = if has("new file mode") {
            format!("--- /dev/null\n+++ {new}\n")
        } else if has("deleted file mode") {
            format!("--- {old}\n+++ /dev/null\n")
        } else {
            continue;
        };
        out.push_str(&patch[copied..end]);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&fill);
        copied = end;
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(patch);
    }
    out.push_str(&patch[copied..]);
    std::borrow::Cow::Owned(out)
}

/// The two paths of a `diff --git` line of a file added or deleted (the
/// same path twice): `a/P` and `b/P`, or both quoted as git quotes them.
fn header_paths(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("diff --git ")?.trim_end_matches('\r');
    if let Some(quoted) = rest.strip_prefix('"') {
        let (a, b) = quoted.split_once("\" \"")?;
        let b = b.strip_suffix('"')?;
        let (pa, pb) = (a.strip_prefix("a/")?, b.strip_prefix("b/")?);
        return (pa == pb).then(|| (format!("\"a/{pa}\""), format!("\"b/{pb}\"")));
    }
    if rest.len() < 5 || !rest.starts_with("a/") {
        return None;
    }
    let len = (rest.len() - 5) / 2;
    let path = rest.get(2..2 + len)?;
    (rest.get(2 + len..)? == format!(" b/{path}"))
        .then(|| (format!("a/{path}"), format!("b/{path}")))
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
    fn unsafe_paths_are_refused() {
        for fine in [
            "src/main.rs",
            "./a",
            ".github/ci.yml",
            ".gitattributes",
            "a/.gitx",
            "git~x",
        ] {
            assert!(check_path(Path::new(fine)).is_ok(), "{fine}");
        }
        for outside in [
            "../outside",
            "/etc/passwd",
            "a/../../b",
            "C:/x",
            "a\\..\\..\\b",
        ] {
            assert!(
                matches!(
                    check_path(Path::new(outside)),
                    Err(DiffError::OutsidePath { .. })
                ),
                "{outside}"
            );
        }
        for git in [
            "a/.git/config",
            ".GIT/hooks/pre-commit",
            ".git./config",
            ".git . /config",
            "GIT~1/config",
            "git~2",
            ".git::$INDEX_ALLOCATION/x",
            ".g\u{200c}it/config",
            "\u{feff}.git",
            "sub\\.git\\config",
            ".gitmodules",
            "sub/.GitModules.",
            "GITMOD~1",
        ] {
            assert!(
                matches!(check_path(Path::new(git)), Err(DiffError::GitData { .. })),
                "{git}"
            );
        }
    }

    #[test]
    fn links_are_read_lexically() {
        let walk = |link: &str, target: &str| link_walk(Path::new(link), target.as_bytes());
        assert_eq!(walk("a", "b"), Ok(vec![]));
        assert_eq!(walk("a", "."), Ok(vec![]));
        assert_eq!(
            walk("x/y/a", "../../b/c/d"),
            Ok(vec![PathBuf::from("b"), PathBuf::from("b/c")])
        );
        assert_eq!(walk("x/a", "./b//c"), Ok(vec![PathBuf::from("x/b")]));
        for (link, target, why) in [
            ("a", "", "empty"),
            ("a", "b\0c", "NUL"),
            ("a", "/etc", "absolute"),
            ("a", "\\server\\share", "absolute"),
            ("a", "C:\\x", "absolute"),
            ("a", "..", "outside"),
            ("x/a", "../../b", "outside"),
            ("x/a", "..\\..\\b", "outside"),
            ("a", "b/../c", "`..` after"),
            ("a", ".git", "`.git`"),
            ("a", "b/.GIT./hooks", "`.git`"),
            ("x/a", "../git~1", "`.git`"),
        ] {
            match walk(link, target) {
                Err(error) => assert!(error.contains(why), "{target}: {error}"),
                Ok(through) => panic!("{link} -> {target} passed, through {through:?}"),
            }
        }
    }

    #[test]
    fn unknown_modes_are_refused_before_git2_reads_them() {
        let added = |mode: &str| {
            format!(
                "diff --git a/f b/f\nnew file mode {mode}\n--- /dev/null\n+++ b/f\n\
                 @@ -0,0 +1 @@\n+x\n"
            )
        };
        for known in ["100644", "100755", "120000", "160000", "40000", "100664"] {
            assert!(known_modes(&added(known)).is_ok(), "{known}");
        }
        for unknown in ["100600", "100777", "777777777777777777777777"] {
            match known_modes(&added(unknown)) {
                Err(DiffError::Mode { file, mode, .. }) => {
                    assert_eq!((file.as_str(), mode.as_str()), ("f", unknown));
                }
                other => panic!("{unknown}: {other:?}"),
            }
        }
        let index = "diff --git a/f b/f\nindex 1234567..89abcde 100600\n";
        assert!(known_modes(index).is_err());
        // And the same patch through `apply` is refused, not a panic.
        let dir = std::env::temp_dir();
        assert!(matches!(
            apply(&dir, &added("100600"), Consent::Given),
            Err(DiffError::Mode { .. })
        ));
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
    fn paths_in_or_on_the_way_to_a_hooks_folder_are_refused() {
        let hooks = vec![
            vec![".githooks".to_string()],
            vec!["tools".to_string(), "hooks".to_string()],
        ];
        for refused in [
            ".githooks/pre-commit",
            ".githooks",
            ".GitHooks./pre-push",
            "tools/hooks/post-checkout",
            "tools\\hooks\\post-merge",
            "tools/Hooks/deeper/script",
            "tools",
        ] {
            assert!(
                matches!(
                    check_hooks(Path::new(refused), &hooks),
                    Err(DiffError::GitData { .. })
                ),
                "{refused}"
            );
        }
        for fine in [".githooksx/pre-commit", "tools/other", "src/.githooks"] {
            assert!(check_hooks(Path::new(fine), &hooks).is_ok(), "{fine}");
        }
        // A hooks path at or above the project: every path is in it.
        assert!(check_hooks(Path::new("src/main.rs"), &[Vec::new()]).is_err());
        assert!(check_hooks(Path::new("src/main.rs"), &[]).is_ok());
    }

    #[test]
    fn a_hooks_path_is_resolved_as_the_system_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        fs::create_dir_all(top.join("scripts/hooks")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("scripts", top.join("link")).unwrap();
        assert_eq!(
            resolve(&top.join("scripts/./x/../hooks")),
            top.join("scripts/hooks")
        );
        assert_eq!(resolve(&top.join("missing/a/../b")), top.join("missing/b"));
        assert_eq!(resolve(&top.join("scripts/..")), top.clone());
        #[cfg(unix)]
        assert_eq!(
            resolve(&top.join("link/hooks/new")),
            top.join("scripts/hooks/new")
        );
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
        match apply(&dir, "hello, world\n", Consent::Given) {
            Err(DiffError::InvalidPatch(_)) => {}
            other => panic!("expected InvalidPatch, got {other:?}"),
        }
        assert_eq!(
            apply(&dir, "  \n", Consent::Ask).ok(),
            Some(Applied::Written(Changes::default()))
        );
    }
}

#[cfg(test)]
mod header_only_tests {
    use super::*;

    #[test]
    fn empty_files_added_or_deleted_get_their_lines_and_libgit2_reads_them() {
        let empty = "diff --git a/t/__init__.py b/t/__init__.py\nnew file mode 100644\nindex 0000000..e69de29\n";
        let gone = "diff --git \"a/d s/e\" \"b/d s/e\"\ndeleted file mode 100644\nindex e69de29..0000000\n";
        let next = "diff --git a/x.py b/x.py\nindex 1111111..2222222 100644\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n";
        let patch = format!("{empty}{next}{gone}");
        assert!(git2::Diff::from_buffer(patch.as_bytes()).is_err());
        let fixed = header_only_files(&patch);
        assert_eq!(
            fixed,
            format!(
                "{empty}--- /dev/null\n+++ b/t/__init__.py\n{next}{gone}--- \"a/d s/e\"\n+++ /dev/null\n"
            )
        );
        let diff = git2::Diff::from_buffer(fixed.as_bytes()).expect("libgit2 reads it");
        assert_eq!(diff.deltas().count(), 3);
        // Nothing else is touched: a mode change, a rename, a body.
        for untouched in [
            next.to_string(),
            "diff --git a/s b/s\nold mode 100644\nnew mode 100755\n".into(),
            "diff --git a/a b/b\nsimilarity index 100%\nrename from a\nrename to b\n".into(),
        ] {
            assert!(matches!(
                header_only_files(&untouched),
                std::borrow::Cow::Borrowed(_)
            ));
        }
    }
}
