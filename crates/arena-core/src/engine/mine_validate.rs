//! Mining validated by running (issue 41, point 4): each candidate of the
//! static scan ([`crate::pack::mine`]), newest first, is run on three
//! trees of its base in the check's jail with the environment for the
//! base's key — BASE (the parent), RED (the parent with the test patch)
//! and GOLD (the commit: RED with the gold patch) — each [`rules::RUNS`]
//! times ([`rules::RUNS_WHEN_MIXED`] when the runs of a tree disagree),
//! running only the test targets the test patch touches
//! ([`rules::targeted_command`]) with a machine-readable report, read as
//! the verifier reads it. [`rules::decide`] turns the runs into the
//! FAIL_TO_PASS and PASS_TO_PASS lists or a drop with its reason. RED and
//! GOLD run first; BASE only for a candidate they keep.
//!
//! Each tree is an overlay of a checkout of the base (made once per
//! candidate) with the patch applied inside the jail by Arena's own
//! binary, as a check's and the verifier's are; elsewhere a fresh checkout.
//!
//! A cargo command builds into one target folder per stage, kept for the
//! whole run ([`BuildCache`]): the dependencies are compiled once, not for
//! every run. Not one for all stages: every tree works at the project's
//! path, and cargo tells a changed file by its time, so a RED run would
//! take the library GOLD built from files the overlay's base left older.
//! Each candidate's base is checked out anew, newer than anything built
//! before it, so its own crates are always built again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use arena_domain::mining::MineProgress;
use arena_domain::mining_validate::{self as rules, Stage, StageRun, ValidateDrop, Validation};
use arena_domain::test_report::{self, Ecosystem, TestLists};

use crate::agent::process::Launch;
use crate::battle::Battle;
use crate::error::{Error, Result};
use crate::pack::mine::{self as pmine, MineOptions, MineReport, MinedTask};

use super::launch::{self, Scratch};
use super::workspace::Workspace;
use super::Engine;

/// The most of a RED run's output kept for the instruction's writer.
pub const RED_OUTPUT_BYTES: usize = 16 * 1024;

/// How validation runs.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// Runs of each tree (`--runs-to-validate`); [`rules::RUNS_WHEN_MIXED`]
    /// (or this, when more) when they disagree.
    pub runs: u32,
    /// The test command (`None`: detected from the files at each base).
    pub test_command: Option<String>,
    /// Stop after this many validated tasks.
    pub limit: Option<usize>,
    /// Set from elsewhere to stop the run.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for ValidateOptions {
    fn default() -> ValidateOptions {
        ValidateOptions {
            runs: rules::RUNS,
            test_command: None,
            limit: None,
            cancel: None,
        }
    }
}

impl ValidatedTask {
    /// What the pack's writer takes of it.
    pub fn entry(&self) -> pmine::PackEntry<'_> {
        pmine::PackEntry {
            task: &self.task,
            lists: TestLists {
                fail_to_pass: self.fail_to_pass.clone(),
                pass_to_pass: self.pass_to_pass.clone(),
            },
            red_output: Some(&self.red_output),
            test_command: Some(&self.test_command),
        }
    }
}

/// A candidate validated by running: a task.
#[derive(Debug, Clone, Serialize)]
pub struct ValidatedTask {
    #[serde(flatten)]
    pub task: MinedTask,
    /// The test command its tests run with.
    pub test_command: String,
    #[serde(rename = "FAIL_TO_PASS")]
    pub fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS")]
    pub pass_to_pass: Vec<String>,
    /// Runs made of each tree.
    pub runs: BTreeMap<String, u32>,
    /// Its validation, in seconds.
    pub seconds: f64,
    /// The last [`RED_OUTPUT_BYTES`] of the first RED run's output.
    #[serde(skip)]
    pub red_output: String,
}

