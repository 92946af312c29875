//! Changing the configuration while the engine runs: the settings in
//! `arena.toml` and the API keys in the OS keychain. Battles already
//! running keep the configuration they started with.

use std::path::Path;
use std::sync::Arc;

use super::Engine;
use crate::config::{self, Config, CustomBackend, SettingsUpdate};
use crate::error::{Error, Invalid, Result};
use crate::keychain::{self, Secret};
use crate::persona::{Persona, Registry, REGISTRY_FILE};
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

    /// Creates the config file at `path` with the defaults (the engine's
    /// configuration when no file exists: llama-swap on loopback), with
    /// comments saying what goes where. Never overwrites a file: one that
    /// exists by then is left as it is, and `Ok(false)` says so.
    pub fn create_config(path: &Path) -> Result<bool> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
        std::io::Write::write_all(&mut file, DEFAULT_CONFIG.as_bytes())
            .map_err(|e| Error::io(path, e))?;
        match file.persist_noclobber(path) {
            Ok(_) => Ok(true),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(Error::io(path, e.error)),
        }
    }

    /// Adds the `[[backend]]` `backend` to the config file at `path`, or
    /// replaces the one named `previous` (renaming it when the names
    /// differ), or with `backend: None` removes `previous`. The file's other
    /// content and its comments are kept, nothing is written unless the
    /// whole result is valid, and the file is replaced atomically. The
    /// result is the engine's configuration from then on.
    pub async fn save_backend(
        &self,
        path: &Path,
        previous: Option<String>,
        backend: Option<CustomBackend>,
    ) -> Result<Arc<Config>> {
        let _changing = self.inner.changing.lock().await;
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let config = tokio::task::spawn_blocking(move || {
            let text = read_or_empty(&path)?;
            let (config, text) =
                edit_backend(&text, previous.as_deref(), backend).map_err(|e| match e {
                    BackendEditError::Invalid(invalid) => Error::Invalid(invalid),
                    BackendEditError::Text(message) => Error::Config {
                        path: path.clone(),
                        message,
                    },
                })?;
            crate::results::write_atomic(&path, text.as_bytes())?;
            Ok::<_, Error>(config)
        })
        .await??;
        self.replace_config(config)?;
        Ok(self.config())
    }

    /// Adds `persona` to the persona registry (`AGENTS.md` in the data
    /// directory), or replaces the one named `previous`. The rest of the
    /// file is kept as it is; the file is replaced atomically and only when
    /// the whole registry still reads. The next battle uses it.
    pub async fn save_persona(
        &self,
        previous: Option<String>,
        persona: Persona,
    ) -> Result<Registry> {
        let _changing = self.inner.changing.lock().await;
        let data_dir = self.inner.data_dir.clone();
        tokio::task::spawn_blocking(move || {
            // Seeds the registry first when it does not exist yet.
            let registry = Registry::load_or_seed(&data_dir)?;
            let path = data_dir.join(REGISTRY_FILE);
            let text = read_or_empty(&path)?;
            let persona = checked_persona(persona, previous.as_deref(), &registry)?;
            let text = edit_persona(&text, previous.as_deref(), &persona);
            let registry = Registry::parse(&path, &text)?;
            crate::results::write_atomic(&path, text.as_bytes())?;
            Ok(registry)
        })
        .await?
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

/// The config file the app creates: the defaults, with comments.
pub const DEFAULT_CONFIG: &str = r#"# Arena's configuration, created by the app with the defaults.
# The app's Settings screen edits it and keeps your comments.

# The judge model that analyses battles (a model one of the providers serves).
# default_model = "qwen3-8b"

# Where models are served: a local llama-swap on this machine.
[[provider]]
name = "llama-swap"
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
lane = "local"

# Your own command-line agents for Coding battles, for example:
# [[backend]]
# name = "my-agent"
# command = ["my-agent", "--message", "{prompt}"]
"#;

/// A file's text, empty when it does not exist.
fn read_or_empty(path: &Path) -> Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Why a `[[backend]]` cannot be written.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendEditError {
    /// The input itself, naming the field.
    Invalid(Invalid),
    /// The file's text (not TOML, or the result does not read).
    Text(String),
}

/// The field and message of an invalid agent input.
fn invalid(field: &str, message: impl Into<String>) -> Invalid {
    Invalid::Setting {
        field: field.into(),
        message: message.into(),
    }
}

/// `backend` trimmed and checked: a name of letters, digits, `.`, `-` and
/// `_` that no built-in agent and no other `[[backend]]` has, a command
/// whose first word names a program and that passes `{prompt}`.
fn checked_backend(
    before: &Config,
    previous: Option<&str>,
    mut backend: CustomBackend,
) -> std::result::Result<CustomBackend, Invalid> {
    backend.name = backend.name.trim().to_string();
    backend.command = backend
        .command
        .iter()
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    let name = &backend.name;
    if name.is_empty() {
        return Err(invalid("agent name", "is empty; name the agent"));
    }
    if name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Err(invalid(
            "agent name",
            format!("`{name}` may hold only letters, digits, `.`, `-` and `_` (up to 64)"),
        ));
    }
    if crate::backend::find(name).is_some() {
        return Err(invalid(
            "agent name",
            format!("`{name}` is a built-in agent; give yours another name"),
        ));
    }
    let taken = before
        .backends
        .iter()
        .any(|b| b.name.eq_ignore_ascii_case(name) && Some(b.name.as_str()) != previous);
    if taken {
        return Err(invalid(
            "agent name",
            format!("`{name}` is already an agent in the config file"),
        ));
    }
    if backend.command.is_empty() {
        return Err(invalid(
            "agent command",
            "is empty; give the program and its arguments, one per line",
        ));
    }
    if !backend.command.iter().any(|a| a.contains("{prompt}")) {
        return Err(invalid(
            "agent command",
            "must pass the task: put {prompt} where the agent takes it",
        ));
    }
    Ok(backend)
}

