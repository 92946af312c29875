//! Task packs on the wire (issues 40 and 41): a pack as the Packs screen
//! shows it, the request that starts a pack run, a run's report with its
//! scores and intervals, and what mining a history found. Each type only
//! converts from the engine's; the scores are the engine's
//! ([`arena_core::pack_score`]), never recomputed here.

use std::collections::BTreeMap;

use arena_core as core;
use arena_core::pack::{PackSummary, TaskSummary};
use arena_core::pack_score::{ContestantScore, Interval, IntervalMethod, PairScore};
use serde::{Deserialize, Serialize};

use crate::path;

mod mining;
pub use mining::*;

/// A pack, read and checked against its project (`arena pack show`): each
/// task with whether it can run here, and why not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackDto {
    /// The pack's folder.
    pub path: String,
    pub name: String,
    pub version: String,
    pub description: String,
    /// Runs of each task per contestant unless the run says otherwise.
    pub runs: u32,
    pub time_limit_secs: Option<u64>,
    /// The project checked (given), or `None`: the pack's own bundle.
    pub project: Option<String>,
    /// The repository bundle the pack carries, if any.
    pub bundle: Option<String>,
    pub tasks: Vec<PackTaskDto>,
}

/// One task of a pack.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackTaskDto {
    pub id: String,
    /// `repo` (tests and a base commit in the project) or `harbor`.
    pub kind: String,
    pub base_commit: Option<String>,
    pub test_command: Option<String>,
    pub fail_to_pass: u32,
    pub pass_to_pass: u32,
    pub needs_docker: bool,
    /// `gold.patch`, `solve.sh`, or none.
    pub solution: Option<String>,
    pub runnable: bool,
    /// Why it cannot run here (not validated yet, broken, needs Docker, its
    /// base is not in the project…).
    pub why_not: Option<String>,
}

impl PackDto {
    pub fn new(dir: &std::path::Path, project: Option<&std::path::Path>, s: &PackSummary) -> Self {
        PackDto {
            path: path(dir),
            name: s.name.clone(),
            version: s.version.clone(),
            description: s.description.clone(),
            runs: s.runs,
            time_limit_secs: s.time_limit_secs,
            project: project.map(path),
            bundle: s.bundle.clone(),
            tasks: s.tasks.iter().map(PackTaskDto::from).collect(),
        }
    }
}

impl From<&TaskSummary> for PackTaskDto {
    fn from(t: &TaskSummary) -> Self {
        PackTaskDto {
            id: t.id.clone(),
            kind: t.kind.as_str().to_string(),
            base_commit: t.base_commit.clone(),
            test_command: t.test_command.clone(),
            fail_to_pass: count(t.fail_to_pass),
            pass_to_pass: count(t.pass_to_pass),
            needs_docker: t.needs_docker,
            solution: t.solution.map(str::to_string),
            runnable: t.runnable,
            why_not: t.why_not.clone(),
        }
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What importing a SWE-bench file or a Harbor task folder takes
/// (`arena pack import`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ImportPackRequest {
    /// A SWE-bench JSON/JSONL file or a Harbor task folder.
    pub source: String,
    /// The repository SWE-bench instances belong to.
    pub project: Option<String>,
    /// The pack to make (must not exist).
    pub out: String,
    /// Detected per ecosystem when blank.
    pub test_command: Option<String>,
}

/// What starting a pack run takes (`arena pack run`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StartPackRunRequest {
    pub pack: String,
    /// The project the tasks' bases are in; none: the pack's bundle.
    pub project: Option<String>,
    /// `IDENTITY@MODEL` each.
    pub contestants: Vec<String>,
    /// Runs of each task per contestant; none: the pack's default.
    pub runs: Option<u32>,
    pub parallel: u32,
    /// Only these tasks; empty: every runnable one.
    pub tasks: Vec<String>,
    pub budget_usd: Option<f64>,
    pub key: Option<String>,
}

fn text(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl StartPackRunRequest {
    /// The engine's request; fails on a contestant that is not
    /// `IDENTITY@MODEL`.
    pub fn into_engine(self) -> Result<core::PackRunRequest, core::Invalid> {
        let contestants = self
            .contestants
            .iter()
            .map(|c| core::ContestantSpec::parse(c))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(core::PackRunRequest {
            pack: self.pack.trim().into(),
            project: text(self.project).map(Into::into),
            contestants,
            runs: self.runs,
            parallel: self.parallel.max(1),
            tasks: self.tasks,
            budget_usd: self.budget_usd,
            key: text(self.key),
        })
    }
}

/// A task left out of a run, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SkippedTaskDto {
    pub id: String,
    pub reason: String,
}

/// A pack run started (or found again by its key).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackRunStartDto {
    pub series_id: String,
    /// False when the key named a run started before.
    pub created: bool,
    pub skipped: Vec<SkippedTaskDto>,
    pub project: String,
}

