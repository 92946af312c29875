//! Changing the configuration while the engine runs: the settings in
//! `arena.toml` and the API keys in the OS keychain. Battles already
//! running keep the configuration they started with.

use std::path::Path;
use std::sync::Arc;

use super::Engine;
use crate::config::{self, Config, SettingsUpdate};
use crate::error::{Error, Invalid, Result};
use crate::keychain::{self, Secret};
use crate::provider::KeySource;

impl Engine {
    /// Writes `update` into the config file at `path` (see
    /// [`config::save_settings`]: validated, comments and other sections
    /// kept, atomic) and makes the result the engine's configuration. A
    /// renamed provider's keychain entry moves to its new name when the
    /// provider still points at the same host (a key never follows a
    /// provider to another host).
    pub async fn save_settings(&self, path: &Path, update: SettingsUpdate) -> Result<Arc<Config>> {
        let _changing = self.inner.changing.lock().await;
        let path = path.to_path_buf();
        let before = self.config();
        let saved = tokio::task::spawn_blocking(move || {
            let saved = config::save_settings(&path, &before, update)?;
            for (from, to) in &saved.renamed {
                let host = |c: &Config, name: &str| {
                    c.provider(name).and_then(|p| {
                        reqwest::Url::parse(&p.base_url)
                            .ok()
                            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                    })
                };
                // A key goes only to the host it was given for.
                if host(&before, from) == host(&saved.config, to) {
                    move_key(from, to);
                } else {
                    tracing::warn!(
                        from, to,
                        "the renamed provider points at another host, so its API key was not moved; set the key again"
                    );
                }
            }
            Ok::<_, Error>(saved)
        })
        .await??;
        self.replace_config(saved.config)?;
        Ok(self.config())
    }

    /// Stores `provider`'s API key in the OS keychain, or removes it with
    /// `None`. The provider's key is looked up again on its next use (a
    /// set `api_key_env` variable still wins over the keychain).
    pub async fn set_api_key(&self, provider: &str, key: Option<&str>) -> Result<()> {
        let _changing = self.inner.changing.lock().await;
        let config = self.config();
        if config.provider(provider).is_none() {
            return Err(Error::not_found("provider", provider));
        }
        let key = match key.map(str::trim) {
            Some("") => {
                return Err(Invalid::Setting {
                    field: format!("provider `{provider}` API key"),
                    message: "is empty; paste the key, or clear it".into(),
                }
                .into())
            }
            Some(key) => Some(Secret::new(key.to_string())),
            None => None,
        };
        let name = provider.to_string();
        tokio::task::spawn_blocking(move || match key {
            Some(key) => keychain::set(&name, &key),
            None => keychain::clear(&name),
        })
        .await??;
        // New providers, so no stale key stays cached.
        self.replace_config(Config::clone(&config))
    }

    /// Where each configured provider's API key comes from (`None`: it has
    /// none), in config order. Keychain lookups are made once per provider
    /// per configuration.
    pub async fn key_sources(&self) -> Vec<(String, Option<KeySource>)> {
        let settings = self.settings();
        let lookups = settings.providers.iter().map(|p| async {
            let source = p.api_key().await.map(|(source, _)| source);
            (p.config.name.clone(), source)
        });
        futures::future::join_all(lookups).await
    }
}

/// Moves a renamed provider's key in the keychain, if it has one there. The
/// settings are saved by then, so a keychain that fails is only logged:
/// the provider then has no key until it is set again.
fn move_key(from: &str, to: &str) {
    let moved = keychain::get(from).and_then(|key| match key {
        Some(key) => keychain::set(to, &key).and_then(|()| keychain::clear(from)),
        None => Ok(()),
    });
    match moved {
        Ok(()) => {}
        Err(err @ keychain::KeychainError::Unavailable { .. }) => {
            tracing::debug!(%err, from, to, "no keychain: no API key to move");
        }
        Err(err) => tracing::warn!(
            %err, from, to,
            "could not move the renamed provider's API key in the keychain; set it again"
        ),
    }
}
