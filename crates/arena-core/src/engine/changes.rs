//! A Coding battle's changes and worktrees, as the user reaches them: a
//! contestant's diff, applying it to the project, the results folder, and
//! listing and pruning Arena's worktrees (from Arena's records; a
//! worktree's own files are never followed).

use std::path::{Path, PathBuf};

use crate::battle::{Battle, ContestantStatus};
use crate::error::{Error, Result};

use super::{contestant_of, Engine};

/// One Coding contestant's worktree.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorktreeEntry {
    pub battle_id: String,
    pub battle_status: crate::battle::BattleStatus,
    pub contestant_id: String,
    pub project: PathBuf,
    pub path: PathBuf,
    /// Its folder name (its branch is `arena/<name>`).
    pub name: Option<String>,
    pub exists: bool,
    pub dirty: bool,
}

/// The worktree folders under `root/<battle id>/` of battles the database
/// no longer has.
fn orphans(root: &Path, known: &std::collections::HashSet<String>) -> Vec<PathBuf> {
    let folders = |dir: &Path| -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .collect()
            })
            .unwrap_or_default()
    };
    folders(root)
        .into_iter()
        .filter(|b| !known.contains(&*b.file_name().to_string_lossy()))
        .flat_map(|b| folders(&b.path()))
        .map(|w| w.path())
        .collect()
}

/// `path` when it is a folder; else a `not_found` naming it.
async fn existing_folder(what: &'static str, path: PathBuf) -> Result<PathBuf> {
    let probe = path.clone();
    if tokio::task::spawn_blocking(move || probe.is_dir()).await? {
        Ok(path)
    } else {
        Err(Error::not_found(what, path.display().to_string()))
    }
}

impl Engine {
    /// A battle that must be a Coding battle; `what` ends the error for a
    /// Q&A one ("only Coding battles {what}").
    async fn coding_battle(&self, battle_id: &str, what: &str) -> Result<Battle> {
        let battle = self.battle(battle_id).await?;
        if !battle.battle_type.has_worktrees() {
            return Err(crate::error::Invalid::Other(format!(
                "battle {battle_id} is a Q&A battle; only Coding battles {what}"
            ))
            .into());
        }
        Ok(battle)
    }

    /// Brings a Coding contestant's diff (by default the winner's) into the
    /// project's working tree; returns whose it was and every file it
    /// writes. Refuses on a dirty project or a patch that does not apply or
    /// is unsafe (a `.git` or hooks path, …), changing nothing. A patch with
    /// files that run by themselves (CI workflows, editor tasks, `.envrc`,
    /// …) is [`Applied::Held`](crate::agent::apply::Applied), nothing
    /// written, unless `consent` is given.
    pub async fn apply(
        &self,
        battle_id: &str,
        contestant_id: Option<&str>,
        consent: crate::agent::apply::Consent,
    ) -> Result<(String, crate::agent::apply::Applied)> {
        let battle = self
            .coding_battle(battle_id, "have a diff to apply")
            .await?;
        let id = match contestant_id {
            Some(id) => id.to_string(),
            None => battle.winner.as_ref().map(|w| w.contestant_id.clone()).ok_or_else(|| {
                crate::error::Invalid::Other(format!(
                    "battle {battle_id} has no winner yet; name the contestant to apply, or set a winner"
                ))
            })?,
        };
        let c = contestant_of(&battle, &id)?;
        // The latest round that finished carries all the work so far.
        let (_, patch) = self.latest_patch(&battle, c).await?.ok_or_else(|| {
            Error::Conflict(format!(
                "contestant {id} has no diff.patch (status {})",
                c.status
            ))
        })?;
        let project = self.apply_target(&battle).await?;
        let applied = tokio::task::spawn_blocking(move || {
            crate::agent::apply::apply(&project, &patch, consent)
                .map_err(|e| Error::Conflict(e.to_string()))
        })
        .await??;
        let changes = applied.changes();
        tracing::info!(
            battle = battle_id,
            contestant = %id,
            written = applied.is_written(),
            files = changes.files.len(),
            autorun = changes.autorun().count(),
            "apply"
        );
        Ok((id, applied))
    }

    /// Where a battle's changes are applied: its project, or — for a
    /// battle of a series started here that a worker on another machine
    /// ran from its own clone of the project — the series' project.
    async fn apply_target(&self, battle: &crate::Battle) -> Result<PathBuf> {
        let Some(elsewhere) = battle
            .machine
            .as_deref()
            .filter(|m| *m != self.machine() && self.database_is_team())
        else {
            return Ok(battle.project.clone());
        };
        if let Some(series_id) = &battle.series_id {
            let series = self.series(series_id).await?;
            if series.machine.as_deref() == Some(self.machine()) {
                return Ok(series.request.project);
            }
        }
        // Its project path names a folder of that machine, not this one's.
        Err(Error::Conflict(format!(
            "battle {} ran on {elsewhere}, in its project there; apply it there (arena battle apply on {elsewhere})",
            crate::battle::short_id(&battle.id)
        )))
    }

    /// A Coding contestant's changes, file by file and line by line: those
    /// of its latest finished refinement round, else of its own run (the
    /// diff `apply` takes), read from that round's `diff.patch`.
    pub async fn contestant_diff(
        &self,
        battle_id: &str,
        contestant_id: &str,
    ) -> Result<crate::patch::ContestantDiff> {
        let battle = self.coding_battle(battle_id, "have diffs").await?;
        let c = contestant_of(&battle, contestant_id)?;
        if !c.status.is_terminal() {
            return Err(Error::Conflict(format!(
                "contestant {contestant_id} is still {}; its diff is ready when it finishes",
                c.status
            )));
        }
        let (round, patch) = self
            .latest_patch(&battle, c)
            .await?
            .ok_or_else(|| Error::not_found("diff of contestant", contestant_id))?;
        let files = crate::patch::parse(&patch);
        Ok(crate::patch::ContestantDiff { round, files })
    }

