//! Reaching a team database (PostgreSQL): its URL read apart from what
//! only Arena understands, TLS as its `sslmode` asks, the password given
//! apart from the URL, and start-up failures said in one line.
//!
//! `sslmode`: `disable` never uses TLS; `allow` and `prefer` (the default,
//! as libpq's) use it when the server offers it; `require`, `verify-ca`
//! and `verify-full` insist on it. Whenever TLS is used the server's
//! certificate is verified, chain and host name — stricter than libpq's
//! `prefer`/`require`, which accept any certificate: a team database holds
//! every prompt and answer. The trusted roots are the web's, plus the
//! certificates in the file `sslrootcert` names (for a team's own CA).

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tokio_postgres::config::SslMode;

use crate::error::{Error, Result};

/// How long opening a connection may take before it is an error.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a session may sit idle inside a transaction before the server
/// ends it (and so gives back what it locked).
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(60);

/// How long a statement may wait for a lock before it fails.
const LOCK_TIMEOUT: Duration = Duration::from_secs(20);

/// The thread every team database connection's socket is driven on (a
/// runtime of one worker; the store's callers only wait for replies).
static RUNTIME: LazyLock<std::result::Result<tokio::runtime::Runtime, String>> =
    LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("arena-team-db")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });

/// The channel a lane's key is sent on when a slot is given back or a
/// dead holder's ticket dropped: its waiters everywhere look again.
pub(crate) const LANE_CHANNEL: &str = "arena_lane";

/// What a team database tells the processes that listen to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Lane `key` may have a free slot.
    Lane(String),
    /// The listener (re)connected: notices sent meanwhile were lost, so
    /// every waiter should look again.
    Resync,
}

