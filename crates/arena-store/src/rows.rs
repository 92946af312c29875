//! Row mapping: SQL rows to domain types.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::sql::{params_of, Conn, Row, Value};
use chrono::{DateTime, TimeZone, Utc};

use crate::error::{Error, Result};
use arena_domain::analysis::Analysis;
use arena_domain::battle::{
    Battle, BattleQuery, BattleType, Benchmark, Contestant, Judging, Round, UserVerdict, Winner,
};
use arena_domain::cross_exam::CrossExamination;
use arena_domain::decisions::{Lease, Ticket};
use arena_domain::event::{BattleEvent, EventKind};
use arena_domain::leaderboard::{Entry, Player};

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

/// Column `idx`'s text as the domain type it names.
pub(crate) fn parse<T: std::str::FromStr<Err = String>>(idx: usize, s: String) -> Result<T> {
    s.parse()
        .map_err(|e: String| Error::Inconsistent(format!("column {idx}: {e}")))
}

/// The battle's columns (of `battles b`, its machine and users last), then
/// its tags joined by line breaks (sorted by the reader), then its newest analysis' status and
/// outcome.
const BATTLE_COLUMNS: &str = "b.id, b.battle_type, b.status, b.prompt, b.project_path, b.results_path, b.created_at, b.finished_at, b.winner_id, b.winner_source, b.base_commit, b.check_command, b.series_id, b.blind, b.revealed_at, b.user_verdict, b.machine, b.user_name, b.voted_by, (SELECT string_agg(t.tag, '\n') FROM battle_tags t WHERE t.battle_id = b.id), (SELECT a.status || ' ' || COALESCE(a.outcome, '') FROM analyses a WHERE a.battle_id = b.id ORDER BY a.created_at DESC LIMIT 1), b.source_path";

fn battle_row(r: &Row<'_>) -> Result<Battle> {
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
        project: PathBuf::from(r.get::<String>(4)?),
        results_path: PathBuf::from(r.get::<String>(5)?),
        created_at: time(Some(r.get(6)?)).unwrap_or_default(),
        finished_at: time(r.get(7)?),
        winner,
        contestants: Vec::new(),
        base_commit: r.get(10)?,
        check_command: r.get(11)?,
        series_id: r.get(12)?,
        blind: r.get(13)?,
        revealed_at: time(r.get(14)?),
        user_verdict: r
            .get::<Option<String>>(15)?
            .map(|v| parse(15, v))
            .transpose()?,
        machine: r.get(16)?,
        user_name: r.get(17)?,
        voted_by: r.get(18)?,
        tags: {
            let mut tags: Vec<String> = r
                .get::<Option<String>>(19)?
                .map(|t| t.lines().map(str::to_string).collect())
                .unwrap_or_default();
            tags.sort();
            tags
        },
        judging: r
            .get::<Option<String>>(20)?
            .map(|j| judging(20, &j))
            .transpose()?,
        source: r.get::<Option<String>>(21)?.map(PathBuf::from),
    })
}

/// `"done no_clear_winner"`, `"running "`: a newest analysis' status and
/// outcome as [`BATTLE_COLUMNS`] reads them.
fn judging(i: usize, text: &str) -> Result<Judging> {
    let (status, outcome) = text.split_once(' ').unwrap_or((text, ""));
    Ok(Judging {
        status: enum_col(i, status.to_string())?,
        outcome: (!outcome.is_empty())
            .then(|| enum_col(i, outcome.to_string()))
            .transpose()?,
    })
}

/// A contestant's columns, with its run spec (kept once, in `run_specs`)
/// as the `RUN_SPEC` expression; `output` and `reasoning` are its answer's,
/// from [`WITH_ANSWERS`].
const CONTESTANT_COLUMNS: &str = "id, battle_id, position, identity, model, provider, lane, status, error, attempts, RUN_SPEC, started_at, finished_at, duration_ms, ttft_ms, prompt_tokens, completion_tokens, cached_tokens, tokens_per_sec, rate_source, output, reasoning, truncated, result_path, worktree, diff_stats, check_result, waiting, prompt_per_sec, model_switched, cost_usd, label";

