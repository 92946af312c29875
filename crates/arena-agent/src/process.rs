//! One agent process. It runs in a new process group so that everything it
//! starts can be stopped together: on timeout or cancel the group gets
//! SIGTERM, then SIGKILL after a grace period, and the leader is reaped.
//! Even after a clean exit the group is told to stop, so no helper it left
//! behind outlives it.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// Environment variables an agent inherits; everything else is dropped.
pub const ENV_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "SHELL",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The user's own folders, which a sandboxed process does not inherit.
const USER_FOLDERS: &[&str] = &[
    "HOME",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
];

/// The longest line handed on whole; a longer one comes in pieces of this
/// size (so a process that prints without newlines cannot fill memory).
pub const MAX_LINE: usize = 1024 * 1024;

/// How long a process group gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(3);
/// How much of stderr is kept for the error message.
const STDERR_TAIL: usize = 4096;

/// What to start. Its `Debug` names the environment variables it adds,
/// not their values (one of them is the agent's key).
#[derive(Clone)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added on top of the allowlisted environment (the agent's own key, …).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// What the process may touch; `None`: no sandbox. Sandboxed, it
    /// inherits neither the user's `HOME`, `TMPDIR` and XDG folders nor
    /// `XDG_RUNTIME_DIR` (`env` gives it its own home and temp folder).
    pub sandbox: Option<super::sandbox::Sandbox>,
    pub bounds: Bounds,
}

/// What a process may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes of output (stdout and stderr) handed on; the rest is read and
    /// dropped, and the run goes on ([`Exit::output_dropped`] says so).
    pub output_bytes: usize,
    /// The largest file it may write (`RLIMIT_FSIZE`, for it and all it
    /// starts); `None`: the inherited limit.
    pub file_bytes: Option<u64>,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            output_bytes: usize::MAX,
            file_bytes: None,
        }
    }
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &crate::backends::env_names(&self.env))
            .field("timeout", &self.timeout)
            .field("sandbox", &self.sandbox)
            .field("bounds", &self.bounds)
            .finish()
    }
}

/// A line the agent wrote.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Stdout(String),
    Stderr(String),
}

