//! Contestants and their refinement rounds. Every write of a contestant
//! checks the battle's lease first ([`Tx::require_lease`]): only the
//! process driving the battle changes what its contestants did.

use std::path::Path;

use crate::sql::params;
use chrono::{DateTime, Utc};

use arena_domain::battle::{
    Benchmark, CheckResult, Contestant, ContestantStatus, DiffSummary, Round,
};
use arena_domain::event::EventKind;

use crate::error::{Error, Result};
use crate::packed;
use crate::rows::{self, ms};
use crate::{Store, Tx};

/// How a run ended, as recorded by [`Tx::end_answer`] (and, without a
/// result file, [`Tx::finish_contestant`]).
#[derive(Debug, Clone, Copy)]
pub struct AnswerEnd<'a> {
    /// `done`, `error` or `cancelled`.
    pub status: ContestantStatus,
    pub error: Option<&'a str>,
    pub output: &'a str,
    pub reasoning: &'a str,
    pub truncated: bool,
    pub bench: &'a Benchmark,
    /// Its `result.md`, written before its end is recorded.
    pub result_path: Option<&'a Path>,
}

impl Store {
    /// A contestant's refinement rounds (2, 3, …), in order.
    pub fn rounds(&self, contestant_id: &str) -> Result<Vec<Round>> {
        self.query(|c| rows::rounds(c, contestant_id))
    }
}

impl Store {
    /// A Coding contestant's diff of round `round` (1: its own run), when
    /// recorded (battles from before migration 018 have theirs only in
    /// their results folder).
    pub fn patch(&self, contestant_id: &str, round: u32) -> Result<Option<String>> {
        self.query(|c| {
            let packed = c.opt_row(
                "SELECT patch FROM patches WHERE contestant_id = ?1 AND round = ?2",
                params![contestant_id, i64::from(round)],
                |r| r.text_or_bytes(0),
            )?;
            packed::unpack(packed.flatten())
                .map_err(|e| Error::Inconsistent(format!("the patch of {contestant_id}: {e}")))
        })
    }
}