/// The contestant columns' run spec, read from `run_specs`.
const RUN_SPEC: &str = "(SELECT spec FROM run_specs WHERE run_specs.id = contestants.run_spec_id)";

/// Contestants with their answers (none until one ends), for the full
/// [`CONTESTANT_COLUMNS`].
const WITH_ANSWERS: &str =
    "contestants LEFT JOIN answers ON answers.contestant_id = contestants.id";

/// [`CONTESTANT_COLUMNS`] as a query's select list; `brief` leaves out the
/// answer's texts and the run spec (a persona's whole prompt each), which
/// only showing or running one contestant needs.
fn contestant_columns(brief: bool) -> String {
    if brief {
        CONTESTANT_COLUMNS
            .replace("output, reasoning", "NULL, NULL")
            .replace("RUN_SPEC", "'null'")
    } else {
        CONTESTANT_COLUMNS.replace("RUN_SPEC", RUN_SPEC)
    }
}

/// Column `i`'s answer text, inflated (see [`crate::packed`]).
fn answer_text(r: &Row<'_>, i: usize) -> Result<Option<String>> {
    crate::packed::unpack(r.text_or_bytes(i)?)
        .map_err(|e| Error::Inconsistent(format!("column {i}: {e}")))
}

fn contestant_row(r: &Row<'_>) -> Result<Contestant> {
    let u =
        |i: usize| -> Result<Option<u64>> { Ok(r.get::<Option<i64>>(i)?.map(|v| v.max(0) as u64)) };
    let run_spec: Option<String> = r.get(10)?;
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
        run: run_spec
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
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
        output: answer_text(r, 20)?,
        reasoning: answer_text(r, 21)?,
        truncated: r.get(22)?,
        result_path: r.get::<Option<String>>(23)?.map(PathBuf::from),
        worktree: r.get::<Option<String>>(24)?.map(PathBuf::from),
        diff: r
            .get::<Option<String>>(25)?
            .and_then(|t| serde_json::from_str(&t).ok()),
        check: r
            .get::<Option<String>>(26)?
            .and_then(|t| serde_json::from_str(&t).ok()),
        waiting: r.get(27)?,
        label: r.get(31)?,
    })
}

pub fn contestants(c: Conn<'_>, battle_id: &str) -> Result<Vec<Contestant>> {
    c.rows(
        &format!(
            "SELECT {} FROM {WITH_ANSWERS} WHERE battle_id = ?1 ORDER BY position",
            contestant_columns(false)
        ),
        &[&battle_id],
        contestant_row,
    )
}

pub fn contestant(c: Conn<'_>, id: &str) -> Result<Option<Contestant>> {
    c.opt_row(
        &format!(
            "SELECT {} FROM {WITH_ANSWERS} WHERE id = ?1",
            contestant_columns(false)
        ),
        &[&id],
        contestant_row,
    )
}

pub fn battle(c: Conn<'_>, id: &str) -> Result<Option<Battle>> {
    let Some(mut b) = c.opt_row(
        &format!("SELECT {BATTLE_COLUMNS} FROM battles b WHERE b.id = ?1"),
        &[&id],
        battle_row,
    )?
    else {
        return Ok(None);
    };
    b.contestants = contestants(c, id)?;
    Ok(Some(b))
}

/// The SQL function that lower-cases text as Rust does (all of Unicode;
/// SQLite's own `lower()` and `LIKE` fold ASCII only). Registered on every
/// connection by `Store::open`.
pub(crate) const FOLD_FUNCTION: &str = "arena_fold";

/// `%word%` for `LIKE … ESCAPE '\'`, with the user's `%`, `_` and `\` taken
/// literally.
pub(crate) fn like_pattern(word: &str) -> String {
    let mut pattern = String::with_capacity(word.len() + 2);
    pattern.push('%');
    for ch in word.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(ch);
    }
    pattern.push('%');
    pattern
}