impl From<&core::PackRunStart> for PackRunStartDto {
    fn from(s: &core::PackRunStart) -> Self {
        PackRunStartDto {
            series_id: s.start.series().id.clone(),
            created: matches!(s.start, core::SeriesStart::Created(_)),
            skipped: s
                .skipped
                .iter()
                .map(|k| SkippedTaskDto {
                    id: k.id.clone(),
                    reason: k.reason.clone(),
                })
                .collect(),
            project: path(&s.project),
        }
    }
}

/// `resolved`, `unresolved`, or `error` (of the run, not the contestant's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum RunOutcomeDto {
    Resolved,
    Unresolved,
    Error,
}

impl From<core::pack_score::RunOutcome> for RunOutcomeDto {
    fn from(o: core::pack_score::RunOutcome) -> Self {
        use core::pack_score::RunOutcome as O;
        match o {
            O::Resolved => RunOutcomeDto::Resolved,
            O::Unresolved => RunOutcomeDto::Unresolved,
            O::Error => RunOutcomeDto::Error,
        }
    }
}

/// A 95 % interval and how it was computed (`cluster_bootstrap`,
/// `wilson`, `wilson_difference`, `none`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct IntervalDto {
    pub low: f64,
    pub high: f64,
    pub method: String,
}

impl From<&Interval> for IntervalDto {
    fn from(i: &Interval) -> Self {
        IntervalDto {
            low: i.low,
            high: i.high,
            method: match i.method {
                IntervalMethod::ClusterBootstrap => "cluster_bootstrap",
                IntervalMethod::Wilson => "wilson",
                IntervalMethod::WilsonDifference => "wilson_difference",
                IntervalMethod::None => "none",
            }
            .to_string(),
        }
    }
}

/// A value for one k (pass@k, pass^k).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AtKDto {
    pub k: u32,
    pub value: f64,
    /// Tasks the value averages over.
    pub tasks: u32,
}

/// One contestant's scores on a pack run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackScoreDto {
    pub contestant: String,
    pub identity: String,
    pub model: String,
    pub tasks: u32,
    pub tasks_all_errors: u32,
    pub runs: u32,
    pub resolved: u32,
    pub errors: u32,
    /// pass@1 (the mean over runs), `None` before any scored run.
    pub pass_at_1: Option<f64>,
    pub pass_at_1_interval: IntervalDto,
    /// pass@k for every k up to the runs per task (Chen's estimator).
    pub pass_at: Vec<AtKDto>,
    /// pass^k: all k runs succeed.
    pub pass_hat_k: Vec<AtKDto>,
    pub fail_to_pass_fraction: Option<f64>,
    pub cost_usd: Option<f64>,
    pub cost_per_solve_usd: Option<f64>,
    pub seconds_per_solve: Option<f64>,
}

impl From<&ContestantScore> for PackScoreDto {
    fn from(c: &ContestantScore) -> Self {
        let at = |map: &BTreeMap<u32, f64>| {
            map.iter()
                .map(|(k, v)| AtKDto {
                    k: *k,
                    value: *v,
                    tasks: count(c.pass_at_tasks.get(k).copied().unwrap_or(0)),
                })
                .collect()
        };
        PackScoreDto {
            contestant: c.contestant.clone(),
            identity: c.identity.clone(),
            model: c.model.clone(),
            tasks: count(c.tasks),
            tasks_all_errors: count(c.tasks_all_errors),
            runs: count(c.runs),
            resolved: count(c.resolved),
            errors: count(c.errors),
            pass_at_1: c.pass_at.get(&1).copied(),
            pass_at_1_interval: (&c.pass_at_1_interval).into(),
            pass_at: at(&c.pass_at),
            pass_hat_k: at(&c.pass_hat_k),
            fail_to_pass_fraction: c.fail_to_pass_fraction,
            cost_usd: c.cost_usd,
            cost_per_solve_usd: c.cost_per_solve_usd,
            seconds_per_solve: c.seconds_per_solve,
        }
    }
}

/// Two contestants paired on the same tasks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackPairDto {
    pub a: String,
    pub b: String,
    pub tasks: u32,
    /// Mean over the tasks of a's rate minus b's.
    pub difference: f64,
    pub interval: IntervalDto,
    /// The interval leaves out 0.
    pub separable: bool,
    /// In words, "not separable yet" when the interval covers 0.
    pub summary: String,
}

impl From<&PairScore> for PackPairDto {
    fn from(p: &PairScore) -> Self {
        PackPairDto {
            a: p.a.clone(),
            b: p.b.clone(),
            tasks: count(p.tasks),
            difference: p.difference,
            interval: (&p.interval).into(),
            separable: p.separable,
            summary: p.summary.clone(),
        }
    }
}

