//! The `arena.toml` configuration as data: its types, parsing and
//! validation of its text, and applying a settings update to that text
//! (comments and unrelated sections kept). Reading and writing the file is
//! the engine's (`arena_core::config`).

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::battle::Lane;
use crate::error::{Invalid, SettingsError};

/// The app identifier from `tauri.conf.json`; names the data and config folders.
pub const APP_IDENTIFIER: &str = "dev.arena.desktop";

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
    /// Cloud lane: how many requests may run at once (across every battle
    /// and process). A local server always takes one at a time.
    #[serde(default = "default_max_concurrency")]
    pub max_concurrency: u32,
    /// Cloud lane: at most this many requests start in any 60 seconds.
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Local lane: the name of the server process behind `base_url`, for a
    /// team whose machines reach one server by different addresses (or
    /// each through an SSH tunnel on its own `localhost`): providers that
    /// name the same server share one lane on every machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// A cloud provider's `max_concurrency` when none is set.
pub const DEFAULT_MAX_CONCURRENCY: u32 = 8;

fn default_max_concurrency() -> u32 {
    DEFAULT_MAX_CONCURRENCY
}

impl ProviderConfig {
    /// A provider with the default lane limits.
    pub fn new(name: &str, kind: ProviderKind, base_url: &str, lane: Lane) -> ProviderConfig {
        ProviderConfig {
            name: name.to_string(),
            kind,
            base_url: base_url.to_string(),
            lane,
            api_key_env: None,
            models: Vec::new(),
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            requests_per_minute: None,
            server: None,
        }
    }

