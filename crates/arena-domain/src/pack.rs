//! Task packs as data: a pack's `pack.toml`, a task's `task.toml` and its
//! `[metadata.arena]` table, task ids, SWE-bench instances mapped to tasks
//! and back, the test command a project's files call for, and the verifier
//! script Arena writes for a repo-native task. Reading and writing the
//! folders is `arena_core::pack`'s job; see `docs/packs.md` for the format.
//!
//! A pack is a folder:
//!
//! ```text
//! pack.toml                 name, version, defaults, the repository's roots
//! repo.bundle               (optional) the project as a git bundle
//! tasks/<id>/instruction.md what the agent sees
//! tasks/<id>/task.toml      Harbor's tables + [metadata.arena]
//! tasks/<id>/tests/…        test.sh, test.patch, tests.json (hidden)
//! tasks/<id>/solution/…     solve.sh or gold.patch (hidden)
//! ```

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::test_report::TestLists;

/// The pack's own file, at its root.
pub const PACK_FILE: &str = "pack.toml";
/// The folder holding one folder per task.
pub const TASKS_DIR: &str = "tasks";
/// What the agent sees.
pub const INSTRUCTION_FILE: &str = "instruction.md";
/// Harbor's configuration, plus `[metadata.arena]`.
pub const TASK_FILE: &str = "task.toml";
/// The verifier's folder (never shown to an agent).
pub const TESTS_DIR: &str = "tests";
/// The verifier's entry point.
pub const TEST_SCRIPT: &str = "tests/test.sh";
/// The hidden tests of a repo-native task, as a patch on the base.
pub const TEST_PATCH: &str = "tests/test.patch";
/// The tests that decide a repo-native task ([`TestLists`]).
pub const TEST_LISTS: &str = "tests/tests.json";
/// The reference solution's folder (never shown to an agent).
pub const SOLUTION_DIR: &str = "solution";
/// A reference solution as a script (Harbor's oracle).
pub const SOLVE_SCRIPT: &str = "solution/solve.sh";
/// A reference solution as a patch on the base.
pub const GOLD_PATCH: &str = "solution/gold.patch";
/// A Harbor task's container, when it has one.
pub const ENVIRONMENT_DIR: &str = "environment";
/// The file name of a pack's bundled repository.
pub const DEFAULT_BUNDLE: &str = "repo.bundle";
/// Runs per task and contestant when neither the pack nor the user says.
pub const DEFAULT_RUNS: u32 = 5;
/// The longest task id.
pub const MAX_ID_LEN: usize = 128;

/// What is wrong with a pack's data. Each message names the file and says
/// how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PackFormatError {
    /// A TOML file that does not parse or has a wrong field.
    #[error("{file}: {message}")]
    File { file: String, message: String },
    /// A task id that is not a safe folder name.
    #[error("task id `{id}` {why}; a task id is 1 to 128 letters, digits, `.`, `_` or `-`, starting with a letter or digit")]
    TaskId { id: String, why: &'static str },
    /// A SWE-bench instance that cannot become a task.
    #[error("SWE-bench instance {at}: {message}")]
    Instance { at: String, message: String },
}

fn file_error(file: &str, message: impl Into<String>) -> PackFormatError {
    PackFormatError::File {
        file: file.to_string(),
        message: message.into(),
    }
}

// ---------------------------------------------------------------- pack.toml

/// `pack.toml`. Keys Arena does not know are kept (in `other`) and written
/// back as they were, so a pack made by a newer Arena survives an older
/// one; `arena pack show` lists them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackManifest {
    pub name: String,
    #[serde(default = "default_version")]
    pub version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub defaults: PackDefaults,
    /// The repository the pack's repo-native tasks belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<RepositoryRef>,
    #[serde(flatten)]
    pub other: toml::Table,
}

fn default_version() -> String {
    "1".to_string()
}

/// `[defaults]`: what a run uses unless told otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackDefaults {
    #[serde(default = "default_runs")]
    pub runs: u32,
    /// A run's time limit (the agent's), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_secs: Option<u64>,
    #[serde(flatten)]
    pub other: toml::Table,
}

fn default_runs() -> u32 {
    DEFAULT_RUNS
}

impl Default for PackDefaults {
    fn default() -> Self {
        PackDefaults {
            runs: DEFAULT_RUNS,
            time_limit_secs: None,
            other: toml::Table::new(),
        }
    }
}

/// `[repository]`: which repository the tasks' commits belong to, by the
/// ids of its root commits (never a path: a pack moves between machines),
/// and the bundle that carries it when the pack does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepositoryRef {
    /// The root commits (no parent) the bases descend from, sorted.
    pub roots: Vec<String>,
    /// A git bundle of the repository inside the pack (a file name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    #[serde(flatten)]
    pub other: toml::Table,
}

