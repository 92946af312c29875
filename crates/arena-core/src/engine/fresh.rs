//! The verdict is computed on what would be applied: a contestant's check
//! runs on its change (the patch Arena took) applied with Arena's own
//! apply rules to a fresh tree of the base commit, never in the agent's
//! working tree. What the agent's tree held that the change does not carry
//! (a nested git repository, an ignored or excluded path, a FIFO) is not
//! there, and the result names it ("not part of the change"); the files of
//! the check the change touches are named too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::agent::apply::{self, Consent};
use crate::battle::{Battle, CheckResult, Contestant, NOT_IN_CHANGE_LISTED};
use crate::error::{Error, Result};
use crate::{diff, results, worktree};

use super::check::run_check;
use super::workspace::Workspace;
use super::Engine;

/// Runs `command` on `change` (the contestant's diff against the base)
/// applied to a fresh tree of the base, made next to the contestant's
/// worktree (`<name>-check`) and removed after. A check that cannot run
/// there fails with the reason.
pub(super) async fn check_change(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    workspace: &Workspace,
    change: &diff::Diff,
    command: &str,
    token: &CancellationToken,
) -> CheckResult {
    let touches_check = arena_domain::check_files::touched(
        change
            .files
            .iter()
            .flat_map(|f| std::iter::once(f.path.as_str()).chain(f.old_path.as_deref())),
    );
    let check = match on_fresh_tree(engine, battle, c, workspace, change, command, token).await {
        Ok(check) => check,
        Err(e) => CheckResult {
            command: command.to_string(),
            output_tail: format!("the check could not run on a fresh tree of the base: {e}"),
            ..Default::default()
        },
    };
    CheckResult {
        touches_check,
        ..check
    }
}

async fn on_fresh_tree(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    workspace: &Workspace,
    change: &diff::Diff,
    command: &str,
    token: &CancellationToken,
) -> Result<CheckResult> {
    let base = battle
        .base_commit
        .clone()
        .ok_or_else(|| Error::Task(format!("battle {} has no base commit", battle.id)))?;
    let root = engine.data_dir().join("worktrees").join(&battle.id);
    let name = format!(
        "{}-{}-check",
        crate::battle::short_id(&battle.id),
        results::contestant_dir(c)
    );
    if overlays_here(engine) {
        return over_the_base(
            engine,
            battle,
            c,
            workspace,
            change,
            command,
            token,
            (&root, &name),
            &base,
        )
        .await;
    }
    let started = Instant::now();
    let (project, patch) = (battle.project.clone(), change.patch.clone());
    let made =
        tokio::task::spawn_blocking(move || fresh_tree(&project, &root, &name, &base, &patch))
            .await?;
    let (path, applied) = match made {
        Ok(made) => made,
        Err(e) => return Err(Error::Git(format!("making a fresh tree of the base: {e}"))),
    };
    tracing::info!(
        contestant = %c.id,
        ms = started.elapsed().as_millis() as u64,
        files = change.files.len(),
        "fresh tree of the base made and the change applied"
    );
    let result = match applied {
        Err(reason) => Ok(CheckResult {
            command: command.to_string(),
            passed: false,
            output_tail: format!(
                "the change could not be applied to a fresh tree of the base: {reason}"
            ),
            ..Default::default()
        }),
        Ok(()) => match held_beyond(engine, workspace, Over::Tree(&path)).await {
            Err(e) => Err(e),
            Ok(left) => {
                let fresh = workspace.at(&path);
                let check = run_check(engine, c, command, &fresh, token).await;
                Ok(CheckResult {
                    not_in_change: left.listed,
                    not_in_change_count: left.count,
                    ..check
                })
            }
        },
    };
    let (project, gone) = (battle.project.clone(), path.clone());
    let removed =
        tokio::task::spawn_blocking(move || worktree::remove(&project, &gone, true)).await?;
    if let Err(e) = removed {
        tracing::warn!(path = %path.display(), error = %e, "could not remove the check's fresh tree");
    }
    result
}

/// Whether a check's fresh tree can be an overlay of the battle's base
/// tree: overlays mount here, checks run in a jail, and an Arena binary
/// can apply the change inside it ([`apply::apply_first_main`]).
fn overlays_here(engine: &Engine) -> bool {
    crate::agent::jail::confiner().is_some()
        && crate::agent::environment::copy_on_write().is_ok()
        && matches!(
            engine.sandbox_ready(),
            Ok(Some(crate::agent::sandbox::Enforcement::Jail))
        )
}