    /// The API key from the provider's environment variable, when that is
    /// set (the engine falls back to the keychain: the provider layer's `Provider::api_key`).
    pub fn env_api_key(&self) -> Option<String> {
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
    /// How long streamed output waits before it joins the journal's queue
    /// (which writes it, one event per contestant, at most every 25 ms, or
    /// 100 ms when no one in the process watches live).
    pub coalesce_ms: u64,
    /// How often an interrupted contestant is started again on resume.
    pub max_resume_attempts: u32,
    /// Coding: how long the check command may run in a worktree.
    pub check_timeout_secs: u64,
    /// Coding: tool-calling rounds the native agent may take.
    pub native_max_steps: u32,
    /// Coding: how long one of the native agent's commands may run.
    pub native_command_timeout_secs: u64,
    /// Whether agent processes run in the sandbox (see `agent::sandbox`).
    pub sandbox: SandboxMode,
    /// Coding: the largest file an agent or check may write (`RLIMIT_FSIZE`
    /// of each of its processes); a run that hits it is a contestant error.
    pub max_file_bytes: u64,
    /// Coding: a file bigger than this is listed in the diff with its size
    /// and hash, not its content.
    pub diff_file_bytes: u64,
    /// Coding: once a diff is this big, further files are listed with their
    /// size and hash only.
    pub diff_total_bytes: u64,
    /// Coding: how long Arena may take to read a finished agent's work
    /// (its diff); longer is a contestant error.
    pub diff_timeout_secs: u64,
    /// Coding: the memory of all the processes of one agent's jail (or its
    /// check's) together, tmpfs files included; over it, the run is
    /// stopped, a contestant error. 0: no bound.
    pub jail_memory_bytes: u64,
    /// Coding: processes and threads at once in one jail; a fork over it
    /// stops the run, a contestant error. 0: no bound.
    pub jail_max_processes: u64,
    /// Coding: the size of each of a jail's own `/tmp` and `/dev/shm`.
    pub jail_tmp_bytes: u64,
    /// Coding: how much an agent's run (or its check's) may add to its
    /// worktree and scratch folder; over it, the run is stopped, a
    /// contestant error. 0: no bound.
    pub contestant_write_bytes: u64,
    /// Coding: runs are stopped (and not started) while the disk they
    /// write to has less free space than this. 0: no floor.
    pub min_free_disk_bytes: u64,
    /// Coding: the largest request body an agent's network door passes on
    /// to its provider (a declared bigger one is refused with 413 before
    /// the provider is contacted; a chunked one is cut there).
    pub door_max_body_bytes: u64,
    /// Coding: connections an agent may hold open through its door at
    /// once; more wait for a free one.
    pub door_max_connections: u64,
    /// Coding: how long one request through the door may take, its
    /// streamed answer included (504, or the stream cut).
    pub door_request_timeout_secs: u64,
}

/// `[limits] sandbox`: whether agents run sandboxed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Every agent process runs in a bubblewrap jail (its own namespaces,
    /// file system and network, a seccomp filter); where none can be
    /// built, Coding battles and agent cross-examinations are refused,
    /// saying what is missing.
    #[default]
    Strict,
    /// Landlock alone (the file system and TCP ports, no namespaces): for
    /// a machine where no jail can be built, chosen knowingly.
    Landlock,
    /// No sandbox: agents run with the user's rights (their worktree, a
    /// minimal environment and their own process group still apply).
    Off,
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
            coalesce_ms: 5,
            max_resume_attempts: 3,
            check_timeout_secs: 600,
            native_max_steps: 30,
            native_command_timeout_secs: 120,
            sandbox: SandboxMode::Strict,
            max_file_bytes: 2 * 1024 * 1024 * 1024,
            diff_file_bytes: 1024 * 1024,
            diff_total_bytes: 20 * 1024 * 1024,
            diff_timeout_secs: 120,
            jail_memory_bytes: 8 * 1024 * 1024 * 1024,
            jail_max_processes: 2048,
            jail_tmp_bytes: 512 * 1024 * 1024,
            contestant_write_bytes: 20 * 1024 * 1024 * 1024,
            min_free_disk_bytes: 1024 * 1024 * 1024,
            door_max_body_bytes: 32 * 1024 * 1024,
            door_max_connections: 32,
            door_request_timeout_secs: 30 * 60,
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
    /// What models cost (`[[price]]`), for costs and budgets.
    #[serde(default, rename = "price", skip_serializing_if = "Vec::is_empty")]
    pub prices: Vec<Price>,
    /// A team's shared database (`postgres://user@host:port/db`), with no
    /// password in it; none: the embedded SQLite in the data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_url: Option<String>,
    /// What this machine's workers take from a team database (`[team]`).
    #[serde(default, skip_serializing_if = "TeamConfig::is_empty")]
    pub team: TeamConfig,
    /// The project's environment in a Coding battle's jails (`[coding]`).
    #[serde(default, skip_serializing_if = "CodingConfig::is_empty")]
    pub coding: CodingConfig,
    /// Models' training cutoffs (`[[model_cutoff]]`), before the known
    /// ones: see [`Config::model_cutoffs`].
    #[serde(
        default,
        rename = "model_cutoff",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub model_cutoffs: Vec<crate::model_cutoff::ModelCutoff>,
}

/// `[coding]`: the project's own environment inside a Coding battle's
/// jails: which of its ignored folders every agent, check and examiner
/// sees (copy-on-write), how a base with other lockfiles gets one, and
/// which package registries that preparation may reach.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodingConfig {
    /// Folders of the project (relative to its root) that belong to its
    /// environment beyond those found by themselves (`node_modules`, a
    /// virtualenv, Cargo's `target`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<String>,
    /// The command that makes the environment for a base whose lockfiles
    /// differ from the current tree's (`npm ci`, `uv sync`, …); unset: the
    /// one each ecosystem's lockfile calls for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prepare: Option<String>,
    /// Host names the prepare command may reach (its only network), added
    /// to those the machine's own package tools are configured with.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<String>,
    /// Whether check outcomes decide between contestants (default true):
    /// a contestant whose check passed beats one whose check failed in the
    /// judge's verdict and on the leaderboard, unless the user chose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_decides: Option<bool>,
}

impl CodingConfig {
    pub fn is_empty(&self) -> bool {
        self.environment.is_empty()
            && self.prepare.is_none()
            && self.registries.is_empty()
            && self.check_decides.is_none()
    }

