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
        let bad = |message: String| Error::TeamUrl {
            url: url.to_string(),
            message,
        };
        let mut parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
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
        config.options("-c search_path=public,live");
        // A peer gone without a word (a laptop's network dropped) is
        // noticed in about a minute, not the system's two hours.
        config.keepalives_idle(Duration::from_secs(30));
        let mode = match mode.as_deref().unwrap_or("prefer") {
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
        Ok(Connector {
            config,
            tls,
            shown: url.to_string(),
        })
    }

    /// A new connection, its socket driven on the team runtime; a failure
    /// is one line that says what to do.
    pub(crate) fn connect(&self) -> Result<tokio_postgres::Client> {
        let unreachable = |detail: String| Error::Unreachable {
            url: self.shown.clone(),
            detail,
        };
        let runtime = RUNTIME.as_ref().map_err(|e| unreachable(e.clone()))?;
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let opened = runtime.spawn(async move {
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
        });
        match futures::executor::block_on(opened) {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(unreachable(advice(&e))),
            Err(e) => Err(unreachable(e.to_string())),
        }
    }

    pub(crate) fn shown(&self) -> &str {
        &self.shown
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
    } else if text.contains("timed out") {
        format!("{text}; is the host reachable from here?")
    } else if text.contains("refused") {
        format!("{text}; is PostgreSQL running there, and listening on that port?")
    } else if text.contains("certificate") || text.contains("Certificate") {
        format!(
            "{text}; give the server's CA with sslrootcert=/path/ca.pem in the URL (or \
             sslmode=disable on a trusted network)"
        )
    } else {
        text
    }
}