/// How the process ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Exit {
    /// The exit code, when it exited by itself.
    pub code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// The last few KiB of stderr.
    pub stderr_tail: String,
    pub pid: u32,
    /// Output bytes past [`Bounds::output_bytes`], read and dropped.
    pub output_dropped: u64,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out && !self.cancelled
    }

    /// Whether it was stopped for writing a file over [`Bounds::file_bytes`].
    pub fn hit_file_limit(&self) -> bool {
        #[cfg(unix)]
        {
            self.signal == Some(libc::SIGXFSZ)
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    /// A one-paragraph reason for a failed run.
    pub fn describe(&self, program: &str) -> String {
        let what = if self.timed_out {
            "timed out and was stopped".to_string()
        } else if self.cancelled {
            "was cancelled".to_string()
        } else {
            match (self.code, self.signal) {
                (Some(code), _) => format!("exited with status {code}"),
                _ if self.hit_file_limit() => {
                    "was stopped for writing a file over the size limit (limits.max_file_bytes)"
                        .to_string()
                }
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => "was killed by a signal".to_string(),
            }
        };
        let tail = self.stderr_tail.trim();
        if tail.is_empty() {
            format!("{program} {what}")
        } else {
            format!("{program} {what}: {tail}")
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot start {program}: {source}")]
pub struct SpawnError {
    pub program: String,
    #[source]
    pub source: std::io::Error,
}

/// Runs the agent to its end, handing each output line to `on_line`.
pub async fn run(
    launch: &Launch,
    token: &CancellationToken,
    mut on_line: impl FnMut(Line),
) -> Result<Exit, SpawnError> {
    let mut cmd = Command::new(&launch.program);
    let sandboxed = launch.sandbox.is_some();
    cmd.args(&launch.args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(
            ENV_ALLOWLIST
                .iter()
                .filter(|k| !(sandboxed && USER_FOLDERS.contains(k)))
                .filter_map(|k| std::env::var(k).ok().map(|v| (*k, v))),
        )
        .env("TERM", "dumb")
        .env("NO_COLOR", "1")
        .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let prepared = match &launch.sandbox {
        Some(sandbox) => Some(sandbox.ruleset().map_err(|e| SpawnError {
            program: launch.program.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })?),
        None => None,
    };
    let file_bytes = launch.bounds.file_bytes;
    // SAFETY: between fork and exec this makes only system calls
    // (setrlimit; no_new_privs and landlock_restrict_self in `apply`) and
    // takes the prepared ruleset; it does not allocate when it succeeds.
    #[cfg(unix)]
    unsafe {
        cmd.pre_exec(move || {
            if let Some(limit) = file_bytes {
                let limit = libc::rlimit {
                    rlim_cur: limit as libc::rlim_t,
                    rlim_max: limit as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            match &prepared {
                Some(ruleset) => ruleset.apply(),
                None => Ok(()),
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (prepared, file_bytes);
    let mut child = cmd.spawn().map_err(|source| SpawnError {
        program: launch.program.display().to_string(),
        source,
    })?;
    let pid = child.id().unwrap_or(0);
    let mut stdout = child.stdout.take().map(|s| Lines::new(BufReader::new(s)));
    let mut stderr = child.stderr.take().map(|s| Lines::new(BufReader::new(s)));
    let mut budget = Budget {
        left: launch.bounds.output_bytes,
        dropped: 0,
    };
    let mut tail: VecDeque<u8> = VecDeque::new();
    let deadline = tokio::time::sleep(launch.timeout);
    tokio::pin!(deadline);
    let (mut timed_out, mut cancelled) = (false, false);
    let mut leader: Option<std::process::ExitStatus> = None;
    let drain = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(drain);

    loop {
        if leader.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        tokio::select! {
            line = next_line(&mut stdout) => match line {
                Some(l) => {
                    if budget.take(&l) {
                        on_line(Line::Stdout(l));
                    }
                }
                None => stdout = None,
            },
            line = next_line(&mut stderr) => match line {
                Some(l) => {
                    tail.extend(l.as_bytes());
                    tail.push_back(b'\n');
                    while tail.len() > STDERR_TAIL {
                        tail.pop_front();
                    }
                    if budget.take(&l) {
                        on_line(Line::Stderr(l));
                    }
                }
                None => stderr = None,
            },
            status = child.wait(), if leader.is_none() => {
                // The agent is done. Whatever it started must let go of our
                // pipes too; read what is left, briefly.
                leader = Some(status.unwrap_or_default());
                signal_group(pid, Signal::Term);
                drain.as_mut().reset(tokio::time::Instant::now() + GRACE);
            }
            _ = &mut drain, if leader.is_some() => break,
            _ = &mut deadline, if leader.is_none() => {
                timed_out = true;
                leader = stop_group(&mut child, pid).await;
                break;
            }
            _ = token.cancelled(), if leader.is_none() => {
                cancelled = true;
                leader = stop_group(&mut child, pid).await;
                break;
            }
        }
    }
    let status = leader;
    // Make sure nothing the agent started lingers.
    signal_group(pid, Signal::Kill);
    #[cfg(unix)]
    let signal = {
        use std::os::unix::process::ExitStatusExt;
        status.and_then(|s| s.signal())
    };
    #[cfg(not(unix))]
    let signal = None;
    Ok(Exit {
        code: status.and_then(|s| s.code()),
        signal,
        timed_out,
        cancelled,
        stderr_tail: String::from_utf8_lossy(tail.make_contiguous()).into_owned(),
        pid,
        output_dropped: budget.dropped,
    })
}

/// How much more output is handed on.
struct Budget {
    left: usize,
    dropped: u64,
}

impl Budget {
    /// Whether `line` is handed on (it fits in what is left).
    fn take(&mut self, line: &str) -> bool {
        let size = line.len() + 1;
        if self.dropped == 0 && size <= self.left {
            self.left -= size;
            true
        } else {
            self.dropped += size as u64;
            false
        }
    }
}

/// Lines of a pipe, at most [`MAX_LINE`] bytes each (a longer line comes in
/// pieces), decoded lossily.
struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
}

impl<R: tokio::io::AsyncBufRead + Unpin> Lines<R> {
    fn new(reader: R) -> Self {
        Lines {
            reader,
            buf: Vec::new(),
        }
    }

    /// The next line without its `\n` (and `\r`), `None` at the end.
    async fn next(&mut self) -> Option<String> {
        self.buf.clear();
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(bytes) => bytes,
                Err(_) => return None,
            };
            if available.is_empty() {
                return (!self.buf.is_empty()).then(|| self.take());
            }
            let room = MAX_LINE - self.buf.len();
            let window = &available[..available.len().min(room)];
            match window.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.buf.extend_from_slice(&window[..end]);
                    self.reader.consume(end + 1);
                    return Some(self.take());
                }
                None => {
                    let used = window.len();
                    self.buf.extend_from_slice(window);
                    self.reader.consume(used);
                    if self.buf.len() >= MAX_LINE {
                        return Some(self.take());
                    }
                }
            }
        }
    }

    fn take(&mut self) -> String {
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        String::from_utf8_lossy(&self.buf).into_owned()
    }
}

async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Option<Lines<R>>,
) -> Option<String> {
    match lines {
        Some(l) => l.next().await,
        None => std::future::pending().await,
    }
}

enum Signal {
    Term,
    Kill,
}

fn signal_group(pid: u32, signal: Signal) {
    #[cfg(unix)]
    {
        let Ok(pgid) = i32::try_from(pid) else { return };
        if pgid <= 0 {
            return;
        }
        let sig = match signal {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: signals the process group we created for this child; ESRCH
        // (the group is already gone) is harmless.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (pid, signal);
    }
}

/// SIGTERM to the group, SIGKILL after the grace period, then reap.
async fn stop_group(
    child: &mut tokio::process::Child,
    pid: u32,
) -> Option<std::process::ExitStatus> {
    signal_group(pid, Signal::Term);
    match tokio::time::timeout(GRACE, child.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => {
            signal_group(pid, Signal::Kill);
            let _ = child.start_kill();
            child.wait().await.ok()
        }
    }
}