    /// `check_decides`, true unless turned off.
    pub fn check_decides(&self) -> bool {
        self.check_decides.unwrap_or(true)
    }
}

/// `[team]`: what a team database's rows may make this machine do. A row
/// is data, never a command or a credential: a worker runs a series'
/// check command only when it is one of `checks` (or approved on this
/// machine, `arena team approve`), and fetches a series' git remote only
/// when it matches `remotes` (with this machine's git credentials) or
/// `public_remotes` (with none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TeamConfig {
    /// Check commands run for any project, by their exact text.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Remote URL patterns fetched with this machine's credentials
    /// (`*` within one `/`-separated part, `**` across them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remotes: Vec<String>,
    /// Remote URL patterns fetched anonymously: no credential helper, no
    /// SSH key or agent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub public_remotes: Vec<String>,
}

/// How a worker may fetch a team's remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteAccess {
    /// With this machine's git credentials (its helper, SSH agent, keys).
    Credentials,
    /// With none: only what anyone may read.
    Anonymous,
}

impl TeamConfig {
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty() && self.remotes.is_empty() && self.public_remotes.is_empty()
    }

    /// Whether `command` is one of `checks` (surrounding blanks aside).
    pub fn allows_check(&self, command: &str) -> bool {
        let command = command.trim();
        self.checks.iter().any(|c| c.trim() == command)
    }

    /// How `url` may be fetched, if at all; `remotes` before
    /// `public_remotes`. A URL with a `..` part matches no pattern (it
    /// could name another repository than the one the pattern shows).
    pub fn remote_access(&self, url: &str) -> Option<RemoteAccess> {
        if url.split(['/', '\\', ':']).any(|part| part == "..") {
            return None;
        }
        let matches = |patterns: &[String]| patterns.iter().any(|p| glob_matches(p.trim(), url));
        if matches(&self.remotes) {
            Some(RemoteAccess::Credentials)
        } else if matches(&self.public_remotes) {
            Some(RemoteAccess::Anonymous)
        } else {
            None
        }
    }
}

/// Whether `text` matches `pattern`, where `*` is any run of characters
/// but `/` and `**` any run at all; every other character is itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // matched[j]: pattern so far matches text[..j].
    let mut matched = vec![false; t.len() + 1];
    matched[0] = true;
    let mut i = 0;
    while i < p.len() {
        let mut next = vec![false; t.len() + 1];
        if p[i] == '*' {
            let any = p.get(i + 1) == Some(&'*');
            let mut on = false;
            for j in 0..=t.len() {
                // A star extends a match over the characters it may take.
                on = matched[j] || (on && j > 0 && (any || t[j - 1] != '/'));
                next[j] = on;
            }
            i += if any { 2 } else { 1 };
        } else {
            for j in 1..=t.len() {
                next[j] = matched[j - 1] && t[j - 1] == p[i];
            }
            i += 1;
        }
        matched = next;
    }
    matched[t.len()]
}

#[cfg(test)]
mod team_tests {
    use super::*;

    #[test]
    fn remote_patterns_match_within_their_parts() {
        assert!(glob_matches(
            "git@github.com:acme/*",
            "git@github.com:acme/app.git"
        ));
        assert!(!glob_matches(
            "git@github.com:acme/*",
            "git@github.com:acme/x/y.git"
        ));
        assert!(glob_matches(
            "https://github.com/**",
            "https://github.com/a/b.git"
        ));
        assert!(!glob_matches(
            "git@github.com:acme/*",
            "git@github.com:acmeevil/app"
        ));
        assert!(glob_matches("exact", "exact") && !glob_matches("exact", "exactly"));
        let team = TeamConfig {
            remotes: vec!["https://git.acme.test/team/*".into()],
            public_remotes: vec!["https://**".into()],
            ..TeamConfig::default()
        };
        let own = team.remote_access("https://git.acme.test/team/app.git");
        assert_eq!(own, Some(RemoteAccess::Credentials));
        let other = team.remote_access("https://git.acme.test/other/app.git");
        assert_eq!(other, Some(RemoteAccess::Anonymous));
        assert_eq!(
            team.remote_access("https://git.acme.test/team/../x/app"),
            None
        );
        assert_eq!(team.remote_access("git@git.acme.test:team/app"), None);
    }

