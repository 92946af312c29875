//! Row mapping: SQL rows to domain types.

use std::path::PathBuf;

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::error::Result;
use arena_domain::analysis::Analysis;
use arena_domain::battle::{Battle, Benchmark, Contestant, Round, Winner};
use arena_domain::cross_exam::CrossExamination;
use arena_domain::decisions::{Lease, Ticket};
use arena_domain::event::BattleEvent;

/// Milliseconds since the epoch, as stored.
pub fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn time_ms(v: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(v).unwrap_or_default()
}

pub(crate) fn time(v: Option<i64>) -> Option<DateTime<Utc>> {
    v.and_then(|m| Utc.timestamp_millis_opt(m).single())
}

pub(crate) fn parse<T: std::str::FromStr<Err = String>>(
    idx: usize,
    s: String,
) -> rusqlite::Result<T> {
    s.parse().map_err(|e: String| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, e.into())
    })
}

const BATTLE_COLUMNS: &str = "id, battle_type, status, prompt, project_path, results_path, created_at, finished_at, winner_id, winner_source, base_commit, check_command, series_id";

fn battle_row(r: &Row<'_>) -> rusqlite::Result<Battle> {
    let winner_id: Option<String> = r.get(8)?;
    let winner_source: Option<String> = r.get(9)?;
    let winner = match (winner_id, winner_source) {
        (Some(contestant_id), Some(source)) => Some(Winner {
            contestant_id,
            source: parse(9, source)?,
        }),
        _ => None,
    };
    Ok(Battle {
        id: r.get(0)?,
        battle_type: parse(1, r.get(1)?)?,
        status: parse(2, r.get(2)?)?,
        prompt: r.get(3)?,
        project: PathBuf::from(r.get::<_, String>(4)?),
        results_path: PathBuf::from(r.get::<_, String>(5)?),
        created_at: time(Some(r.get(6)?)).unwrap_or_default(),
        finished_at: time(r.get(7)?),
        winner,
        contestants: Vec::new(),
        base_commit: r.get(10)?,
        check_command: r.get(11)?,
        series_id: r.get(12)?,
    })
}

const CONTESTANT_COLUMNS: &str = "id, battle_id, position, identity, model, provider, lane, status, error, attempts, run_spec, started_at, finished_at, duration_ms, ttft_ms, prompt_tokens, completion_tokens, cached_tokens, tokens_per_sec, rate_source, output, reasoning, truncated, result_path, worktree, diff_stats, check_result, waiting, prompt_per_sec, model_switched, cost_usd";

fn contestant_row(r: &Row<'_>) -> rusqlite::Result<Contestant> {
    let u = |i: usize| -> rusqlite::Result<Option<u64>> {
        Ok(r.get::<_, Option<i64>>(i)?.map(|v| v.max(0) as u64))
    };
    let run_spec: String = r.get(10)?;
    let rate_source: Option<String> = r.get(19)?;
    Ok(Contestant {
        id: r.get(0)?,
        battle_id: r.get(1)?,
        position: r.get(2)?,
        identity: r.get(3)?,
        model: r.get(4)?,
        provider: r.get(5)?,
        lane: parse(6, r.get(6)?)?,
        status: parse(7, r.get(7)?)?,
        error: r.get(8)?,
        attempts: r.get(9)?,
        run: serde_json::from_str(&run_spec).unwrap_or_default(),
        started_at: time(r.get(11)?),
        finished_at: time(r.get(12)?),
        benchmark: Benchmark {
            duration_ms: u(13)?,
            ttft_ms: u(14)?,
            prompt_tokens: u(15)?,
            completion_tokens: u(16)?,
            cached_tokens: u(17)?,
            tokens_per_sec: r.get(18)?,
            rate_source: rate_source.map(|s| parse(19, s)).transpose()?,
            prompt_per_sec: r.get(28)?,
            model_switched: r.get(29)?,
            cost_usd: r.get(30)?,
        },
        output: r.get(20)?,
        reasoning: r.get(21)?,
        truncated: r.get(22)?,
        result_path: r.get::<_, Option<String>>(23)?.map(PathBuf::from),
        worktree: r.get::<_, Option<String>>(24)?.map(PathBuf::from),
        diff: r
            .get::<_, Option<String>>(25)?
            .and_then(|t| serde_json::from_str(&t).ok()),
        check: r
            .get::<_, Option<String>>(26)?
            .and_then(|t| serde_json::from_str(&t).ok()),
        waiting: r.get(27)?,
    })
}

