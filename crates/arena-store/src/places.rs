//! Series places and the workers that take them. The series' driver opens
//! places; any worker (on any machine of a team) claims some, runs each
//! one's battle and marks it done. A claim is a lease: a worker that stops
//! renewing it loses the place to the next claimer (on its own machine at
//! once, when its process is gone). Claiming locks the rows it takes and
//! skips those another claimer holds (PostgreSQL's `FOR UPDATE SKIP
//! LOCKED`; SQLite's writers take turns anyway), so two workers never get
//! one place.

use arena_domain::decisions::{self, Lease};

use crate::error::{Error, Result};
use crate::sql::{params, Conn, Row, Value as SqlValue};
use crate::{Store, Tx};

/// Where a place of a series stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceState {
    /// Waiting for a worker.
    Open,
    /// A worker runs it (see [`Place::owner`]).
    Taken,
    /// Its battle ended and was recorded.
    Done,
    /// The series stopped (decided, budget, cancelled) before it ran.
    Dropped,
}

impl PlaceState {
    fn parse(text: &str) -> Result<PlaceState> {
        Ok(match text {
            "open" => PlaceState::Open,
            "taken" => PlaceState::Taken,
            "done" => PlaceState::Done,
            "dropped" => PlaceState::Dropped,
            other => return Err(Error::Inconsistent(format!("a place's state `{other}`"))),
        })
    }
}

/// One place of a series (the n-th battle).
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub series_id: String,
    pub slot: u64,
    pub state: PlaceState,
    /// The worker that holds it, while taken.
    pub owner: Option<String>,
    /// The machine of that worker.
    pub host: Option<String>,
    /// How many times it was claimed.
    pub attempts: u64,
}

/// A running process that serves places, as it last said so.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerBeat {
    /// The process (its lease owner id) and its loop: `OWNER/ROLE`.
    pub owner: String,
    pub machine: String,
    pub pid: u32,
    /// `worker` (`arena worker`, the app's switch) or `series` (the driver
    /// of `arena series run`, serving its own series only).
    pub role: String,
    pub user: Option<String>,
    /// Places it runs at most at once, and holds now.
    pub places: u64,
    pub taken: u64,
    pub started_at_ms: i64,
    pub seen_at_ms: i64,
}

const PLACE_COLUMNS: &str = "series_id, slot, state, owner, host, attempts";

fn place_row(r: &Row<'_>) -> Result<Place> {
    Ok(Place {
        series_id: r.get(0)?,
        slot: r.get::<i64>(1)?.max(0) as u64,
        state: PlaceState::parse(&r.get::<String>(2)?)?,
        owner: r.get(3)?,
        host: r.get(4)?,
        attempts: r.get::<i64>(5)?.max(0) as u64,
    })
}

/// Row locking for a claim: PostgreSQL locks what it takes and skips what
/// another claimer has locked; SQLite's writers take turns.
fn skip_locked(c: Conn<'_>) -> &'static str {
    if c.is_postgres() {
        // Only the places' rows: the series' row is read, not claimed.
        " FOR UPDATE OF p SKIP LOCKED"
    } else {
        ""
    }
}

impl Store {
    /// Every place of a series, by slot.
    pub fn places(&self, series_id: &str) -> Result<Vec<Place>> {
        self.query(|c| {
            c.rows(
                &format!(
                    "SELECT {PLACE_COLUMNS} FROM series_places WHERE series_id = ?1 ORDER BY slot"
                ),
                params![series_id],
                place_row,
            )
        })
    }

    /// The battle of a series' place, once it has one.
    pub fn place_battle(&self, series_id: &str, slot: u64) -> Result<Option<String>> {
        self.query(|c| {
            c.opt_row(
                "SELECT id FROM battles WHERE series_id = ?1 AND series_slot = ?2",
                params![series_id, slot as i64],
                |r| r.get(0),
            )
        })
    }

    /// Why machines left a series' places: (machine, reason, when in ms).
    pub fn series_refusals(&self, series_id: &str) -> Result<Vec<(String, String, i64)>> {
        self.query(|c| {
            c.rows(
                "SELECT machine, reason, at FROM series_refusals WHERE series_id = ?1 ORDER BY machine",
                params![series_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })
    }

    /// Lanes in use now, per machine: (lane, machine, requests holding a
    /// slot, requests waiting), from live tickets.
    pub fn lanes_in_use(&self, now_ms: i64) -> Result<Vec<(String, String, u64, u64)>> {
        self.query(|c| {
            c.rows(
                "SELECT lane, host, COUNT(granted_at), COUNT(*) - COUNT(granted_at)
                 FROM live.lane_tickets WHERE expires_at > ?1
                 GROUP BY lane, host ORDER BY lane, host",
                params![now_ms],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get::<i64>(2)?.max(0) as u64,
                        r.get::<i64>(3)?.max(0) as u64,
                    ))
                },
            )
        })
    }

    /// Machines with a live process that drives a battle or a series, or
    /// holds or waits for a lane, as of `now_ms`.
    pub fn machines_active(&self, now_ms: i64) -> Result<Vec<String>> {
        self.query(|c| {
            c.rows(
                "SELECT host FROM live.leases WHERE expires_at > ?1
                 UNION SELECT host FROM live.series_leases WHERE expires_at > ?1
                 UNION SELECT host FROM live.lane_tickets WHERE expires_at > ?1
                 ORDER BY 1",
                params![now_ms],
                |r| r.get(0),
            )
        })
    }

    /// Processes serving places that said so at `since_ms` or later.
    pub fn workers_seen(&self, since_ms: i64) -> Result<Vec<WorkerBeat>> {
        self.query(|c| {
            c.rows(
                "SELECT owner, machine, pid, role, user_name, places, taken, started_at, seen_at
                 FROM live.workers WHERE seen_at >= ?1 ORDER BY machine, started_at",
                params![since_ms],
                |r| {
                    Ok(WorkerBeat {
                        owner: r.get(0)?,
                        machine: r.get(1)?,
                        pid: r.get::<i64>(2)?.clamp(0, i64::from(u32::MAX)) as u32,
                        role: r.get(3)?,
                        user: r.get(4)?,
                        places: r.get::<i64>(5)?.max(0) as u64,
                        taken: r.get::<i64>(6)?.max(0) as u64,
                        started_at_ms: r.get(7)?,
                        seen_at_ms: r.get(8)?,
                    })
                },
            )
        })
    }
}