impl RepositoryRef {
    /// Whether `roots` (a repository's root commits) is this repository:
    /// it has every root the pack names.
    pub fn matches(&self, roots: &[String]) -> bool {
        self.roots.iter().all(|r| roots.contains(r))
    }
}

impl PackManifest {
    /// Parses and checks `pack.toml`'s text.
    pub fn parse(text: &str) -> Result<PackManifest, PackFormatError> {
        let manifest: PackManifest =
            toml::from_str(text).map_err(|e| file_error(PACK_FILE, toml_message(&e)))?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// The text of `pack.toml`.
    pub fn to_toml(&self) -> Result<String, PackFormatError> {
        toml::to_string(self).map_err(|e| file_error(PACK_FILE, e.to_string()))
    }

    /// Checks the fields a reader relies on.
    pub fn validate(&self) -> Result<(), PackFormatError> {
        let bad = |m: String| Err(file_error(PACK_FILE, m));
        if self.name.trim().is_empty() || self.name.len() > 200 || has_control(&self.name) {
            return bad("`name` must be 1 to 200 printable characters".into());
        }
        if self.version.len() > 64 || has_control(&self.version) {
            return bad("`version` must be at most 64 printable characters".into());
        }
        if !(1..=1000).contains(&self.defaults.runs) {
            return bad(format!(
                "[defaults] runs = {} is out of range; use 1 to 1000",
                self.defaults.runs
            ));
        }
        if let Some(t) = self.defaults.time_limit_secs {
            if !(1..=7 * 86_400).contains(&t) {
                return bad(format!(
                    "[defaults] time_limit_secs = {t} is out of range; use 1 to 604800"
                ));
            }
        }
        if let Some(repo) = &self.repository {
            if repo.roots.is_empty() {
                return bad("[repository] roots is empty; list the repository's root commits (`git rev-list --max-parents=0 HEAD`)".into());
            }
            for root in &repo.roots {
                if !is_commit_id(root) {
                    return bad(format!(
                        "[repository] roots: `{}` is not a full commit id (40 or 64 hex digits)",
                        printable(root)
                    ));
                }
            }
            if let Some(bundle) = &repo.bundle {
                if TaskId::parse(bundle).is_err() {
                    return bad(format!(
                        "[repository] bundle = `{}` must be a file name in the pack's folder (like `repo.bundle`)",
                        printable(bundle)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The keys Arena does not know (kept, not used), as dotted paths.
    pub fn unknown_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.other.keys().cloned().collect();
        keys.extend(self.defaults.other.keys().map(|k| format!("defaults.{k}")));
        if let Some(r) = &self.repository {
            keys.extend(r.other.keys().map(|k| format!("repository.{k}")));
        }
        keys
    }
}

fn toml_message(e: &toml::de::Error) -> String {
    e.to_string().trim_end().replace('\n', " ")
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// `s` with control characters shown as `?`, cut to 80 characters: for
/// quoting a hostile value in a message.
pub fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(80)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// A full commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
pub fn is_commit_id(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

// ---------------------------------------------------------------- task ids

/// A task's id: its folder's name under `tasks/`. Only letters, digits,
/// `.`, `_` and `-`, starting with a letter or digit, at most 128: a name
/// that cannot climb out of `tasks/`, hide (`.x`), or mean something to a
/// shell or to Windows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TaskId(String);

const WINDOWS_NAMES: &[&str] = &[
    "con", "prn", "aux", "nul", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
    "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

impl TaskId {
    /// `id` when it is a safe folder name.
    pub fn parse(id: &str) -> Result<TaskId, PackFormatError> {
        let refuse = |why| {
            Err(PackFormatError::TaskId {
                id: printable(id),
                why,
            })
        };
        if id.is_empty() {
            return refuse("is empty");
        }
        if id.len() > MAX_ID_LEN {
            return refuse("is too long");
        }
        if !id.as_bytes()[0].is_ascii_alphanumeric() {
            return refuse("does not start with a letter or digit");
        }
        if !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return refuse("has a character other than letters, digits, `.`, `_` and `-`");
        }
        if id.ends_with('.') {
            return refuse("ends with `.`");
        }
        let stem = id.split('.').next().unwrap_or(id).to_ascii_lowercase();
        if WINDOWS_NAMES.contains(&stem.as_str()) {
            return refuse("is a device name on Windows");
        }
        Ok(TaskId(id.to_string()))
    }

    /// A safe id made from `raw` (a SWE-bench `instance_id`, a folder's
    /// name): other characters become `-`, a leading one that is not a
    /// letter or digit gets `t` before it, and an id already in `taken`
    /// gets `-2`, `-3`, … after it.
    pub fn sanitize(raw: &str, taken: &BTreeSet<TaskId>) -> TaskId {
        let mut s: String = raw
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        while s.ends_with('.') {
            s.pop();
        }
        if !s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric) {
            s.insert(0, 't');
        }
        s.truncate(MAX_ID_LEN - 8);
        if TaskId::parse(&s).is_err() {
            s = format!("t-{s}");
        }
        let mut id = s.clone();
        let mut n = 2;
        while taken.contains(&TaskId(id.clone())) || TaskId::parse(&id).is_err() {
            id = format!("{s}-{n}");
            n += 1;
        }
        TaskId(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for TaskId {
    type Error = PackFormatError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        TaskId::parse(&s)
    }
}

impl From<TaskId> for String {
    fn from(id: TaskId) -> String {
        id.0
    }
}

// ---------------------------------------------------------------- task.toml

/// How a task is run and judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// On the pack's project at a base commit: the hidden test patch is
    /// applied after the agent and `tests.json` decides.
    Repo,
    /// A Harbor/Terminal-Bench task as it came: its `tests/test.sh` and
    /// reward decide, in its own environment.
    Harbor,
}

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Repo => "repo",
            TaskKind::Harbor => "harbor",
        }
    }
}

/// `[metadata.arena]` of a task.toml. A task.toml without it is a Harbor
/// task as Harbor wrote it ([`ArenaMeta::harbor`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArenaMeta {
    pub kind: TaskKind,
    /// The commit the agent starts from (repo-native tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_commit: Option<String>,
    /// The environment key of the base's tree (its lockfiles), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_key: Option<String>,
    /// The project's test command, run from the tree's root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_command: Option<String>,
    /// When the task's change was made (SWE-bench's `created_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed_at: Option<String>,
    /// Its tests need a container (Docker or Podman).
    #[serde(default, skip_serializing_if = "is_false")]
    pub needs_docker: bool,
    /// The SWE-bench fields no other place holds, so export gives them
    /// back: strings as they were, other values as JSON text under `json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swebench: Option<toml::Table>,
    #[serde(flatten)]
    pub other: toml::Table,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl ArenaMeta {
    /// What a task.toml without `[metadata.arena]` means.
    pub fn harbor(needs_docker: bool) -> ArenaMeta {
        ArenaMeta {
            kind: TaskKind::Harbor,
            base_commit: None,
            environment_key: None,
            test_command: None,
            committed_at: None,
            needs_docker,
            swebench: None,
            other: toml::Table::new(),
        }
    }
}

/// A task's `task.toml`: its text as it is (written back byte for byte)
/// and what Arena reads from it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskToml {
    pub text: String,
    /// `[metadata.arena]`, when the file has one.
    pub arena: Option<ArenaMeta>,
    /// `[agent] timeout_sec`.
    pub agent_timeout_sec: Option<f64>,
    /// `[verifier] timeout_sec`.
    pub verifier_timeout_sec: Option<f64>,
}

impl TaskToml {
    /// Parses a task.toml (`file` names it in errors).
    pub fn parse(file: &str, text: &str) -> Result<TaskToml, PackFormatError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| file_error(file, toml_message(&e)))?;
        let section = |name: &str| table.get(name).and_then(toml::Value::as_table);
        let timeout = |name: &str| -> Result<Option<f64>, PackFormatError> {
            match section(name).and_then(|t| t.get("timeout_sec")) {
                None => Ok(None),
                Some(toml::Value::Float(f)) if *f > 0.0 => Ok(Some(*f)),
                Some(toml::Value::Integer(i)) if *i > 0 => Ok(Some(*i as f64)),
                Some(_) => Err(file_error(
                    file,
                    format!("[{name}] timeout_sec must be a positive number of seconds"),
                )),
            }
        };
        let arena = match section("metadata").and_then(|m| m.get("arena")) {
            None => None,
            Some(value) => {
                let meta: ArenaMeta = value.clone().try_into().map_err(|e: toml::de::Error| {
                    file_error(file, format!("[metadata.arena]: {}", toml_message(&e)))
                })?;
                check_meta(file, &meta)?;
                Some(meta)
            }
        };
        Ok(TaskToml {
            text: text.to_string(),
            arena,
            agent_timeout_sec: timeout("agent")?,
            verifier_timeout_sec: timeout("verifier")?,
        })
    }
}

fn check_meta(file: &str, meta: &ArenaMeta) -> Result<(), PackFormatError> {
    let bad = |m: &str| Err(file_error(file, format!("[metadata.arena] {m}")));
    if let Some(base) = &meta.base_commit {
        if !is_commit_id(base) {
            return bad("base_commit must be a full commit id (40 or 64 lowercase hex digits)");
        }
    }
    if let Some(cmd) = &meta.test_command {
        if cmd.trim().is_empty() || cmd.contains('\0') || cmd.len() > 4096 {
            return bad("test_command must be a non-empty command of at most 4096 bytes");
        }
    }
    if meta.kind == TaskKind::Repo {
        if meta.base_commit.is_none() {
            return bad("base_commit is missing: a repo-native task starts from a commit");
        }
        if meta.test_command.is_none() {
            return bad("test_command is missing: a repo-native task says how its tests run");
        }
    }
    Ok(())
}

/// The task.toml Arena writes for a repo-native task: Harbor's tables with
/// the time limits it knows, and `[metadata.arena]`.
pub fn repo_task_toml(
    meta: &ArenaMeta,
    agent_timeout_sec: Option<f64>,
    verifier_timeout_sec: Option<f64>,
) -> Result<String, PackFormatError> {
    #[derive(Serialize)]
    struct Timeout {
        #[serde(skip_serializing_if = "Option::is_none")]
        timeout_sec: Option<f64>,
    }
    #[derive(Serialize)]
    struct Metadata<'a> {
        arena: &'a ArenaMeta,
    }
    #[derive(Serialize)]
    struct File<'a> {
        version: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        verifier: Option<Timeout>,
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<Timeout>,
        metadata: Metadata<'a>,
    }
    let timeout = |t: Option<f64>| {
        t.map(|t| Timeout {
            timeout_sec: Some(t),
        })
    };
    let file = File {
        version: "1.0",
        verifier: timeout(verifier_timeout_sec),
        agent: timeout(agent_timeout_sec),
        metadata: Metadata { arena: meta },
    };
    let text = toml::to_string(&file).map_err(|e| file_error(TASK_FILE, e.to_string()))?;
    // Checked the way a reader will check it.
    TaskToml::parse(TASK_FILE, &text)?;
    Ok(text)
}

