//! The engine's error type. Front ends map [`Error::code`] to their own
//! surface: the CLI to exit statuses, the Tauri shell to `{ code, message }`.

use std::path::PathBuf;

pub use arena_domain::error::Invalid;

use crate::provider::ProviderError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("{what} `{id}` not found")]
    NotFound { what: &'static str, id: String },
    #[error("{0}")]
    Conflict(String),
    #[error("config {path}: {message}")]
    Config { path: PathBuf, message: String },
    #[error("{path}:{line}: {message}")]
    Persona {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{0} is not supported yet")]
    Unsupported(String),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The database itself failed (its other errors map to the variants
    /// above: see the `From` below).
    #[error(transparent)]
    Store(arena_store::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    #[error("git: {0}")]
    Git(String),
    #[error("background task failed: {0}")]
    Task(String),
    /// Stopped at the user's request.
    #[error("cancelled by the user")]
    Cancelled,
    #[error(transparent)]
    Keychain(#[from] crate::keychain::KeychainError),
}

impl Error {
    /// A stable snake_case code for machines (IPC, `--json`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid_input",
            Error::NotFound { .. } => "not_found",
            Error::Conflict(_) => "conflict",
            Error::Config { .. } => "config",
            Error::Persona { .. } => "persona",
            Error::Unsupported(_) => "unsupported",
            Error::Provider(_) => "provider",
            Error::Store(_) => "store",
            Error::Io { .. } => "io",
            Error::Json(_) => "json",
            Error::Git(_) => "git",
            Error::Task(_) => "internal",
            Error::Cancelled => "cancelled",
            Error::Keychain(_) => "keychain",
        }
    }

    /// True when the user can fix the problem by changing what they asked for.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Error::Invalid(_)
                | Error::NotFound { .. }
                | Error::Conflict(_)
                | Error::Config { .. }
                | Error::Persona { .. }
                | Error::Unsupported(_)
        )
    }

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

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Self {
        Error::Task(e.to_string())
    }
}

impl From<arena_store::Error> for Error {
    fn from(e: arena_store::Error) -> Self {
        use arena_store::Error as S;
        match e {
            S::Invalid(invalid) => Error::Invalid(invalid),
            S::NotFound { what, id } => Error::NotFound { what, id },
            S::Conflict(message) => Error::Conflict(message),
            S::Io { path, source } => Error::Io { path, source },
            S::Json(e) => Error::Json(e),
            S::TeamUrl { url, message } => Error::Config {
                path: PathBuf::from("database_url"),
                message: format!("`{url}`: {message}"),
            },
            e @ (S::Db(_)
            | S::Pg(_)
            | S::Migration(_)
            | S::Inconsistent(_)
            | S::TooNew { .. }
            | S::Unreachable { .. }) => Error::Store(e),
        }
    }
}
