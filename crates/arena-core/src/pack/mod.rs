//! Task packs on disk: reading a pack folder (as hostile input), importing
//! Harbor/Terminal-Bench task folders and SWE-bench instances, exporting
//! back, and the project a pack's tasks run on. The format itself is
//! [`arena_domain::pack`]; `docs/packs.md` writes it down.
//!
//! Everything written is written into a temporary folder beside the
//! destination and renamed into place: a failure leaves nothing half-made.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use arena_domain::instruction;
pub use arena_domain::pack::*;
use arena_domain::test_report::TestLists;
use serde::Serialize;

mod export;
mod import;
pub mod instruct;
pub mod mine;
mod project;
pub mod read;
pub mod review;

pub use export::{export, ExportFormat, ExportReport};
pub use import::{import, ImportOptions, ImportReport, ImportedTask};
pub use project::{materialize_project, repository_root};

/// Why a pack could not be read, imported or exported.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// A field or a file's text is wrong (the message names the file).
    #[error("{0}")]
    Format(#[from] PackFormatError),
    /// A file Arena will not read as it is: a link, too large, not text…
    #[error("{path}: {message}")]
    Refused { path: PathBuf, message: String },
    /// What was asked cannot be done; the message says how to fix it.
    #[error("{0}")]
    Usage(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("git {what} in {dir}: {detail}")]
    Git {
        what: String,
        dir: PathBuf,
        detail: String,
    },
}

impl PackError {
    /// True when the user can fix it (the pack, the source, the options).
    pub fn is_user_error(&self) -> bool {
        !matches!(self, PackError::Io { .. })
    }

    fn format_in(dir: &Path, e: PackFormatError) -> PackError {
        match e {
            PackFormatError::File { file, message } => PackError::Refused {
                path: dir.join(file),
                message,
            },
            e => PackError::Format(e),
        }
    }
}

impl From<PackError> for crate::Error {
    fn from(e: PackError) -> Self {
        match e {
            PackError::Io { path, source } => crate::Error::Io { path, source },
            PackError::Git { .. } => crate::Error::Git(e.to_string()),
            e => crate::Error::Invalid(crate::Invalid::Other(e.to_string())),
        }
    }
}

/// A pack, read and checked.
#[derive(Debug, Clone)]
pub struct Pack {
    /// Its folder.
    pub root: PathBuf,
    pub manifest: PackManifest,
    /// Sorted by id.
    pub tasks: Vec<Task>,
}

/// The reference solution of a task.
#[derive(Debug, Clone, PartialEq)]
pub enum Solution {
    /// `solution/gold.patch`: a patch on the base.
    GoldPatch(String),
    /// `solution/solve.sh`: a script run in the task's tree (Harbor's oracle).
    SolveScript,
    None,
}

/// One task of a pack.
#[derive(Debug, Clone)]
pub struct Task {
    pub id: TaskId,
    /// Its folder (`tasks/<id>`).
    pub dir: PathBuf,
    /// What the agent sees.
    pub instruction: String,
    pub toml: TaskToml,
    /// `[metadata.arena]`, or what a Harbor task without one means; its
    /// `needs_docker` is true too when the task has an `environment/`.
    pub meta: ArenaMeta,
    /// `tests/tests.json`.
    pub lists: Option<TestLists>,
    /// `tests/test.patch`.
    pub test_patch: Option<String>,
    pub solution: Solution,
    /// `tests/test.sh` is there.
    pub has_test_script: bool,
}

impl Task {
    pub fn kind(&self) -> TaskKind {
        self.meta.kind
    }

    pub fn base_commit(&self) -> Option<&str> {
        self.meta.base_commit.as_deref()
    }

    pub fn test_command(&self) -> Option<&str> {
        self.meta.test_command.as_deref()
    }

    /// The verifier's folder: bound for the verifier only, never an agent.
    pub fn tests_dir(&self) -> PathBuf {
        self.dir.join(TESTS_DIR)
    }

    /// The reference solution's folder: never shown to an agent.
    pub fn solution_dir(&self) -> PathBuf {
        self.dir.join(SOLUTION_DIR)
    }

