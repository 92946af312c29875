//! The engine's error type. Front ends map [`Error::code`] to their own
//! surface: the CLI to exit statuses, the Tauri shell to `{ code, message }`.

use std::path::PathBuf;

use crate::provider::ProviderError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Input the user can fix. Each message says what was wrong and how to fix it.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Invalid {
    #[error(
        "a battle needs 2 to 6 contestants, got {0}; pass between 2 and 6 `-c IDENTITY@MODEL`"
    )]
    ContestantCount(usize),
    #[error(
        "contestant {identity}@{model} appears twice; each (identity, model) pair may appear once"
    )]
    DuplicateContestant { identity: String, model: String },
    #[error("contestant `{0}` is not IDENTITY@MODEL (for example `debugger@qwen3-8b`)")]
    ContestantSpec(String),
    #[error("the prompt is empty; give the contestants something to do")]
    EmptyPrompt,
    #[error("unknown model `{model}`: {detail}")]
    UnknownModel { model: String, detail: String },
    #[error("unknown provider `{name}`; configured providers: {known}")]
    UnknownProvider { name: String, known: String },
    #[error("unknown persona `{name}`; personas in {registry}: {known}")]
    UnknownPersona {
        name: String,
        known: String,
        registry: String,
    },
    #[error("unknown backend `{name}`; known backends: {known}")]
    UnknownBackend { name: String, known: String },
    #[error("backend `{name}` is not installed: `{program}` was not found on PATH")]
    BackendNotInstalled { name: String, program: String },
    #[error("project folder {0} does not exist or is not a folder")]
    ProjectMissing(PathBuf),
    #[error("a Coding battle needs a git repository, and {0} is not one; run `git init` there and commit, or choose another folder")]
    NotAGitRepository(PathBuf),
    #[error("unknown battle type `{0}`; use `qa` or `coding`")]
    BattleType(String),
    /// A setting that cannot be saved; `field` names it (`default_model`,
    /// `provider \`openrouter\` base_url`).
    #[error("{field} {message}")]
    Setting { field: String, message: String },
    #[error("{0}")]
    Other(String),
}

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
    #[error("database: {0}")]
    Store(#[from] rusqlite::Error),
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
            Error::Store(_) | Error::Migration(_) => "store",
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
