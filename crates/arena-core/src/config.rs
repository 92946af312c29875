//! Where Arena keeps its files, and reading and writing `arena.toml` (the
//! configuration itself is data: [`arena_domain::config`], re-exported
//! here).
//!
//! The data directory is shared by the desktop app and the CLI: it is the
//! Tauri app's `app_data_dir` for [`APP_IDENTIFIER`], unless
//! `ARENA_DATA_DIR` overrides it. The config file is `ARENA_CONFIG`, else
//! `<config dir>/dev.arena.desktop/arena.toml`.

use std::path::{Path, PathBuf};

pub use arena_domain::config::*;
use arena_domain::SettingsError;

use crate::error::{Error, Result};

/// The data directory: `ARENA_DATA_DIR`, else `<OS data dir>/dev.arena.desktop`.
pub fn data_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("ARENA_DATA_DIR").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    dirs::data_dir()
        .map(|d| d.join(APP_IDENTIFIER))
        .ok_or_else(|| Error::Config {
            path: PathBuf::from("ARENA_DATA_DIR"),
            message: "no data directory on this system; set ARENA_DATA_DIR".into(),
        })
}

/// The config file path and whether the user named it explicitly.
pub fn config_path() -> (Option<PathBuf>, bool) {
    if let Some(p) = std::env::var_os("ARENA_CONFIG").filter(|v| !v.is_empty()) {
        return (Some(PathBuf::from(p)), true);
    }
    (
        dirs::config_dir().map(|d| d.join(APP_IDENTIFIER).join("arena.toml")),
        false,
    )
}

/// Loads the config from `ARENA_CONFIG` or the default location; the
/// default config when no file exists (an explicitly named file must exist).
/// `ARENA_DATABASE_URL`, when set, names the team database instead of the
/// file's `database_url`.
pub fn load() -> Result<Config> {
    let mut config = match config_path() {
        (Some(path), explicit) if explicit || path.exists() => from_file(&path)?,
        _ => Config::default(),
    };
    if let Some(url) = std::env::var("ARENA_DATABASE_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        check_database_url(url.trim()).map_err(|message| Error::Config {
            path: PathBuf::from("ARENA_DATABASE_URL"),
            message,
        })?;
        config.database_url = Some(url.trim().to_string());
    }
    Ok(config)
}

/// The team database's password: `ARENA_DATABASE_PASSWORD`, else the
/// keychain's entry for `url` (see `arena database login`); none when
/// neither has one (the server may not ask).
pub fn database_password(url: &str) -> Result<Option<crate::keychain::Secret>> {
    if let Ok(password) = std::env::var("ARENA_DATABASE_PASSWORD") {
        if !password.is_empty() {
            return Ok(Some(crate::keychain::Secret::new(password)));
        }
    }
    match crate::keychain::get(&arena_store::keychain_entry(url)) {
        Ok(found) => Ok(found),
        // No keychain service here (a server, CI): the environment is the
        // way; without it the server's refusal says what to do.
        Err(crate::keychain::KeychainError::Unavailable { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// This machine's name among a team's: `ARENA_MACHINE`, else the host name.
pub fn machine_name() -> Result<Option<String>> {
    match std::env::var("ARENA_MACHINE") {
        Ok(name) if !name.trim().is_empty() => {
            let name = name.trim();
            let fine = name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
            if !fine {
                return Err(Error::Config {
                    path: PathBuf::from("ARENA_MACHINE"),
                    message: format!(
                        "`{name}` is not a machine name: use up to 64 letters, digits, `.`, `-` \
                         and `_`"
                    ),
                });
            }
            Ok(Some(name.to_string()))
        }
        _ => Ok(None),
    }
}

/// Reads and validates the config file at `path`.
pub fn from_file(path: &Path) -> Result<Config> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Config {
        path: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })?;
    Config::parse(&text).map_err(|message| Error::Config {
        path: path.to_path_buf(),
        message,
    })
}

/// Writes `update`, made against the configuration `before`, into the
/// config file at `path` ([`apply_settings`] says how the text changes)
/// and returns the new configuration. Nothing is written unless the whole
/// result is valid; the file is replaced atomically (through a symlink,
/// the file it points to; its folder is created if needed). On any error
/// the file is unchanged.
pub fn save_settings(path: &Path, before: &Config, update: SettingsUpdate) -> Result<Saved> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let config_error = |message: String| Error::Config {
        path: path.clone(),
        message,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(config_error(format!("cannot read: {e}"))),
    };
    let (saved, new_text) = apply_settings(&text, before, update).map_err(|e| match e {
        SettingsError::Invalid(invalid) => Error::Invalid(invalid),
        SettingsError::Text(message) => config_error(message),
    })?;
    crate::results::write_atomic(&path, new_text.as_bytes())?;
    Ok(saved)
}
