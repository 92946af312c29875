//! The event journal: each battle's events numbered by `seq`, journaled in
//! the transaction that made the change and broadcast after it commits.

use crate::sql::params;
use chrono::{DateTime, Utc};
use tokio::sync::broadcast;

use arena_domain::battle::Contestant;
use arena_domain::event::{BattleEvent, EventKind};

use crate::contestants::AnswerEnd;
use crate::error::Result;
use crate::rows::{self, ms, FROM_ROW};
use crate::{Store, Tx};

impl Store {
    /// Live events of every battle, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<BattleEvent> {
        self.events.subscribe()
    }

    /// Whether anyone in this process follows events live.
    pub fn watched(&self) -> bool {
        self.events.receiver_count() > 0
    }

    /// Journaled events with `seq > since_seq`, at most `limit`.
    pub fn events_since(
        &self,
        battle_id: &str,
        since_seq: u64,
        limit: usize,
    ) -> Result<Vec<BattleEvent>> {
        self.query(|c| rows::events_since(c, battle_id, since_seq, limit))
    }
}

impl Tx<'_> {
    /// Journals an event with the battle's next sequence number.
    pub fn emit(
        &mut self,
        battle_id: &str,
        contestant_id: Option<&str>,
        at: DateTime<Utc>,
        kind: EventKind,
    ) -> Result<BattleEvent> {
        self.emit_as(battle_id, contestant_id, at, kind, None, false)
    }

    /// [`Tx::emit`] into the live journal (see [`crate::live`]): for an
    /// answer's deltas, which [`Tx::end_answer`] removes when it ends.
    pub fn emit_live(
        &mut self,
        battle_id: &str,
        contestant_id: Option<&str>,
        at: DateTime<Utc>,
        kind: EventKind,
    ) -> Result<BattleEvent> {
        self.emit_as(battle_id, contestant_id, at, kind, None, true)
    }

    /// Records a Q&A answer's end (as [`Tx::finish_contestant`] does,
    /// with its result file's path) and keeps it once, in its row, if it
    /// is still running; whether it was. Its deltas (`output`,
    /// `reasoning`, live benchmarks) and its earlier statuses leave the
    /// journal (what it waited for, its retries and resets stay: they are
    /// few and tell what happened). Its benchmark, its last status, its
    /// `folded` text and its `result_written` take the next sequence
    /// numbers, after every delta's, which viewers may have seen; the last
    /// of them is kept on the contestant's row (`end_seq`), and reading
    /// the journal fills the group from the row ([`rows::ANSWER_END`]), so
    /// a viewer replaying from any `seq` still rebuilds the final answer,
    /// the text and figures are kept once, and the end adds no row to the
    /// journal.
    pub fn end_answer(
        &mut self,
        c: &Contestant,
        end: &AnswerEnd<'_>,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        // Numbered after every delta, taken before they are deleted.
        let last = self.last_seq(&c.battle_id)?;
        if !self.record_end(c, end, at)? {
            return Ok(false);
        }
        self.run(
            "DELETE FROM events WHERE battle_id = ?1 AND contestant_id = ?2
               AND kind IN ('output', 'reasoning', 'contestant_status', 'benchmark')",
            params![c.battle_id, c.id],
        )?;
        self.run(
            "DELETE FROM live.events WHERE battle_id = ?1 AND contestant_id = ?2",
            params![c.battle_id, c.id],
        )?;
        let path = end.result_path.map(|p| p.to_string_lossy().into_owned());
        let mut kinds = vec![
            EventKind::Benchmark {
                benchmark: end.bench.clone(),
            },
            EventKind::ContestantStatus {
                status: end.status,
                error: end.error.map(str::to_string),
                attempt: c.attempts,
            },
            EventKind::Folded {
                output: end.output.to_string(),
                reasoning: end.reasoning.to_string(),
            },
        ];
        kinds.extend(path.map(|path| EventKind::ResultWritten { path }));
        let seq = last + kinds.len() as u64;
        self.seqs.insert(c.battle_id.clone(), seq);
        self.run(
            "UPDATE contestants SET end_seq = ?1, end_kinds = ?2 WHERE id = ?3",
            params![seq as i64, kinds.len() as i64, c.id],
        )?;
        for (i, kind) in kinds.into_iter().enumerate() {
            self.pending.push(BattleEvent {
                battle_id: c.battle_id.clone(),
                seq: last + 1 + i as u64,
                contestant_id: Some(c.id.clone()),
                at,
                kind,
            });
        }
        Ok(true)
    }

    /// Journals `kind`, which the contestant's row also holds (its result
    /// file's path), as a marker filled from the row on reading.
    pub(crate) fn emit_from_row(
        &mut self,
        battle_id: &str,
        contestant_id: &str,
        at: DateTime<Utc>,
        kind: EventKind,
    ) -> Result<BattleEvent> {
        self.emit_as(
            battle_id,
            Some(contestant_id),
            at,
            kind,
            Some(FROM_ROW),
            false,
        )
    }

    /// [`Tx::emit`], with `stored` as the journal's row instead of the
    /// event itself when given, in the live journal when `live`.
    fn emit_as(
        &mut self,
        battle_id: &str,
        contestant_id: Option<&str>,
        at: DateTime<Utc>,
        kind: EventKind,
        stored: Option<&str>,
        live: bool,
    ) -> Result<BattleEvent> {
        let payload = match stored {
            Some(stored) => stored.to_string(),
            None => serde_json::to_string(&kind)?,
        };
        let seq = self.last_seq(battle_id)? + 1;
        self.seqs.insert(battle_id.to_string(), seq);
        let insert = if live {
            "INSERT INTO live.events (battle_id, seq, contestant_id, at, kind, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        } else {
            "INSERT INTO events (battle_id, seq, contestant_id, at, kind, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        };
        self.run(
            insert,
            params![
                battle_id,
                seq as i64,
                contestant_id,
                ms(at),
                kind.name(),
                payload
            ],
        )?;
        let event = BattleEvent {
            battle_id: battle_id.to_string(),
            seq,
            contestant_id: contestant_id.map(str::to_string),
            at,
            kind,
        };
        self.pending.push(event.clone());
        Ok(event)
    }

    /// The battle's next `seq`, for an event its own row keeps (see
    /// [`Tx::numbered_on_row`]); nothing is taken yet.
    pub(crate) fn next_seq(&mut self, battle_id: &str) -> Result<u64> {
        Ok(self.last_seq(battle_id)? + 1)
    }

    /// Takes `seq` (from [`Tx::next_seq`]) for `kind`, which a row now
    /// keeps instead of the journal: numbered and broadcast like any other
    /// event, filled from that row on reading.
    pub(crate) fn numbered_on_row(
        &mut self,
        battle_id: &str,
        seq: u64,
        at: DateTime<Utc>,
        kind: EventKind,
    ) {
        self.seqs.insert(battle_id.to_string(), seq);
        self.pending.push(BattleEvent {
            battle_id: battle_id.to_string(),
            seq,
            contestant_id: None,
            at,
            kind,
        });
    }

    /// The battle's last `seq` as this transaction numbers its events. The
    /// first time, it is read from the journal, with the battle's row locked
    /// on PostgreSQL, so that two processes numbering the same battle take
    /// turns (SQLite's immediate transaction already serialises writers).
    fn last_seq(&mut self, battle_id: &str) -> Result<u64> {
        if let Some(seq) = self.seqs.get(battle_id) {
            return Ok(*seq);
        }
        self.db().lock_row("battles", battle_id)?;
        let last = rows::last_seq(self.db(), battle_id)?;
        self.seqs.insert(battle_id.to_string(), last);
        Ok(last)
    }
}
