//! `arena pack import`: a Harbor/Terminal-Bench task folder (or a folder of
//! them) as it is, or SWE-bench instances (JSON or JSONL) mapped field by
//! field onto repo-native tasks of a project.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::project;
use super::read::{self, MAX_PATCH};
use super::*;

/// The largest SWE-bench file read (JSON) and line (JSONL).
const MAX_JSON: u64 = 1 << 30;
const MAX_LINE: u64 = 128 << 20;

/// What `arena pack import` was given.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The pack to make (must not exist).
    pub out: PathBuf,
    /// The repository SWE-bench instances belong to.
    pub project: Option<PathBuf>,
    /// The test command of every imported repo-native task; detected per
    /// base when not given.
    pub test_command: Option<String>,
    /// The test command of the tasks on a given base (mining's: the one
    /// each was validated with); before `test_command`.
    pub commands_by_base: BTreeMap<String, String>,
    /// The pack's name (else the name of `out`'s folder).
    pub name: Option<String>,
    /// The pack's description (else where it was imported from).
    pub description: Option<String>,
    /// Carry the project in the pack as `repo.bundle` (its HEAD's history).
    pub bundle: bool,
    /// `[defaults] time_limit_secs` of the pack.
    pub time_limit_secs: Option<u64>,
}

/// What was imported.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    pub pack: PathBuf,
    pub tasks: Vec<ImportedTask>,
}

/// One imported task.
#[derive(Debug, Clone, Serialize)]
pub struct ImportedTask {
    pub id: String,
    /// The source's own name for it (SWE-bench's `instance_id`, a folder's name).
    pub original_id: String,
    pub kind: TaskKind,
    pub test_command: Option<String>,
    /// Where the test command came from: `given`, or the file that said so.
    pub test_command_from: Option<String>,
    pub needs_docker: bool,
}

/// Imports `source` into a new pack at `options.out`.
pub fn import(source: &Path, options: &ImportOptions) -> Result<ImportReport, PackError> {
    let meta = std::fs::symlink_metadata(source)
        .map_err(|e| PackError::Usage(format!("cannot read {}: {e}", source.display())))?;
    if meta.file_type().is_symlink() {
        return Err(PackError::Refused {
            path: source.to_path_buf(),
            message: "is a symbolic link; give the file or folder it points to".into(),
        });
    }
    let name = options.name.clone().unwrap_or_else(|| {
        options
            .out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "pack".into())
    });
    let source_name = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut manifest = PackManifest {
        name,
        version: "1".into(),
        description: options
            .description
            .clone()
            .unwrap_or_else(|| format!("Imported from {source_name}")),
        defaults: PackDefaults {
            time_limit_secs: options.time_limit_secs,
            ..PackDefaults::default()
        },
        repository: None,
        other: toml::Table::new(),
    };
    if meta.is_dir() {
        import_harbor(source, &mut manifest, options)
    } else {
        import_swebench(source, &mut manifest, options)
    }
}

fn write_manifest(dir: &Path, manifest: &PackManifest) -> Result<(), PackError> {
    manifest.validate()?;
    read::write_file(&dir.join(PACK_FILE), manifest.to_toml()?.as_bytes(), false)
}

// ---------------------------------------------------------------- Harbor

fn is_task_folder(dir: &Path) -> Result<bool, PackError> {
    Ok(read::entry(dir, Path::new(TASK_FILE))?.is_some())
}

