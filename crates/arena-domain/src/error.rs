//! The domain's errors: input the user can fix ([`Invalid`]), and a
//! settings update that cannot be applied ([`SettingsError`]).

use std::path::PathBuf;

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
    #[error("there is no folder {0}")]
    ProjectMissing(PathBuf),
    #[error("{0} is a file; choose the folder it is in, or another folder")]
    ProjectNotAFolder(PathBuf),
    #[error("give the project folder's full path (it starts with /); {0} is relative")]
    ProjectRelative(PathBuf),
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

/// Why a settings update cannot be applied to a config file's text.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum SettingsError {
    /// A field of the update is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The file's text (as it is, or as it would become) is not a valid
    /// configuration; the message says what to fix.
    #[error("{0}")]
    Text(String),
}
