//! A task pack's run: a series whose prompts are the pack's tasks. Each
//! battle starts from its task's base, sealed ([`super::sealed`]); when a
//! contestant's agent has ended, the task's verifier ([`super::verify`])
//! decides its result in place of a check or a judge, and that verdict is
//! the series' goal check (kept in the store, so a resumed run never runs
//! a finished one again). The scores ([`crate::pack_score`]) are computed
//! from those verdicts, with their intervals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::battle::{BattleType, ContestantSpec, ContestantStatus};
use crate::error::{Error, Invalid, Result};
use crate::pack::{Pack, PackError, Task};
use crate::pack_cutoff::{self, CutoffSplit};
use crate::pack_score::{self, PackScores, RunOutcome, TaskRun};
use crate::series::{GoalCheck, SeriesPrompt, SeriesRequest, TaskRef};

use super::series::SeriesStart;
use super::task_verdict::task_tests;
pub use super::task_verdict::VerifierDetail;
use super::Engine;

/// The tag every battle of a pack run carries, with the pack's name.
const PACK_TAG: &str = "pack";

/// What the user asks for when running a pack.
#[derive(Debug, Clone)]
pub struct PackRunRequest {
    /// The pack's folder.
    pub pack: PathBuf,
    /// The project its tasks' bases are in; `None`: the pack's own bundle,
    /// cloned once into the data directory.
    pub project: Option<PathBuf>,
    pub contestants: Vec<ContestantSpec>,
    /// Runs of each task per contestant; `None`: the pack's default.
    pub runs: Option<u32>,
    /// Battles at once (within the lanes).
    pub parallel: u32,
    /// Only these tasks (ids); empty: every runnable task.
    pub tasks: Vec<String>,
    pub budget_usd: Option<f64>,
    /// An idempotency key: the same key and request give the same run.
    pub key: Option<String>,
}

/// A task left out of a run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedTask {
    pub id: String,
    pub reason: String,
}

/// What starting a pack run did.
#[derive(Debug, Clone)]
pub struct PackRunStart {
    pub start: SeriesStart,
    pub skipped: Vec<SkippedTask>,
    pub project: PathBuf,
}

/// One run of one task by one contestant, as a report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackRunRow {
    pub task: String,
    pub contestant: String,
    pub run: u32,
    pub battle_id: String,
    pub outcome: RunOutcome,
    /// The verifier's or the agent's word on it.
    pub reason: Option<String>,
    pub fail_to_pass_fraction: Option<f64>,
    pub dropped: Vec<String>,
    pub cost_usd: Option<f64>,
    pub seconds: f64,
}

/// A pack run's report: its scores with their intervals, and every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackRunReport {
    pub series_id: String,
    pub pack: String,
    pub version: String,
    pub status: String,
    /// Runs of each task per contestant asked for.
    pub runs_per_task: u32,
    /// Runs done (a verdict or an error) of those asked for.
    pub done: usize,
    pub planned: usize,
    #[serde(flatten)]
    pub scores: PackScores,
    /// Each contestant's scores on the tasks committed after its model's
    /// training cutoff and on the rest (`[[model_cutoff]]`), with the gap.
    #[serde(default)]
    pub cutoffs: Vec<CutoffSplit>,
    pub tasks: Vec<PackRunTask>,
}

/// One task's runs in a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackRunTask {
    pub id: String,
    pub runs: Vec<PackRunRow>,
}

