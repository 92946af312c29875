//! Writing a mined task's instruction (issue 41, point 5): a model writes
//! the behaviour from the commit message, the hidden test patch and the
//! RED run's failure output under rules that forbid naming the fix, the
//! tests or commands; Arena adds the interface section it computes
//! itself; the audit rejects a leaking instruction, which is rewritten
//! once (the model told why) and then dropped with the reason. The rules
//! are [`arena_domain::instruction`]; this is the shell: choosing the
//! writer (local by default), calling it, writing `instruction.md` and
//! the task's review state in `task.toml`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use arena_domain::instruction::{self, Leak, ReviewState, WriterInput};
use futures::StreamExt;
use serde::Serialize;

use crate::battle::Lane;
use crate::config::Config;
use crate::provider::catalog::Catalog;
use crate::provider::{ChatRequest, Chunk, Exchange, Provider};

use super::{read, Pack, PackError, Solution, Task, TaskKind, INSTRUCTION_FILE, TASK_FILE};

/// How long providers have to list their models.
const DISCOVERY: Duration = Duration::from_secs(10);
/// The most a writer's answer may hold.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why instructions could not be written.
#[derive(Debug, thiserror::Error)]
pub enum InstructError {
    #[error(transparent)]
    Pack(#[from] PackError),
    /// No model to write with; the message says how to name one.
    #[error("{0}")]
    NoWriter(String),
    /// The writer model failed (unreachable, an error status, too slow).
    #[error("the writer model {model}: {message}")]
    Model { model: String, message: String },
}

impl From<InstructError> for crate::Error {
    fn from(e: InstructError) -> Self {
        match e {
            InstructError::Pack(p) => p.into(),
            e => crate::Error::Invalid(crate::Invalid::Other(e.to_string())),
        }
    }
}

/// The model that writes instructions.
#[derive(Debug, Clone)]
pub struct Writer {
    provider: Provider,
    /// The model's name at its provider.
    pub model: String,
    pub lane: Lane,
    timeout: Duration,
}

impl Writer {
    /// The writer: `requested` when given (a cloud model only then), else
    /// the configuration's default model when its provider is local. A
    /// cloud default is refused: the code would leave the machine without
    /// the user having named where it goes.
    pub async fn choose(config: &Config, requested: Option<&str>) -> Result<Writer, InstructError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(
                config.limits.connect_timeout_secs.max(1),
            ))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| InstructError::NoWriter(format!("no HTTP client: {e}")))?;
        let providers: Vec<Provider> = config
            .providers
            .iter()
            .map(|p| Provider::new(p.clone(), client.clone()))
            .collect();
        let (name, named) = match (requested, &config.default_model) {
            (Some(m), _) => (m.to_string(), true),
            (None, Some(m)) => (m.clone(), false),
            (None, None) => {
                return Err(InstructError::NoWriter(
                    "no writer model: pass --writer MODEL or set default_model (a local one) in arena.toml".into(),
                ))
            }
        };
        let catalog = Catalog::discover(&providers, DISCOVERY).await;
        let resolved = catalog
            .resolve(&name)
            .map_err(|e| InstructError::NoWriter(format!("writer model `{name}`: {e}")))?;
        if resolved.lane != Lane::Local && !named {
            return Err(InstructError::NoWriter(format!(
                "the default model `{name}` is a cloud model: writing would send your code off \
                 this machine. Name a local writer with --writer MODEL, or name this one with \
                 --writer {name} if you mean it"
            )));
        }
        let provider = providers
            .into_iter()
            .find(|p| p.config.name == resolved.provider)
            .ok_or_else(|| {
                InstructError::NoWriter(format!("no provider `{}`", resolved.provider))
            })?;
        Ok(Writer {
            provider,
            model: resolved.model,
            lane: resolved.lane,
            timeout: Duration::from_secs(config.limits.max_duration_secs.max(1)),
        })
    }

    /// `provider/model`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.provider.config.name, self.model)
    }

    /// The code leaves this machine (a cloud provider).
    pub fn leaves_the_machine(&self) -> bool {
        self.lane != Lane::Local
    }

    async fn ask(&self, prompt: String, history: Vec<Exchange>) -> Result<String, InstructError> {
        let request = ChatRequest {
            model: self.model.clone(),
            system: Some(instruction::WRITER_SYSTEM.to_string()),
            history,
            prompt,
            temperature: Some(0.2),
            max_tokens: Some(2048),
            ..ChatRequest::default()
        };
        let failed = |message: String| InstructError::Model {
            model: self.name(),
            message,
        };
        let answer = async {
            let mut stream = self
                .provider
                .stream_chat(&request)
                .await
                .map_err(|e| failed(e.to_string()))?;
            let mut text = String::new();
            while let Some(chunk) = stream.next().await {
                if let Chunk::Content(piece) = chunk.map_err(|e| failed(e.to_string()))? {
                    text.push_str(&piece);
                    if text.len() > MAX_ANSWER_BYTES {
                        return Err(failed(format!(
                            "its answer ran past {MAX_ANSWER_BYTES} bytes"
                        )));
                    }
                }
            }
            Ok(text)
        };
        tokio::time::timeout(self.timeout, answer)
            .await
            .map_err(|_| failed(format!("no answer within {} s", self.timeout.as_secs())))?
    }
}

