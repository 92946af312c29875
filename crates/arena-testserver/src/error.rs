//! Error type of the crate.

/// Errors from loading scripts or parsing model specs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A script file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file's path.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A script file is not valid JSON of the expected shape.
    #[error("invalid script file: {0}")]
    Json(#[from] serde_json::Error),
    /// A `NAME:TOKENS:RATE` model spec could not be parsed.
    #[error("invalid model spec '{spec}': {why} (expected NAME:TOKENS:RATE)")]
    ModelSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
}
