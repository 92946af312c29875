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

use arena_provider::{
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
    pub sandbox: Option<super::sandbox::Confinement>,
    /// The largest file its commands may write (`RLIMIT_FSIZE`).
    pub max_file_bytes: Option<u64>,
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

/// The largest file the native agent reads or writes.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// `requested` as a path relative to `root`, refusing what would leave it
/// by its spelling: absolute paths elsewhere, `..` past the root. (Symlinks
/// are the file tools' business: they open beneath the root only.)
pub fn relative(root: &Path, requested: &str) -> Result<PathBuf, String> {
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
    Ok(out)
}

/// A path the agent may write: inside the repository, not in `.git`.
fn writable(root: &Path, path: &str) -> Result<PathBuf, String> {
    let rel = relative(root, path)?;
    if rel.starts_with(".git") {
        return Err("writing inside .git is not allowed".into());
    }
    if rel.as_os_str().is_empty() {
        return Err(format!("`{path}` is the repository itself, not a file"));
    }
    Ok(rel)
}

/// How a file tool failed, for the model.
fn io_error(path: &str, e: std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        format!("`{path}`: not allowed (it leads outside the repository, or may not be changed)")
    } else {
        format!("`{path}`: {e}")
    }
}

/// The file tools (list, read, write, edit), on blocking threads: every
/// path is opened beneath the worktree (`cap_std`: no `..` and no symlink,
/// dangling or not, leads out of it); only regular files up to
/// [`MAX_FILE_BYTES`] are read or written (no FIFOs, devices or sockets).
fn file_tool(root: &Path, name: &str, args: &Value) -> Result<(String, String), String> {
    use cap_std::fs::Dir;
    let dir = Dir::open_ambient_dir(root, cap_std::ambient_authority())
        .map_err(|e| format!("the repository: {e}"))?;
    let regular = |rel: &Path, path: &str| -> Result<(), String> {
        let meta = dir.metadata(rel).map_err(|e| io_error(path, e))?;
        if !meta.is_file() {
            return Err(format!("`{path}` is not a regular file"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(format!(
                "`{path}` is {} bytes; files over {MAX_FILE_BYTES} bytes are not read",
                meta.len()
            ));
        }
        Ok(())
    };
    let read = |rel: &Path, path: &str| -> Result<String, String> {
        regular(rel, path)?;
        dir.read_to_string(rel).map_err(|e| io_error(path, e))
    };
    let write = |rel: &Path, path: &str, content: &str| -> Result<(), String> {
        if content.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "{} bytes is too much for one file (at most {MAX_FILE_BYTES})",
                content.len()
            ));
        }
        if let Ok(meta) = dir.metadata(rel) {
            if !meta.is_file() {
                return Err(format!("`{path}` is not a regular file"));
            }
        }
        dir.write(rel, content).map_err(|e| io_error(path, e))
    };
    match name {
        "list_dir" => {
            let path = arg(args, "path")?;
            let rel = relative(root, path)?;
            let entries = if rel.as_os_str().is_empty() {
                dir.entries()
            } else {
                dir.read_dir(&rel)
            }
            .map_err(|e| io_error(path, e))?;
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name() != ".git")
                .map(|e| {
                    let mut n = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        n.push('/');
                    }
                    n
                })
                .collect();
            names.sort();
            Ok((names.join("\n"), format!("listed {} entries", names.len())))
        }
        "read_file" => {
            let path = arg(args, "path")?;
            let text = read(&relative(root, path)?, path)?;
            Ok((cap(&text), format!("read {path}")))
        }
        "write_file" => {
            let path = arg(args, "path")?;
            let rel = writable(root, path)?;
            let content = arg(args, "content")?;
            if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                dir.create_dir_all(parent).map_err(|e| io_error(path, e))?;
            }
            write(&rel, path, content)?;
            Ok((
                format!("wrote {} bytes to {path}", content.len()),
                format!("wrote {path}"),
            ))
        }
        "edit_file" => {
            let path = arg(args, "path")?;
            let rel = writable(root, path)?;
            let (old, new) = (arg(args, "old")?, arg(args, "new")?);
            let text = read(&rel, path)?;
            match text.matches(old).count() {
                1 => {
                    write(&rel, path, &text.replacen(old, new, 1))?;
                    Ok((format!("edited {path}"), format!("edited {path}")))
                }
                0 => Err(format!("`old` was not found in {path}")),
                n => Err(format!(
                    "`old` occurs {n} times in {path}; include more context"
                )),
            }
        }
        other => Err(format!("unknown tool `{other}`")),
    }
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
        let result: Result<(String, String), String> = match call.name.as_str() {
            "list_dir" | "read_file" | "write_file" | "edit_file" => {
                let (root, name) = (self.worktree.clone(), call.name.clone());
                tokio::task::spawn_blocking(move || file_tool(&root, &name, &args))
                    .await
                    .unwrap_or_else(|e| Err(format!("the tool failed: {e}")))
            }
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
                .map(|c| c.env.clone())
                .unwrap_or_default(),
            timeout: self.command_timeout,
            sandbox: self.sandbox.as_ref().map(|c| c.sandbox.clone()),
            bounds: super::process::Bounds {
                output_bytes: OUTPUT_CAP * 2,
                file_bytes: self.max_file_bytes,
                ..Default::default()
            },
            door: None,
            registries: None,
        };
        let mut output = String::new();
        let exit = super::process::run(&launch, token, |line| {
            let (super::process::Line::Stdout(l) | super::process::Line::Stderr(l)) = line;
            output.push_str(&l);
            output.push('\n');
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
    fn paths_are_spelled_inside_the_repository() {
        let root = Path::new("/repo");
        assert_eq!(
            relative(root, "src/main.rs").unwrap(),
            PathBuf::from("src/main.rs")
        );
        assert_eq!(
            relative(root, "./src/../README.md").unwrap(),
            PathBuf::from("README.md")
        );
        assert_eq!(
            relative(root, "/repo/a.txt").unwrap(),
            PathBuf::from("a.txt")
        );
        assert!(relative(root, "../outside.txt").is_err());
        assert!(relative(root, "src/../../etc/passwd").is_err());
        assert!(relative(root, "/etc/passwd").is_err());
        assert!(writable(root, ".git/config").is_err());
        assert!(writable(root, "src/new.rs").is_ok());
    }

    fn tool(root: &Path, name: &str, args: Value) -> Result<(String, String), String> {
        file_tool(root, name, &args)
    }

    #[cfg(unix)]
    #[test]
    fn file_tools_stay_beneath_the_worktree() {
        use serde_json::json;
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        // A link out, and a dangling one (its target does not exist yet).
        std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("new"), root.join("dangling")).unwrap();
        let write = |path: &str| tool(root, "write_file", json!({"path": path, "content": "x"}));
        assert!(write("escape/x.txt").is_err());
        assert!(write("dangling").is_err(), "a dangling link out is refused");
        assert!(!outside.path().join("new").exists());
        assert!(!outside.path().join("x.txt").exists());
        assert!(tool(root, "read_file", json!({"path": "escape/secret"})).is_err());
        assert!(tool(root, "list_dir", json!({"path": "escape"})).is_err());
        // A link inside is fine.
        std::fs::create_dir(root.join("src")).unwrap();
        std::os::unix::fs::symlink("src", root.join("alias")).unwrap();
        assert!(write("alias/ok.rs").is_ok());
        assert_eq!(
            std::fs::read_to_string(root.join("src/ok.rs")).unwrap(),
            "x"
        );
        // FIFOs are not files to read (reading one would block).
        let fifo = root.join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = tool(root, "read_file", json!({"path": "pipe"})).unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        assert!(write("pipe").is_err());
        // Large files are refused, both ways.
        std::fs::write(root.join("big"), vec![b'a'; MAX_FILE_BYTES as usize + 1]).unwrap();
        assert!(tool(root, "read_file", json!({"path": "big"})).is_err());
        let huge = "a".repeat(MAX_FILE_BYTES as usize + 1);
        assert!(tool(root, "write_file", json!({"path": "huge", "content": huge})).is_err());
        // Ordinary work still works.
        assert!(write("deep/new/file.txt").is_ok());
        let listed = tool(root, "list_dir", json!({"path": "."})).unwrap().0;
        assert!(
            listed.contains("deep/") && listed.contains("src/"),
            "{listed}"
        );
        let edited = tool(
            root,
            "edit_file",
            json!({"path": "src/ok.rs", "old": "x", "new": "y"}),
        );
        assert!(edited.is_ok(), "{edited:?}");
    }
}