impl Engine {
    /// Starts a pack run: the pack read and checked, its project found
    /// (given, or the pack's bundle cloned once), the tasks that cannot
    /// run here left out with the reason, and a Coding series recorded
    /// whose prompts are the tasks (no judge, no check: the verifiers
    /// decide). Call [`Engine::run_series`] next.
    pub async fn start_pack_run(&self, request: PackRunRequest) -> Result<PackRunStart> {
        let data = self.data_dir().to_path_buf();
        let (pack, project) = tokio::task::spawn_blocking({
            let (dir, project) = (request.pack.clone(), request.project.clone());
            move || pack_and_project(&dir, project.as_deref(), &data)
        })
        .await??;
        let wanted: Vec<&str> = request.tasks.iter().map(String::as_str).collect();
        if let Some(unknown) = wanted.iter().find(|id| pack.task(id).is_none()) {
            return Err(Invalid::Other(format!(
                "the pack has no task `{unknown}`; `arena pack show {}` lists them",
                pack.root.display()
            ))
            .into());
        }
        let broken = tokio::task::spawn_blocking({
            let (data, root) = (self.data_dir().to_path_buf(), pack.root.clone());
            move || broken_tasks(&data, &root)
        })
        .await?;
        let (mut prompts, mut skipped) = (Vec::new(), Vec::new());
        for task in &pack.tasks {
            if !wanted.is_empty() && !wanted.contains(&task.id.as_str()) {
                continue;
            }
            let runnable = match broken.get(task.id.as_str()) {
                Some(why) => Err(format!("`arena pack check` found it broken: {why}")),
                None => runnable_as_written(task),
            };
            match runnable {
                Err(reason) => skipped.push(SkippedTask {
                    id: task.id.as_str().to_string(),
                    reason,
                }),
                Ok(base) => prompts.push(SeriesPrompt {
                    prompt: task.instruction.clone(),
                    goal: None,
                    check: None,
                    tags: vec![format!("task:{}", task.id.as_str())],
                    task: Some(TaskRef {
                        pack: pack.root.clone(),
                        id: task.id.as_str().to_string(),
                        base: base.to_string(),
                        tests: task_tests(task),
                    }),
                }),
            }
        }
        // Each base as the full commit it names in the project (a worker
        // elsewhere fetches it by that name).
        let (prompts, unknown) = tokio::task::spawn_blocking({
            let project = project.clone();
            move || full_bases(&project, prompts)
        })
        .await?;
        skipped.extend(unknown);
        if prompts.is_empty() {
            let why: Vec<String> = skipped
                .iter()
                .map(|s| format!("{}: {}", s.id, s.reason))
                .collect();
            return Err(Invalid::Other(format!(
                "no task of the pack can run here ({})",
                why.join("; ")
            ))
            .into());
        }
        let mut series = SeriesRequest::new(
            BattleType::Coding,
            project.clone(),
            request.contestants,
            prompts,
        );
        series.runs = request.runs.unwrap_or(pack.manifest.defaults.runs).max(1);
        series.parallel = request.parallel.max(1);
        series.budget_usd = request.budget_usd;
        series.analysis = false;
        series.tags = vec![format!("{PACK_TAG}:{}", pack.manifest.name)];
        let start = self.create_series(series, request.key).await?;
        Ok(PackRunStart {
            start,
            skipped,
            project,
        })
    }

