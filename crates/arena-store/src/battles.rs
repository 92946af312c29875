//! Battles: their rows and pages, the history's queries, the verdict (the
//! winner, the user's vote, the reveal of a blind battle) and tags.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::sql::params;

use arena_domain::analysis::Analysis;
use arena_domain::battle::{
    Battle, BattleQuery, BattleStatus, ContestantStatus, Lane, Round, RunSpec, UserVerdict, Winner,
    WinnerSource,
};
use arena_domain::cross_exam::CrossExamination;
use arena_domain::decisions;
use arena_domain::event::EventKind;

use crate::error::{Error, Result};
use crate::rows::{self, ms, RankFilter, RankedBattle};
use crate::{Store, Tx};

/// A new contestant row.
#[derive(Debug, Clone)]
pub struct NewContestant {
    pub id: String,
    pub identity: String,
    pub model: String,
    pub provider: String,
    pub lane: Lane,
    pub run: RunSpec,
    /// In a blind battle: its letter (A, B, …).
    pub label: Option<String>,
}

/// A new battle row with its contestants.
#[derive(Debug, Clone)]
pub struct NewBattle {
    pub id: String,
    pub battle_type: arena_domain::battle::BattleType,
    pub prompt: String,
    pub project: PathBuf,
    pub results_path: PathBuf,
    pub created_at: DateTime<Utc>,
    pub contestants: Vec<NewContestant>,
    pub base_commit: Option<String>,
    pub check_command: Option<String>,
    /// A series' battle: the series and its place in it.
    pub series: Option<(String, u64)>,
    pub blind: bool,
    pub tags: Vec<String>,
    /// The machine that runs it (`battles.machine`).
    pub machine: Option<String>,
    /// The OS user who starts it (`battles.user_name`).
    pub user_name: Option<String>,
}

/// A battle as the battle view shows it (see [`Store::battle_detail`]).
#[derive(Debug, Clone)]
pub struct BattleDetail {
    pub battle: Battle,
    pub analysis: Option<Analysis>,
    pub cross_examinations: Vec<CrossExamination>,
    /// Refinement rounds by contestant id (every contestant has an entry).
    pub rounds: BTreeMap<String, Vec<Round>>,
    /// The battle's newest event when this was read (0 when none).
    pub last_seq: u64,
}

impl Store {
    pub fn battle(&self, id: &str) -> Result<Battle> {
        self.query(|c| rows::battle(c, id))?
            .ok_or_else(|| Error::not_found("battle", id))
    }

    /// Battles, newest first, without contestants' outputs.
    pub fn battles(&self, limit: usize) -> Result<Vec<Battle>> {
        Ok(self.battle_page(&BattleQuery::newest(limit))?.0)
    }

    /// A page of the battles `query` selects, newest first (`created_at`,
    /// then `id`, descending), without contestants' outputs and run specs
    /// (default), and how many
    /// battles it selects in all (read in one transaction).
    pub fn battle_page(&self, query: &BattleQuery) -> Result<(Vec<Battle>, u64)> {
        self.snapshot(|c| rows::battle_page(c, query))
    }

    /// Every finished battle (of `battle_type`, if given), newest first,
    /// with its finished contestants: what the leaderboard ranks.
    pub fn ranked_battles(&self, filter: &RankFilter) -> Result<Vec<RankedBattle>> {
        self.query(|c| rows::ranked_battles(c, filter))
    }

    pub fn battle_count(&self) -> Result<u64> {
        self.query(|c| {
            Ok(
                c.row("SELECT COUNT(*) FROM battles", &[], |r| r.get::<i64>(0))?
                    .max(0) as u64,
            )
        })
    }

    /// The full id of the battle whose id is, starts with, or ends with
    /// `key` (the short name of `battle::short_id`).
    pub fn resolve_battle_id(&self, key: &str) -> Result<String> {
        self.resolve_id("battle", key)
    }

    /// Ids of battles still marked running, oldest first.
    pub fn running_battles(&self) -> Result<Vec<String>> {
        self.query(|c| {
            c.rows(
                "SELECT id FROM battles WHERE status = 'running' ORDER BY created_at",
                &[],
                |r| r.get(0),
            )
        })
    }

    /// Everything the battle view shows, read in one transaction, with the
    /// `seq` of the battle's newest event at that moment: a viewer applies
    /// state events only when newer than that.
    pub fn battle_detail(&self, id: &str) -> Result<BattleDetail> {
        self.snapshot(|db| {
            let battle = rows::battle(db, id)?.ok_or_else(|| Error::not_found("battle", id))?;
            let mut rounds = BTreeMap::new();
            for c in &battle.contestants {
                rounds.insert(c.id.clone(), rows::rounds(db, &c.id)?);
            }
            Ok(BattleDetail {
                analysis: rows::latest_analysis(db, id)?,
                cross_examinations: rows::cross_examinations(db, id)?,
                rounds,
                last_seq: rows::last_seq(db, id)?,
                battle,
            })
        })
    }
}