/// ` WHERE …` (or nothing) selecting the battles `b` that `q` asks for, and
/// its parameters, in order.
fn battle_filter(q: &BattleQuery) -> (String, Vec<Value>) {
    let mut clauses: Vec<String> = Vec::new();
    let mut values: Vec<Value> = Vec::new();
    if let Some(t) = q.battle_type {
        clauses.push("b.battle_type = ?".into());
        values.push(Value::Text(t.as_str().into()));
    }
    if let Some(s) = q.status {
        clauses.push("b.status = ?".into());
        values.push(Value::Text(s.as_str().into()));
    }
    if let Some(id) = &q.series_id {
        clauses.push("b.series_id = ?".into());
        values.push(Value::Text(id.clone()));
    }
    // What the app's history filter searches: the prompt, and per
    // contestant `identity@model provider`. Every word must appear in one
    // of them. LIKE ignores ASCII case; a word with other letters is
    // compared with both sides folded (slower, so only then).
    for word in q.words() {
        let (prompt, contestant) = if word.is_ascii() {
            (
                "b.prompt".to_string(),
                "(c.identity || '@' || c.model || ' ' || c.provider)".to_string(),
            )
        } else {
            (
                format!("{FOLD_FUNCTION}(b.prompt)"),
                format!("{FOLD_FUNCTION}(c.identity || '@' || c.model || ' ' || c.provider)"),
            )
        };
        clauses.push(format!(
            "({prompt} LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM contestants c \
             WHERE c.battle_id = b.id AND {contestant} LIKE ? ESCAPE '\\'))"
        ));
        let pattern = like_pattern(&word);
        values.push(Value::Text(pattern.clone()));
        values.push(Value::Text(pattern));
    }
    if clauses.is_empty() {
        (String::new(), values)
    } else {
        (format!(" WHERE {}", clauses.join(" AND ")), values)
    }
}

fn sql_count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A page of the battles `q` selects, newest first (`created_at`, then
/// `id`, descending), with their contestants' summaries (no output or
/// reasoning texts), and how many battles it selects in all. Run it in a
/// transaction for the two to agree.
pub fn battle_page(c: Conn<'_>, q: &BattleQuery) -> Result<(Vec<Battle>, u64)> {
    let (filter, values) = battle_filter(q);
    let total: i64 = c.row(
        &format!("SELECT COUNT(*) FROM battles b{filter}"),
        &params_of(&values),
        |r| r.get(0),
    )?;
    let total = total.max(0) as u64;
    if q.limit == 0 || q.offset as u64 >= total {
        return Ok((Vec::new(), total));
    }
    let page = values
        .iter()
        .cloned()
        .chain([
            Value::Int(sql_count(q.limit)),
            Value::Int(sql_count(q.offset)),
        ])
        .collect::<Vec<_>>();
    let mut list = c.rows(
        &format!(
            "SELECT {BATTLE_COLUMNS} FROM battles b{filter}
             ORDER BY b.created_at DESC, b.id DESC LIMIT ? OFFSET ?"
        ),
        &params_of(&page),
        battle_row,
    )?;
    attach_contestant_summaries(c, &mut list)?;
    Ok((list, total))
}

/// Battle ids per `IN (…)` query: well under SQLite's limit on parameters.
const IN_CHUNK: usize = 500;

/// Fills each battle's contestants (without output and reasoning texts,
/// and without their run specs — a persona's whole prompt each — which only
/// running them needs), a few hundred battles per query.
fn attach_contestant_summaries(c: Conn<'_>, battles: &mut [Battle]) -> Result<()> {
    let columns = contestant_columns(true);
    for chunk in battles.chunks_mut(IN_CHUNK) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let ids: Vec<Value> = chunk.iter().map(|b| Value::Text(b.id.clone())).collect();
        let mut by_battle: HashMap<String, Vec<Contestant>> = HashMap::new();
        let rows = c.rows(
            &format!(
                "SELECT {columns} FROM contestants WHERE battle_id IN ({marks})
                 ORDER BY battle_id, position"
            ),
            &params_of(&ids),
            contestant_row,
        )?;
        for contestant in rows {
            by_battle
                .entry(contestant.battle_id.clone())
                .or_default()
                .push(contestant);
        }
        for b in chunk.iter_mut() {
            b.contestants = by_battle.remove(&b.id).unwrap_or_default();
        }
    }
    Ok(())
}

