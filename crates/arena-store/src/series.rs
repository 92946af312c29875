//! Series rows: the series, its lease, its battles' places, and the goal
//! checks of their contestants.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::sql::params;
use arena_domain::decisions::Lease;
use arena_domain::series::{
    GoalCheck, RoundCost, Series, SeriesRequest, SeriesSpent, SeriesStatus,
};
use chrono::{DateTime, Utc};

use crate::error::{Error, Result};
use crate::rows::{self, ms, parse, time, LeaseOf};
use crate::sql::Row;
use crate::{Store, Tx};

const SERIES_COLUMNS: &str =
    "id, idem_key, request, status, total, created_at, finished_at, decided_after, report_path, error, tags, machine, waiting, base_commit, remote_url";

/// Column `i`'s JSON text, read into a `T`.
fn json<T: serde::de::DeserializeOwned>(i: usize, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Inconsistent(format!("column {i}: {e}")))
}

fn series_row(r: &Row<'_>) -> Result<Series> {
    let request: SeriesRequest = json(2, &r.get::<String>(2)?)?;
    let tags: Vec<String> = match r.get::<Option<String>>(10)? {
        Some(text) => json(10, &text)?,
        None => request.tags.clone(),
    };
    Ok(Series {
        id: r.get(0)?,
        key: r.get(1)?,
        tags,
        request,
        status: parse(3, r.get(3)?)?,
        total: r.get::<i64>(4)?.max(0) as u64,
        created_at: time(Some(r.get(5)?)).unwrap_or_default(),
        finished_at: time(r.get(6)?),
        decided_after: r.get::<Option<i64>>(7)?.map(|v| v.max(0) as u64),
        report_path: r.get::<Option<String>>(8)?.map(PathBuf::from),
        error: r.get(9)?,
        machine: r.get(11)?,
        waiting: r.get(12)?,
        base_commit: r.get(13)?,
        remote_url: r.get(14)?,
    })
}

impl Store {
    pub fn series(&self, id: &str) -> Result<Series> {
        self.query(|c| {
            c.opt_row(
                &format!("SELECT {SERIES_COLUMNS} FROM series WHERE id = ?1"),
                &[&id],
                series_row,
            )?
            .ok_or_else(|| Error::not_found("series", id))
        })
    }

    /// The series started with idempotency key `key`, if any.
    pub fn series_by_key(&self, key: &str) -> Result<Option<Series>> {
        self.query(|c| {
            c.opt_row(
                &format!("SELECT {SERIES_COLUMNS} FROM series WHERE idem_key = ?1"),
                &[&key],
                series_row,
            )
        })
    }

    /// Series newest first.
    pub fn series_list(&self, limit: usize) -> Result<Vec<Series>> {
        self.query(|c| {
            c.rows(
                &format!(
                    "SELECT {SERIES_COLUMNS} FROM series ORDER BY created_at DESC, id DESC LIMIT ?1"
                ),
                &[&(limit as i64)],
                series_row,
            )
        })
    }

    /// Ids of series still marked running, oldest first.
    pub fn running_series(&self) -> Result<Vec<String>> {
        self.query(|c| {
            c.rows(
                "SELECT id FROM series WHERE status = 'running' ORDER BY created_at",
                &[],
                |r| r.get(0),
            )
        })
    }

    /// The full id of the series whose id is, starts with, or ends with `key`.
    pub fn resolve_series_id(&self, key: &str) -> Result<String> {
        self.resolve_id("series", key)
    }

    /// A series' battles by place (the n-th battle of the series).
    pub fn series_battles(&self, series_id: &str) -> Result<BTreeMap<u64, String>> {
        self.query(|c| {
            let slots = c.rows(
                "SELECT series_slot, id FROM battles WHERE series_id = ?1 ORDER BY series_slot",
                &[&series_id],
                |r| Ok((r.get::<i64>(0)?.max(0) as u64, r.get::<String>(1)?)),
            )?;
            Ok(slots.into_iter().collect())
        })
    }