pub fn contestants(c: &Connection, battle_id: &str) -> Result<Vec<Contestant>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {CONTESTANT_COLUMNS} FROM contestants WHERE battle_id = ?1 ORDER BY position"
    ))?;
    let rows = stmt
        .query_map([battle_id], contestant_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Like [`contestants`] without the output and reasoning texts (for listings).
fn contestant_summaries(c: &Connection, battle_id: &str) -> Result<Vec<Contestant>> {
    let columns = CONTESTANT_COLUMNS.replace("output, reasoning", "NULL, NULL");
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {columns} FROM contestants WHERE battle_id = ?1 ORDER BY position"
    ))?;
    let rows = stmt
        .query_map([battle_id], contestant_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

pub fn contestant(c: &Connection, id: &str) -> Result<Option<Contestant>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {CONTESTANT_COLUMNS} FROM contestants WHERE id = ?1"
    ))?;
    Ok(stmt.query_row([id], contestant_row).optional()?)
}

pub fn battle(c: &Connection, id: &str) -> Result<Option<Battle>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {BATTLE_COLUMNS} FROM battles WHERE id = ?1"
    ))?;
    let Some(mut b) = stmt.query_row([id], battle_row).optional()? else {
        return Ok(None);
    };
    b.contestants = contestants(c, id)?;
    Ok(Some(b))
}

/// Battles newest first, without contestants' outputs.
pub fn battles(c: &Connection, limit: usize) -> Result<Vec<Battle>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {BATTLE_COLUMNS} FROM battles ORDER BY created_at DESC, id DESC LIMIT ?1"
    ))?;
    let mut list = stmt
        .query_map([limit as i64], battle_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    for b in &mut list {
        b.contestants = contestant_summaries(c, &b.id)?;
    }
    Ok(list)
}

pub fn events_since(
    c: &Connection,
    battle_id: &str,
    since_seq: u64,
    limit: usize,
) -> Result<Vec<BattleEvent>> {
    let mut stmt = c.prepare_cached(
        "SELECT seq, contestant_id, at, payload FROM events
         WHERE battle_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![battle_id, since_seq as i64, limit as i64], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, Option<String>>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    let mut events = Vec::new();
    for row in rows {
        let (seq, contestant_id, at, payload) = row?;
        events.push(BattleEvent {
            battle_id: battle_id.to_string(),
            seq: seq as u64,
            contestant_id,
            at: time(Some(at)).unwrap_or_default(),
            kind: serde_json::from_str(&payload)?,
        });
    }
    Ok(events)
}

/// What a lease is held on: a battle (`leases`) or a series
/// (`series_leases`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum LeaseOf {
    Battle,
    Series,
}

impl LeaseOf {
    /// The table and its key column.
    pub(crate) fn table(self) -> (&'static str, &'static str) {
        match self {
            LeaseOf::Battle => ("leases", "battle_id"),
            LeaseOf::Series => ("series_leases", "series_id"),
        }
    }
}

pub fn lease(c: &Connection, battle_id: &str) -> Result<Option<Lease>> {
    lease_of(c, LeaseOf::Battle, battle_id)
}

pub(crate) fn lease_of(c: &Connection, of: LeaseOf, id: &str) -> Result<Option<Lease>> {
    let (table, key) = of.table();
    Ok(c.query_row(
        &format!("SELECT owner, host, pid, expires_at FROM {table} WHERE {key} = ?1"),
        [id],
        |r| {
            Ok(Lease {
                owner: r.get(0)?,
                host: r.get(1)?,
                pid: r.get(2)?,
                expires_at_ms: r.get(3)?,
            })
        },
    )
    .optional()?)
}

fn json_col<T: serde::de::DeserializeOwned + Default>(text: Option<String>) -> T {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn enum_col<T: serde::de::DeserializeOwned>(idx: usize, text: String) -> rusqlite::Result<T> {
    serde_json::from_value(serde_json::Value::String(text)).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, e.into())
    })
}

pub fn latest_analysis(c: &Connection, battle_id: &str) -> Result<Option<Analysis>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, battle_id, status, model, provider, outcome, winner_id, ranking, reasons, digests,
                judge_runs, error, created_at, finished_at, cost_usd
         FROM analyses WHERE battle_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT 1",
    )?;
    Ok(stmt
        .query_row([battle_id], |r| {
            Ok(Analysis {
                id: r.get(0)?,
                battle_id: r.get(1)?,
                status: enum_col(2, r.get(2)?)?,
                model: r.get(3)?,
                provider: r.get(4)?,
                outcome: r
                    .get::<_, Option<String>>(5)?
                    .map(|o| enum_col(5, o))
                    .transpose()?,
                winner: r.get(6)?,
                ranking: json_col(r.get(7)?),
                reasons: json_col(r.get(8)?),
                digests: json_col(r.get(9)?),
                judge_runs: json_col(r.get(10)?),
                error: r.get(11)?,
                created_at: time(Some(r.get(12)?)).unwrap_or_default(),
                finished_at: time(r.get(13)?),
                cost_usd: r.get(14)?,
            })
        })
        .optional()?)
}

