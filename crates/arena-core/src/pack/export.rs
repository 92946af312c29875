//! `arena pack export`: a pack's tasks as Harbor task folders (each copied
//! byte for byte) or its repo-native tasks as SWE-bench JSONL.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::read;
use super::*;

/// What to export to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A folder of Harbor task folders.
    Harbor,
    /// One SWE-bench instance per line (JSONL).
    Swebench,
}

impl std::str::FromStr for ExportFormat {
    type Err = PackError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "harbor" => Ok(ExportFormat::Harbor),
            "swebench" | "swe-bench" => Ok(ExportFormat::Swebench),
            other => Err(PackError::Usage(format!(
                "unknown export format `{}`; use harbor or swebench",
                printable(other)
            ))),
        }
    }
}

/// What was exported, and what was left out and why.
#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    pub out: PathBuf,
    pub format: ExportFormat,
    pub exported: Vec<String>,
    /// `(task id, why)`.
    pub skipped: Vec<(String, String)>,
}

/// Exports `pack` to `out` (which must not exist).
pub fn export(pack: &Pack, format: ExportFormat, out: &Path) -> Result<ExportReport, PackError> {
    let mut report = ExportReport {
        out: out.to_path_buf(),
        format,
        exported: Vec::new(),
        skipped: Vec::new(),
    };
    match format {
        ExportFormat::Harbor => {
            write_folder(out, |work| {
                for task in &pack.tasks {
                    read::copy_folder(&task.dir, &work.join(task.id.as_str()))?;
                }
                Ok(())
            })?;
            report.exported = pack.tasks.iter().map(|t| t.id.to_string()).collect();
        }
        ExportFormat::Swebench => {
            let mut text = String::new();
            for task in &pack.tasks {
                match swebench_of(pack, task) {
                    Ok(line) => {
                        text.push_str(&line);
                        text.push('\n');
                        report.exported.push(task.id.to_string());
                    }
                    Err(why) => report.skipped.push((task.id.to_string(), why)),
                }
            }
            write_file_atomically(out, text.as_bytes())?;
        }
    }
    Ok(report)
}

/// One task as a SWE-bench instance's JSON, or why it cannot be one.
fn swebench_of(pack: &Pack, task: &Task) -> Result<String, String> {
    if task.kind() != TaskKind::Repo {
        return Err(
            "a Harbor task has no base commit and patches; export it with --format harbor".into(),
        );
    }
    let gold_patch = match &task.solution {
        Solution::GoldPatch(p) => p.clone(),
        _ => return Err("it has no solution/gold.patch".into()),
    };
    let content = RepoTaskContent {
        id: task.id.clone(),
        instruction: task.instruction.clone(),
        test_patch: task.test_patch.clone().unwrap_or_default(),
        gold_patch,
        lists: task.lists.clone().unwrap_or_default(),
        meta: task.meta.clone(),
    };
    let instance = instance_from_task(&content, &pack.manifest.name);
    serde_json::to_string(&instance).map_err(|e| e.to_string())
}

/// Writes the file `out` (which must not exist) through a temporary file
/// beside it.
fn write_file_atomically(out: &Path, bytes: &[u8]) -> Result<(), PackError> {
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
    let io = |source| PackError::Io {
        path: out.to_path_buf(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".arena-export-")
        .tempfile_in(&parent)
        .map_err(io)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(io)?;
    tmp.persist_noclobber(out).map_err(|e| io(e.error))?;
    Ok(())
}
