//! The live journal: a Q&A answer's streamed deltas (its output, reasoning
//! and live benchmarks) numbered in its battle's sequence like every event,
//! but kept in a second database, attached to the connection as `live`: in
//! the session's memory-backed runtime folder (`$XDG_RUNTIME_DIR/arena`,
//! private to the user and out of every agent's sandbox), else beside the
//! database (in the data folder). Viewers in any process on the machine
//! read both journals as one ([`crate::rows::events_since`]); in a desktop
//! session the deltas never reach the disk. When the answer is recorded
//! they are folded away ([`crate::Tx::end_answer`]): the text is kept
//! once, in the database. (`/dev/shm` is not used: an agent confined by
//! Landlock alone may write under `/dev`.)
//!
//! It also holds what processes coordinate through while they run: the
//! leases on battles and series, and the lanes' tickets and grants (see
//! migration 013). Renewed every half second, in the database they were a
//! disk write each time.
//!
//! A crash loses nothing that is needed: an answer that was streaming runs
//! again on resume, and a dead process's leases and tickets are dropped
//! by whoever meets them. When the last process using a live journal
//! closes it, the file is removed.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::error::{Error, Result};

/// The live journal's tables: the events table's columns, and what
/// processes coordinate through (leases on battles and series, lane
/// tickets and grants, and the model each lane served last; see migration
/// 013).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS live.events (
    battle_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    contestant_id TEXT,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (battle_id, seq)
);
CREATE TABLE IF NOT EXISTS live.leases (
    battle_id  TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS live.series_leases (
    series_id  TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS live.lane_tickets (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    lane          TEXT NOT NULL,
    ready_at      INTEGER NOT NULL,
    position      INTEGER NOT NULL,
    holder        TEXT NOT NULL,
    battle_id     TEXT,
    contestant_id TEXT,
    model         TEXT NOT NULL,
    owner         TEXT NOT NULL,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    granted_at    INTEGER
);
CREATE INDEX IF NOT EXISTS live.lane_tickets_lane ON lane_tickets (lane, ready_at, position, id);
CREATE INDEX IF NOT EXISTS live.lane_tickets_owner ON lane_tickets (owner);
CREATE TABLE IF NOT EXISTS live.lanes (
    lane       TEXT PRIMARY KEY,
    last_model TEXT
);
CREATE TABLE IF NOT EXISTS live.lane_grants (
    lane TEXT NOT NULL,
    at   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS live.lane_grants_lane ON lane_grants (lane, at);
CREATE TABLE IF NOT EXISTS live.machines (
    name    TEXT PRIMARY KEY,
    boot_id TEXT NOT NULL,
    seen_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS live.workers (
    owner      TEXT PRIMARY KEY,
    machine    TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    user_name  TEXT,
    places     INTEGER NOT NULL,
    taken      INTEGER NOT NULL,
    started_at INTEGER NOT NULL,
    seen_at    INTEGER NOT NULL
);
";

/// The live journal this process has open: its file, and a shared lock on
/// it that says so to the others.
pub(crate) struct Live {
    path: PathBuf,
    lock: File,
}

impl Live {
    /// Attaches the live journal of the database at `db` to `conn`
    /// (creating it), and holds its shared lock.
    pub fn attach(conn: &Connection, db: &Path) -> Result<Live> {
        let path = path_for(db);
        let lock = lock_shared(&path.with_extension("lock"))?;
        conn.execute("ATTACH DATABASE ?1 AS live", [path.to_string_lossy()])?;
        conn.pragma_update(
            Some(rusqlite::DatabaseName::Attached("live")),
            "journal_mode",
            "WAL",
        )?;
        // Nothing here needs to survive a power cut: no syncs.
        conn.pragma_update(
            Some(rusqlite::DatabaseName::Attached("live")),
            "synchronous",
            "OFF",
        )?;
        conn.execute_batch(SCHEMA)?;
        Ok(Live { path, lock })
    }
}

impl Drop for Live {
    /// The last process to close a live journal removes it (what is left
    /// in it belongs to answers that run again on resume).
    fn drop(&mut self) {
        if self.lock.try_lock().is_ok() {
            for suffix in ["", "-wal", "-shm"] {
                let mut file = self.path.clone().into_os_string();
                file.push(suffix);
                let _ = std::fs::remove_file(file);
            }
            let _ = std::fs::remove_file(self.path.with_extension("lock"));
        }
    }
}

/// Opens `lock_path` and holds a shared lock on it. A closer that finds
/// itself last removes the file under its exclusive lock; an opener that
/// locked such a removed file (the path is gone or is a newer file) tries
/// again, so every process holds the lock of the one file on the path.
fn lock_shared(lock_path: &Path) -> Result<File> {
    loop {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path)
            .map_err(|e| Error::io(lock_path, e))?;
        lock.lock_shared().map_err(|e| Error::io(lock_path, e))?;
        if same_file(&lock, lock_path) {
            return Ok(lock);
        }
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// Where the live journal of the database at `db` is: in this user's
/// memory-backed folder when there is one, named after the database's
/// path; else beside the database.
fn path_for(db: &Path) -> PathBuf {
    let name = format!("live-{:016x}.db", fnv1a(db.to_string_lossy().as_bytes()));
    match memory_folder() {
        Some(dir) => dir.join(name),
        None => db.with_file_name(name),
    }
}

/// `$XDG_RUNTIME_DIR/arena`, made private (0700), used only when it is a
/// real folder of this user's that nobody else can enter.
#[cfg(not(unix))]
fn memory_folder() -> Option<PathBuf> {
    None
}

/// `$XDG_RUNTIME_DIR/arena`, made private (0700), used only when it is a
/// real folder of this user's that nobody else can enter.
#[cfg(unix)]
fn memory_folder() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    // Without the variable (a cron job, `su`), the session's folder is
    // still found where logind makes it, so every process of the user
    // meets in the same journal.
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/run/user/{uid}")));
    if !runtime.is_dir() {
        return None;
    }
    let dir = runtime.join("arena");
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    let private = meta.is_dir() && meta.uid() == uid && meta.permissions().mode() & 0o077 == 0;
    private.then_some(dir)
}

/// FNV-1a: a stable name for a path (not a secret, not a defence).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_database_has_its_own_private_live_journal() {
        let (a, b) = (
            path_for(Path::new("/x/arena.db")),
            path_for(Path::new("/y/arena.db")),
        );
        assert_ne!(a, b);
        assert_eq!(a, path_for(Path::new("/x/arena.db")));
        #[cfg(unix)]
        if let Some(dir) = memory_folder() {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{}", dir.display());
        }
    }
}