impl Tx<'_> {
    /// Whether the battle is blind and not revealed yet, as this
    /// transaction sees it (a reveal waits for it on PostgreSQL once the
    /// battle's row is locked, as numbering its events does).
    pub fn is_masked(&mut self, battle_id: &str) -> Result<bool> {
        self.db()
            .opt_row(
                "SELECT b.blind = TRUE AND b.revealed_at IS NULL FROM battles b WHERE b.id = ?1",
                params![battle_id],
                |r| r.get::<bool>(0),
            )?
            .ok_or_else(|| Error::not_found("battle", battle_id))
    }

    /// Records a new battle, `running`, and its contestants, `queued`. Its
    /// first event (its status) is numbered on its row (`start_seq`).
    pub fn insert_battle(&mut self, b: &NewBattle) -> Result<()> {
        let seq = self.next_seq(&b.id)?;
        self.run(
            "INSERT INTO battles (id, battle_type, status, prompt, project_path, results_path, created_at, base_commit, check_command, series_id, series_slot, blind, machine, user_name, start_seq)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                b.id,
                b.battle_type.as_str(),
                b.prompt,
                b.project.to_string_lossy(),
                b.results_path.to_string_lossy(),
                ms(b.created_at),
                b.base_commit,
                b.check_command,
                b.series.as_ref().map(|(id, _)| id),
                b.series.as_ref().map(|(_, slot)| *slot as i64),
                b.blind,
                b.machine,
                b.user_name,
                seq as i64
            ],
        )?;
        self.numbered_on_row(
            &b.id,
            seq,
            b.created_at,
            EventKind::BattleStatus {
                status: BattleStatus::Running,
            },
        );
        self.write_tags(&b.id, &b.tags)?;
        for (position, c) in b.contestants.iter().enumerate() {
            let spec = serde_json::to_string(&c.run)?;
            self.run(
                "INSERT INTO run_specs (spec) VALUES (?1) ON CONFLICT DO NOTHING",
                params![spec],
            )?;
            self.run(
                "INSERT INTO contestants (id, battle_id, position, identity, model, provider, lane, status, run_spec_id, label)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', (SELECT id FROM run_specs WHERE spec = ?8), ?9)",
                params![
                    c.id,
                    b.id,
                    position as i64,
                    c.identity,
                    c.model,
                    c.provider,
                    c.lane.as_str(),
                    spec,
                    c.label
                ],
            )?;
        }
        Ok(())
    }

    /// Moves a running battle to `machine` (a Coding battle taken over
    /// from a worker that died elsewhere): its project (this machine's
    /// folder or clone of it) and results folder are the new machine's.
    /// False when it is no longer running.
    pub fn rehome_battle(
        &mut self,
        battle_id: &str,
        project: &Path,
        results_path: &Path,
        machine: &str,
    ) -> Result<bool> {
        let n = self.run(
            "UPDATE battles SET project_path = ?2, results_path = ?3, machine = ?4
             WHERE id = ?1 AND status = 'running'",
            params![
                battle_id,
                project.to_string_lossy(),
                results_path.to_string_lossy(),
                machine
            ],
        )?;
        Ok(n == 1)
    }

    /// Marks the battle finished (if it is still running). Its status
    /// event is numbered on its row (`end_seq`).
    pub fn finish_battle(
        &mut self,
        battle_id: &str,
        status: BattleStatus,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        self.require_lease(battle_id)?;
        let seq = self.next_seq(battle_id)?;
        let changed = self.run(
            "UPDATE battles SET status = ?1, finished_at = ?2, end_seq = ?4
             WHERE id = ?3 AND status = 'running'",
            params![status.as_str(), ms(at), battle_id, seq as i64],
        )?;
        if changed == 1 {
            self.numbered_on_row(battle_id, seq, at, EventKind::BattleStatus { status });
        }
        Ok(changed == 1)
    }

    /// Ends the battle if every contestant has ended, with the status
    /// they make (as the engine's drive would once its tasks are done),
    /// in this transaction: a Q&A battle's last answer and the battle's
    /// end are then one write. The status it ended with, if it did.
    pub fn finish_if_over(
        &mut self,
        battle_id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<BattleStatus>> {
        let statuses = self.db().rows(
            "SELECT status FROM contestants WHERE battle_id = ?1",
            params![battle_id],
            |r| rows::parse::<ContestantStatus>(0, r.get(0)?),
        )?;
        let cancel_requested = self
            .db()
            .opt_row(
                "SELECT cancel_requested = TRUE FROM battles WHERE id = ?1",
                params![battle_id],
                |r| r.get::<bool>(0),
            )?
            .ok_or_else(|| Error::not_found("battle", battle_id))?;
        let Some(status) = decisions::battle_outcome(&statuses, cancel_requested) else {
            return Ok(None);
        };
        Ok(self.finish_battle(battle_id, status, at)?.then_some(status))
    }

    /// Records the repository a Coding battle takes its git objects from
    /// (a sealed base, [`Battle::source`]), in the transaction that
    /// inserted it.
    pub fn set_battle_source(&mut self, battle_id: &str, source: &Path) -> Result<()> {
        self.run(
            "UPDATE battles SET source_path = ?1 WHERE id = ?2",
            params![source.to_string_lossy(), battle_id],
        )?;
        Ok(())
    }

    /// Sets (or clears) the winner; the user's tie or "all bad" stays.
    pub fn set_winner(
        &mut self,
        battle_id: &str,
        winner: Option<&Winner>,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.set_verdict(battle_id, winner, false, at)
    }

    /// Records the user's verdict: a winner (`winner`, from the user), or
    /// a tie or "all bad" (`verdict`, and `winner` none), or neither (the
    /// analysis's winner, if any, is passed back in). `by` is the OS user
    /// giving it, kept as `voted_by` while the verdict is the user's (none
    /// when the choice is cleared). With `reveal`, a blind battle is
    /// revealed too (once); every viewer hears of it.
    pub fn set_vote(
        &mut self,
        battle_id: &str,
        winner: Option<&Winner>,
        verdict: Option<UserVerdict>,
        by: Option<&str>,
        reveal: bool,
        at: DateTime<Utc>,
    ) -> Result<()> {
        let users = verdict.is_some() || winner.is_some_and(|w| w.source == WinnerSource::User);
        self.run(
            "UPDATE battles SET user_verdict = ?1, voted_by = ?2 WHERE id = ?3",
            params![verdict.map(|v| v.as_str()), by.filter(|_| users), battle_id],
        )?;
        self.set_verdict(battle_id, winner, reveal, at)
    }

    fn set_verdict(
        &mut self,
        battle_id: &str,
        winner: Option<&Winner>,
        reveal: bool,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.run(
            "UPDATE battles SET winner_id = ?1, winner_source = ?2 WHERE id = ?3",
            params![
                winner.map(|w| w.contestant_id.as_str()),
                winner.map(|w| w.source.as_str()),
                battle_id
            ],
        )?;
        if reveal {
            self.reveal(battle_id, at)?;
        }
        self.emit(
            battle_id,
            None,
            at,
            EventKind::Winner {
                winner: winner.cloned(),
            },
        )?;
        Ok(())
    }

    pub fn battle_winner(&self, battle_id: &str) -> Result<Option<Winner>> {
        Ok(rows::battle(self.db(), battle_id)?.and_then(|b| b.winner))
    }

    /// Whether the user has decided the battle: chosen a winner, or voted
    /// a tie or "all bad". The analysis then no longer sets the winner.
    pub fn user_decided(&self, battle_id: &str) -> Result<bool> {
        Ok(self
            .db()
            .opt_row(
                "SELECT winner_source = 'user' OR user_verdict IS NOT NULL FROM battles WHERE id = ?1",
                params![battle_id],
                |r| r.get::<Option<bool>>(0),
            )?
            .flatten()
            .unwrap_or(false))
    }

    /// Reveals a blind battle (once): from now on viewers see its names.
    /// Returns whether this call revealed it.
    pub fn reveal(&mut self, battle_id: &str, at: DateTime<Utc>) -> Result<bool> {
        let changed = self.run(
            "UPDATE battles SET revealed_at = ?1 WHERE id = ?2 AND blind = TRUE AND revealed_at IS NULL",
            params![ms(at), battle_id],
        )?;
        if changed == 1 {
            self.emit(battle_id, None, at, EventKind::Revealed)?;
        }
        Ok(changed == 1)
    }

    /// Replaces a battle's tags (already normalised, see `blind::tags`).
    pub fn write_tags(&mut self, battle_id: &str, tags: &[String]) -> Result<()> {
        self.run(
            "DELETE FROM battle_tags WHERE battle_id = ?1",
            params![battle_id],
        )?;
        for tag in tags {
            self.run(
                "INSERT INTO battle_tags (battle_id, tag) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                params![battle_id, tag],
            )?;
        }
        Ok(())
    }
}
