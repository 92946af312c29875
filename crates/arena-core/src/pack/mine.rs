//! Mining a project's history for tasks (issue 41), the static half: walk
//! the first-parent history newest first (a merge is diffed against its
//! first parent: it is where the project merges pull requests), keep the
//! commits that change both tests and code within the size rules
//! (`arena_domain::mining`), and split each into the hidden `test.patch`
//! and the `gold.patch` on its parent, the base. Validation by running and
//! the instruction come later: a mined pack's tests.json is empty.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub use arena_domain::mining::MineProgress;
use arena_domain::mining::{
    self, apply_hunks, cfg_test_ranges, classify_path, hunk_kind, parse_hunk_header, DropReason,
    Ecosystem, FileChange, FileRole, Hunk, HunkKind,
};
use serde::Serialize;

use super::PackError;

/// What to mine.
#[derive(Debug, Clone, Default)]
pub struct MineOptions {
    pub project: PathBuf,
    /// Stop after this many candidates.
    pub limit: Option<usize>,
    /// Only commits committed on or after / before these dates (as git's
    /// `--since`/`--until` read them).
    pub since: Option<String>,
    pub until: Option<String>,
    /// Set from elsewhere to stop the run: what was found so far is
    /// reported, marked cancelled.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl MineOptions {
    /// Whether the run was asked to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }
}

/// A candidate: a commit whose change splits into tests and a fix.
#[derive(Debug, Clone, Serialize)]
pub struct MinedTask {
    pub commit: String,
    /// The first parent: the task's base.
    pub base: String,
    /// The commit date, ISO 8601.
    pub committed_at: String,
    pub subject: String,
    /// The non-test files the gold patch changes.
    pub files: Vec<String>,
    /// Non-test lines changed (added + deleted).
    pub lines: u64,
    pub ecosystem: Ecosystem,
    /// The files the test patch changes (a Rust source file with a
    /// `#[cfg(test)]` hunk is in both lists).
    pub test_files: Vec<String>,
    /// Lockfiles and manifests the commit changes: the environment key of
    /// the commit differs from its base's.
    pub environment_changes: Vec<String>,
    pub test_patch_bytes: usize,
    pub gold_patch_bytes: usize,
    #[serde(skip)]
    pub test_patch: String,
    #[serde(skip)]
    pub gold_patch: String,
    /// The commit's whole message.
    #[serde(skip)]
    pub message: String,
}

impl MinedTask {
    fn empty() -> MinedTask {
        MinedTask {
            commit: String::new(),
            base: String::new(),
            committed_at: String::new(),
            subject: String::new(),
            files: Vec::new(),
            lines: 0,
            ecosystem: Ecosystem::Other,
            test_files: Vec::new(),
            environment_changes: Vec::new(),
            test_patch_bytes: 0,
            gold_patch_bytes: 0,
            test_patch: String::new(),
            gold_patch: String::new(),
            message: String::new(),
        }
    }
}

/// The scan's yield.
#[derive(Debug, Clone, Serialize)]
pub struct MineReport {
    pub scanned: usize,
    pub candidates: usize,
    pub dropped: BTreeMap<String, usize>,
    pub tasks: Vec<MinedTask>,
    pub seconds_per_stage: BTreeMap<String, f64>,
    /// The run was cancelled: the counts are those found until then.
    #[serde(default)]
    pub cancelled: bool,
}

impl MineReport {
    /// The report as progress at `stage`.
    pub fn progress(&self, stage: &str) -> MineProgress {
        MineProgress {
            stage: stage.to_string(),
            scanned: self.scanned as u64,
            candidates: self.candidates as u64,
            validated: 0,
            dropped: self
                .dropped
                .iter()
                .map(|(k, v)| (k.clone(), *v as u64))
                .collect(),
            eta_secs: None,
            current: None,
        }
    }
}

/// Runs git in `dir` with nothing of the caller's git session, and with
/// `index` as its index when given.
fn git(
    dir: &Path,
    args: &[&str],
    input: Option<&[u8]>,
    scratch: Option<&Scratch>,
) -> Result<Vec<u8>, PackError> {
    let failed = |detail: String| PackError::Git {
        what: args.first().copied().unwrap_or("").to_string(),
        dir: dir.to_path_buf(),
        detail,
    };
    let mut command =
        super::project::git_command(dir, "core.quotePath=false", args, input.is_some());
    if let Some(s) = scratch {
        // Its own index, and its own object store in front of the
        // project's: nothing the split writes lands in the project.
        command
            .env("GIT_INDEX_FILE", &s.index)
            .env("GIT_OBJECT_DIRECTORY", &s.objects)
            .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &s.alternates);
    }
    let mut child = command.spawn().map_err(|e| failed(e.to_string()))?;
    let writer = match (input, child.stdin.take()) {
        (Some(bytes), Some(mut stdin)) => {
            let bytes = bytes.to_vec();
            // From a thread: git answers while it reads.
            Some(std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            }))
        }
        _ => None,
    };
    let out = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if let Some(w) = writer {
        let _ = w.join();
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(failed(format!("{} ({})", line.trim(), out.status)));
    }
    Ok(out.stdout)
}

/// Where a split writes: an index and an object store of its own, the
/// project's objects read through `alternates`.
pub(crate) struct Scratch {
    index: PathBuf,
    objects: PathBuf,
    alternates: PathBuf,
}

