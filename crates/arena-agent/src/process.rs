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

/// The longest line handed on; a longer one keeps its first and last
/// parts with a note of what was cut between them (so a process that
/// prints without newlines cannot fill memory, and a line's end survives).
pub const MAX_LINE: usize = 1024 * 1024;

/// How much of each end of a cut line is kept: together with the note
/// between them, at most [`MAX_LINE`].
const LINE_END: usize = (MAX_LINE - 256) / 2;

/// Room kept in the output's budget for the note where output was dropped.
const NOTE_ROOM: usize = 256;

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
    /// For a sandboxed agent pointed at one of your providers: its one
    /// network door ([`crate::relay`]), open on `127.0.0.1:`[`crate::relay::PORT`]
    /// in its own network namespace, forwarding to this provider.
    pub door: Option<crate::relay::Upstream>,
    /// For a jailed prepare command: its one network door
    /// ([`crate::registry`]), an HTTPS proxy on `127.0.0.1:`[`crate::registry::PORT`]
    /// in its own network namespace that reaches these package registries
    /// and nothing else. The jail gets no other network whatever its
    /// sandbox's `connect` says, and the program the proxy variables
    /// ([`crate::registry::proxy_env`], before `env`). Not jailed: no door,
    /// no proxy, and the run goes on as its sandbox says (with a warning).
    pub registries: Option<crate::registry::Registries>,
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
    /// What all its processes together may consume: memory, processes,
    /// bytes written to its write folders, the disk's free-space floor
    /// ([`crate::bounds`]).
    pub consumption: crate::bounds::Consumption,
    /// What its network door ([`Launch::door`]) passes on.
    pub door: crate::relay::DoorLimits,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            output_bytes: usize::MAX,
            file_bytes: None,
            consumption: crate::bounds::Consumption::default(),
            door: crate::relay::DoorLimits::default(),
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
            .field("registries", &self.registries)
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
    /// The limit of [`Bounds::consumption`] it reached, which stopped it.
    pub limit: Option<crate::bounds::Limit>,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out && !self.cancelled && self.limit.is_none()
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
        let what = if let Some(limit) = &self.limit {
            limit.to_string()
        } else if self.timed_out {
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
    let spawn_error = |source: std::io::Error| SpawnError {
        program: launch.program.display().to_string(),
        source,
    };
    let behind_registry_door;
    let launch = match registry_door_launch(launch) {
        Some(narrowed) => {
            behind_registry_door = narrowed;
            &behind_registry_door
        }
        None => launch,
    };
    let sandboxed = launch.sandbox.is_some();
    let jailed = jail_command(launch).map_err(spawn_error)?;
    let door = match (
        &jailed,
        launch.door.is_some() || launch.registries.is_some(),
    ) {
        (Some(_), true) => Some(DoorPipes::new().map_err(spawn_error)?),
        _ => None,
    };
    let mut cmd = match &jailed {
        Some(prepared) => {
            let mut cmd = Command::new(&prepared.program);
            if let Some(pipes) = &door {
                cmd.args(pipes.bwrap_args());
            }
            cmd.args(&prepared.args);
            cmd
        }
        None => {
            let mut cmd = Command::new(&launch.program);
            cmd.args(&launch.args);
            cmd
        }
    };
    cmd.current_dir(&launch.cwd)
        .env_clear()
        .envs(
            ENV_ALLOWLIST
                .iter()
                .filter(|k| !(sandboxed && USER_FOLDERS.contains(k)))
                .filter_map(|k| std::env::var(k).ok().map(|v| (*k, v))),
        )
        .env("TERM", "dumb")
        .env("NO_COLOR", "1")
        .envs(
            jailed
                .as_ref()
                .and(launch.registries.as_ref())
                .map(|_| crate::registry::proxy_env())
                .unwrap_or_default(),
        )
        .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    // Landlock: the whole sandbox where it is the sandbox; in a jail, its
    // scoping only (abstract UNIX sockets and signals outside the jail,
    // which matter where the jail keeps the host's network).
    let prepared = match (&launch.sandbox, &jailed) {
        (Some(sandbox), None) => Some(
            sandbox
                .ruleset()
                .map_err(|e| spawn_error(std::io::Error::other(e.to_string())))?,
        ),
        // Only where nothing else scopes it: a jail on the host's network
        // whose program has no inner layer (the inner layer scopes itself).
        // Its own network namespace already keeps abstract sockets apart,
        // and a Landlock layer with no rules also refuses every rename or
        // link across folders (the kernel handles `REFER` in every layer):
        // a build in the jail would fail with "Invalid cross-device link".
        (Some(sandbox), Some(_))
            if sandbox.connect.is_none()
                && launch.door.is_none()
                && crate::jail::confiner().is_none() =>
        {
            super::sandbox::scope_only()
        }
        (Some(_), Some(_)) => None,
        _ => None,
    };
    let file_bytes = launch.bounds.file_bytes;
    // Its memory and processes: a cgroup of its own, joined before bwrap
    // runs, or per-process limits where the machine gives no cgroup.
    let consumption = launch.bounds.consumption;
    let group = crate::bounds::Group::create(consumption)
        .map_err(|e| {
            spawn_error(std::io::Error::other(format!(
                "cannot make the cgroup that bounds its memory and processes: {e}"
            )))
        })?
        .map(std::sync::Arc::new);
    let cgroup_procs = group.as_ref().map(|g| g.procs_fds()).unwrap_or_default();
    let (data_bytes, processes) = crate::bounds::rlimits(consumption);
    let folders = match &launch.sandbox {
        // Its own `/dev` holds no files of its writing.
        Some(sandbox) => sandbox
            .write
            .iter()
            .filter(|p| !p.starts_with("/dev"))
            .cloned()
            .collect(),
        None => vec![launch.cwd.clone()],
    };
    let mut watch = crate::bounds::Watch::start(group.clone(), folders, consumption).await;
    if let Some(limit) = watch.check_now() {
        // Under the disk's floor already: it does not start.
        return Err(spawn_error(std::io::Error::other(format!(
            "{} {limit}",
            launch.program.display()
        ))));
    }
    let mut keep_seccomp = jailed.as_ref().map(|j| j.pre_exec());
    let inherited = door.as_ref().map(DoorPipes::child_fds);
    // SAFETY: between fork and exec this makes only system calls (write
    // to the cgroup's open `cgroup.procs`; open, write and close of
    // `/proc/self/oom_score_adj`; setrlimit; fcntl and lseek to keep the
    // jail's descriptors open; no_new_privs and landlock_restrict_self in
    // `apply`) and takes the prepared ruleset; it does not allocate when
    // it succeeds.
    #[cfg(unix)]
    unsafe {
        cmd.pre_exec(move || {
            // "0": this process. Everything it starts stays in the cgroup.
            for fd in &cgroup_procs {
                if libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // The kernel's first choice under memory pressure (raising it
            // needs no privilege; nothing it starts can lower it).
            let adj = libc::open(
                c"/proc/self/oom_score_adj".as_ptr(),
                libc::O_WRONLY | libc::O_CLOEXEC,
            );
            if adj >= 0 {
                let written = libc::write(adj, b"1000".as_ptr().cast(), 4);
                libc::close(adj);
                if written != 4 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (resource, limit) in [
                (libc::RLIMIT_DATA, data_bytes),
                (libc::RLIMIT_NPROC, processes),
            ] {
                if let Some(limit) = limit {
                    let limit = libc::rlimit {
                        rlim_cur: limit as libc::rlim_t,
                        rlim_max: limit as libc::rlim_t,
                    };
                    if libc::setrlimit(resource, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            if let Some(limit) = file_bytes {
                let limit = libc::rlimit {
                    rlim_cur: limit as libc::rlim_t,
                    rlim_max: limit as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(keep) = keep_seccomp.as_mut() {
                keep()?;
            }
            for fd in inherited.iter().flatten() {
                if libc::fcntl(*fd, libc::F_SETFD, 0) == -1 {
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
    let _ = (
        prepared,
        file_bytes,
        &mut keep_seccomp,
        inherited,
        cgroup_procs,
        data_bytes,
        processes,
    );
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let jailed_run = jailed.is_some();
    drop(jailed);
    let pid = child.id().unwrap_or(0);
    // The door: opened in the jail's network namespace once bwrap has made
    // it, served from here until the run ends; only then does the agent
    // start.
    let relay_stop = CancellationToken::new();
    if let Some(pipes) = door {
        if let Err(error) = pipes
            .open(
                launch.door.clone(),
                launch.bounds.door,
                launch.registries.clone(),
                relay_stop.clone(),
            )
            .await
        {
            signal_group(pid, Signal::Kill);
            let _ = child.wait().await;
            // What bwrap said, if it stopped by itself.
            let mut said = String::new();
            if let Some(stderr) = child.stderr.take() {
                use tokio::io::AsyncReadExt;
                let _ = stderr.take(4096).read_to_string(&mut said).await;
            }
            let error = match said.trim() {
                "" => error,
                said => std::io::Error::other(format!("{error}; bwrap: {said}")),
            };
            return Err(spawn_error(error));
        }
    }
    let _relay = relay_stop.drop_guard();
    let mut stdout = child.stdout.take().map(|s| Lines::new(BufReader::new(s)));
    let mut stderr = child.stderr.take().map(|s| Lines::new(BufReader::new(s)));
    let mut budget = Budget::new(launch.bounds.output_bytes);
    let mut tail: VecDeque<u8> = VecDeque::new();
    let deadline = tokio::time::sleep(launch.timeout);
    tokio::pin!(deadline);
    let (mut timed_out, mut cancelled) = (false, false);
    let mut limit: Option<crate::bounds::Limit> = None;
    let mut leader: Option<std::process::ExitStatus> = None;
    let drain = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(drain);

    loop {
        if leader.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        tokio::select! {
            line = next_line(&mut stdout) => match line {
                Some((l, cut)) => {
                    budget.dropped += cut;
                    if let Some(line) = budget.take(Line::Stdout(l)) {
                        on_line(line);
                    }
                }
                None => stdout = None,
            },
            line = next_line(&mut stderr) => match line {
                Some((l, cut)) => {
                    budget.dropped += cut;
                    tail.extend(l.as_bytes());
                    tail.push_back(b'\n');
                    while tail.len() > STDERR_TAIL {
                        tail.pop_front();
                    }
                    if let Some(line) = budget.take(Line::Stderr(l)) {
                        on_line(line);
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
            reached = watch.reached(), if leader.is_none() => {
                tracing::info!(program = %launch.program.display(), limit = %reached, "a run reached a limit");
                limit = Some(reached);
                leader = stop_group(&mut child, pid).await;
                break;
            }
        }
    }
    // The end of the output, kept while the middle was dropped.
    for line in budget.finish() {
        on_line(line);
    }
    // An OOM kill or a refused fork that ended it before the watch saw it.
    if limit.is_none() && !cancelled && !timed_out {
        limit = group.as_ref().and_then(|g| g.reached());
    }
    drop(watch);
    if let Some(group) = group {
        // Removing it waits for its last processes to exit.
        let _ = tokio::task::spawn_blocking(move || drop(group)).await;
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
    let mut code = status.and_then(|s| s.code());
    // bwrap exits with 128 + the signal that killed the jailed program.
    let signal = match (jailed_run, code) {
        (true, Some(c)) if c > 128 && c < 128 + 65 => {
            code = None;
            Some(c - 128)
        }
        _ => signal,
    };
    Ok(Exit {
        code,
        signal,
        timed_out,
        cancelled,
        stderr_tail: String::from_utf8_lossy(tail.make_contiguous()).into_owned(),
        pid,
        output_dropped: budget.dropped,
        limit,
    })
}

/// The bwrap command that runs a sandboxed launch in its jail, or `None`
/// when it is not sandboxed or runs under Landlock alone. Inside the jail,
/// Landlock over the same folders and ports, applied by the Arena binary
/// that names itself the confiner, which then becomes the program.
fn jail_command(launch: &Launch) -> std::io::Result<Option<crate::jail::Prepared>> {
    let Some(sandbox) = launch
        .sandbox
        .as_ref()
        .filter(|s| s.enforcement == super::sandbox::Enforcement::Jail)
    else {
        return Ok(None);
    };
    let mut jail = sandbox.jail(&launch.cwd, launch.door.is_some());
    if let Some(bytes) = launch.bounds.consumption.tmp_bytes {
        jail.tmp_bytes = bytes;
    }
    let program = super::sandbox::lexical(&launch.program);
    let (program, args) = match crate::jail::confiner() {
        Some(confiner) if super::sandbox::abi_version() >= 1 => {
            jail.read.push(confiner.to_path_buf());
            (
                confiner.to_path_buf(),
                crate::jail::confined_args(sandbox, &program, &launch.args),
            )
        }
        _ => (program, launch.args.clone()),
    };
    jail.command(&program, &args)
        .map(Some)
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// How output is handed on within its budget: the first half as it comes;
/// past it, the last lines are kept (up to the other half) and handed on
/// when the run ends, after a note of how much was dropped between. So a
/// flood of noise never costs the run its last lines (its summary).
struct Budget {
    head_left: usize,
    /// Once the head is spent, every later line goes to the tail.
    spent: bool,
    tail: VecDeque<Line>,
    tail_bytes: usize,
    tail_max: usize,
    /// Bytes dropped in all: lines between the head and the tail, and the
    /// middles of lines too long to keep whole.
    dropped: u64,
    /// Bytes of the lines dropped between the head and the tail.
    between: u64,
}

impl Budget {
    fn new(total: usize) -> Budget {
        let head = total / 2;
        Budget {
            head_left: head,
            spent: false,
            tail: VecDeque::new(),
            tail_bytes: 0,
            tail_max: total.saturating_sub(head).saturating_sub(NOTE_ROOM),
            dropped: 0,
            between: 0,
        }
    }

    /// `line`, when it is handed on now; else it is kept for the end (and
    /// the oldest kept lines dropped to make room; the newest is always
    /// kept).
    fn take(&mut self, line: Line) -> Option<Line> {
        let size = text_of(&line).len() + 1;
        if !self.spent && size <= self.head_left {
            self.head_left -= size;
            return Some(line);
        }
        self.spent = true;
        self.tail_bytes += size;
        self.tail.push_back(line);
        while self.tail_bytes > self.tail_max && self.tail.len() > 1 {
            if let Some(old) = self.tail.pop_front() {
                let n = text_of(&old).len() + 1;
                self.tail_bytes -= n;
                self.dropped += n as u64;
                self.between += n as u64;
            }
        }
        None
    }

    /// What is handed on at the end: the note of what was dropped (on
    /// stdout, which every reader of a run shows), then the kept last
    /// lines.
    fn finish(&mut self) -> Vec<Line> {
        let mut out = Vec::with_capacity(self.tail.len() + 1);
        if self.between > 0 {
            out.push(Line::Stdout(format!(
                "[Arena: {} bytes of output were dropped here (over limits.max_output_bytes); \
                 the first and the last of it are kept]",
                self.between
            )));
        }
        out.extend(self.tail.drain(..));
        out
    }
}

fn text_of(line: &Line) -> &str {
    match line {
        Line::Stdout(t) | Line::Stderr(t) => t,
    }
}

/// Lines of a pipe, decoded lossily; a line over [`MAX_LINE`] keeps its
/// first and last [`LINE_END`] bytes with a note between them.
struct Lines<R> {
    reader: R,
    /// The line's start (up to [`LINE_END`] bytes).
    head: Vec<u8>,
    /// The line's latest bytes past its start (up to [`LINE_END`]).
    end: VecDeque<u8>,
    /// Bytes of this line dropped between the two.
    cut: u64,
}

impl<R: tokio::io::AsyncBufRead + Unpin> Lines<R> {
    fn new(reader: R) -> Self {
        Lines {
            reader,
            head: Vec::new(),
            end: VecDeque::new(),
            cut: 0,
        }
    }

    /// The next line without its `\n` (and `\r`), with how many of its
    /// bytes were cut; `None` at the end.
    ///
    /// Cancel-safe (it is raced against the other pipe in a `select!`):
    /// what it has read of a line stays here until the line is whole, and
    /// the next call goes on from there.
    async fn next(&mut self) -> Option<(String, u64)> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(bytes) => bytes,
                Err(_) => return None,
            };
            if available.is_empty() {
                let any = !self.head.is_empty() || !self.end.is_empty() || self.cut > 0;
                return any.then(|| self.take());
            }
            match available.iter().position(|&b| b == b'\n') {
                Some(at) => {
                    keep(
                        &mut self.head,
                        &mut self.end,
                        &mut self.cut,
                        &available[..at],
                    );
                    self.reader.consume(at + 1);
                    return Some(self.take());
                }
                None => {
                    let used = available.len();
                    keep(&mut self.head, &mut self.end, &mut self.cut, available);
                    self.reader.consume(used);
                }
            }
        }
    }

    fn take(&mut self) -> (String, u64) {
        let mut bytes = std::mem::take(&mut self.head);
        if self.cut > 0 {
            bytes.extend_from_slice(
                format!(" … [Arena: {} bytes of this line dropped] … ", self.cut).as_bytes(),
            );
        }
        bytes.extend(self.end.drain(..));
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        let cut = std::mem::take(&mut self.cut);
        (String::from_utf8_lossy(&bytes).into_owned(), cut)
    }
}

/// Adds `bytes` of a line to its kept start and end.
fn keep(head: &mut Vec<u8>, end: &mut VecDeque<u8>, cut: &mut u64, mut bytes: &[u8]) {
    let room = LINE_END.saturating_sub(head.len());
    let first = bytes.len().min(room);
    head.extend_from_slice(&bytes[..first]);
    bytes = &bytes[first..];
    if bytes.len() >= LINE_END {
        *cut += (end.len() + bytes.len() - LINE_END) as u64;
        end.clear();
        end.extend(&bytes[bytes.len() - LINE_END..]);
        return;
    }
    end.extend(bytes);
    let over = end.len().saturating_sub(LINE_END);
    if over > 0 {
        end.drain(..over);
        *cut += over as u64;
    }
}

/// bwrap's `--info-fd` (it says the jail's first process) and `--block-fd`
/// (it waits there before starting the program) for a jail with a door.
struct DoorPipes {
    info_read: std::os::fd::OwnedFd,
    info_write: std::os::fd::OwnedFd,
    block_read: std::os::fd::OwnedFd,
    block_write: std::os::fd::OwnedFd,
}

impl DoorPipes {
    fn new() -> std::io::Result<DoorPipes> {
        let (info_read, info_write) = pipe()?;
        let (block_read, block_write) = pipe()?;
        Ok(DoorPipes {
            info_read,
            info_write,
            block_read,
            block_write,
        })
    }

    fn child_fds(&self) -> [i32; 2] {
        use std::os::fd::AsRawFd;
        [self.info_write.as_raw_fd(), self.block_read.as_raw_fd()]
    }

    fn bwrap_args(&self) -> [String; 4] {
        let [info, block] = self.child_fds();
        [
            "--info-fd".into(),
            info.to_string(),
            "--block-fd".into(),
            block.to_string(),
        ]
    }

    /// Reads the jail's first process from bwrap, opens the relay's
    /// listener in its network namespace, starts serving it, and lets the
    /// program start.
    async fn open(
        self,
        upstream: Option<crate::relay::Upstream>,
        door_limits: crate::relay::DoorLimits,
        registries: Option<crate::registry::Registries>,
        stop: CancellationToken,
    ) -> std::io::Result<()> {
        let DoorPipes {
            info_read,
            info_write,
            block_read,
            block_write,
        } = self;
        drop((info_write, block_read));
        let (relayed, registry) = (upstream.is_some(), registries.is_some());
        let (listener, registry_listener) = tokio::time::timeout(
            Duration::from_secs(20),
            tokio::task::spawn_blocking(move || -> std::io::Result<(Option<std::net::TcpListener>, Option<std::net::TcpListener>)> {
                use std::io::Read;
                let mut text = String::new();
                std::fs::File::from(info_read)
                    .take(64 * 1024)
                    .read_to_string(&mut text)?;
                let pid = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v.get("child-pid").and_then(|p| p.as_u64()))
                    .and_then(|p| u32::try_from(p).ok())
                    .ok_or_else(|| {
                        std::io::Error::other(format!("bwrap did not say its child's pid: {text}"))
                    })?;
                Ok((
                    relayed.then(|| crate::relay::listen_in(pid)).transpose()?,
                    registry
                        .then(|| crate::relay::listen_on_in(pid, crate::registry::PORT))
                        .transpose()?,
                ))
            }),
        )
        .await
        .map_err(|_| std::io::Error::other("the jail did not start within 20 s"))?
        .map_err(std::io::Error::other)??;
        if let (Some(listener), Some(upstream)) = (listener, upstream) {
            let stop = stop.clone();
            tokio::spawn(async move {
                if let Err(error) = crate::relay::serve(listener, upstream, door_limits, stop).await
                {
                    tracing::warn!(%error, "the relay stopped");
                }
            });
        }
        if let (Some(listener), Some(registries)) = (registry_listener, registries) {
            tokio::spawn(async move {
                if let Err(error) = crate::registry::serve(
                    listener,
                    registries,
                    crate::registry::Limits::default(),
                    stop,
                )
                .await
                {
                    tracing::warn!(%error, "the registry door stopped");
                }
            });
        }
        use std::io::Write;
        std::fs::File::from(block_write).write_all(b"1")?;
        Ok(())
    }
}

/// A launch with a registry door, narrowed so that its jail has no
/// network but its doors: its own network namespace, and connections to
/// the doors' ports only (its sandbox's `connect`, which the jail's
/// Landlock layer enforces too). `None` when it needs no change.
fn registry_door_launch(launch: &Launch) -> Option<Launch> {
    launch.registries.as_ref()?;
    let sandbox = launch.sandbox.as_ref();
    if sandbox.is_none_or(|s| s.enforcement != super::sandbox::Enforcement::Jail) {
        tracing::warn!(
            program = %launch.program.display(),
            "a registry door needs a jail; this run is not jailed and has no door"
        );
        return None;
    }
    let mut ports = vec![crate::registry::PORT];
    if launch.door.is_some() {
        ports.push(crate::relay::PORT);
    }
    let mut narrowed = launch.clone();
    if let Some(sandbox) = narrowed.sandbox.as_mut() {
        sandbox.connect = Some(ports);
    }
    Some(narrowed)
}

/// A pipe, both ends close-on-exec.
fn pipe() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors, which become owned here.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        ))
    }
}

async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Option<Lines<R>>,
) -> Option<(String, u64)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: Vec<u8>) -> Vec<(String, u64)> {
        let mut lines = Lines::new(tokio::io::BufReader::new(std::io::Cursor::new(input)));
        let mut out = Vec::new();
        while let Some(line) = lines.next().await {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn a_long_line_keeps_its_ends_and_says_what_was_cut() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'a', 10));
        input.extend(std::iter::repeat_n(b'm', 3 * MAX_LINE));
        input.extend(std::iter::repeat_n(b'z', 10));
        input.extend(b"\nlast");
        let lines = lines_of(input).await;
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], ("short".to_string(), 0));
        let (long, cut) = &lines[1];
        assert_eq!(*cut as usize, 3 * MAX_LINE + 20 - 2 * LINE_END);
        assert!(long.len() <= MAX_LINE, "{}", long.len());
        assert!(long.starts_with("aaaaaaaaaam") && long.ends_with("mzzzzzzzzzz"));
        assert!(long.contains(&format!("[Arena: {cut} bytes of this line dropped]")));
        assert_eq!(lines[2], ("last".to_string(), 0));
    }

    #[test]
    fn past_its_head_the_budget_keeps_the_last_lines_and_names_the_rest() {
        let mut budget = Budget::new(1000);
        let line = |i: usize| Line::Stdout(format!("{i:0>99}"));
        let handed: Vec<Line> = (0..30).filter_map(|i| budget.take(line(i))).collect();
        assert_eq!(handed, (0..5).map(line).collect::<Vec<_>>());
        let end = budget.finish();
        let Line::Stdout(note) = &end[0] else {
            panic!("{end:?}")
        };
        // The tail keeps what fits its half, less room for the note.
        assert!(
            note.contains("2300 bytes of output were dropped here"),
            "{note}"
        );
        assert_eq!(end[1..], (28..30).map(line).collect::<Vec<_>>()[..]);
        assert_eq!(budget.dropped, 2300);
    }
}
