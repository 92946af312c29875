//! Lanes: the queue of tickets every process takes its turn through, the
//! slots granted, the start rate's grants, and why a contestant waits.

use chrono::{DateTime, Utc};

use crate::sql::params;

use arena_domain::decisions::{self, LaneSpec, LaneVerdict, Lease, Ticket, Turn};
use arena_domain::event::EventKind;

use crate::error::Result;
use crate::rows;
use crate::{Store, Tx};

/// What [`Tx::take_turn`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum TakeTurn {
    /// The slot is ours; `previous_model` is what the lane served before.
    Granted {
        previous_model: Option<String>,
    },
    Wait(Turn),
    /// The ticket is gone (its lease expired while this process stalled).
    Lost,
}

/// A ticket to enqueue (see [`Tx::enqueue_ticket`]).
#[derive(Debug, Clone)]
pub struct NewTicket<'a> {
    pub lane: &'a str,
    pub ready_at_ms: i64,
    pub position: u32,
    pub holder: &'a str,
    pub battle_id: Option<&'a str>,
    pub contestant_id: Option<&'a str>,
    pub model: &'a str,
    pub lease: &'a Lease,
}

impl Store {
    /// A lane's tickets (holding and waiting) and its starts of the last
    /// minute, read without taking the write lock: waiters poll this, and
    /// write only when it says their turn may have come.
    pub fn lane_queue(&self, lane: &str, now_ms: i64) -> Result<(Vec<Ticket>, Vec<i64>)> {
        self.query(|c| Ok((rows::tickets(c, lane)?, rows::lane_starts(c, lane, now_ms)?)))
    }
}

impl Tx<'_> {
    /// Locks the lanes `lanes` for the rest of the transaction, in one
    /// order (sorted): a transaction that decides on several lanes (a
    /// battle's contestants joining, the journal's grouped turns) takes
    /// their locks first, so that two machines never wait for each other
    /// in a circle (PostgreSQL; nothing on SQLite).
    pub fn lock_lanes<'l>(&mut self, lanes: impl IntoIterator<Item = &'l str>) -> Result<()> {
        let mut lanes: Vec<&str> = lanes.into_iter().collect();
        lanes.sort_unstable();
        lanes.dedup();
        for lane in lanes {
            self.db().lock_name(lane)?;
        }
        Ok(())
    }

    /// Joins a lane's queue; returns the ticket's id.
    pub fn enqueue_ticket(&mut self, t: &NewTicket<'_>) -> Result<i64> {
        // A grant being decided finishes first, and the next one sees this
        // ticket (PostgreSQL; see `take_turn`): first come, first served
        // holds exactly across machines.
        self.db().lock_name(t.lane)?;
        self.db().insert_returning_id(
            "INSERT INTO live.lane_tickets (lane, ready_at, position, holder, battle_id, contestant_id, model, owner, host, pid, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) RETURNING id",
            params![
                t.lane,
                t.ready_at_ms,
                i64::from(t.position),
                t.holder,
                t.battle_id,
                t.contestant_id,
                t.model,
                t.lease.owner,
                t.lease.host,
                i64::from(t.lease.pid),
                t.lease.expires_at_ms
            ],
        )
    }

    /// Takes a slot of the lane for `ticket` if it is its turn, as
    /// [`decisions::lane_decision`] decides: tickets of processes that are
    /// gone are dropped first. A granted slot records the start (for the
    /// start rate) and the lane's model.
    pub fn take_turn(
        &mut self,
        ticket: i64,
        spec: &LaneSpec,
        model: &str,
        now_ms: i64,
        my_host: &str,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<TakeTurn> {
        // Processes deciding on one lane take turns (PostgreSQL; see
        // `Conn::lock_name`): each sees the grants before it.
        self.db().lock_name(&spec.key)?;
        let tickets = rows::tickets(self.db(), &spec.key)?;
        let starts = rows::lane_starts(self.db(), &spec.key, now_ms)?;
        let decision =
            decisions::lane_decision(tickets, ticket, spec, &starts, now_ms, my_host, pid_alive);
        for t in &decision.stale {
            tracing::info!(lane = %spec.key, holder = %t.holder, pid = t.lease.pid, "dropping the lane ticket of a process that is gone");
            self.run("DELETE FROM live.lane_tickets WHERE id = ?1", params![t.id])?;
        }
        if !decision.stale.is_empty() {
            self.db().notify(crate::team::LANE_CHANNEL, &spec.key)?;
        }
        match decision.verdict {
            LaneVerdict::Lost => return Ok(TakeTurn::Lost),
            LaneVerdict::Turn(Turn::Go) => {}
            LaneVerdict::Turn(wait) => return Ok(TakeTurn::Wait(wait)),
        }
        self.run(
            "UPDATE live.lane_tickets SET granted_at = ?1 WHERE id = ?2",
            params![now_ms, ticket],
        )?;
        let previous_model: Option<String> = self
            .db()
            .opt_row(
                "SELECT last_model FROM live.lanes WHERE lane = ?1",
                params![spec.key],
                |r| r.get(0),
            )?
            .flatten();
        self.run(
            "INSERT INTO live.lanes (lane, last_model) VALUES (?1, ?2)
             ON CONFLICT (lane) DO UPDATE SET last_model = ?2",
            params![spec.key, model],
        )?;
        if spec.requests_per_minute.is_some() {
            self.run(
                "DELETE FROM live.lane_grants WHERE lane = ?1 AND at <= ?2",
                params![spec.key, now_ms - 60_000],
            )?;
            self.run(
                "INSERT INTO live.lane_grants (lane, at) VALUES (?1, ?2)",
                params![spec.key, now_ms],
            )?;
        }
        Ok(TakeTurn::Granted { previous_model })
    }

    /// Leaves a lane: gives back the slot, or the place in the queue. The
    /// lane's waiters on other machines are told at once (team database).
    pub fn release_ticket(&mut self, ticket: i64) -> Result<()> {
        let lane: Option<String> = self.db().opt_row(
            "DELETE FROM live.lane_tickets WHERE id = ?1 RETURNING lane",
            params![ticket],
            |r| r.get(0),
        )?;
        if let Some(lane) = lane {
            self.db().notify(crate::team::LANE_CHANNEL, &lane)?;
        }
        Ok(())
    }

    /// Extends the leases of every ticket this process holds or waits with.
    pub fn renew_tickets(&mut self, owner: &str, expires_at_ms: i64) -> Result<()> {
        self.run(
            "UPDATE live.lane_tickets SET expires_at = ?1 WHERE owner = ?2",
            params![expires_at_ms, owner],
        )?;
        Ok(())
    }

    /// Records why a queued contestant waits (`None`: it no longer does),
    /// announcing it when it changed.
    pub fn set_waiting(
        &mut self,
        battle_id: &str,
        contestant_id: &str,
        reason: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.require_lease(battle_id)?;
        let changed = self.run(
            "UPDATE contestants SET waiting = ?1
             WHERE id = ?2 AND status = 'queued' AND waiting IS DISTINCT FROM ?1",
            params![reason, contestant_id],
        )?;
        if changed == 1 {
            self.emit(
                battle_id,
                Some(contestant_id),
                at,
                EventKind::Waiting {
                    reason: reason.map(str::to_string),
                },
            )?;
        }
        Ok(())
    }
}
