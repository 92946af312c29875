//! A throwaway PostgreSQL for Arena's tests: the real server from Debian's
//! `postgresql-15`, in a fresh folder under `/tmp`, on a random loopback
//! port, with password (SCRAM) authentication over TCP, removed when the
//! [`Cluster`] is dropped.
//!
//! - **Binaries**: `ARENA_TEST_PG_BIN`, else `/usr/lib/postgresql/15/bin`.
//!   When they are missing, [`Cluster::for_test`] says why and the test
//!   skips, unless `ARENA_REQUIRE_POSTGRES=1` (set by `scripts/test.sh`),
//!   when it fails.
//! - **Root**: `initdb` and `postgres` refuse to run as root, so under root
//!   the cluster's folder is handed to `nobody` and both run as that user
//!   (the standard library drops root's supplementary groups on the way).
//! - **Lifetime**: the server is started from a thread of its own that waits
//!   for it, with `PR_SET_PDEATHSIG` = `SIGQUIT`: a test process that dies
//!   takes its server with it. Drop stops it (immediate shutdown) and
//!   removes the folder; folders that dead test processes left behind are
//!   removed by the next start.
//! - **Speed**: `fsync`, `synchronous_commit` and `full_page_writes` are off;
//!   a cluster starts in about a second.
//! - **TLS** (off unless asked): [`Cluster::start_tls`],
//!   [`Cluster::for_test_tls`], or [`Cluster::builder`]`.tls()` /
//!   `.tls_for(names)`. The `openssl` program (`ARENA_TEST_OPENSSL`, else
//!   the one on `PATH`) makes a throwaway CA and a server certificate it
//!   signs, for `localhost` and `127.0.0.1` (or the names given), in the
//!   cluster's folder `tls/` — the key mode 0600 and owned by the user the
//!   server runs as, as PostgreSQL insists — and the server starts with
//!   `ssl=on`. Clients that trust [`Cluster::ca_file`] can verify the
//!   server, chain and host name: connect to
//!   `cluster.url_with_host("localhost", db)` ([`Cluster::url_with_host`]).
//!   Plain connections are still accepted (`host` lines in `pg_hba.conf`),
//!   so `sslmode=disable` still connects. Without `openssl` a TLS
//!   cluster's test skips, as without PostgreSQL (unless
//!   `ARENA_REQUIRE_POSTGRES=1`).
//!
//! Queries go through Debian's `psql` (the harness needs no client library).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Debian 12's server programs.
const DEBIAN_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The cluster's superuser (the role tests connect as).
pub const USER: &str = "arena";
/// How long a starting server may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopping server may take before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Where clusters are made: `/tmp`, not `$TMPDIR`, which `nobody` may be
/// unable to enter.
const PARENT: &str = "/tmp";
/// Their folders start with this.
const DIR_PREFIX: &str = "arena-pg-";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("PostgreSQL's server programs are not in {0} (install Debian's postgresql-15, as scripts/setup.sh does, or point ARENA_TEST_PG_BIN at them)")]
    Missing(PathBuf),
    /// A TLS cluster's certificates need the `openssl` program.
    #[error("cannot run {program} to make a TLS cluster's certificates ({source}); install openssl or point ARENA_TEST_OPENSSL at it")]
    NoOpenssl {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} failed: {output}")]
    Failed { what: String, output: String },
    #[error(
        "the test cluster did not accept connections within {timeout:?}; its log ends with: {log}"
    )]
    NotReady { timeout: Duration, log: String },
}