/// The check on an overlay of the battle's base tree (made once per
/// battle, [`base_tree`]): the fresh tree's place is an empty folder;
/// inside the check's jail the base tree is mounted there with a layer of
/// the check's own, the change is applied there with Arena's apply rules
/// by Arena's own binary, and then the check runs. Nothing is checked out
/// per check; what the agent's tree holds beyond the change is found
/// against the base tree and the change's own paths.
#[allow(clippy::too_many_arguments)]
async fn over_the_base(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    workspace: &Workspace,
    change: &diff::Diff,
    command: &str,
    token: &CancellationToken,
    (root, name): (&Path, &str),
    base: &str,
) -> Result<CheckResult> {
    let started = Instant::now();
    let lower = base_tree(engine, battle, root, base).await?;
    let path = root.join(name);
    let made = tokio::task::spawn_blocking({
        let path = path.clone();
        move || {
            crate::agent::environment::remove(&path);
            std::fs::create_dir_all(&path)
        }
    })
    .await?;
    made.map_err(|e| Error::io(&path, e))?;
    let left = held_beyond(engine, workspace, Over::Base(&lower, change)).await;
    tracing::info!(
        contestant = %c.id,
        ms = started.elapsed().as_millis() as u64,
        files = change.files.len(),
        "the check's tree: an overlay of the base tree"
    );
    let result = match left {
        Err(e) => Err(e),
        Ok(left) => {
            let fresh = workspace.over(&path, &lower, &change.patch);
            let check = run_check(engine, c, command, &fresh, token).await;
            Ok(CheckResult {
                not_in_change: left.listed,
                not_in_change_count: left.count,
                ..check
            })
        }
    };
    let gone = path.clone();
    tokio::task::spawn_blocking(move || crate::agent::environment::remove(&gone)).await?;
    result
}

/// One base tree per battle at a time: made by the first check that needs
/// it.
static BASE_TREES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The battle's base tree, `root/<short id>-base`: a checkout of the base
/// commit that checks see (never write) through an overlay. Made once;
/// kept (a `.ok` mark beside it says it is whole) until the battle's
/// worktrees are removed ([`remove_base_tree`]).
async fn base_tree(engine: &Engine, battle: &Battle, root: &Path, base: &str) -> Result<PathBuf> {
    let _one = BASE_TREES.lock().await;
    let name = format!("{}-base", crate::battle::short_id(&battle.id));
    let (tree, mark) = (root.join(&name), root.join(format!("{name}.ok")));
    if tree.is_dir() && mark.is_file() {
        return Ok(tree);
    }
    let (project, root, base) = (battle.project.clone(), root.to_path_buf(), base.to_string());
    let made = tokio::task::spawn_blocking(move || {
        if tree.symlink_metadata().is_ok() {
            worktree::remove(&project, &tree, true).map_err(|e| e.to_string())?;
        }
        let made = worktree::create(&project, &root, &name, &base).map_err(|e| e.to_string())?;
        std::fs::write(&mark, "").map_err(|e| e.to_string())?;
        Ok::<PathBuf, String>(made.path)
    })
    .await?;
    let _ = engine;
    made.map_err(|e| Error::Git(format!("making the battle's base tree: {e}")))
}

/// Removes the base tree of the battle whose worktrees are under `root`
/// (`data/worktrees/<battle id>`), if there is one.
pub(super) fn remove_base_tree(project: &Path, root: &Path, battle_id: &str) {
    let name = format!("{}-base", crate::battle::short_id(battle_id));
    let _ = std::fs::remove_file(root.join(format!("{name}.ok")));
    let tree = root.join(&name);
    if tree.symlink_metadata().is_ok() {
        if let Err(e) = worktree::remove(project, &tree, true) {
            tracing::warn!(path = %tree.display(), error = %e, "could not remove a battle's base tree");
        }
    }
}

/// Makes the fresh tree `root/name` at `base` (one a crash left behind is
/// removed first) and applies `patch` there with Arena's apply rules,
/// everything written (nothing there reaches the user). The outer error is
/// Arena's; the inner one is why the change does not apply.
fn fresh_tree(
    project: &Path,
    root: &Path,
    name: &str,
    base: &str,
    patch: &str,
) -> std::result::Result<(PathBuf, std::result::Result<(), String>), String> {
    let leftover = root.join(name);
    if leftover.symlink_metadata().is_ok() {
        worktree::remove(project, &leftover, true).map_err(|e| e.to_string())?;
    }
    let tree = worktree::create(project, root, name, base).map_err(|e| e.to_string())?;
    let applied = apply::apply(&tree.path, patch, Consent::Given)
        .map(|_| ())
        .map_err(|e| e.to_string());
    Ok((tree.path, applied))
}

/// What the agent's worktree holds that the fresh tree (with the change
/// applied) does not: the first [`NOT_IN_CHANGE_LISTED`], and how many.
#[derive(Debug, Default)]
pub(super) struct LeftOut {
    pub listed: Vec<String>,
    pub count: usize,
}