pub fn cross_examinations(c: &Connection, battle_id: &str) -> Result<Vec<CrossExamination>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, battle_id, number, identity, model, provider, question, status, output, verdict,
                error, path, created_at, finished_at
         FROM cross_examinations WHERE battle_id = ?1 ORDER BY number",
    )?;
    let rows = stmt
        .query_map([battle_id], |r| {
            Ok(CrossExamination {
                id: r.get(0)?,
                battle_id: r.get(1)?,
                number: r.get(2)?,
                identity: r.get(3)?,
                model: r.get(4)?,
                provider: r.get(5)?,
                question: r.get(6)?,
                status: enum_col(7, r.get(7)?)?,
                output: r.get(8)?,
                verdict: r
                    .get::<_, Option<String>>(9)?
                    .and_then(|v| serde_json::from_str(&v).ok()),
                error: r.get(10)?,
                path: r.get::<_, Option<String>>(11)?.map(PathBuf::from),
                created_at: time(Some(r.get(12)?)).unwrap_or_default(),
                finished_at: time(r.get(13)?),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// A contestant's refinement rounds (2, 3, …), in order.
pub fn rounds(c: &Connection, contestant_id: &str) -> Result<Vec<Round>> {
    let mut stmt = c.prepare_cached(
            "SELECT id, contestant_id, number, feedback, status, output, error, diff_stats, check_result,
                    duration_ms, result_path, created_at, finished_at, cost_usd
             FROM rounds WHERE contestant_id = ?1 ORDER BY number",
        )?;
    let rows = stmt
        .query_map([contestant_id], |r| {
            let status: String = r.get(4)?;
            Ok(Round {
                id: r.get(0)?,
                contestant_id: r.get(1)?,
                number: r.get(2)?,
                feedback: r.get(3)?,
                status: if status == "running" {
                    None
                } else {
                    status.parse().ok()
                },
                output: r.get(5)?,
                error: r.get(6)?,
                diff: r
                    .get::<_, Option<String>>(7)?
                    .and_then(|t| serde_json::from_str(&t).ok()),
                check: r
                    .get::<_, Option<String>>(8)?
                    .and_then(|t| serde_json::from_str(&t).ok()),
                duration_ms: r.get::<_, Option<i64>>(9)?.map(|v| v.max(0) as u64),
                result_path: r.get::<_, Option<String>>(10)?.map(PathBuf::from),
                created_at: time_ms(r.get(11)?),
                finished_at: r.get::<_, Option<i64>>(12)?.map(time_ms),
                cost_usd: r.get(13)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The `seq` of a battle's newest event (0 when it has none).
pub fn last_seq(c: &Connection, battle_id: &str) -> Result<u64> {
    let seq: Option<i64> = c.query_row(
        "SELECT MAX(seq) FROM events WHERE battle_id = ?1",
        [battle_id],
        |r| r.get(0),
    )?;
    Ok(seq.unwrap_or(0).max(0) as u64)
}

/// A lane's tickets, holding and waiting.
pub fn tickets(c: &Connection, lane: &str) -> Result<Vec<Ticket>> {
    let mut stmt = c.prepare_cached(
        "SELECT id, ready_at, position, holder, granted_at IS NOT NULL, owner, host, pid, expires_at
         FROM lane_tickets WHERE lane = ?1",
    )?;
    let rows = stmt
        .query_map([lane], |r| {
            Ok(Ticket {
                id: r.get(0)?,
                ready_at_ms: r.get(1)?,
                position: r.get(2)?,
                holder: r.get(3)?,
                granted: r.get(4)?,
                lease: Lease {
                    owner: r.get(5)?,
                    host: r.get(6)?,
                    pid: r.get(7)?,
                    expires_at_ms: r.get(8)?,
                },
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// When the lane granted slots in the minute before `now_ms`.
pub fn lane_starts(c: &Connection, lane: &str, now_ms: i64) -> Result<Vec<i64>> {
    let mut stmt = c.prepare_cached("SELECT at FROM lane_grants WHERE lane = ?1 AND at > ?2")?;
    let rows = stmt
        .query_map(params![lane, now_ms - 60_000], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(rows)
}