/// Applies one agent edit to a config file's `text` (see
/// [`Engine::save_backend`]): the new configuration and the new text. The
/// other tables and keys, and the comments, are kept; an agent edited in
/// place keeps its table's other keys and its place.
pub fn edit_backend(
    text: &str,
    previous: Option<&str>,
    backend: Option<CustomBackend>,
) -> std::result::Result<(Config, String), BackendEditError> {
    use toml_edit::{ArrayOfTables, Item, Table};

    let before = if text.trim().is_empty() {
        Config::default()
    } else {
        Config::parse(text).map_err(|e| {
            BackendEditError::Text(format!(
                "does not read, so it cannot be updated; fix it by hand first: {e}"
            ))
        })?
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        BackendEditError::Text(format!(
            "is not valid TOML, so it cannot be updated; fix it by hand first: {e}"
        ))
    })?;
    let backend = backend
        .map(|b| checked_backend(&before, previous, b))
        .transpose()
        .map_err(BackendEditError::Invalid)?;
    if doc.get("backend").is_some_and(|i| !i.is_array_of_tables()) {
        return Err(BackendEditError::Text(
            "has a `backend` that is not a list of [[backend]] tables; fix it by hand first".into(),
        ));
    }
    if doc.get("backend").is_none() {
        doc.insert("backend", Item::ArrayOfTables(ArrayOfTables::new()));
    }
    let Some(tables) = doc
        .get_mut("backend")
        .and_then(|i| i.as_array_of_tables_mut())
    else {
        return Err(BackendEditError::Text("has no [[backend]] list".into()));
    };
    let at = previous.and_then(|name| {
        tables
            .iter()
            .position(|t| t.get("name").and_then(|n| n.as_str()) == Some(name))
    });
    match (backend, at) {
        (None, Some(i)) => tables.remove(i),
        (None, None) => {
            return Err(BackendEditError::Invalid(invalid(
                "agent",
                format!(
                    "`{}` is not in the config file",
                    previous.unwrap_or_default()
                ),
            )))
        }
        (Some(b), at) => {
            let table = match at {
                Some(i) => tables.get_mut(i),
                None => {
                    tables.push(Table::new());
                    let last = tables.len() - 1;
                    tables.get_mut(last)
                }
            };
            let Some(table) = table else {
                return Err(BackendEditError::Text("lost its [[backend]] table".into()));
            };
            let command: toml_edit::Array = b.command.iter().map(String::as_str).collect();
            keep_decor(table, "name", b.name.as_str().into());
            keep_decor(table, "command", command.into());
        }
    }
    if tables.is_empty() {
        doc.remove("backend");
    }
    let new_text = doc.to_string();
    let config = Config::parse(&new_text).map_err(BackendEditError::Text)?;
    Ok((config, new_text))
}