/// A team database's notices as they come, and whether they are coming
/// (while the listener is cut off, waiters poll as on SQLite).
#[derive(Clone)]
pub struct Listener {
    notices: tokio::sync::broadcast::Sender<Notice>,
    healthy: Arc<std::sync::atomic::AtomicBool>,
    /// The listening task stops when the last handle is gone.
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl Listener {
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    /// Whether notices arrive now (connected and listening).
    pub fn healthy(&self) -> bool {
        self.healthy.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// What it takes to (re)connect to one team database.
pub(crate) struct Connector {
    config: tokio_postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// The URL as the user wrote it, for messages (it holds no password).
    shown: String,
}

impl Connector {
    /// Reads `url` (`postgres://user@host:port/db?sslmode=…&sslrootcert=…`)
    /// and takes `password` apart from it.
    pub(crate) fn new(url: &str, password: Option<&str>) -> Result<Connector> {
        // Messages show the URL, never a password written into it.
        let shown = without_password(url);
        let bad = |message: String| Error::TeamUrl {
            url: shown.clone(),
            message,
        };
        let mut parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        let password_in_url = parsed.password().is_some()
            || parsed
                .query_pairs()
                .any(|(k, _)| k.eq_ignore_ascii_case("password"));
        if password_in_url {
            return Err(bad(
                "the URL must not hold the password; remove it and give it with \
                 ARENA_DATABASE_PASSWORD or `arena database login`"
                    .into(),
            ));
        }
        let (mut mode, mut root_file) = (None::<String>, None::<PathBuf>);
        let kept: Vec<(String, String)> = parsed
            .query_pairs()
            .filter_map(|(k, v)| match k.as_ref() {
                "sslmode" => {
                    mode = Some(v.into_owned());
                    None
                }
                "sslrootcert" => {
                    root_file = Some(PathBuf::from(v.as_ref()));
                    None
                }
                _ => Some((k.into_owned(), v.into_owned())),
            })
            .collect();
        parsed.set_query(None);
        if !kept.is_empty() {
            parsed.query_pairs_mut().extend_pairs(kept);
        }
        let mut config: tokio_postgres::Config = parsed
            .as_str()
            .parse()
            .map_err(|e: tokio_postgres::Error| bad(e.to_string()))?;
        if let Some(password) = password {
            config.password(password);
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("arena");
        // The live journal's tables are in schema `live` (SQLite attaches
        // them as `live`): unqualified names find them either way.
        // A session cut off in the middle of a transaction (its process
        // stopped, its network dropped) gives back its locks — a lane's, a
        // battle's row — within a minute, not when TCP gives up; and no
        // statement waits longer than `LOCK_TIMEOUT` for a lock (the
        // migration lock included): it fails in one line instead.
        config.options(format!(
            "-c search_path=public,live -c idle_in_transaction_session_timeout={} -c lock_timeout={}",
            IDLE_IN_TRANSACTION.as_millis(),
            LOCK_TIMEOUT.as_millis()
        ));
        // A peer gone without a word (a laptop's network dropped) is
        // noticed in about a minute, not the system's two hours: 30 s
        // idle, then 3 probes 10 s apart (the system's own interval and
        // count would make it 30 s + 9 × 75 s).
        config.keepalives_idle(Duration::from_secs(30));
        config.keepalives_interval(Duration::from_secs(10));
        config.keepalives_retries(3);
        // Nor does a statement sent to a peer that vanished wait out TCP's
        // retransmissions (a quarter of an hour): unacknowledged for a
        // minute, the connection is given up (and made again next time).
        config.tcp_user_timeout(Duration::from_secs(60));
        // Unsaid, TLS is wanted from any host but this machine: `prefer`
        // lets a man in the middle answer "no TLS" and read the password.
        let loopback = parsed.host_str().is_some_and(|h| {
            h == "localhost"
                || h.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        });
        let default_mode = if loopback { "prefer" } else { "require" };
        let mode = match mode.as_deref().unwrap_or(default_mode) {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" | "verify-ca" | "verify-full" => SslMode::Require,
            other => {
                return Err(bad(format!(
                    "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, \
                     verify-full"
                )))
            }
        };
        config.ssl_mode(mode);
        let tls = match mode {
            SslMode::Disable => None,
            _ => Some(tls(root_file.as_deref()).map_err(bad)?),
        };
        Ok(Connector { config, tls, shown })
    }

    /// A new connection, its socket driven on the team runtime; a failure
    /// is one line that says what to do.
    pub(crate) fn connect(&self) -> Result<tokio_postgres::Client> {
        let unreachable = |detail: String, transient: bool| Error::Unreachable {
            url: self.shown.clone(),
            detail,
            transient,
        };
        let runtime = RUNTIME
            .as_ref()
            .map_err(|e| unreachable(e.clone(), false))?;
        let (config, tls) = (self.config.clone(), self.tls.clone());
        // The whole of it within CONNECT_TIMEOUT: the driver's own timeout
        // covers only the TCP connect, not a server (or another program on
        // its port) that accepts and then never answers.
        let opened = runtime.spawn(async move {
            let open = async move {
                match tls {
                    Some(tls) => {
                        let (client, connection) = config.connect(tls).await?;
                        tokio::spawn(drive(connection));
                        Ok(client)
                    }
                    None => {
                        let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
                        tokio::spawn(drive(connection));
                        Ok(client)
                    }
                }
            };
            // Made here: a timer needs the runtime.
            tokio::time::timeout(CONNECT_TIMEOUT, open).await
        });
        match futures::executor::block_on(opened) {
            Ok(Ok(Ok(client))) => Ok(client),
            Ok(Ok(Err(e))) => Err(unreachable(advice(&e), transient(&e))),
            Ok(Err(_)) => Err(unreachable(
                format!(
                    "timed out: no answer within {} s; is a PostgreSQL server listening there, \
                     and is the host reachable from here?",
                    CONNECT_TIMEOUT.as_secs()
                ),
                true,
            )),
            Err(e) => Err(unreachable(e.to_string(), true)),
        }
    }

    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }
}

impl Connector {
    /// Starts listening on a connection of its own (kept apart from the
    /// store's, on the team runtime): every notice is sent to the
    /// listener's subscribers; a lost connection is made again with a
    /// growing pause (100 ms doubling to 30 s), then [`Notice::Resync`].
    pub(crate) fn listen(&self) -> Result<Listener> {
        let runtime = RUNTIME.as_ref().map_err(|e| Error::Unreachable {
            url: self.shown.clone(),
            detail: e.clone(),
            transient: false,
        })?;
        let (notices, _) = tokio::sync::broadcast::channel(1024);
        let healthy = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let (config, tls, shown) = (self.config.clone(), self.tls.clone(), self.shown.clone());
        let (sender, health) = (notices.clone(), healthy.clone());
        runtime.spawn(async move {
            let mut pause = Duration::from_millis(100);
            let mut first = true;
            loop {
                let listened = tokio::select! {
                    _ = &mut stopped => return,
                    ended = listen_once(&config, tls.clone(), &sender, &health, first) => ended,
                };
                health.store(false, std::sync::atomic::Ordering::Relaxed);
                match listened {
                    // It listened, then the connection ended: try again soon.
                    Ok(()) => pause = Duration::from_millis(100),
                    Err(e) => tracing::warn!(url = %shown, error = %e, "cannot listen to the team database; waiters poll meanwhile"),
                }
                first = false;
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(Duration::from_secs(30));
            }
        });
        Ok(Listener {
            notices,
            healthy,
            _stop: Arc::new(stop),
        })
    }
}

/// One listening connection, from `LISTEN` until it ends.
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    notices: &tokio::sync::broadcast::Sender<Notice>,
    healthy: &std::sync::atomic::AtomicBool,
    first: bool,
) -> std::result::Result<(), String> {
    let late = || format!("no answer within {} s", CONNECT_TIMEOUT.as_secs());
    let served = match tls {
        Some(tls) => {
            let (client, connection) = tokio::time::timeout(CONNECT_TIMEOUT, config.connect(tls))
                .await
                .map_err(|_| late())?
                .map_err(|e| e.to_string())?;
            serve_notices(client, connection, notices, healthy, first).await
        }
        None => {
            let (client, connection) =
                tokio::time::timeout(CONNECT_TIMEOUT, config.connect(tokio_postgres::NoTls))
                    .await
                    .map_err(|_| late())?
                    .map_err(|e| e.to_string())?;
            serve_notices(client, connection, notices, healthy, first).await
        }
    };
    served.map_err(|e| match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    })
}

async fn serve_notices<S, T>(
    client: tokio_postgres::Client,
    mut connection: tokio_postgres::Connection<S, T>,
    notices: &tokio::sync::broadcast::Sender<Notice>,
    healthy: &std::sync::atomic::AtomicBool,
    first: bool,
) -> std::result::Result<(), tokio_postgres::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures::StreamExt;
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    // The connection's messages must be read while LISTEN runs.
    let statement = format!("LISTEN {LANE_CHANNEL}");
    {
        let listen = client.batch_execute(&statement);
        tokio::pin!(listen);
        loop {
            tokio::select! {
                done = &mut listen => { done?; break; }
                message = messages.next() => match message {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e),
                    None => return Ok(()),
                },
            }
        }
    }
    healthy.store(true, std::sync::atomic::Ordering::Relaxed);
    if !first {
        let _ = notices.send(Notice::Resync);
    }
    while let Some(message) = messages.next().await {
        if let tokio_postgres::AsyncMessage::Notification(n) = message? {
            if n.channel() == LANE_CHANNEL {
                // No subscriber is fine: nobody waits here now.
                let _ = notices.send(Notice::Lane(n.payload().to_string()));
            }
        }
    }
    drop(client);
    Ok(())
}