// ---------------------------------------------------------------- SWE-bench

/// A repo-native task's content, as import writes it and export reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RepoTaskContent {
    pub id: TaskId,
    pub instruction: String,
    pub test_patch: String,
    pub gold_patch: String,
    pub lists: TestLists,
    pub meta: ArenaMeta,
}

/// The SWE-bench fields that go elsewhere than `[metadata.arena.swebench]`.
const MAPPED: &[&str] = &[
    "base_commit",
    "problem_statement",
    "patch",
    "test_patch",
    "created_at",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
];

/// A list field (`FAIL_TO_PASS`, `PASS_TO_PASS`): the dataset keeps them
/// as JSON text of a list; a list is taken too.
fn test_list(at: &str, field: &str, value: Option<&Value>) -> Result<Vec<String>, PackFormatError> {
    let bad = |m: String| PackFormatError::Instance {
        at: at.to_string(),
        message: format!("{field} {m}"),
    };
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(text)) => serde_json::from_str::<Value>(text)
            .map_err(|e| bad(format!("is text but not a JSON list: {e}")))?,
        Some(v) => v.clone(),
    };
    let Value::Array(items) = list else {
        return Err(bad("must be a list of test names (or its JSON text)".into()));
    };
    items
        .into_iter()
        .map(|v| match v {
            Value::String(s) => Ok(s),
            _ => Err(bad("must hold test names (strings) only".into())),
        })
        .collect()
}

