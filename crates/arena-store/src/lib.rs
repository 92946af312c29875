//! SQLite storage: battles, contestants, the event journal and leases.
//!
//! One connection behind a mutex; callers on async threads go through
//! `Engine::db`, which runs the closure in `spawn_blocking`. Every write is a
//! [`Tx`]: its state changes and the events that describe them commit
//! together, and the events are broadcast in sequence order after the commit,
//! still under the lock, so live viewers see exactly the journal's order.

mod error;
mod rows;
mod series;

pub use error::{Error, Result};

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use rusqlite_migration::{Migrations, M};
use tokio::sync::broadcast;

use arena_domain::analysis::{Analysis, AnalysisStatus, Outcome};
use arena_domain::battle::{
    Battle, BattleQuery, BattleStatus, Contestant, ContestantStatus, Lane, Round, RunSpec,
    UserVerdict, Winner,
};
use arena_domain::cross_exam::CrossExamination;
use arena_domain::decisions::{self, LaneSpec, Lease, Ticket, Turn};
use arena_domain::event::{BattleEvent, EventKind};

pub use rows::{ms, RankFilter, RankedBattle};

/// A unit enum's serde name (`"no_clear_winner"`), as stored in a TEXT column.
fn serde_plain<T: serde::Serialize>(v: &T) -> Result<String> {
    match serde_json::to_value(v)? {
        serde_json::Value::String(s) => Ok(s),
        other => Ok(other.to_string()),
    }
}

pub const DATABASE_FILE: &str = "arena.db";