    /// A series' blind battles not yet revealed.
    pub fn series_masked(&self, id: &str) -> Result<u64> {
        self.query(|c| {
            let n: i64 = c.row(
                "SELECT COUNT(*) FROM battles WHERE series_id = ?1 AND blind = TRUE AND revealed_at IS NULL",
                &[&id],
                |r| r.get(0),
            )?;
            Ok(n.max(0) as u64)
        })
    }

    /// A series' battles ended and under way, and what it spent (USD):
    /// its contestants, every analysis, goal check and round — the known
    /// costs' sum, and which ended without one (a round that did not
    /// finish costs nothing).
    pub fn series_progress(&self, id: &str) -> Result<(u64, u64, SeriesSpent)> {
        self.query(|c| progress_in(c, id))
    }

    /// [`Store::series_progress`] and the series' pace — how long each of
    /// its ended battles took (ms), and when each running one started (ms
    /// since the epoch) — as of one moment (a battle ending between two
    /// reads would give an estimate from a battle the count does not have
    /// yet).
    #[allow(clippy::type_complexity)]
    pub fn series_progress_and_pace(
        &self,
        id: &str,
    ) -> Result<((u64, u64, SeriesSpent), (Vec<i64>, Vec<i64>))> {
        self.snapshot(|c| Ok((progress_in(c, id)?, pace_in(c, id)?)))
    }

    pub fn series_cancel_requested(&self, id: &str) -> Result<bool> {
        self.query(|c| {
            Ok(c.opt_row(
                "SELECT cancel_requested FROM series WHERE id = ?1",
                &[&id],
                |r| r.get::<bool>(0),
            )?
            .unwrap_or(false))
        })
    }

    pub fn series_lease(&self, id: &str) -> Result<Option<Lease>> {
        self.query(|c| rows::lease_of(c, LeaseOf::Series, id))
    }

    /// Every goal check of a battle's contestants, by contestant, in turns.
    pub fn goal_checks(&self, battle_id: &str) -> Result<BTreeMap<String, Vec<GoalCheck>>> {
        self.goal_checks_of("c.battle_id = ?1", battle_id)
    }

    /// The goal checks of every contestant of a series' battles, by
    /// contestant, in turn order: one query.
    pub fn series_goal_checks(&self, series_id: &str) -> Result<BTreeMap<String, Vec<GoalCheck>>> {
        self.goal_checks_of(
            "c.battle_id IN (SELECT id FROM battles WHERE series_id = ?1)",
            series_id,
        )
    }

    /// What each refine round (a later turn) of a series' contestants
    /// cost, and how it ended (`None` while it runs), by contestant, in
    /// order: one query.
    pub fn series_round_costs(&self, series_id: &str) -> Result<BTreeMap<String, Vec<RoundCost>>> {
        self.query(|c| {
            let rows = c.rows(
                "SELECT r.contestant_id, r.cost_usd, r.status
                 FROM rounds r JOIN contestants c ON c.id = r.contestant_id
                 WHERE c.battle_id IN (SELECT id FROM battles WHERE series_id = ?1)
                 ORDER BY r.contestant_id, r.number",
                &[&series_id],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<Option<f64>>(1)?,
                        r.get::<String>(2)?,
                    ))
                },
            )?;
            let mut out: BTreeMap<String, Vec<RoundCost>> = BTreeMap::new();
            for (id, cost_usd, status) in rows {
                out.entry(id).or_default().push(RoundCost {
                    cost_usd,
                    status: (status != "running").then(|| status.parse().ok()).flatten(),
                });
            }
            Ok(out)
        })
    }

    /// Goal checks of the contestants `clause` (on `c`, with `?1`) picks.
    fn goal_checks_of(&self, clause: &str, key: &str) -> Result<BTreeMap<String, Vec<GoalCheck>>> {
        self.query(|c| {
            let rows = c.rows(
                &format!(
                    "SELECT g.contestant_id, g.turn, g.passed, g.reason, g.error, g.by_check, g.cost_usd, g.at,
                       g.detail
                     FROM goal_checks g JOIN contestants c ON c.id = g.contestant_id
                     WHERE {clause} ORDER BY g.contestant_id, g.turn"
                ),
                &[&key],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        GoalCheck {
                            turn: r.get(1)?,
                            passed: r.get(2)?,
                            reason: r.get(3)?,
                            error: r.get(4)?,
                            by_check: r.get(5)?,
                            cost_usd: r.get(6)?,
                            at: time(Some(r.get(7)?)).unwrap_or_default(),
                            detail: r.get(8)?,
                        },
                    ))
                },
            )?;
            let mut out: BTreeMap<String, Vec<GoalCheck>> = BTreeMap::new();
            for (id, check) in rows {
                out.entry(id).or_default().push(check);
            }
            Ok(out)
        })
    }
}