pub type Result<T> = std::result::Result<T, Error>;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Where the server programs are.
pub fn binaries() -> Result<PathBuf> {
    let dir = std::env::var_os("ARENA_TEST_PG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEBIAN_BIN));
    let complete = ["initdb", "postgres", "pg_isready", "psql"]
        .iter()
        .all(|p| dir.join(p).is_file());
    if complete {
        Ok(dir)
    } else {
        Err(Error::Missing(dir))
    }
}

/// Whether a missing PostgreSQL fails a test instead of skipping it.
pub fn required() -> bool {
    std::env::var("ARENA_REQUIRE_POSTGRES").is_ok_and(|v| v == "1")
}

/// The user a cluster's programs run as: `nobody` under root, else the
/// current user (`None`).
fn owner() -> Option<(u32, u32)> {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        return None;
    }
    let name = c"nobody";
    // SAFETY: a NUL-terminated name; the returned record is read at once,
    // before any other call that could reuse its storage.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Some((65534, 65534));
    }
    // SAFETY: pw is a valid record (checked above).
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

fn pid_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Removes the folders of clusters whose test process is gone.
fn reap_leftovers() {
    let Ok(entries) = std::fs::read_dir(PARENT) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(DIR_PREFIX) {
            continue;
        }
        let owner = std::fs::read_to_string(entry.path().join("owner.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok());
        if owner.is_some_and(|pid| !pid_alive(pid)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A free loopback port (free when asked: the start retries on a clash).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(io("finding a free port"))?;
    Ok(listener
        .local_addr()
        .map_err(io("reading the free port"))?
        .port())
}

/// The `openssl` program that makes a TLS cluster's certificates.
fn openssl() -> PathBuf {
    std::env::var_os("ARENA_TEST_OPENSSL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("openssl"))
}

/// How to start a [`Cluster`]: plain (the default) or with TLS.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    /// With TLS: the names the server's certificate is for.
    tls_names: Option<Vec<String>>,
}

impl Builder {
    /// TLS on, the server's certificate for `localhost` and `127.0.0.1`.
    pub fn tls(self) -> Builder {
        self.tls_for(&["localhost", "127.0.0.1"])
    }

    /// TLS on, the server's certificate for exactly `names` (host names or
    /// IP addresses): a certificate that does not name the host a client
    /// connects to, to check that the client notices.
    pub fn tls_for(mut self, names: &[&str]) -> Builder {
        self.tls_names = Some(names.iter().map(|n| n.to_string()).collect());
        self
    }

    /// Makes a cluster in a fresh folder and starts its server.
    pub fn start(self) -> Result<Cluster> {
        let bin = binaries()?;
        reap_leftovers();
        let dir = Path::new(PARENT).join(format!("{DIR_PREFIX}{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dir).map_err(io(format!("creating {}", dir.display())))?;
        let mut cluster = Cluster {
            bin,
            port: Mutex::new(0),
            password: uuid::Uuid::new_v4().simple().to_string(),
            owner: owner(),
            server: Mutex::new(None),
            tls: None,
            dir,
        };
        // From here on, Drop removes the folder whatever fails.
        cluster.init()?;
        if let Some(names) = &self.tls_names {
            cluster.tls = Some(cluster.make_certificates(names)?);
        }
        cluster.run(None)?;
        Ok(cluster)
    }

    /// A cluster for test `name` (see [`Cluster::for_test`]): `None`, with
    /// the reason printed, when PostgreSQL (or, for TLS, `openssl`) is
    /// missing and not [`required`].
    pub fn for_test(self, name: &str) -> Option<Cluster> {
        match self.start() {
            Ok(cluster) => Some(cluster),
            Err(e @ (Error::Missing(_) | Error::NoOpenssl { .. })) if !required() => {
                eprintln!(
                    "SKIPPED {name}: {e} (set ARENA_REQUIRE_POSTGRES=1 to make this a failure)"
                );
                None
            }
            Err(e) => panic!("{name}: cannot start a test PostgreSQL: {e}"),
        }
    }
}

/// A TLS cluster's files (in its folder's `tls/`).
#[derive(Debug)]
struct Tls {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

/// A running server: its pid and word of its end.
struct Server {
    pid: u32,
    ended: mpsc::Receiver<()>,
}

/// A throwaway PostgreSQL cluster (see the crate documentation).
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: Mutex<u16>,
    password: String,
    owner: Option<(u32, u32)>,
    server: Mutex<Option<Server>>,
    tls: Option<Tls>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("dir", &self.dir)
            .field("port", &self.port())
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// A cluster for test `name`: `None` (with the reason printed) when
    /// PostgreSQL is not installed and not [`required`]. Panics when it is
    /// required and missing, or when it cannot start.
    pub fn for_test(name: &str) -> Option<Cluster> {
        Builder::default().for_test(name)
    }

    /// [`Cluster::for_test`] with TLS on (see [`Builder::tls`]).
    pub fn for_test_tls(name: &str) -> Option<Cluster> {
        Builder::default().tls().for_test(name)
    }

    /// Makes a cluster in a fresh folder and starts its server.
    pub fn start() -> Result<Cluster> {
        Builder::default().start()
    }

    /// [`Cluster::start`] with TLS on (see [`Builder::tls`]).
    pub fn start_tls() -> Result<Cluster> {
        Builder::default().tls().start()
    }

    /// How to start a cluster other than plainly (with TLS).
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A throwaway CA, and a server certificate it signs for `names`, in
    /// `tls/`, readable by the server's user (see the crate documentation).
    fn make_certificates(&self, names: &[String]) -> Result<Tls> {
        let dir = self.dir.join("tls");
        std::fs::create_dir(&dir).map_err(io("creating tls/"))?;
        let alt_names = names
            .iter()
            .map(|n| match n.parse::<std::net::IpAddr>() {
                Ok(_) => format!("IP:{n}"),
                Err(_) => format!("DNS:{n}"),
            })
            .collect::<Vec<_>>()
            .join(",");
        let common_name = names.first().map_or("localhost", String::as_str);
        let config = format!(
            "[req]\n\
             distinguished_name = dn\n\
             prompt = no\n\
             [dn]\n\
             CN = Arena test CA\n\
             [ca]\n\
             basicConstraints = critical,CA:TRUE\n\
             keyUsage = critical,keyCertSign,cRLSign\n\
             subjectKeyIdentifier = hash\n\
             [server_dn]\n\
             CN = {common_name}\n\
             [server]\n\
             basicConstraints = critical,CA:FALSE\n\
             keyUsage = critical,digitalSignature,keyEncipherment\n\
             extendedKeyUsage = serverAuth\n\
             subjectAltName = {alt_names}\n\
             authorityKeyIdentifier = keyid\n"
        );
        let config_file = dir.join("openssl.cnf");
        std::fs::write(&config_file, config).map_err(io("writing tls/openssl.cnf"))?;
        let server_config = dir.join("server.cnf");
        std::fs::write(
            &server_config,
            format!("[req]\ndistinguished_name = server_dn\nprompt = no\n[server_dn]\nCN = {common_name}\n"),
        )
        .map_err(io("writing tls/server.cnf"))?;
        let tls = Tls {
            ca: dir.join("ca.crt"),
            cert: dir.join("server.crt"),
            key: dir.join("server.key"),
        };
        let (ca_key, csr) = (dir.join("ca.key"), dir.join("server.csr"));
        let p256 = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        // The CA: self-signed, valid for two days.
        let mut ca = Command::new(openssl());
        ca.args(["req", "-x509", "-noenc", "-days", "2", "-extensions", "ca"])
            .args(p256)
            .arg("-config")
            .arg(&config_file)
            .arg("-keyout")
            .arg(&ca_key)
            .arg("-out")
            .arg(&tls.ca);
        run_openssl(ca, "making the test CA")?;
        // The server's key and its request…
        let mut request = Command::new(openssl());
        request
            .args(["req", "-new", "-noenc"])
            .args(p256)
            .arg("-config")
            .arg(&server_config)
            .arg("-keyout")
            .arg(&tls.key)
            .arg("-out")
            .arg(&csr);
        run_openssl(request, "making the server's key")?;
        // …signed by the CA.
        let serial = format!("0x{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let mut sign = Command::new(openssl());
        sign.args(["x509", "-req", "-days", "2", "-extensions", "server"])
            .arg("-in")
            .arg(&csr)
            .arg("-CA")
            .arg(&tls.ca)
            .arg("-CAkey")
            .arg(&ca_key)
            .args(["-set_serial", &serial])
            .arg("-extfile")
            .arg(&config_file)
            .arg("-out")
            .arg(&tls.cert);
        run_openssl(sign, "signing the server's certificate")?;
        // The server reads its certificate and key as its own user, and
        // refuses a key others may read.
        for (path, mode) in [
            (&dir, 0o700),
            (&tls.ca, 0o644),
            (&tls.cert, 0o644),
            (&tls.key, 0o600),
        ] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .map_err(io(format!("restricting {}", path.display())))?;
            if let Some((uid, gid)) = self.owner {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(io(format!("handing {} to nobody", path.display())))?;
            }
        }
        Ok(tls)
    }

    fn init(&self) -> Result<()> {
        std::fs::write(self.dir.join("owner.pid"), std::process::id().to_string())
            .map_err(io("writing owner.pid"))?;
        std::fs::create_dir(self.dir.join("sock")).map_err(io("creating sock/"))?;
        let pwfile = self.dir.join("pwfile");
        let mut f = File::create(&pwfile).map_err(io("writing the password file"))?;
        writeln!(f, "{}", self.password).map_err(io("writing the password file"))?;
        for path in [&self.dir, &self.dir.join("sock"), &pwfile] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
                .map_err(io(format!("restricting {}", path.display())))?;
            if let Some((uid, gid)) = self.owner {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .map_err(io(format!("handing {} to nobody", path.display())))?;
            }
        }
        let out = self
            .program("initdb")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args([
                "-U",
                USER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"])
            .output()
            .map_err(io("running initdb"))?;
        if !out.status.success() {
            return Err(Error::Failed {
                what: "initdb".into(),
                output: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(())
    }

    /// One of the cluster's programs, run as its owner, with a clean
    /// environment (no PG* settings of the caller's).
    fn program(&self, name: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(name));
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LC_ALL", "C.UTF-8")
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        if let Some((uid, gid)) = self.owner {
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    /// Starts the server on `port` (a free one when `None`), retrying on a
    /// port clash or a previous server's shared memory still held.
    fn run(&self, port: Option<u16>) -> Result<()> {
        let mut last = None;
        for _ in 0..5 {
            let port = match port {
                Some(p) => p,
                None => free_port()?,
            };
            match self.run_once(port) {
                Ok(()) => return Ok(()),
                Err(e @ Error::NotReady { .. }) => {
                    last = Some(e);
                    std::thread::sleep(Duration::from_millis(300));
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(Error::NotReady {
            timeout: READY_TIMEOUT,
            log: String::new(),
        }))
    }

    fn run_once(&self, port: u16) -> Result<()> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .map_err(io("opening server.log"))?;
        let err_log = log.try_clone().map_err(io("opening server.log"))?;
        let mut cmd = self.program("postgres");
        cmd.arg("-D")
            .arg(self.dir.join("data"))
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(self.dir.join("sock"))
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "shared_buffers=32MB"])
            .args(["-c", "max_connections=100"])
            // Little WAL: a run's clusters create and drop many databases.
            .args(["-c", "max_wal_size=64MB", "-c", "min_wal_size=32MB"]);
        if let Some(tls) = &self.tls {
            cmd.args(["-c", "ssl=on", "-c"])
                .arg(format!("ssl_cert_file={}", tls.cert.display()))
                .arg("-c")
                .arg(format!("ssl_key_file={}", tls.key.display()));
        }
        cmd.stdout(Stdio::from(log)).stderr(Stdio::from(err_log));
        // SAFETY: prctl is async-signal-safe; nothing else runs here.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // The thread that starts the server waits for it: the server's
        // parent-death signal follows that thread, which lives as long as
        // the server (or the test process).
        let (started_tx, started_rx) = mpsc::channel();
        let (ended_tx, ended_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("pg-{port}"))
            .spawn(move || match cmd.spawn() {
                Ok(mut child) => {
                    let _ = started_tx.send(Ok(child.id()));
                    let _ = child.wait();
                    let _ = ended_tx.send(());
                }
                Err(e) => {
                    let _ = started_tx.send(Err(e));
                }
            })
            .map_err(io("starting the server's thread"))?;
        let pid = started_rx
            .recv()
            .map_err(|_| Error::Failed {
                what: "starting postgres".into(),
                output: "its thread ended".into(),
            })?
            .map_err(io("starting postgres"))?;
        *self.lock_port() = port;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if ended_rx.try_recv().is_ok() {
                return Err(Error::NotReady {
                    timeout: READY_TIMEOUT,
                    log: self.log_tail(),
                });
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-t", "1", "-p"])
                .arg(port.to_string())
                .stdin(Stdio::null())
                .status()
                .map_err(io("running pg_isready"))?;
            if ready.success() {
                *self.lock_server() = Some(Server {
                    pid,
                    ended: ended_rx,
                });
                return Ok(());
            }
            if Instant::now() > deadline {
                signal(pid, libc::SIGKILL);
                return Err(Error::NotReady {
                    timeout: READY_TIMEOUT,
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn lock_port(&self) -> std::sync::MutexGuard<'_, u16> {
        self.port.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_server(&self) -> std::sync::MutexGuard<'_, Option<Server>> {
        self.server.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(12)..].join("\n")
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        *self.lock_port()
    }

    /// The superuser's password (random per cluster).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The cluster's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's (postmaster's) pid, while it runs.
    pub fn server_pid(&self) -> Option<u32> {
        self.lock_server().as_ref().map(|s| s.pid)
    }

    /// A URL for database `db`, without the password (give it apart, as
    /// Arena wants it).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port())
    }

    /// [`Cluster::url`] with another host name for the loopback address
    /// (`localhost`, which a TLS cluster's certificate names).
    pub fn url_with_host(&self, host: &str, db: &str) -> String {
        format!("postgres://{USER}@{host}:{}/{db}", self.port())
    }

    /// The PEM file of the CA that signed a TLS cluster's certificate (for
    /// a client's `sslrootcert`); `None` without TLS.
    pub fn ca_file(&self) -> Option<&Path> {
        self.tls.as_ref().map(|tls| tls.ca.as_path())
    }

    /// Whether the server was started with TLS on.
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Runs `sql` in database `db` over TCP with the superuser's password;
    /// its output, one row per line, columns split by `|`.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String> {
        self.psql_with(db, sql, &self.password)
    }

    /// [`Cluster::psql`] with another password.
    pub fn psql_with(&self, db: &str, sql: &str, password: &str) -> Result<String> {
        psql(&self.bin, self.port(), password, db, sql)
    }

    /// A fresh, empty database, dropped with the returned value.
    pub fn database(&self) -> Result<TestDb<'_>> {
        Ok(TestDb {
            name: self.create_database()?,
            cluster: self,
        })
    }

    /// A fresh, empty database's name; it goes with the cluster.
    pub fn create_database(&self) -> Result<String> {
        create_database(&self.bin, self.port(), &self.password)
    }

    /// Stops the server with `sig` and waits for it (killing it if it takes
    /// too long).
    fn stop_with(&self, sig: libc::c_int) {
        let Some(server) = self.lock_server().take() else {
            return;
        };
        signal(server.pid, sig);
        if server.ended.recv_timeout(STOP_TIMEOUT).is_err() {
            signal(server.pid, libc::SIGKILL);
            let _ = server.ended.recv_timeout(STOP_TIMEOUT);
        }
    }

    /// A fast shutdown (as a restarted database server does), then a start
    /// on the same port with the same data.
    pub fn restart(&self) -> Result<()> {
        let port = self.port();
        self.stop_with(libc::SIGINT);
        self.run(Some(port))
    }

    /// Kills the server outright (SIGKILL), as a crash would.
    pub fn kill(&self) {
        self.stop_with(libc::SIGKILL);
    }

    /// Starts the server again after [`Cluster::kill`] (crash recovery runs).
    pub fn start_again(&self) -> Result<()> {
        let port = self.port();
        self.run(Some(port))
    }
}

/// Runs one `openssl` command (`what` for its errors).
fn run_openssl(mut cmd: Command, what: &str) -> Result<()> {
    let program = PathBuf::from(cmd.get_program());
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| Error::NoOpenssl { program, source })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Failed {
            what: what.to_string(),
            output: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Runs `sql` in database `db` of the server on loopback port `port`.
fn psql(bin: &Path, port: u16, password: &str, db: &str, sql: &str) -> Result<String> {
    let out = Command::new(bin.join("psql"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("PGPASSWORD", password)
        .env("PGCONNECT_TIMEOUT", "5")
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
        .args(["-h", "127.0.0.1", "-U", USER, "-p"])
        .arg(port.to_string())
        .args(["-d", db, "-c", sql])
        .stdin(Stdio::null())
        .output()
        .map_err(io("running psql"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(Error::Failed {
            what: format!("psql {sql:?}"),
            output: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

fn create_database(bin: &Path, port: u16, password: &str) -> Result<String> {
    let name = format!("t_{}", uuid::Uuid::new_v4().simple());
    // A file copy of the template: quicker than PostgreSQL 15's default,
    // which writes the whole template through the WAL.
    let create = format!("CREATE DATABASE {name} STRATEGY FILE_COPY");
    psql(bin, port, password, "postgres", &create)?;
    Ok(name)
}

/// The variable that names the cluster a whole test run shares: its port
/// and its superuser's password, as `arena-testdb serve` prints them.
pub const SHARED_VAR: &str = "ARENA_TEST_POSTGRES";

/// A cluster started once for a whole test run (`arena-testdb serve`, which
/// `scripts/test.sh` runs), so that the engine's tests can run on
/// PostgreSQL without a cluster each: every test takes a database of its
/// own in it. Named by [`SHARED_VAR`].
#[derive(Debug, Clone)]
pub struct Shared {
    bin: PathBuf,
    port: u16,
    password: String,
}

impl Shared {
    /// The shared cluster, when [`SHARED_VAR`] names one.
    pub fn from_env() -> Option<Shared> {
        let value = std::env::var(SHARED_VAR).ok()?;
        let (port, password) = value.trim().split_once(' ')?;
        Some(Shared {
            bin: binaries().ok()?,
            port: port.parse().ok()?,
            password: password.to_string(),
        })
    }

    /// What [`SHARED_VAR`] should hold to name `cluster`.
    pub fn describe(cluster: &Cluster) -> String {
        format!("{} {}", cluster.port(), cluster.password())
    }

    /// A fresh, empty database's name (the cluster's end removes it).
    pub fn create_database(&self) -> Result<String> {
        create_database(&self.bin, self.port, &self.password)
    }

    /// Drops database `db`, ending its connections.
    pub fn drop_database(&self, db: &str) -> Result<()> {
        let drop = format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)");
        psql(&self.bin, self.port, &self.password, "postgres", &drop).map(drop_output)
    }

    /// Its URL for database `db`, without the password.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    pub fn password(&self) -> &str {
        &self.password
    }
}

fn drop_output(_: String) {}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: sending a signal to a child process of ours.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Immediate shutdown: the data is thrown away anyway.
        self.stop_with(libc::SIGQUIT);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A database of a [`Cluster`], dropped (connections and all) with it.
#[derive(Debug)]
pub struct TestDb<'c> {
    cluster: &'c Cluster,
    name: String,
}

impl TestDb<'_> {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its URL, without the password.
    pub fn url(&self) -> String {
        self.cluster.url(&self.name)
    }

    /// Runs `sql` in it (see [`Cluster::psql`]).
    pub fn psql(&self, sql: &str) -> Result<String> {
        self.cluster.psql(&self.name, sql)
    }
}

impl Drop for TestDb<'_> {
    fn drop(&mut self) {
        let _ = self.cluster.psql(
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}