    /// Why this task cannot be run as it is, whatever the machine: `None`
    /// when nothing in the task itself is missing.
    pub fn defect(&self) -> Option<String> {
        if !self.has_test_script && self.kind() == TaskKind::Harbor {
            return Some("it has no tests/test.sh".into());
        }
        if self.kind() == TaskKind::Repo {
            match &self.lists {
                None => return Some("it has no tests/tests.json".into()),
                Some(l) if l.fail_to_pass.is_empty() => {
                    return Some("tests/tests.json lists no FAIL_TO_PASS test".into())
                }
                Some(_) => {}
            }
        }
        // A mined task whose instruction was dropped (by the writer's
        // audit or in review) is not a task to run.
        if let Some((instruction::ReviewState::Dropped, reason)) =
            instruction::review_of(&self.meta.other)
        {
            return Some(match reason {
                Some(r) => format!("its instruction was dropped: {r}"),
                None => "its instruction was dropped".into(),
            });
        }
        None
    }
}

impl Pack {
    /// Reads the pack at `dir`: pack.toml and every task under `tasks/`,
    /// all checked (ids, sizes, no links anywhere, fields).
    pub fn load(dir: &Path) -> Result<Pack, PackError> {
        let meta = std::fs::symlink_metadata(dir).map_err(|source| PackError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(PackError::Refused {
                path: dir.to_path_buf(),
                message: "is not a pack folder (a folder holding pack.toml and tasks/)".into(),
            });
        }
        let root = dir.to_path_buf();
        let text = read::read_text(&root, PACK_FILE, read::MAX_TOML)?.ok_or_else(|| {
            PackError::Refused {
                path: root.join(PACK_FILE),
                message: "is missing; a pack's folder holds pack.toml (see docs/packs.md)".into(),
            }
        })?;
        let manifest = PackManifest::parse(&text).map_err(|e| PackError::format_in(&root, e))?;
        if let Some(bundle) = manifest.repository.as_ref().and_then(|r| r.bundle.as_ref()) {
            // A link there would be followed by git.
            read::entry(&root, Path::new(bundle))?;
        }
        let mut tasks = Vec::new();
        match read::entry(&root, Path::new(TASKS_DIR))? {
            None => {}
            Some(m) if !m.is_dir() => {
                return Err(PackError::Refused {
                    path: root.join(TASKS_DIR),
                    message: "is not a folder".into(),
                })
            }
            Some(_) => {
                let tasks_dir = root.join(TASKS_DIR);
                let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(&tasks_dir)
                    .map_err(|source| PackError::Io {
                        path: tasks_dir.clone(),
                        source,
                    })?
                    .map(|e| e.map(|e| e.file_name()))
                    .collect::<Result<_, _>>()
                    .map_err(|source| PackError::Io {
                        path: tasks_dir.clone(),
                        source,
                    })?;
                if names.len() > read::MAX_TASKS {
                    return Err(PackError::Refused {
                        path: tasks_dir,
                        message: format!("holds more than {} tasks", read::MAX_TASKS),
                    });
                }
                names.sort();
                for name in names {
                    let shown = name.to_string_lossy();
                    let id = TaskId::parse(&shown).map_err(|e| PackError::Refused {
                        path: tasks_dir.join(&name),
                        message: format!("{e}; rename the folder"),
                    })?;
                    tasks.push(load_task(&tasks_dir.join(id.as_str()), id)?);
                }
            }
        }
        Ok(Pack {
            root,
            manifest,
            tasks,
        })
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id.as_str() == id)
    }

    /// The pack's bundled repository, when it carries one.
    pub fn bundle_path(&self) -> Option<PathBuf> {
        let repo = self.manifest.repository.as_ref()?;
        repo.bundle.as_ref().map(|b| self.root.join(b))
    }

    /// Whether `project` is the pack's repository (by its root commits);
    /// a pack that names none matches any.
    pub fn check_project(&self, project: &Path) -> Result<(), PackError> {
        let Some(repo) = &self.manifest.repository else {
            return Ok(());
        };
        let roots = project::all_roots(project)?;
        if repo.matches(&roots) {
            Ok(())
        } else {
            Err(PackError::Usage(format!(
                "{} is not the repository of pack `{}`: it lacks the root commit {}",
                project.display(),
                self.manifest.name,
                repo.roots
                    .iter()
                    .find(|r| !roots.contains(r))
                    .map_or("", |r| r)
            )))
        }
    }
}

