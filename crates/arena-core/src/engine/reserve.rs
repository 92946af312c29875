//! Room kept on the disk of Arena's data for a battle's last writes: a
//! file (`reserve`, 4 MiB) made when a battle starts and removed when a
//! write of Arena's fails for a full disk, so that the ends of its
//! contestants and of the battle can still be written, with the reason.

use super::Engine;
use crate::error::Error;

const FILE: &str = "reserve";
const BYTES: usize = 4 * 1024 * 1024;

/// Makes the reserve if it is not there (and the disk has room).
pub(crate) async fn keep(engine: &Engine) {
    let path = engine.data_dir().join(FILE);
    let _ = tokio::task::spawn_blocking(move || {
        if path.exists() {
            return;
        }
        if let Err(e) = std::fs::write(&path, vec![0u8; BYTES]) {
            tracing::warn!(error = %e, "could not keep room on the disk for Arena's last writes");
            let _ = std::fs::remove_file(&path);
        }
    })
    .await;
}

/// Gives the reserve's room back; whether there was one.
pub(crate) fn release(engine: &Engine) -> bool {
    let released = std::fs::remove_file(engine.data_dir().join(FILE)).is_ok();
    if released {
        tracing::warn!("the disk of Arena's data is full; its reserve was released");
    }
    released
}

/// Whether the reserve was released since the battle started (a
/// write failed for a full disk).
pub(crate) fn released(engine: &Engine) -> bool {
    !engine.data_dir().join(FILE).exists()
}

/// Whether `e` is a write that failed because the disk is full
/// (SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full`, `ENOSPC`).
pub(crate) fn disk_full(e: &Error) -> bool {
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io.raw_os_error() == Some(libc::ENOSPC) {
                return true;
            }
        }
        let text = err.to_string();
        if text.contains("database or disk is full")
            || text.contains("No space left on device")
            || text.contains("could not extend file")
        {
            return true;
        }
        source = err.source();
    }
    false
}
