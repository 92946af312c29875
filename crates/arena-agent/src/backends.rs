//! How each CLI coding agent is launched non-interactively, and how its
//! output is read. Pure: building a [`Plan`] touches nothing; the caller
//! writes its files and starts the process.
//!
//! | backend | command | model endpoint |
//! |---|---|---|
//! | `claude-code` | `claude -p --model M --permission-mode acceptEdits --output-format stream-json --verbose PROMPT` | `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` (an Anthropic-kind provider) |
//! | `codex` | `codex exec --dangerously-bypass-approvals-and-sandbox -m M PROMPT` | `CODEX_HOME/config.toml` with a Responses-API provider |
//! | `opencode` | `opencode run -m arena/M PROMPT` | `OPENCODE_CONFIG` file declaring provider `arena` |
//! | `qwen` | `qwen --auth-type openai -m M --yolo PROMPT` | `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL` |
//! | `aider` | `aider --model openai/M --yes-always … --message PROMPT` | `OPENAI_API_BASE`, `OPENAI_API_KEY` |
//! | `goose` | `goose run -t PROMPT` | goose's own configuration |
//! | `[[backend]]` | the configured argv with `{prompt}`, `{model}`, `{worktree}` | `OPENAI_BASE_URL`, `OPENAI_API_KEY` |
//!
//! When the model is not served by an Arena provider, the agent keeps its
//! own configuration and Arena passes the model name through unchanged.

use std::path::{Path, PathBuf};

use arena_domain::backend::Agent;
use arena_domain::config::{CustomBackend, ProviderKind};
use arena_domain::secret::Secret;

/// Where the contestant's model is served, when an Arena provider serves it.
/// Its key reaches the agent only through its environment: never a file,
/// never the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub kind: ProviderKind,
    /// Up to and including `/v1`.
    pub base_url: String,
    pub api_key: Secret,
}

/// How to read what the agent prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// Plain lines; the whole output is its explanation.
    Lines,
    /// Claude Code's `stream-json`: one JSON event per line.
    ClaudeStreamJson,
}

/// Everything needed to start one agent run. Its `Debug` names the
/// environment variables, not their values (one of them is the key).
#[derive(Clone, PartialEq)]
pub struct Plan {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Config files to write first (outside the worktree).
    pub files: Vec<(PathBuf, String)>,
    pub output: OutputFormat,
    /// The agent keeps its own configuration (no Arena provider): these
    /// files and folders of the user's home, which its sandbox may read.
    pub own_config: &'static [&'static str],
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env_names(&self.env))
            .field(
                "files",
                &self.files.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            )
            .field("output", &self.output)
            .field("own_config", &self.own_config)
            .finish()
    }
}

/// `NAME=..` for each variable: what a `Debug` of an environment may show.
pub fn env_names(env: &[(String, String)]) -> Vec<String> {
    env.iter().map(|(name, _)| format!("{name}=..")).collect()
}

/// What a plan launches: one of Arena's CLI agents, or one of the user's
/// `[[backend]]` commands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Backend<'a> {
    Agent(Agent),
    Custom(&'a CustomBackend),
}

impl<'a> Backend<'a> {
    /// The backend a contestant named `identity` runs: `custom` when it
    /// names one of the user's (they cannot take an agent's name), else
    /// the agent of that name.
    pub fn of(identity: &str, custom: Option<&'a CustomBackend>) -> Result<Self, String> {
        match (custom, Agent::parse(identity)) {
            (Some(custom), _) => Ok(Backend::Custom(custom)),
            (None, Some(agent)) => Ok(Backend::Agent(agent)),
            (None, None) => Err(format!("no adapter for the `{identity}` backend")),
        }
    }
}