/// A finished battle as the leaderboard reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedBattle {
    pub battle_id: String,
    pub battle_type: BattleType,
    /// The user's chosen winner (contestant id), if they chose one.
    pub user_winner: Option<String>,
    /// The user's tie or "all bad".
    pub user_verdict: Option<UserVerdict>,
    /// The contestants that finished (`done`), by position: id and entry.
    pub finished: Vec<(String, Entry)>,
}

/// Which finished battles the leaderboard ranks (all when every field is
/// `None`); the filters combine with AND.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RankFilter {
    pub battle_type: Option<BattleType>,
    /// A series' full id.
    pub series_id: Option<String>,
    /// The project folder, as the battle recorded it.
    pub project: Option<String>,
    /// Battles carrying this tag (exactly).
    pub tag: Option<String>,
    /// Battles run on this machine (`battles.machine`, exactly).
    pub machine: Option<String>,
    /// Battles whose verdict this OS user gave (`battles.voted_by`,
    /// exactly).
    pub user: Option<String>,
}

/// Every finished (not running) battle `filter` selects, newest first like
/// [`battle_page`], with its finished contestants: one query. A blind
/// battle counts only once revealed: until the vote it is the user's to
/// judge, and its figures would tell its contestants apart.
pub fn ranked_battles(c: Conn<'_>, filter: &RankFilter) -> Result<Vec<RankedBattle>> {
    let battle_type = filter.battle_type.map(|t| t.as_str());
    let mut last: Option<String> = None;
    let rows = c.rows(
        "SELECT b.id, b.battle_type, CASE WHEN b.winner_source = 'user' THEN b.winner_id END,
                b.user_verdict,
                c.id, c.identity, c.model, c.duration_ms, c.tokens_per_sec, c.cost_usd,
                (SELECT output_chars FROM answers WHERE contestant_id = c.id)
         FROM battles b
         LEFT JOIN contestants c ON c.battle_id = b.id AND c.status = 'done'
         WHERE b.status <> 'running' AND (CAST(?1 AS TEXT) IS NULL OR b.battle_type = ?1)
           AND (CAST(?2 AS TEXT) IS NULL OR b.series_id = ?2)
           AND (CAST(?3 AS TEXT) IS NULL OR b.project_path = ?3)
           AND (CAST(?4 AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM battle_tags t WHERE t.battle_id = b.id AND t.tag = ?4))
           AND (CAST(?5 AS TEXT) IS NULL OR b.machine = ?5)
           AND (CAST(?6 AS TEXT) IS NULL OR b.voted_by = ?6)
           AND (b.blind = FALSE OR b.revealed_at IS NOT NULL)
         ORDER BY b.created_at DESC, b.id DESC, c.position",
        &[
            &battle_type,
            &filter.series_id,
            &filter.project,
            &filter.tag,
            &filter.machine,
            &filter.user,
        ],
        |r| {
            // A battle's fields once, on its first row (its rows come together).
            let id: String = r.get(0)?;
            let battle = if last.as_deref() == Some(id.as_str()) {
                None
            } else {
                last = Some(id.clone());
                Some(RankedBattle {
                    battle_id: id,
                    battle_type: parse(1, r.get(1)?)?,
                    user_winner: r.get(2)?,
                    user_verdict: r
                        .get::<Option<String>>(3)?
                        .map(|v| parse(3, v))
                        .transpose()?,
                    finished: Vec::new(),
                })
            };
            let finished = match r.get::<Option<String>>(4)? {
                None => None,
                Some(contestant_id) => Some((
                    contestant_id,
                    Entry {
                        player: Player::new(r.get::<String>(5)?, r.get::<String>(6)?),
                        duration_ms: r.get::<Option<i64>>(7)?.map(|v| v.max(0) as u64),
                        tokens_per_sec: r.get(8)?,
                        cost_usd: r.get(9)?,
                        output_chars: r.get::<Option<i64>>(10)?.map(|v| v.max(0) as u64),
                    },
                )),
            };
            Ok((battle, finished))
        },
    )?;
    let mut out: Vec<RankedBattle> = Vec::new();
    for (battle, finished) in rows {
        out.extend(battle);
        if let (Some(entry), Some(b)) = (finished, out.last_mut()) {
            b.finished.push(entry);
        }
    }
    Ok(out)
}