/// Maps one SWE-bench instance to a task, field by field:
/// `problem_statement` → instruction.md, `test_patch` → tests/test.patch,
/// `patch` → solution/gold.patch, `FAIL_TO_PASS`/`PASS_TO_PASS` →
/// tests/tests.json, `base_commit`, `created_at` → `committed_at`,
/// `instance_id` → the id (made safe; the original kept), everything else
/// into `[metadata.arena.swebench]`. `at` names the instance in errors (a
/// line number); `taken` holds the ids already used.
pub fn task_from_instance(
    at: &str,
    instance: &Map<String, Value>,
    test_command: &str,
    taken: &BTreeSet<TaskId>,
) -> Result<RepoTaskContent, PackFormatError> {
    let bad = |m: String| PackFormatError::Instance {
        at: at.to_string(),
        message: m,
    };
    let text = |field: &str| -> Result<String, PackFormatError> {
        match instance.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(bad(format!("`{field}` must be text"))),
            None => Err(bad(format!("`{field}` is missing"))),
        }
    };
    let instance_id = text("instance_id")?;
    let base_commit = text("base_commit")?;
    if !is_commit_id(&base_commit) {
        return Err(bad(format!(
            "base_commit `{}` is not a full commit id",
            printable(&base_commit)
        )));
    }
    let committed_at = match instance.get("created_at") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad("`created_at` must be text".into())),
    };
    let lists = TestLists {
        fail_to_pass: test_list(at, "FAIL_TO_PASS", instance.get("FAIL_TO_PASS"))?,
        pass_to_pass: test_list(at, "PASS_TO_PASS", instance.get("PASS_TO_PASS"))?,
    };
    let mut swebench = toml::Table::new();
    let mut json = toml::Table::new();
    for (key, value) in instance {
        if MAPPED.contains(&key.as_str()) && key != "FAIL_TO_PASS" && key != "PASS_TO_PASS" {
            // created_at: `null` must come back as null.
            if !(key == "created_at" && value.is_null()) {
                continue;
            }
        }
        match value {
            // The lists' text as the dataset wrote it: given back when the
            // lists are unchanged.
            Value::String(s) => {
                swebench.insert(key.clone(), toml::Value::String(s.clone()));
            }
            v if key == "FAIL_TO_PASS" || key == "PASS_TO_PASS" => {
                // A list given as a list: say so, the lists are in tests.json.
                if v.is_array() {
                    json.insert(key.clone(), toml::Value::String("list".into()));
                } else {
                    json.insert(key.clone(), toml::Value::String(v.to_string()));
                }
            }
            v => {
                json.insert(key.clone(), toml::Value::String(v.to_string()));
            }
        }
    }
    if !json.is_empty() {
        swebench.insert("json".into(), toml::Value::Table(json));
    }
    let id = TaskId::sanitize(&instance_id, taken);
    Ok(RepoTaskContent {
        id,
        instruction: text("problem_statement")?,
        test_patch: text("test_patch")?,
        gold_patch: text("patch")?,
        lists,
        meta: ArenaMeta {
            kind: TaskKind::Repo,
            base_commit: Some(base_commit),
            environment_key: None,
            test_command: Some(test_command.to_string()),
            committed_at,
            needs_docker: false,
            swebench: Some(swebench),
            other: toml::Table::new(),
        },
    })
}