impl Tx<'_> {
    /// Keeps a Coding contestant's diff of round `round` (a round run
    /// again replaces it), deflated when that pays, as answers are
    /// ([`packed`]): a patch is code and its context, and a patch of many
    /// files repeats its headers.
    pub fn put_patch(&mut self, contestant_id: &str, round: u32, patch: &str) -> Result<()> {
        self.run(
            "INSERT INTO patches (contestant_id, round, patch) VALUES (?1, ?2, ?3)
             ON CONFLICT (contestant_id, round) DO UPDATE SET patch = ?3",
            params![
                contestant_id,
                i64::from(round),
                packed::pack_for(self.db(), patch)
            ],
        )?;
        Ok(())
    }

    pub fn contestant(&self, id: &str) -> Result<Contestant> {
        rows::contestant(self.db(), id)?.ok_or_else(|| Error::not_found("contestant", id))
    }

    pub fn contestants(&self, battle_id: &str) -> Result<Vec<Contestant>> {
        rows::contestants(self.db(), battle_id)
    }

    /// Moves a contestant to `to` if it is still in `from`; returns whether it
    /// moved. Emits the status event.
    pub fn move_contestant(
        &mut self,
        c: &Contestant,
        from: ContestantStatus,
        to: ContestantStatus,
        error: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        self.move_as(c, from, to, error, at, false)
    }

    /// Starts a Q&A answer (`queued` → `running`), its status event in the
    /// live journal with the answer's deltas: the answer's end keeps only
    /// its last status (see [`Tx::end_answer`]), so its start is never
    /// written to the kept journal at all.
    pub fn start_answer(&mut self, c: &Contestant, at: DateTime<Utc>) -> Result<bool> {
        let (queued, running) = (ContestantStatus::Queued, ContestantStatus::Running);
        self.move_as(c, queued, running, None, at, true)
    }

    fn move_as(
        &mut self,
        c: &Contestant,
        from: ContestantStatus,
        to: ContestantStatus,
        error: Option<&str>,
        at: DateTime<Utc>,
        live: bool,
    ) -> Result<bool> {
        self.require_lease(&c.battle_id)?;
        let attempts_inc = i64::from(to == ContestantStatus::Running);
        let finished_at = to.is_terminal().then(|| ms(at));
        let changed = self.run(
            "UPDATE contestants SET status = ?1, error = ?2, attempts = attempts + ?3,
                started_at = CASE WHEN ?1 = 'running' THEN ?4 ELSE started_at END,
                finished_at = ?5, waiting = NULL
             WHERE id = ?6 AND status = ?7",
            params![
                to.as_str(),
                error,
                attempts_inc,
                ms(at),
                finished_at,
                c.id,
                from.as_str()
            ],
        )?;
        if changed == 1 {
            let kind = EventKind::ContestantStatus {
                status: to,
                error: error.map(str::to_string),
                attempt: c.attempts + attempts_inc as u32,
            };
            if live {
                self.emit_live(&c.battle_id, Some(&c.id), at, kind)?;
            } else {
                self.emit(&c.battle_id, Some(&c.id), at, kind)?;
            }
        }
        Ok(changed == 1)
    }

    /// Records the end of a run — `done`, `error` or `cancelled` — with its
    /// output and benchmark, if the contestant is still running.
    #[allow(clippy::too_many_arguments)]
    pub fn finish_contestant(
        &mut self,
        c: &Contestant,
        status: ContestantStatus,
        error: Option<&str>,
        output: &str,
        reasoning: &str,
        truncated: bool,
        bench: &Benchmark,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        let end = AnswerEnd {
            status,
            error,
            output,
            reasoning,
            truncated,
            bench,
            result_path: None,
        };
        if !self.record_end(c, &end, at)? {
            return Ok(false);
        }
        self.emit(
            &c.battle_id,
            Some(&c.id),
            at,
            EventKind::Benchmark {
                benchmark: bench.clone(),
            },
        )?;
        self.emit(
            &c.battle_id,
            Some(&c.id),
            at,
            EventKind::ContestantStatus {
                status,
                error: error.map(str::to_string),
                attempt: c.attempts,
            },
        )?;
        Ok(true)
    }

    /// Records `end` in the contestant's row and its answer's text, if it
    /// is still running; whether it was. Journals nothing.
    pub(crate) fn record_end(
        &mut self,
        c: &Contestant,
        end: &AnswerEnd<'_>,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        let AnswerEnd {
            status,
            error,
            output,
            reasoning,
            truncated,
            bench,
            result_path,
        } = *end;
        self.require_lease(&c.battle_id)?;
        let changed = self.run(
            "UPDATE contestants SET status = ?1, error = ?2, finished_at = ?3,
                truncated = ?4, duration_ms = ?5, ttft_ms = ?6, prompt_tokens = ?7,
                completion_tokens = ?8, cached_tokens = ?9, tokens_per_sec = ?10, rate_source = ?11,
                prompt_per_sec = ?12, model_switched = ?13, cost_usd = ?14,
                result_path = COALESCE(?16, result_path)
             WHERE id = ?15 AND status = 'running'",
            params![
                status.as_str(),
                error,
                ms(at),
                truncated,
                bench.duration_ms.map(|v| v as i64),
                bench.ttft_ms.map(|v| v as i64),
                bench.prompt_tokens.map(|v| v as i64),
                bench.completion_tokens.map(|v| v as i64),
                bench.cached_tokens.map(|v| v as i64),
                bench.tokens_per_sec,
                bench.rate_source.map(|s| s.as_str()),
                bench.prompt_per_sec,
                bench.model_switched,
                bench.cost_usd,
                c.id,
                result_path.map(|p| p.to_string_lossy().into_owned())
            ],
        )?;
        if changed == 1 {
            // The answer's text, in one row written once (see migration 014).
            self.run(
                "INSERT INTO answers (contestant_id, output, output_chars, reasoning) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (contestant_id) DO UPDATE SET output = excluded.output,
                    output_chars = excluded.output_chars, reasoning = excluded.reasoning",
                params![
                    c.id,
                    packed::pack_for(self.db(), output),
                    output.chars().count() as i64,
                    (!reasoning.is_empty()).then(|| packed::pack_for(self.db(), reasoning))
                ],
            )?;
        }
        Ok(changed == 1)
    }

    pub fn set_result_path(
        &mut self,
        c: &Contestant,
        path: &Path,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.require_lease(&c.battle_id)?;
        let text = path.to_string_lossy();
        self.run(
            "UPDATE contestants SET result_path = ?1 WHERE id = ?2",
            params![text, c.id],
        )?;
        self.emit_from_row(
            &c.battle_id,
            &c.id,
            at,
            EventKind::ResultWritten {
                path: text.into_owned(),
            },
        )?;
        Ok(())
    }

    /// Records the worktree a Coding contestant works in (Arena created it;
    /// later reads of the contestant's changes start from this path).
    pub fn set_worktree(&mut self, c: &Contestant, path: &Path) -> Result<()> {
        self.require_lease(&c.battle_id)?;
        self.run(
            "UPDATE contestants SET worktree = ?1 WHERE id = ?2",
            params![path.to_string_lossy(), c.id],
        )?;
        Ok(())
    }

    /// Records what a Coding contestant changed and how its check went
    /// (`None` clears either), just before [`Tx::finish_contestant`].
    pub fn set_diff_and_check(
        &mut self,
        c: &Contestant,
        diff: Option<&DiffSummary>,
        check: Option<&CheckResult>,
    ) -> Result<()> {
        self.require_lease(&c.battle_id)?;
        self.run(
            "UPDATE contestants SET diff_stats = ?1, check_result = ?2 WHERE id = ?3",
            params![
                diff.map(serde_json::to_string).transpose()?,
                check.map(serde_json::to_string).transpose()?,
                c.id
            ],
        )?;
        Ok(())
    }

    /// Starts refinement round `number` of a contestant.
    pub fn insert_round(&mut self, battle_id: &str, round: &Round) -> Result<()> {
        self.require_lease(battle_id)?;
        self.run(
            "INSERT INTO rounds (id, contestant_id, number, feedback, status, created_at) VALUES (?1, ?2, ?3, ?4, 'running', ?5)",
            params![round.id, round.contestant_id, i64::from(round.number), round.feedback, ms(round.created_at)],
        )?;
        self.emit(
            battle_id,
            Some(&round.contestant_id),
            round.created_at,
            EventKind::Round {
                number: round.number,
                status: None,
                feedback: Some(round.feedback.clone()),
            },
        )?;
        Ok(())
    }

    pub fn finish_round(
        &mut self,
        battle_id: &str,
        round: &Round,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.require_lease(battle_id)?;
        self.run(
            "UPDATE rounds SET status = ?1, output = ?2, error = ?3, diff_stats = ?4, check_result = ?5,
                duration_ms = ?6, result_path = ?7, finished_at = ?8, cost_usd = ?10 WHERE id = ?9",
            params![
                round.status.map(|s| s.as_str()).unwrap_or("running"),
                round.output,
                round.error,
                round.diff.as_ref().map(serde_json::to_string).transpose()?,
                round.check.as_ref().map(serde_json::to_string).transpose()?,
                round.duration_ms.map(|v| v as i64),
                round.result_path.as_ref().map(|p| p.to_string_lossy().into_owned()),
                ms(at),
                round.id,
                round.cost_usd
            ],
        )?;
        self.emit(
            battle_id,
            Some(&round.contestant_id),
            at,
            EventKind::Round {
                number: round.number,
                status: round.status,
                feedback: None,
            },
        )?;
        Ok(())
    }
}
