//! Provider API keys in the OS keychain (the Secret Service on Linux,
//! Keychain on macOS, Credential Manager on Windows): one entry per
//! provider, service [`SERVICE`], user = the provider's name.
//!
//! Every call blocks (D-Bus on Linux); run it in `spawn_blocking`. A key
//! read from here is never logged or stored anywhere else.

use arena_domain::config::APP_IDENTIFIER;

/// The keychain service Arena's entries live under.
pub const SERVICE: &str = APP_IDENTIFIER;

/// Why the keychain could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeychainError {
    /// No keychain service answered (on Linux: no Secret Service on the
    /// session bus, e.g. no GNOME Keyring or KWallet running), or it is
    /// locked.
    #[error(
        "the OS keychain is not available ({detail}); start or unlock a keychain service (on \
         Linux one that provides the Secret Service, such as GNOME Keyring or KWallet), or keep \
         the key in an environment variable and name it in the provider's `api_key_env`"
    )]
    Unavailable { detail: String },
    /// The keychain answered but refused or failed.
    #[error(
        "the OS keychain failed for provider `{provider}`: {detail}; try again, or keep the key \
         in an environment variable and name it in the provider's `api_key_env`"
    )]
    Failed { provider: String, detail: String },
}

pub use arena_domain::secret::Secret;

fn entry(provider: &str) -> Result<keyring::Entry, KeychainError> {
    keyring::Entry::new(SERVICE, provider).map_err(|e| error(provider, e))
}

fn error(provider: &str, e: keyring::Error) -> KeychainError {
    match e {
        keyring::Error::PlatformFailure(source) | keyring::Error::NoStorageAccess(source) => {
            KeychainError::Unavailable {
                detail: source.to_string(),
            }
        }
        other => KeychainError::Failed {
            provider: provider.to_string(),
            detail: other.to_string(),
        },
    }
}

/// The key stored for `provider`, if any.
pub fn get(provider: &str) -> Result<Option<Secret>, KeychainError> {
    match entry(provider)?.get_password() {
        Ok(key) => Ok(Some(Secret::new(key)).filter(|k| !k.is_empty())),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(error(provider, e)),
    }
}

/// Stores `key` for `provider`, replacing any earlier one.
pub fn set(provider: &str, key: &Secret) -> Result<(), KeychainError> {
    entry(provider)?
        .set_password(key.expose())
        .map_err(|e| error(provider, e))
}

/// Removes `provider`'s key; fine when there is none.
pub fn clear(provider: &str) -> Result<(), KeychainError> {
    match entry(provider)?.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(error(provider, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_keychain_suggests_api_key_env() {
        let err = error(
            "openrouter",
            keyring::Error::PlatformFailure("no session bus".into()),
        );
        let message = err.to_string();
        assert!(matches!(err, KeychainError::Unavailable { .. }));
        assert!(message.contains("no session bus"), "{message}");
        assert!(message.contains("api_key_env"), "{message}");
    }
}