    #[test]
    fn team_checks_are_read_from_the_file() {
        let config = Config::parse("[team]\nchecks = [\"cargo test\"]\n").unwrap();
        assert!(config.team.allows_check(" cargo test "));
        assert!(!config
            .team
            .allows_check("cargo test; cat ~/.cargo/credentials.toml"));
        assert!(Config::parse("[team]\nrun = [\"x\"]\n").is_err());
    }
}

/// Checks a team database's URL: `postgres://` or `postgresql://`, a user
/// and a database named, and no password (it belongs in the keychain or
/// `ARENA_DATABASE_PASSWORD`, never in a file or on a command line).
pub fn check_database_url(text: &str) -> std::result::Result<(), String> {
    let url = url::Url::parse(text).map_err(|e| {
        format!("database_url: {e}; write it as postgres://user@host:5432/database")
    })?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err(
            "database_url must start with postgres:// (a team's PostgreSQL); leave it out for \
             the embedded SQLite"
                .into(),
        );
    }
    let password_given = url.password().is_some()
        || url
            .query_pairs()
            .any(|(k, _)| k.eq_ignore_ascii_case("password"));
    if password_given {
        return Err(
            "database_url must not contain the password; remove it and store it with \
             `arena database login` (the OS keychain) or set ARENA_DATABASE_PASSWORD"
                .into(),
        );
    }
    if url.username().is_empty() {
        return Err(
            "database_url names no user; write it as postgres://user@host:5432/database".into(),
        );
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(
            "database_url names no host; write it as postgres://user@host:5432/database".into(),
        );
    }
    if url.path().trim_start_matches('/').is_empty() {
        return Err(
            "database_url names no database; write it as postgres://user@host:5432/database".into(),
        );
    }
    Ok(())
}

/// A `[[price]]`: what one provider charges for one model, in USD per
/// million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub provider: String,
    pub model: String,
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Prompt tokens the server had cached (else they cost as input).
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
}

impl Price {
    /// Nothing costs anything (a local model).
    pub fn is_free(&self) -> bool {
        self.input_per_mtok == 0.0
            && self.output_per_mtok == 0.0
            && self.cached_input_per_mtok.unwrap_or(0.0) == 0.0
    }

    /// The cost of one call: `prompt` tokens of which `cached` were
    /// cached, and `completion` tokens.
    pub fn cost(&self, prompt: u64, cached: u64, completion: u64) -> f64 {
        let cached = cached.min(prompt);
        let per = |tokens: u64, rate: f64| tokens as f64 * rate / 1_000_000.0;
        per(prompt - cached, self.input_per_mtok)
            + per(
                cached,
                self.cached_input_per_mtok.unwrap_or(self.input_per_mtok),
            )
            + per(completion, self.output_per_mtok)
    }
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
            providers: vec![ProviderConfig::new(
                "llama-swap",
                ProviderKind::Openai,
                "http://127.0.0.1:8080/v1",
                Lane::Local,
            )],
            limits: Limits::default(),
            backends: Vec::new(),
            prices: Vec::new(),
            database_url: None,
            team: TeamConfig::default(),
            coding: CodingConfig::default(),
            model_cutoffs: Vec::new(),
        }
    }
}

