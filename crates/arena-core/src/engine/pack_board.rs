//! The task packs as a source of the leaderboard of their own: every task
//! of every pack run is a set of pairwise matches between the run's
//! contestants, decided by the verifiers (the one that resolved the task
//! at the higher rate over its runs wins; equal rates tie), and those
//! matches are rated like battles. A pack's contestants never meet the
//! judge's or the user's verdicts here, and battles never enter it.

use crate::battle::BattleType;
use crate::error::Result;
use crate::leaderboard::{BattleOutcome, Entry, Leaderboard, Options, Source, Verdict};
use crate::pack_score::{self, DuelOutcome};

use super::pack_run::task_runs;
use super::verdict::LeaderboardQuery;
use super::Engine;

/// Pack runs read for the leaderboard at most (newest first).
const PACK_RUNS_READ: usize = 10_000;

impl Engine {
    /// The leaderboard of [`Source::Packs`]: the pack runs' tasks as
    /// matches. Of the query's filters, the series (one pack run) and the
    /// project apply; a pack run carries no verdict of a user or a machine
    /// of its own, so the others leave it out.
    pub(super) async fn pack_leaderboard(
        &self,
        query: &LeaderboardQuery,
        series_id: Option<String>,
        project: Option<String>,
    ) -> Result<Leaderboard> {
        let others = [&query.tag, &query.machine, &query.user]
            .iter()
            .any(|f| f.as_deref().is_some_and(|t| !t.trim().is_empty()));
        let wrong_type = query.battle_type.is_some_and(|t| t != BattleType::Coding);
        let mut outcomes = Vec::new();
        if !others && !wrong_type {
            let runs = match series_id {
                Some(id) => vec![self.series(&id).await?],
                None => self.series_list(PACK_RUNS_READ).await?,
            };
            for series in runs {
                let folder = series.request.project.to_string_lossy();
                if project.as_deref().is_some_and(|p| p != folder) {
                    continue;
                }
                let Some((_, rows)) = self.pack_run_rows(&series.id).await? else {
                    continue;
                };
                let duels = pack_score::pairwise_outcomes(&task_runs(&rows));
                outcomes.extend(duels.into_iter().map(|d| BattleOutcome {
                    battle_id: format!("{}/{}", series.id, d.task),
                    battle_type: BattleType::Coding,
                    entries: vec![entry(d.a), entry(d.b)],
                    user: Verdict::None,
                    judge: match d.outcome {
                        DuelOutcome::AWins => Verdict::Winner(0),
                        DuelOutcome::BWins => Verdict::Winner(1),
                        DuelOutcome::Tie => Verdict::Tie,
                    },
                }));
            }
        }
        let options = Options {
            battle_type: Some(BattleType::Coding),
            source: Source::Packs,
        };
        Ok(
            tokio::task::spawn_blocking(move || crate::leaderboard::compute(&outcomes, &options))
                .await?,
        )
    }
}

/// A contestant of a task's match: who it is, no speed figures (a task's
/// runs have their own, in the pack's report).
fn entry(player: crate::leaderboard::Player) -> Entry {
    Entry {
        player,
        duration_ms: None,
        tokens_per_sec: None,
        cost_usd: None,
        output_chars: None,
    }
}
