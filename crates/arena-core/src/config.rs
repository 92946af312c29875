//! Where Arena keeps its files, and the `arena.toml` configuration.
//!
//! The data directory is shared by the desktop app and the CLI: it is the
//! Tauri app's `app_data_dir` for [`APP_IDENTIFIER`], unless
//! `ARENA_DATA_DIR` overrides it. The config file is `ARENA_CONFIG`, else
//! `<config dir>/dev.arena.desktop/arena.toml`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::battle::Lane;
use crate::error::{Error, Result};

/// The app identifier from `tauri.conf.json`; names the data and config folders.
pub const APP_IDENTIFIER: &str = "dev.arena.desktop";

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

/// API flavour a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions (llama.cpp, llama-swap, Ollama, vLLM, OpenAI, OpenRouter…).
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}

/// One `[[provider]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    /// Up to and including the API version segment, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub lane: Lane,
    /// Environment variable holding the API key. Keys never live in this file.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Models to offer in addition to what `/models` reports (for servers without discovery).
    #[serde(default)]
    pub models: Vec<String>,
}

impl ProviderConfig {
    /// The API key, from the provider's environment variable.
    pub fn api_key(&self) -> Option<String> {
        self.api_key_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok())
            .filter(|k| !k.is_empty())
    }
}

/// Retries, timeouts and caps for contestant runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Attempts per contestant run, including the first (connection errors, 429, 5xx, dropped streams).
    pub max_attempts: u32,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    /// Fail a stream when no bytes arrive for this long.
    pub stall_timeout_secs: u64,
    pub connect_timeout_secs: u64,
    /// Stop reading a contestant's output beyond this many bytes (kept, marked truncated).
    pub max_output_bytes: usize,
    /// Fail a contestant that runs longer than this.
    pub max_duration_secs: u64,
    /// How often streamed output is flushed to viewers and the database.
    pub coalesce_ms: u64,
    /// How often an interrupted contestant is started again on resume.
    pub max_resume_attempts: u32,
    /// Coding: how long the check command may run in a worktree.
    pub check_timeout_secs: u64,
    /// Coding: tool-calling rounds the native agent may take.
    pub native_max_steps: u32,
    /// Coding: how long one of the native agent's commands may run.
    pub native_command_timeout_secs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_attempts: 4,
            backoff_base_ms: 500,
            backoff_max_ms: 20_000,
            stall_timeout_secs: 60,
            connect_timeout_secs: 10,
            max_output_bytes: 2 * 1024 * 1024,
            max_duration_secs: 30 * 60,
            coalesce_ms: 40,
            max_resume_attempts: 3,
            check_timeout_secs: 600,
            native_max_steps: 30,
            native_command_timeout_secs: 120,
        }
    }
}

impl Limits {
    pub fn stall_timeout(&self) -> Duration {
        Duration::from_secs(self.stall_timeout_secs)
    }
    pub fn max_duration(&self) -> Duration {
        Duration::from_secs(self.max_duration_secs)
    }
}

/// The whole `arena.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The model used for analysis.
    #[serde(default)]
    pub default_model: Option<String>,
    #[serde(default, rename = "provider")]
    pub providers: Vec<ProviderConfig>,
    #[serde(default)]
    pub limits: Limits,
    /// User-defined Coding backends.
    #[serde(default, rename = "backend")]
    pub backends: Vec<CustomBackend>,
}

/// A `[[backend]]`: any command-line agent, as an argument list with the
/// placeholders `{prompt}`, `{model}` and `{worktree}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomBackend {
    pub name: String,
    pub command: Vec<String>,
}

impl Default for Config {
    /// No file: llama-swap on loopback, in the local lane.
    fn default() -> Self {
        Config {
            default_model: None,
            providers: vec![ProviderConfig {
                name: "llama-swap".into(),
                kind: ProviderKind::Openai,
                base_url: "http://127.0.0.1:8080/v1".into(),
                lane: Lane::Local,
                api_key_env: None,
                models: Vec::new(),
            }],
            limits: Limits::default(),
            backends: Vec::new(),
        }
    }
}

