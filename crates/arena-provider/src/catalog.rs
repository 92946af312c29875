//! Model discovery: which provider serves which model, and so which lane a
//! contestant runs in.

use std::time::Duration;

use serde::Serialize;

use crate::Provider;
use arena_domain::battle::Lane;
use arena_domain::Invalid;

/// What one provider reported.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderModels {
    pub provider: String,
    pub kind: arena_domain::config::ProviderKind,
    pub base_url: String,
    pub lane: Lane,
    /// The models it serves, or why they could not be listed.
    pub models: Result<Vec<String>, String>,
}

/// Every provider's models, in config order.
#[derive(Debug, Clone, Serialize)]
pub struct Catalog {
    pub providers: Vec<ProviderModels>,
}

/// A model resolved to the provider that will serve it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub provider: String,
    pub model: String,
    pub lane: Lane,
}

impl Catalog {
    /// Asks every provider for its models, all at once.
    pub async fn discover(providers: &[Provider], timeout: Duration) -> Catalog {
        let lists =
            futures::future::join_all(providers.iter().map(|p| p.list_models(timeout))).await;
        Catalog {
            providers: providers
                .iter()
                .zip(lists)
                .map(|(p, models)| ProviderModels {
                    provider: p.config.name.clone(),
                    kind: p.config.kind,
                    base_url: p.config.base_url.clone(),
                    lane: p.config.lane,
                    models: models.map_err(|e| e.to_string()),
                })
                .collect(),
        }
    }

    fn serves(&self, provider: &ProviderModels, model: &str) -> bool {
        matches!(&provider.models, Ok(list) if list.iter().any(|m| m == model))
    }

    /// Finds the provider for `model`: the first provider (in config order)
    /// that serves it, or `PROVIDER/MODEL` naming a provider explicitly.
    pub fn resolve(&self, model: &str) -> Result<Resolved, Invalid> {
        let found = |p: &ProviderModels, m: &str| Resolved {
            provider: p.provider.clone(),
            model: m.to_string(),
            lane: p.lane,
        };
        if let Some(p) = self.providers.iter().find(|p| self.serves(p, model)) {
            return Ok(found(p, model));
        }
        if let Some((prefix, rest)) = model.split_once('/') {
            if let Some(p) = self.providers.iter().find(|p| p.provider == prefix) {
                if self.serves(p, rest) {
                    return Ok(found(p, rest));
                }
            }
        }
        Err(Invalid::UnknownModel {
            model: model.to_string(),
            detail: self.describe(),
        })
    }

    /// "not served by any provider: llama-swap (3 models), openai (unreachable: …)"
    fn describe(&self) -> String {
        if self.providers.is_empty() {
            return "no providers are configured; add one in the app's Settings → Providers (or a [[provider]] in arena.toml)".into();
        }
        let parts: Vec<String> = self
            .providers
            .iter()
            .map(|p| match &p.models {
                Ok(list) if list.len() <= 8 => {
                    format!("{} serves [{}]", p.provider, list.join(", "))
                }
                Ok(list) => format!("{} serves {} models", p.provider, list.len()),
                Err(e) => format!("{} is unreachable ({e})", p.provider),
            })
            .collect();
        format!(
            "not served by any configured provider: {}; pick one of the models they serve (the launcher's model list or Settings → Providers in the app, `arena providers` in a terminal)",
            parts.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arena_domain::config::ProviderKind;

    fn entry(name: &str, lane: Lane, models: Result<Vec<&str>, &str>) -> ProviderModels {
        ProviderModels {
            provider: name.into(),
            kind: ProviderKind::Openai,
            base_url: "http://x/v1".into(),
            lane,
            models: models
                .map(|l| l.into_iter().map(String::from).collect())
                .map_err(String::from),
        }
    }

    #[test]
    fn resolves_by_model_then_by_provider_prefix() {
        let c = Catalog {
            providers: vec![
                entry("local", Lane::Local, Ok(vec!["qwen3-8b", "shared"])),
                entry("router", Lane::Cloud, Ok(vec!["qwen/qwen3-8b", "shared"])),
                entry("down", Lane::Cloud, Err("connection refused")),
            ],
        };
        assert_eq!(c.resolve("qwen3-8b").unwrap().lane, Lane::Local);
        assert_eq!(c.resolve("qwen/qwen3-8b").unwrap().provider, "router");
        assert_eq!(c.resolve("shared").unwrap().provider, "local");
        let r = c.resolve("router/shared").unwrap();
        assert_eq!(
            (r.provider.as_str(), r.model.as_str()),
            ("router", "shared")
        );
        let err = c.resolve("gpt-9").unwrap_err().to_string();
        assert!(err.contains("unknown model `gpt-9`"), "{err}");
        assert!(
            err.contains("down is unreachable (connection refused)"),
            "{err}"
        );
        // It says what to do where the user is: the app or a terminal.
        assert!(err.contains("Settings → Providers in the app"), "{err}");
        let none = Catalog {
            providers: Vec::new(),
        }
        .resolve("gpt-9")
        .unwrap_err();
        assert!(
            none.to_string().contains("the app's Settings → Providers"),
            "{none}"
        );
    }
}
