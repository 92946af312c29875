//! Verdicts: the user's winner, vote and reveal, a battle's tags, and the
//! leaderboard that counts the user's and the judge's verdicts.

use std::collections::HashMap;
use std::path::PathBuf;

use super::Engine;
use crate::battle::{Battle, BattleType, ContestantStatus, Winner, WinnerSource};
use crate::blind::Vote;
use crate::check_outcome::CheckOutcome;
use crate::error::{Error, Result};
use crate::leaderboard::{BattleOutcome, Leaderboard, Options, Source, Verdict};
use crate::results;
use crate::store::RankFilter;

/// What the leaderboard ranks: the filters combine with AND.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeaderboardQuery {
    pub battle_type: Option<BattleType>,
    /// A series (its id, or the start or end of it).
    pub series: Option<String>,
    /// Battles of this project folder.
    pub project: Option<PathBuf>,
    /// Battles carrying this tag.
    pub tag: Option<String>,
    /// Battles run on this machine (its name, as `Engine::machine` gives
    /// it there).
    pub machine: Option<String>,
    /// Battles whose verdict this user gave (an OS user's name, as
    /// `Engine::user` gives it there).
    pub user: Option<String>,
    /// Whose verdicts count: the user's, the judge's, or both (the user's
    /// where given, else the judge's).
    pub source: Source,
}

impl Engine {
    /// Sets the winner as the user's choice (it overrides the analysis), or
    /// clears that choice (the analysis's winner, if any, applies again).
    pub async fn set_winner(&self, battle_id: &str, contestant_id: Option<&str>) -> Result<Battle> {
        let battle = self.battle(battle_id).await?;
        let winner = match contestant_id {
            Some(cid) => {
                let c = battle
                    .contestants
                    .iter()
                    .find(|c| c.id == cid)
                    .ok_or_else(|| {
                        Error::not_found("contestant", format!("{cid} in battle {battle_id}"))
                    })?;
                if c.status != ContestantStatus::Done {
                    return Err(Error::Conflict(format!(
                        "contestant {cid} is {}; only a contestant that finished can win",
                        c.status
                    )));
                }
                Some(user_winner(cid))
            }
            // Clearing the user's choice hands the decision back to the analysis.
            None => self.analysis_winner(battle_id).await?,
        };
        self.record_vote(battle_id, winner, None, false).await
    }

    /// The user's vote: a winner (by label or id; it may still be
    /// running), a tie or "all bad". It becomes the battle's verdict (a
    /// winner with `source: user`), and a blind battle is revealed.
    pub async fn vote(&self, battle_id: &str, vote: Vote) -> Result<Battle> {
        let battle = self.battle(battle_id).await?;
        let winner = match &vote {
            Vote::Winner(key) => Some(user_winner(&crate::blind::vote_target(&battle, key)?)),
            Vote::Tie | Vote::AllBad => None,
        };
        let battle = self
            .record_vote(&battle.id, winner, vote.verdict(), true)
            .await?;
        tracing::info!(battle = %battle.id, verdict = ?vote.verdict(), "vote recorded");
        Ok(battle)
    }

    /// Reveals a blind battle without a vote: names, speeds and the
    /// analysis show from now on.
    pub async fn reveal(&self, battle_id: &str) -> Result<Battle> {
        let (id, at) = (battle_id.to_string(), self.now());
        let revealed = self
            .db(move |s| s.transact(|tx| tx.reveal(&id, at)))
            .await?;
        let battle = self.battle(battle_id).await?;
        if revealed {
            self.rewrite_results(&battle).await?;
        }
        Ok(battle)
    }

    /// Replaces a battle's tags (trimmed; duplicates dropped).
    pub async fn set_tags(&self, battle_id: &str, tags: &[String]) -> Result<Battle> {
        let tags = crate::blind::tags(tags)?;
        let battle = self.battle(battle_id).await?;
        let id = battle.id.clone();
        self.db(move |s| s.transact(|tx| tx.write_tags(&id, &tags)))
            .await?;
        let battle = self.battle(&battle.id).await?;
        let b = battle.clone();
        tokio::task::spawn_blocking(move || results::write_manifest(&b)).await??;
        Ok(battle)
    }

    /// The newest analysis's winner, as the battle's winner when the user
    /// has not chosen.
    async fn analysis_winner(&self, battle_id: &str) -> Result<Option<Winner>> {
        use crate::analysis::Outcome;
        Ok(self.analysis(battle_id).await?.and_then(|a| {
            a.winner
                .filter(|_| matches!(a.outcome, Some(Outcome::Winner | Outcome::Walkover)))
                .map(|contestant_id| Winner {
                    contestant_id,
                    source: WinnerSource::Analysis,
                })
        }))
    }

    /// Stores the user's verdict (revealing when `reveal`), and rewrites
    /// the results folder: the manifest, and at a reveal every result.
    async fn record_vote(
        &self,
        battle_id: &str,
        winner: Option<Winner>,
        verdict: Option<crate::battle::UserVerdict>,
        reveal: bool,
    ) -> Result<Battle> {
        let before = self.battle(battle_id).await?;
        let (id, at) = (before.id.clone(), self.now());
        let by = self.user().map(str::to_string);
        self.db(move |s| {
            s.transact(|tx| tx.set_vote(&id, winner.as_ref(), verdict, by.as_deref(), reveal, at))
        })
        .await?;
        let battle = self.battle(&before.id).await?;
        if before.is_masked() && !battle.is_masked() {
            self.rewrite_results(&battle).await?;
        } else {
            let b = battle.clone();
            tokio::task::spawn_blocking(move || results::write_manifest(&b)).await??;
        }
        Ok(battle)
    }