impl Config {
    /// Loads the config from `ARENA_CONFIG` or the default location; the
    /// default config when no file exists (an explicitly named file must exist).
    pub fn load() -> Result<Config> {
        match config_path() {
            (Some(path), explicit) => {
                if !explicit && !path.exists() {
                    return Ok(Config::default());
                }
                Config::from_file(&path)
            }
            (None, _) => Ok(Config::default()),
        }
    }

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

    /// Parses and validates config text; the error says what to fix.
    pub fn parse(text: &str) -> std::result::Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> std::result::Result<(), String> {
        let mut names = HashSet::new();
        for p in &self.providers {
            if p.name.trim().is_empty() {
                return Err("a [[provider]] has an empty name".into());
            }
            if !names.insert(p.name.as_str()) {
                return Err(format!("provider `{}` is defined twice", p.name));
            }
            let url = reqwest::Url::parse(&p.base_url)
                .map_err(|e| format!("provider `{}`: base_url `{}`: {e}", p.name, p.base_url))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "provider `{}`: base_url must start with http:// or https://",
                    p.name
                ));
            }
        }
        for b in &self.backends {
            if b.command.is_empty() || b.command[0].trim().is_empty() {
                return Err(format!("backend `{}`: command must name a program", b.name));
            }
            if crate::backend::find(&b.name).is_some() {
                return Err(format!(
                    "backend `{}` is built in; give yours another name",
                    b.name
                ));
            }
            if !b.command.iter().any(|a| a.contains("{prompt}")) {
                return Err(format!(
                    "backend `{}`: command must contain {{prompt}}",
                    b.name
                ));
            }
        }
        if self.limits.max_attempts == 0 {
            return Err("limits.max_attempts must be at least 1".into());
        }
        Ok(())
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let c = Config::parse(
            r#"
            default_model = "qwen3-8b"
            [[provider]]
            name = "llama-swap"
            kind = "openai"
            base_url = "http://127.0.0.1:8080/v1"
            lane = "local"

            [[provider]]
            name = "anthropic"
            kind = "anthropic"
            base_url = "https://api.anthropic.com/v1"
            lane = "cloud"
            api_key_env = "ANTHROPIC_API_KEY"

            [limits]
            stall_timeout_secs = 5
            "#,
        )
        .unwrap();
        assert_eq!(c.default_model.as_deref(), Some("qwen3-8b"));
        assert_eq!(c.providers.len(), 2);
        assert_eq!(c.providers[1].kind, ProviderKind::Anthropic);
        assert_eq!(c.limits.stall_timeout_secs, 5);
        assert_eq!(c.limits.max_attempts, Limits::default().max_attempts);
    }

    #[test]
    fn rejects_mistakes_with_a_reason() {
        let dup = "[[provider]]\nname='a'\nkind='openai'\nbase_url='http://x/v1'\nlane='local'\n"
            .repeat(2);
        assert!(Config::parse(&dup).unwrap_err().contains("defined twice"));
        let bad_lane =
            "[[provider]]\nname='a'\nkind='openai'\nbase_url='http://x/v1'\nlane='moon'\n";
        assert!(Config::parse(bad_lane).unwrap_err().contains("lane"));
        let key_in_file =
            "[[provider]]\nname='a'\nkind='openai'\nbase_url='http://x/v1'\nlane='cloud'\napi_key='sk'\n";
        assert!(Config::parse(key_in_file).unwrap_err().contains("api_key"));
        let bad_url = "[[provider]]\nname='a'\nkind='openai'\nbase_url='ftp://x'\nlane='cloud'\n";
        assert!(Config::parse(bad_url).unwrap_err().contains("http"));
    }

    #[test]
    fn default_is_llama_swap_on_loopback() {
        let c = Config::default();
        assert_eq!(c.providers[0].base_url, "http://127.0.0.1:8080/v1");
        assert_eq!(c.providers[0].lane, Lane::Local);
    }
}