fn strip_v1(url: &str) -> String {
    let url = url.trim_end_matches('/');
    url.strip_suffix("/v1").unwrap_or(url).to_string()
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The launch plan for `backend` working on `prompt` with `model`.
/// `scratch` is a private folder for the agent's config files.
pub fn plan(
    backend: Backend<'_>,
    model: &str,
    prompt: &str,
    worktree: &Path,
    scratch: &Path,
    endpoint: Option<&Endpoint>,
) -> Result<Plan, String> {
    let mut plan = Plan {
        program: String::new(),
        args: Vec::new(),
        env: Vec::new(),
        files: Vec::new(),
        output: OutputFormat::Lines,
        own_config: &[],
    };
    let openai_env = |plan: &mut Plan, e: &Endpoint| {
        plan.env
            .push(("OPENAI_BASE_URL".into(), e.base_url.clone()));
        plan.env
            .push(("OPENAI_API_KEY".into(), e.api_key.expose().to_string()));
    };
    let needs_openai = |e: Option<&Endpoint>, who: &str| -> Result<(), String> {
        match e {
            Some(e) if e.kind != ProviderKind::Openai => Err(format!(
                "{who} speaks the OpenAI API; serve the model from an OpenAI-compatible provider"
            )),
            _ => Ok(()),
        }
    };
    let agent = match backend {
        Backend::Agent(agent) => agent,
        Backend::Custom(custom) => {
            let fill = |a: &str| {
                a.replace("{prompt}", prompt)
                    .replace("{model}", model)
                    .replace("{worktree}", &worktree.to_string_lossy())
            };
            let mut argv = custom.command.iter().map(|a| fill(a));
            plan.program = argv.next().ok_or("the backend's command is empty")?;
            plan.args = argv.collect();
            if let Some(e) = endpoint {
                openai_env(&mut plan, e);
            }
            return Ok(plan);
        }
    };
    match agent {
        Agent::Native => {
            return Err("the native agent runs inside Arena; it has no command to launch".into())
        }
        Agent::ClaudeCode => {
            plan.args = [
                "-p",
                "--model",
                model,
                "--permission-mode",
                "acceptEdits",
                "--output-format",
                "stream-json",
                "--verbose",
                prompt,
            ]
            .map(String::from)
            .to_vec();
            plan.output = OutputFormat::ClaudeStreamJson;
            plan.env.push((
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ));
            if let Some(e) = endpoint {
                if e.kind != ProviderKind::Anthropic {
                    return Err("Claude Code speaks the Anthropic Messages API; serve the model from a provider with kind = \"anthropic\"".into());
                }
                plan.env
                    .push(("ANTHROPIC_BASE_URL".into(), strip_v1(&e.base_url)));
                plan.env
                    .push(("ANTHROPIC_API_KEY".into(), e.api_key.expose().to_string()));
                plan.env
                    .push(("ANTHROPIC_SMALL_FAST_MODEL".into(), model.into()));
            }
        }
        Agent::Codex => {
            needs_openai(endpoint, "Codex CLI")?;
            plan.args = [
                "exec",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
                "-m",
                model,
                prompt,
            ]
            .map(String::from)
            .to_vec();
            if let Some(e) = endpoint {
                let home = scratch.join("codex-home");
                let config = format!(
                    "model = {}\nmodel_provider = \"arena\"\n\n[model_providers.arena]\nname = \"Arena\"\nbase_url = {}\nenv_key = \"ARENA_CODEX_API_KEY\"\nwire_api = \"responses\"\n",
                    toml_string(model),
                    toml_string(&e.base_url)
                );
                plan.files.push((home.join("config.toml"), config));
                plan.env
                    .push(("CODEX_HOME".into(), home.to_string_lossy().into_owned()));
                plan.env
                    .push(("ARENA_CODEX_API_KEY".into(), e.api_key.expose().to_string()));
            }
        }
        Agent::OpenCode => {
            needs_openai(endpoint, "OpenCode")?;
            match endpoint {
                Some(e) => {
                    let config = serde_json::json!({
                        "$schema": "https://opencode.ai/config.json",
                        "provider": {"arena": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Arena",
                            // OpenCode fills `{env:…}` in from its environment.
                            "options": {"baseURL": e.base_url, "apiKey": "{env:ARENA_OPENCODE_API_KEY}"},
                            "models": {model: {"name": model, "limit": {"context": 65536, "output": 8192}}},
                        }},
                    });
                    let path = scratch.join("opencode.json");
                    plan.files.push((path.clone(), config.to_string()));
                    plan.env.push((
                        "OPENCODE_CONFIG".into(),
                        path.to_string_lossy().into_owned(),
                    ));
                    plan.env.push((
                        "ARENA_OPENCODE_API_KEY".into(),
                        e.api_key.expose().to_string(),
                    ));
                    plan.args = vec![
                        "run".into(),
                        "-m".into(),
                        format!("arena/{model}"),
                        prompt.into(),
                    ];
                }
                None => plan.args = vec!["run".into(), "-m".into(), model.into(), prompt.into()],
            }
        }
        Agent::Qwen => {
            needs_openai(endpoint, "Qwen Code")?;
            plan.args = ["--auth-type", "openai", "-m", model, "--yolo", prompt]
                .map(String::from)
                .to_vec();
            if let Some(e) = endpoint {
                openai_env(&mut plan, e);
                plan.env.push(("OPENAI_MODEL".into(), model.into()));
            }
        }
        Agent::Aider => {
            needs_openai(endpoint, "aider")?;
            let mut args = vec![
                "--yes-always",
                "--no-check-update",
                "--no-show-model-warnings",
                "--analytics-disable",
                "--no-pretty",
                "--no-fancy-input",
                "--no-gitignore",
            ]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
            match endpoint {
                // aider reads the base and the key from its environment.
                Some(e) => {
                    args.extend(["--model".into(), format!("openai/{model}")]);
                    plan.env
                        .push(("OPENAI_API_BASE".into(), e.base_url.clone()));
                    plan.env
                        .push(("OPENAI_API_KEY".into(), e.api_key.expose().to_string()));
                }
                None => args.extend(["--model".into(), model.into()]),
            }
            // Keep aider's own files out of the worktree (and so out of the diff).
            args.extend([
                "--input-history-file".into(),
                scratch
                    .join("aider.input.history")
                    .to_string_lossy()
                    .into_owned(),
                "--chat-history-file".into(),
                scratch
                    .join("aider.chat.history.md")
                    .to_string_lossy()
                    .into_owned(),
                "--map-tokens".into(),
                "0".into(),
            ]);
            plan.files.push((scratch.join(".keep"), String::new()));
            args.extend(["--message".into(), prompt.into()]);
            plan.args = args;
        }
        Agent::Goose => {
            plan.args = vec!["run".into(), "-t".into(), prompt.into()];
            plan.env.push(("GOOSE_MODEL".into(), model.into()));
            // Goose always uses its own configuration.
            plan.own_config = own_config(agent);
        }
    }
    // Only the native agent has no program, and it returned above.
    plan.program = agent.program().unwrap_or_default().into();
    if endpoint.is_none() {
        plan.own_config = own_config(agent);
    }
    Ok(plan)
}