/// Reads one task folder (its id already checked).
pub fn load_task(dir: &Path, id: TaskId) -> Result<Task, PackError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| PackError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(PackError::Refused {
            path: dir.to_path_buf(),
            message: "is not a task folder".into(),
        });
    }
    // Links, devices and sheer size anywhere in it: the verifier binds tests/.
    let files = read::walk(dir)?;
    let instruction =
        read::read_text(dir, INSTRUCTION_FILE, read::MAX_INSTRUCTION)?.ok_or_else(|| {
            PackError::Refused {
                path: dir.join(INSTRUCTION_FILE),
                message: "is missing; every task has the instruction its agent sees".into(),
            }
        })?;
    let toml_text =
        read::read_text(dir, TASK_FILE, read::MAX_TOML)?.ok_or_else(|| PackError::Refused {
            path: dir.join(TASK_FILE),
            message: "is missing; every task has a task.toml (see docs/packs.md)".into(),
        })?;
    let toml = TaskToml::parse(TASK_FILE, &toml_text).map_err(|e| PackError::format_in(dir, e))?;
    let has = |rel: &str| files.iter().any(|f| f.rel == Path::new(rel));
    let has_environment = files.iter().any(|f| f.rel.starts_with(ENVIRONMENT_DIR));
    let mut meta = toml
        .arena
        .clone()
        .unwrap_or_else(|| ArenaMeta::harbor(false));
    meta.needs_docker |= meta.kind == TaskKind::Harbor && has_environment;
    let lists =
        match read::read(dir, TEST_LISTS, read::MAX_PATCH)? {
            None => None,
            Some(bytes) => Some(serde_json::from_slice::<TestLists>(&bytes).map_err(|e| {
                PackError::Refused {
                    path: dir.join(TEST_LISTS),
                    message: format!(
                        "is not {{\"FAIL_TO_PASS\": [...], \"PASS_TO_PASS\": [...]}}: {e}"
                    ),
                }
            })?),
        };
    let test_patch = read::read_text(dir, TEST_PATCH, read::MAX_PATCH)?;
    let solution = match read::read_text(dir, GOLD_PATCH, read::MAX_PATCH)? {
        Some(p) => Solution::GoldPatch(p),
        None if has(SOLVE_SCRIPT) => Solution::SolveScript,
        None => Solution::None,
    };
    Ok(Task {
        id,
        dir: dir.to_path_buf(),
        instruction,
        toml,
        meta,
        lists,
        test_patch,
        solution,
        has_test_script: has(TEST_SCRIPT),
    })
}

/// A pack as `arena pack show` tells it.
#[derive(Debug, Clone, Serialize)]
pub struct PackSummary {
    pub name: String,
    pub version: String,
    pub description: String,
    pub runs: u32,
    pub time_limit_secs: Option<u64>,
    pub roots: Vec<String>,
    pub bundle: Option<String>,
    /// Keys of pack.toml Arena does not know (kept, not used).
    pub unknown_keys: Vec<String>,
    pub tasks: Vec<TaskSummary>,
}

/// One task as `arena pack show` tells it.
#[derive(Debug, Clone, Serialize)]
pub struct TaskSummary {
    pub id: String,
    pub kind: TaskKind,
    pub base_commit: Option<String>,
    pub test_command: Option<String>,
    pub fail_to_pass: usize,
    pub pass_to_pass: usize,
    pub needs_docker: bool,
    /// `gold.patch`, `solve.sh`, or none.
    pub solution: Option<&'static str>,
    /// Whether it can run on this machine (with the project given, if any).
    pub runnable: bool,
    /// Why not, when it cannot.
    pub why_not: Option<String>,
}