/// A candidate that running dropped.
#[derive(Debug, Clone, Serialize)]
pub struct DroppedCandidate {
    pub commit: String,
    pub subject: String,
    pub reason: String,
    /// The tests that show it (a few), or the error that stopped it.
    pub detail: Vec<String>,
    pub seconds: f64,
}

/// A whole mining run: the static scan, then validation.
#[derive(Debug, Clone, Serialize)]
pub struct MineRun {
    pub scanned: usize,
    pub candidates: usize,
    /// Candidates run (validated or dropped); the rest were not reached
    /// (`--limit`, a cancel).
    pub tried: usize,
    pub validated: usize,
    /// Written by the instruction's writer and approved: none until it
    /// exists.
    pub instructions_approved: usize,
    /// Commits and candidates dropped, by reason (the scan's and
    /// validation's reasons together).
    pub dropped: BTreeMap<String, usize>,
    pub tasks: Vec<ValidatedTask>,
    pub dropped_candidates: Vec<DroppedCandidate>,
    pub seconds_per_stage: BTreeMap<String, f64>,
    pub cancelled: bool,
}

impl MineRun {
    /// The run as progress at `stage`.
    pub(crate) fn progress(
        &self,
        stage: &str,
        current: Option<String>,
        eta: Option<u64>,
    ) -> MineProgress {
        MineProgress {
            stage: stage.to_string(),
            scanned: self.scanned as u64,
            candidates: self.candidates as u64,
            validated: self.validated as u64,
            dropped: self
                .dropped
                .iter()
                .map(|(k, v)| (k.clone(), *v as u64))
                .collect(),
            eta_secs: eta,
            current,
        }
    }

    /// The yield table, for the terminal (issue 41, point 7).
    pub fn yield_table(&self) -> String {
        let mut rows: Vec<(String, String)> = vec![
            ("commits scanned".into(), self.scanned.to_string()),
            ("candidates".into(), self.candidates.to_string()),
            ("candidates run".into(), self.tried.to_string()),
        ];
        let mut drops: Vec<(&String, &usize)> = self.dropped.iter().collect();
        drops.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (reason, n) in drops {
            rows.push((
                format!("dropped: {}", rules::drop_words(reason)),
                n.to_string(),
            ));
        }
        rows.push(("validated".into(), self.validated.to_string()));
        if self.tried > 0 {
            rows.push((
                "validated / candidates run".into(),
                format!("{:.0} %", 100.0 * self.validated as f64 / self.tried as f64),
            ));
        }
        rows.push((
            "instructions approved".into(),
            self.instructions_approved.to_string(),
        ));
        for (stage, secs) in &self.seconds_per_stage {
            rows.push((format!("time: {stage}"), format!("{secs:.1}s")));
        }
        let mut s = rules::two_columns(&rows);
        if self.cancelled {
            s.push_str("(cancelled: the counts are those until then)\n");
        }
        s
    }
}