    /// After a reveal: the manifest and each written `result.md` again,
    /// now with names and figures; and the report of a blind series that
    /// ended, once this was the last of its battles to await a vote.
    async fn rewrite_results(&self, battle: &Battle) -> Result<()> {
        let b = battle.clone();
        tokio::task::spawn_blocking(move || {
            results::write_manifest(&b)?;
            for c in b.contestants.iter().filter(|c| c.result_path.is_some()) {
                results::write_result(&b, c)?;
            }
            Ok::<_, Error>(())
        })
        .await??;
        if let Some(series_id) = &battle.series_id {
            let series = self.series(series_id).await?;
            let i = series.id.clone();
            let awaiting = self.db(move |s| s.series_masked(&i)).await?;
            if series.status.is_terminal() && awaiting == 0 {
                self.write_series_report(&series.id).await?;
            }
        }
        Ok(())
    }

    /// Ratings and statistics per (identity, model) across finished
    /// battles, with judge–human agreement. Per battle the user's verdict
    /// (a chosen winner, a tie or "all bad" — which rank as a tie) and the
    /// judge's (the newest analysis: a winner, or "no clear winner" as a
    /// tie) are both read; `query.source` says which counts. A blind battle
    /// counts once revealed.
    pub async fn leaderboard(&self, query: LeaderboardQuery) -> Result<Leaderboard> {
        let series_id = match query.series.as_deref() {
            Some(key) => {
                let key = key.to_string();
                Some(self.db(move |s| s.resolve_series_id(&key)).await?)
            }
            None => None,
        };
        // The same check as a battle's folder: a full path to a folder.
        let project = match &query.project {
            Some(dir) => Some(
                super::validate::project_folder(dir)?
                    .to_string_lossy()
                    .into_owned(),
            ),
            None => None,
        };
        if query.source == Source::Packs {
            return self.pack_leaderboard(&query, series_id, project).await;
        }
        let exact = |text: &Option<String>| {
            text.as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        let filter = RankFilter {
            battle_type: query.battle_type,
            series_id,
            project,
            tag: exact(&query.tag),
            machine: exact(&query.machine),
            user: exact(&query.user),
        };
        // Two queries: the finished battles with their finished
        // contestants, and each battle's newest analysis outcome.
        let check_decides = self.config().coding.check_decides();
        let (battles, judged, checks) = self
            .db(move |s| {
                let battles = s.ranked_battles(&filter)?;
                let checks = if check_decides {
                    coding_checks(s, &battles)?
                } else {
                    Default::default()
                };
                Ok::<_, Error>((battles, s.analysis_outcomes()?, checks))
            })
            .await?;
        let outcomes: Vec<BattleOutcome> = battles
            .into_iter()
            .map(|b| {
                let place = |id: &str| b.finished.iter().position(|(cid, _)| cid == id);
                let user = match (&b.user_winner, b.user_verdict) {
                    (Some(w), _) => place(w).map_or(Verdict::None, Verdict::Winner),
                    (None, Some(_)) => Verdict::Tie,
                    (None, None) => Verdict::None,
                };
                let mut judge = judge_verdict(judged.get(&b.battle_id), place);
                if let Some(checks) = checks.get(&b.battle_id) {
                    let outcomes: Vec<_> = b
                        .finished
                        .iter()
                        .map(|(cid, _)| checks.get(cid).copied().unwrap_or(CheckOutcome::None))
                        .collect();
                    judge = crate::check_outcome::decides(judge, &outcomes);
                }
                BattleOutcome {
                    battle_id: b.battle_id,
                    battle_type: b.battle_type,
                    entries: b.finished.into_iter().map(|(_, entry)| entry).collect(),
                    user,
                    judge,
                }
            })
            .collect();
        let options = Options {
            battle_type: query.battle_type,
            source: query.source,
        };
        Ok(
            tokio::task::spawn_blocking(move || crate::leaderboard::compute(&outcomes, &options))
                .await?,
        )
    }
}

/// Each Coding battle's check outcomes by contestant id, for those
/// battles where some contestant's check passed or failed (the check rule
/// of the leaderboard, `[coding] check_decides`).
fn coding_checks(
    s: &crate::store::Store,
    battles: &[crate::store::RankedBattle],
) -> Result<HashMap<String, HashMap<String, CheckOutcome>>> {
    let mut out = HashMap::new();
    for b in battles.iter().filter(|b| b.battle_type.has_worktrees()) {
        let battle = s.battle(&b.battle_id)?;
        let outcomes: HashMap<String, CheckOutcome> = battle
            .contestants
            .iter()
            .map(|c| (c.id.clone(), CheckOutcome::of(c.check.as_ref())))
            .collect();
        if outcomes
            .values()
            .any(|o| matches!(o, CheckOutcome::Passed | CheckOutcome::Failed))
        {
            out.insert(b.battle_id.clone(), outcomes);
        }
    }
    Ok(out)
}

fn user_winner(contestant_id: &str) -> Winner {
    Winner {
        contestant_id: contestant_id.to_string(),
        source: WinnerSource::User,
    }
}

/// The judge's verdict from the newest analysis: its winner (found among
/// the finished contestants by `place`), or a tie for "no clear winner".
fn judge_verdict(
    analysis: Option<&(crate::analysis::Outcome, Option<String>)>,
    place: impl Fn(&str) -> Option<usize>,
) -> Verdict {
    use crate::analysis::Outcome;
    match analysis {
        Some((Outcome::Winner | Outcome::Walkover, Some(w))) => {
            place(w).map_or(Verdict::None, Verdict::Winner)
        }
        Some((Outcome::NoClearWinner, _)) => Verdict::Tie,
        _ => Verdict::None,
    }
}