/// Where each agent keeps its own configuration and sign-in, relative to
/// the user's home: what it may read when it uses them. Files rather than
/// whole folders where the agent also keeps its history there, so that it
/// writes its history into its scratch home.
pub fn own_config(agent: Agent) -> &'static [&'static str] {
    match agent {
        // The built-in agent reads nothing of the user's.
        Agent::Native => &[],
        Agent::ClaudeCode => &[
            ".claude.json",
            ".claude/.credentials.json",
            ".claude/settings.json",
            ".claude/CLAUDE.md",
        ],
        Agent::Codex => &[".codex/auth.json", ".codex/config.toml", ".codex/AGENTS.md"],
        Agent::OpenCode => &[".config/opencode", ".local/share/opencode/auth.json"],
        Agent::Qwen => &[
            ".qwen/settings.json",
            ".qwen/oauth_creds.json",
            ".qwen/QWEN.md",
        ],
        Agent::Aider => &[
            ".aider.conf.yml",
            ".aider.model.settings.yml",
            ".aider.model.metadata.json",
        ],
        Agent::Goose => &[".config/goose"],
    }
}

/// For agents that can be confined to reading: the flags of their edit
/// plan and what replaces them for a read-only run. `None`: no read-only
/// mode Arena can enforce.
pub fn read_only_swap(agent: Agent) -> Option<(&'static [&'static str], &'static [&'static str])> {
    match agent {
        Agent::Qwen => Some((&["--yolo"], &["--approval-mode", "plan"])),
        Agent::Codex => Some((
            &["--dangerously-bypass-approvals-and-sandbox"],
            &["--sandbox", "read-only"],
        )),
        Agent::ClaudeCode => Some((
            &["--permission-mode", "acceptEdits"],
            &["--permission-mode", "plan"],
        )),
        // No flag Arena can enforce; the native agent has no examiner mode.
        Agent::OpenCode | Agent::Aider | Agent::Goose | Agent::Native => None,
    }
}

