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
    /// The last few KiB of stderr.
    pub stderr_tail: String,
    pub pid: u32,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out && !self.cancelled
    }

    /// A one-paragraph reason for a failed run.
    pub fn describe(&self, program: &str) -> String {
        let what = if self.timed_out {
            "timed out and was stopped".to_string()
        } else if self.cancelled {
            "was cancelled".to_string()
        } else {
            match self.code {
                Some(code) => format!("exited with status {code}"),
                None => "was killed by a signal".to_string(),
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
    if let Some(sandbox) = &launch.sandbox {
        let prepared = sandbox.ruleset().map_err(|e| SpawnError {
            program: launch.program.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })?;
        // SAFETY: `apply` only takes the prepared ruleset and makes two
        // system calls (no_new_privs, landlock_restrict_self); it does not
        // allocate when it succeeds.
        #[cfg(unix)]
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
    }
    let mut child = cmd.spawn().map_err(|source| SpawnError {
        program: launch.program.display().to_string(),
        source,
    })?;
    let pid = child.id().unwrap_or(0);
    let mut stdout = child.stdout.take().map(|s| BufReader::new(s).lines());
    let mut stderr = child.stderr.take().map(|s| BufReader::new(s).lines());
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
                Some(l) => on_line(Line::Stdout(l)),
                None => stdout = None,
            },
            line = next_line(&mut stderr) => match line {
                Some(l) => {
                    tail.extend(l.as_bytes());
                    tail.push_back(b'\n');
                    while tail.len() > STDERR_TAIL {
                        tail.pop_front();
                    }
                    on_line(Line::Stderr(l));
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
    Ok(Exit {
        code: status.and_then(|s| s.code()),
        timed_out,
        cancelled,
        stderr_tail: String::from_utf8_lossy(tail.make_contiguous()).into_owned(),
        pid,
    })
}

async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Option<tokio::io::Lines<R>>,
) -> Option<String> {
    match lines {
        Some(l) => l.next_line().await.ok().flatten(),
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