impl Tx<'_> {
    pub fn insert_series(&mut self, s: &Series) -> Result<()> {
        self.run(
            &format!("INSERT INTO series ({SERIES_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, NULL, NULL, NULL, NULL, ?7, NULL, ?8, ?9)"),
            params![
                s.id,
                s.key,
                serde_json::to_string(&s.request)?,
                s.status.as_str(),
                s.total as i64,
                ms(s.created_at),
                s.machine,
                s.base_commit,
                s.remote_url,
            ],
        )?;
        Ok(())
    }

    /// Ends a running series; false when it had already ended.
    pub fn finish_series(
        &mut self,
        id: &str,
        status: SeriesStatus,
        at: DateTime<Utc>,
        decided_after: Option<u64>,
    ) -> Result<bool> {
        let changed = self.run(
            "UPDATE series SET status = ?2, finished_at = ?3, decided_after = ?4
             WHERE id = ?1 AND status = 'running'",
            params![id, status.as_str(), ms(at), decided_after.map(|n| n as i64)],
        )?;
        Ok(changed == 1)
    }

    /// Replaces a series' tags (already normalised) and, on each of its
    /// battles, the old ones by the new (a battle keeps its other tags).
    pub fn set_series_tags(&mut self, id: &str, old: &[String], new: &[String]) -> Result<()> {
        self.run(
            "UPDATE series SET tags = ?2 WHERE id = ?1",
            params![id, serde_json::to_string(new)?],
        )?;
        for tag in old.iter().filter(|t| !new.contains(t)) {
            self.run(
                "DELETE FROM battle_tags WHERE tag = ?2
                   AND battle_id IN (SELECT id FROM battles WHERE series_id = ?1)",
                params![id, tag],
            )?;
        }
        for tag in new {
            self.run(
                "INSERT INTO battle_tags (battle_id, tag)
                 SELECT id, ?2 FROM battles WHERE series_id = ?1
                 ON CONFLICT DO NOTHING",
                params![id, tag],
            )?;
        }
        Ok(())
    }

    /// Ends a running series in `error`, saying why.
    pub fn fail_series(&mut self, id: &str, error: &str, at: DateTime<Utc>) -> Result<bool> {
        let changed = self.run(
            "UPDATE series SET status = 'error', error = ?2, finished_at = ?3
             WHERE id = ?1 AND status = 'running'",
            params![id, error, ms(at)],
        )?;
        Ok(changed == 1)
    }

    /// Asks whoever drives the series to stop; false when it is not running.
    pub fn request_series_cancel(&mut self, id: &str) -> Result<bool> {
        let changed = self.run(
            "UPDATE series SET cancel_requested = TRUE WHERE id = ?1 AND status = 'running'",
            params![id],
        )?;
        Ok(changed == 1)
    }

    pub fn set_series_report(&mut self, id: &str, path: &std::path::Path) -> Result<()> {
        self.run(
            "UPDATE series SET report_path = ?2 WHERE id = ?1",
            params![id, path.to_string_lossy()],
        )?;
        Ok(())
    }

    /// Takes (or keeps) the series' lease when it is free (see
    /// `decisions::lease_is_free`).
    pub fn take_series_lease(
        &mut self,
        id: &str,
        me: &Lease,
        now_ms: i64,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<bool> {
        self.take_lease_of(LeaseOf::Series, id, me, now_ms, pid_alive)
    }

    pub fn release_series_lease(&mut self, id: &str, owner: &str) -> Result<()> {
        self.release_lease_of(LeaseOf::Series, id, owner)
    }

    /// Records a goal check (replacing one of the same turn).
    pub fn insert_goal_check(&mut self, contestant_id: &str, g: &GoalCheck) -> Result<()> {
        self.run(
            "INSERT INTO goal_checks (contestant_id, turn, passed, reason, error, by_check, cost_usd, at, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (contestant_id, turn) DO UPDATE SET passed = excluded.passed,
               reason = excluded.reason, error = excluded.error, by_check = excluded.by_check,
               cost_usd = excluded.cost_usd, at = excluded.at, detail = excluded.detail",
            params![
                contestant_id,
                i64::from(g.turn),
                g.passed,
                g.reason,
                g.error,
                g.by_check,
                g.cost_usd,
                ms(g.at),
                g.detail
            ],
        )?;
        Ok(())
    }
}