/// One run of one task by one contestant.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackRunRowDto {
    pub task: String,
    pub contestant: String,
    pub run: u32,
    pub battle_id: String,
    pub outcome: RunOutcomeDto,
    /// False while the run has no verdict yet (queued or running).
    pub done: bool,
    /// The verifier's or the agent's word on it.
    pub reason: Option<String>,
    pub fail_to_pass_fraction: Option<f64>,
    /// The contestant's edits to tests and test infrastructure the verifier
    /// dropped before running the tests.
    pub dropped: Vec<String>,
    pub cost_usd: Option<f64>,
    pub seconds: f64,
}

impl From<&core::PackRunRow> for PackRunRowDto {
    fn from(r: &core::PackRunRow) -> Self {
        PackRunRowDto {
            task: r.task.clone(),
            contestant: r.contestant.clone(),
            run: r.run,
            battle_id: r.battle_id.clone(),
            outcome: r.outcome.into(),
            done: r.reason.is_some(),
            reason: r.reason.clone(),
            fail_to_pass_fraction: r.fail_to_pass_fraction,
            dropped: r.dropped.clone(),
            cost_usd: r.cost_usd,
            seconds: r.seconds,
        }
    }
}

/// One task's runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackRunTaskDto {
    pub id: String,
    pub runs: Vec<PackRunRowDto>,
}

/// A pack run's report (`arena pack report RUN --format json`, reshaped
/// for the screen): the scores with their intervals and every run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackRunReportDto {
    pub series_id: String,
    pub pack: String,
    pub version: String,
    /// The series' status: `running`, `done`, `cancelled`, …
    pub status: String,
    pub runs_per_task: u32,
    pub done: u32,
    pub planned: u32,
    /// The contestants asked for (`IDENTITY@MODEL`), in the run's order:
    /// the matrix's columns before any of them has a score.
    pub lineup: Vec<String>,
    pub contestants: Vec<PackScoreDto>,
    pub pairs: Vec<PackPairDto>,
    pub notes: Vec<String>,
    pub tasks: Vec<PackRunTaskDto>,
}

impl From<&core::PackRunReport> for PackRunReportDto {
    fn from(r: &core::PackRunReport) -> Self {
        PackRunReportDto {
            series_id: r.series_id.clone(),
            pack: r.pack.clone(),
            version: r.version.clone(),
            status: r.status.clone(),
            runs_per_task: r.runs_per_task,
            done: count(r.done),
            planned: count(r.planned),
            lineup: r
                .scores
                .contestants
                .iter()
                .map(|c| c.contestant.clone())
                .collect(),
            contestants: r.scores.contestants.iter().map(Into::into).collect(),
            pairs: r.scores.pairs.iter().map(Into::into).collect(),
            notes: r.scores.notes.clone(),
            tasks: r
                .tasks
                .iter()
                .map(|t| PackRunTaskDto {
                    id: t.id.clone(),
                    runs: t.runs.iter().map(Into::into).collect(),
                })
                .collect(),
        }
    }
}

impl PackRunReportDto {
    /// The report with the run's contestants as they were asked for.
    pub fn new(r: &core::PackRunReport, series: &core::series::Series) -> Self {
        PackRunReportDto {
            lineup: series
                .request
                .contestants
                .iter()
                .map(|c| format!("{}@{}", c.identity, c.model))
                .collect(),
            ..PackRunReportDto::from(r)
        }
    }
}

/// A pack run as a list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PackRunListDto {
    pub series_id: String,
    /// The pack's folder.
    pub pack: String,
    pub status: String,
    pub created_at: String,
    pub contestants: Vec<String>,
}

/// The report files written, by format (`md`, `html`, `json`, `csv`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SavedReportDto {
    pub folder: String,
    pub files: Vec<String>,
}

/// A mined task whose instruction Arena wrote, for review: `pending`,
/// `approved` or `dropped` (with why), its instruction, and what the
/// audit finds in it now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ReviewItemDto {
    pub id: String,
    pub state: String,
    pub reason: Option<String>,
    pub instruction: String,
    pub leaks: Vec<String>,
}

impl From<&core::pack::review::ReviewItem> for ReviewItemDto {
    fn from(i: &core::pack::review::ReviewItem) -> Self {
        ReviewItemDto {
            id: i.id.clone(),
            state: i.state.as_str().to_string(),
            reason: i.reason.clone(),
            instruction: i.instruction.clone(),
            leaks: i.leaks.clone(),
        }
    }
}

/// A reviewer's decision on one task.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ReviewDecisionDto {
    Approve,
    Drop {
        reason: Option<String>,
    },
    /// The rewritten instruction; approved when its audit finds nothing.
    Edit {
        instruction: String,
    },
}

impl From<ReviewDecisionDto> for core::pack::review::Decision {
    fn from(d: ReviewDecisionDto) -> Self {
        use core::pack::review::Decision;
        match d {
            ReviewDecisionDto::Approve => Decision::Approve,
            ReviewDecisionDto::Drop { reason } => Decision::Drop(reason),
            ReviewDecisionDto::Edit { instruction } => Decision::Edit(instruction),
        }
    }
}
