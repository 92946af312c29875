//! One app at a time, across threads and processes: an exclusive `flock`.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

/// Held while a test's [`crate::Harness`] lives; released when dropped (the
/// kernel releases it too when the process dies).
pub(crate) struct RunLock {
    _file: File,
}

impl RunLock {
    /// Waits (without blocking the async runtime) for the lock on `path`.
    pub(crate) async fn acquire(path: &Path) -> Result<RunLock> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            // SAFETY: flock on a file descriptor this closure owns (via `file`).
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc != 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("locking {}", path.display()));
            }
            Ok(RunLock { _file: file })
        })
        .await
        .context("the lock task failed")?
    }
}