/// The stored payload of a kept event whose content its contestant's row
/// holds (a folded answer, its last status and benchmark, its result
/// file's path): [`events_since`] fills it from the row, so the text and
/// figures are kept once.
pub(crate) const FROM_ROW: &str = "";

/// The kinds a grouped marker stands for, in order: the events a Q&A
/// answer's end journals together (see `Tx::end_answer`), numbered with
/// the marker's `seq` as the last — its contestant's `end_seq` (or, for
/// ends recorded before migration 020, a journal row). Other kinds are
/// one event each.
pub(crate) fn marker_group(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        ANSWER_END => Some(&["benchmark", "contestant_status", "folded", "result_written"]),
        ANSWER_END_NO_FILE => Some(&["benchmark", "contestant_status", "folded"]),
        _ => None,
    }
}

/// A Q&A answer's end: its benchmark, its last status, its folded text
/// and its result file, all filled from its row.
pub(crate) const ANSWER_END: &str = "answer_end";
/// [`ANSWER_END`] for an answer whose file could not be written.
pub(crate) const ANSWER_END_NO_FILE: &str = "answer_end_no_file";

/// A journal marker's event, from its contestant's row (see [`FROM_ROW`]).
fn from_row(kind: &str, c: &Contestant) -> Result<EventKind> {
    Ok(match kind {
        "folded" => EventKind::Folded {
            output: c.output.clone().unwrap_or_default(),
            reasoning: c.reasoning.clone().unwrap_or_default(),
        },
        "contestant_status" => EventKind::ContestantStatus {
            status: c.status,
            error: c.error.clone(),
            attempt: c.attempts,
        },
        "benchmark" => EventKind::Benchmark {
            benchmark: c.benchmark.clone(),
        },
        "result_written" => EventKind::ResultWritten {
            path: c
                .result_path
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
        },
        other => {
            return Err(Error::Inconsistent(format!(
                "the journal holds a `{other}` marker, which no row fills"
            )))
        }
    })
}

