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

/// How long a new snapshot is left alone: it is made before the battle
/// that starts from it is recorded.
const SNAPSHOT_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// The working-tree snapshots under `root` (`<data>/snapshots/<commit>`)
/// that no battle needs any more: every battle started from one is over
/// and none of its worktrees is left (a worktree borrows the snapshot's
/// objects, and applying its change compares the user's tree with it).
/// Snapshots made in the last [`SNAPSHOT_GRACE`] are kept.
fn unused_snapshots(root: &Path, battles: &[Battle]) -> Vec<PathBuf> {
    let needed: std::collections::HashSet<&Path> = battles
        .iter()
        .filter(|b| {
            !b.status.is_terminal()
                || b.contestants.iter().any(|c| {
                    c.worktree
                        .as_ref()
                        .is_some_and(|w| w.symlink_metadata().is_ok())
                })
        })
        .filter_map(|b| b.source.as_deref())
        .collect();
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        // `.compare-…`: a comparison at work.
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > SNAPSHOT_GRACE)
        })
        .map(|e| e.path())
        .filter(|p| !needed.contains(p.as_path()))
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
        // A change made against a snapshot of the working tree applies
        // only while the tree still is that snapshot.
        let over_snapshot = self.snapshot_still_there(&battle, &project).await?;
        let applied = tokio::task::spawn_blocking(move || {
            if over_snapshot {
                crate::agent::apply::apply_over_snapshot(&project, &patch, consent)
            } else {
                crate::agent::apply::apply(&project, &patch, consent)
            }
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

    /// Arena's worktrees: per Coding contestant, where and in what state,
    /// from Arena's records alone: nothing in a worktree is read (an
    /// agent's repository can hold a FIFO for a HEAD or a tree of millions
    /// of paths). `dirty` says that Arena has not kept its work: its
    /// contestant has not finished with a diff.
    pub async fn worktrees(&self) -> Result<Vec<WorktreeEntry>> {
        let battles = self.db(|s| s.battles(usize::MAX >> 1)).await?;
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            for b in battles.iter().filter(|b| b.battle_type.has_worktrees()) {
                for c in &b.contestants {
                    let Some(path) = &c.worktree else { continue };
                    let exists = path.symlink_metadata().is_ok_and(|m| m.is_dir());
                    let kept = c.status.is_terminal() && c.diff.is_some();
                    out.push(WorktreeEntry {
                        battle_id: b.id.clone(),
                        battle_status: b.status,
                        contestant_id: c.id.clone(),
                        project: b.project.clone(),
                        path: path.clone(),
                        exists,
                        dirty: exists && !kept,
                        name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    });
                }
            }
            Ok(out)
        })
        .await?
    }

    /// Removes the worktrees of finished battles. Without `force`, only
    /// those whose files hold nothing Arena has not kept: a reader process
    /// ([`super::workspace::read`], bounded, in a jail) takes each one's
    /// diff against its base, which must be the contestant's kept diff of
    /// its latest round (or nothing, when none was kept); a worktree edited
    /// since, one whose diff cannot be taken and one whose battle is gone
    /// from the records are kept. Returns (removed, kept with the reason).
    pub async fn prune_worktrees(
        &self,
        force: bool,
    ) -> Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
        let battles = self.db(|s| s.battles(usize::MAX >> 1)).await?;
        let known: std::collections::HashSet<String> =
            battles.iter().map(|b| b.id.clone()).collect();
        let root = self.inner.data_dir.join("worktrees");
        let (mut removed, mut kept) = (Vec::new(), Vec::new());
        // Worktrees of battles that are no longer in the database (their
        // project unknown): removed whole with `force`, links in them
        // removed, not followed.
        let orphans = tokio::task::spawn_blocking(move || orphans(&root, &known)).await?;
        for path in orphans {
            if !force {
                let why = "its battle is no longer in Arena's records, so Arena cannot tell \
                           what it holds; pass --force to remove it";
                kept.push((path, why.to_string()));
                continue;
            }
            let p = path.clone();
            match tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&p)).await? {
                Ok(()) => removed.push(path),
                Err(err) => kept.push((path, err.to_string())),
            }
        }
        for b in battles.iter().filter(|b| b.battle_type.has_worktrees()) {
            for c in &b.contestants {
                let Some(path) = c.worktree.clone() else {
                    continue;
                };
                if !b.status.is_terminal() {
                    kept.push((path, "its battle is still running".into()));
                    continue;
                }
                if !path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                    continue; // already gone
                }
                if !force {
                    if let Some(why) = self.unkept_work(b, c, &path).await {
                        kept.push((path, format!("{why}; pass --force to remove it")));
                        continue;
                    }
                }
                let (project, p) = (b.project.clone(), path.clone());
                let battle_id = b.id.clone();
                // Its work is kept (or `force`): removed without asking git,
                // with the battle's base tree (made again when a check
                // needs it).
                match tokio::task::spawn_blocking(move || {
                    if let Some(root) = p.parent() {
                        super::fresh::remove_base_tree(&project, root, &battle_id);
                    }
                    crate::worktree::remove(&project, &p, true)
                })
                .await?
                {
                    Ok(()) => removed.push(path),
                    Err(err) => kept.push((path, err.to_string())),
                }
            }
        }
        let root = self.inner.data_dir.join(crate::coding_base::SNAPSHOTS_DIR);
        let snapshots =
            tokio::task::spawn_blocking(move || unused_snapshots(&root, &battles)).await?;
        for path in snapshots {
            let p = path.clone();
            match tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&p)).await? {
                Ok(()) => removed.push(path),
                Err(err) => kept.push((path, err.to_string())),
            }
        }
        Ok((removed, kept))
    }

    /// Why the worktree at `path` holds work Arena has not kept, if it
    /// does: its diff now, taken by a reader, against the kept diff of the
    /// contestant's latest round.
    async fn unkept_work(
        &self,
        battle: &Battle,
        c: &crate::battle::Contestant,
        path: &Path,
    ) -> Option<String> {
        let Some(base) = battle.base_commit.clone() else {
            return Some("Arena has no base commit for it".into());
        };
        let (id, project) = (c.id.clone(), battle.project.clone());
        let recorded = self
            .db(move |s| {
                let round = s.rounds(&id)?.iter().map(|r| r.number).max().unwrap_or(1);
                s.patch(&id, round)
            })
            .await;
        let recorded = match recorded {
            Ok(patch) => patch.unwrap_or_default(),
            Err(e) => return Some(format!("Arena cannot read its kept diff: {e}")),
        };
        let objects =
            match tokio::task::spawn_blocking(move || crate::worktree::object_dirs(&project)).await
            {
                Ok(Ok(objects)) => objects,
                Ok(Err(e)) => return Some(format!("its project's repository: {e}")),
                Err(e) => return Some(e.to_string()),
            };
        let limits = &self.config().limits;
        let request = crate::agent::reader::Request::Diff {
            worktree: path.to_path_buf(),
            base,
            objects: objects.clone(),
            file_bytes: limits.diff_file_bytes,
            total_bytes: limits.diff_total_bytes,
        };
        let token = tokio_util::sync::CancellationToken::new();
        let what = "the worktree's files";
        match super::workspace::read(self, (path, &objects), what, request, &token).await {
            Ok(crate::agent::reader::Answer::Diff { diff }) if diff.patch == recorded => None,
            Ok(crate::agent::reader::Answer::Diff { .. }) => {
                Some("its files changed since Arena took its diff".into())
            }
            Ok(crate::agent::reader::Answer::Failed { reason }) => {
                Some(format!("its diff cannot be taken: {reason}"))
            }
            Ok(crate::agent::reader::Answer::LeftOut { .. }) => {
                Some("the reader answered another question than it was asked".into())
            }
            Err(e) => Some(format!("its diff cannot be taken: {e}")),
        }
    }
}