/// The arguments that confine a coding backend to reading, if it has a
/// read-only mode of its own.
pub fn read_only_mode(agent: Agent) -> Option<&'static [&'static str]> {
    read_only_swap(agent).map(|(_, read_only)| read_only)
}

/// Whether `agent` can cross-examine: in the kernel sandbox every CLI
/// agent can (the sandbox makes it read-only); without one, only an agent
/// with a read-only mode of its own (the others are refused: fail closed).
/// The native agent has no examiner mode.
pub fn can_examine(agent: Agent, sandboxed: bool) -> bool {
    agent.is_cli() && (sandboxed || read_only_mode(agent).is_some())
}

/// The launch plan for a read-only run (cross-examination): the edit plan
/// with its edit flags swapped for the agent's read-only mode.
pub fn read_only_plan(
    agent: Agent,
    model: &str,
    prompt: &str,
    cwd: &Path,
    scratch: &Path,
    endpoint: Option<&Endpoint>,
) -> Result<Plan, String> {
    let (edit, read_only) = read_only_swap(agent)
        .ok_or_else(|| format!("`{agent}` has no read-only mode Arena can enforce"))?;
    let mut plan = plan(Backend::Agent(agent), model, prompt, cwd, scratch, endpoint)?;
    let at = plan
        .args
        .windows(edit.len())
        .position(|w| w.iter().zip(edit).all(|(a, b)| a == b))
        .ok_or_else(|| format!("`{agent}`'s edit flags are missing from its plan"))?;
    plan.args
        .splice(at..at + edit.len(), read_only.iter().map(|a| a.to_string()));
    Ok(plan)
}

/// One piece of an agent's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(String),
    Tool {
        name: String,
        summary: String,
    },
    /// The agent's final answer (replaces the explanation).
    Final(String),
}