impl Config {
    /// Parses and validates config text; the error says what to fix.
    pub fn parse(text: &str) -> std::result::Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> std::result::Result<(), String> {
        if let Some(url) = &self.database_url {
            check_database_url(url)?;
        }
        let mut names = HashSet::new();
        for p in &self.providers {
            if p.name.trim().is_empty() {
                return Err("a [[provider]] has an empty name".into());
            }
            if !names.insert(p.name.as_str()) {
                return Err(format!("provider `{}` is defined twice", p.name));
            }
            let url = url::Url::parse(&p.base_url)
                .map_err(|e| format!("provider `{}`: base_url `{}`: {e}", p.name, p.base_url))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "provider `{}`: base_url must start with http:// or https://",
                    p.name
                ));
            }
            if p.max_concurrency == 0 {
                return Err(format!(
                    "provider `{}`: max_concurrency must be at least 1",
                    p.name
                ));
            }
            if let Some(server) = &p.server {
                let fine = !server.is_empty()
                    && server.len() <= 64
                    && server
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
                if !fine {
                    return Err(format!(
                        "provider `{}`: server `{server}` is not a server name: use up to 64 \
                         letters, digits, `.`, `-` and `_`",
                        p.name
                    ));
                }
                if p.lane != Lane::Local {
                    return Err(format!(
                        "provider `{}`: server names a local model server; a cloud provider's \
                         lane is the provider itself",
                        p.name
                    ));
                }
            }
            if p.requests_per_minute == Some(0) {
                return Err(format!(
                    "provider `{}`: requests_per_minute must be at least 1 (or left out for no limit)",
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
        crate::model_cutoff::validate(&self.model_cutoffs)?;
        if self.limits.max_attempts == 0 {
            return Err("limits.max_attempts must be at least 1".into());
        }
        let mut priced = HashSet::new();
        for p in &self.prices {
            let what = format!("[[price]] {}/{}", p.provider, p.model);
            if self.provider(&p.provider).is_none() {
                return Err(format!("{what}: no [[provider]] is named `{}`", p.provider));
            }
            if !priced.insert((p.provider.as_str(), p.model.as_str())) {
                return Err(format!("{what} is defined twice"));
            }
            let rates = [
                Some(p.input_per_mtok),
                Some(p.output_per_mtok),
                p.cached_input_per_mtok,
            ];
            if rates
                .into_iter()
                .flatten()
                .any(|r| !(r.is_finite() && r >= 0.0))
            {
                return Err(format!(
                    "{what}: prices are USD per million tokens, 0 or more"
                ));
            }
        }
        Ok(())
    }

    /// Every model's training cutoff: `[[model_cutoff]]` first, then the
    /// ones Arena ships ([`crate::model_cutoff::KNOWN_CUTOFFS`]).
    pub fn model_cutoffs(&self) -> Vec<crate::model_cutoff::ModelCutoff> {
        crate::model_cutoff::with_known(&self.model_cutoffs)
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// What `model` costs at `provider`: its `[[price]]`, else free on a
    /// local provider (your own machine), else unknown.
    pub fn price(&self, provider: &str, model: &str) -> Option<Price> {
        if let Some(p) = self
            .prices
            .iter()
            .find(|p| p.provider == provider && p.model == model)
        {
            return Some(p.clone());
        }
        self.provider(provider)
            .filter(|p| p.lane == Lane::Local)
            .map(|_| Price {
                provider: provider.to_string(),
                model: model.to_string(),
                input_per_mtok: 0.0,
                output_per_mtok: 0.0,
                cached_input_per_mtok: None,
            })
    }
}

/// How a setting of the `index`-th provider (0-based) is named in errors:
/// by its name, or by its place while it has none.
fn provider_field(index: usize, name: &str, key: &str) -> String {
    match name.trim() {
        "" => format!("provider {} {key}", index + 1),
        name => format!("provider `{name}` {key}"),
    }
}

/// One provider as a front end's form sends it: kind and lane still as
/// text, checked by [`ProviderInput::into_config`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderInput {
    pub name: String,
    pub kind: String,
    pub base_url: String,
    pub lane: String,
    pub api_key_env: Option<String>,
    pub models: Vec<String>,
    pub max_concurrency: u32,
    pub requests_per_minute: Option<u32>,
}

impl ProviderInput {
    /// The provider, when its kind and lane are known; `index` (0-based)
    /// names it in the error while it has no name.
    pub fn into_config(self, index: usize) -> std::result::Result<ProviderConfig, Invalid> {
        let setting = |key: &str, message: String| Invalid::Setting {
            field: provider_field(index, &self.name, key),
            message,
        };
        let kind = match self.kind.as_str() {
            "openai" => ProviderKind::Openai,
            "anthropic" => ProviderKind::Anthropic,
            other => {
                return Err(setting(
                    "kind",
                    format!("`{other}` is not a provider kind; use openai or anthropic"),
                ))
            }
        };
        let lane = self.lane.parse::<Lane>().map_err(|_| {
            setting(
                "lane",
                format!("`{}` is not a lane; use local or cloud", self.lane),
            )
        })?;
        Ok(ProviderConfig {
            name: self.name,
            kind,
            base_url: self.base_url,
            lane,
            api_key_env: self.api_key_env,
            models: self.models,
            max_concurrency: self.max_concurrency,
            requests_per_minute: self.requests_per_minute,
            // Not edited on the settings screen; kept in the file's text.
            server: None,
        })
    }
}

/// What the settings screen changes in `arena.toml`: the judge model and
/// the whole provider list. Everything else in the file stays as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsUpdate {
    pub default_model: Option<String>,
    pub providers: Vec<ProviderConfig>,
}

