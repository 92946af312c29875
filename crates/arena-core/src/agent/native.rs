//! The built-in `native` agent: a tool-calling loop over any
//! OpenAI-compatible model, so local models can compete on code. Its tools
//! (list, read, write, edit, run a command) work only inside the worktree:
//! a path that would leave it is refused, and so is writing into `.git`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::provider::{
    Chunk, Conversation, Message, Provider, ProviderError, ToolCall, ToolSpec, Usage,
};

/// What the agent reports while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Text the model wrote.
    Text(String),
    /// A tool the model called, with a short summary of what happened.
    Tool {
        name: String,
        summary: String,
        ok: bool,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The model's last words: its explanation of what it did.
    pub explanation: String,
    pub steps: u32,
    /// Whether it stopped because it reached the step cap.
    pub capped: bool,
    pub usage: Usage,
}

#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("cancelled")]
    Cancelled,
}

pub struct NativeAgent<'a> {
    pub provider: &'a Provider,
    pub model: String,
    pub worktree: PathBuf,
    pub max_steps: u32,
    pub command_timeout: Duration,
    pub stall: Duration,
    pub local: bool,
    /// Where its commands run, with the environment that goes with it
    /// (`None`: not sandboxed).
    pub sandbox: Option<(super::sandbox::Sandbox, Vec<(String, String)>)>,
}

const SYSTEM: &str = "You are a careful software engineer working in a git repository (your \
current folder). Use the tools to look at the code, make the requested change with the \
smallest correct edit, and run a command to check it when that helps. Paths are relative to \
the repository root. When you are done, stop calling tools and explain briefly what you \
changed and why.";

/// Bytes of a file or command output handed back to the model.
const OUTPUT_CAP: usize = 32 * 1024;

pub fn tools() -> Vec<ToolSpec> {
    let path = json!({"type": "string", "description": "path relative to the repository root"});
    vec![
        ToolSpec {
            name: "list_dir",
            description: "List the entries of a directory (\".\" for the root).",
            parameters: json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
        },
        ToolSpec {
            name: "read_file",
            description: "Read a text file.",
            parameters: json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
        },
        ToolSpec {
            name: "write_file",
            description: "Create or overwrite a file with the given content.",
            parameters: json!({"type": "object", "properties": {"path": path, "content": {"type": "string"}}, "required": ["path", "content"]}),
        },
        ToolSpec {
            name: "edit_file",
            description: "Replace the one occurrence of `old` in a file with `new`.",
            parameters: json!({"type": "object", "properties": {"path": path, "old": {"type": "string"}, "new": {"type": "string"}}, "required": ["path", "old", "new"]}),
        },
        ToolSpec {
            name: "run_command",
            description:
                "Run a shell command in the repository root and return its exit status and output.",
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
        },
    ]
}

/// Resolves `requested` inside `root`, refusing anything that would leave
/// it: absolute paths elsewhere, `..` past the root, or a symlink out.
pub fn confine(root: &Path, requested: &str) -> Result<PathBuf, String> {
    let requested = requested.trim();
    let rel = Path::new(requested);
    let rel = if rel.is_absolute() {
        rel.strip_prefix(root).map_err(|_| {
            format!("`{requested}` is outside the repository; use a path relative to its root")
        })?
    } else {
        rel
    };
    let mut out = PathBuf::new();
    for comp in rel.components() {
        match comp {
            Component::Normal(c) => out.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return Err(format!("`{requested}` leads outside the repository"));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("`{requested}` is not a path inside the repository"))
            }
        }
    }
    let full = root.join(&out);
    // A symlink may still point outside: check the deepest existing ancestor.
    let mut probe = full.as_path();
    while !probe.exists() {
        match probe.parent() {
            Some(p) => probe = p,
            None => break,
        }
    }
    let real_root = root
        .canonicalize()
        .map_err(|e| format!("repository root: {e}"))?;
    let real = probe
        .canonicalize()
        .map_err(|e| format!("`{requested}`: {e}"))?;
    if !real.starts_with(&real_root) {
        return Err(format!("`{requested}` resolves outside the repository"));
    }
    Ok(full)
}

fn cap(text: &str) -> String {
    if text.len() <= OUTPUT_CAP {
        return text.to_string();
    }
    let mut cut = OUTPUT_CAP;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n… ({} more bytes not shown)",
        &text[..cut],
        text.len() - cut
    )
}

fn arg<'v>(args: &'v Value, key: &str) -> Result<&'v str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string argument `{key}`"))
}