/// SQL functions the queries use (see [`rows::FOLD_FUNCTION`]).
fn register_functions(conn: &Connection) -> Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        rows::FOLD_FUNCTION,
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            Ok(match ctx.get_raw(0) {
                rusqlite::types::ValueRef::Text(t) => {
                    Some(String::from_utf8_lossy(t).to_lowercase())
                }
                _ => None,
            })
        },
    )?;
    Ok(())
}

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(include_str!("../migrations/001_init.sql")),
        M::up(include_str!("../migrations/002_analysis.sql")),
        M::up(include_str!("../migrations/003_coding.sql")),
        M::up(include_str!("../migrations/004_rounds.sql")),
        M::up(include_str!("../migrations/005_lanes.sql")),
        M::up(include_str!("../migrations/006_owners.sql")),
        M::up(include_str!("../migrations/007_work_cancel.sql")),
        M::up(include_str!("../migrations/008_series.sql")),
        M::up(include_str!("../migrations/009_history.sql")),
        M::up(include_str!("../migrations/010_blind.sql")),
        M::up(include_str!("../migrations/011_series_error.sql")).foreign_key_check(),
        M::up(include_str!("../migrations/012_series_tags.sql")),
    ])
}

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    events: broadcast::Sender<BattleEvent>,
    path: PathBuf,
    /// The lease owner this handle writes as (see [`Store::acting_as`]).
    owner: Option<Arc<str>>,
}

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
    /// Opens (creating) the database file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        // Processes starting together (the app, CLIs, a series) take turns
        // at setting up the file and migrating it: migrations are not safe
        // to run twice at once. The kernel drops the lock if one dies.
        let lock_path = path.with_extension("db.lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        lock.lock().map_err(|e| Error::io(&lock_path, e))?;
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        register_functions(&conn)?;
        // Off while the schema changes (a table rebuilt must not cascade
        // into the rows that point at it); migrations that rebuild check
        // the foreign keys before they commit.
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        migrations().to_latest(&mut conn)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        drop(lock);
        let (events, _) = broadcast::channel(4096);
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
            events,
            path: path.to_path_buf(),
            owner: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// This store, writing as lease owner `owner`: a battle's contestants,
    /// rounds and status change only while `owner` holds its lease (when
    /// the battle has one), so a process that lost the lease — stopped,
    /// while another resumed the battle — cannot overwrite the new
    /// owner's work.
    pub fn acting_as(mut self, owner: &str) -> Store {
        self.owner = Some(Arc::from(owner));
        self
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (the
        // transaction rolls back on drop), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Live events of every battle, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<BattleEvent> {
        self.events.subscribe()
    }

    /// Runs `f` in one immediate transaction; broadcasts its events on commit.
    pub fn transact<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut wrapped = Tx {
            tx,
            pending: Vec::new(),
            seqs: HashMap::new(),
            owner: self.owner.clone(),
        };
        let value = f(&mut wrapped)?;
        let Tx { tx, pending, .. } = wrapped;
        tx.commit()?;
        for event in pending {
            // No receivers is fine: nobody is watching live.
            let _ = self.events.send(event);
        }
        Ok(value)
    }

    /// Runs read-only queries.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.lock();
        f(&conn)
    }

    pub fn battle(&self, id: &str) -> Result<Battle> {
        self.read(|c| rows::battle(c, id))?
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
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        let page = rows::battle_page(&tx, query)?;
        tx.commit()?;
        Ok(page)
    }

    /// Every finished battle (of `battle_type`, if given), newest first,
    /// with its finished contestants: what the leaderboard ranks.
    pub fn ranked_battles(&self, filter: &RankFilter) -> Result<Vec<RankedBattle>> {
        self.read(|c| rows::ranked_battles(c, filter))
    }

    pub fn battle_count(&self) -> Result<u64> {
        self.read(|c| {
            Ok(c.query_row("SELECT COUNT(*) FROM battles", [], |r| r.get::<_, i64>(0))? as u64)
        })
    }

    /// The full id of the battle whose id is, starts with, or ends with
    /// `key` (the short name of `battle::short_id`).
    pub fn resolve_battle_id(&self, key: &str) -> Result<String> {
        self.resolve_id("battle", key)
    }

    /// The full id of the `what` (`battle` or `series`) whose id is, starts
    /// with, or ends with `key`.
    fn resolve_id(&self, what: &'static str, key: &str) -> Result<String> {
        let table = if what == "series" {
            "series"
        } else {
            "battles"
        };
        let key = key.trim();
        let bare = key.replace(['%', '_'], "");
        let (prefix, suffix) = (format!("{bare}%"), format!("%{bare}"));
        let ids: Vec<String> = self.read(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT id FROM {table} WHERE id = ?1 OR id LIKE ?2 OR id LIKE ?3 LIMIT 3"
            ))?;
            let ids = stmt
                .query_map(params![key, prefix, suffix], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(ids)
        })?;
        if let Some(exact) = ids.iter().find(|id| id.as_str() == key) {
            return Ok(exact.clone());
        }
        match ids.as_slice() {
            [one] if !key.is_empty() => Ok(one.clone()),
            [] | [_] => Err(Error::not_found(what, key)),
            _ => Err(arena_domain::Invalid::Other(format!(
                "{what} id `{key}` is ambiguous; give more of it"
            ))
            .into()),
        }
    }

    /// Ids of battles still marked running, oldest first.
    pub fn running_battles(&self) -> Result<Vec<String>> {
        self.read(|c| {
            let mut stmt =
                c.prepare("SELECT id FROM battles WHERE status = 'running' ORDER BY created_at")?;
            let ids = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(ids)
        })
    }

    /// Journaled events with `seq > since_seq`, at most `limit`.
    pub fn events_since(
        &self,
        battle_id: &str,
        since_seq: u64,
        limit: usize,
    ) -> Result<Vec<BattleEvent>> {
        self.read(|c| rows::events_since(c, battle_id, since_seq, limit))
    }

    /// The newest analysis of a battle.
    pub fn latest_analysis(&self, battle_id: &str) -> Result<Option<Analysis>> {
        self.read(|c| rows::latest_analysis(c, battle_id))
    }

    /// Each battle's newest analysis outcome and the winner it chose (a
    /// contestant id), for the leaderboard.
    pub fn analysis_outcomes(&self) -> Result<HashMap<String, (Outcome, Option<String>)>> {
        self.outcomes_of(None)
    }

    /// [`Store::analysis_outcomes`] of one series' battles.
    pub fn series_analysis_outcomes(
        &self,
        series_id: &str,
    ) -> Result<HashMap<String, (Outcome, Option<String>)>> {
        self.outcomes_of(Some(series_id))
    }

    fn outcomes_of(
        &self,
        series_id: Option<&str>,
    ) -> Result<HashMap<String, (Outcome, Option<String>)>> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT battle_id, outcome, winner_id FROM analyses a
                 WHERE status = 'done' AND outcome IS NOT NULL AND created_at = (
                     SELECT MAX(created_at) FROM analyses b WHERE b.battle_id = a.battle_id AND b.status = 'done')
                   AND (?1 IS NULL OR battle_id IN (SELECT id FROM battles WHERE series_id = ?1))",
            )?;
            let rows = stmt.query_map([series_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })?;
            let mut map = HashMap::new();
            for row in rows {
                let (battle, outcome, winner) = row?;
                if let Ok(o) = serde_json::from_value(serde_json::Value::String(outcome)) {
                    map.insert(battle, (o, winner));
                }
            }
            Ok(map)
        })
    }

    /// A contestant's refinement rounds (2, 3, …), in order.
    pub fn rounds(&self, contestant_id: &str) -> Result<Vec<Round>> {
        self.read(|c| rows::rounds(c, contestant_id))
    }

    /// Everything the battle view shows, read in one transaction, with the
    /// `seq` of the battle's newest event at that moment: a viewer applies
    /// state events only when newer than that.
    pub fn battle_detail(&self, id: &str) -> Result<BattleDetail> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        let battle = rows::battle(&tx, id)?.ok_or_else(|| Error::not_found("battle", id))?;
        let mut rounds = BTreeMap::new();
        for c in &battle.contestants {
            rounds.insert(c.id.clone(), rows::rounds(&tx, &c.id)?);
        }
        let detail = BattleDetail {
            analysis: rows::latest_analysis(&tx, id)?,
            cross_examinations: rows::cross_examinations(&tx, id)?,
            rounds,
            last_seq: rows::last_seq(&tx, id)?,
            battle,
        };
        tx.commit()?;
        Ok(detail)
    }

    /// A battle's cross-examinations, in order.
    pub fn cross_examinations(&self, battle_id: &str) -> Result<Vec<CrossExamination>> {
        self.read(|c| rows::cross_examinations(c, battle_id))
    }

    pub fn lease(&self, battle_id: &str) -> Result<Option<Lease>> {
        self.read(|c| rows::lease(c, battle_id))
    }

    /// Whether a piece of work is still running.
    pub fn work_running(&self, work: Work, id: &str) -> Result<bool> {
        self.read(|c| {
            Ok(c.query_row(
                &format!(
                    "SELECT status = 'running' FROM {} WHERE id = ?1",
                    work.table()
                ),
                [id],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(false))
        })
    }

    /// Whether a piece of work was asked to stop.
    pub fn work_cancel_requested(&self, work: Work, id: &str) -> Result<bool> {
        self.read(|c| {
            Ok(c.query_row(
                &format!(
                    "SELECT cancel_requested FROM {} WHERE id = ?1",
                    work.table()
                ),
                [id],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(false))
        })
    }

    /// A lane's tickets (holding and waiting) and its starts of the last
    /// minute, read without taking the write lock: waiters poll this, and
    /// write only when it says their turn may have come.
    pub fn lane_queue(&self, lane: &str, now_ms: i64) -> Result<(Vec<Ticket>, Vec<i64>)> {
        self.read(|c| Ok((rows::tickets(c, lane)?, rows::lane_starts(c, lane, now_ms)?)))
    }
}

/// Work that runs outside a battle's drive and is recorded as `running`
/// until it ends: a process that dies leaves it so (see
/// [`Tx::interrupt_orphans`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    Analysis,
    CrossExamination,
    Round,
}