pub fn events_since(
    c: Conn<'_>,
    battle_id: &str,
    since_seq: u64,
    limit: usize,
) -> Result<Vec<BattleEvent>> {
    let read = |r: &Row<'_>| {
        Ok((
            r.get::<i64>(0)?,
            r.get::<Option<String>>(1)?,
            r.get::<i64>(2)?,
            r.get::<String>(3)?,
            r.get::<String>(4)?,
        ))
    };
    let mut rows = c.rows(
        "SELECT seq, contestant_id, at, kind, payload FROM events
         WHERE battle_id = ?1 AND seq > ?2
         UNION ALL
         SELECT seq, contestant_id, at, kind, payload FROM live.events
         WHERE battle_id = ?1 AND seq > ?2
         ORDER BY seq LIMIT ?3",
        &[&battle_id, &(since_seq as i64), &(limit as i64)],
        read,
    )?;
    // Answers' ends numbered on their rows, as their markers would be
    // (merged in order; whatever lies past `limit` is cut below). A group
    // ends past `since_seq` when any of its events does.
    let ends = c.rows(
        &format!(
            "SELECT end_seq, id, finished_at,
                    CASE end_kinds WHEN 4 THEN '{ANSWER_END}' ELSE '{ANSWER_END_NO_FILE}' END,
                    '{FROM_ROW}'
             FROM contestants WHERE battle_id = ?1 AND end_seq > ?2"
        ),
        &[&battle_id, &(since_seq as i64)],
        read,
    )?;
    rows.extend(ends);
    // The battle's first and last status, numbered on its row.
    let statuses = c.rows(
        "SELECT start_seq, created_at, 'running' FROM battles
         WHERE id = ?1 AND start_seq > ?2
         UNION ALL
         SELECT end_seq, finished_at, status FROM battles WHERE id = ?1 AND end_seq > ?2",
        &[&battle_id, &(since_seq as i64)],
        |r| Ok((r.get::<i64>(0)?, r.get::<i64>(1)?, r.get::<String>(2)?)),
    )?;
    for (seq, at, status) in statuses {
        let kind = EventKind::BattleStatus {
            status: parse(2, status)?,
        };
        let payload = serde_json::to_string(&kind)?;
        rows.push((seq, None, at, kind.name().to_string(), payload));
    }
    rows.sort_by_key(|r| r.0);
    let mut events = Vec::new();
    // The rows markers are filled from, read once each.
    let mut rows_read: HashMap<String, Contestant> = HashMap::new();
    for (seq, contestant_id, at, name, payload) in rows {
        let at = time(Some(at)).unwrap_or_default();
        let event = |seq: i64, kind| BattleEvent {
            battle_id: battle_id.to_string(),
            seq: seq as u64,
            contestant_id: contestant_id.clone(),
            at,
            kind,
        };
        let Some(id) = contestant_id.as_ref().filter(|_| payload == FROM_ROW) else {
            events.push(event(seq, serde_json::from_str(&payload)?));
            continue;
        };
        if !rows_read.contains_key(id) {
            let row =
                contestant(c, id)?.ok_or_else(|| Error::not_found("contestant", id.clone()))?;
            rows_read.insert(id.clone(), row);
        }
        let row = &rows_read[id];
        match marker_group(&name) {
            // Only the group's events a viewer has not seen yet.
            Some(kinds) => {
                let first = seq - kinds.len() as i64 + 1;
                for (i, kind) in kinds.iter().enumerate() {
                    let seq = first + i as i64;
                    if seq > since_seq as i64 {
                        events.push(event(seq, from_row(kind, row)?));
                    }
                }
            }
            None => events.push(event(seq, from_row(&name, row)?)),
        }
    }
    events.truncate(limit);
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
    /// The table of what the lease is on (keyed by `id`).
    pub(crate) fn owner_table(self) -> &'static str {
        match self {
            LeaseOf::Battle => "battles",
            LeaseOf::Series => "series",
        }
    }

    /// The table and its key column.
    pub(crate) fn table(self) -> (&'static str, &'static str) {
        match self {
            LeaseOf::Battle => ("live.leases", "battle_id"),
            LeaseOf::Series => ("live.series_leases", "series_id"),
        }
    }
}

pub fn lease(c: Conn<'_>, battle_id: &str) -> Result<Option<Lease>> {
    lease_of(c, LeaseOf::Battle, battle_id)
}

pub(crate) fn lease_of(c: Conn<'_>, of: LeaseOf, id: &str) -> Result<Option<Lease>> {
    let (table, key) = of.table();
    c.opt_row(
        &format!("SELECT owner, host, pid, expires_at FROM {table} WHERE {key} = ?1"),
        &[&id],
        |r| {
            Ok(Lease {
                owner: r.get(0)?,
                host: r.get(1)?,
                pid: r.get(2)?,
                expires_at_ms: r.get(3)?,
            })
        },
    )
}

fn json_col<T: serde::de::DeserializeOwned + Default>(text: Option<String>) -> T {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn enum_col<T: serde::de::DeserializeOwned>(idx: usize, text: String) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(text))
        .map_err(|e| Error::Inconsistent(format!("column {idx}: {e}")))
}