    /// The report of the pack run `id` (a series whose prompts are tasks):
    /// every run's verdict and the scores with their intervals.
    pub async fn pack_run_report(&self, id: &str) -> Result<PackRunReport> {
        let Some((summary, rows)) = self.pack_run_rows(id).await? else {
            return Err(Invalid::Other(format!(
                "series {} is not a pack run",
                crate::battle::short_id(id)
            ))
            .into());
        };
        let series = &summary.series;
        let request = &series.request;
        // Named by its manifest; by its folder when it is gone since.
        let dir = request
            .prompts
            .iter()
            .find_map(|p| p.task.as_ref())
            .map(|t| t.pack.clone())
            .unwrap_or_default();
        // ...and each task's commit date with it, for the cutoff split.
        let (name, version, dates) = tokio::task::spawn_blocking(move || match Pack::load(&dir) {
            Ok(p) => {
                let dates: BTreeMap<String, String> = p
                    .tasks
                    .iter()
                    .filter_map(|t| Some((t.id.as_str().to_string(), t.meta.committed_at.clone()?)))
                    .collect();
                (p.manifest.name, p.manifest.version, dates)
            }
            Err(_) => (dir.display().to_string(), String::new(), BTreeMap::new()),
        })
        .await?;
        let runs = task_runs(&rows);
        let cutoffs = match dates.is_empty() {
            true => Vec::new(),
            false => pack_cutoff::split(&runs, &dates, &self.config().model_cutoffs()),
        };
        let scores = pack_score::score(&runs);
        let mut tasks: BTreeMap<String, Vec<PackRunRow>> = BTreeMap::new();
        for p in request.prompts.iter().filter_map(|p| p.task.as_ref()) {
            tasks.entry(p.id.clone()).or_default();
        }
        let done = rows.iter().filter(|r| r.reason.is_some()).count();
        for r in rows {
            tasks.entry(r.task.clone()).or_default().push(r);
        }
        Ok(PackRunReport {
            series_id: series.id.clone(),
            pack: name,
            version,
            status: series.status.as_str().to_string(),
            runs_per_task: request.runs,
            done,
            planned: request.battles() as usize * request.contestants.len(),
            scores,
            cutoffs,
            tasks: tasks
                .into_iter()
                .map(|(id, runs)| PackRunTask { id, runs })
                .collect(),
        })
    }
    /// Every run of the pack run `id` with its verdict, and the series'
    /// summary; `None` when the series is not a pack run.
    pub(super) async fn pack_run_rows(
        &self,
        id: &str,
    ) -> Result<Option<(crate::series::SeriesSummary, Vec<PackRunRow>)>> {
        let summary = self.series_summary(id).await?;
        let request = &summary.series.request;
        if !request.prompts.iter().any(|p| p.task.is_some()) {
            return Ok(None);
        }
        let sid = summary.series.id.clone();
        let checks = self.db(move |s| s.series_goal_checks(&sid)).await?;
        let mut rows = Vec::new();
        for row in &summary.rows {
            let Some(task) = request
                .prompts
                .get(row.prompt)
                .and_then(|p| p.task.as_ref())
            else {
                continue;
            };
            let last = checks.get(&row.contestant_id).and_then(|v| v.last());
            let detail: Option<VerifierDetail> = last
                .and_then(|g| g.detail.as_deref())
                .and_then(|d| serde_json::from_str(d).ok());
            let (outcome, reason) = outcome_of(row.status, last);
            let verifier = detail.as_ref().map_or(0.0, |d| d.verifier_seconds);
            rows.push(PackRunRow {
                task: task.id.clone(),
                contestant: row.contestant.clone(),
                run: row.run,
                battle_id: row.battle_id.clone(),
                outcome,
                reason,
                fail_to_pass_fraction: detail.as_ref().and_then(|d| {
                    (d.fail_to_pass_total > 0 && outcome != RunOutcome::Error)
                        .then(|| d.fail_to_pass_passed as f64 / d.fail_to_pass_total as f64)
                }),
                dropped: detail.map(|d| d.dropped).unwrap_or_default(),
                cost_usd: row.cost_usd,
                seconds: row.duration_ms.map_or(0.0, |ms| ms as f64 / 1000.0) + verifier,
            });
        }
        Ok(Some((summary, rows)))
    }
}

/// The runs that have a verdict (or an error with its reason), as the
/// scores take them.
pub(super) fn task_runs(rows: &[PackRunRow]) -> Vec<TaskRun> {
    rows.iter()
        .filter(|r| r.outcome != RunOutcome::Error || r.reason.is_some())
        .map(|r| {
            let (identity, model) = r
                .contestant
                .split_once('@')
                .unwrap_or((r.contestant.as_str(), ""));
            TaskRun {
                task: r.task.clone(),
                contestant: r.contestant.clone(),
                identity: identity.to_string(),
                model: model.to_string(),
                run: r.run,
                outcome: r.outcome,
                fail_to_pass_fraction: r.fail_to_pass_fraction,
                cost_usd: r.cost_usd,
                seconds: r.seconds,
            }
        })
        .collect()
}