/// One commit of the first-parent walk.
struct Record {
    commit: String,
    parent: Option<String>,
    committed_at: String,
    name: String,
    email: String,
    message: String,
    files: Vec<FileChange>,
}

fn parse_log(out: &[u8]) -> Vec<Record> {
    let text = String::from_utf8_lossy(out);
    let mut records = Vec::new();
    for rec in text.split('\u{1e}').filter(|r| !r.is_empty()) {
        let parts: Vec<&str> = rec.splitn(7, '\u{1f}').collect();
        if parts.len() < 7 {
            continue;
        }
        let files = parts[6]
            .split('\0')
            .map(|e| e.trim_start_matches('\n'))
            .filter(|e| !e.is_empty())
            .filter_map(|e| {
                let mut it = e.splitn(3, '\t');
                let added = it.next()?.parse().ok();
                let deleted = it.next()?.parse().ok();
                let path = it.next()?.to_string();
                Some(FileChange {
                    path,
                    added,
                    deleted,
                })
            })
            .collect();
        records.push(Record {
            commit: parts[0].to_string(),
            parent: parts[1].split_whitespace().next().map(str::to_string),
            committed_at: parts[2].to_string(),
            name: parts[3].to_string(),
            email: parts[4].to_string(),
            message: parts[5].to_string(),
            files,
        });
    }
    records
}

/// The first-parent log read as git writes it, a commit at a time, so the
/// scan classifies one commit while git diffs the next (the walk and the
/// classification each take about half of a large scan; on two cores they
/// overlap). Killed when dropped before its end (a limit, a cancel).
struct LogStream {
    child: std::process::Child,
    output: std::io::BufReader<std::process::ChildStdout>,
    dir: PathBuf,
    ended: bool,
}

impl LogStream {
    fn open(dir: &Path, args: &[&str]) -> Result<LogStream, PackError> {
        let failed = |detail: String| PackError::Git {
            what: "log".into(),
            dir: dir.to_path_buf(),
            detail,
        };
        let mut command = super::project::git_command(dir, "core.quotePath=false", args, false);
        // What git says on failure is its last line; nothing else is kept.
        command.stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| failed(e.to_string()))?;
        let Some(stdout) = child.stdout.take() else {
            return Err(failed("no output".into()));
        };
        Ok(LogStream {
            child,
            output: std::io::BufReader::with_capacity(1 << 16, stdout),
            dir: dir.to_path_buf(),
            ended: false,
        })
    }

    /// The next commit, newest first; `None` at the end of the log.
    fn next_record(&mut self) -> Result<Option<Record>, PackError> {
        use std::io::BufRead;
        while !self.ended {
            let mut piece = Vec::new();
            let read = self
                .output
                .read_until(0x1e, &mut piece)
                .map_err(|e| PackError::Io {
                    path: self.dir.clone(),
                    source: e,
                })?;
            if read == 0 {
                self.ended = true;
                self.finish()?;
                break;
            }
            if let Some(record) = parse_log(&piece).pop() {
                return Ok(Some(record));
            }
        }
        Ok(None)
    }

    /// Waits for git at the end of its output: a failure is an error with
    /// its last line.
    fn finish(&mut self) -> Result<(), PackError> {
        use std::io::Read;
        let mut err = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        let status = self.child.wait().map_err(|e| PackError::Io {
            path: self.dir.clone(),
            source: e,
        })?;
        if status.success() {
            return Ok(());
        }
        let line = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        Err(PackError::Git {
            what: "log".into(),
            dir: self.dir.clone(),
            detail: format!("{} ({status})", line.trim()),
        })
    }
}

impl Drop for LogStream {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One `git cat-file --batch` for the whole scan: a blob per request,
/// `None` for a path that does not exist at that revision.
struct Blobs {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
    dir: PathBuf,
}

impl Blobs {
    fn open(dir: &Path) -> Result<Blobs, PackError> {
        let failed = |detail: String| PackError::Git {
            what: "cat-file".into(),
            dir: dir.to_path_buf(),
            detail,
        };
        let mut child = Command::new("git")
            .args(["-c", "core.hooksPath=/dev/null", "cat-file", "--batch"])
            .current_dir(dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| failed(e.to_string()))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(failed("no pipes".into()));
        };
        Ok(Blobs {
            child,
            input,
            output: std::io::BufReader::new(output),
            dir: dir.to_path_buf(),
        })
    }