fn writable(root: &Path, path: &str) -> Result<PathBuf, String> {
    let full = confine(root, path)?;
    if full.strip_prefix(root).is_ok_and(|r| r.starts_with(".git")) {
        return Err("writing inside .git is not allowed".into());
    }
    Ok(full)
}

impl NativeAgent<'_> {
    /// Runs one tool; the result text goes back to the model (errors too).
    async fn tool(&self, call: &ToolCall, token: &CancellationToken) -> (String, String, bool) {
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(v) => v,
            Err(e) => {
                let msg = format!("error: the arguments are not valid JSON: {e}");
                return (msg.clone(), msg, false);
            }
        };
        let root = &self.worktree;
        let result: Result<(String, String), String> = match call.name.as_str() {
            "list_dir" => (|| {
                let dir = confine(root, arg(&args, "path")?)?;
                let mut names: Vec<String> = std::fs::read_dir(&dir)
                    .map_err(|e| e.to_string())?
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_name() != ".git")
                    .map(|e| {
                        let mut n = e.file_name().to_string_lossy().into_owned();
                        if e.path().is_dir() {
                            n.push('/');
                        }
                        n
                    })
                    .collect();
                names.sort();
                Ok((names.join("\n"), format!("listed {} entries", names.len())))
            })(),
            "read_file" => (|| {
                let path = arg(&args, "path")?;
                let text =
                    std::fs::read_to_string(confine(root, path)?).map_err(|e| e.to_string())?;
                Ok((cap(&text), format!("read {path}")))
            })(),
            "write_file" => (|| {
                let path = arg(&args, "path")?;
                let full = writable(root, path)?;
                if let Some(dir) = full.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
                }
                let content = arg(&args, "content")?;
                std::fs::write(&full, content).map_err(|e| e.to_string())?;
                Ok((
                    format!("wrote {} bytes to {path}", content.len()),
                    format!("wrote {path}"),
                ))
            })(),
            "edit_file" => (|| {
                let path = arg(&args, "path")?;
                let full = writable(root, path)?;
                let (old, new) = (arg(&args, "old")?, arg(&args, "new")?);
                let text = std::fs::read_to_string(&full).map_err(|e| e.to_string())?;
                match text.matches(old).count() {
                    1 => {
                        std::fs::write(&full, text.replacen(old, new, 1))
                            .map_err(|e| e.to_string())?;
                        Ok((format!("edited {path}"), format!("edited {path}")))
                    }
                    0 => Err(format!("`old` was not found in {path}")),
                    n => Err(format!(
                        "`old` occurs {n} times in {path}; include more context"
                    )),
                }
            })(),
            "run_command" => match arg(&args, "command") {
                Ok(command) => self.run_command(command, token).await,
                Err(e) => Err(e),
            },
            other => Err(format!("unknown tool `{other}`")),
        };
        match result {
            Ok((for_model, summary)) => (for_model, summary, true),
            Err(e) => (format!("error: {e}"), format!("{}: {e}", call.name), false),
        }
    }

    async fn run_command(
        &self,
        command: &str,
        token: &CancellationToken,
    ) -> Result<(String, String), String> {
        let launch = super::process::Launch {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), command.into()],
            cwd: self.worktree.clone(),
            env: self
                .sandbox
                .as_ref()
                .map(|s| s.1.clone())
                .unwrap_or_default(),
            timeout: self.command_timeout,
            sandbox: self.sandbox.as_ref().map(|s| s.0.clone()),
        };
        let mut output = String::new();
        let exit = super::process::run(&launch, token, |line| {
            let (super::process::Line::Stdout(l) | super::process::Line::Stderr(l)) = line;
            if output.len() < OUTPUT_CAP * 2 {
                output.push_str(&l);
                output.push('\n');
            }
        })
        .await
        .map_err(|e| e.to_string())?;
        let status = if exit.timed_out {
            format!("timed out after {} s", self.command_timeout.as_secs())
        } else {
            format!(
                "exit status {}",
                exit.code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "none (signal)".into())
            )
        };
        Ok((
            format!("{status}\n{}", cap(&output)),
            format!("ran `{command}`: {status}"),
        ))
    }

    /// Works on `task` until the model stops calling tools or the step cap.
    pub async fn run(
        &self,
        task: &str,
        token: &CancellationToken,
        mut on_event: impl FnMut(Event),
    ) -> Result<Outcome, NativeError> {
        let mut messages = vec![Message::System(SYSTEM.into()), Message::User(task.into())];
        let mut usage = Usage::default();
        let mut last_text = String::new();
        for step in 1..=self.max_steps {
            let req = Conversation {
                model: self.model.clone(),
                messages: messages.clone(),
                tools: tools(),
                temperature: Some(0.2),
                max_tokens: None,
                no_prompt_cache: self.local,
            };
            let (text, calls, turn_usage) = self.turn(&req, token, &mut on_event).await?;
            usage.prompt_tokens =
                Some(usage.prompt_tokens.unwrap_or(0) + turn_usage.prompt_tokens.unwrap_or(0));
            usage.completion_tokens = Some(
                usage.completion_tokens.unwrap_or(0) + turn_usage.completion_tokens.unwrap_or(0),
            );
            if !text.trim().is_empty() {
                last_text = text.clone();
            }
            if calls.is_empty() {
                return Ok(Outcome {
                    explanation: last_text,
                    steps: step,
                    capped: false,
                    usage,
                });
            }
            messages.push(Message::Assistant {
                content: text,
                tool_calls: calls.clone(),
            });
            for call in &calls {
                if token.is_cancelled() {
                    return Err(NativeError::Cancelled);
                }
                let (result, summary, ok) = self.tool(call, token).await;
                on_event(Event::Tool {
                    name: call.name.clone(),
                    summary,
                    ok,
                });
                messages.push(Message::Tool {
                    call_id: call.id.clone(),
                    content: result,
                });
            }
        }
        Ok(Outcome {
            explanation: format!(
                "{}\n\n(stopped after {} steps, the native agent's step cap)",
                last_text.trim(),
                self.max_steps
            )
            .trim()
            .to_string(),
            steps: self.max_steps,
            capped: true,
            usage,
        })
    }

    /// One model turn: its text, the tool calls it made, token usage.
    async fn turn(
        &self,
        req: &Conversation,
        token: &CancellationToken,
        on_event: &mut impl FnMut(Event),
    ) -> Result<(String, Vec<ToolCall>, Usage), NativeError> {
        let mut stream = tokio::select! {
            _ = token.cancelled() => return Err(NativeError::Cancelled),
            s = tokio::time::timeout(self.stall, self.provider.stream_conversation(req)) => {
                s.map_err(|_| ProviderError::Stalled(self.stall))??
            }
        };
        let mut text = String::new();
        let mut calls: BTreeMap<usize, ToolCall> = BTreeMap::new();
        let mut usage = Usage::default();
        loop {
            let next = tokio::select! {
                _ = token.cancelled() => return Err(NativeError::Cancelled),
                n = tokio::time::timeout(self.stall, stream.next()) => n.map_err(|_| ProviderError::Stalled(self.stall))?,
            };
            match next {
                None => break,
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(Chunk::Content(t))) => {
                    text.push_str(&t);
                    on_event(Event::Text(t));
                }
                Some(Ok(Chunk::ToolCall {
                    index,
                    id,
                    name,
                    arguments,
                })) => {
                    let call = calls.entry(index).or_insert_with(|| ToolCall {
                        id: String::new(),
                        name: String::new(),
                        arguments: String::new(),
                    });
                    if let Some(id) = id {
                        call.id = id;
                    }
                    if let Some(name) = name {
                        call.name.push_str(&name);
                    }
                    call.arguments.push_str(&arguments);
                }
                Some(Ok(Chunk::Usage(u))) => usage = u,
                Some(Ok(_)) => {}
            }
        }
        let calls = calls
            .into_values()
            .enumerate()
            .map(|(i, mut c)| {
                if c.id.is_empty() {
                    c.id = format!("call_{i}");
                }
                c
            })
            .collect();
        Ok((text, calls, usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        assert_eq!(
            confine(&root, "src/main.rs").unwrap(),
            root.join("src/main.rs")
        );
        assert_eq!(
            confine(&root, "./src/../README.md").unwrap(),
            root.join("README.md")
        );
        assert_eq!(
            confine(&root, root.join("a.txt").to_str().unwrap()).unwrap(),
            root.join("a.txt")
        );
        assert!(confine(&root, "../outside.txt").is_err());
        assert!(confine(&root, "src/../../etc/passwd").is_err());
        assert!(confine(&root, "/etc/passwd").is_err());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/tmp", root.join("escape")).unwrap();
            assert!(confine(&root, "escape/x.txt")
                .unwrap_err()
                .contains("outside"));
        }
        assert!(writable(&root, ".git/config").is_err());
        assert!(writable(&root, "src/new.rs").is_ok());
    }
}