impl SettingsUpdate {
    /// Trims the text fields, drops blank and repeated model names and
    /// blank `api_key_env`s, then checks what is left. The error names the
    /// field to fix.
    pub fn validated(mut self) -> std::result::Result<SettingsUpdate, Invalid> {
        let setting = |field: String, message: String| Invalid::Setting { field, message };
        if let Some(model) = self.default_model.as_mut() {
            *model = model.trim().to_string();
            if model.is_empty() {
                return Err(setting(
                    "default_model".into(),
                    "is empty; choose a model, or leave it unset (no analysis)".into(),
                ));
            }
        }
        let mut names = HashSet::new();
        for (i, p) in self.providers.iter_mut().enumerate() {
            p.name = p.name.trim().to_string();
            p.base_url = p.base_url.trim().to_string();
            let field = |name: &str, key: &str| provider_field(i, name, key);
            if p.name.is_empty() {
                return Err(setting(
                    field("", "name"),
                    "is empty; give the provider a name".into(),
                ));
            }
            if !names.insert(p.name.clone()) {
                return Err(setting(
                    field(&p.name, "name"),
                    "is used twice; provider names must be unique".into(),
                ));
            }
            match url::Url::parse(&p.base_url) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
                Ok(_) => {
                    return Err(setting(
                        field(&p.name, "base_url"),
                        format!(
                            "`{}` must be an http:// or https:// address, e.g. http://127.0.0.1:8080/v1",
                            p.base_url
                        ),
                    ))
                }
                Err(e) => {
                    return Err(setting(
                        field(&p.name, "base_url"),
                        format!(
                            "`{}` is not a URL ({e}); use e.g. http://127.0.0.1:8080/v1",
                            p.base_url
                        ),
                    ))
                }
            }
            p.api_key_env = p
                .api_key_env
                .take()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty());
            if let Some(var) = &p.api_key_env {
                if !is_env_var_name(var) {
                    return Err(setting(
                        field(&p.name, "api_key_env"),
                        // Not echoed: it may be a key pasted in the wrong field.
                        "is not an environment variable name; use letters, digits and `_`, \
                         not starting with a digit (e.g. OPENROUTER_API_KEY). It names the \
                         variable holding the key, not the key itself"
                            .into(),
                    ));
                }
            }
            let mut seen = HashSet::new();
            p.models = std::mem::take(&mut p.models)
                .into_iter()
                .map(|m| m.trim().to_string())
                .filter(|m| !m.is_empty() && seen.insert(m.clone()))
                .collect();
            if p.max_concurrency == 0 {
                return Err(setting(
                    field(&p.name, "max_concurrency"),
                    format!("must be at least 1 (the default is {DEFAULT_MAX_CONCURRENCY})"),
                ));
            }
            if p.requests_per_minute == Some(0) {
                return Err(setting(
                    field(&p.name, "requests_per_minute"),
                    "must be at least 1; leave it empty for no limit".into(),
                ));
            }
        }
        Ok(self)
    }
}