fn import_harbor(
    source: &Path,
    manifest: &mut PackManifest,
    options: &ImportOptions,
) -> Result<ImportReport, PackError> {
    if read::entry(source, Path::new(PACK_FILE))?.is_some() {
        return Err(PackError::Usage(format!(
            "{} is already a pack (it holds pack.toml); use it as it is",
            source.display()
        )));
    }
    // One task folder, or a dataset's folder of them.
    let mut folders: Vec<(String, PathBuf)> = Vec::new();
    if is_task_folder(source)? {
        let name = source
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "task".into());
        folders.push((name, source.to_path_buf()));
    } else {
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(source)
            .map_err(|e| PackError::Io {
                path: source.to_path_buf(),
                source: e,
            })?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .map_err(|e| PackError::Io {
                path: source.to_path_buf(),
                source: e,
            })?;
        names.sort();
        for name in names {
            let rel = Path::new(&name);
            match read::entry(source, rel) {
                Ok(Some(m)) if m.is_dir() && is_task_folder(&source.join(rel))? => {
                    folders.push((name.to_string_lossy().into_owned(), source.join(rel)));
                }
                _ => {}
            }
        }
        if folders.len() > read::MAX_TASKS {
            return Err(PackError::Refused {
                path: source.to_path_buf(),
                message: format!("holds more than {} tasks", read::MAX_TASKS),
            });
        }
    }
    if folders.is_empty() && read::entry(source, Path::new("task.yaml"))?.is_some() {
        return Err(PackError::Usage(format!(
            "{} is a Terminal-Bench 1 task (task.yaml); convert it to Harbor's task format first (Harbor's terminal-bench adapter does), then import that",
            source.display()
        )));
    }
    if folders.is_empty() {
        return Err(PackError::Usage(format!(
            "{} is neither a Harbor task folder (instruction.md, task.toml, tests/test.sh) nor a folder of them",
            source.display()
        )));
    }
    let mut taken = BTreeSet::new();
    let mut plan = Vec::new();
    for (name, dir) in folders {
        let id = TaskId::sanitize(&name, &taken);
        taken.insert(id.clone());
        // Read and checked as a pack will read it.
        let task = load_task(&dir, id.clone())?;
        if !task.has_test_script {
            return Err(PackError::Refused {
                path: dir.join(TEST_SCRIPT),
                message: "is missing; a Harbor task's verifier is tests/test.sh".into(),
            });
        }
        plan.push((name, dir, task));
    }
    if plan.iter().any(|(_, _, t)| t.kind() == TaskKind::Repo) && options.project.is_some() {
        let bases = plan
            .iter()
            .filter_map(|(_, _, t)| t.meta.base_commit.clone())
            .collect();
        let project = repository_root(options.project.as_deref().unwrap_or(Path::new(".")))?;
        manifest.repository = Some(RepositoryRef {
            roots: project::roots_of(&project, &bases)?,
            bundle: None,
            other: toml::Table::new(),
        });
    }
    let report = ImportReport {
        pack: options.out.clone(),
        tasks: plan
            .iter()
            .map(|(name, _, t)| ImportedTask {
                id: t.id.to_string(),
                original_id: name.clone(),
                kind: t.kind(),
                test_command: t.meta.test_command.clone(),
                test_command_from: t.meta.test_command.as_ref().map(|_| "task.toml".into()),
                needs_docker: t.meta.needs_docker,
            })
            .collect(),
    };
    write_folder(&options.out, |work| {
        write_manifest(work, manifest)?;
        for (_, dir, task) in &plan {
            read::copy_folder(dir, &work.join(TASKS_DIR).join(task.id.as_str()))?;
        }
        Ok(())
    })?;
    tracing::info!(pack = %options.out.display(), tasks = plan.len(), "imported Harbor tasks");
    Ok(report)
}

// ---------------------------------------------------------------- SWE-bench

/// The instances of a SWE-bench file: a JSON object, a JSON list of them,
/// or JSONL (one per line). Each comes with where it is (for errors).
/// An instance, with where it is in its file (for errors).
type Located = (String, Map<String, Value>);

fn instances(source: &Path) -> Result<Vec<Located>, PackError> {
    let not_instance = |at: String| {
        PackError::Format(PackFormatError::Instance {
            at,
            message: "is not a JSON object (one instance)".into(),
        })
    };
    let path_str = source.display().to_string();
    let jsonl = source.extension().is_some_and(|e| e == "jsonl");
    let mut out = Vec::new();
    if !jsonl {
        let bytes = read::read_plain(source, MAX_JSON)?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(o)) => return Ok(vec![(path_str, o)]),
            Ok(Value::Array(items)) => {
                for (i, item) in items.into_iter().enumerate() {
                    match item {
                        Value::Object(o) => out.push((format!("{path_str} item {}", i + 1), o)),
                        _ => return Err(not_instance(format!("{path_str} item {}", i + 1))),
                    }
                }
                return Ok(out);
            }
            // Several values: JSONL under another name.
            Ok(_) => return Err(not_instance(path_str)),
            Err(_) => {}
        }
    }
    let (file, _) = read::open_checked(source)?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    let mut n = 0usize;
    loop {
        line.clear();
        n += 1;
        let got = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| PackError::Io {
                path: source.to_path_buf(),
                source: e,
            })?;
        if got == 0 {
            break;
        }
        if got as u64 > MAX_LINE {
            return Err(PackError::Refused {
                path: source.to_path_buf(),
                message: format!("line {n} is longer than {}", read::size(MAX_LINE)),
            });
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Object(o)) => out.push((format!("{path_str} line {n}"), o)),
            Ok(_) => return Err(not_instance(format!("{path_str} line {n}"))),
            Err(e) => {
                return Err(PackError::Refused {
                    path: source.to_path_buf(),
                    message: format!(
                        "line {n} is not JSON ({e}); give SWE-bench instances as JSON or JSONL"
                    ),
                })
            }
        }
        if out.len() > read::MAX_TASKS {
            return Err(PackError::Refused {
                path: source.to_path_buf(),
                message: format!("holds more than {} instances", read::MAX_TASKS),
            });
        }
    }
    Ok(out)
}

use std::io::Read as _;