    fn get(&mut self, spec: &str) -> Result<Option<Vec<u8>>, PackError> {
        use std::io::{BufRead as _, Read as _};
        let failed = |detail: String| PackError::Git {
            what: "cat-file".into(),
            dir: self.dir.clone(),
            detail,
        };
        if spec.contains('\n') {
            return Ok(None);
        }
        self.input
            .write_all(format!("{spec}\n").as_bytes())
            .and_then(|_| self.input.flush())
            .map_err(|e| failed(e.to_string()))?;
        let mut header = String::new();
        self.output
            .read_line(&mut header)
            .map_err(|e| failed(e.to_string()))?;
        let fields: Vec<&str> = header.trim_end().split(' ').collect();
        if fields.len() != 3 {
            // "<spec> missing" (or ambiguous): nothing at that revision.
            return Ok(None);
        }
        let size: usize = fields[2]
            .parse()
            .map_err(|_| failed(format!("a header `{}`", header.trim_end())))?;
        let mut body = vec![0u8; size + 1];
        self.output
            .read_exact(&mut body)
            .map_err(|e| failed(e.to_string()))?;
        body.truncate(size);
        Ok((fields[1] == "blob").then_some(body))
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text with its whitespace left out: two versions that are equal so
/// differ in whitespace only.
fn without_whitespace(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect()
}

/// A Rust source file's change, split into its test and code hunks.
struct SplitFile {
    path: String,
    old: String,
    new: String,
    test_hunks: Vec<Hunk>,
    code_lines: u64,
    has_code: bool,
}

/// Scans the project's first-parent history, newest first.
pub fn mine(options: &MineOptions) -> Result<MineReport, PackError> {
    mine_with_progress(options, |_| {})
}

/// How many commits the scan classifies between two progress reports.
const PROGRESS_EVERY: usize = 100;

/// [`mine`], telling `on_progress` where it stands (stage `scan` every
/// [`PROGRESS_EVERY`] commits, then `split`, then `done` or `cancelled`),
/// and stopping when [`MineOptions::cancel`] is set: the report then holds
/// what was found until then, marked cancelled.
pub fn mine_with_progress(
    options: &MineOptions,
    mut on_progress: impl FnMut(&MineProgress),
) -> Result<MineReport, PackError> {
    let dir = super::repository_root(&options.project)?;
    let mut stages: BTreeMap<String, f64> = BTreeMap::new();
    let started = Instant::now();
    let mut args: Vec<String> = [
        "log",
        "--first-parent",
        "--diff-merges=first-parent",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        "--numstat",
        "-z",
        "--format=%x1e%H%x1f%P%x1f%cI%x1f%an%x1f%ae%x1f%B%x1f",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(s) = &options.since {
        args.push(format!("--since={s}"));
    }
    if let Some(u) = &options.until {
        args.push(format!("--until={u}"));
    }
    args.push("HEAD".into());
    // How many commits the walk will give, for the time left.
    let mut count_args: Vec<&str> = vec!["rev-list", "--first-parent", "--count"];
    count_args.extend(
        args.iter()
            .filter(|a| a.starts_with("--since=") || a.starts_with("--until="))
            .map(String::as_str),
    );
    count_args.push("HEAD");
    let total: usize = String::from_utf8_lossy(&git(&dir, &count_args, None, None)?)
        .trim()
        .parse()
        .unwrap_or(0);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut log = LogStream::open(&dir, &refs)?;
    // The walk's time: starting git, then each wait for its next commit.
    let mut walk = started.elapsed().as_secs_f64();
    let mut waiting = 0f64;

    let scratch = tempfile::tempdir().map_err(|source| PackError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let mut blobs = Blobs::open(&dir)?;
    let alternates = git(
        &dir,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "objects",
        ],
        None,
        None,
    )?;
    let alternates = PathBuf::from(String::from_utf8_lossy(&alternates).trim());
    let mut classify = 0f64;
    let mut split = 0f64;
    let mut dropped: BTreeMap<String, usize> = BTreeMap::new();
    let mut scanned = 0usize;
    let mut kept: Vec<Kept> = Vec::new();
    let mut cancelled = false;
    let t = Instant::now();
    let progress = |stage: &str, scanned: usize, kept: usize, dropped: &BTreeMap<String, usize>| {
        let pace = t.elapsed().as_secs_f64() / scanned.max(1) as f64;
        MineProgress {
            stage: stage.to_string(),
            scanned: scanned as u64,
            candidates: kept as u64,
            validated: 0,
            dropped: dropped
                .iter()
                .map(|(k, v)| (k.clone(), *v as u64))
                .collect(),
            eta_secs: (stage == "scan" && scanned > 0)
                .then(|| (pace * total.saturating_sub(scanned) as f64).ceil() as u64),
            current: None,
        }
    };
    loop {
        if options.limit.is_some_and(|l| kept.len() >= l) {
            break;
        }
        if options.cancelled() {
            cancelled = true;
            break;
        }
        let waited = Instant::now();
        let next = log.next_record()?;
        waiting += waited.elapsed().as_secs_f64();
        let Some(record) = next else {
            break;
        };
        let record = &record;
        if scanned.is_multiple_of(PROGRESS_EVERY) {
            let mut p = progress("scan", scanned, kept.len(), &dropped);
            p.current = Some(format!(
                "{} {}",
                &record.commit[..record.commit.len().min(12)],
                record.message.lines().next().unwrap_or("")
            ));
            on_progress(&p);
        }
        scanned += 1;
        match judge_static(&dir, &mut blobs, record)? {
            Err(reason) => {
                tracing::debug!(commit = %record.commit, reason = reason.as_str(), "not a candidate");
                *dropped.entry(reason.as_str().to_string()).or_default() += 1;
            }
            Ok(k) => kept.push(k),
        }
    }
    drop(log);
    classify += t.elapsed().as_secs_f64() - waiting;
    walk += waiting;
    stages.insert("walk".into(), walk);
    on_progress(&progress("split", scanned, kept.len(), &dropped));
    // The splits are independent: on every core.
    let t = Instant::now();
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let chunk = kept.len().div_ceil(workers).max(1);
    let results: Vec<Result<Vec<MinedTask>, PackError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = kept
            .chunks_mut(chunk)
            .enumerate()
            .map(|(n, part)| {
                let dir = &dir;
                let alternates = &alternates;
                let scratch = scratch.path().join(format!("w{n}"));
                scope.spawn(move || -> Result<Vec<MinedTask>, PackError> {
                    let scratch = Scratch {
                        index: scratch.join("index"),
                        objects: scratch.join("objects"),
                        alternates: alternates.clone(),
                    };
                    std::fs::create_dir_all(&scratch.objects).map_err(|source| PackError::Io {
                        path: scratch.objects.clone(),
                        source,
                    })?;
                    let mut done = Vec::with_capacity(part.len());
                    for (task, splits, test_paths) in part.iter_mut() {
                        let (test_patch, gold_patch) = split_patches(
                            dir,
                            &task.base,
                            &task.commit,
                            test_paths,
                            splits,
                            &scratch,
                        )?;
                        let mut task = std::mem::replace(task, MinedTask::empty());
                        task.test_patch_bytes = test_patch.len();
                        task.gold_patch_bytes = gold_patch.len();
                        task.test_patch = test_patch;
                        task.gold_patch = gold_patch;
                        done.push(task);
                    }
                    Ok(done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(PackError::Usage("a split worker panicked".into())))
            })
            .collect()
    });
    let mut tasks = Vec::with_capacity(kept.len());
    for r in results {
        tasks.extend(r?);
    }
    split += t.elapsed().as_secs_f64();
    stages.insert("classify".into(), classify);
    stages.insert("split".into(), split);
    tracing::info!(project = %dir.display(), scanned, candidates = tasks.len(), cancelled, "mined the history");
    let report = MineReport {
        scanned,
        candidates: tasks.len(),
        dropped,
        tasks,
        seconds_per_stage: stages,
        cancelled,
    };
    on_progress(&report.progress(if cancelled { "cancelled" } else { "done" }));
    Ok(report)
}

type Kept = (MinedTask, Vec<SplitFile>, Vec<String>);

fn judge_static(
    dir: &Path,
    blobs: &mut Blobs,
    r: &Record,
) -> Result<Result<Kept, DropReason>, PackError> {
    let Some(parent) = r.parent.clone() else {
        return Ok(Err(DropReason::NoParent));
    };
    if let Some(reason) = mining::first_drop(&r.message, &r.name, &r.email, &r.files) {
        return Ok(Err(reason));
    }
    let mut test_paths = Vec::new();
    let mut code: Vec<&FileChange> = Vec::new();
    let mut environment = Vec::new();
    for f in &r.files {
        match classify_path(&f.path) {
            FileRole::Test => test_paths.push(f.path.clone()),
            FileRole::Code => code.push(f),
            FileRole::Environment => environment.push(f.path.clone()),
            FileRole::Ci | FileRole::Docs | FileRole::Generated => {}
        }
    }
    // A cheap bound first: with no test file and no Rust source that may
    // hold test modules, there is nothing to split.
    let rust: Vec<&FileChange> = code
        .iter()
        .copied()
        .filter(|f| Ecosystem::of(&f.path) == Ecosystem::Rust)
        .collect();
    if test_paths.is_empty() && rust.is_empty() {
        return Ok(Err(DropReason::NoTests));
    }
    if code.is_empty() {
        return Ok(Err(DropReason::NoCode));
    }
    // Both sides of every code file: the Rust test modules, the generated
    // marker, whether anything but whitespace changed.
    let mut splits = Vec::new();
    let mut substantive = false;
    for f in &code {
        let old = blobs
            .get(&format!("{parent}:{}", f.path))?
            .unwrap_or_default();
        let new = blobs
            .get(&format!("{}:{}", r.commit, f.path))?
            .unwrap_or_default();
        if !substantive && without_whitespace(&old) != without_whitespace(&new) {
            substantive = true;
        }
        for side in [&old, &new] {
            let head = String::from_utf8_lossy(&side[..side.len().min(2048)]);
            if mining::is_generated_text(&head) {
                return Ok(Err(DropReason::GeneratedOrVendored));
            }
        }
        if Ecosystem::of(&f.path) != Ecosystem::Rust {
            continue;
        }
        let old = String::from_utf8_lossy(&old).into_owned();
        let new = String::from_utf8_lossy(&new).into_owned();
        if !old.contains("#[cfg(test)]") && !new.contains("#[cfg(test)]") {
            continue;
        }
        let diff = git(
            dir,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "-U0",
                &parent,
                &r.commit,
                "--",
                &f.path,
            ],
            None,
            None,
        )?;
        let hunks: Vec<Hunk> = String::from_utf8_lossy(&diff)
            .lines()
            .filter_map(parse_hunk_header)
            .collect();
        let (old_ranges, new_ranges) = (cfg_test_ranges(&old), cfg_test_ranges(&new));
        let mut test_hunks = Vec::new();
        let mut code_lines = 0u64;
        for h in &hunks {
            match hunk_kind(h, &old_ranges, &new_ranges) {
                HunkKind::Mixed => return Ok(Err(DropReason::MixedTestHunk)),
                HunkKind::Test => test_hunks.push(*h),
                HunkKind::Code => code_lines += (h.old_count + h.new_count) as u64,
            }
        }
        if !test_hunks.is_empty() {
            splits.push(SplitFile {
                path: f.path.clone(),
                has_code: test_hunks.len() < hunks.len(),
                old,
                new,
                test_hunks,
                code_lines,
            });
        }
    }
    let split_of = |p: &str| splits.iter().find(|s| s.path == p);
    let mut files = Vec::new();
    let mut lines = 0u64;
    let mut binary = false;
    for f in &code {
        match split_of(&f.path) {
            Some(s) if !s.has_code => {}
            Some(s) => {
                files.push(f.path.clone());
                lines += s.code_lines;
            }
            None => {
                files.push(f.path.clone());
                match f.lines() {
                    Some(n) => lines += n,
                    None => binary = true,
                }
            }
        }
    }
    let mut all_tests = test_paths.clone();
    all_tests.extend(splits.iter().map(|s| s.path.clone()));
    all_tests.sort();
    if let Some(reason) = mining::size_drop(all_tests.len(), files.len(), lines, binary) {
        return Ok(Err(reason));
    }
    // Formatting only: nothing left of the code change with whitespace
    // ignored (a split file counts whole).
    if !substantive {
        return Ok(Err(DropReason::FormattingOnly));
    }
    let ecosystem = mining::ecosystem_of(&files);
    let subject = r.message.lines().next().unwrap_or("").to_string();
    Ok(Ok((
        MinedTask {
            commit: r.commit.clone(),
            base: parent,
            committed_at: r.committed_at.clone(),
            subject,
            files,
            lines,
            ecosystem,
            test_files: all_tests,
            environment_changes: environment,
            test_patch_bytes: 0,
            gold_patch_bytes: 0,
            test_patch: String::new(),
            gold_patch: String::new(),
            message: r.message.clone(),
        },
        splits,
        test_paths,
    )))
}

/// The tree between the two patches: the base with the test files of the
/// commit and the test hunks of its split files; `git diff` base→it is the
/// test patch and it→commit the gold patch, so that base + test + gold is
/// the commit.
fn split_patches(
    dir: &Path,
    base: &str,
    commit: &str,
    test_paths: &[String],
    splits: &[SplitFile],
    scratch: &Scratch,
) -> Result<(String, String), PackError> {
    if splits.is_empty() {
        return split_by_file(dir, base, commit, test_paths);
    }
    let _ = std::fs::remove_file(&scratch.index);
    git(dir, &["read-tree", base], None, Some(scratch))?;
    let mut info = String::new();
    let mut modes: BTreeMap<String, (String, String)> = BTreeMap::new();
    let wanted: BTreeSet<&str> = test_paths
        .iter()
        .map(String::as_str)
        .chain(splits.iter().map(|s| s.path.as_str()))
        .collect();
    if !wanted.is_empty() {
        let mut ls: Vec<&str> = vec!["ls-tree", "-z", commit, "--"];
        ls.extend(wanted.iter().copied());
        let out = git(dir, &ls, None, Some(scratch))?;
        for entry in String::from_utf8_lossy(&out)
            .split('\0')
            .filter(|e| !e.is_empty())
        {
            if let Some((meta, path)) = entry.split_once('\t') {
                let m: Vec<&str> = meta.split(' ').collect();
                if m.len() == 3 {
                    modes.insert(path.to_string(), (m[0].to_string(), m[2].to_string()));
                }
            }
        }
    }
    for p in test_paths {
        match modes.get(p) {
            Some((mode, sha)) => info.push_str(&format!("{mode} {sha}\t{p}\n")),
            None => info.push_str(&format!("0 {}\t{p}\n", "0".repeat(40))),
        }
    }
    for s in splits {
        let between = apply_hunks(&s.old, &s.new, &s.test_hunks);
        let sha = git(
            dir,
            &["hash-object", "-w", "--stdin"],
            Some(between.as_bytes()),
            Some(scratch),
        )?;
        let sha = String::from_utf8_lossy(&sha).trim().to_string();
        let mode = modes
            .get(&s.path)
            .map(|(m, _)| m.as_str())
            .unwrap_or("100644");
        info.push_str(&format!("{mode} {sha}\t{}\n", s.path));
    }
    git(
        dir,
        &["update-index", "--index-info"],
        Some(info.as_bytes()),
        Some(scratch),
    )?;
    let tree = git(dir, &["write-tree"], None, Some(scratch))?;
    let tree = String::from_utf8_lossy(&tree).trim().to_string();
    let diff = |a: &str, b: &str| -> Result<String, PackError> {
        let out = git(
            dir,
            &[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                "--binary",
                "--no-renames",
                "--full-index",
                a,
                b,
            ],
            None,
            Some(scratch),
        )?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    };
    let test_patch = diff(base, &tree)?;
    let gold_patch = diff(&tree, commit)?;
    Ok((test_patch, gold_patch))
}

/// The commit's diff cut file by file: the test files' sections are the
/// test patch, the rest the gold patch.
fn split_by_file(
    dir: &Path,
    base: &str,
    commit: &str,
    test_paths: &[String],
) -> Result<(String, String), PackError> {
    let text = commit_patch(dir, base, commit)?;
    let tests: BTreeSet<String> = test_paths
        .iter()
        .map(|p| format!("diff --git a/{p} b/{p}\n"))
        .collect();
    let (mut test, mut gold) = (String::new(), String::new());
    let mut sections: Vec<usize> = text
        .match_indices("diff --git ")
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
        .collect();
    sections.push(text.len());
    for w in sections.windows(2) {
        let section = &text[w[0]..w[1]];
        let header = section.split_inclusive('\n').next().unwrap_or("");
        if tests.contains(header) {
            test.push_str(section);
        } else {
            gold.push_str(section);
        }
    }
    Ok((test, gold))
}

/// The instruction a mined task has until the writer (a later stage) writes it.
pub const PLACEHOLDER_INSTRUCTION: &str = "This task was mined from the project's history and is not validated yet: its instruction is not written and its tests.json lists no FAIL_TO_PASS test. Validation by running decides them.\n";

/// The instruction a validated task has until the writer (a later stage)
/// writes it.
pub const VALIDATED_PLACEHOLDER: &str = "This task was mined from the project's history and validated by running; its instruction is not written yet (the commit message and the failing tests' output are kept beside its tests for the instruction's writer).\n";

/// Where a task keeps its RED run's output and its commit message for
/// the instruction's writer (the writer's own names).
pub use arena_domain::instruction::{COMMIT_MESSAGE_FILE, RED_OUTPUT_FILE};

/// A task to write: a candidate, its lists (empty: not validated), and
/// for a validated one the tail of its RED output.
pub struct PackEntry<'a> {
    pub task: &'a MinedTask,
    pub lists: arena_domain::test_report::TestLists,
    pub red_output: Option<&'a str>,
    /// The test command it was validated with.
    pub test_command: Option<&'a str>,
}

/// Writes the candidates as a pack of repo-native tasks (through the
/// SWE-bench mapping of `import`): the base is each commit's parent, the
/// patches are the split's, the instruction a placeholder and tests.json
/// empty, so that `pack show` and `pack run` say each task is not usable
/// until it is validated.
pub fn write_pack(
    report: &MineReport,
    project: &Path,
    out: &Path,
    test_command: Option<String>,
) -> Result<super::ImportReport, PackError> {
    let entries: Vec<PackEntry> = report
        .tasks
        .iter()
        .map(|task| PackEntry {
            task,
            lists: Default::default(),
            red_output: None,
            test_command: None,
        })
        .collect();
    write_entries(&entries, project, out, test_command)
}

/// Writes tasks as a pack (see [`write_pack`]): a validated one (its lists
/// given) gets its tests.json, a placeholder instruction, and its RED
/// output and commit message in [`RED_OUTPUT_FILE`] and
/// [`COMMIT_MESSAGE_FILE`].
pub fn write_entries(
    entries: &[PackEntry],
    project: &Path,
    out: &Path,
    test_command: Option<String>,
) -> Result<super::ImportReport, PackError> {
    if entries.is_empty() {
        return Err(PackError::Usage(
            "no task to write: the pack would be empty".into(),
        ));
    }
    let validated = entries.iter().all(|e| !e.lists.fail_to_pass.is_empty());
    // The command the tasks were validated with, when they share one.
    let shared: BTreeSet<&str> = entries.iter().filter_map(|e| e.test_command).collect();
    let test_command = match (test_command, shared.len()) {
        (Some(c), _) => Some(c),
        (None, 1) => shared.first().map(|c| c.to_string()),
        (None, _) => None,
    };
    let scratch = tempfile::tempdir().map_err(|source| PackError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let mut jsonl = String::new();
    let id_of = |t: &MinedTask| format!("mined-{}", &t.commit[..t.commit.len().min(12)]);
    for e in entries {
        let t = e.task;
        let instruction = if e.lists.fail_to_pass.is_empty() {
            PLACEHOLDER_INSTRUCTION
        } else {
            VALIDATED_PLACEHOLDER
        };
        let instance = serde_json::json!({
            "instance_id": id_of(t),
            "base_commit": t.base,
            "patch": t.gold_patch,
            "test_patch": t.test_patch,
            "problem_statement": instruction,
            "created_at": t.committed_at,
            "FAIL_TO_PASS": e.lists.fail_to_pass,
            "PASS_TO_PASS": e.lists.pass_to_pass,
            "mined_commit": t.commit,
            "mined_subject": t.subject,
            "environment_changes": t.environment_changes.join(" "),
        });
        jsonl.push_str(&instance.to_string());
        jsonl.push('\n');
    }
    let file = scratch.path().join("mined.jsonl");
    std::fs::write(&file, jsonl).map_err(|source| PackError::Io {
        path: file.clone(),
        source,
    })?;
    let options = super::ImportOptions {
        out: out.to_path_buf(),
        project: Some(project.to_path_buf()),
        test_command,
        name: None,
        description: Some(if validated {
            format!(
                "Mined from the history of {} and validated by running",
                project.display()
            )
        } else {
            format!(
                "Mined from the history of {} (not validated yet)",
                project.display()
            )
        }),
        bundle: false,
        time_limit_secs: None,
        // Each task keeps the command it was validated with (a Rust task's
        // carries the features its tests need).
        commands_by_base: entries
            .iter()
            .filter_map(|e| Some((e.task.base.clone(), e.test_command?.to_string())))
            .collect(),
    };
    let written = super::import(&file, &options)?;
    // What the instruction's writer reads, beside the hidden tests.
    let pack = super::Pack::load(&written.pack)?;
    for e in entries {
        let Some(red) = e.red_output else { continue };
        let original = id_of(e.task);
        let Some(id) = written
            .tasks
            .iter()
            .find(|w| w.original_id == original)
            .map(|w| w.id.clone())
        else {
            continue;
        };
        let Some(task) = pack.tasks.iter().find(|t| t.id.to_string() == id) else {
            continue;
        };
        for (name, text) in [
            (RED_OUTPUT_FILE, red),
            (COMMIT_MESSAGE_FILE, e.task.message.as_str()),
        ] {
            let path = task.dir.join(name);
            super::read::write_file(&path, text.as_bytes(), false)?;
        }
    }
    Ok(written)
}

/// The yield table, for the terminal.
pub fn yield_table(report: &MineReport) -> String {
    let mut rows = vec![
        ("commits scanned".to_string(), report.scanned.to_string()),
        ("candidates".to_string(), report.candidates.to_string()),
    ];
    let mut drops: Vec<(&String, &usize)> = report.dropped.iter().collect();
    drops.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (reason, n) in drops {
        rows.push((format!("dropped: {}", drop_words(reason)), n.to_string()));
    }
    rows.push(("validated".into(), "later".into()));
    rows.push(("instructions approved".into(), "later".into()));
    for (stage, secs) in &report.seconds_per_stage {
        rows.push((format!("time: {stage}"), format!("{secs:.2}s")));
    }
    arena_domain::mining_validate::two_columns(&rows)
}

/// Which of `paths` exist in `rev`'s tree.
pub fn existing_at(project: &Path, rev: &str, paths: &[String]) -> Result<Vec<String>, PackError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut args: Vec<&str> = vec!["ls-tree", "-r", "-z", "--name-only", rev, "--"];
    args.extend(paths.iter().map(String::as_str));
    let out = git(project, &args, None, None)?;
    let there: BTreeSet<String> = String::from_utf8_lossy(&out)
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    Ok(paths
        .iter()
        .filter(|p| there.contains(*p))
        .cloned()
        .collect())
}

/// The whole change of `commit` against `base` (the test patch and the
/// gold patch in one: the GOLD tree of validation is the commit's).
pub fn commit_patch(project: &Path, base: &str, commit: &str) -> Result<String, PackError> {
    let out = git(
        project,
        &[
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--binary",
            "--no-renames",
            "--full-index",
            base,
            commit,
        ],
        None,
        None,
    )?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

pub use arena_domain::mining_validate::drop_words;

/// What mining puts before a Rust base's `cargo test`: lints the base's
/// code denies (`#![deny(warnings)]`) that compilers newer than it added
/// would fail its build today, so they are capped at warnings. Not when
/// the project sets its own rustflags in `.cargo/config.toml`: the
/// variable would override them.
pub const RUST_LINTS_CAPPED: &str = "RUSTFLAGS=--cap-lints=warn";

/// The test command the files at `rev` call for, with the file that said
/// so (`None`: nothing says); for Rust, with [`RUST_LINTS_CAPPED`] when it
/// can be.
pub fn test_command_at(project: &Path, rev: &str) -> Result<Option<(String, String)>, PackError> {
    let Some(found) = super::project::detect_at(project, rev)? else {
        return Ok(None);
    };
    if found.ecosystem == "rust" && !super::project::sets_rustflags_at(project, rev) {
        return Ok(Some((
            format!("{RUST_LINTS_CAPPED} {}", found.command),
            format!(
                "{}; lints capped at warnings, as newer compilers lint old code more",
                found.reason
            ),
        )));
    }
    Ok(Some((found.command, found.reason)))
}

/// A Python test file with at most this many top-level test classes and
/// functions runs whole in a candidate's runs ([`targeted_commands`]).
pub const WHOLE_FILE_TESTS: usize = 20;

/// The commands of a candidate's runs, aimed at what its test patch
/// touches: `(before, after)`, for the BASE runs and for the RED and GOLD
/// runs. With pytest, in a test file of more than [`WHOLE_FILE_TESTS`]
/// tests, the top-level test classes and functions the test patch changes,
/// as node ids (such a file is often most of the suite's time:
/// more-itertools' `test_more.py` takes 30 s, one of its test classes
/// 1.5 s), so PASS_TO_PASS covers those; else, or when a change lies
/// outside them, the test files
/// ([`arena_domain::mining_validate::targeted_command`]). `before` holds
/// what of that exists at the base; `None` when nothing does (nothing to
/// keep passing).
pub fn targeted_commands(
    project: &Path,
    task: &MinedTask,
    command: &str,
    (base_files, after_files): (&[String], &[String]),
) -> Result<(Option<String>, String), PackError> {
    use arena_domain::mining_validate::targeted_command;
    use arena_domain::test_report::{sh_quote, Ecosystem as Runner};
    if Runner::detect(command) == Runner::Cargo {
        let before = match base_files.is_empty() {
            true => None,
            false => Some(cargo_command(project, &task.base, command, base_files)?),
        };
        return Ok((
            before,
            cargo_command(project, &task.commit, command, after_files)?,
        ));
    }
    let files = (
        (!base_files.is_empty()).then(|| targeted_command(command, base_files)),
        targeted_command(command, after_files),
    );
    if Runner::detect(command) != Runner::Pytest || after_files.is_empty() {
        return Ok(files);
    }
    let changed = mining::changed_lines(&task.test_patch);
    let text_at = |rev: &str, path: &str| -> Result<String, PackError> {
        let out = git(project, &["show", &format!("{rev}:{path}")], None, None)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    };
    let mut after = Vec::new();
    let mut before = Vec::new();
    for file in after_files {
        let name = file.rsplit('/').next().unwrap_or(file);
        let test_file =
            name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"));
        let (Some(lines), true) = (changed.get(file), test_file) else {
            return Ok(files);
        };
        let text = text_at(&task.commit, file)?;
        // A small file runs whole: its other tests keep passing too.
        if mining::python_test_names(&text).len() <= WHOLE_FILE_TESTS {
            after.push(file.clone());
            if base_files.contains(file) {
                before.push(file.clone());
            }
            continue;
        }
        let Some(nodes) = mining::python_test_nodes(file, &text, lines) else {
            return Ok(files);
        };
        if base_files.contains(file) {
            let there = mining::python_test_names(&text_at(&task.base, file)?);
            before.extend(
                nodes
                    .iter()
                    .filter(|n| n.rsplit("::").next().is_some_and(|n| there.contains(n)))
                    .cloned(),
            );
        }
        after.extend(nodes);
    }
    let line = |nodes: &[String]| {
        let quoted: Vec<String> = nodes.iter().map(|n| sh_quote(n)).collect();
        format!("{} {}", command.trim(), quoted.join(" "))
    };
    Ok(((!before.is_empty()).then(|| line(&before)), line(&after)))
}

/// A cargo command aimed at `files` (test files of the tree at `rev`): the
/// targets they are ([`arena_domain::mining_validate::targeted_command`],
/// or the name a `[[test]]` of the manifest gives a path), with the
/// features that gate them (`--features`, see
/// [`arena_domain::mining_cargo`]). A file of another crate of the
/// workspace, or under `tests/` where the manifest declares only its own
/// targets, runs the whole command over the workspace (`--workspace`).
fn cargo_command(
    project: &Path,
    rev: &str,
    command: &str,
    files: &[String],
) -> Result<String, PackError> {
    use arena_domain::mining_cargo as rust;
    use arena_domain::mining_validate::targeted_command;
    use arena_domain::test_report::sh_quote;
    let command = command.trim();
    let has = |word: &str| command.split_whitespace().any(|w| w == word);
    if has("--") {
        return Ok(command.to_string());
    }
    let read = |path: &str| text_at(project, rev, path);
    let declared = read("Cargo.toml")
        .as_deref()
        .and_then(rust::declared_tests)
        .unwrap_or_default();
    // A file of a crate below the root (its nearest `Cargo.toml` is
    // not the root's), unless it is one of the root package's own test
    // targets (`tests/NAME.rs`, `tests/NAME/main.rs`, or declared).
    let in_member = |file: &str| {
        let owned = declared.targets.iter().any(|(path, _)| path == file)
            || file
                .strip_prefix("tests/")
                .is_some_and(|rest| match rest.split_once('/') {
                    None => rest.ends_with(".rs"),
                    Some((_, "main.rs")) => true,
                    Some(_) => false,
                });
        if owned {
            return false;
        }
        let mut dir = Path::new(file).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            if read(&format!("{}/Cargo.toml", d.to_string_lossy())).is_some() {
                return true;
            }
            dir = d.parent();
        }
        false
    };
    let whole = || {
        if ["--workspace", "--all", "-p", "--package"]
            .iter()
            .any(|w| has(w))
        {
            command.to_string()
        } else {
            format!("{command} --workspace")
        }
    };
    let mut parts = BTreeSet::new();
    for f in files {
        if in_member(f) {
            return Ok(whole());
        }
        if let Some((_, name)) = declared.targets.iter().find(|(path, _)| path == f) {
            parts.insert(format!("--test {}", sh_quote(name)));
            continue;
        }
        if declared.only_these && f.starts_with("tests/") {
            return Ok(whole());
        }
        let one = targeted_command(command, std::slice::from_ref(f));
        match one.strip_prefix(command).map(str::trim) {
            Some(rest) if !rest.is_empty() => {
                parts.insert(rest.to_string());
            }
            _ => return Ok(whole()),
        }
    }
    let mut line = command.to_string();
    for part in &parts {
        line.push(' ');
        line.push_str(part);
    }
    Ok(with_features(project, rev, &line, files))
}

/// The text of `path` at `rev` (`None`: not there, or not read).
fn text_at(project: &Path, rev: &str, path: &str) -> Option<String> {
    let out = git(project, &["show", &format!("{rev}:{path}")], None, None).ok()?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// The command a mined task's tests run with (its `test_command`): the
/// mining's command, with the cargo features that gate the test files
/// (see [`cargo_command`]); the command itself for other runners.
pub fn task_command(project: &Path, task: &MinedTask, command: &str) -> String {
    use arena_domain::test_report::Ecosystem as Runner;
    let command = command.trim();
    if Runner::detect(command) != Runner::Cargo || command.split_whitespace().any(|w| w == "--") {
        return command.to_string();
    }
    with_features(project, &task.commit, command, &task.test_files)
}

/// `line` with ` --features …`: the features that gate `files` at `rev`
/// (none added when the command already chooses features).
fn with_features(project: &Path, rev: &str, line: &str, files: &[String]) -> String {
    use arena_domain::mining_cargo as rust;
    use arena_domain::test_report::sh_quote;
    let chooses = line.split_whitespace().any(|x| {
        matches!(x, "--features" | "--all-features" | "-F") || x.starts_with("--features=")
    });
    if chooses {
        return line.to_string();
    }
    let read = |path: &str| text_at(project, rev, path);
    let mut features: Vec<String> = Vec::new();
    for f in files {
        let mut found = Vec::new();
        for (parents, name) in rust::module_steps(f) {
            if let Some(gates) = parents
                .iter()
                .find_map(|p| read(p).and_then(|text| rust::module_features(&text, &name)))
            {
                found.extend(gates);
            }
        }
        if let Some(text) = read(f) {
            found.extend(rust::file_features(&text));
        }
        for g in found {
            if !features.contains(&g) {
                features.push(g);
            }
        }
    }
    if features.is_empty() {
        return line.to_string();
    }
    format!("{line} --features {}", sh_quote(&features.join(",")))
}