/// Sets `key` in `table`, keeping the comments around its old value.
fn keep_decor(table: &mut toml_edit::Table, key: &str, new: toml_edit::Value) {
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

/// A persona's name as the registry compares names (case, spaces, dashes
/// and underscores alike).
fn persona_key(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// `persona` trimmed and checked against what the registry's format can
/// hold: a one-line name no other persona has, a one-line description,
/// tool names without commas, the knobs in range, and a system prompt
/// whose lines cannot be read as a heading or a setting.
fn checked_persona(mut p: Persona, previous: Option<&str>, registry: &Registry) -> Result<Persona> {
    p.name = p.name.trim().to_string();
    p.system_prompt = p.system_prompt.trim().to_string();
    p.description = p
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty());
    p.tools = p
        .tools
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    let bad = |field: &str, message: String| Error::Invalid(invalid(field, message));
    if p.name.is_empty() {
        return Err(bad("persona name", "is empty; name the persona".into()));
    }
    if p.name.contains('\n') || p.name.contains('\r') || p.name.len() > 80 {
        return Err(bad(
            "persona name",
            "must be one line of up to 80 characters".into(),
        ));
    }
    let key = persona_key(&p.name);
    let taken = registry.personas.iter().any(|q| {
        persona_key(&q.name) == key && previous.map(persona_key).as_deref() != Some(key.as_str())
    });
    if taken {
        return Err(bad(
            "persona name",
            format!("`{}` is already a persona", p.name),
        ));
    }
    if let Some(previous) = previous {
        if registry.find(previous).is_none() {
            return Err(Error::not_found("persona", previous));
        }
    }
    if p.description.as_deref().is_some_and(|d| d.contains('\n')) {
        return Err(bad("persona description", "must be one line".into()));
    }
    if p.tools.iter().any(|t| t.contains(',') || t.contains('\n')) {
        return Err(bad(
            "persona tools",
            "are names without commas, one per entry".into(),
        ));
    }
    if p.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
        return Err(bad("persona temperature", "must be between 0 and 2".into()));
    }
    if p.top_p.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
        return Err(bad("persona top_p", "must be between 0 and 1".into()));
    }
    if p.max_tokens == Some(0) {
        return Err(bad("persona max_tokens", "must be at least 1".into()));
    }
    if p.system_prompt.is_empty() {
        return Err(bad(
            "persona system prompt",
            "is empty; say how this persona answers".into(),
        ));
    }
    if p.system_prompt.lines().any(|l| l.starts_with("## ")) {
        return Err(bad(
            "persona system prompt",
            "has a line starting with `## `, which would start another persona; use `### ` or \
             other words"
                .into(),
        ));
    }
    let first = p.system_prompt.lines().next().unwrap_or_default();
    if first.trim_start().starts_with("- ") && first.contains(':') {
        return Err(bad(
            "persona system prompt",
            "starts with a `- key: value` line, which would be read as a setting; begin with a \
             sentence"
                .into(),
        ));
    }
    Ok(p)
}