/// A task aborted when this is dropped.
struct Aborting(tokio::task::JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn cancelled(flag: &Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) -> bool {
    flag.as_ref()
        .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
}

impl Engine {
    /// Mines `options.project`'s history and validates its candidates by
    /// running them (see the module's notes), telling `on_progress` where
    /// it stands: the static scan's stages, then `validate` after each
    /// candidate (with the time left at the pace so far), then `done` or
    /// `cancelled`.
    pub async fn mine_with_progress(
        &self,
        options: &MineOptions,
        validate: &ValidateOptions,
        mut on_progress: impl FnMut(&MineProgress) + Send,
    ) -> Result<MineRun> {
        let scan_options = MineOptions {
            limit: None,
            cancel: options.cancel.clone().or_else(|| validate.cancel.clone()),
            ..options.clone()
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<MineProgress>();
        let scan = tokio::task::spawn_blocking(move || {
            pmine::mine_with_progress(&scan_options, |p| {
                let _ = tx.send(p.clone());
            })
        });
        while let Some(p) = rx.recv().await {
            if p.stage != "done" {
                on_progress(&p);
            }
        }
        let report: MineReport = scan.await??;
        let project = crate::pack::repository_root(&options.project)?;
        let mut run = MineRun {
            scanned: report.scanned,
            candidates: report.candidates,
            tried: 0,
            validated: 0,
            instructions_approved: 0,
            dropped: report.dropped.clone(),
            tasks: Vec::new(),
            dropped_candidates: Vec::new(),
            seconds_per_stage: report.seconds_per_stage.clone(),
            cancelled: report.cancelled,
        };
        let token = CancellationToken::new();
        let cache = BuildCache::create(self)?;
        let started = Instant::now();
        let stop = options.cancel.clone().or_else(|| validate.cancel.clone());
        // A stop ends the candidate at hand too (its test runs), not only
        // the run between two candidates.
        let _watch = stop.clone().map(|flag| {
            let token = token.clone();
            Aborting(tokio::spawn(async move {
                while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                token.cancel();
            }))
        });
        for task in &report.tasks {
            if validate.limit.is_some_and(|l| run.validated >= l) {
                break;
            }
            if run.cancelled || cancelled(&stop) {
                run.cancelled = true;
                break;
            }
            let current = format!(
                "{} {}",
                &task.commit[..task.commit.len().min(12)],
                task.subject
            );
            on_progress(&run.progress("validate", Some(current), None));
            let at = Instant::now();
            let outcome =
                validate_candidate(self, &project, task, validate, (&cache, &token)).await;
            let seconds = at.elapsed().as_secs_f64();
            run.tried += 1;
            let drop = |reason: &str, detail: Vec<String>| DroppedCandidate {
                commit: task.commit.clone(),
                subject: task.subject.clone(),
                reason: reason.to_string(),
                detail,
                seconds,
            };
            match outcome {
                Ok(Outcome::Validated(mut v)) => {
                    v.seconds = seconds;
                    tracing::info!(commit = %task.commit, f2p = v.fail_to_pass.len(), p2p = v.pass_to_pass.len(), seconds, "validated a mined task");
                    run.validated += 1;
                    run.tasks.push(*v);
                }
                Ok(Outcome::Dropped(reason, detail)) => {
                    tracing::info!(commit = %task.commit, reason, seconds, "dropped a mined candidate");
                    *run.dropped.entry(reason.clone()).or_default() += 1;
                    run.dropped_candidates.push(drop(&reason, detail));
                }
                Err(Error::Cancelled) => {
                    run.tried -= 1;
                    run.cancelled = true;
                    break;
                }
                Err(e) => {
                    // Arena's own failure on one candidate (a tree it could
                    // not make): said, counted, and the run goes on.
                    tracing::warn!(commit = %task.commit, error = %e, "a mined candidate could not be validated");
                    *run.dropped.entry("validation_error".into()).or_default() += 1;
                    run.dropped_candidates
                        .push(drop("validation_error", vec![e.to_string()]));
                }
            }
            let pace = started.elapsed().as_secs_f64() / run.tried.max(1) as f64;
            let left = match validate.limit {
                Some(l) if run.validated > 0 => {
                    let per_validated = started.elapsed().as_secs_f64() / run.validated as f64;
                    (per_validated * l.saturating_sub(run.validated) as f64)
                        .min(pace * (report.tasks.len() - run.tried) as f64)
                }
                _ => pace * (report.tasks.len() - run.tried) as f64,
            };
            on_progress(&run.progress("validate", None, Some(left.ceil() as u64)));
        }
        run.seconds_per_stage
            .insert("validate".into(), started.elapsed().as_secs_f64());
        cache.remove().await;
        on_progress(&run.progress(
            if run.cancelled { "cancelled" } else { "done" },
            None,
            Some(0),
        ));
        Ok(run)
    }
}

enum Outcome {
    Validated(Box<ValidatedTask>),
    Dropped(String, Vec<String>),
}

/// The build folders of a mining run, one per stage (see the module's
/// notes), removed when it ends.
struct BuildCache(PathBuf);

impl BuildCache {
    fn create(engine: &Engine) -> Result<BuildCache> {
        let root = engine.data_dir().join("mining").join(format!(
            "builds-{}-{}",
            std::process::id(),
            uuid::Uuid::now_v7().simple()
        ));
        std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
        Ok(BuildCache(root))
    }

    /// The target folder of `stage`'s runs when `command` builds with
    /// cargo.
    fn target(&self, stage: Stage, command: &str) -> Result<Option<PathBuf>> {
        if Ecosystem::detect(command) != Ecosystem::Cargo {
            return Ok(None);
        }
        let dir = self.0.join(stage.as_str());
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(Some(dir))
    }

    async fn remove(self) {
        let root = self.0;
        let _ = tokio::task::spawn_blocking(move || crate::agent::environment::remove(&root)).await;
    }
}

/// The trees of one candidate: its base's checkout and the workspace
/// (objects, environment) around it.
struct Trees<'a> {
    engine: &'a Engine,
    cache: &'a BuildCache,
    battle: Battle,
    base: String,
    root: PathBuf,
    lower: PathBuf,
    workspace: Workspace,
    token: &'a CancellationToken,
    made: u32,
}

/// A battle that is never recorded: what the check's machinery needs to
/// know of the project and the base (its id names the trees' folder).
fn battle_of(project: &Path, commit: &str) -> Battle {
    let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
    Battle {
        id: format!("mine-{}", &commit[..commit.len().min(12)]),
        battle_type: crate::battle::BattleType::Coding,
        status: crate::battle::BattleStatus::Running,
        prompt: String::new(),
        project: project.to_path_buf(),
        results_path: PathBuf::new(),
        created_at: now,
        finished_at: None,
        winner: None,
        contestants: Vec::new(),
        base_commit: None,
        check_command: None,
        series_id: None,
        blind: false,
        revealed_at: None,
        user_verdict: None,
        tags: Vec::new(),
        judging: None,
        machine: None,
        user_name: None,
        voted_by: None,
        source: None,
    }
}

async fn validate_candidate(
    engine: &Engine,
    project: &Path,
    task: &MinedTask,
    options: &ValidateOptions,
    (cache, token): (&BuildCache, &CancellationToken),
) -> Result<Outcome> {
    let (p, base) = (project.to_path_buf(), task.base.clone());
    let command = match &options.test_command {
        Some(c) => c.clone(),
        None => {
            let found =
                tokio::task::spawn_blocking(move || pmine::test_command_at(&p, &base)).await??;
            match found {
                Some((c, _)) => c,
                None => return Ok(Outcome::Dropped("no_test_command".into(), Vec::new())),
            }
        }
    };
    // The environment for the base's key, prepared first when it must be
    // (so that no battle's stream is asked to show it).
    if let Err(e) = engine.environment_for(project, &task.base, token).await {
        if matches!(e, Error::Cancelled) {
            return Err(e);
        }
        return Ok(Outcome::Dropped(
            ValidateDrop::EnvironmentNotPrepared.as_str().into(),
            vec![e.to_string()],
        ));
    }
    let (p, t, c) = (project.to_path_buf(), task.clone(), command.clone());
    let (targets, gold_patch, command) = tokio::task::spawn_blocking(move || {
        let before = pmine::existing_at(&p, &t.base, &t.test_files)?;
        let after = pmine::existing_at(&p, &t.commit, &t.test_files)?;
        let targets = pmine::targeted_commands(&p, &t, &c, (&before, &after))?;
        let gold = pmine::commit_patch(&p, &t.base, &t.commit)?;
        let command = pmine::task_command(&p, &t, &c);
        Ok::<_, crate::pack::PackError>((targets, gold, command))
    })
    .await??;
    let mut trees = Trees::new(engine, project, task, (cache, token)).await?;
    let outcome = run_stages(
        &mut trees,
        task,
        &command,
        options.runs.max(1),
        (targets.0.as_deref(), &targets.1),
        &gold_patch,
    )
    .await;
    trees.remove().await;
    outcome
}

async fn run_stages(
    trees: &mut Trees<'_>,
    task: &MinedTask,
    command: &str,
    runs: u32,
    (before, after): (Option<&str>, &str),
    gold_patch: &str,
) -> Result<Outcome> {
    let mixed_runs = runs.max(rules::RUNS_WHEN_MIXED);
    let mut counts = BTreeMap::new();
    let mut red_output = String::new();
    let mut gold_output = String::new();
    // GOLD first: a suite that never starts, or is too slow, ends it.
    let mut gold = Vec::new();
    for n in 0..mixed_runs {
        if n >= runs && !rules::disagree(&gold) {
            break;
        }
        let (run, output) = trees.run(Stage::Gold, gold_patch, after).await?;
        let stop = !run.started
            || run.tests.is_empty()
            || run.timed_out
            || run.seconds > rules::GOLD_SECONDS as f64;
        gold.push(run);
        if stop {
            gold_output = output;
            break;
        }
    }
    counts.insert(Stage::Gold.as_str().to_string(), gold.len() as u32);
    let early = rules::decide(&[], &[], &gold);
    if let Validation::Dropped(
        reason @ (ValidateDrop::SuiteDidNotStart | ValidateDrop::GoldTooSlow),
        _,
    ) = early
    {
        // The run's last lines say why.
        let why = rules::tail(&gold_output, 2048).to_string();
        let reason = if reason == ValidateDrop::SuiteDidNotStart && not_applied(&gold_output) {
            ValidateDrop::PatchDoesNotApply
        } else {
            reason
        };
        return Ok(Outcome::Dropped(reason.as_str().into(), vec![why]));
    }
    let mut red = Vec::new();
    for n in 0..mixed_runs {
        if n >= runs && !rules::disagree(&red) {
            break;
        }
        let (run, output) = trees.run(Stage::Red, &task.test_patch, after).await?;
        if n == 0 {
            red_output = rules::tail(&output, RED_OUTPUT_BYTES).to_string();
        }
        red.push(run);
    }
    counts.insert(Stage::Red.as_str().to_string(), red.len() as u32);
    // BASE only decides PASS_TO_PASS and whether a failure is the
    // project's own: not run for a candidate RED and GOLD already drop.
    let kept = matches!(
        rules::decide(&[], &red, &gold),
        Validation::Validated(_) | Validation::Dropped(ValidateDrop::GoldFails, _)
    );
    let mut base = Vec::new();
    if let (true, Some(before)) = (kept, before) {
        for n in 0..mixed_runs {
            if n >= runs && !rules::disagree(&base) {
                break;
            }
            let (run, _) = trees.run(Stage::Base, "", before).await?;
            base.push(run);
        }
    }
    counts.insert(Stage::Base.as_str().to_string(), base.len() as u32);
    match rules::decide(&base, &red, &gold) {
        Validation::Dropped(reason, detail) => Ok(Outcome::Dropped(reason.as_str().into(), detail)),
        Validation::Validated(TestLists {
            fail_to_pass,
            pass_to_pass,
        }) => Ok(Outcome::Validated(Box::new(ValidatedTask {
            task: task.clone(),
            test_command: command.to_string(),
            fail_to_pass,
            pass_to_pass,
            runs: counts,
            seconds: 0.0,
            red_output,
        }))),
    }
}

/// Whether a run's output says its patch was refused by Arena's apply
/// rules (in the jail, or on a fresh checkout).
fn not_applied(output: &str) -> bool {
    output.contains("could not be applied") || output.starts_with("the patch does not apply")
}

impl<'a> Trees<'a> {
    async fn new(
        engine: &'a Engine,
        project: &Path,
        task: &MinedTask,
        (cache, token): (&'a BuildCache, &'a CancellationToken),
    ) -> Result<Trees<'a>> {
        let battle = battle_of(project, &task.commit);
        let root = engine.data_dir().join("worktrees").join(&battle.id);
        // One left by a run that crashed goes first: its base's files are
        // older than what the build folders hold (see the module's notes).
        if root.exists() {
            let (project, root, id) = (project.to_path_buf(), root.clone(), battle.id.clone());
            tokio::task::spawn_blocking(move || {
                super::fresh::remove_base_tree(&project, &root, &id);
                crate::agent::environment::remove(&root);
            })
            .await?;
        }
        std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
        let lower = super::fresh::base_tree(engine, &battle, &root, &task.base).await?;
        let workspace = Workspace::of(engine, &battle, (&lower, "mine"), &task.base, token).await?;
        Ok(Trees {
            engine,
            cache,
            battle,
            base: task.base.clone(),
            root,
            lower,
            workspace,
            token,
            made: 0,
        })
    }

    /// One run of `command` over the base with `patch` (none: the base
    /// itself): what it reported, and its output.
    async fn run(
        &mut self,
        stage: Stage,
        patch: &str,
        command: &str,
    ) -> Result<(StageRun, String)> {
        self.made += 1;
        let name = format!(
            "{}-{}-{}",
            crate::battle::short_id(&self.battle.id),
            stage.as_str(),
            self.made
        );
        let engine = self.engine;
        let logs_root = Scratch::create(
            &engine
                .data_dir()
                .join("agents")
                .join(format!("{}-{name}-logs", self.battle.id)),
        )?;
        let logs = logs_root.path().join("verifier");
        std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
        let plan = test_report::report_command(
            command,
            Ecosystem::detect(command),
            &[],
            super::verify::LOGS_VAR,
        );
        let limit = Duration::from_secs(rules::GOLD_SECONDS);
        let target = self.cache.target(stage, command)?;
        let jail = RunIn {
            logs: &logs,
            target: target.as_deref(),
            limit,
        };
        let (tree, ran) = if super::fresh::overlays_here(engine) {
            let path = self.root.join(&name);
            let made = tokio::task::spawn_blocking({
                let path = path.clone();
                move || {
                    crate::agent::environment::remove(&path);
                    std::fs::create_dir_all(&path)
                }
            })
            .await?;
            made.map_err(|e| Error::io(&path, e))?;
            let fresh = self.workspace.over(&path, &self.lower, patch);
            let ran = run_tests(engine, &name, &plan.command, &fresh, &jail, self.token).await;
            (path, ran)
        } else {
            let (source, root, n, base, p) = (
                self.battle.project.clone(),
                self.root.clone(),
                name.clone(),
                self.base.clone(),
                patch.to_string(),
            );
            let made = tokio::task::spawn_blocking(move || {
                super::fresh::fresh_tree(&source, &root, &n, &base, &p)
            })
            .await?
            .map_err(|e| Error::Git(format!("making a fresh tree of the base: {e}")))?;
            let (path, applied) = made;
            let ran = match applied {
                Ok(()) => {
                    let fresh = self.workspace.at(&path);
                    run_tests(engine, &name, &plan.command, &fresh, &jail, self.token).await
                }
                Err(reason) => Ok(Ran {
                    exit: None,
                    tail: format!("the patch does not apply: {reason}"),
                    seconds: 0.0,
                }),
            };
            (path, ran)
        };
        let gone = tree.clone();
        tokio::task::spawn_blocking(move || crate::agent::environment::remove(&gone)).await?;
        let ran = ran?;
        let file = logs.join(&plan.report_file);
        let text = tokio::task::spawn_blocking(move || {
            super::verify::read_report(&file, super::verify::REPORT_BYTES)
        })
        .await?;
        let mut run = StageRun {
            started: false,
            tests: BTreeMap::new(),
            timed_out: ran.exit.is_some_and(|e| e.timed_out),
            seconds: ran.seconds,
        };
        if let (Some(_), Some(Ok(text))) = (&ran.exit, &text) {
            if let Ok(mut results) = test_report::parse(plan.format, text) {
                results.relative_to(&tree.to_string_lossy());
                results.relative_to(&self.battle.project.to_string_lossy());
                run.started = results.started();
                run.tests = results.tests;
            }
        }
        tracing::debug!(
            stage = stage.as_str(),
            started = run.started,
            tests = run.tests.len(),
            seconds = run.seconds,
            "a validation run"
        );
        Ok((run, ran.tail))
    }

    async fn remove(self) {
        let (project, root, id) = (
            self.battle.project.clone(),
            self.root.clone(),
            self.battle.id.clone(),
        );
        drop(self.workspace);
        let _ = tokio::task::spawn_blocking(move || {
            super::fresh::remove_base_tree(&project, &root, &id);
            let _ = std::fs::remove_dir_all(&root);
        })
        .await;
    }
}

