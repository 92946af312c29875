//! SQLite storage: battles, contestants, the event journal and leases.
//!
//! One connection behind a mutex; callers on async threads go through
//! `Engine::db`, which runs the closure in `spawn_blocking`. Every write is a
//! [`Tx`]: its state changes and the events that describe them commit
//! together, and the events are broadcast in sequence order after the commit,
//! still under the lock, so live viewers see exactly the journal's order.
//!
//! One module per aggregate, each with its own `impl Store` (reads) and
//! `impl Tx` (writes) and its queries: `battles`, `contestants`,
//! `analyses`, `lanes`, `leases`, `work`, `events`, `series`.
//! This file keeps the handle, the migrations and the transaction.
//!
//! No raw connection leaves the crate: every read and write is a method
//! here, so the lease checks cannot be bypassed. Only tests that simulate a
//! crash reach the connection, through the `testing` feature
//! (`Store::read`, `Tx::conn`).

mod analyses;
mod battles;
mod contestants;
mod error;
mod events;
mod lanes;
mod leases;
mod live;
mod packed;
mod places;
#[cfg(test)]
mod postgres_schema;
mod rows;
mod series;
mod sql;
mod team;
mod work;

pub use battles::{BattleDetail, NewBattle, NewContestant};
pub use contestants::AnswerEnd;
pub use error::{Error, Result};
pub use lanes::{NewTicket, TakeTurn};
pub use places::{Place, PlaceState, WorkerBeat};
pub use rows::{ms, RankFilter, RankedBattle};
/// A parameter of the raw statements tests run (feature `testing`).
#[cfg(feature = "testing")]
pub use sql::Value as SqlValue;
pub use team::{keychain_entry, Listener, Notice};
pub use work::{Orphan, Work};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::Connection;

use crate::sql::params;
use rusqlite_migration::{Migrations, SchemaVersion, M};
use tokio::sync::broadcast;

use arena_domain::event::BattleEvent;

pub const DATABASE_FILE: &str = "arena.db";

/// The migration that moved answers to their own table (014).
const ANSWERS_APART: usize = 14;

/// Prepared statements kept per connection: more than the store has.
const STATEMENTS: usize = 256;

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
    Migrations::new(migration_list())
}

fn migration_list() -> Vec<M<'static>> {
    vec![
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
        M::up(include_str!("../migrations/013_coordination_in_memory.sql")),
        M::up(include_str!("../migrations/014_contestants_keep_once.sql")).foreign_key_check(),
        M::up(include_str!("../migrations/015_meta.sql")),
        M::up(include_str!("../migrations/016_battle_origin.sql")),
        M::up(include_str!("../migrations/017_series_places.sql")),
        M::up(include_str!("../migrations/018_patches.sql")),
        M::up(include_str!("../migrations/019_series_remote.sql")),
        M::up(include_str!("../migrations/020_fewer_indexes.sql")),
        M::up(include_str!("../migrations/021_battle_source.sql")),
        M::up(include_str!("../migrations/022_goal_check_detail.sql")),
    ]
}

/// The refusal to open a database a newer Arena laid out, naming that
/// version when the database remembers it.
fn too_new(conn: &Connection, path: &Path, schema: usize) -> Error {
    let by = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'last_version'",
            [],
            |r| r.get::<_, String>(0),
        )
        .unwrap_or_else(|_| "(a newer version)".into());
    Error::TooNew {
        path: path.to_path_buf(),
        by,
        schema,
        known: migrations_count(),
        ours: arena_domain::VERSION,
    }
}

fn migrations_count() -> usize {
    migration_list().len()
}

/// Notes this Arena's version as the last to open the database (a write
/// only when it changed).
fn remember_version(conn: &Connection) -> Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('last_version', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE value <> excluded.value",
        [arena_domain::VERSION],
    )?;
    Ok(())
}

/// Which database a store keeps its data in, for `arena status` and
/// Settings.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreInfo {
    /// `sqlite` or `postgresql`.
    pub backend: &'static str,
    /// The file, or the team database's URL (which holds no password).
    pub location: String,
    /// The schema version the database is at.
    pub schema: i64,
    /// The server's version (PostgreSQL), or SQLite's library version.
    pub server_version: String,
    /// How long one round trip to it took just now, in milliseconds.
    pub round_trip_ms: f64,
}

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    db: Db,
    events: broadcast::Sender<BattleEvent>,
    path: PathBuf,
    /// The lease owner this handle writes as (see [`Store::acting_as`]).
    owner: Option<Arc<str>>,
    /// SQLite's live journal, attached to the connection as `live`
    /// (PostgreSQL keeps it in its schema `live`).
    _live: Option<Arc<live::Live>>,
    /// A team database's notices, listened to from the first ask on.
    listener: Arc<std::sync::OnceLock<Listener>>,
    /// Write transactions begun through this store and its clones.
    writes: Arc<std::sync::atomic::AtomicU64>,
}