/// The SWE-bench instance of a repo-native task: the reverse of
/// [`task_from_instance`]. A task that did not come from SWE-bench gets
/// its id as `instance_id`, `repo` (the pack's name), and the lists as JSON
/// text, the dataset's form.
pub fn instance_from_task(task: &RepoTaskContent, repo: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let kept = task.meta.swebench.clone().unwrap_or_default();
    let json = kept
        .get("json")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    for (key, value) in &kept {
        if key == "json" {
            continue;
        }
        if let toml::Value::String(s) = value {
            out.insert(key.clone(), Value::String(s.clone()));
        }
    }
    for (key, value) in &json {
        if key == "FAIL_TO_PASS" || key == "PASS_TO_PASS" {
            continue;
        }
        if let Some(v) = value.as_str().and_then(|s| serde_json::from_str(s).ok()) {
            out.insert(key.clone(), v);
        }
    }
    out.entry("instance_id")
        .or_insert_with(|| Value::String(task.id.to_string()));
    out.entry("repo")
        .or_insert_with(|| Value::String(repo.to_string()));
    if let Some(base) = &task.meta.base_commit {
        out.insert("base_commit".into(), Value::String(base.clone()));
    }
    out.insert("patch".into(), Value::String(task.gold_patch.clone()));
    out.insert("test_patch".into(), Value::String(task.test_patch.clone()));
    out.insert(
        "problem_statement".into(),
        Value::String(task.instruction.clone()),
    );
    if let Some(at) = &task.meta.committed_at {
        out.insert("created_at".into(), Value::String(at.clone()));
    }
    for (field, list) in [
        ("FAIL_TO_PASS", &task.lists.fail_to_pass),
        ("PASS_TO_PASS", &task.lists.pass_to_pass),
    ] {
        let as_list = json.get(field).and_then(toml::Value::as_str) == Some("list");
        let value = if as_list {
            Value::Array(list.iter().cloned().map(Value::String).collect())
        } else {
            // The original text when it still says the same lists.
            match kept.get(field).and_then(toml::Value::as_str) {
                Some(text)
                    if serde_json::from_str::<Vec<String>>(text).ok().as_ref() == Some(list) =>
                {
                    Value::String(text.to_string())
                }
                _ => Value::String(python_json_list(list)),
            }
        };
        out.insert(field.into(), value);
    }
    out
}

/// A list of names as Python's `json.dumps` writes it (the dataset's form):
/// `", "` between items, non-ASCII escaped.
pub fn python_json_list(list: &[String]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|s| {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                        let mut buf = [0u16; 2];
                        for unit in c.encode_utf16(&mut buf) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        })
        .collect();
    format!("[{}]", items.join(", "))
}

// ---------------------------------------------------------------- test command

/// A test command found from a project's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DetectedCommand {
    pub command: String,
    /// `python`, `rust`, `go`, `node`.
    pub ecosystem: &'static str,
    /// Why: the file that said so.
    pub reason: String,
}