/// `NAME_2`: letters, digits and `_`, not starting with a digit.
fn is_env_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What [`apply_settings`] made of an update.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    pub config: Config,
    /// Providers renamed, as `(old name, new name)`: see [`apply_settings`].
    pub renamed: Vec<(String, String)>,
}

/// Applies `update`, made against the configuration `before`, to a config
/// file's `text`: the new configuration and the new text. The text is
/// edited in place: comments, formatting, the other sections (`[limits]`,
/// `[[backend]]`, …) and the other keys of a provider survive, and the
/// providers come out in the update's order. A provider whose name is new,
/// at the place of one of `before` whose name the update no longer has, is
/// that provider renamed (the settings screen edits a provider in place):
/// it keeps its table. The update is validated first and the result parsed
/// as a whole.
pub fn apply_settings(
    text: &str,
    before: &Config,
    update: SettingsUpdate,
) -> Result<(Saved, String), SettingsError> {
    let update = update.validated()?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        SettingsError::Text(format!(
            "is not valid TOML, so it cannot be updated; fix it by hand first: {e}"
        ))
    })?;
    let renamed = renames(before, &update);
    edit(&mut doc, &update, &renamed);
    let new_text = doc.to_string();
    let config = Config::parse(&new_text).map_err(SettingsError::Text)?;
    Ok((Saved { config, renamed }, new_text))
}

/// The providers `update` renames (see [`apply_settings`]), as `(old name,
/// new name)`.
fn renames(before: &Config, update: &SettingsUpdate) -> Vec<(String, String)> {
    let kept = |name: &str| update.providers.iter().any(|p| p.name == name);
    update
        .providers
        .iter()
        .zip(&before.providers)
        .filter(|(new, old)| before.provider(&new.name).is_none() && !kept(&old.name))
        .map(|(new, old)| (old.name.clone(), new.name.clone()))
        .collect()
}

/// Puts `update` into `doc`: `default_model` at the top, one
/// `[[provider]]` per provider in the given order, reusing the table (and
/// so the comments and place) of the provider with the same name, or of
/// the one it renames.
fn edit(doc: &mut toml_edit::DocumentMut, update: &SettingsUpdate, renamed: &[(String, String)]) {
    use toml_edit::{Array, ArrayOfTables, Item, Table};

    match &update.default_model {
        Some(model) => set_value(doc.as_table_mut(), "default_model", model.as_str().into()),
        None => {
            doc.remove("default_model");
        }
    }
    let mut old: Vec<Table> = match doc.remove("provider") {
        Some(Item::ArrayOfTables(tables)) => tables.into_iter().collect(),
        _ => Vec::new(),
    };
    let tables: Vec<Table> = update
        .providers
        .iter()
        .map(|p| {
            let name = renamed
                .iter()
                .find(|(_, to)| *to == p.name)
                .map_or(&p.name, |(from, _)| from);
            old.iter()
                .position(|t| t.get("name").and_then(|n| n.as_str()) == Some(name.as_str()))
                .map(|i| old.remove(i))
                .unwrap_or_default()
        })
        .collect();
    // In the update's order: a table keeps its place in the file unless
    // that would put it before the one ahead of it; a new table goes just
    // after the one ahead of it (or before the first kept one).
    let mut floor = tables.iter().find_map(Table::position);
    let mut providers = ArrayOfTables::new();
    for (mut table, p) in tables.into_iter().zip(&update.providers) {
        floor = table.position().max(floor);
        if let Some(at) = floor {
            table.set_position(at);
        }
        let kind = match p.kind {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
        };
        set_value(&mut table, "name", p.name.as_str().into());
        set_value(&mut table, "kind", kind.into());
        set_value(&mut table, "base_url", p.base_url.as_str().into());
        set_value(&mut table, "lane", p.lane.as_str().into());
        match &p.api_key_env {
            Some(var) => set_value(&mut table, "api_key_env", var.as_str().into()),
            None => {
                table.remove("api_key_env");
            }
        }
        if p.models.is_empty() {
            table.remove("models");
        } else {
            let models: Array = p.models.iter().map(String::as_str).collect();
            set_value(&mut table, "models", models.into());
        }
        // Defaults stay out of the file, so a later change of default applies.
        if p.max_concurrency == DEFAULT_MAX_CONCURRENCY {
            table.remove("max_concurrency");
        } else {
            set_value(
                &mut table,
                "max_concurrency",
                i64::from(p.max_concurrency).into(),
            );
        }
        match p.requests_per_minute {
            Some(rpm) => set_value(&mut table, "requests_per_minute", i64::from(rpm).into()),
            None => {
                table.remove("requests_per_minute");
            }
        }
        providers.push(table);
    }
    if !providers.is_empty() {
        doc.insert("provider", Item::ArrayOfTables(providers));
    }
}