/// Whether a failed connect may succeed if tried again soon: the server
/// was not there, or said it is starting, stopping or full — not a refused
/// login, a missing database or a certificate that does not verify.
fn transient(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        // admin_shutdown, crash_shutdown, cannot_connect_now,
        // too_many_connections
        Some(db) => matches!(db.code().code(), "57P01" | "57P02" | "57P03" | "53300"),
        None => {
            let text = advice(e);
            !(text.contains("certificate") || text.contains("password") || text.contains("TLS"))
        }
    }
}

/// Drives a connection's socket until it closes.
async fn drive<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if let Err(e) = connection.await {
        tracing::warn!(error = %e, "the team database connection ended");
    }
}

/// The OS keychain entry that keeps the password of the team database at
/// `url`: its user, host, port and database (not its options), so one
/// password serves the URL however its options are written.
pub fn keychain_entry(url: &str) -> String {
    let base = url.split('?').next().unwrap_or(url);
    let base = base
        .trim_start_matches("postgresql://")
        .trim_start_matches("postgres://");
    format!("database {base}")
}

/// A TLS set-up trusting the web's roots and those in `root_file`.
fn tls(
    root_file: Option<&std::path::Path>,
) -> std::result::Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(file) = root_file {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(file)
            .map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
        let mut added = 0;
        for cert in certs {
            let cert = cert.map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("sslrootcert {}: {e}", file.display()))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!(
                "sslrootcert {} holds no PEM certificate",
                file.display()
            ));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// What went wrong reaching the database, and what to do about it, in a
