//! The event journal: each battle's events numbered by `seq`, journaled in
//! the transaction that made the change and broadcast after it commits.

use crate::sql::params;
use chrono::{DateTime, Utc};
use tokio::sync::broadcast;

use arena_domain::battle::Contestant;
use arena_domain::event::{BattleEvent, EventKind};

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
    /// answer's deltas, which [`Tx::fold_answer`] removes when it ends.
    pub fn emit_live(
        &mut self,
        battle_id: &str,
        contestant_id: Option<&str>,
        at: DateTime<Utc>,
        kind: EventKind,
    ) -> Result<BattleEvent> {
        self.emit_as(battle_id, contestant_id, at, kind, None, true)
    }

    /// Keeps a finished Q&A contestant once, in its row: its deltas
    /// (`output`, `reasoning`) and its earlier statuses leave the journal
    /// (what it waited for, its retries and resets stay: they are few and
    /// tell what happened); its last status and its benchmark stay as
    /// markers (see [`FROM_ROW`]); and one `folded` marker takes the next
    /// sequence number. Reading the journal
    /// fills the markers from the contestant's row, where the answer is
    /// kept (so call this in the transaction that records the answer). A
    /// viewer replaying from any `seq` still rebuilds the final answer.
    pub fn fold_answer(
        &mut self,
        c: &Contestant,
        output: &str,
        reasoning: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.require_lease(&c.battle_id)?;
        // The fold takes a number after every delta's, which viewers may
        // have seen: taken before they are deleted.
        self.last_seq(&c.battle_id)?;
        self.run(
            "DELETE FROM events WHERE battle_id = ?1 AND contestant_id = ?2
               AND (kind IN ('output', 'reasoning')
                    OR (kind = 'contestant_status' AND seq < (
                        SELECT MAX(seq) FROM events
                        WHERE battle_id = ?1 AND contestant_id = ?2 AND kind = 'contestant_status')))",
            params![c.battle_id, c.id],
        )?;
        self.run(
            "UPDATE events SET payload = ?3 WHERE battle_id = ?1 AND contestant_id = ?2
               AND kind IN ('contestant_status', 'benchmark')",
            params![c.battle_id, c.id, FROM_ROW],
        )?;
        self.run(
            "DELETE FROM live.events WHERE battle_id = ?1 AND contestant_id = ?2",
            params![c.battle_id, c.id],
        )?;
        let kind = EventKind::Folded {
            output: output.to_string(),
            reasoning: reasoning.to_string(),
        };
        self.emit_as(&c.battle_id, Some(&c.id), at, kind, Some(FROM_ROW), false)?;
        Ok(())
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