/// Sets `key` to `new`, keeping the comments around an existing value.
fn set_value(table: &mut toml_edit::Table, key: &str, new: toml_edit::Value) {
    match table.get_mut(key).and_then(|item| item.as_value_mut()) {
        Some(old) => {
            let decor = old.decor().clone();
            *old = new;
            *old.decor_mut() = decor;
        }
        None => {
            table.insert(key, toml_edit::Item::Value(new));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_input_names_a_bad_kind_or_lane() {
        let input = |kind: &str, lane: &str, name: &str| ProviderInput {
            name: name.into(),
            kind: kind.into(),
            base_url: "http://127.0.0.1:8080/v1".into(),
            lane: lane.into(),
            api_key_env: None,
            models: vec![],
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            requests_per_minute: None,
        };
        let ok = input("anthropic", "cloud", "claude")
            .into_config(0)
            .unwrap();
        assert_eq!((ok.kind, ok.lane), (ProviderKind::Anthropic, Lane::Cloud));
        let field = |e: Invalid| match e {
            Invalid::Setting { field, .. } => field,
            other => panic!("{other:?}"),
        };
        let err = input("telepathy", "local", "x").into_config(0).unwrap_err();
        assert_eq!(field(err), "provider `x` kind");
        let err = input("openai", "moon", "").into_config(2).unwrap_err();
        assert_eq!(field(err), "provider 3 lane");
    }

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
    fn prices_are_per_million_tokens_and_local_models_are_free() {
        let c = Config::parse(
            r#"
            [[provider]]
            name = "openrouter"
            kind = "openai"
            base_url = "https://openrouter.ai/api/v1"
            lane = "cloud"
            [[provider]]
            name = "llama-swap"
            kind = "openai"
            base_url = "http://127.0.0.1:8080/v1"
            lane = "local"
            [[price]]
            provider = "openrouter"
            model = "big"
            input_per_mtok = 3.0
            output_per_mtok = 15.0
            cached_input_per_mtok = 0.3
            "#,
        )
        .unwrap();
        let big = c.price("openrouter", "big").unwrap();
        // 1000 prompt tokens (400 cached) and 2000 completion tokens.
        let cost = big.cost(1000, 400, 2000);
        assert!((cost - (600.0 * 3.0 + 400.0 * 0.3 + 2000.0 * 15.0) / 1e6).abs() < 1e-12);
        assert_eq!(c.price("openrouter", "other"), None, "unknown");
        assert_eq!(c.price("llama-swap", "qwen").unwrap().cost(10, 0, 10), 0.0);
        let bad = |price: &str| {
            Config::parse(&format!(
                "[[provider]]\nname = \"p\"\nkind = \"openai\"\nbase_url = \"http://x/v1\"\nlane = \"cloud\"\n[[price]]\n{price}"
            ))
            .unwrap_err()
        };
        assert!(bad(
            "provider = \"q\"\nmodel = \"m\"\ninput_per_mtok = 1.0\noutput_per_mtok = 1.0"
        )
        .contains("no [[provider]] is named `q`"));
        assert!(bad(
            "provider = \"p\"\nmodel = \"m\"\ninput_per_mtok = -1.0\noutput_per_mtok = 1.0"
        )
        .contains("0 or more"));
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
