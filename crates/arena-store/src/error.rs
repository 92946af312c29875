//! The store's errors. The engine maps each to its own (`not_found`,
//! `conflict`, `invalid_input`, `store`, …).

use std::path::PathBuf;

use arena_domain::Invalid;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("{what} `{id}` not found")]
    NotFound { what: &'static str, id: String },
    /// Someone else holds what this write needs (a battle's lease).
    #[error("{0}")]
    Conflict(String),
    #[error("database: {0}")]
    Db(#[from] rusqlite::Error),
    /// The team database (PostgreSQL) refused or failed.
    #[error("team database: {}", pg_text(.0))]
    Pg(#[from] tokio_postgres::Error),
    /// A team database's URL that cannot be used.
    #[error("database_url `{url}`: {message}")]
    TeamUrl { url: String, message: String },
    /// The team database could not be reached or refused to log in.
    #[error("cannot open the team database at {url}: {detail}")]
    Unreachable {
        url: String,
        detail: String,
        /// It may answer if asked again soon (refused, timed out,
        /// restarting); not so a refused login or a missing database.
        transient: bool,
    },
    #[error("database migration: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// The database was laid out by a newer Arena than this one.
    #[error(
        "{path} was last opened by Arena {by}, which laid it out anew (schema {schema}); \
         this Arena {ours} knows schemas up to {known}. Install Arena {by} or newer, \
         or point ARENA_DATA_DIR at another folder"
    )]
    TooNew {
        path: PathBuf,
        by: String,
        schema: usize,
        known: usize,
        ours: &'static str,
    },
    /// Rows that do not fit together (a journal marker no row fills).
    #[error("the database is inconsistent: {0}")]
    Inconsistent(String),
}

/// A PostgreSQL error in words: the server's own message (and where it
/// points) when it sent one, else the error and its causes.
fn pg_text(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return match db.detail() {
            Some(detail) => format!("{} ({}; {detail})", db.message(), db.code().code()),
            None => format!("{} ({})", db.message(), db.code().code()),
        };
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn not_found(what: &'static str, id: impl Into<String>) -> Error {
        Error::NotFound {
            what,
            id: id.into(),
        }
    }
}