/// What to write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Only these tasks (written again whatever their state); otherwise
    /// every validated task whose instruction Arena has not written yet.
    pub tasks: Option<Vec<String>>,
}

/// What happened to one task.
#[derive(Debug, Clone, Serialize)]
pub struct TaskWritten {
    pub id: String,
    /// `pending` (written, waiting for review) or `dropped`.
    pub state: ReviewState,
    /// Why it was dropped, or why the first draft was rewritten.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Answers asked of the model (1, or 2 after a rejection).
    pub attempts: u32,
    /// Names the interface section gives.
    pub interface: Vec<String>,
}

/// The writer's run over a pack.
#[derive(Debug, Clone, Serialize)]
pub struct WriteReport {
    pub pack: PathBuf,
    pub writer: String,
    /// The code went to a cloud provider.
    pub left_the_machine: bool,
    pub tasks: Vec<TaskWritten>,
    /// Tasks left as they were, with why (not validated, not repo-native,
    /// already written, the model failed on it).
    pub skipped: Vec<(String, String)>,
}

impl WriteReport {
    pub fn count(&self, state: ReviewState) -> usize {
        self.tasks.iter().filter(|t| t.state == state).count()
    }
}

/// A task's review state (`None`: Arena did not write its instruction).
pub fn review_state(task: &Task) -> Option<(ReviewState, Option<String>)> {
    instruction::review_of(&task.meta.other)
}

/// How many of `pack`'s tasks are in each review state (tasks whose
/// instruction Arena did not write are in none): for the yield table's
/// "instructions approved".
pub fn count_states(pack: &Pack) -> std::collections::BTreeMap<ReviewState, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for task in &pack.tasks {
        if let Some((state, _)) = review_state(task) {
            *counts.entry(state).or_insert(0) += 1;
        }
    }
    counts
}

/// Whether `task` can get a written instruction (a validated repo-native
/// task with its gold patch and test patch).
pub fn writable(task: &Task) -> bool {
    unwritable(task).is_none()
}

/// Why `task` cannot get a written instruction, if it cannot.
fn unwritable(task: &Task) -> Option<&'static str> {
    if task.kind() != TaskKind::Repo {
        return Some("not a repo-native task");
    }
    if task
        .lists
        .as_ref()
        .is_none_or(|l| l.fail_to_pass.is_empty())
    {
        return Some("not validated: tests.json lists no FAIL_TO_PASS test");
    }
    if !matches!(task.solution, Solution::GoldPatch(_)) || task.test_patch.is_none() {
        return Some("it has no gold patch and test patch");
    }
    None
}