/// Folders of build output and caches: listed by their name once, however
/// many there are and wherever they are.
const NOISE: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "dist",
    "build",
    ".next",
    ".cache",
    ".gradle",
    ".eggs",
];

/// The walk stops after this many entries of the agent's tree.
const MOST_ENTRIES: usize = 200_000;

/// [`LeftOut`] of the agent's worktree `agent` against the fresh tree
/// `fresh`. Only names and kinds are read (`lstat`): no link is followed,
/// no file opened, so a FIFO or a device is only named. A folder the fresh
/// tree lacks is named once, not walked; so is a git repository of its own
/// (a folder with a `.git`), whose files no diff carries.
pub(super) fn left_out(agent: &Path, fresh: &Path) -> LeftOut {
    left_out_by(agent, &|rel| {
        fresh.join(rel).symlink_metadata().ok().map(|m| m.is_dir())
    })
}

/// [`left_out`] against a tree `there` describes: for a path relative to
/// it, whether it holds it (`Some`), and whether as a folder.
fn left_out_by(agent: &Path, there: &dyn Fn(&Path) -> Option<bool>) -> LeftOut {
    let mut found: Vec<String> = Vec::new();
    let mut noise: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen = 0usize;
    let mut folders: Vec<PathBuf> = vec![PathBuf::new()];
    'walk: while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(agent.join(&folder)) else {
            continue;
        };
        // A folder of millions of entries is not read past the bound.
        let room = MOST_ENTRIES.saturating_sub(seen) + 1;
        let mut entries: Vec<_> = entries.flatten().take(room).collect();
        entries.sort_by_key(|e| e.file_name());
        let mut below = Vec::new();
        for entry in entries {
            seen += 1;
            if seen > MOST_ENTRIES {
                found.push(format!(
                    "(the rest: the worktree has over {MOST_ENTRIES} entries)"
                ));
                break 'walk;
            }
            let name = entry.file_name();
            if folder.as_os_str().is_empty() && name == ".git" {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let relative = folder.join(&name);
            let shown = shown(&relative);
            let there = there(&relative);
            if kind.is_dir() {
                if agent
                    .join(&relative)
                    .join(".git")
                    .symlink_metadata()
                    .is_ok()
                {
                    found.push(format!("{shown}/ (a git repository of its own)"));
                } else if there == Some(true) {
                    below.push(relative);
                } else if NOISE.iter().any(|n| name == *n) {
                    *noise
                        .entry(format!("{}/", name.to_string_lossy()))
                        .or_default() += 1;
                } else {
                    found.push(format!("{shown}/"));
                }
                continue;
            }
            if there.is_some() {
                continue;
            }
            found.push(match odd_kind(&kind) {
                Some(what) => format!("{shown} ({what})"),
                None => shown,
            });
        }
        // A folder's own entries first, then its folders', in name order.
        folders.extend(below.into_iter().rev());
    }
    let noise = noise.into_iter().map(|(name, n)| match n {
        1 => format!("{name} (build output or a cache)"),
        n => format!("{name} (build output or a cache, {n} folders)"),
    });
    let mut all: Vec<String> = found.into_iter().chain(noise).collect();
    let count = all.len();
    all.truncate(NOT_IN_CHANGE_LISTED);
    LeftOut { listed: all, count }
}

/// `path` as the result shows it: `/`-separated, with no control character
/// or backtick of the agent's.
fn shown(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|ch| {
            if ch.is_control() || ch == '`' {
                '?'
            } else {
                ch
            }
        })
        .collect()
}

fn odd_kind(kind: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else if kind.is_symlink() {
        Some("a symbolic link")
    } else {
        None
    }
}

/// The tree a check runs on, as [`held_beyond`] compares it.
enum Over<'a> {
    /// A fresh tree on disk, the change applied.
    Tree(&'a Path),
    /// The base tree, and the change to apply over it.
    Base(&'a Path, &'a diff::Diff),
}