/// The test command a project's files call for, from the names at its
/// root (`root_files`) and the text of some of them (`read`): Cargo.toml →
/// `cargo test`; go.mod → `go test ./...`; package.json → vitest, jest or
/// its `test` script; Python → pytest where the files mention it, else
/// unittest. `None` when nothing says.
pub fn detect_test_command(
    root_files: &[String],
    read: &dyn Fn(&str) -> Option<String>,
) -> Option<DetectedCommand> {
    let has = |name: &str| root_files.iter().any(|f| f == name);
    let found = |command: &str, ecosystem: &'static str, reason: String| {
        Some(DetectedCommand {
            command: command.to_string(),
            ecosystem,
            reason,
        })
    };
    if has("Cargo.toml") {
        return found("cargo test", "rust", "Cargo.toml".into());
    }
    if has("go.mod") {
        return found("go test ./...", "go", "go.mod".into());
    }
    if has("package.json") {
        if let Some(pkg) = read("package.json").and_then(|t| serde_json::from_str::<Value>(&t).ok())
        {
            let depends = |name: &str| {
                ["dependencies", "devDependencies"]
                    .iter()
                    .any(|k| pkg.get(k).and_then(|d| d.get(name)).is_some())
            };
            if depends("vitest") {
                return found(
                    "npx vitest run",
                    "node",
                    "package.json depends on vitest".into(),
                );
            }
            if depends("jest") {
                return found("npx jest", "node", "package.json depends on jest".into());
            }
            let script = pkg
                .get("scripts")
                .and_then(|s| s.get("test"))
                .and_then(Value::as_str);
            if let Some(script) = script {
                if !script.contains("no test specified") {
                    return found("npm test", "node", "package.json has a test script".into());
                }
            }
        }
    }
    let python_files = [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "tox.ini",
        "pytest.ini",
        "conftest.py",
        "requirements.txt",
        "requirements-dev.txt",
    ];
    let pytest_reason = python_files.iter().find(|name| {
        has(name)
            && match **name {
                "pytest.ini" | "conftest.py" => true,
                _ => read(name).is_some_and(|t| t.contains("pytest")),
            }
    });
    if let Some(name) = pytest_reason {
        return found(
            "python3 -m pytest",
            "python",
            format!("{name} mentions pytest"),
        );
    }
    let python = python_files
        .iter()
        .find(|n| has(n))
        .map(|n| n.to_string())
        .or_else(|| root_files.iter().find(|f| f.ends_with(".py")).cloned());
    if let Some(name) = python {
        return found(
            "python3 -m unittest",
            "python",
            format!("{name}: Python, no mention of pytest"),
        );
    }
    None
}

// ---------------------------------------------------------------- verifier

/// The environment variable naming the folder a verifier writes its
/// reward and report into (`/logs/verifier` in Harbor).
pub const VERIFIER_LOGS_VAR: &str = "ARENA_VERIFIER_LOGS";