/// Writes the instructions of `pack`'s validated tasks with `writer`.
pub async fn write_instructions(
    pack: &Path,
    writer: &Writer,
    options: &WriteOptions,
) -> Result<WriteReport, InstructError> {
    let dir = pack.to_path_buf();
    let loaded = tokio::task::spawn_blocking(move || Pack::load(&dir))
        .await
        .map_err(|e| PackError::Usage(format!("reading the pack stopped: {e}")))??;
    if let Some(wanted) = &options.tasks {
        for id in wanted {
            if !loaded.tasks.iter().any(|t| t.id.as_str() == id) {
                return Err(PackError::Usage(format!(
                    "the pack has no task `{}`",
                    super::printable(id)
                ))
                .into());
            }
        }
    }
    let mut report = WriteReport {
        pack: loaded.root.clone(),
        writer: writer.name(),
        left_the_machine: writer.leaves_the_machine(),
        tasks: Vec::new(),
        skipped: Vec::new(),
    };
    for task in &loaded.tasks {
        let id = task.id.as_str().to_string();
        let named = options.tasks.as_ref().map(|w| w.contains(&id));
        if named == Some(false) {
            continue;
        }
        if let Some(why) = unwritable(task) {
            report.skipped.push((id, why.into()));
            continue;
        }
        if named.is_none() {
            if let Some((state, _)) = review_state(task) {
                report
                    .skipped
                    .push((id, format!("already written ({})", state.as_str())));
                continue;
            }
        }
        match write_one(task, writer).await {
            Ok(done) => report.tasks.push(done),
            Err(e @ InstructError::Model { .. }) => {
                tracing::warn!(task = %id, error = %e, "the writer failed on a task");
                report.skipped.push((id, e.to_string()));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}

fn read_beside(task: &Task, rel: &str) -> Result<String, PackError> {
    Ok(read::read_text(&task.dir, rel, read::MAX_PATCH)?.unwrap_or_default())
}

/// Writes one task's instruction: asks, audits, asks once more with the
/// reasons, then writes it (pending review) or drops the task.
async fn write_one(task: &Task, writer: &Writer) -> Result<TaskWritten, InstructError> {
    let Solution::GoldPatch(gold) = &task.solution else {
        return Err(PackError::Usage("no gold patch".into()).into());
    };
    let test = task.test_patch.clone().unwrap_or_default();
    let mut message = read_beside(task, instruction::COMMIT_MESSAGE_FILE)?;
    if message.trim().is_empty() {
        message = task
            .meta
            .swebench
            .as_ref()
            .and_then(|s| s.get("mined_subject"))
            .and_then(toml::Value::as_str)
            .unwrap_or_default()
            .to_string();
    }
    let red = read_beside(task, instruction::RED_OUTPUT_FILE)?;
    let items = instruction::interface(gold, &test);
    let prompt = instruction::writer_prompt(&WriterInput {
        commit_message: &message,
        test_patch: &test,
        red_output: &red,
        interface: &items,
    });
    let judge = |behaviour: &str| -> Vec<String> {
        if behaviour.trim().is_empty() {
            return vec!["it is empty".into()];
        }
        let mut leaks = instruction::audit(behaviour, gold, &test);
        // The interface section is Arena's, built from names the tests
        // call; the whole instruction still holds no gold line.
        let whole = instruction::compose(behaviour, &items);
        for leak in instruction::audit(&whole, gold, &test) {
            if matches!(leak, Leak::GoldLine(_)) && !leaks.contains(&leak) {
                leaks.push(leak);
            }
        }
        leaks.iter().map(ToString::to_string).collect()
    };
    let first = instruction::clean_answer(&writer.ask(prompt.clone(), Vec::new()).await?);
    let mut reasons = judge(&first);
    let mut attempts = 1;
    let mut behaviour = first.clone();
    let mut rewritten_because = None;
    if !reasons.is_empty() {
        tracing::info!(task = %task.id.as_str(), reasons = ?reasons, "instruction rejected; asking once more");
        let leaks_text = reasons.join("; ");
        let again = instruction::rewrite_prompt(&first, &reasons);
        let history = vec![Exchange {
            user: prompt,
            assistant: first.clone(),
        }];
        behaviour = instruction::clean_answer(&writer.ask(again, history).await?);
        attempts = 2;
        rewritten_because = Some(format!("rewritten once: {leaks_text}"));
        reasons = judge(&behaviour);
    }
    let names = items.iter().map(|i| i.name.clone()).collect();
    let toml_path = task.dir.join(TASK_FILE);
    if !reasons.is_empty() {
        let reason = format!(
            "the audit rejected the instruction twice: {}",
            reasons.join("; ")
        );
        set_state(
            task,
            ReviewState::Dropped,
            Some(&reason),
            Some(&writer.name()),
        )?;
        return Ok(TaskWritten {
            id: task.id.as_str().to_string(),
            state: ReviewState::Dropped,
            reason: Some(reason),
            attempts,
            interface: names,
        });
    }
    let text = instruction::compose(&behaviour, &items);
    replace(&task.dir.join(INSTRUCTION_FILE), text.as_bytes())?;
    set_state(task, ReviewState::Pending, None, Some(&writer.name()))?;
    tracing::debug!(task = %task.id.as_str(), file = %toml_path.display(), "instruction written");
    Ok(TaskWritten {
        id: task.id.as_str().to_string(),
        state: ReviewState::Pending,
        reason: rewritten_because,
        attempts,
        interface: names,
    })
}

/// Sets a task's review state in its task.toml (the rest of the file
/// kept as it is).
pub fn set_state(
    task: &Task,
    state: ReviewState,
    reason: Option<&str>,
    writer: Option<&str>,
) -> Result<(), PackError> {
    let text = read::read_text(&task.dir, TASK_FILE, read::MAX_TOML)?.ok_or_else(|| {
        PackError::Refused {
            path: task.dir.join(TASK_FILE),
            message: "is missing".into(),
        }
    })?;
    let file = format!("tasks/{}/{TASK_FILE}", task.id.as_str());
    let new = instruction::set_review(&file, &text, state, reason, writer)?;
    replace(&task.dir.join(TASK_FILE), new.as_bytes())
}

/// Replaces the file at `path` with `bytes` (a new file renamed over it:
/// a link there is replaced, never followed).
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), PackError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.arena-new"));
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(PackError::Io { path: temp, source }),
    }
    read::write_file(&temp, bytes, false)?;
    std::fs::rename(&temp, path).map_err(|source| PackError::Io {
        path: path.to_path_buf(),
        source,
    })
}