/// The pack at `dir` and its project: `project` when given (checked to be
/// the pack's repository and to hold its bases), else the pack's bundle
/// cloned once under `data/packs/`.
fn pack_and_project(dir: &Path, project: Option<&Path>, data: &Path) -> Result<(Pack, PathBuf)> {
    let mut pack = Pack::load(dir)?;
    if let Ok(root) = pack.root.canonicalize() {
        pack.root = root;
    }
    let project = match project {
        Some(p) => {
            pack.check_project(p)?;
            p.to_path_buf()
        }
        None => {
            let root = pack
                .manifest
                .repository
                .as_ref()
                .and_then(|r| r.roots.first())
                .map(|r| r.chars().take(16).collect::<String>())
                .ok_or_else(|| {
                    PackError::Usage(format!(
                        "pack {} names no repository; give the project with --project",
                        pack.root.display()
                    ))
                })?;
            let into = data.join("packs").join(root).join("repo");
            crate::pack::materialize_project(&pack, Some(&into))?
        }
    };
    Ok((pack, project))
}

/// The prompts whose task's base is a commit of `project`, each base
/// written as its full commit; the others left out with the reason.
fn full_bases(project: &Path, prompts: Vec<SeriesPrompt>) -> (Vec<SeriesPrompt>, Vec<SkippedTask>) {
    let (mut kept, mut skipped) = (Vec::new(), Vec::new());
    for mut prompt in prompts {
        let Some(task) = prompt.task.as_mut() else {
            kept.push(prompt);
            continue;
        };
        match crate::agent::seal::resolve(project, &task.base) {
            Ok(full) => {
                task.base = full;
                kept.push(prompt);
            }
            Err(e) => skipped.push(SkippedTask {
                id: task.id.clone(),
                reason: e.to_string(),
            }),
        }
    }
    (kept, skipped)
}

/// The base a task's battles start from, or why it cannot run here (as
/// it is written: a check's findings aside).
fn runnable_as_written(task: &Task) -> std::result::Result<&str, String> {
    if let Some(defect) = task.defect() {
        return Err(defect);
    }
    if task.meta.needs_docker {
        let here = ["docker", "podman"].iter().any(|p| crate::pack::on_path(p));
        return Err(if here {
            "it needs a container, which Arena does not run tasks in yet".into()
        } else {
            "it needs Docker or Podman, and neither is installed".into()
        });
    }
    if task.kind() != crate::pack::TaskKind::Repo {
        return Err("only repo-native tasks run in Arena's jail".into());
    }
    if task.test_patch.is_none() {
        return Err("it has no tests/test.patch".into());
    }
    if task.test_command().is_none() {
        return Err("its task.toml names no test_command".into());
    }
    task.base_commit()
        .ok_or_else(|| "its task.toml names no base_commit".to_string())
}

/// A run's outcome from its contestant's end and its last verdict; the
/// reason is `None` while it has neither (not run yet).
fn outcome_of(status: ContestantStatus, check: Option<&GoalCheck>) -> (RunOutcome, Option<String>) {
    match (check, status) {
        (Some(g), _) => match (g.passed, &g.error) {
            (Some(true), _) => (RunOutcome::Resolved, g.reason.clone()),
            (Some(false), _) => (RunOutcome::Unresolved, g.reason.clone()),
            (None, error) => (
                RunOutcome::Error,
                Some(
                    error
                        .clone()
                        .unwrap_or_else(|| "the verifier failed".into()),
                ),
            ),
        },
        // An agent that failed (stopped at its limit, crashed) leaves the
        // task unresolved; one that never ran is not a result yet.
        (None, ContestantStatus::Error) => (
            RunOutcome::Unresolved,
            Some("the agent failed before the verifier ran".into()),
        ),
        (None, ContestantStatus::Cancelled) => {
            (RunOutcome::Error, Some("the run was cancelled".into()))
        }
        (None, _) => (RunOutcome::Error, None),
    }
}

