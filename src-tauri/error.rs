//! The error type returned by every IPC command.
//!
//! It crosses the IPC boundary as `{ "code": "...", "message": "..." }`, where
//! `code` is a stable snake_case identifier per variant (the UI may match on
//! it) and `message` is the human-readable text.

use serde::ser::{Serialize, Serializer};

/// An error returned by an IPC command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The app data directory could not be resolved.
    #[error("could not resolve the app data directory: {0}")]
    DataDir(#[source] tauri::Error),
    /// An engine error; its own code crosses the boundary.
    #[error(transparent)]
    Engine(#[from] arena_core::Error),
    /// The engine could not open at start-up (the reason is in `app_info`).
    #[error("the engine is not running: {0}")]
    Unavailable(String),
    /// The OS could not show a folder (no file manager answered); the
    /// opener's own words go to the log.
    #[error(
        "no file manager could show the folder on this system. Open it yourself; its path: {path}"
    )]
    Open { path: String },
    /// Any other unexpected failure.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The stable machine-readable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::DataDir(_) => "data_dir",
            Self::Engine(e) => e.code(),
            Self::Unavailable(_) => "engine_unavailable",
            Self::Open { .. } => "open_failed",
            Self::Internal(_) => "internal",
        }
    }
}

impl Serialize for Error {
    /// As the wire model's `{code, message}`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        arena_api::ErrorDto::new(self.code(), self).serialize(serializer)
    }
}

impl From<arena_core::Invalid> for Error {
    fn from(e: arena_core::Invalid) -> Self {
        Error::Engine(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_keep_their_code() {
        let err = Error::from(arena_core::Invalid::EmptyPrompt);
        let json = serde_json::to_value(&err).expect("serialisable");
        assert_eq!(json["code"], "invalid_input");
        assert_eq!(
            json["message"],
            "the prompt is empty; give the contestants something to do"
        );
    }

    #[test]
    fn serialises_as_code_and_message() {
        let err = Error::Internal("boom".into());
        let json = serde_json::to_value(&err).expect("serialisable");
        assert_eq!(
            json,
            serde_json::json!({ "code": "internal", "message": "internal error: boom" })
        );
    }

    #[test]
    fn data_dir_error_has_stable_code() {
        let err = Error::DataDir(tauri::Error::UnknownPath);
        assert_eq!(err.code(), "data_dir");
        let json = serde_json::to_value(&err).expect("serialisable");
        assert_eq!(json["code"], "data_dir");
        assert!(json["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("could not resolve the app data directory")));
    }
}