fn import_swebench(
    source: &Path,
    manifest: &mut PackManifest,
    options: &ImportOptions,
) -> Result<ImportReport, PackError> {
    let instances = instances(source)?;
    if instances.is_empty() {
        return Err(PackError::Usage(format!(
            "{} holds no SWE-bench instance",
            source.display()
        )));
    }
    let Some(project) = options.project.as_deref() else {
        return Err(PackError::Usage(
            "SWE-bench instances run on their repository: give it with --project DIR".into(),
        ));
    };
    let project = repository_root(project)?;
    let base_of = |i: &Map<String, Value>| {
        i.get("base_commit")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let bases: BTreeSet<String> = instances
        .iter()
        .filter_map(|(_, i)| base_of(i))
        .filter(|b| is_commit_id(b))
        .collect();
    let missing = project::missing_commits(&project, &bases)?;
    if let Some(first) = missing.first() {
        let at = instances
            .iter()
            .find(|(_, i)| base_of(i).as_ref() == Some(first))
            .map(|(at, _)| at.clone())
            .unwrap_or_default();
        return Err(PackError::Usage(format!(
            "base commit {first} ({at}; {} of {} bases missing) is not in {}; fetch it there (`git fetch origin {first}`) or give the repository the instances belong to",
            missing.len(),
            bases.len(),
            project.display()
        )));
    }
    // The test command: given, or per base from its files.
    let mut commands: BTreeMap<String, (String, String)> = BTreeMap::new();
    for base in &bases {
        let found = match (options.commands_by_base.get(base), &options.test_command) {
            (Some(c), _) => (c.clone(), "validated with".to_string()),
            (None, Some(c)) => (c.clone(), "given".to_string()),
            (None, None) => match project::detect_at(&project, base)? {
                Some(d) => (d.command, d.reason),
                None => {
                    return Err(PackError::Usage(format!(
                        "could not tell the test command from the files at base {base}; give it with --test-command CMD"
                    )))
                }
            },
        };
        commands.insert(base.clone(), found);
    }
    let keys = project::environment_keys(&project, &bases);
    let mut taken = BTreeSet::new();
    let mut tasks = Vec::new();
    let mut report = Vec::new();
    for (at, instance) in &instances {
        let base = base_of(instance).unwrap_or_default();
        let (command, from) = commands.get(&base).cloned().unwrap_or_else(|| {
            (
                options.test_command.clone().unwrap_or_default(),
                "given".into(),
            )
        });
        let mut task = task_from_instance(at, instance, &command, &taken)?;
        task.meta.environment_key = keys.get(&base).cloned();
        for (what, len) in [
            ("test_patch", task.test_patch.len()),
            ("patch", task.gold_patch.len()),
        ] {
            if len as u64 > MAX_PATCH {
                return Err(PackError::Usage(format!(
                    "{at}: {what} is larger than {}",
                    read::size(MAX_PATCH)
                )));
            }
        }
        taken.insert(task.id.clone());
        report.push(ImportedTask {
            id: task.id.to_string(),
            original_id: instance
                .get("instance_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            kind: TaskKind::Repo,
            test_command: Some(command),
            test_command_from: Some(from),
            needs_docker: false,
        });
        tasks.push(task);
    }
    manifest.repository = Some(RepositoryRef {
        roots: project::roots_of(&project, &bases)?,
        bundle: options.bundle.then(|| DEFAULT_BUNDLE.to_string()),
        other: toml::Table::new(),
    });
    write_folder(&options.out, |work| {
        write_manifest(work, manifest)?;
        if options.bundle {
            project::bundle(&project, &bases, &work.join(DEFAULT_BUNDLE))?;
        }
        for task in &tasks {
            write_repo_task(
                &work.join(TASKS_DIR).join(task.id.as_str()),
                task,
                options.time_limit_secs.map(|t| t as f64),
            )?;
        }
        Ok(())
    })?;
    tracing::info!(pack = %options.out.display(), tasks = tasks.len(), "imported SWE-bench instances");
    Ok(ImportReport {
        pack: options.out.clone(),
        tasks: report,
    })
}

/// Writes a repo-native task's folder (which must not exist): instruction,
/// task.toml, tests (test.sh, test.patch, tests.json) and gold.patch.
pub fn write_repo_task(
    dir: &Path,
    task: &RepoTaskContent,
    agent_timeout_sec: Option<f64>,
) -> Result<(), PackError> {
    let command = task.meta.test_command.as_deref().unwrap_or("");
    let lists = serde_json::to_string_pretty(&task.lists)
        .map_err(|e| PackError::Usage(format!("tests.json of {}: {e}", task.id)))?
        + "\n";
    let toml = repo_task_toml(&task.meta, agent_timeout_sec, None)?;
    std::fs::create_dir_all(dir).map_err(|source| PackError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    read::write_file(
        &dir.join(INSTRUCTION_FILE),
        task.instruction.as_bytes(),
        false,
    )?;
    read::write_file(&dir.join(TASK_FILE), toml.as_bytes(), false)?;
    read::write_file(
        &dir.join(TEST_SCRIPT),
        verifier_script(command, &task.lists).as_bytes(),
        true,
    )?;
    read::write_file(&dir.join(TEST_PATCH), task.test_patch.as_bytes(), false)?;
    read::write_file(&dir.join(TEST_LISTS), lists.as_bytes(), false)?;
    read::write_file(&dir.join(GOLD_PATCH), task.gold_patch.as_bytes(), false)?;
    Ok(())
}