impl Tx<'_> {
    /// Opens the places `slots` of a series that have none yet (a place
    /// already there keeps its state); how many were opened.
    pub fn open_places(&mut self, series_id: &str, slots: std::ops::Range<u64>) -> Result<usize> {
        let mut opened = 0;
        for slot in slots {
            opened += self.run(
                "INSERT INTO series_places (series_id, slot, state) VALUES (?1, ?2, 'open')
                 ON CONFLICT (series_id, slot) DO NOTHING",
                params![series_id, slot as i64],
            )?;
        }
        Ok(opened)
    }

    /// Claims up to `n` places of the running series `series_ids` (in that
    /// order, each by slot) for `me`: open places, and taken ones whose
    /// claim lapsed or whose holder was a process of this machine that is
    /// gone. Returns the places claimed.
    pub fn claim_places(
        &mut self,
        me: &Lease,
        series_ids: &[String],
        n: usize,
        now_ms: i64,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<Vec<(String, u64)>> {
        // Work someone began first (its claim lapsed, or its process on this
        // machine is gone), then open places; each by slot. Never this
        // claimer's own (a lapsed claim of its own is work it still runs).
        let mut claimed = Vec::new();
        for series_id in series_ids {
            for which in 0..3 {
                if claimed.len() >= n {
                    return Ok(claimed);
                }
                let room = (n - claimed.len()) as i64;
                let lock = skip_locked(self.db());
                let select = |condition: &str| {
                    format!(
                        "SELECT p.slot, p.owner, p.host, p.pid, p.expires_at FROM series_places p
                         JOIN series s ON s.id = p.series_id
                         WHERE p.series_id = ?1 AND s.status = 'running'
                           AND s.cancel_requested = FALSE AND {condition}
                         ORDER BY p.slot
                         LIMIT ?2{lock}"
                    )
                };
                let (sql, values): (String, Vec<SqlValue>) = match which {
                    0 => (
                        select("p.state = 'taken' AND p.expires_at <= ?3 AND p.owner <> ?4"),
                        vec![
                            SqlValue::Int(now_ms),
                            SqlValue::Text(me.owner.clone()),
                        ],
                    ),
                    // Live local holders are skipped below: read past them.
                    1 => (
                        select(
                            "p.state = 'taken' AND p.expires_at > ?3 AND p.owner <> ?4 AND p.host = ?5",
                        ),
                        vec![
                            SqlValue::Int(now_ms),
                            SqlValue::Text(me.owner.clone()),
                            SqlValue::Text(me.host.clone()),
                        ],
                    ),
                    _ => (select("p.state = 'open'"), Vec::new()),
                };
                let limit = room + if which == 1 { 64 } else { 0 };
                let mut all = vec![SqlValue::Text(series_id.clone()), SqlValue::Int(limit)];
                all.extend(values);
                let candidates = self.db().rows(&sql, &crate::sql::params_of(&all), |r| {
                    let slot = r.get::<i64>(0)?.max(0) as u64;
                    let holder = match r.get::<Option<String>>(1)? {
                        Some(owner) => Some(Lease {
                            owner,
                            host: r.get::<Option<String>>(2)?.unwrap_or_default(),
                            pid: r.get::<Option<u32>>(3)?.unwrap_or(0),
                            expires_at_ms: r.get::<Option<i64>>(4)?.unwrap_or(0),
                        }),
                        None => None,
                    };
                    Ok((slot, holder))
                })?;
                for (slot, holder) in candidates {
                    if claimed.len() >= n {
                        break;
                    }
                    let free = decisions::lease_is_free(
                        holder.as_ref(),
                        &me.owner,
                        &me.host,
                        now_ms,
                        &pid_alive,
                    );
                    if !free {
                        continue;
                    }
                    self.run(
                        "UPDATE series_places SET state = 'taken', owner = ?3, host = ?4, pid = ?5,
                             expires_at = ?6, attempts = attempts + 1
                         WHERE series_id = ?1 AND slot = ?2",
                        params![
                            series_id,
                            slot as i64,
                            me.owner,
                            me.host,
                            i64::from(me.pid),
                            me.expires_at_ms
                        ],
                    )?;
                    claimed.push((series_id.clone(), slot));
                }
            }
        }
        Ok(claimed)
    }

    /// Extends `owner`'s claims on `places` (those it runs now); how many
    /// it still held.
    pub fn renew_places(
        &mut self,
        owner: &str,
        places: &[(String, u64)],
        expires_at_ms: i64,
    ) -> Result<usize> {
        let mut held = 0;
        for (series_id, slot) in places {
            held += self.run(
                "UPDATE series_places SET expires_at = ?4
                 WHERE series_id = ?1 AND slot = ?2 AND owner = ?3 AND state = 'taken'",
                params![series_id, *slot as i64, owner, expires_at_ms],
            )?;
        }
        Ok(held)
    }

    /// Marks a place `owner` holds done; false when it is no longer its.
    pub fn finish_place(&mut self, series_id: &str, slot: u64, owner: &str) -> Result<bool> {
        let n = self.run(
            "UPDATE series_places SET state = 'done', owner = NULL, host = NULL, pid = NULL,
                 expires_at = NULL
             WHERE series_id = ?1 AND slot = ?2 AND owner = ?3 AND state = 'taken'",
            params![series_id, slot as i64, owner],
        )?;
        Ok(n == 1)
    }

    /// Gives a place `owner` holds back, open for another worker; false
    /// when it was no longer its.
    pub fn leave_place(&mut self, series_id: &str, slot: u64, owner: &str) -> Result<bool> {
        let n = self.run(
            "UPDATE series_places SET state = 'open', owner = NULL, host = NULL, pid = NULL,
                 expires_at = NULL
             WHERE series_id = ?1 AND slot = ?2 AND owner = ?3 AND state = 'taken'",
            params![series_id, slot as i64, owner],
        )?;
        Ok(n == 1)
    }

    /// Records why `machine` cannot serve a series (the last reason wins).
    pub fn refuse_series(
        &mut self,
        series_id: &str,
        machine: &str,
        reason: &str,
        at_ms: i64,
    ) -> Result<()> {
        self.run(
            "INSERT INTO series_refusals (series_id, machine, reason, at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (series_id, machine) DO UPDATE SET reason = ?3, at = ?4",
            params![series_id, machine, reason, at_ms],
        )?;
        Ok(())
    }

    /// The series stopped: its places nobody took will not run.
    pub fn drop_open_places(&mut self, series_id: &str) -> Result<usize> {
        self.run(
            "UPDATE series_places SET state = 'dropped' WHERE series_id = ?1 AND state = 'open'",
            params![series_id],
        )
    }

    /// Says why no worker takes the series' open places (`None`: some can).
    pub fn set_series_waiting(&mut self, series_id: &str, why: Option<&str>) -> Result<()> {
        self.run(
            "UPDATE series SET waiting = ?2 WHERE id = ?1 AND waiting IS DISTINCT FROM ?2",
            params![series_id, why],
        )?;
        Ok(())
    }

    /// Says this process serves places (see [`Store::workers_seen`]).
    pub fn beat_worker(&mut self, w: &WorkerBeat) -> Result<()> {
        self.run(
            "INSERT INTO live.workers
                 (owner, machine, pid, role, user_name, places, taken, started_at, seen_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (owner) DO UPDATE SET places = ?6, taken = ?7, seen_at = ?9",
            params![
                w.owner,
                w.machine,
                i64::from(w.pid),
                w.role,
                w.user,
                w.places as i64,
                w.taken as i64,
                w.started_at_ms,
                w.seen_at_ms
            ],
        )?;
        Ok(())
    }

    /// Claims machine name `name` for this boot of this computer
    /// (`boot_id`), or renews the claim. Refused — `Some(when it was last
    /// claimed, ms)` — while another boot claimed it within `fresh_ms`.
    pub fn claim_machine_name(
        &mut self,
        name: &str,
        boot_id: &str,
        now_ms: i64,
        fresh_ms: i64,
    ) -> Result<Option<i64>> {
        self.db().lock_name(&format!("machine {name}"))?;
        let current = self.db().opt_row(
            "SELECT boot_id, seen_at FROM live.machines WHERE name = ?1",
            params![name],
            |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)),
        )?;
        if let Some((other, seen_at)) = current {
            if other != boot_id && seen_at > now_ms - fresh_ms {
                return Ok(Some(seen_at));
            }
        }
        self.run(
            "INSERT INTO live.machines (name, boot_id, seen_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET boot_id = ?2, seen_at = ?3",
            params![name, boot_id, now_ms],
        )?;
        Ok(None)
    }

    /// This process stopped serving places.
    pub fn forget_worker(&mut self, owner: &str) -> Result<()> {
        self.run("DELETE FROM live.workers WHERE owner = ?1", params![owner])?;
        Ok(())
    }
}
