//! The `tauri-driver` child process: started in its own process group, with
//! its output (and that of WebKitWebDriver and the app, which inherit it) in
//! a log file, and the whole group stopped when dropped.

use std::ffi::OsString;
use std::fs::File;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::Tools;

/// How long tauri-driver and WebKitWebDriver get to start listening.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the group gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);

pub(crate) struct DriverProcess {
    child: Child,
    port: u16,
    native_port: u16,
    log: PathBuf,
}

impl DriverProcess {
    /// Starts `tauri-driver --port P --native-port N --native-driver W` with
    /// `env` added to its environment (WebKitWebDriver and the app inherit it).
    pub(crate) fn spawn(
        tools: &Tools,
        env: &[(OsString, OsString)],
        log: &Path,
    ) -> Result<DriverProcess> {
        let port = free_port()?;
        let native_port = loop {
            let p = free_port()?;
            if p != port {
                break p;
            }
        };
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("duplicating the log file handle")?;
        let mut cmd = Command::new(&tools.tauri_driver);
        cmd.arg("--port")
            .arg(port.to_string())
            .arg("--native-port")
            .arg(native_port.to_string())
            .arg("--native-driver")
            .arg(&tools.native_driver)
            .envs(env.iter().map(|(k, v)| (k, v)))
            // Plain text in the log (the app's tracing output included).
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Its own process group, so that stopping it stops WebKitWebDriver
            // and the app too.
            .process_group(0);
        // If the test process dies without dropping us (killed by a test
        // runner's timeout, say), tauri-driver gets SIGTERM and stops
        // WebKitWebDriver; the app, having lost its driver, is left to the
        // group. Only a process that lives for the whole test spawns this
        // (an async runtime's worker or main thread), and the death signal is
        // tied to the spawning thread.
        let parent = std::process::id();
        // SAFETY: the closure only makes async-signal-safe calls (prctl,
        // getppid, raise) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    libc::raise(libc::SIGTERM);
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", tools.tauri_driver.display()))?;
        Ok(DriverProcess {
            child,
            port,
            native_port,
            log: log.to_path_buf(),
        })
    }

    /// The WebDriver URL to connect to.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// tauri-driver's process id (also its process group's).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn log_path(&self) -> &Path {
        &self.log
    }

    /// Waits until tauri-driver and WebKitWebDriver both listen. (Only TCP
    /// connects: an HTTP request through tauri-driver would leave a pooled
    /// connection to WebKitWebDriver behind that the session request may
    /// then find closed.)
    pub(crate) async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().context("polling tauri-driver")? {
                bail!("tauri-driver exited early ({status})");
            }
            if listening(self.port).await && listening(self.native_port).await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "tauri-driver (port {}) and WebKitWebDriver (port {}) were not both listening within {:?}",
                    self.port,
                    self.native_port,
                    STARTUP_TIMEOUT
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the whole process group: SIGTERM, a grace period, SIGKILL.
    fn stop(&mut self) {
        let Ok(pgid) = libc::pid_t::try_from(self.child.id()) else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return;
        };
        // SAFETY: plain kill(2) calls on the group we created. The leader is
        // not reaped before the final SIGKILL, so the group id cannot have
        // been reused by then.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline && group_alive(pgid) {
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for DriverProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether any process of the group is still running (a zombie that has not
/// been reaped counts as gone).
fn group_alive(pgid: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<libc::pid_t>().ok());
        pgrp == Some(pgid) && state != Some("Z")
    })
}

/// A port that was free a moment ago.
fn free_port() -> Result<u16> {
    let listener =
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free loopback port")?;
    Ok(listener.local_addr().context("reading the port")?.port())
}

/// Something accepts connections on the loopback `port`.
async fn listening(port: u16) -> bool {
    let connect = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port));
    matches!(
        tokio::time::timeout(Duration::from_secs(2), connect).await,
        Ok(Ok(_))
    )
}

/// The last `lines` lines of a log file, for error messages.
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(no log at {}: {e})", path.display()),
    }
}