pub fn latest_analysis(c: Conn<'_>, battle_id: &str) -> Result<Option<Analysis>> {
    c.opt_row(
        "SELECT id, battle_id, status, model, provider, outcome, winner_id, ranking, reasons, digests,
                judge_runs, error, created_at, finished_at, cost_usd
         FROM analyses WHERE battle_id = ?1 ORDER BY created_at DESC, id DESC LIMIT 1",
        &[&battle_id],
        |r| {
            Ok(Analysis {
                id: r.get(0)?,
                battle_id: r.get(1)?,
                status: enum_col(2, r.get(2)?)?,
                model: r.get(3)?,
                provider: r.get(4)?,
                outcome: r
                    .get::<Option<String>>(5)?
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
        },
    )
}

pub fn cross_examinations(c: Conn<'_>, battle_id: &str) -> Result<Vec<CrossExamination>> {
    c.rows(
        "SELECT id, battle_id, number, identity, model, provider, question, status, output, verdict,
                error, path, created_at, finished_at
         FROM cross_examinations WHERE battle_id = ?1 ORDER BY number",
        &[&battle_id],
        |r| {
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
                    .get::<Option<String>>(9)?
                    .and_then(|v| serde_json::from_str(&v).ok()),
                error: r.get(10)?,
                path: r.get::<Option<String>>(11)?.map(PathBuf::from),
                created_at: time(Some(r.get(12)?)).unwrap_or_default(),
                finished_at: time(r.get(13)?),
            })
        },
    )
}

/// A contestant's refinement rounds (2, 3, …), in order.
pub fn rounds(c: Conn<'_>, contestant_id: &str) -> Result<Vec<Round>> {
    c.rows(
        "SELECT id, contestant_id, number, feedback, status, output, error, diff_stats, check_result,
                    duration_ms, result_path, created_at, finished_at, cost_usd
             FROM rounds WHERE contestant_id = ?1 ORDER BY number",
        &[&contestant_id],
        |r| {
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
                    .get::<Option<String>>(7)?
                    .and_then(|t| serde_json::from_str(&t).ok()),
                check: r
                    .get::<Option<String>>(8)?
                    .and_then(|t| serde_json::from_str(&t).ok()),
                duration_ms: r.get::<Option<i64>>(9)?.map(|v| v.max(0) as u64),
                result_path: r.get::<Option<String>>(10)?.map(PathBuf::from),
                created_at: time_ms(r.get(11)?),
                finished_at: r.get::<Option<i64>>(12)?.map(time_ms),
                cost_usd: r.get(13)?,
            })
        },
    )
}

/// The `seq` of a battle's newest event (0 when it has none).
pub fn last_seq(c: Conn<'_>, battle_id: &str) -> Result<u64> {
    let seq: Option<i64> = c.row(
        "SELECT MAX(m) FROM (
         SELECT MAX(seq) AS m FROM events WHERE battle_id = ?1
         UNION ALL SELECT MAX(seq) FROM live.events WHERE battle_id = ?1
         UNION ALL SELECT MAX(end_seq) FROM contestants WHERE battle_id = ?1
         UNION ALL SELECT start_seq FROM battles WHERE id = ?1
         UNION ALL SELECT end_seq FROM battles WHERE id = ?1) AS newest",
        &[&battle_id],
        |r| r.get(0),
    )?;
    Ok(seq.unwrap_or(0).max(0) as u64)
}

/// A lane's tickets, holding and waiting.
pub fn tickets(c: Conn<'_>, lane: &str) -> Result<Vec<Ticket>> {
    c.rows(
        "SELECT id, ready_at, position, holder, granted_at IS NOT NULL, owner, host, pid, expires_at
         FROM live.lane_tickets WHERE lane = ?1",
        &[&lane],
        |r| {
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
        },
    )
}