/// The database behind a store: one connection behind a mutex.
#[derive(Clone)]
enum Db {
    Sqlite(Arc<Mutex<Connection>>),
    Postgres(Arc<Mutex<sql::Pg>>),
}

/// A locked [`Db`].
enum Locked<'s> {
    Sqlite(MutexGuard<'s, Connection>),
    Postgres(MutexGuard<'s, sql::Pg>),
}

/// How long a team database may be away (restarting, a network blip)
/// before the reads and writes waiting for it fail. Shorter than a lease
/// (15 s): a renewal made again after the wait still writes an expiry in
/// the future, so no other machine takes a lease or slot still in use.
const OUTAGE: std::time::Duration = std::time::Duration::from_secs(10);

/// Why an attempt at a transaction did not go through.
enum Undone {
    /// The team database was away; nothing of it was kept: try again.
    Away(Error),
    Failed(Error),
}

type Attempt<T> = std::result::Result<T, Undone>;

/// Team mode's PostgreSQL migrations, in order (see
/// `docs/design/team-mode.md`).
pub(crate) const POSTGRES_MIGRATIONS: &[&str] = &[
    include_str!("../migrations/postgres/001_init.sql"),
    include_str!("../migrations/postgres/002_battle_origin.sql"),
    include_str!("../migrations/postgres/003_series_places.sql"),
    include_str!("../migrations/postgres/004_patches.sql"),
    include_str!("../migrations/postgres/005_machines.sql"),
    include_str!("../migrations/postgres/006_series_remote.sql"),
    include_str!("../migrations/postgres/007_fewer_indexes.sql"),
    include_str!("../migrations/postgres/008_battle_source.sql"),
    include_str!("../migrations/postgres/009_goal_check_detail.sql"),
];

/// The key of the advisory lock under which processes migrate a team
/// database one at a time ("arena" in ASCII).
const MIGRATION_LOCK: i64 = 0x0061_7265_6e61;

/// Brings a team database's schema up to date, one process at a time;
/// refuses one laid out by a newer Arena.
fn migrate_postgres(pg: &sql::Pg, url: &str) -> Result<()> {
    let c = sql::Conn::Postgres(pg);
    // Waits for another process laying out the tables at most the
    // session's lock timeout (see `team.rs`).
    pg.batch(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
        .map_err(|e| match &e {
            Error::Pg(failed)
                if failed.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) =>
            {
                Error::Conflict(format!(
                    "another Arena has been updating the tables of the team database at {} for a while (or a session holds their lock); try again in a moment",
                    pg.connector().shown()
                ))
            }
            _ => e,
        })?;
    let migrated = (|| {
        pg.batch(
            "CREATE TABLE IF NOT EXISTS arena_schema (
                 version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)",
        )?;
        let current: i64 = c.row(
            "SELECT COALESCE(MAX(version), 0) FROM arena_schema",
            &[],
            |r| r.get(0),
        )?;
        let known = POSTGRES_MIGRATIONS.len();
        if current > known as i64 {
            let by: Option<String> = c.opt_row(
                "SELECT value FROM meta WHERE key = 'last_version'",
                &[],
                |r| r.get(0),
            )?;
            return Err(Error::TooNew {
                path: PathBuf::from(url),
                by: by.unwrap_or_else(|| "(a newer version)".into()),
                schema: current as usize,
                known,
                ours: arena_domain::VERSION,
            });
        }
        for (i, migration) in POSTGRES_MIGRATIONS
            .iter()
            .enumerate()
            .skip(current as usize)
        {
            pg.batch("BEGIN")?;
            let applied = pg.batch(migration).and_then(|()| {
                c.exec(
                    "INSERT INTO arena_schema (version, applied_at) VALUES (?1, ?2)",
                    params![(i + 1) as i64, rows::ms(chrono::Utc::now())],
                )
            });
            match applied {
                Ok(_) => pg.batch("COMMIT")?,
                Err(e) => {
                    let _ = pg.batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        c.exec(
            "INSERT INTO meta (key, value) VALUES ('last_version', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value
             WHERE meta.value <> excluded.value",
            params![arena_domain::VERSION],
        )?;
        Ok(())
    })();
    let unlocked = pg.batch(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
    migrated.and(unlocked)
}

/// The page size of a new database. A transaction writes every page it
/// touches to the write-ahead log, and then again to the database at the
/// checkpoint; most of Arena's transactions change a row or two in each of
/// a few tables (a contestant's end, a battle's status), so smaller pages
/// write less for the same change. 1 KiB: SQLite's smallest that still
/// holds a deflated answer of a few hundred words in its row; with a
/// battle's status and answers' ends kept on their rows (migration 020)
/// the database stays within 1.3× the text it holds (BENCHMARKS.md,
/// "Journal writes"), where 2 KiB pages wrote a fifth more.
const PAGE_SIZE: i64 = 1024;

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
        // A new database's pages (an existing one keeps its own): see
        // PAGE_SIZE.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        // A new database is laid out straight in its file, and only then
        // goes over to the write-ahead log: through the log its schema (a
        // page per table and index) would be written twice, and a rollback
        // journal holds nothing for pages the file did not have yet.
        let fresh = matches!(migrations().current_version(&conn)?, SchemaVersion::NoneSet);
        if !fresh {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Every statement the store runs, prepared once (see `Tx::run`).
        conn.set_prepared_statement_cache_capacity(STATEMENTS);
        register_functions(&conn)?;
        // Off while the schema changes (a table rebuilt must not cascade
        // into the rows that point at it); migrations that rebuild check
        // the foreign keys before they commit.
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        let before = migrations().current_version(&conn)?;
        if let SchemaVersion::Outside(schema) = before {
            return Err(too_new(&conn, path, schema.get()));
        }
        migrations().to_latest(&mut conn)?;
        remember_version(&conn)?;
        if fresh {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.pragma_update(None, "foreign_keys", "ON")?;
        if matches!(before, SchemaVersion::Inside(v) if v.get() < ANSWERS_APART) {
            tracing::info!(path = %path.display(), "compressing the kept answers and compacting the database, once");
            packed::repack_answers(&mut conn)?;
        }
        let live = live::Live::attach(&conn, path)?;
        drop(lock);
        let (events, _) = broadcast::channel(4096);
        Ok(Store {
            db: Db::Sqlite(Arc::new(Mutex::new(conn))),
            events,
            path: path.to_path_buf(),
            owner: None,
            _live: Some(Arc::new(live)),
            listener: Arc::default(),
            writes: Arc::default(),
        })
    }

    /// Whether the team database at `url` takes `password`: a connection
    /// and one statement, nothing laid out or changed (for `arena database
    /// login`, which must not migrate a team's schema).
    pub fn check_postgres(url: &str, password: Option<&str>) -> Result<()> {
        let pg = sql::Pg::open(team::Connector::new(url, password)?)?;
        sql::Conn::Postgres(&pg).row("SELECT 1::BIGINT", &[], |r| r.get::<i64>(0))?;
        Ok(())
    }

    /// Opens a team database (PostgreSQL) at `url` — with the password given
    /// apart, never inside the URL; TLS as its `sslmode` says (see
    /// [`team`]) — and brings its schema up to date.
    pub fn open_postgres(url: &str, password: Option<&str>) -> Result<Store> {
        let pg = sql::Pg::open(team::Connector::new(url, password)?)?;
        migrate_postgres(&pg, url)?;
        let (events, _) = broadcast::channel(4096);
        Ok(Store {
            db: Db::Postgres(Arc::new(Mutex::new(pg))),
            events,
            path: PathBuf::from(url),
            owner: None,
            _live: None,
            listener: Arc::default(),
            writes: Arc::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The team database's clock now, in ms since the epoch; `None` on
    /// SQLite, where every process shares this machine's clock.
    pub fn database_now_ms(&self) -> Result<Option<i64>> {
        if !self.is_team() {
            return Ok(None);
        }
        // Asked once, never waited out: the caller keeps its last answer.
        match &self.connected()? {
            Locked::Postgres(pg) => sql::Conn::Postgres(pg)
                .row(
                    "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
                    &[],
                    |r| r.get(0),
                )
                .map(Some),
            Locked::Sqlite(_) => Ok(None),
        }
    }

    /// Whether this is a team's database (PostgreSQL), shared by machines.
    pub fn is_team(&self) -> bool {
        matches!(self.db, Db::Postgres(_))
    }

    /// The team database's notices (lanes with a slot given back); `None`
    /// on SQLite, where every process is on this machine and polls. The
    /// first call starts listening; a listener that cannot start yet keeps
    /// trying in the background.
    pub fn listener(&self) -> Option<Listener> {
        let Db::Postgres(pg) = &self.db else {
            return None;
        };
        if let Some(listener) = self.listener.get() {
            return Some(listener.clone());
        }
        let started = {
            let pg = pg.lock().unwrap_or_else(|p| p.into_inner());
            pg.connector().listen()
        };
        match started {
            Ok(listener) => Some(self.listener.get_or_init(|| listener).clone()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen to the team database; waiters poll");
                None
            }
        }
    }

    /// Which database this is, asked of it now (so it also says whether
    /// the database answers).
    pub fn info(&self) -> Result<StoreInfo> {
        let started = std::time::Instant::now();
        let (backend, schema, server_version) = self.query(|c| match c {
            sql::Conn::Sqlite(conn) => {
                let schema: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
                Ok(("sqlite", schema, rusqlite::version().to_string()))
            }
            sql::Conn::Postgres(_) => {
                let schema: i64 = c.row(
                    "SELECT COALESCE(MAX(version), 0) FROM arena_schema",
                    &[],
                    |r| r.get(0),
                )?;
                let version: String =
                    c.row("SELECT current_setting('server_version')", &[], |r| {
                        r.get(0)
                    })?;
                Ok(("postgresql", schema, version))
            }
        })?;
        Ok(StoreInfo {
            backend,
            location: self.path.display().to_string(),
            schema,
            server_version,
            round_trip_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
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

    fn lock(&self) -> Locked<'_> {
        // A panic while holding the lock leaves the database consistent (an
        // open transaction rolls back), so a poisoned lock is still usable.
        match &self.db {
            Db::Sqlite(c) => Locked::Sqlite(c.lock().unwrap_or_else(|p| p.into_inner())),
            Db::Postgres(c) => Locked::Postgres(c.lock().unwrap_or_else(|poisoned| {
                // SQLite's transaction rolls back as the panic unwinds; a
                // PostgreSQL `BEGIN` stays open on the connection, and the
                // next `COMMIT` would commit its half: end it here, once.
                let pg = poisoned.into_inner();
                if let Err(e) = pg.batch("ROLLBACK") {
                    tracing::warn!(error = %e, "could not roll back a panicked transaction");
                }
                c.clear_poison();
                pg
            })),
        }
    }

    /// [`Store::lock`], with a lost team database connection made again.
    fn connected(&self) -> Result<Locked<'_>> {
        let locked = self.lock();
        if let Locked::Postgres(pg) = &locked {
            pg.reconnect_if_lost()?;
        }
        Ok(locked)
    }

    /// Runs `f` in one transaction (SQLite's immediate: the writers of
    /// every process take turns); broadcasts its events on commit, still
    /// under the lock, so live viewers see the journal's order.
    ///
    /// On a team database a transaction the database's absence undid (it
    /// restarted, the network dropped) is run again from the start once it
    /// answers, for up to [`OUTAGE`]: `f` may run more than once, and only
    /// one run is ever kept. A connection lost while committing is asked,
    /// once it is back, whether that commit was kept (`txid_status`), so a
    /// kept one is not written twice.
    pub fn transact<T>(&self, mut f: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.through_outages(|| self.transact_once(&mut f))
    }

    /// Runs `attempt` until it is done, failed for good, or the team
    /// database stayed away for [`OUTAGE`].
    fn through_outages<T>(&self, mut attempt: impl FnMut() -> Attempt<T>) -> Result<T> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(50);
        loop {
            match attempt() {
                Ok(value) => return Ok(value),
                Err(Undone::Away(e)) if started.elapsed() < OUTAGE => {
                    tracing::info!(error = %e, "the team database is away; trying again");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_secs(1));
                }
                Err(Undone::Away(e) | Undone::Failed(e)) => return Err(e),
            }
        }
    }

    fn transact_once<T>(&self, f: &mut impl FnMut(&mut Tx<'_>) -> Result<T>) -> Attempt<T> {
        let mut locked = self.connected().map_err(|e| self.undone(e, None))?;
        let (conn, xid) = match &mut locked {
            Locked::Sqlite(conn) => (
                TxConn::Sqlite(
                    sql::SqliteTx::begin(conn, "BEGIN IMMEDIATE")
                        .map_err(|e| Undone::Failed(e.into()))?,
                ),
                None,
            ),
            Locked::Postgres(pg) => {
                let pg: &sql::Pg = pg;
                let begun = pg.batch("BEGIN").and_then(|()| {
                    sql::Conn::Postgres(pg).row("SELECT txid_current()", &[], |r| r.get::<i64>(0))
                });
                let xid = begun.map_err(|e| self.undone(e, Some(pg)))?;
                (TxConn::Postgres(pg), Some(xid))
            }
        };
        let mut wrapped = Tx {
            conn,
            pending: Vec::new(),
            seqs: HashMap::new(),
            owner: self.owner.clone(),
        };
        let value = match f(&mut wrapped) {
            Ok(value) => value,
            Err(e) => {
                let pg = wrapped.conn.pg();
                wrapped.conn.rollback();
                return Err(self.undone(e, pg));
            }
        };
        let Tx { conn, pending, .. } = wrapped;
        let pg = conn.pg();
        if let Err(e) = conn.commit() {
            match (pg, xid) {
                (Some(pg), Some(xid)) if pg.is_lost() => self.kept_anyway(pg, xid, e)?,
                _ => return Err(Undone::Failed(e)),
            }
        }
        for event in pending {
            // No receivers is fine: nobody is watching live.
            let _ = self.events.send(event);
        }
        Ok(value)
    }

    /// What an error means for another try: the team database was away
    /// (nothing of the attempt was kept), or a failure to report.
    fn undone(&self, e: Error, pg: Option<&sql::Pg>) -> Undone {
        let away = matches!(
            e,
            Error::Unreachable {
                transient: true,
                ..
            }
        ) || pg.is_some_and(sql::Pg::is_lost)
            || matches!(&e, Error::Pg(p) if p.is_closed());
        if away && self.is_team() {
            Undone::Away(e)
        } else {
            Undone::Failed(e)
        }
    }

    /// The connection went while committing transaction `xid`: once the
    /// database answers again, whether the commit was kept. `Ok` when it
    /// was; else the attempt is undone (and may run again).
    fn kept_anyway(&self, pg: &sql::Pg, xid: i64, e: Error) -> std::result::Result<(), Undone> {
        let started = std::time::Instant::now();
        loop {
            let status = pg.reconnect_if_lost().and_then(|()| {
                sql::Conn::Postgres(pg).row(
                    "SELECT txid_status(?1)",
                    crate::sql::params![xid],
                    |r| r.get::<Option<String>>(0),
                )
            });
            match status {
                Ok(Some(s)) if s == "committed" => return Ok(()),
                // Still "in progress" (the old session lives on, cut off
                // by the network): running it again could write it twice.
                Ok(Some(s)) if s == "in progress" => {
                    return Err(Undone::Failed(Error::Inconsistent(format!(
                        "the team database connection was cut off while a write was committed, \
                         and the old session still holds it; it may yet be kept: {e}"
                    ))))
                }
                Ok(_) => return Err(Undone::Away(e)),
                Err(_) if started.elapsed() < OUTAGE => {
                    std::thread::sleep(std::time::Duration::from_millis(200))
                }
                Err(_) => {
                    return Err(Undone::Failed(Error::Inconsistent(format!(
                        "the team database went away while a write was committed, and did not \
                         come back within {} s to say whether it was kept: {e}",
                        OUTAGE.as_secs()
                    ))))
                }
            }
        }
    }

    /// How many write transactions this store and its clones have run
    /// (each [`Store::transact`] once, however often it was tried; for
    /// tests and benchmarks).
    pub fn write_transactions(&self) -> u64 {
        self.writes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs read-only queries: every module's reads go through this.
    /// On a team database, reads the database's absence cut short are
    /// made again once it answers (see [`Store::transact`]).
    pub(crate) fn query<T>(&self, mut f: impl FnMut(sql::Conn<'_>) -> Result<T>) -> Result<T> {
        self.through_outages(|| {
            let locked = self.connected().map_err(|e| self.undone(e, None))?;
            match &locked {
                Locked::Sqlite(conn) => f(sql::Conn::Sqlite(conn)).map_err(Undone::Failed),
                Locked::Postgres(pg) => {
                    f(sql::Conn::Postgres(pg)).map_err(|e| self.undone(e, Some(pg)))
                }
            }
        })
    }

    /// Runs reads that must see one moment of the database (a page and its
    /// total, a battle and its rounds) in one read transaction.
    pub(crate) fn snapshot<T>(&self, f: impl FnOnce(sql::Conn<'_>) -> Result<T>) -> Result<T> {
        match &mut self.connected()? {
            Locked::Sqlite(conn) => {
                let tx = sql::SqliteTx::begin(conn, "BEGIN")?;
                let value = f(sql::Conn::Sqlite(tx.conn()))?;
                tx.commit()?;
                Ok(value)
            }
            Locked::Postgres(pg) => {
                pg.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
                let read = f(sql::Conn::Postgres(pg));
                let ended = pg.batch(if read.is_ok() { "COMMIT" } else { "ROLLBACK" });
                let value = read?;
                ended?;
                Ok(value)
            }
        }
    }

    /// Runs read-only queries on SQLite's own connection: for this
    /// crate's SQLite-only unit tests (pragmas, the file itself).
    #[cfg(test)]
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        match &self.lock() {
            Locked::Sqlite(conn) => f(conn),
            Locked::Postgres(_) => panic!("a SQLite-only test read a PostgreSQL store"),
        }
    }

    /// The first column of the first row of `sql` (a count, a sequence
    /// number): for tests only (feature `testing`), which check rows no
    /// method reads. Any backend runs it.
    #[cfg(feature = "testing")]
    pub fn query_i64(&self, sql: &str, params: &[SqlValue]) -> Result<Option<i64>> {
        self.query(|c| {
            Ok(
                c.opt_row(sql, &sql::params_of(params), |r| r.get::<Option<i64>>(0))?
                    .flatten(),
            )
        })
    }

    /// The full id of the `what` (`battle` or `series`) whose id is, starts
    /// with, or ends with `key`.
    pub(crate) fn resolve_id(&self, what: &'static str, key: &str) -> Result<String> {
        let table = if what == "series" {
            "series"
        } else {
            "battles"
        };
        let key = key.trim();
        let bare = key.replace(['%', '_'], "");
        let (prefix, suffix) = (format!("{bare}%"), format!("%{bare}"));
        let ids: Vec<String> = self.query(|c| {
            c.rows(
                &format!(
                    "SELECT id FROM {table} WHERE id = ?1 OR id LIKE ?2 OR id LIKE ?3 LIMIT 3"
                ),
                params![key, prefix, suffix],
                |r| r.get(0),
            )
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
}

/// A write transaction that also collects the events it journals.
pub struct Tx<'c> {
    conn: TxConn<'c>,
    pending: Vec<BattleEvent>,
    seqs: HashMap<String, u64>,
    owner: Option<Arc<str>>,
}

/// A transaction's connection: SQLite's transaction, or PostgreSQL's
/// connection between its `BEGIN` and `COMMIT`.
enum TxConn<'c> {
    Sqlite(sql::SqliteTx<'c>),
    Postgres(&'c sql::Pg),
}

impl<'c> TxConn<'c> {
    fn pg(&self) -> Option<&'c sql::Pg> {
        match self {
            TxConn::Sqlite(_) => None,
            TxConn::Postgres(pg) => Some(pg),
        }
    }

    fn commit(self) -> Result<()> {
        match self {
            TxConn::Sqlite(tx) => Ok(tx.commit()?),
            TxConn::Postgres(pg) => pg.batch("COMMIT"),
        }
    }

    fn rollback(self) {
        match self {
            // Dropped, it rolls back.
            TxConn::Sqlite(tx) => drop(tx),
            TxConn::Postgres(pg) => {
                if let Err(e) = pg.batch("ROLLBACK") {
                    tracing::warn!(error = %e, "could not roll back a team database transaction");
                }
            }
        }
    }
}

impl Tx<'_> {
    /// Runs one statement, prepared once per connection and kept: SQLite's
    /// parser and planner were a tenth of a streamed series' CPU when every
    /// write prepared its statement anew.
    pub(crate) fn run(&self, sql: &str, params: sql::Params<'_>) -> Result<usize> {
        self.db().exec(sql, params)
    }

    /// The transaction's connection, for its reads.
    pub(crate) fn db(&self) -> sql::Conn<'_> {
        match &self.conn {
            TxConn::Sqlite(tx) => sql::Conn::Sqlite(tx.conn()),
            TxConn::Postgres(pg) => sql::Conn::Postgres(pg),
        }
    }

    /// Runs `f` as a part of this transaction that stands or falls alone:
    /// when it fails, what it wrote (rows and events) is undone and the
    /// rest of the transaction goes on. For group commit, where one
    /// transaction carries the writes of many pieces of work.
    pub fn apart<T>(&mut self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let (pending, seqs) = (self.pending.len(), self.seqs.clone());
        self.db().control("SAVEPOINT apart")?;
        match f(self) {
            Ok(value) => {
                self.db().control("RELEASE apart")?;
                Ok(value)
            }
            Err(e) => {
                self.db().control("ROLLBACK TO apart")?;
                self.db().control("RELEASE apart")?;
                self.pending.truncate(pending);
                self.seqs = seqs;
                Err(e)
            }
        }
    }
}

#[cfg(feature = "testing")]
impl Tx<'_> {
    /// Runs one statement as it is: for tests only (feature `testing`),
    /// which simulate crashes and stale processes by writing rows
    /// directly. Any backend runs it.
    pub fn exec_raw(&self, sql: &str, params: &[SqlValue]) -> Result<usize> {
        self.db().exec(sql, &sql::params_of(params))
    }

    /// [`Store::query_i64`] within this transaction.
    pub fn query_i64(&self, sql: &str, params: &[SqlValue]) -> Result<Option<i64>> {
        Ok(self
            .db()
            .opt_row(sql, &sql::params_of(params), |r| r.get::<Option<i64>>(0))?
            .flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_domain::battle::{BattleStatus, Lane, RunSpec};
    use chrono::Utc;

    #[test]
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    fn last_version(path: &Path) -> String {
        Connection::open(path)
            .unwrap()
            .query_row(
                "SELECT value FROM meta WHERE key = 'last_version'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    }

    /// Every Arena that opens the database notes its version; an older one
    /// meeting a schema laid out by a newer one refuses, names that version
    /// and leaves the file as it was.
    #[test]
    fn a_database_a_newer_arena_laid_out_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arena.db");
        drop(Store::open(&path).unwrap());
        assert_eq!(last_version(&path), arena_domain::VERSION);

        // What a newer Arena leaves behind: one more migration, its version.
        let newer = migration_list().len() + 1;
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute(
                "UPDATE meta SET value = '9.9.9' WHERE key = 'last_version'",
                [],
            )
            .unwrap();
            conn.pragma_update(None, "user_version", newer).unwrap();
        }
        let refused = Store::open(&path).err().expect("refused");
        assert!(matches!(refused, Error::TooNew { schema, .. } if schema == newer));
        let message = refused.to_string();
        for part in [
            "Arena 9.9.9",
            &path.display().to_string(),
            "Install Arena 9.9.9 or newer",
        ] {
            assert!(message.contains(part), "{message:?} names {part:?}");
        }
        let conn = Connection::open(&path).unwrap();
        let version: usize = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, newer, "the schema version is untouched");
        assert_eq!(
            last_version(&path),
            "9.9.9",
            "and so is the version that wrote it"
        );
    }

    fn me(owner: &str) -> arena_domain::decisions::Lease {
        arena_domain::decisions::Lease {
            owner: owner.into(),
            host: "h".into(),
            pid: std::process::id(),
            expires_at_ms: 10_000,
        }
    }

    /// Leases and lane tickets live in the live journal: taking, renewing
    /// and giving them back writes neither the database file nor its log.
    #[test]
    fn coordination_never_writes_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let store = Store::open(&path).unwrap();
        store
            .read(|c| {
                c.query_row("PRAGMA main.wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
                Ok(())
            })
            .unwrap();
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let (db, wal) = (size(&path), path.with_extension("db-wal"));
        assert_eq!(size(&wal), 0);
        let me = me("o");
        store
            .transact(|tx| {
                assert!(tx.take_lease("b1", &me, 0, |_| true)?);
                let ticket = tx.enqueue_ticket(&NewTicket {
                    lane: "l",
                    ready_at_ms: 0,
                    position: 0,
                    holder: "battle b1",
                    battle_id: Some("b1"),
                    contestant_id: None,
                    model: "m",
                    lease: &me,
                })?;
                tx.renew_tickets("o", 20_000)?;
                assert!(tx.renew_lease("b1", "o", 20_000)?);
                tx.release_ticket(ticket)
            })
            .unwrap();
        assert_eq!(
            store.lease("b1").unwrap().map(|l| l.expires_at_ms),
            Some(20_000)
        );
        store.transact(|tx| tx.release_lease("b1", "o")).unwrap();
        assert_eq!(store.lease("b1").unwrap(), None);
        assert_eq!((size(&path), size(&wal)), (db, 0));
    }

    /// A part that fails is undone alone; the transaction goes on.
    #[test]
    fn a_part_apart_stands_or_falls_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("a.db")).unwrap();
        store
            .transact(|tx| {
                let failed = tx.apart(|tx| {
                    tx.take_lease("b1", &me("o"), 0, |_| true)?;
                    Err::<(), _>(Error::Conflict("no".into()))
                });
                assert!(failed.is_err());
                tx.apart(|tx| tx.take_lease("b2", &me("o"), 0, |_| true))
            })
            .unwrap();
        assert_eq!(store.lease("b1").unwrap(), None);
        assert!(store.lease("b2").unwrap().is_some());
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
        {
            // Migration 011 alone (013 moves the leases to the live journal).
            let mut conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
            migrations().to_version(&mut conn, 11).unwrap();
            let (battle_series, leases): (Option<String>, i64) = conn
                .query_row(
                    "SELECT (SELECT series_id FROM battles WHERE id = 'b1'),
                            (SELECT COUNT(*) FROM series_leases WHERE series_id = 's1')",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!((battle_series.as_deref(), leases), (Some("s1"), 1));
        }
        let store = Store::open(&path).unwrap();
        store
            .read(|c| {
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

    /// Migration 020 numbers a battle's first and last status and its
    /// answers' ends on their rows: a battle journaled before keeps its
    /// journal rows, which replay as they did, and its new events number
    /// on after them.
    #[test]
    fn a_battle_journaled_before_020_replays_as_it_did() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
            migrations().to_version(&mut conn, 19).unwrap();
            conn.execute_batch(
                r#"INSERT INTO battles (id, battle_type, status, prompt, project_path, results_path,
                                      created_at, finished_at)
                     VALUES ('b1', 'qa', 'done', 'p', '/p', '/p/Arena/b1', 1000, 9000);
                 INSERT INTO contestants (id, battle_id, position, identity, model, provider, lane,
                                          status, attempts, finished_at, result_path)
                     VALUES ('c1', 'b1', 0, 'Debugger', 'm1', 'cloud', 'cloud', 'done', 1, 8000,
                             '/p/Arena/b1/01-debugger-m1/result.md');
                 INSERT INTO answers (contestant_id, output, output_chars) VALUES ('c1', 'Hi.', 3);
                 INSERT INTO events (battle_id, seq, contestant_id, at, kind, payload) VALUES
                     ('b1', 1, NULL, 1000, 'battle_status', '{"type":"battle_status","status":"running"}'),
                     ('b1', 7, 'c1', 8000, 'answer_end', ''),
                     ('b1', 8, NULL, 9000, 'battle_status', '{"type":"battle_status","status":"done"}');"#,
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let seqs = |since| {
            store
                .events_since("b1", since, 100)
                .unwrap()
                .into_iter()
                .map(|e| (e.seq, e.kind.name().to_string()))
                .collect::<Vec<_>>()
        };
        let all = seqs(0);
        let names: Vec<_> = all.iter().map(|(s, n)| format!("{s} {n}")).collect();
        assert_eq!(
            names,
            [
                "1 battle_status",
                "4 benchmark",
                "5 contestant_status",
                "6 folded",
                "7 result_written",
                "8 battle_status"
            ]
        );
        assert_eq!(seqs(5).len(), 3, "{:?}", seqs(5));
        let folded = store.events_since("b1", 5, 1).unwrap();
        assert!(
            matches!(&folded[0].kind, arena_domain::event::EventKind::Folded { output, .. } if output == "Hi."),
            "{folded:?}"
        );
        // A new event numbers on after the journal's last.
        let reveal = store
            .transact(|tx| {
                tx.emit(
                    "b1",
                    None,
                    chrono::Utc::now(),
                    arena_domain::event::EventKind::BattleStatus {
                        status: arena_domain::battle::BattleStatus::Done,
                    },
                )
            })
            .unwrap();
        assert_eq!(reveal.seq, 9);
    }

    /// Migration 016 adds where a battle ran and who started and judged
    /// it: a battle from before has none of them (shown as unknown).
    #[test]
    fn a_battle_from_before_016_has_no_machine_or_users() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
            migrations().to_version(&mut conn, 15).unwrap();
            conn.execute(
                "INSERT INTO battles (id, battle_type, status, prompt, project_path, results_path,
                                      created_at, winner_id, winner_source)
                     VALUES ('b1', 'qa', 'done', 'p', '/p', '/p/Arena/b1', 1, 'c1', 'user')",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let b = store.battle("b1").unwrap();
        assert_eq!(b.winner.unwrap().contestant_id, "c1");
        assert_eq!((b.machine, b.user_name, b.voted_by), (None, None, None));
        let alice = RankFilter {
            user: Some("alice".into()),
            ..RankFilter::default()
        };
        assert!(store.ranked_battles(&alice).unwrap().is_empty());
        assert_eq!(
            store.ranked_battles(&RankFilter::default()).unwrap().len(),
            1
        );
    }

    /// Migration 014 keeps each distinct run spec once and moves answers to
    /// their own table: a database from before it keeps every contestant's
    /// settings and answer.
    #[test]
    fn run_specs_and_answers_are_kept_once_and_every_contestant_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let long = "A lane keeps a local server to one request at a time. ".repeat(20);
        let careful =
            r#"{"system_prompt":"Be careful.","temperature":0.2,"top_p":null,"max_tokens":null}"#;
        let bold =
            r#"{"system_prompt":"Be bold.","temperature":0.9,"top_p":null,"max_tokens":512}"#;
        {
            let mut conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "foreign_keys", "OFF").unwrap();
            migrations().to_version(&mut conn, 13).unwrap();
            conn.execute(
                "INSERT INTO battles (id, battle_type, status, prompt, project_path, results_path, created_at)
                 VALUES ('b1', 'qa', 'done', 'p', '/p', '/p/Arena/b1', 1)",
                [],
            )
            .unwrap();
            for (i, spec) in [careful, bold, careful].iter().enumerate() {
                conn.execute(
                    "INSERT INTO contestants (id, battle_id, position, identity, model, provider, lane, status, run_spec, output, reasoning)
                     VALUES (?1, 'b1', ?2, ?3, 'm', 'p', 'cloud', 'done', ?4, ?5, ?6)",
                    rusqlite::params![
                        format!("c{i}"),
                        i as i64,
                        format!("persona{i}"),
                        spec,
                        // (A text that looks like a number stays text; a
                        // long one is deflated once the store opens it.)
                        [Some("007".to_string()), Some(long.clone()), None][i].clone(),
                        (i == 1).then_some("thought")
                    ],
                )
                .unwrap();
            }
        }
        let store = Store::open(&path).unwrap();
        let b = store.battle("b1").unwrap();
        let prompts: Vec<_> = b
            .contestants
            .iter()
            .map(|c| (c.run.system_prompt.as_deref(), c.run.max_tokens))
            .collect();
        assert_eq!(
            prompts,
            [
                (Some("Be careful."), None),
                (Some("Be bold."), Some(512)),
                (Some("Be careful."), None)
            ]
        );
        let answers: Vec<_> = b
            .contestants
            .iter()
            .map(|c| (c.output.as_deref(), c.reasoning.as_deref()))
            .collect();
        assert_eq!(
            answers,
            [
                (Some("007"), None),
                (Some(long.as_str()), Some("thought")),
                (None, None)
            ]
        );
        let kept: i64 = store
            .read(|c| Ok(c.query_row("SELECT COUNT(*) FROM run_specs", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(kept, 2);
        let kinds: Vec<String> = store
            .read(|c| {
                let mut stmt =
                    c.prepare("SELECT typeof(output) FROM answers ORDER BY contestant_id")?;
                let kinds = stmt
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()?;
                Ok(kinds)
            })
            .unwrap();
        assert_eq!(
            kinds,
            ["text", "blob"],
            "the long answer is deflated on upgrade"
        );
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
                    machine: None,
                    user_name: None,
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