/// What `workspace` holds that the check's tree (its change applied to
/// the base) does not ([`left_out`]), read with the deadline of every read
/// of agent-made files. The environment's places are in the check's tree
/// too (its check sees the environment there), so they are not named.
async fn held_beyond(engine: &Engine, workspace: &Workspace, over: Over<'_>) -> Result<LeftOut> {
    let agent = workspace.path.clone();
    let places: Vec<PathBuf> = workspace
        .environment
        .iter()
        .map(|f| f.rel.clone())
        .collect();
    match over {
        Over::Tree(fresh) => {
            for rel in &places {
                let _ = super::launch::plain_place(fresh, rel);
            }
            let fresh = fresh.to_path_buf();
            super::workspace::confined_read(
                engine,
                "what the worktree holds beyond its change",
                move || Ok(left_out(&agent, &fresh)),
            )
            .await
        }
        Over::Base(base, change) => {
            let (files, dirs, gone) = change_paths(change, &places);
            let base = base.to_path_buf();
            super::workspace::confined_read(
                engine,
                "what the worktree holds beyond its change",
                move || {
                    Ok(left_out_by(&agent, &|rel| {
                        if files.contains(rel) {
                            Some(false)
                        } else if dirs.contains(rel) {
                            Some(true)
                        } else if gone.contains(rel) {
                            None
                        } else {
                            base.join(rel).symlink_metadata().ok().map(|m| m.is_dir())
                        }
                    }))
                },
            )
            .await
        }
    }
}

/// The paths the change leaves in the tree (files), the folders on their
/// way (and the environment's `places`), and the paths it takes away.
#[allow(clippy::type_complexity)]
fn change_paths(
    change: &diff::Diff,
    places: &[PathBuf],
) -> (
    std::collections::HashSet<PathBuf>,
    std::collections::HashSet<PathBuf>,
    std::collections::HashSet<PathBuf>,
) {
    use arena_domain::patch::ChangeStatus;
    let (mut files, mut dirs, mut gone) = (
        std::collections::HashSet::new(),
        std::collections::HashSet::new(),
        std::collections::HashSet::new(),
    );
    for file in &change.files {
        let path = PathBuf::from(&file.path);
        if let Some(old) = &file.old_path {
            gone.insert(PathBuf::from(old));
        }
        if file.status == ChangeStatus::Deleted {
            gone.insert(path);
            continue;
        }
        dirs.extend(
            path.ancestors()
                .skip(1)
                .filter(|a| !a.as_os_str().is_empty())
                .map(Path::to_path_buf),
        );
        files.insert(path);
    }
    for place in places {
        dirs.extend(
            place
                .ancestors()
                .filter(|a| !a.as_os_str().is_empty())
                .map(Path::to_path_buf),
        );
    }
    (files, dirs, gone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo");
        assert!(made.success());
    }

    /// What the agent's tree holds beyond the fresh tree is named by lstat
    /// alone: a FIFO is named, not opened (opening it would block); a link
    /// to a folder is not followed; a nested repository and a missing
    /// folder are named once, not walked; build output is named by its
    /// folder's name once; the list is bounded, the count is not.
    #[test]
    fn what_the_change_does_not_carry_is_named_without_opening_it() {
        let (agent, fresh) = (
            tempfile::tempdir().expect("agent"),
            tempfile::tempdir().expect("fresh"),
        );
        let (a, f) = (agent.path(), fresh.path());
        for dir in [a, f] {
            std::fs::create_dir_all(dir.join("src")).expect("src");
            std::fs::write(dir.join("src/lib.rs"), "x").expect("lib.rs");
        }
        std::fs::create_dir_all(a.join(".git/objects")).expect(".git");
        std::fs::create_dir_all(a.join("calc/.git")).expect("nested");
        std::fs::write(a.join("calc/__init__.py"), "x").expect("calc");
        mkfifo(&a.join("src/pipe"));
        std::os::unix::fs::symlink("/", a.join("src/root")).expect("link");
        for place in ["target", "src/target", "web/node_modules"] {
            std::fs::create_dir_all(a.join(place).join("deep")).expect("noise");
        }
        std::fs::create_dir_all(a.join("secret/inner")).expect("secret");
        std::fs::write(a.join("secret/inner/key"), "x").expect("key");
        std::fs::create_dir_all(a.join("web")).expect("web");

        let left = left_out(a, f);
        assert_eq!(
            left.listed,
            vec![
                "calc/ (a git repository of its own)".to_string(),
                "secret/".to_string(),
                "web/".to_string(),
                "src/pipe (a FIFO)".to_string(),
                "src/root (a symbolic link)".to_string(),
                "target/ (build output or a cache, 2 folders)".to_string(),
            ],
            "{left:?}"
        );
        assert_eq!(left.count, 6);

        for n in 0..(NOT_IN_CHANGE_LISTED + 5) {
            std::fs::write(f.join(format!("only-in-agent-{n:02}")), "x").expect("file");
            std::fs::write(a.join(format!("only-in-agent-{n:02}")), "x").expect("file");
            std::fs::write(a.join(format!("left-{n:02}")), "x").expect("file");
        }
        let left = left_out(a, f);
        assert_eq!(left.listed.len(), NOT_IN_CHANGE_LISTED);
        assert_eq!(left.count, 6 + NOT_IN_CHANGE_LISTED + 5);
    }
}