/// When the lane granted slots in the minute before `now_ms`.
pub fn lane_starts(c: Conn<'_>, lane: &str, now_ms: i64) -> Result<Vec<i64>> {
    c.rows(
        "SELECT at FROM live.lane_grants WHERE lane = ?1 AND at > ?2",
        &[&lane, &(now_ms - 60_000)],
        |r| r.get(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The query plan of `sql`, one step per line.
    fn plan(c: Conn<'_>, sql: &str, values: &[Value]) -> String {
        let steps: Vec<String> = c
            .rows(
                &format!("EXPLAIN QUERY PLAN {sql}"),
                &params_of(values),
                |r| r.get(3),
            )
            .unwrap();
        steps.join("\n")
    }

    /// The plan of a history page, without the steps reading each row's
    /// tags (by `battle_tags`' primary key) and newest analysis (by
    /// `analyses_battle`): asserted once, here.
    fn page_plan(c: Conn<'_>, q: &BattleQuery) -> String {
        let (filter, mut values) = battle_filter(q);
        values.extend([Value::Int(50), Value::Int(0)]);
        let full = plan(
            c,
            &format!(
                "SELECT {BATTLE_COLUMNS} FROM battles b{filter}
                 ORDER BY b.created_at DESC, b.id DESC LIMIT ? OFFSET ?"
            ),
            &values,
        );
        assert!(
            full.contains("SEARCH t USING PRIMARY KEY (battle_id=?)"),
            "{full}"
        );
        assert!(
            full.contains("SEARCH a USING INDEX analyses_battle (battle_id=?)"),
            "{full}"
        );
        full.lines()
            .filter(|l| {
                ![
                    "SUBQUERY",
                    "CO-ROUTINE",
                    "SEARCH t ",
                    "SEARCH a ",
                    "(subquery-",
                ]
                .iter()
                .any(|s| l.contains(s))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_history_queries_use_indices() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::Store::open(&dir.path().join("a.db")).unwrap();
        store
            .query(|c| {
                let all = page_plan(c, &BattleQuery::default());
                assert_eq!(all, "SCAN b USING INDEX battles_newest");
                let by_status = page_plan(
                    c,
                    &BattleQuery {
                        status: Some(arena_domain::battle::BattleStatus::Done),
                        ..BattleQuery::default()
                    },
                );
                // Most battles are done: the newest first, filtered.
                assert_eq!(by_status, "SCAN b USING INDEX battles_newest");
                let by_type = page_plan(
                    c,
                    &BattleQuery {
                        battle_type: Some(BattleType::Qa),
                        search: Some("rust".into()),
                        ..BattleQuery::default()
                    },
                );
                assert!(by_type.starts_with("SCAN b USING INDEX battles_newest"));
                assert!(by_type.contains(
                    "SEARCH c USING INDEX sqlite_autoindex_contestants_2 (battle_id=?)"
                ));
                assert!(!by_type.contains("TEMP B-TREE"), "{by_type}");
                let by_series = page_plan(
                    c,
                    &BattleQuery {
                        series_id: Some("s".into()),
                        ..BattleQuery::default()
                    },
                );
                // A series' battles, sorted.
                assert_eq!(
                    by_series,
                    "SEARCH b USING INDEX battles_series_slot (series_id=?)\nUSE TEMP B-TREE FOR ORDER BY"
                );
                let columns = contestant_columns(true);
                let summaries = plan(
                    c,
                    &format!(
                        "SELECT {columns} FROM contestants WHERE battle_id IN (?, ?)
                         ORDER BY battle_id, position"
                    ),
                    &[Value::Text("a".into()), Value::Text("b".into())],
                );
                assert!(
                    summaries.starts_with(
                        "SEARCH contestants USING INDEX sqlite_autoindex_contestants_2 (battle_id=?)"
                    ),
                    "{summaries}"
                );
                let ranked = plan(
                    c,
                    "SELECT b.id, c.id FROM battles b
                     LEFT JOIN contestants c ON c.battle_id = b.id AND c.status = 'done'
                     WHERE b.status <> 'running' AND (CAST(?1 AS TEXT) IS NULL OR b.battle_type = ?1)
                     ORDER BY b.created_at DESC, b.id DESC, c.position",
                    &[Value::Text("no such type".into())],
                );
                // Only each battle's few contestants are sorted.
                assert!(ranked.starts_with("SCAN b USING INDEX battles_newest"));
                assert!(ranked.contains("SEARCH c USING INDEX sqlite_autoindex_contestants_2"));
                assert!(!ranked.contains("TEMP B-TREE FOR ORDER BY"), "{ranked}");
                Ok(())
            })
            .unwrap();
    }
}