/// A persona's `## Name` section as the registry writes it.
fn persona_section(p: &Persona) -> String {
    let mut s = format!("## {}\n", p.name);
    if let Some(d) = &p.description {
        s.push_str(&format!("- description: {d}\n"));
    }
    if !p.tools.is_empty() {
        s.push_str(&format!("- tools: {}\n", p.tools.join(", ")));
    }
    if let Some(t) = p.temperature {
        s.push_str(&format!("- temperature: {t}\n"));
    }
    if let Some(t) = p.top_p {
        s.push_str(&format!("- top_p: {t}\n"));
    }
    if let Some(n) = p.max_tokens {
        s.push_str(&format!("- max_tokens: {n}\n"));
    }
    s.push('\n');
    s.push_str(&p.system_prompt);
    s.push('\n');
    s
}

/// The registry's `text` with `persona` in place of the section of
/// `previous` (or added at the end): every other line is kept.
pub fn edit_persona(text: &str, previous: Option<&str>, persona: &Persona) -> String {
    let lines: Vec<&str> = text.lines().collect();
    fn heading(l: &str) -> Option<&str> {
        l.strip_prefix("## ").map(str::trim)
    }
    let start = previous.and_then(|name| {
        let key = persona_key(name);
        lines
            .iter()
            .position(|l| heading(l).is_some_and(|h| persona_key(h) == key))
    });
    let section = persona_section(persona);
    match start {
        Some(start) => {
            let end = lines[start + 1..]
                .iter()
                .position(|l| heading(l).is_some())
                .map_or(lines.len(), |i| start + 1 + i);
            let mut out = String::new();
            for l in &lines[..start] {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(&section);
            if end < lines.len() {
                out.push('\n');
                for l in &lines[end..] {
                    out.push_str(l);
                    out.push('\n');
                }
            }
            out
        }
        None => {
            let mut out = text.trim_end().to_string();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&section);
            out
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"# my providers
[[provider]]
name = "cloud"   # the team's
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
lane = "cloud"

# agents I use
[[backend]]
name = "mine"
command = ["my-agent", "--task", "{prompt}"]  # keep me
"#;

    fn agent(name: &str, command: &[&str]) -> CustomBackend {
        CustomBackend {
            name: name.into(),
            command: command.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn an_added_agent_keeps_the_file_s_comments_and_tables() {
        let (config, text) =
            edit_backend(CONFIG, None, Some(agent(" helper ", &["h", " {prompt} "]))).unwrap();
        assert_eq!(config.backends.len(), 2);
        assert_eq!(config.backends[1], agent("helper", &["h", "{prompt}"]));
        for kept in [
            "# my providers",
            "# the team's",
            "# agents I use",
            "# keep me",
        ] {
            assert!(text.contains(kept), "{kept} lost:\n{text}");
        }
        assert_eq!(config.providers[0].name, "cloud");
    }

    #[test]
    fn an_agent_edited_in_place_is_renamed_and_removed() {
        let (config, text) = edit_backend(
            CONFIG,
            Some("mine"),
            Some(agent("ours", &["o", "{prompt}"])),
        )
        .unwrap();
        assert_eq!(config.backends, [agent("ours", &["o", "{prompt}"])]);
        assert!(text.contains("# keep me"), "{text}");
        let (config, text) = edit_backend(&text, Some("ours"), None).unwrap();
        assert!(config.backends.is_empty());
        assert!(!text.contains("[[backend]]"), "{text}");
        assert!(text.contains("# my providers"));
    }

    #[test]
    fn a_bad_agent_names_its_field_and_changes_nothing() {
        let field = |r: std::result::Result<(Config, String), BackendEditError>| match r {
            Err(BackendEditError::Invalid(Invalid::Setting { field, .. })) => field,
            other => panic!("expected an invalid field, got {other:?}"),
        };
        assert_eq!(
            field(edit_backend(CONFIG, None, Some(agent("", &["x {prompt}"])))),
            "agent name"
        );
        assert_eq!(
            field(edit_backend(
                CONFIG,
                None,
                Some(agent("claude-code", &["c", "{prompt}"]))
            )),
            "agent name"
        );
        assert_eq!(
            field(edit_backend(
                CONFIG,
                None,
                Some(agent("MINE", &["c", "{prompt}"]))
            )),
            "agent name"
        );
        assert_eq!(
            field(edit_backend(
                CONFIG,
                None,
                Some(agent("a b", &["c", "{prompt}"]))
            )),
            "agent name"
        );
        assert_eq!(
            field(edit_backend(CONFIG, None, Some(agent("x", &["c"])))),
            "agent command"
        );
        assert_eq!(
            field(edit_backend(CONFIG, None, Some(agent("x", &[" "])))),
            "agent command"
        );
        assert!(matches!(
            edit_backend("not = [toml", None, Some(agent("x", &["c", "{prompt}"]))),
            Err(BackendEditError::Text(_))
        ));
    }

    #[test]
    fn the_created_config_is_the_defaults_and_never_overwrites() {
        assert_eq!(Config::parse(DEFAULT_CONFIG).unwrap(), Config::default());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("arena.toml");
        assert!(Engine::create_config(&path).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), DEFAULT_CONFIG);
        std::fs::write(&path, "# mine\n").unwrap();
        assert!(!Engine::create_config(&path).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");
    }

    #[test]
    fn an_agent_goes_into_a_missing_file() {
        let (config, text) = edit_backend("", None, Some(agent("x", &["c", "{prompt}"]))).unwrap();
        assert_eq!(config.backends, [agent("x", &["c", "{prompt}"])]);
        assert_eq!(Config::parse(&text).unwrap().backends, config.backends);
    }

    fn persona(name: &str, prompt: &str) -> Persona {
        Persona {
            name: name.into(),
            system_prompt: prompt.into(),
            tools: vec!["read_file".into()],
            temperature: Some(0.5),
            top_p: None,
            max_tokens: Some(800),
            description: Some("Says it short.".into()),
        }
    }

    fn registry(text: &str) -> Registry {
        Registry::parse(Path::new("AGENTS.md"), text).unwrap()
    }

    #[test]
    fn a_persona_is_added_and_edited_in_place_keeping_the_rest() {
        let text = crate::persona::DEFAULT_REGISTRY;
        let before = registry(text);
        let added = edit_persona(text, None, &persona("Terse", "Answer in one line."));
        let after = registry(&added);
        assert_eq!(after.personas.len(), before.personas.len() + 1);
        let terse = after.find("terse").unwrap();
        assert_eq!(terse.system_prompt, "Answer in one line.");
        assert_eq!(terse.tools, ["read_file"]);
        assert_eq!(
            (terse.temperature, terse.max_tokens),
            (Some(0.5), Some(800))
        );
        assert!(added.starts_with("# Arena personas"));

        let first = before.personas[0].name.clone();
        let edited = edit_persona(&added, Some(&first), &persona(&first, "New words."));
        let again = registry(&edited);
        assert_eq!(again.personas.len(), after.personas.len());
        assert_eq!(again.personas[0].system_prompt, "New words.");
        // Every other persona reads as before.
        for (a, b) in again.personas.iter().zip(&after.personas).skip(1) {
            assert_eq!(a, b);
        }
    }

    #[test]
    fn a_persona_the_file_cannot_hold_is_refused() {
        let reg = registry(crate::persona::DEFAULT_REGISTRY);
        let first = reg.personas[0].name.clone();
        let refused = |p: Persona, previous: Option<&str>| {
            checked_persona(p, previous, &reg).expect_err("refused")
        };
        refused(persona("", "x"), None);
        refused(persona(&first.to_uppercase(), "x"), None);
        refused(persona("New", "## Heading\nmore"), None);
        refused(persona("New", "- temperature: 2"), None);
        refused(persona("New", "  "), None);
        let mut hot = persona("New", "x");
        hot.temperature = Some(3.0);
        refused(hot, None);
        refused(persona("New", "x"), Some("nobody"));
        // The persona itself may keep its name.
        assert!(checked_persona(persona(&first, "x"), Some(&first), &reg).is_ok());
    }
}