impl Work {
    fn table(self) -> &'static str {
        match self {
            Work::Analysis => "analyses",
            Work::CrossExamination => "cross_examinations",
            Work::Round => "rounds",
        }
    }
}

/// A piece of [`Work`] whose process stopped before it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Orphan {
    pub work: Work,
    pub id: String,
    pub battle_id: String,
    /// The model an analysis was judging with.
    pub model: String,
}

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

/// A write transaction that also collects the events it journals.
pub struct Tx<'c> {
    tx: Transaction<'c>,
    pending: Vec<BattleEvent>,
    seqs: HashMap<String, u64>,
    owner: Option<Arc<str>>,
}

impl Tx<'_> {
    /// Fails with `Conflict` when another process holds the battle's lease
    /// now (see [`Store::acting_as`]); a driver's writes of a contestant's
    /// output start with it.
    pub fn require_lease(&self, battle_id: &str) -> Result<()> {
        let Some(owner) = &self.owner else {
            return Ok(());
        };
        match rows::lease(&self.tx, battle_id)? {
            Some(lease) if lease.owner != **owner => Err(Error::Conflict(format!(
                "battle {battle_id} is now driven by process {} on {}; this process writes nothing more to it",
                lease.pid, lease.host
            ))),
            _ => Ok(()),
        }
    }

    pub fn conn(&self) -> &Connection {
        &self.tx
    }

    /// Journals an event with the battle's next sequence number.
    pub fn emit(
        &mut self,
        battle_id: &str,
        contestant_id: Option<&str>,
        at: DateTime<Utc>,
        kind: EventKind,
    ) -> Result<BattleEvent> {
        let seq = match self.seqs.get(battle_id) {
            Some(seq) => seq + 1,
            None => {
                let max: i64 = self.tx.query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM events WHERE battle_id = ?1",
                    [battle_id],
                    |r| r.get(0),
                )?;
                max as u64 + 1
            }
        };
        self.seqs.insert(battle_id.to_string(), seq);
        let payload = serde_json::to_string(&kind)?;
        self.tx.execute(
            "INSERT INTO events (battle_id, seq, contestant_id, at, kind, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![battle_id, seq as i64, contestant_id, ms(at), kind.name(), payload],
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

    pub fn insert_battle(&mut self, b: &NewBattle) -> Result<()> {
        self.tx.execute(
            "INSERT INTO battles (id, battle_type, status, prompt, project_path, results_path, created_at, base_commit, check_command, series_id, series_slot, blind)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
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
                b.blind
            ],
        )?;
        self.write_tags(&b.id, &b.tags)?;
        for (position, c) in b.contestants.iter().enumerate() {
            self.tx.execute(
                "INSERT INTO contestants (id, battle_id, position, identity, model, provider, lane, status, run_spec, label)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', ?8, ?9)",
                params![
                    c.id,
                    b.id,
                    position as i64,
                    c.identity,
                    c.model,
                    c.provider,
                    c.lane.as_str(),
                    serde_json::to_string(&c.run)?,
                    c.label
                ],
            )?;
        }
        self.emit(
            &b.id,
            None,
            b.created_at,
            EventKind::BattleStatus {
                status: BattleStatus::Running,
            },
        )?;
        Ok(())
    }

    pub fn contestant(&self, id: &str) -> Result<Contestant> {
        rows::contestant(&self.tx, id)?.ok_or_else(|| Error::not_found("contestant", id))
    }

    pub fn contestants(&self, battle_id: &str) -> Result<Vec<Contestant>> {
        rows::contestants(&self.tx, battle_id)
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
        self.require_lease(&c.battle_id)?;
        let attempts_inc = i64::from(to == ContestantStatus::Running);
        let finished_at = to.is_terminal().then(|| ms(at));
        let changed = self.tx.execute(
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
            let attempt = c.attempts + attempts_inc as u32;
            self.emit(
                &c.battle_id,
                Some(&c.id),
                at,
                EventKind::ContestantStatus {
                    status: to,
                    error: error.map(str::to_string),
                    attempt,
                },
            )?;
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
        bench: &arena_domain::battle::Benchmark,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        self.require_lease(&c.battle_id)?;
        let changed = self.tx.execute(
            "UPDATE contestants SET status = ?1, error = ?2, finished_at = ?3, output = ?4,
                reasoning = ?5, truncated = ?6, duration_ms = ?7, ttft_ms = ?8, prompt_tokens = ?9,
                completion_tokens = ?10, cached_tokens = ?11, tokens_per_sec = ?12, rate_source = ?13,
                prompt_per_sec = ?15, model_switched = ?16, cost_usd = ?17
             WHERE id = ?14 AND status = 'running'",
            params![
                status.as_str(),
                error,
                ms(at),
                output,
                (!reasoning.is_empty()).then_some(reasoning),
                truncated,
                bench.duration_ms.map(|v| v as i64),
                bench.ttft_ms.map(|v| v as i64),
                bench.prompt_tokens.map(|v| v as i64),
                bench.completion_tokens.map(|v| v as i64),
                bench.cached_tokens.map(|v| v as i64),
                bench.tokens_per_sec,
                bench.rate_source.map(|s| s.as_str()),
                c.id,
                bench.prompt_per_sec,
                bench.model_switched,
                bench.cost_usd
            ],
        )?;
        if changed == 1 {
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
        self.tx.execute(
            "UPDATE contestants SET result_path = ?1 WHERE id = ?2",
            params![text, c.id],
        )?;
        self.emit(
            &c.battle_id,
            Some(&c.id),
            at,
            EventKind::ResultWritten {
                path: text.into_owned(),
            },
        )?;
        Ok(())
    }

    pub fn request_cancel(&mut self, battle_id: &str, contestant_id: Option<&str>) -> Result<()> {
        match contestant_id {
            Some(id) => self.tx.execute(
                "UPDATE contestants SET cancel_requested = 1 WHERE id = ?1 AND battle_id = ?2",
                params![id, battle_id],
            )?,
            None => self.tx.execute(
                "UPDATE battles SET cancel_requested = 1 WHERE id = ?1",
                [battle_id],
            )?,
        };
        Ok(())
    }

    /// Marks the battle finished (if it is still running).
    pub fn finish_battle(
        &mut self,
        battle_id: &str,
        status: BattleStatus,
        at: DateTime<Utc>,
    ) -> Result<bool> {
        self.require_lease(battle_id)?;
        let changed = self.tx.execute(
            "UPDATE battles SET status = ?1, finished_at = ?2 WHERE id = ?3 AND status = 'running'",
            params![status.as_str(), ms(at), battle_id],
        )?;
        if changed == 1 {
            self.emit(battle_id, None, at, EventKind::BattleStatus { status })?;
        }
        Ok(changed == 1)
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
    /// analysis's winner, if any, is passed back in). With `reveal`, a
    /// blind battle is revealed too (once); every viewer hears of it.
    pub fn set_vote(
        &mut self,
        battle_id: &str,
        winner: Option<&Winner>,
        verdict: Option<UserVerdict>,
        reveal: bool,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.tx.execute(
            "UPDATE battles SET user_verdict = ?1 WHERE id = ?2",
            params![verdict.map(|v| v.as_str()), battle_id],
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
        self.tx.execute(
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

    /// Takes the lease if it is free (see `decisions::lease_is_free`).
    pub fn take_lease(
        &mut self,
        battle_id: &str,
        me: &Lease,
        now_ms: i64,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<bool> {
        self.take_lease_of(rows::LeaseOf::Battle, battle_id, me, now_ms, pid_alive)
    }

    /// Takes (or keeps) the lease on a battle or a series when it is free
    /// (see `decisions::lease_is_free`).
    pub(crate) fn take_lease_of(
        &mut self,
        of: rows::LeaseOf,
        id: &str,
        me: &Lease,
        now_ms: i64,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<bool> {
        let current = rows::lease_of(&self.tx, of, id)?;
        if !arena_domain::decisions::lease_is_free(
            current.as_ref(),
            &me.owner,
            &me.host,
            now_ms,
            pid_alive,
        ) {
            return Ok(false);
        }
        let (table, key) = of.table();
        self.tx.execute(
            &format!(
                "INSERT INTO {table} ({key}, owner, host, pid, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT ({key}) DO UPDATE SET owner = ?2, host = ?3, pid = ?4, expires_at = ?5"
            ),
            params![id, me.owner, me.host, me.pid, me.expires_at_ms],
        )?;
        Ok(true)
    }

    /// Extends our lease; false when someone else holds it now.
    pub fn renew_lease(
        &mut self,
        battle_id: &str,
        owner: &str,
        expires_at_ms: i64,
    ) -> Result<bool> {
        let n = self.tx.execute(
            "UPDATE leases SET expires_at = ?1 WHERE battle_id = ?2 AND owner = ?3",
            params![expires_at_ms, battle_id, owner],
        )?;
        Ok(n == 1)
    }

    pub fn release_lease(&mut self, battle_id: &str, owner: &str) -> Result<()> {
        self.release_lease_of(rows::LeaseOf::Battle, battle_id, owner)
    }

    pub(crate) fn release_lease_of(
        &mut self,
        of: rows::LeaseOf,
        id: &str,
        owner: &str,
    ) -> Result<()> {
        let (table, key) = of.table();
        self.tx.execute(
            &format!("DELETE FROM {table} WHERE {key} = ?1 AND owner = ?2"),
            params![id, owner],
        )?;
        Ok(())
    }

    pub fn insert_analysis(&mut self, a: &Analysis) -> Result<()> {
        self.tx.execute(
            "INSERT INTO analyses (id, battle_id, status, model, provider, created_at) VALUES (?1, ?2, 'running', ?3, ?4, ?5)",
            params![a.id, a.battle_id, a.model, a.provider, ms(a.created_at)],
        )?;
        self.emit(
            &a.battle_id,
            None,
            a.created_at,
            EventKind::AnalysisStatus {
                analysis_id: a.id.clone(),
                status: AnalysisStatus::Running,
                outcome: None,
                winner: None,
                error: None,
            },
        )?;
        Ok(())
    }

    /// Stores a finished (or failed) analysis and announces it.
    pub fn finish_analysis(&mut self, a: &Analysis, at: DateTime<Utc>) -> Result<()> {
        self.tx.execute(
            "UPDATE analyses SET status = ?1, outcome = ?2, winner_id = ?3, ranking = ?4, reasons = ?5,
                digests = ?6, judge_runs = ?7, error = ?8, finished_at = ?9, cost_usd = ?11 WHERE id = ?10",
            params![
                serde_plain(&a.status)?,
                a.outcome.as_ref().map(serde_plain).transpose()?,
                a.winner,
                serde_json::to_string(&a.ranking)?,
                serde_json::to_string(&a.reasons)?,
                serde_json::to_string(&a.digests)?,
                serde_json::to_string(&a.judge_runs)?,
                a.error,
                ms(at),
                a.id,
                a.cost_usd
            ],
        )?;
        self.emit(
            &a.battle_id,
            None,
            at,
            EventKind::AnalysisStatus {
                analysis_id: a.id.clone(),
                status: a.status,
                outcome: a.outcome,
                winner: a.winner.clone(),
                error: a.error.clone(),
            },
        )?;
        Ok(())
    }

    /// Starts refinement round `number` of a contestant.
    pub fn insert_round(&mut self, battle_id: &str, round: &Round) -> Result<()> {
        self.tx.execute(
            "INSERT INTO rounds (id, contestant_id, number, feedback, status, created_at) VALUES (?1, ?2, ?3, ?4, 'running', ?5)",
            params![round.id, round.contestant_id, round.number, round.feedback, ms(round.created_at)],
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
        self.tx.execute(
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

    pub fn battle_winner(&self, battle_id: &str) -> Result<Option<Winner>> {
        Ok(rows::battle(&self.tx, battle_id)?.and_then(|b| b.winner))
    }

    /// Whether the user has decided the battle: chosen a winner, or voted
    /// a tie or "all bad". The analysis then no longer sets the winner.
    pub fn user_decided(&self, battle_id: &str) -> Result<bool> {
        Ok(self
            .tx
            .query_row(
                "SELECT winner_source = 'user' OR user_verdict IS NOT NULL FROM battles WHERE id = ?1",
                [battle_id],
                |r| r.get::<_, Option<bool>>(0),
            )
            .optional()?
            .flatten()
            .unwrap_or(false))
    }

    /// Reveals a blind battle (once): from now on viewers see its names.
    /// Returns whether this call revealed it.
    pub fn reveal(&mut self, battle_id: &str, at: DateTime<Utc>) -> Result<bool> {
        let changed = self.tx.execute(
            "UPDATE battles SET revealed_at = ?1 WHERE id = ?2 AND blind = 1 AND revealed_at IS NULL",
            params![ms(at), battle_id],
        )?;
        if changed == 1 {
            self.emit(battle_id, None, at, EventKind::Revealed)?;
        }
        Ok(changed == 1)
    }

    /// Replaces a battle's tags (already normalised, see `blind::tags`).
    pub fn write_tags(&mut self, battle_id: &str, tags: &[String]) -> Result<()> {
        self.tx
            .execute("DELETE FROM battle_tags WHERE battle_id = ?1", [battle_id])?;
        for tag in tags {
            self.tx.execute(
                "INSERT OR IGNORE INTO battle_tags (battle_id, tag) VALUES (?1, ?2)",
                params![battle_id, tag],
            )?;
        }
        Ok(())
    }

    pub fn insert_cross_examination(&mut self, x: &CrossExamination) -> Result<u32> {
        let number: u32 = self.tx.query_row(
            "SELECT COALESCE(MAX(number), 0) + 1 FROM cross_examinations WHERE battle_id = ?1",
            [&x.battle_id],
            |r| r.get(0),
        )?;
        self.tx.execute(
            "INSERT INTO cross_examinations (id, battle_id, number, identity, model, provider, question, status, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8)",
            params![x.id, x.battle_id, number, x.identity, x.model, x.provider, x.question, ms(x.created_at)],
        )?;
        self.emit(
            &x.battle_id,
            None,
            x.created_at,
            EventKind::CrossExamStatus {
                cross_exam_id: x.id.clone(),
                number,
                status: AnalysisStatus::Running,
                error: None,
            },
        )?;
        Ok(number)
    }

    pub fn finish_cross_examination(
        &mut self,
        x: &CrossExamination,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.tx.execute(
            "UPDATE cross_examinations SET status = ?1, output = ?2, verdict = ?3, error = ?4, path = ?5, finished_at = ?6 WHERE id = ?7",
            params![
                serde_plain(&x.status)?,
                x.output,
                x.verdict.as_ref().map(serde_json::to_string).transpose()?,
                x.error,
                x.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
                ms(at),
                x.id
            ],
        )?;
        self.emit(
            &x.battle_id,
            None,
            at,
            EventKind::CrossExamStatus {
                cross_exam_id: x.id.clone(),
                number: x.number,
                status: x.status,
                error: x.error.clone(),
            },
        )?;
        Ok(())
    }

    /// Joins a lane's queue; returns the ticket's id.
    pub fn enqueue_ticket(&mut self, t: &NewTicket<'_>) -> Result<i64> {
        self.tx.execute(
            "INSERT INTO lane_tickets (lane, ready_at, position, holder, battle_id, contestant_id, model, owner, host, pid, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                t.lane,
                t.ready_at_ms,
                t.position,
                t.holder,
                t.battle_id,
                t.contestant_id,
                t.model,
                t.lease.owner,
                t.lease.host,
                t.lease.pid,
                t.lease.expires_at_ms
            ],
        )?;
        Ok(self.tx.last_insert_rowid())
    }

    /// Takes a slot of the lane for `ticket` if it is its turn: tickets of
    /// processes that are gone are dropped first, then
    /// [`decisions::lane_turn`] decides. A granted slot records the start
    /// (for the start rate) and the lane's model.
    pub fn take_turn(
        &mut self,
        ticket: i64,
        spec: &LaneSpec,
        model: &str,
        now_ms: i64,
        my_host: &str,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<TakeTurn> {
        let all = rows::tickets(&self.tx, &spec.key)?;
        let (stale, live): (Vec<Ticket>, Vec<Ticket>) = all
            .into_iter()
            .partition(|t| decisions::ticket_is_stale(t, my_host, now_ms, &pid_alive));
        for t in &stale {
            tracing::info!(lane = %spec.key, holder = %t.holder, pid = t.lease.pid, "dropping the lane ticket of a process that is gone");
            self.tx
                .execute("DELETE FROM lane_tickets WHERE id = ?1", [t.id])?;
        }
        if !live.iter().any(|t| t.id == ticket) {
            return Ok(TakeTurn::Lost);
        }
        let starts = rows::lane_starts(&self.tx, &spec.key, now_ms)?;
        match decisions::lane_turn(&live, ticket, spec, &starts, now_ms) {
            Turn::Go => {}
            wait => return Ok(TakeTurn::Wait(wait)),
        }
        self.tx.execute(
            "UPDATE lane_tickets SET granted_at = ?1 WHERE id = ?2",
            params![now_ms, ticket],
        )?;
        let previous_model: Option<String> = self
            .tx
            .query_row(
                "SELECT last_model FROM lanes WHERE lane = ?1",
                [&spec.key],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        self.tx.execute(
            "INSERT INTO lanes (lane, last_model) VALUES (?1, ?2)
             ON CONFLICT (lane) DO UPDATE SET last_model = ?2",
            params![spec.key, model],
        )?;
        if spec.requests_per_minute.is_some() {
            self.tx.execute(
                "DELETE FROM lane_grants WHERE lane = ?1 AND at <= ?2",
                params![spec.key, now_ms - 60_000],
            )?;
            self.tx.execute(
                "INSERT INTO lane_grants (lane, at) VALUES (?1, ?2)",
                params![spec.key, now_ms],
            )?;
        }
        Ok(TakeTurn::Granted { previous_model })
    }

    /// Leaves a lane: gives back the slot, or the place in the queue.
    pub fn release_ticket(&mut self, ticket: i64) -> Result<()> {
        self.tx
            .execute("DELETE FROM lane_tickets WHERE id = ?1", [ticket])?;
        Ok(())
    }

    /// Extends the leases of every ticket this process holds or waits with.
    pub fn renew_tickets(&mut self, owner: &str, expires_at_ms: i64) -> Result<()> {
        self.tx.execute(
            "UPDATE lane_tickets SET expires_at = ?1 WHERE owner = ?2",
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
        let changed = self.tx.execute(
            "UPDATE contestants SET waiting = ?1
             WHERE id = ?2 AND status = 'queued' AND waiting IS NOT ?1",
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

    /// Asks every running piece of `work` of a battle (a refine round: of
    /// `contestant_id`'s) to stop; returns their ids.
    pub fn request_work_cancel(
        &mut self,
        work: Work,
        battle_id: &str,
        contestant_id: Option<&str>,
    ) -> Result<Vec<String>> {
        // Analyses and cross-examinations belong to the battle; rounds to
        // its contestants (all of them, or `contestant_id`).
        let filter = match work {
            Work::Round => "contestant_id IN (SELECT id FROM contestants WHERE battle_id = ?1) AND contestant_id = COALESCE(?2, contestant_id)",
            _ => "battle_id = ?1",
        };
        let ids = {
            let mut stmt = self.tx.prepare(&format!(
                "SELECT id FROM {} WHERE status = 'running' AND {filter}",
                work.table()
            ))?;
            let id = |r: &rusqlite::Row<'_>| r.get::<_, String>(0);
            match work {
                Work::Round => stmt
                    .query_map(params![battle_id, contestant_id], id)?
                    .collect::<rusqlite::Result<Vec<String>>>()?,
                _ => stmt
                    .query_map(params![battle_id], id)?
                    .collect::<rusqlite::Result<Vec<String>>>()?,
            }
        };
        for id in &ids {
            self.tx.execute(
                &format!(
                    "UPDATE {} SET cancel_requested = 1 WHERE id = ?1",
                    work.table()
                ),
                [id],
            )?;
        }
        Ok(ids)
    }

    /// Records which process runs a piece of work (just inserted).
    pub fn set_owner(&mut self, work: Work, id: &str, host: &str, pid: u32) -> Result<()> {
        self.tx.execute(
            &format!(
                "UPDATE {} SET owner_host = ?1, owner_pid = ?2 WHERE id = ?3",
                work.table()
            ),
            params![host, pid, id],
        )?;
        Ok(())
    }

    /// Marks as failed, with `reason`, every analysis, cross-examination and
    /// refine round still `running` whose process is gone (on this host,
    /// its PID no longer exists; recorded before owners were, it has none).
    /// Their status events go out; returns what was marked.
    pub fn interrupt_orphans(
        &mut self,
        my_host: &str,
        pid_alive: impl Fn(u32) -> bool,
        reason: &str,
        at: DateTime<Utc>,
    ) -> Result<Vec<Orphan>> {
        let mut orphans = Vec::new();
        for (work, battle, model) in [
            (Work::Analysis, "battle_id", "model"),
            (Work::CrossExamination, "battle_id", "model"),
            (
                Work::Round,
                "(SELECT battle_id FROM contestants c WHERE c.id = contestant_id)",
                "''",
            ),
        ] {
            let mut stmt = self.tx.prepare(&format!(
                "SELECT id, {battle}, {model}, owner_host, owner_pid FROM {} WHERE status = 'running'",
                work.table()
            ))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, Option<u32>>(4)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            drop(stmt);
            for (id, battle_id, model, host, pid) in rows {
                let gone = match (host, pid) {
                    (Some(host), Some(pid)) => host == my_host && !pid_alive(pid),
                    _ => true,
                };
                if gone {
                    orphans.push(Orphan {
                        work,
                        id,
                        battle_id,
                        model,
                    });
                }
            }
        }
        for o in &orphans {
            self.tx.execute(
                &format!(
                    "UPDATE {} SET status = 'error', error = ?1, finished_at = ?2 WHERE id = ?3 AND status = 'running'",
                    o.work.table()
                ),
                params![reason, ms(at), o.id],
            )?;
            let kind = match o.work {
                Work::Analysis => EventKind::AnalysisStatus {
                    analysis_id: o.id.clone(),
                    status: AnalysisStatus::Error,
                    outcome: None,
                    winner: None,
                    error: Some(reason.to_string()),
                },
                Work::CrossExamination => {
                    let number: u32 = self.tx.query_row(
                        "SELECT number FROM cross_examinations WHERE id = ?1",
                        [&o.id],
                        |r| r.get(0),
                    )?;
                    EventKind::CrossExamStatus {
                        cross_exam_id: o.id.clone(),
                        number,
                        status: AnalysisStatus::Error,
                        error: Some(reason.to_string()),
                    }
                }
                Work::Round => {
                    let number: u32 = self.tx.query_row(
                        "SELECT number FROM rounds WHERE id = ?1",
                        [&o.id],
                        |r| r.get(0),
                    )?;
                    EventKind::Round {
                        number,
                        status: Some(ContestantStatus::Error),
                        feedback: None,
                    }
                }
            };
            let contestant: Option<String> = match o.work {
                Work::Round => self
                    .tx
                    .query_row(
                        "SELECT contestant_id FROM rounds WHERE id = ?1",
                        [&o.id],
                        |r| r.get(0),
                    )
                    .optional()?,
                _ => None,
            };
            self.emit(&o.battle_id, contestant.as_deref(), at, kind)?;
        }
        Ok(orphans)
    }

    /// Cancellation requests recorded by other processes, for a battle we drive.
    pub fn cancel_requests(&self, battle_id: &str) -> Result<(bool, Vec<String>)> {
        let battle: bool = self.tx.query_row(
            "SELECT cancel_requested FROM battles WHERE id = ?1",
            [battle_id],
            |r| r.get(0),
        )?;
        let mut stmt = self
            .tx
            .prepare("SELECT id FROM contestants WHERE battle_id = ?1 AND cancel_requested = 1")?;
        let ids = stmt
            .query_map([battle_id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok((battle, ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    /// Migration 011 rebuilds `series`: a database from before it keeps
    /// its series, the battles that point at them and their leases.
    #[test]
    fn the_series_table_is_rebuilt_without_losing_what_points_at_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
            migrations()
                .to_version(&mut conn, 10)
                .expect("the schema of migration 010");
            conn.pragma_update(None, "foreign_keys", "ON").unwrap();
            conn.execute_batch(
                "INSERT INTO series (id, idem_key, request, status, total, created_at)
                     VALUES ('s1', 'k1', '{}', 'running', 2, 1);
                 INSERT INTO series_leases (series_id, owner, host, pid, expires_at)
                     VALUES ('s1', 'o', 'h', 1, 2);
                 INSERT INTO battles (id, battle_type, status, prompt, project_path, results_path,
                                      created_at, series_id, series_slot)
                     VALUES ('b1', 'qa', 'done', 'p', '/p', '/p/Arena/b1', 1, 's1', 0);",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        store
            .read(|c| {
                let (battle_series, leases): (Option<String>, i64) = c.query_row(
                    "SELECT (SELECT series_id FROM battles WHERE id = 'b1'),
                            (SELECT COUNT(*) FROM series_leases WHERE series_id = 's1')",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                assert_eq!((battle_series.as_deref(), leases), (Some("s1"), 1));
                c.execute(
                    "UPDATE series SET status = 'error', error = 'gone' WHERE id = 's1'",
                    [],
                )?;
                // The foreign keys still hold: a battle of an unknown series is refused.
                let orphan = c.execute("UPDATE battles SET series_id = 'nope' WHERE id = 'b1'", []);
                assert!(orphan.is_err());
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn reopening_keeps_the_schema_and_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let store = Store::open(&path).unwrap();
        store
            .transact(|tx| {
                tx.insert_battle(&NewBattle {
                    id: "b1".into(),
                    battle_type: arena_domain::battle::BattleType::Qa,
                    prompt: "p".into(),
                    project: "/tmp".into(),
                    results_path: "/tmp/Arena/x".into(),
                    created_at: Utc::now(),
                    contestants: vec![NewContestant {
                        id: "c1".into(),
                        identity: "debugger".into(),
                        model: "m".into(),
                        provider: "p".into(),
                        lane: Lane::Local,
                        run: RunSpec::default(),
                        label: None,
                    }],
                    base_commit: None,
                    check_command: None,
                    series: None,
                    blind: false,
                    tags: Vec::new(),
                })
            })
            .unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        let b = store.battle("b1").unwrap();
        assert_eq!(b.contestants.len(), 1);
        assert_eq!(b.status, BattleStatus::Running);
        let events = store.events_since("b1", 0, 100).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].seq, 1);
    }
}
