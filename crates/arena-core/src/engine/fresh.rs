//! The verdict is computed on what would be applied: a contestant's check
//! runs on its change (the patch Arena took) applied with Arena's own
//! apply rules to a fresh tree of the base commit, never in the agent's
//! working tree. What the agent's tree held that the change does not carry
//! (a nested git repository, an ignored or excluded path, a FIFO) is not
//! there, and the result names it ("not part of the change"); the files of
//! the check the change touches are named too.

use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::agent::apply::{self, Consent};
use crate::agent::left_out::{LeftOut, There};
use crate::agent::reader::{Answer, Request};
use crate::battle::{Battle, CheckResult, Contestant, NOT_IN_CHANGE_LISTED};
use crate::error::{Error, Result};
use crate::{diff, results, worktree};

use super::check::{confirm_could_not_run, run_check};
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
    let (source, patch) = (battle.objects_source().to_path_buf(), change.patch.clone());
    let made =
        tokio::task::spawn_blocking(move || fresh_tree(&source, &root, &name, &base, &patch))
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
        Ok(()) => match held_beyond_tree(engine, workspace, &path, token).await {
            Err(e) => Err(e),
            Ok(left) => {
                let fresh = workspace.at(&path);
                let check = run_check(engine, c, command, &fresh, token).await;
                let check = confirm_could_not_run(engine, &battle.project, check).await;
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
pub(super) fn overlays_here(engine: &Engine) -> bool {
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
    let places: Vec<PathBuf> = workspace
        .environment
        .iter()
        .map(|f| f.rel.clone())
        .collect();
    let there = change_paths(&lower, change, &places);
    let left = held_beyond(engine, workspace, there, token).await;
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
            let check = confirm_could_not_run(engine, &battle.project, check).await;
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
/// worktrees are removed ([`remove_base_tree`]). A battle with a sealed
/// source shares its source's base tree, `<sealed>-tree` beside it, with
/// every battle of that base (a task pack's runs): it is only ever read.
pub(super) async fn base_tree(
    engine: &Engine,
    battle: &Battle,
    root: &Path,
    base: &str,
) -> Result<PathBuf> {
    let _one = BASE_TREES.lock().await;
    let sealed = battle.source.as_deref().and_then(|s| {
        let name = s.file_name()?.to_string_lossy().into_owned();
        Some((s.parent()?.to_path_buf(), format!("{name}-tree")))
    });
    let (root, name) = match &sealed {
        Some((beside, name)) => (beside.as_path(), name.clone()),
        None => (
            root,
            format!("{}-base", crate::battle::short_id(&battle.id)),
        ),
    };
    let (tree, mark) = (root.join(&name), root.join(format!("{name}.ok")));
    if tree.is_dir() && mark.is_file() {
        return Ok(tree);
    }
    let (project, root, base) = (
        battle.objects_source().to_path_buf(),
        root.to_path_buf(),
        base.to_string(),
    );
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
pub(super) fn fresh_tree(
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

/// What `workspace` holds that the check's tree `there` (its change
/// applied to the base) does not ([`left_out`]), asked of a reader process
/// in the contestant's jail, which may read that tree too. The
/// environment's places are in the check's tree as well (its check sees
/// the environment there), so they are not named.
async fn held_beyond(
    engine: &Engine,
    workspace: &Workspace,
    there: There,
    token: &CancellationToken,
) -> Result<LeftOut> {
    let mut reads = workspace.objects.clone();
    reads.push(match &there {
        There::Tree { path } | There::Base { path, .. } => path.clone(),
    });
    let request = Request::LeftOut {
        worktree: workspace.path.clone(),
        there,
    };
    let answer = super::workspace::read(
        engine,
        (&workspace.path, &reads),
        "what the worktree holds beyond its change",
        request,
        token,
    )
    .await?;
    match answer {
        Answer::LeftOut { left } => Ok(LeftOut {
            listed: left.listed.into_iter().take(NOT_IN_CHANGE_LISTED).collect(),
            ..left
        }),
        Answer::Failed { reason } => Err(Error::Task(format!(
            "reading what the worktree holds beyond its change: {reason}"
        ))),
        Answer::Diff { .. } => Err(Error::Task(
            "the reader answered another question than it was asked".into(),
        )),
    }
}

/// [`held_beyond`] a fresh tree on disk, the environment's places made in
/// it first.
async fn held_beyond_tree(
    engine: &Engine,
    workspace: &Workspace,
    fresh: &Path,
    token: &CancellationToken,
) -> Result<LeftOut> {
    for folder in &workspace.environment {
        let _ = super::launch::plain_place(fresh, &folder.rel);
    }
    let there = There::Tree {
        path: fresh.to_path_buf(),
    };
    held_beyond(engine, workspace, there, token).await
}

/// The paths the change leaves in the tree (files), the folders on their
/// way (and the environment's `places`), and the paths it takes away.
fn change_paths(base: &Path, change: &diff::Diff, places: &[PathBuf]) -> There {
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
    There::Base {
        path: base.to_path_buf(),
        files: files.into_iter().collect(),
        dirs: dirs.into_iter().collect(),
        gone: gone.into_iter().collect(),
    }
}