/// Whether `program` is an executable on `PATH`.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// What `arena pack show` prints: the pack, and each task with whether it
/// can run here and why not. With `project`, repo-native tasks are checked
/// against it (the pack's repository, the base there); without, a pack
/// must carry its repository.
pub fn summarize(pack: &Pack, project: Option<&Path>) -> PackSummary {
    let container = on_path("docker") || on_path("podman");
    let project_problem: Option<String> = match project {
        Some(p) => pack.check_project(p).err().map(|e| e.to_string()),
        None if pack.bundle_path().is_some() => None,
        None => Some(
            "it needs its project: pass --project DIR (the pack carries no repository bundle)"
                .into(),
        ),
    };
    let bases: BTreeSet<String> = pack
        .tasks
        .iter()
        .filter_map(|t| t.meta.base_commit.clone())
        .collect();
    let missing: Vec<String> = match (project, &project_problem) {
        (Some(p), None) => project::missing_commits(p, &bases).unwrap_or_default(),
        _ => Vec::new(),
    };
    let tasks = pack
        .tasks
        .iter()
        .map(|t| {
            let why_not = t.defect().or_else(|| match t.kind() {
                TaskKind::Harbor if t.meta.needs_docker && !container => Some(
                    "it needs Docker or Podman (its environment/), and neither is on PATH".into(),
                ),
                TaskKind::Harbor => None,
                TaskKind::Repo => project_problem.clone().or_else(|| {
                    let base = t.base_commit().unwrap_or("");
                    missing
                        .iter()
                        .any(|m| m == base)
                        .then(|| format!("its base {base} is not in the project"))
                }),
            });
            TaskSummary {
                id: t.id.to_string(),
                kind: t.kind(),
                base_commit: t.meta.base_commit.clone(),
                test_command: t.meta.test_command.clone(),
                fail_to_pass: t.lists.as_ref().map_or(0, |l| l.fail_to_pass.len()),
                pass_to_pass: t.lists.as_ref().map_or(0, |l| l.pass_to_pass.len()),
                needs_docker: t.meta.needs_docker,
                solution: match t.solution {
                    Solution::GoldPatch(_) => Some("gold.patch"),
                    Solution::SolveScript => Some("solve.sh"),
                    Solution::None => None,
                },
                runnable: why_not.is_none(),
                why_not,
            }
        })
        .collect();
    let repo = pack.manifest.repository.as_ref();
    PackSummary {
        name: pack.manifest.name.clone(),
        version: pack.manifest.version.clone(),
        description: pack.manifest.description.clone(),
        runs: pack.manifest.defaults.runs,
        time_limit_secs: pack.manifest.defaults.time_limit_secs,
        roots: repo.map(|r| r.roots.clone()).unwrap_or_default(),
        bundle: repo.and_then(|r| r.bundle.clone()),
        unknown_keys: pack.manifest.unknown_keys(),
        tasks,
    }
}

/// Makes the folder `out` by filling a temporary folder beside it with
/// `fill` and renaming it into place: `out` must not exist, and a failure
/// leaves nothing behind.
pub(crate) fn write_folder(
    out: &Path,
    fill: impl FnOnce(&Path) -> Result<(), PackError>,
) -> Result<(), PackError> {
    if std::fs::symlink_metadata(out).is_ok() {
        return Err(PackError::Usage(format!(
            "{} exists; choose another --out or remove it first",
            out.display()
        )));
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|source| PackError::Io {
        path: parent.clone(),
        source,
    })?;
    let tmp = tempfile::Builder::new()
        .prefix(".arena-pack-")
        .tempdir_in(&parent)
        .map_err(|source| PackError::Io {
            path: parent.clone(),
            source,
        })?;
    let work = tmp.path().join("out");
    std::fs::create_dir(&work).map_err(|source| PackError::Io {
        path: work.clone(),
        source,
    })?;
    fill(&work)?;
    std::fs::rename(&work, out).map_err(|source| PackError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    Ok(())
}