/// A series' battles ended and running, and what it has spent: the known
/// costs add up whatever else is unknown (a model without a price made the
/// whole amount unknown, and the priced ones' cost was lost with it).
fn progress_in(c: crate::sql::Conn<'_>, id: &str) -> Result<(u64, u64, SeriesSpent)> {
    let (done, running): (i64, i64) = c.row(
        "SELECT COUNT(*) FILTER (WHERE status <> 'running'), COUNT(*) FILTER (WHERE status = 'running')
         FROM battles WHERE series_id = ?1",
        &[&id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    // Every cost of the series, whether it is known (one not ended yet is
    // nothing so far), and the model it ran on (a goal check's is not kept).
    const COSTS: &str = "WITH b AS (SELECT id FROM battles WHERE series_id = ?1),
              k AS (SELECT id FROM contestants WHERE battle_id IN (SELECT id FROM b)),
              costs(cost, known, provider, model) AS (
                SELECT cost_usd, cost_usd IS NOT NULL OR status IN ('queued', 'running'), provider, model
                  FROM contestants WHERE id IN (SELECT id FROM k)
                UNION ALL SELECT cost_usd, cost_usd IS NOT NULL OR status = 'running', provider, model
                  FROM analyses WHERE battle_id IN (SELECT id FROM b)
                UNION ALL SELECT cost_usd, cost_usd IS NOT NULL, NULL, NULL
                  FROM goal_checks WHERE contestant_id IN (SELECT id FROM k)
                UNION ALL SELECT r.cost_usd, r.cost_usd IS NOT NULL OR r.status != 'done', k2.provider, k2.model
                  FROM rounds r JOIN contestants k2 ON k2.id = r.contestant_id
                  WHERE r.contestant_id IN (SELECT id FROM k))";
    let (known_usd, unknown): (f64, i64) = c.row(
        &format!(
            "{COSTS} SELECT COALESCE(SUM(cost), 0.0), COUNT(*) FILTER (WHERE NOT known) FROM costs"
        ),
        &[&id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let unknown_models = if unknown > 0 {
        c.rows(
            &format!(
                "{COSTS} SELECT DISTINCT provider, model FROM costs
                  WHERE NOT known AND provider IS NOT NULL ORDER BY provider, model"
            ),
            &[&id],
            |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
        )?
    } else {
        Vec::new()
    };
    Ok((
        done.max(0) as u64,
        running.max(0) as u64,
        SeriesSpent {
            known_usd,
            unknown: unknown.max(0) as u64,
            unknown_models,
        },
    ))
}

/// A series' pace (see [`Store::series_progress_and_pace`]).
fn pace_in(c: crate::sql::Conn<'_>, id: &str) -> Result<(Vec<i64>, Vec<i64>)> {
    let mut ended = Vec::new();
    let mut running = Vec::new();
    let rows = c.rows(
        "SELECT status = 'running', created_at, finished_at FROM battles WHERE series_id = ?1",
        &[&id],
        |r| {
            Ok((
                r.get::<bool>(0)?,
                r.get::<i64>(1)?,
                r.get::<Option<i64>>(2)?,
            ))
        },
    )?;
    for (is_running, created, finished) in rows {
        match (is_running, finished) {
            (true, _) => running.push(created),
            (false, Some(finished)) => ended.push((finished - created).max(0)),
            (false, None) => {}
        }
    }
    Ok((ended, running))
}
