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
    #[error("team database: {0}")]
    Pg(#[from] postgres::Error),
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
