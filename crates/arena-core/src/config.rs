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
/// Whether this machine's workers may fetch a team's project from a
/// remote that is a folder here (`ARENA_ALLOW_LOCAL_REMOTES=1`): off by
/// default, as such a URL, read from the shared database, could name any
/// repository this machine can read.
pub fn allow_local_remotes() -> bool {
    std::env::var("ARENA_ALLOW_LOCAL_REMOTES").is_ok_and(|v| v.trim() == "1")
}

/// This boot of this computer, as a team database tells machines apart
/// under one name: `ARENA_BOOT_ID` (tests simulating two computers), else
/// the kernel's boot id; none where there is neither.
pub fn boot_id() -> Option<String> {
    std::env::var("ARENA_BOOT_ID")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok())
        .map(|id| id.trim().to_string())
        .filter(|id| !id.is_empty())
}

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

/// Who works at this machine, as battles record it (who started one, who
/// gave its verdict): `ARENA_USER`, else the OS user ([`os_user`]); none
/// when neither is known.
pub fn user_name() -> Result<Option<String>> {
    match std::env::var("ARENA_USER") {
        Ok(name) if !name.trim().is_empty() => checked_user(name.trim()).map(Some),
        _ => Ok(os_user()),
    }
}

/// `name` as a user's name: up to 64 characters, none of them control
/// characters.
fn checked_user(name: &str) -> Result<String> {
    if name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(Error::Config {
            path: PathBuf::from("ARENA_USER"),
            message: format!(
                "`{}` is not a user name: use up to 64 characters, on one line",
                name.escape_default()
            ),
        });
    }
    Ok(name.to_string())
}

/// The OS user this process runs as: `USER`, else `LOGNAME`, else the
/// user database's entry for its user id (`getpwuid_r`); on Windows
/// `USERNAME`.
pub fn os_user() -> Option<String> {
    let from_env = |key: &str| {
        std::env::var(key)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    from_env("USER")
        .or_else(|| from_env("LOGNAME"))
        .or_else(passwd_user)
        .or_else(|| from_env("USERNAME"))
}

/// The user database's name for this process's user id.
#[cfg(unix)]
fn passwd_user() -> Option<String> {
    // SAFETY: getuid cannot fail; getpwuid_r writes only into `entry` and
    // `buf` (of the length given), and `found` points at `entry` or is null.
    let uid = unsafe { libc::getuid() };
    let mut buf: Vec<libc::c_char> = vec![0; 1024];
    loop {
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut entry, buf.as_mut_ptr(), buf.len(), &mut found) };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        if rc != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        // SAFETY: a found entry's name is a NUL-terminated string in `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) };
        let name = name.to_string_lossy().trim().to_string();
        return (!name.is_empty()).then_some(name);
    }
}

#[cfg(not(unix))]
fn passwd_user() -> Option<String> {
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_database_names_this_process_s_user() {
        let name = passwd_user();
        #[cfg(unix)]
        {
            let name = name.expect("a user database entry for this uid");
            assert!(!name.is_empty());
            // SAFETY: getuid cannot fail.
            if unsafe { libc::getuid() } == 0 {
                assert_eq!(name, "root");
            }
        }
        #[cfg(not(unix))]
        assert!(name.is_none());
        assert!(os_user().is_some());
    }

    #[test]
    fn a_user_name_is_one_short_line() {
        assert_eq!(checked_user("alice").unwrap(), "alice");
        assert_eq!(checked_user("Alice Smith").unwrap(), "Alice Smith");
        assert!(checked_user("a\nb").is_err());
        assert!(checked_user(&"x".repeat(65)).is_err());
        assert_eq!(checked_user(&"é".repeat(64)).unwrap().chars().count(), 64);
    }
}