/// `tests/test.sh` for a repo-native task: runs `test_command` from the
/// tree's root the way Arena's verifier does
/// ([`report_command`](crate::test_report::report_command): only the listed
/// tests where the runner can select them, a machine-readable report into
/// the logs folder), and writes `reward.txt` (1 when it exits 0, else 0)
/// and `reward.json` into `$ARENA_VERIFIER_LOGS` (Harbor's `/logs/verifier`
/// when that is unset). Arena grades from the report and tests.json; the
/// reward is for Harbor-compatible runners.
pub fn verifier_script(test_command: &str, lists: &TestLists) -> String {
    use crate::test_report::{report_command, Ecosystem};
    let tests: Vec<String> = lists
        .fail_to_pass
        .iter()
        .chain(&lists.pass_to_pass)
        .cloned()
        .collect();
    let plan = report_command(
        test_command,
        Ecosystem::detect(test_command),
        &tests,
        VERIFIER_LOGS_VAR,
    );
    // In a subshell: the plan may end with its own `exit`.
    let command = plan.command.trim_end();
    format!(
        r#"#!/bin/sh
# The verifier of a repo-native task, written by Arena: it runs the
# project's tests on the tree (with tests/test.patch applied), leaves their
# report in the logs folder, and writes the reward for Harbor-compatible
# runners. Arena itself grades from the report and tests/tests.json.
{VERIFIER_LOGS_VAR}="${{{VERIFIER_LOGS_VAR}:-/logs/verifier}}"
export {VERIFIER_LOGS_VAR}
logs="${VERIFIER_LOGS_VAR}"
mkdir -p "$logs"
(
{command}
)
status=$?
if [ "$status" -eq 0 ]; then reward=1; else reward=0; fi
printf '%s\n' "$reward" > "$logs/reward.txt"
printf '{{"reward": %s, "exit_code": %s}}\n' "$reward" "$status" > "$logs/reward.json"
exit "$status"
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_task_ids_are_refused() {
        for bad in [
            "", ".", "..", "../x", "a/b", "a\\b", ".hidden", "-rf", "a b", "con", "NUL.txt", "x.",
            "a\0b", "ü",
        ] {
            assert!(TaskId::parse(bad).is_err(), "{bad:?} was taken");
        }
        let long = "a".repeat(129);
        assert!(TaskId::parse(&long).is_err());
        for good in [
            "django__django-11099",
            "add-median",
            "a.b_c-1",
            &"a".repeat(128),
        ] {
            assert!(TaskId::parse(good).is_ok(), "{good:?} was refused");
        }
    }

    #[test]
    fn sanitized_ids_are_safe_and_distinct() {
        let mut taken = BTreeSet::new();
        for raw in [
            "../etc/passwd",
            "../etc/passwd",
            "",
            "...",
            "con",
            "a b/c",
            "ü",
        ] {
            let id = TaskId::sanitize(raw, &taken);
            assert!(TaskId::parse(id.as_str()).is_ok(), "{raw:?} gave {id}");
            assert!(taken.insert(id.clone()), "{raw:?} gave a taken id {id}");
        }
        assert_eq!(
            TaskId::sanitize("astropy__astropy-12907", &BTreeSet::new()).as_str(),
            "astropy__astropy-12907"
        );
    }

    #[test]
    fn pack_toml_keeps_unknown_keys_and_checks_fields() {
        let text = r#"
name = "demo"
version = "2"
future = { a = 1 }
[defaults]
runs = 3
time_limit_secs = 600
speed = "fast"
[repository]
roots = ["0123456789abcdef0123456789abcdef01234567"]
bundle = "repo.bundle"
"#;
        let m = PackManifest::parse(text).expect("parses");
        assert_eq!(m.defaults.runs, 3);
        assert_eq!(m.unknown_keys(), vec!["future", "defaults.speed"]);
        let again = PackManifest::parse(&m.to_toml().expect("writes")).expect("parses");
        assert_eq!(again, m);
        for bad in [
            "version = \"1\"",
            "name = \"x\"\n[defaults]\nruns = 0",
            "name = \"x\"\n[repository]\nroots = [\"main\"]",
            "name = \"x\"\n[repository]\nroots = []",
            "name = \"x\"\n[repository]\nroots = [\"0123456789abcdef0123456789abcdef01234567\"]\nbundle = \"../x\"",
        ] {
            let err = PackManifest::parse(bad).expect_err(bad);
            assert!(err.to_string().starts_with("pack.toml: "), "{err}");
        }
        let m = PackManifest::parse("name = \"x\"").expect("parses");
        assert_eq!(m.defaults.runs, DEFAULT_RUNS);
    }

    #[test]
    fn task_toml_reads_harbor_tables_and_arena_metadata() {
        let text = r#"version = "1.0"
[metadata]
difficulty = "easy"
[verifier]
timeout_sec = 120.0
[agent]
timeout_sec = 300
"#;
        let t = TaskToml::parse("tasks/x/task.toml", text).expect("parses");
        assert_eq!(t.arena, None);
        assert_eq!(t.agent_timeout_sec, Some(300.0));
        assert_eq!(t.text, text);
        let missing = format!("{text}[metadata.arena]\nkind = \"repo\"\n");
        let err = TaskToml::parse("tasks/x/task.toml", &missing).expect_err("no base");
        assert!(err.to_string().contains("base_commit is missing"), "{err}");
        let meta = ArenaMeta {
            kind: TaskKind::Repo,
            base_commit: Some("a".repeat(40)),
            environment_key: None,
            test_command: Some("cargo test".into()),
            committed_at: Some("2024-01-02T03:04:05Z".into()),
            needs_docker: false,
            swebench: None,
            other: toml::Table::new(),
        };
        let written = repo_task_toml(&meta, Some(600.0), None).expect("writes");
        let back = TaskToml::parse(TASK_FILE, &written).expect("parses");
        assert_eq!(back.arena, Some(meta));
        assert_eq!(back.agent_timeout_sec, Some(600.0));
    }

    fn instance() -> Map<String, Value> {
        serde_json::from_str(
            r#"{"repo":"o/r","instance_id":"o__r-1","base_commit":"0123456789abcdef0123456789abcdef01234567",
            "patch":"diff --git a/x b/x\n","test_patch":"diff --git a/t b/t\n","problem_statement":"Fix é.\n",
            "hints_text":"","created_at":"2023-01-02T03:04:05Z","version":"1.0",
            "FAIL_TO_PASS":"[\"t::a\", \"t::\u00e9\"]","PASS_TO_PASS":["t::b"],
            "environment_setup_commit":"0123456789abcdef0123456789abcdef01234567",
            "difficulty":{"level":2},"extra":null}"#,
        )
        .expect("json")
    }

    #[test]
    fn a_swe_bench_instance_maps_to_a_task_and_back() {
        let original = instance();
        let task = task_from_instance("line 1", &original, "python3 -m pytest", &BTreeSet::new())
            .expect("maps");
        assert_eq!(task.id.as_str(), "o__r-1");
        assert_eq!(task.instruction, "Fix é.\n");
        assert_eq!(task.lists.fail_to_pass, vec!["t::a", "t::é"]);
        assert_eq!(task.lists.pass_to_pass, vec!["t::b"]);
        assert_eq!(
            task.meta.committed_at.as_deref(),
            Some("2023-01-02T03:04:05Z")
        );
        // Through task.toml's text, as a pack keeps it.
        let text = repo_task_toml(&task.meta, None, None).expect("writes");
        let meta = TaskToml::parse(TASK_FILE, &text)
            .expect("reads")
            .arena
            .expect("arena");
        let back = instance_from_task(&RepoTaskContent { meta, ..task }, "ignored");
        assert_eq!(Value::Object(back), Value::Object(original));
    }

    #[test]
    fn changed_lists_are_written_as_the_dataset_writes_them() {
        let mut task = task_from_instance("l", &instance(), "x", &BTreeSet::new()).expect("maps");
        task.lists.fail_to_pass.push("t::c".into());
        let back = instance_from_task(&task, "r");
        assert_eq!(
            back["FAIL_TO_PASS"],
            Value::String(r#"["t::a", "t::\u00e9", "t::c"]"#.into())
        );
        assert_eq!(back["PASS_TO_PASS"], serde_json::json!(["t::b"]));
    }

    #[test]
    fn bad_instances_are_refused_with_the_field() {
        let mut i = instance();
        i.insert("base_commit".into(), Value::String("HEAD".into()));
        let err = task_from_instance("line 3", &i, "x", &BTreeSet::new()).expect_err("refused");
        assert!(err.to_string().contains("line 3") && err.to_string().contains("base_commit"));
        let mut i = instance();
        i.insert("FAIL_TO_PASS".into(), Value::String("not json".into()));
        let err = task_from_instance("line 4", &i, "x", &BTreeSet::new()).expect_err("refused");
        assert!(err.to_string().contains("FAIL_TO_PASS"), "{err}");
        let mut i = instance();
        i.remove("patch");
        assert!(task_from_instance("l", &i, "x", &BTreeSet::new()).is_err());
    }

    #[test]
    fn test_commands_are_detected_per_ecosystem() {
        let detect = |files: &[&str], text: &'static str| {
            let files: Vec<String> = files.iter().map(|s| s.to_string()).collect();
            detect_test_command(&files, &|_| Some(text.to_string())).map(|d| d.command)
        };
        assert_eq!(
            detect(&["Cargo.toml", "src"], "").as_deref(),
            Some("cargo test")
        );
        assert_eq!(detect(&["go.mod"], "").as_deref(), Some("go test ./..."));
        assert_eq!(
            detect(&["package.json"], r#"{"devDependencies":{"vitest":"1"}}"#).as_deref(),
            Some("npx vitest run")
        );
        assert_eq!(
            detect(&["package.json"], r#"{"devDependencies":{"jest":"1"}}"#).as_deref(),
            Some("npx jest")
        );
        assert_eq!(
            detect(&["package.json"], r#"{"scripts":{"test":"node t.js"}}"#).as_deref(),
            Some("npm test")
        );
        assert_eq!(
            detect(
                &["package.json"],
                r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#
            ),
            None
        );
        assert_eq!(
            detect(&["pyproject.toml"], "[tool.pytest.ini_options]").as_deref(),
            Some("python3 -m pytest")
        );
        assert_eq!(
            detect(&["setup.py", "tests"], "setup()").as_deref(),
            Some("python3 -m unittest")
        );
        assert_eq!(detect(&["README.md"], ""), None);
    }

    #[test]
    fn the_verifier_script_writes_the_reward() {
        let lists = TestLists {
            fail_to_pass: vec!["tests/test_a.py::test_new".into()],
            pass_to_pass: vec!["tests/test_a.py::test_old".into()],
        };
        let s = verifier_script("python3 -m pytest", &lists);
        assert!(s.starts_with("#!/bin/sh\n"));
        assert!(
            s.contains(r#"ARENA_VERIFIER_LOGS="${ARENA_VERIFIER_LOGS:-/logs/verifier}""#),
            "{s}"
        );
        assert!(s.contains(r#"> "$logs/reward.txt""#));
        // The report and the selection of Arena's own verifier.
        assert!(s.contains("--junitxml="), "{s}");
        assert!(s.contains("tests/test_a.py::test_new"), "{s}");
    }
}