/// Reads one line of Claude Code's `stream-json` output.
pub fn parse_claude_line(line: &str) -> Vec<Piece> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
        return vec![Piece::Text(format!("{line}\n"))];
    };
    match v.get("type").and_then(|t| t.as_str()) {
        Some("assistant") => v
            .pointer("/message/content")
            .and_then(|c| c.as_array())
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| match b.get("type").and_then(|t| t.as_str()) {
                        Some("text") => b
                            .get("text")
                            .and_then(|t| t.as_str())
                            .map(|t| Piece::Text(format!("{t}\n"))),
                        Some("tool_use") => {
                            let name = b
                                .get("name")
                                .and_then(|n| n.as_str())
                                .unwrap_or("tool")
                                .to_string();
                            let input = b.get("input").cloned().unwrap_or_default();
                            let target = ["file_path", "path", "command", "pattern"]
                                .iter()
                                .find_map(|k| input.get(k).and_then(|x| x.as_str()))
                                .unwrap_or("")
                                .to_string();
                            Some(Piece::Tool {
                                name,
                                summary: target,
                            })
                        }
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Some("result") => v
            .get("result")
            .and_then(|r| r.as_str())
            .map(|r| vec![Piece::Final(r.to_string())])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(kind: ProviderKind) -> Endpoint {
        Endpoint {
            kind,
            base_url: "http://127.0.0.1:9/v1".into(),
            api_key: Secret::new(KEY.into()),
        }
    }

    fn cli_agents() -> impl Iterator<Item = Agent> {
        Agent::ALL.iter().copied().filter(|a| a.is_cli())
    }

    const KEY: &str = "sk-arena-test-0123456789";

    /// `agent`'s plan for model `m`, task `x`, in `/w` with scratch `/s`,
    /// served by an endpoint of `kind`.
    fn plan_on(agent: Agent, kind: ProviderKind) -> Plan {
        plan(
            Backend::Agent(agent),
            "m",
            "x",
            Path::new("/w"),
            Path::new("/s"),
            Some(&ep(kind)),
        )
        .unwrap()
    }

    #[test]
    fn only_an_agent_with_its_own_configuration_reads_it() {
        for backend in cli_agents() {
            let own = plan(
                Backend::Agent(backend),
                "m",
                "x",
                Path::new("/w"),
                Path::new("/s"),
                None,
            )
            .unwrap()
            .own_config;
            assert!(!own.is_empty(), "{backend} reads its own configuration");
            assert!(
                own.iter()
                    .all(|p| !p.is_empty() && !p.starts_with('/') && !p.contains("..")),
                "{backend}: {own:?} stays in the home"
            );
        }
        assert!(plan_on(Agent::Codex, ProviderKind::Openai)
            .own_config
            .is_empty());
        // Goose always uses its own configuration.
        assert!(!plan_on(Agent::Goose, ProviderKind::Openai)
            .own_config
            .is_empty());
    }

    #[test]
    fn keys_reach_agents_only_through_their_environment() {
        for (backend, kind) in [
            (Agent::ClaudeCode, ProviderKind::Anthropic),
            (Agent::Codex, ProviderKind::Openai),
            (Agent::OpenCode, ProviderKind::Openai),
            (Agent::Qwen, ProviderKind::Openai),
            (Agent::Aider, ProviderKind::Openai),
        ] {
            let (e, p) = (ep(kind), plan_on(backend, kind));
            assert!(
                p.env.iter().any(|(_, v)| v == KEY),
                "{backend}: the key is in its environment"
            );
            assert!(
                !p.args.iter().any(|a| a.contains(KEY)),
                "{backend}: the key is on the command line: {:?}",
                p.args
            );
            for (path, content) in &p.files {
                assert!(
                    !content.contains(KEY),
                    "{backend}: the key is in {}",
                    path.display()
                );
            }
            for shown in [format!("{p:?}"), format!("{e:?}")] {
                assert!(
                    !shown.contains(KEY),
                    "{backend}: Debug shows the key: {shown}"
                );
            }
        }
        // OpenCode reads it from its environment by name.
        let p = plan_on(Agent::OpenCode, ProviderKind::Openai);
        assert!(p.files[0].1.contains("{env:ARENA_OPENCODE_API_KEY}"));
        let aider = plan_on(Agent::Aider, ProviderKind::Openai);
        assert!(aider
            .env
            .contains(&("OPENAI_API_BASE".into(), "http://127.0.0.1:9/v1".into())));
    }

    #[test]
    fn claude_code_gets_the_anthropic_endpoint_without_v1() {
        let p = plan(
            Backend::Agent(Agent::ClaudeCode),
            "m",
            "do it",
            Path::new("/w"),
            Path::new("/s"),
            Some(&ep(ProviderKind::Anthropic)),
        )
        .unwrap();
        assert_eq!(p.program, "claude");
        assert!(p
            .env
            .contains(&("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9".into())));
        assert_eq!(p.output, OutputFormat::ClaudeStreamJson);
        assert_eq!(p.args.last().unwrap(), "do it");
        assert!(plan(
            Backend::Agent(Agent::ClaudeCode),
            "m",
            "x",
            Path::new("/w"),
            Path::new("/s"),
            Some(&ep(ProviderKind::Openai))
        )
        .is_err());
    }

    #[test]
    fn codex_and_opencode_get_private_config_files() {
        let p = plan(
            Backend::Agent(Agent::Codex),
            "m",
            "x",
            Path::new("/w"),
            Path::new("/s"),
            Some(&ep(ProviderKind::Openai)),
        )
        .unwrap();
        let (path, config) = &p.files[0];
        assert_eq!(path, &PathBuf::from("/s/codex-home/config.toml"));
        assert!(
            config.contains("wire_api = \"responses\"")
                && config.contains("base_url = \"http://127.0.0.1:9/v1\"")
        );
        let p = plan_on(Agent::OpenCode, ProviderKind::Openai);
        assert!(p.args.contains(&"arena/m".to_string()));
        assert!(p.files[0].1.contains("@ai-sdk/openai-compatible"));
        // Without an Arena endpoint the agent keeps its own configuration.
        let p = plan(
            Backend::Agent(Agent::OpenCode),
            "anthropic/claude",
            "x",
            Path::new("/w"),
            Path::new("/s"),
            None,
        )
        .unwrap();
        assert!(p.files.is_empty() && p.args.contains(&"anthropic/claude".to_string()));
    }

    #[test]
    fn read_only_plans_swap_the_edit_flags() {
        let e = ep(ProviderKind::Openai);
        let p = read_only_plan(
            Agent::Qwen,
            "m",
            "look",
            Path::new("/r"),
            Path::new("/s"),
            Some(&e),
        )
        .unwrap();
        assert!(!p.args.contains(&"--yolo".to_string()));
        assert!(p.args.windows(2).any(|w| w == ["--approval-mode", "plan"]));
        let a = ep(ProviderKind::Anthropic);
        let p = read_only_plan(
            Agent::ClaudeCode,
            "m",
            "look",
            Path::new("/r"),
            Path::new("/s"),
            Some(&a),
        )
        .unwrap();
        assert!(p
            .args
            .windows(2)
            .any(|w| w == ["--permission-mode", "plan"]));
        let p = read_only_plan(
            Agent::Codex,
            "m",
            "look",
            Path::new("/r"),
            Path::new("/s"),
            Some(&e),
        )
        .unwrap();
        assert!(p.args.windows(2).any(|w| w == ["--sandbox", "read-only"]));
        assert!(!p.args.iter().any(|a| a.contains("dangerously")));
        assert!(read_only_plan(
            Agent::Aider,
            "m",
            "x",
            Path::new("/r"),
            Path::new("/s"),
            Some(&e)
        )
        .is_err());
    }

    #[test]
    fn custom_commands_fill_placeholders() {
        let custom = CustomBackend {
            name: "mine".into(),
            command: vec![
                "tool".into(),
                "--model={model}".into(),
                "{prompt}".into(),
                "{worktree}".into(),
            ],
        };
        let p = plan(
            Backend::Custom(&custom),
            "m",
            "fix it",
            Path::new("/w"),
            Path::new("/s"),
            None,
        )
        .unwrap();
        assert_eq!(p.program, "tool");
        assert_eq!(p.args, vec!["--model=m", "fix it", "/w"]);
    }

    #[test]
    fn claude_stream_json_lines() {
        let line = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Let me write it."},{"type":"tool_use","name":"Write","input":{"file_path":"/w/a.txt"}}]}}"#;
        assert_eq!(
            parse_claude_line(line),
            vec![
                Piece::Text("Let me write it.\n".into()),
                Piece::Tool {
                    name: "Write".into(),
                    summary: "/w/a.txt".into()
                }
            ]
        );
        assert_eq!(
            parse_claude_line(r#"{"type":"result","result":"Done."}"#),
            vec![Piece::Final("Done.".into())]
        );
        assert!(parse_claude_line(r#"{"type":"system"}"#).is_empty());
    }

    #[test]
    fn sandboxed_every_agent_may_examine_else_only_those_with_a_read_only_mode() {
        assert!(read_only_mode(Agent::Qwen).is_some());
        assert!(read_only_mode(Agent::Aider).is_none());
        for agent in cli_agents() {
            assert!(can_examine(agent, true), "{agent}");
        }
        assert!(can_examine(Agent::ClaudeCode, false) && can_examine(Agent::Codex, false));
        assert!(!can_examine(Agent::Aider, false) && !can_examine(Agent::OpenCode, false));
        assert!(
            !can_examine(Agent::Native, true),
            "the native agent has no examiner mode"
        );
    }

    #[test]
    fn every_cli_agent_has_a_plan_and_the_native_agent_none() {
        for agent in Agent::ALL {
            let planned = plan(
                Backend::Agent(*agent),
                "m",
                "x",
                Path::new("/w"),
                Path::new("/s"),
                None,
            );
            assert_eq!(planned.is_ok(), agent.is_cli(), "{agent}: {planned:?}");
            if let Ok(p) = planned {
                assert_eq!(Some(p.program.as_str()), agent.program(), "{agent}");
            }
        }
    }

    #[test]
    fn a_contestant_names_a_custom_backend_or_an_agent() {
        let custom = CustomBackend {
            name: "mine".into(),
            command: vec!["tool".into(), "{prompt}".into()],
        };
        assert_eq!(
            Backend::of("mine", Some(&custom)),
            Ok(Backend::Custom(&custom))
        );
        assert_eq!(
            Backend::of("Claude-Code", None),
            Ok(Backend::Agent(Agent::ClaudeCode))
        );
        assert!(Backend::of("cursor", None).is_err());
    }
}