/// A share as a percentage with no decimals.
fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A contestant's pass@1 with its interval, in words.
fn pass_at_1(c: &pack_score::ContestantScore) -> String {
    match c.pass_at.get(&1) {
        Some(p) => format!(
            "{} (95% {}–{})",
            pct(*p),
            pct(c.pass_at_1_interval.low),
            pct(c.pass_at_1_interval.high)
        ),
        None => "—".into(),
    }
}

/// The report as Markdown: the scores with their intervals, the paired
/// comparisons in words, then every run.
pub fn report_markdown(r: &PackRunReport) -> String {
    let mut out = format!(
        "# Pack `{}` {}\n\nSeries {} · {} · {} of {} runs done · {} run(s) of each task per contestant\n\n",
        r.pack,
        r.version,
        crate::battle::short_id(&r.series_id),
        r.status,
        r.done,
        r.planned,
        r.runs_per_task
    );
    out.push_str("| contestant | pass@1 (95% interval) | pass@k | pass^k | resolved | errors | FAIL_TO_PASS passed | cost | per solve |\n|---|---|---|---|---|---|---|---|---|\n");
    for c in &r.scores.contestants {
        let ks = |m: &BTreeMap<u32, f64>| {
            m.iter()
                .map(|(k, v)| format!("@{k} {}", pct(*v)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} of {} | {} | {} | {} | {} |\n",
            c.contestant,
            pass_at_1(c),
            ks(&c.pass_at),
            ks(&c.pass_hat_k),
            c.resolved,
            c.runs,
            c.errors,
            c.fail_to_pass_fraction.map_or("—".into(), pct),
            crate::benchmark::usd_or_dash(c.cost_usd),
            crate::benchmark::usd_or_dash(c.cost_per_solve_usd),
        ));
    }
    if !r.scores.pairs.is_empty() {
        out.push_str("\n## Paired on the same tasks\n\n");
        for p in &r.scores.pairs {
            out.push_str(&format!("- {}\n", p.summary));
        }
    }
    if !r.cutoffs.is_empty() {
        out.push_str("\n## After each model's training cutoff, and before\n\n");
        for c in &r.cutoffs {
            out.push_str(&format!("- {}: {}\n", c.contestant, c.summary));
        }
    }
    if !r.scores.notes.is_empty() {
        out.push_str("\n## Notes\n\n");
        for n in &r.scores.notes {
            out.push_str(&format!("- {n}\n"));
        }
    }
    out.push_str("\n## Runs\n\n| task | contestant | run | outcome | why | dropped |\n|---|---|---|---|---|---|\n");
    for t in &r.tasks {
        for run in &t.runs {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                t.id,
                run.contestant,
                run.run,
                outcome_word(run.outcome, run.reason.is_some()),
                run.reason
                    .as_deref()
                    .unwrap_or("")
                    .replace('|', "\\|")
                    .replace('\n', " "),
                run.dropped.join(", ").replace('|', "\\|"),
            ));
        }
    }
    out
}

fn outcome_word(o: RunOutcome, done: bool) -> &'static str {
    match (o, done) {
        (_, false) => "not run yet",
        (RunOutcome::Resolved, _) => "resolved",
        (RunOutcome::Unresolved, _) => "unresolved",
        (RunOutcome::Error, _) => "error",
    }
}

/// Every run as CSV (one row per task × contestant × run).
pub fn report_csv(r: &PackRunReport) -> String {
    let field = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from(
        "task,contestant,run,battle_id,outcome,fail_to_pass_fraction,cost_usd,seconds,reason,dropped\n",
    );
    for t in &r.tasks {
        for run in &t.runs {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{:.1},{},{}\n",
                field(&t.id),
                field(&run.contestant),
                run.run,
                run.battle_id,
                outcome_word(run.outcome, run.reason.is_some()).replace(' ', "_"),
                run.fail_to_pass_fraction
                    .map_or(String::new(), |f| format!("{f:.3}")),
                run.cost_usd.map_or(String::new(), |c| format!("{c:.6}")),
                run.seconds,
                field(run.reason.as_deref().unwrap_or("")),
                field(&run.dropped.join("; ")),
            ));
        }
    }
    out
}