/// How a run went: its exit (`None`: it could not start, the tail says
/// why), its output's tail, its time.
struct Ran {
    exit: Option<test_report::Exit>,
    tail: String,
    seconds: f64,
}

/// Where a run writes and how long it may take.
struct RunIn<'a> {
    /// The report's folder, named by the verifier's variable.
    logs: &'a Path,
    /// The stage's cargo target folder, when the command builds with cargo.
    target: Option<&'a Path>,
    limit: Duration,
}

/// Runs `command` in the check's jail over `workspace` (its patch applied
/// first inside the jail when it is an overlay), with the folders of `run`
/// writable: the verifier's way ([`super::verify`]), for a tree that
/// belongs to no contestant.
async fn run_tests(
    engine: &Engine,
    name: &str,
    command: &str,
    workspace: &Workspace,
    run: &RunIn<'_>,
    token: &CancellationToken,
) -> Result<Ran> {
    let path = workspace.path.as_path();
    let scratch = Scratch::create(&engine.data_dir().join("agents").join(format!("{name}-run")))?;
    let (mut env, mut sandbox, program, args) =
        super::verify::test_jail(engine, &scratch, command, workspace, run.logs)?;
    if let Some(target) = run.target {
        if let Some(sandbox) = sandbox.as_mut() {
            sandbox.write.push(target.to_path_buf());
        }
        env.push((
            "CARGO_TARGET_DIR".into(),
            target.to_string_lossy().into_owned(),
        ));
    }
    let launch = Launch {
        program,
        args,
        cwd: path.to_path_buf(),
        env,
        timeout: run.limit,
        sandbox,
        bounds: launch::bounds(engine),
        door: None,
        registries: None,
    };
    let started = Instant::now();
    let (exit, tail) = launch::run_keeping_tail(&launch, token, 200, "mine-validate").await;
    let seconds = started.elapsed().as_secs_f64();
    drop(scratch);
    match exit {
        Err(e) => Ok(Ran {
            exit: None,
            tail: format!("the tests could not start: {e}"),
            seconds,
        }),
        Ok(exit) if exit.cancelled => Err(Error::Cancelled),
        Ok(exit) => Ok(Ran {
            exit: Some(test_report::Exit {
                code: exit.code,
                timed_out: exit.timed_out,
                signal: exit.signal,
            }),
            tail,
            seconds,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_patch_is_told_from_a_suite_that_did_not_start() {
        assert!(not_applied(
            "the change could not be applied to a fresh tree of the base: invalid patch header"
        ));
        assert!(not_applied("the patch does not apply: a conflict"));
        assert!(!not_applied(
            "ERROR tests/test_x.py\nInterrupted: 1 error during collection"
        ));
    }
}