/// line (PostgreSQL's own message when it gave one).
fn advice(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let hint = match code {
            // invalid_password, invalid_authorization_specification
            "28P01" | "28000" => {
                "; check the password (ARENA_DATABASE_PASSWORD, or `arena database login`)"
            }
            // invalid_catalog_name
            "3D000" => "; create the database first (see the README's Team section)",
            _ => "",
        };
        return format!("{}{hint}", db.message());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    let text = text.replace('\n', " ");
    if text.contains("password missing") {
        "the server asks for a password and none is known: set ARENA_DATABASE_PASSWORD, or \
         keep it in the OS keychain with `arena database login`"
            .to_string()
    } else if text.contains("server does not support TLS") {
        format!(
            "{text}; the URL's sslmode requires TLS: turn ssl on at the server, or use \
             sslmode=prefer (or disable) on a trusted network"
        )
    } else if text.contains("timed out") {
        format!("{text}; is the host reachable from here?")
    } else if text.contains("refused") {
        format!("{text}; is PostgreSQL running there, and listening on that port?")
    } else if text.contains("not valid for name") {
        // Its CA is trusted, the name is not the certificate's.
        format!("{text}; connect by a host name the server's certificate names")
    } else if text.contains("certificate") || text.contains("Certificate") {
        format!(
            "{text}; give the server's CA with sslrootcert=/path/ca.pem in the URL (or \
             sslmode=disable on a trusted network)"
        )
    } else {
        text
    }
}

/// `url` as it may be shown: a password written into it (`user:pw@`, or
/// `password=` among its options) replaced by `***`; otherwise the text as
/// written.
fn without_password(url: &str) -> String {
    let (head, fragment) = match url.split_once('#') {
        Some((head, fragment)) => (head, Some(fragment)),
        None => (url, None),
    };
    let (head, query) = match head.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (head, None),
    };
    let mut out = match head.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let authority = match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{user}:***@{host}"),
                    None => authority.to_string(),
                },
                None => authority.to_string(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => head.to_string(),
    };
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| {
                let key = url::form_urlencoded::parse(pair.as_bytes()).next();
                match (key, pair.split_once('=')) {
                    (Some((key, _)), Some((written, _)))
                        if key.eq_ignore_ascii_case("password") =>
                    {
                        format!("{written}=***")
                    }
                    _ => pair.to_string(),
                }
            })
            .collect();
        out = format!("{out}?{}", pairs.join("&"));
    }
    if let Some(fragment) = fragment {
        out = format!("{out}#{fragment}");
    }
    out
}