/// The report as one self-contained HTML page: the scores with interval
/// bars, the paired comparisons, every run. Everything from the pack or a
/// run is escaped.
pub fn report_html(r: &PackRunReport) -> String {
    use crate::html::escape;
    let mut rows = String::new();
    for c in &r.scores.contestants {
        let p = c.pass_at.get(&1).copied().unwrap_or(0.0);
        let (lo, hi) = (c.pass_at_1_interval.low, c.pass_at_1_interval.high);
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td><div class=bar><span class=iv style=\"left:{:.1}%;width:{:.1}%\"></span><span class=pt style=\"left:{:.1}%\"></span></div></td><td>{} of {}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.contestant),
            escape(&pass_at_1(c)),
            lo * 100.0,
            (hi - lo).max(0.0) * 100.0,
            p * 100.0,
            c.resolved,
            c.runs,
            c.errors,
            escape(&crate::benchmark::usd_or_dash(c.cost_usd)),
        ));
    }
    let pairs: String = r
        .scores
        .pairs
        .iter()
        .map(|p| format!("<li>{}</li>", escape(&p.summary)))
        .collect();
    let cutoffs = match r.cutoffs.is_empty() {
        true => String::new(),
        false => format!(
            "<h2>After each model's training cutoff, and before</h2><ul>{}</ul>",
            r.cutoffs
                .iter()
                .map(|c| format!("<li>{}: {}</li>", escape(&c.contestant), escape(&c.summary)))
                .collect::<String>()
        ),
    };
    let mut runs = String::new();
    for t in &r.tasks {
        for run in &t.runs {
            runs.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class={}>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&t.id),
                escape(&run.contestant),
                run.run,
                outcome_word(run.outcome, run.reason.is_some()).replace(' ', "-"),
                outcome_word(run.outcome, run.reason.is_some()),
                escape(run.reason.as_deref().unwrap_or("")),
                escape(&run.dropped.join(", ")),
            ));
        }
    }
    format!(
        "<!doctype html><html><head><meta charset=utf-8><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"><title>Pack {name}</title><style>\
body{{font:14px system-ui,sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse;width:100%}}td,th{{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}}\
.bar{{position:relative;height:10px;width:200px;background:#eee;border-radius:5px}}.iv{{position:absolute;top:0;height:10px;background:#9cc3f5;border-radius:5px}}.pt{{position:absolute;top:-2px;width:3px;height:14px;background:#1a56a8}}\
.resolved{{color:#17692f}}.unresolved{{color:#a11}}.error{{color:#a60}}</style></head><body>\
<h1>Pack {name} {version}</h1><p>Series {id} · {status} · {done} of {planned} runs done · {per} run(s) of each task per contestant</p>\
<h2>Scores</h2><table><tr><th>contestant</th><th>pass@1</th><th>95% interval</th><th>resolved</th><th>errors</th><th>cost</th></tr>{rows}</table>\
<h2>Paired on the same tasks</h2><ul>{pairs}</ul>{cutoffs}<h2>Runs</h2><table><tr><th>task</th><th>contestant</th><th>run</th><th>outcome</th><th>why</th><th>dropped</th></tr>{runs}</table></body></html>\n",
        name = escape(&r.pack),
        version = escape(&r.version),
        id = crate::battle::short_id(&r.series_id),
        status = escape(&r.status),
        done = r.done,
        planned = r.planned,
        per = r.runs_per_task,
    )
}

// ---------------------------------------------------------------------------
// Checking a pack: each task's solution must resolve it, its base must not.

/// The backend that plays a task's solution in `arena pack check`: on
/// model [`SOLUTION_MODEL`] it applies the patch it is given as its prompt
/// (the task's gold patch) with `git apply`; on [`BASE_MODEL`] it changes
/// nothing. Add it to the configuration with [`solution_backend`] before
/// the engine opens.
pub const SOLUTION_BACKEND: &str = "arena-solution";
pub const SOLUTION_MODEL: &str = "gold";
pub const BASE_MODEL: &str = "base";

/// The `[[backend]]` of [`SOLUTION_BACKEND`].
pub fn solution_backend() -> crate::config::CustomBackend {
    crate::config::CustomBackend {
        name: SOLUTION_BACKEND.into(),
        command: vec![
            "sh".into(),
            "-c".into(),
            format!(
                "[ \"$0\" = {BASE_MODEL} ] && {{ echo 'the base: nothing changed'; exit 0; }}; \
                 printf '%s' \"$1\" | git apply --whitespace=nowarn - && echo 'the solution applied'"
            ),
            "{model}".into(),
            "{prompt}".into(),
        ],
    }
}

/// One task's check: what its solution and its base came to, and why it is
/// broken when it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskCheck {
    pub id: String,
    pub solution: Option<PackRunRow>,
    pub base: Option<PackRunRow>,
    /// `None`: the solution resolves the task and the base does not.
    pub broken: Option<String>,
}

/// What `arena pack check` found, kept per pack in the data directory so a
/// pack run leaves a broken task out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackCheck {
    pub series_id: String,
    pub pack: String,
    pub tasks: Vec<TaskCheck>,
    /// Tasks not checked, and why (no gold patch, needs Docker, …).
    pub skipped: Vec<SkippedTask>,
}

impl Engine {
    /// Starts a pack's check: a series whose prompts are the tasks' gold
    /// patches and whose two contestants are [`SOLUTION_BACKEND`] on the
    /// solution and on the base, through the same sealed battles and
    /// verifier as a run. The engine's configuration must hold
    /// [`solution_backend`].
    pub async fn start_pack_check(
        &self,
        pack: &Path,
        project: Option<&Path>,
        tasks: &[String],
    ) -> Result<PackRunStart> {
        if !self
            .config()
            .backends
            .iter()
            .any(|b| b.name == SOLUTION_BACKEND)
        {
            return Err(Error::Task(format!(
                "the engine was opened without the `{SOLUTION_BACKEND}` backend a pack check needs"
            )));
        }
        let data = self.data_dir().to_path_buf();
        let (pack, project) = tokio::task::spawn_blocking({
            let (dir, project) = (pack.to_path_buf(), project.map(Path::to_path_buf));
            move || pack_and_project(&dir, project.as_deref(), &data)
        })
        .await??;
        let (mut prompts, mut skipped) = (Vec::new(), Vec::new());
        for task in &pack.tasks {
            if !tasks.is_empty() && !tasks.iter().any(|t| t == task.id.as_str()) {
                continue;
            }
            let id = task.id.as_str().to_string();
            let gold = match &task.solution {
                crate::pack::Solution::GoldPatch(p) if !p.trim().is_empty() => p.clone(),
                _ => {
                    skipped.push(SkippedTask {
                        id,
                        reason: "it has no solution/gold.patch".into(),
                    });
                    continue;
                }
            };
            match runnable_as_written(task) {
                Err(reason) => skipped.push(SkippedTask { id, reason }),
                Ok(base) => prompts.push(SeriesPrompt {
                    prompt: gold,
                    goal: None,
                    check: None,
                    tags: vec![format!("task:{id}")],
                    task: Some(TaskRef {
                        pack: pack.root.clone(),
                        id,
                        base: base.to_string(),
                        tests: task_tests(task),
                    }),
                }),
            }
        }
        if prompts.is_empty() {
            return Err(Invalid::Other("no task of the pack can be checked here".into()).into());
        }
        let contestants = [SOLUTION_MODEL, BASE_MODEL]
            .iter()
            .map(|m| ContestantSpec::parse(&format!("{SOLUTION_BACKEND}@{m}")))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut series =
            SeriesRequest::new(BattleType::Coding, project.clone(), contestants, prompts);
        series.analysis = false;
        series.tags = vec![format!("pack-check:{}", pack.manifest.name)];
        let start = self.create_series(series, None).await?;
        Ok(PackRunStart {
            start,
            skipped,
            project,
        })
    }

    /// The check's findings (after [`Engine::run_series`]), written to the
    /// data directory for later pack runs.
    pub async fn pack_check_report(
        &self,
        id: &str,
        skipped: Vec<SkippedTask>,
    ) -> Result<PackCheck> {
        let report = self.pack_run_report(id).await?;
        let pick = |runs: &[PackRunRow], model: &str| {
            runs.iter()
                .find(|r| r.contestant == format!("{SOLUTION_BACKEND}@{model}"))
                .cloned()
        };
        let tasks: Vec<TaskCheck> = report
            .tasks
            .iter()
            .map(|t| {
                let (solution, base) = (pick(&t.runs, SOLUTION_MODEL), pick(&t.runs, BASE_MODEL));
                let broken = broken_because(solution.as_ref(), base.as_ref());
                TaskCheck {
                    id: t.id.clone(),
                    solution,
                    base,
                    broken,
                }
            })
            .collect();
        let check = PackCheck {
            series_id: report.series_id.clone(),
            pack: report.pack.clone(),
            tasks,
            skipped,
        };
        let summary = self.series_summary(id).await?;
        if let Some(task) = summary
            .series
            .request
            .prompts
            .iter()
            .find_map(|p| p.task.as_ref())
        {
            let file = checks_file(self.data_dir(), &task.pack);
            let text = serde_json::to_vec_pretty(&check)?;
            tokio::task::spawn_blocking(move || write_checks(&file, &text)).await??;
        }
        Ok(check)
    }
}

/// Why a task is broken, from its solution's and its base's runs.
fn broken_because(solution: Option<&PackRunRow>, base: Option<&PackRunRow>) -> Option<String> {
    let said = |r: &PackRunRow| r.reason.clone().unwrap_or_else(|| "not run".into());
    match (solution, base) {
        (None, _) | (_, None) => Some("the check did not finish".into()),
        (Some(s), _) if s.outcome != RunOutcome::Resolved => {
            Some(format!("its solution does not resolve it: {}", said(s)))
        }
        (_, Some(b)) if b.outcome == RunOutcome::Resolved => {
            Some("its base already resolves it: the tests decide nothing".into())
        }
        (_, Some(b)) if b.outcome == RunOutcome::Error => {
            Some(format!("its base could not be judged: {}", said(b)))
        }
        _ => None,
    }
}

/// Where the checks of the pack at `pack` are kept.
/// (a file per pack folder, named by an FNV-1a hash of its path: stable
/// from release to release, unlike the standard library's hasher).
fn checks_file(data: &Path, pack: &Path) -> PathBuf {
    let hash = pack
        .to_string_lossy()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    data.join("packs")
        .join("checks")
        .join(format!("{hash:016x}.json"))
}

fn write_checks(file: &Path, text: &[u8]) -> Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, file).map_err(|e| Error::io(file, e))
}

/// The tasks of the pack at `pack` its last check found broken, with why.
fn broken_tasks(data: &Path, pack: &Path) -> BTreeMap<String, String> {
    let Ok(text) = std::fs::read(checks_file(data, pack)) else {
        return BTreeMap::new();
    };
    serde_json::from_slice::<PackCheck>(&text)
        .map(|c| {
            c.tasks
                .into_iter()
                .filter_map(|t| t.broken.map(|b| (t.id, b)))
                .collect()
        })
        .unwrap_or_default()
}