    /// The diff with a contestant's latest work and its round number: of
    /// the latest refinement round that finished, else of its own run
    /// (round 1). From the database (recorded with the contestant or the
    /// round, so a viewer asking the moment it is done finds it, on any
    /// machine of a team); for a battle from before the database kept
    /// diffs, its `diff.patch` in the battle's results folder. `None` when
    /// it made none.
    pub(super) async fn latest_patch(
        &self,
        battle: &crate::Battle,
        c: &crate::Contestant,
    ) -> Result<Option<(u32, String)>> {
        let latest_round = self
            .rounds(&c.id)
            .await?
            .into_iter()
            .rev()
            .find(|r| r.status == Some(ContestantStatus::Done))
            .map(|r| (r.number, r.result_path));
        let number = latest_round.as_ref().map_or(1, |(n, _)| *n);
        let cid = c.id.clone();
        if let Some(patch) = self.db(move |s| s.patch(&cid, number)).await? {
            return Ok(Some((number, patch)));
        }
        let file = match latest_round {
            Some((_, Some(path))) => match path.parent() {
                Some(dir) => dir.join(crate::results::DIFF_FILE),
                None => return Ok(None),
            },
            Some((_, None)) => return Ok(None),
            None => crate::results::confined(
                &battle.results_path,
                &[&crate::results::contestant_dir(c)],
            )?
            .join(crate::results::DIFF_FILE),
        };
        tokio::task::spawn_blocking(move || match std::fs::read(&file) {
            Ok(bytes) => Ok(Some((number, String::from_utf8_lossy(&bytes).into_owned()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&file, e)),
        })
        .await?
    }

    /// A battle's results folder (`PROJECT/Arena/<battle>`), when it exists.
    pub async fn results_folder(&self, battle_id: &str) -> Result<PathBuf> {
        let battle = self.battle(battle_id).await?;
        existing_folder("results folder", battle.results_path).await
    }

    /// A Coding contestant's worktree, when it exists.
    pub async fn worktree(&self, battle_id: &str, contestant_id: &str) -> Result<PathBuf> {
        let battle = self.coding_battle(battle_id, "have a worktree").await?;
        let c = contestant_of(&battle, contestant_id)?;
        let path = c.worktree.clone().ok_or_else(|| {
            Error::Conflict(format!(
                "contestant {contestant_id} has no worktree yet (it is {})",
                c.status
            ))
        })?;
        existing_folder("worktree", path).await
    }

    /// Arena's worktrees: per Coding contestant, where and in what state
    /// (from Arena's records; a worktree's own files are not followed).
    pub async fn worktrees(&self) -> Result<Vec<WorktreeEntry>> {
        let battles = self.db(|s| s.battles(usize::MAX >> 1)).await?;
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            for b in battles
                .iter()
                .filter(|b| b.battle_type.has_worktrees())
            {
                for c in &b.contestants {
                    let Some(path) = &c.worktree else { continue };
                    let exists = path.symlink_metadata().is_ok_and(|m| m.is_dir());
                    let dirty = exists
                        && crate::worktree::is_dirty(path).unwrap_or_else(|error| {
                            tracing::warn!(worktree = %path.display(), %error, "cannot tell whether the worktree is dirty");
                            true
                        });
                    out.push(WorktreeEntry {
                        battle_id: b.id.clone(),
                        battle_status: b.status,
                        contestant_id: c.id.clone(),
                        project: b.project.clone(),
                        path: path.clone(),
                        exists,
                        dirty,
                        name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    });
                }
            }
            Ok(out)
        })
        .await?
    }

    /// Removes the worktrees of finished battles. A worktree with
    /// uncommitted work is kept unless `force` (its diff.patch is in the
    /// results folder either way). Returns (removed, kept with the reason).
    pub async fn prune_worktrees(
        &self,
        force: bool,
    ) -> Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
        let entries = self.worktrees().await?;
        let known: std::collections::HashSet<String> = self
            .db(|s| s.battles(usize::MAX >> 1))
            .await?
            .into_iter()
            .map(|b| b.id)
            .collect();
        let root = self.inner.data_dir.join("worktrees");
        tokio::task::spawn_blocking(move || {
            let (mut removed, mut kept) = (Vec::new(), Vec::new());
            // Worktrees of battles that are no longer in the database (their
            // project unknown): removed whole, links in them removed, not
            // followed; uncommitted work needs `force`.
            for path in orphans(&root, &known) {
                let dirty = !force && crate::worktree::is_dirty(&path).unwrap_or(true);
                if dirty {
                    kept.push((
                        path,
                        "it has uncommitted changes; pass --force to remove it".into(),
                    ));
                    continue;
                }
                match std::fs::remove_dir_all(&path) {
                    Ok(()) => removed.push(path),
                    Err(err) => kept.push((path, err.to_string())),
                }
            }
            for e in entries {
                if !e.battle_status.is_terminal() {
                    kept.push((e.path, "its battle is still running".into()));
                    continue;
                }
                if !e.exists {
                    continue; // already gone
                }
                match crate::worktree::remove(&e.project, &e.path, force) {
                    Ok(()) => removed.push(e.path),
                    Err(err) => kept.push((e.path, err.to_string())),
                }
            }
            Ok((removed, kept))
        })
        .await?
    }
}
