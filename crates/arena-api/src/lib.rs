//! The one wire model: what a battle, a contestant, an analysis, an event,
//! a standing, a provider, a persona, a backend, the settings and an error
//! look like outside the engine. The CLI's `--json`, the desktop app's IPC
//! payloads and the UI's TypeScript types (`ui/src/ipc/bindings/`,
//! generated from these by ts-rs in test builds: see `bindings.rs`) all come from here, so
//! they cannot drift apart. `tests/wire.rs` pins the JSON of each type,
//! which is the contract the README documents.
//!
//! Field names and enum values are snake_case (`"battle_type"`,
//! `"no_clear_winner"`), as the results folder writes them. Timestamps are
//! RFC 3339 strings in UTC with milliseconds, paths are strings. Integers
//! are JSON numbers (every count, duration and `seq` stays far below 2^53).

#[cfg(test)]
mod bindings;
/// Task packs on the wire: a pack, a pack run's report, mining (issues 40, 41).
pub mod packs;
pub use packs::*;
/// Agents and personas as Settings edits them (issue 42).
pub mod agents;
pub use agents::*;

use std::collections::BTreeMap;
use std::path::Path;

use arena_core as core;
use arena_core::results::rfc3339;
use serde::{Deserialize, Serialize};

/// The commit this build was made from (12 hex digits, or "unknown").
pub const COMMIT: &str = env!("ARENA_BUILD_COMMIT");
/// The day this build was made (UTC, `YYYY-MM-DD`).
pub const BUILT: &str = env!("ARENA_BUILD_DATE");

/// "0.1.0 (commit 1a2b3c4d5e6f, built 2026-11-27)": what `arena --version`
/// and the app's About say.
pub fn version_line() -> String {
    format!("{} (commit {COMMIT}, built {BUILT})", arena_core::VERSION)
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Mirrors an engine enum as a string union and converts from it. Every
/// engine variant must be listed, so a new one fails to compile here.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident from $engine:path { $($variant:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        #[cfg_attr(test, derive(ts_rs::TS))]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl From<$engine> for $name {
            fn from(value: $engine) -> Self {
                use $engine as E;
                match value { $(E::$variant => $name::$variant),+ }
            }
        }

        impl From<$name> for $engine {
            fn from(value: $name) -> Self {
                use $engine as E;
                match value { $($name::$variant => E::$variant),+ }
            }
        }
    };
}

wire_enum!(
    /// `"qa"` or `"coding"`.
    BattleTypeDto from core::BattleType { Qa, Coding }
);
wire_enum!(
    /// A battle is `running` until every contestant is terminal.
    BattleStatusDto from core::BattleStatus { Running, Done, Cancelled, Error }
);
wire_enum!(
    /// `done`, `error` and `cancelled` are terminal.
    ContestantStatusDto from core::ContestantStatus { Queued, Running, Done, Error, Cancelled }
);
wire_enum!(
    /// Local contestants run one at a time; cloud contestants all at once.
    LaneDto from core::Lane { Local, Cloud }
);
wire_enum!(
    /// Who chose the winner.
    WinnerSourceDto from core::battle::WinnerSource { Analysis, User }
);
wire_enum!(
    /// The user's verdict when it names no winner: `tie` or `all_bad`.
    UserVerdictDto from core::battle::UserVerdict { Tie, AllBad }
);
wire_enum!(
    /// Whose verdicts the leaderboard counts: `mine`, `judge`, `both`
    /// (the user's where given, else the judge's), or `packs` (the task
    /// packs' verifiers, task by task).
    SourceDto from core::leaderboard::Source { Mine, Judge, Both, Packs }
);
wire_enum!(
    /// Where a tokens/s figure came from.
    RateSourceDto from core::battle::RateSource { Server, Measured }
);
wire_enum!(
    /// An analysis or a cross-examination: running, done or failed.
    AnalysisStatusDto from core::analysis::AnalysisStatus { Running, Done, Error }
);
wire_enum!(
    /// How an analysis ended.
    OutcomeDto from core::analysis::Outcome { Winner, NoClearWinner, JudgeError, Walkover }
);
wire_enum!(
    /// Work that runs after (or beside) a battle and can be cancelled.
    WorkDto from core::store::Work { Analysis, CrossExamination, Round }
);
/// A battle type and what it answers, so that a viewer asks
/// (`has_worktrees`) instead of comparing ids. The UI reads every type's
/// answers from `ui/src/ipc/bindings/battleTypes.ts`, generated from
/// [`BattleTypeInfoDto::all`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BattleTypeInfoDto {
    pub id: BattleTypeDto,
    /// Its name as a person reads it: `Q&A`, `Coding`.
    pub label: String,
    /// Each contestant works in its own git worktree: its result is a diff
    /// that can be applied, pruned and refined in place.
    pub has_worktrees: bool,
    /// A check command can decide pass or fail.
    pub judged_by_check: bool,
    /// Contestants are agents (backends) rather than personas.
    pub takes_agents: bool,
    /// Its finished results can be cross-examined.
    pub can_examine: bool,
}

impl From<core::BattleType> for BattleTypeInfoDto {
    fn from(t: core::BattleType) -> Self {
        BattleTypeInfoDto {
            id: t.into(),
            label: t.label().to_string(),
            has_worktrees: t.has_worktrees(),
            judged_by_check: t.judged_by_check(),
            takes_agents: t.takes_agents(),
            can_examine: t.can_examine(),
        }
    }
}

impl BattleTypeInfoDto {
    /// Every battle type, in the engine's order.
    pub fn all() -> Vec<BattleTypeInfoDto> {
        core::BattleType::ALL.iter().map(|t| (*t).into()).collect()
    }
}

/// How a series ended (or `running`). A series stopped by
/// `until_decided` is `done`, with `decided_after` set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum SeriesStatusDto {
    Running,
    Done,
    BudgetReached,
    Cancelled,
    /// Stopped by a mistake that would stop every battle; see `error`.
    Error,
}

impl From<core::series::SeriesStatus> for SeriesStatusDto {
    fn from(value: core::series::SeriesStatus) -> Self {
        use core::series::SeriesStatus as S;
        match value {
            S::Running => SeriesStatusDto::Running,
            S::Done | S::Decided => SeriesStatusDto::Done,
            S::BudgetReached => SeriesStatusDto::BudgetReached,
            S::Cancelled => SeriesStatusDto::Cancelled,
            S::Error => SeriesStatusDto::Error,
        }
    }
}
wire_enum!(
    /// The API dialect a provider speaks.
    ProviderKindDto from core::config::ProviderKind { Openai, Anthropic }
);
wire_enum!(
    /// Where a provider's API key comes from: its `api_key_env` variable or
    /// the OS keychain.
    KeySourceDto from core::provider::KeySource { Env, Keychain }
);
wire_enum!(
    /// How a file changed in a Coding contestant's diff.
    ChangeStatusDto from core::diff::ChangeStatus { Added, Modified, Deleted, Renamed }
);
wire_enum!(
    /// A diff line: a hunk header, unchanged, added or deleted.
    LineKindDto from core::patch::LineKind { Hunk, Context, Add, Delete }
);

/// An error as the front ends report it: a stable snake_case `code` for
/// machines (`invalid_input`, `not_found`, `provider`, …) and a message that
/// says what was wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ErrorDto {
    pub code: String,
    pub message: String,
}

impl ErrorDto {
    pub fn new(code: &str, message: impl std::fmt::Display) -> ErrorDto {
        ErrorDto {
            code: code.to_string(),
            message: message.to_string(),
        }
    }
}

impl From<&core::Error> for ErrorDto {
    fn from(e: &core::Error) -> Self {
        ErrorDto::new(e.code(), e)
    }
}

/// Basic facts about the running app, shown in the UI shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AppInfo {
    /// The app version (from Cargo.toml, or the package's).
    pub version: String,
    /// The commit it was built from (or "unknown").
    pub commit: String,
    /// The day it was built (UTC, `YYYY-MM-DD`).
    pub built: String,
    /// The shared data directory (`<OS data dir>/dev.arena.desktop`).
    pub data_dir: String,
    /// How many battles the database holds (`null` when the engine is down).
    pub battles: Option<u64>,
    /// Why the engine could not open, if it could not.
    pub startup_error: Option<String>,
    /// The config file `ARENA_CONFIG` names when it does not exist: the app
    /// runs with the defaults and offers to create it.
    pub config_missing: Option<String>,
}

/// Coding battles on the wire: the base, a check that could not run, the
/// check outcome (issue 42).
pub mod coding;
pub use coding::*;

/// A battle started again: what it was started with (issue 42).
pub mod rerun;
pub use rerun::*;

// ---------------------------------------------------------------------------
// Battles

/// What the launcher sends to start a battle.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StartBattleRequest {
    pub battle_type: BattleTypeDto,
    /// The project folder; results go to `PROJECT/Arena/`.
    pub project: String,
    pub prompt: String,
    /// 2 to 6 `IDENTITY@MODEL` (persona for Q&A, backend for Coding),
    /// split at the first `@`.
    pub contestants: Vec<String>,
    /// Coding: a command run in each finished worktree (e.g. `cargo test`).
    pub check_command: Option<String>,
    /// Show the contestants as A, B, … until the user votes.
    #[serde(default)]
    pub blind: bool,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Coding: start from HEAD (the default) or from the working tree as
    /// it is (a snapshot in Arena's own repository).
    #[serde(default)]
    pub base: BaseChoiceDto,
}

impl StartBattleRequest {
    /// The engine's request; fails on a contestant that is not `IDENTITY@MODEL`.
    pub fn into_engine(self) -> Result<core::BattleRequest, core::Invalid> {
        let contestants = self
            .contestants
            .iter()
            .map(|c| core::ContestantSpec::parse(c))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(core::BattleRequest {
            battle_type: self.battle_type.into(),
            project: self.project.trim().into(),
            prompt: self.prompt,
            contestants,
            check_command: self
                .check_command
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty()),
            blind: self.blind,
            tags: core::blind::tags(&self.tags)?,
        })
    }
}

/// The winner and who chose it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WinnerDto {
    pub contestant_id: String,
    pub source: WinnerSourceDto,
}

impl From<&core::battle::Winner> for WinnerDto {
    fn from(w: &core::battle::Winner) -> Self {
        WinnerDto {
            contestant_id: w.contestant_id.clone(),
            source: w.source.into(),
        }
    }
}

/// Speed figures for one contestant (each `null` until known).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BenchmarkDto {
    pub duration_ms: Option<u64>,
    /// Time to the first token.
    pub ttft_ms: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub tokens_per_sec: Option<f64>,
    /// Where `tokens_per_sec` came from.
    pub tokens_per_sec_source: Option<RateSourceDto>,
    /// Prompt tokens the server answered from its cache.
    pub cached_tokens: Option<u64>,
    /// Prompt processing speed (tokens/s), when the server reports it;
    /// generation is `tokens_per_sec`.
    pub prompt_per_sec: Option<f64>,
    /// The local server loaded this model first (it served another one just
    /// before): the time to first token includes the model load.
    pub model_switched: bool,
    /// What the run cost (USD): the server's figure, else its tokens at the
    /// model's `[[price]]` (local models are free); `null` when unknown.
    pub cost_usd: Option<f64>,
}

impl From<&core::battle::Benchmark> for BenchmarkDto {
    fn from(b: &core::battle::Benchmark) -> Self {
        BenchmarkDto {
            duration_ms: b.duration_ms,
            ttft_ms: b.ttft_ms,
            prompt_tokens: b.prompt_tokens,
            completion_tokens: b.completion_tokens,
            tokens_per_sec: b.tokens_per_sec,
            tokens_per_sec_source: b.rate_source.map(Into::into),
            cached_tokens: b.cached_tokens,
            prompt_per_sec: b.prompt_per_sec,
            model_switched: b.model_switched,
            cost_usd: b.cost_usd,
        }
    }
}

/// Lines changed by a Coding contestant, against the base commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DiffSummaryDto {
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// The project's environment its agent and check saw, in a line
    /// (`current tree: node_modules, .venv (312.4 MiB), copy-on-write`);
    /// `null`: none.
    pub environment: Option<String>,
}

impl From<&core::battle::DiffSummary> for DiffSummaryDto {
    fn from(d: &core::battle::DiffSummary) -> Self {
        DiffSummaryDto {
            files: d.files,
            insertions: d.insertions,
            deletions: d.deletions,
            environment: d.environment.clone(),
        }
    }
}

impl From<&core::diff::DiffStats> for DiffSummaryDto {
    fn from(d: &core::diff::DiffStats) -> Self {
        DiffSummaryDto {
            files: d.files,
            insertions: d.insertions,
            deletions: d.deletions,
            environment: None,
        }
    }
}

/// The check command's result on a contestant's change, applied to a fresh tree
/// of the base commit (never run in the agent's own worktree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CheckResultDto {
    pub command: String,
    /// `null` when it timed out or was killed.
    pub exit_code: Option<i32>,
    pub passed: bool,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The last lines of its output.
    pub output_tail: String,
    /// What the agent's worktree held that its change does not carry (the
    /// check ran on the change applied to a fresh tree of the base, so it
    /// did not see these): the first 20, a folder by its name once.
    pub not_in_change: Vec<String>,
    /// How many there were in all.
    pub not_in_change_count: usize,
    /// Files the change touches that decide what the check runs (tests,
    /// test configuration, build files).
    pub touches_check: Vec<String>,
    /// Why the check could not run (its program missing or not
    /// executable); `null` when it ran. It then counts for no contestant.
    pub could_not_run: Option<String>,
}

impl From<&core::battle::CheckResult> for CheckResultDto {
    fn from(c: &core::battle::CheckResult) -> Self {
        CheckResultDto {
            command: c.command.clone(),
            exit_code: c.exit_code,
            passed: c.passed,
            timed_out: c.timed_out,
            duration_ms: c.duration_ms,
            output_tail: c.output_tail.clone(),
            not_in_change: c.not_in_change.clone(),
            not_in_change_count: c.not_in_change_count,
            touches_check: c.touches_check.clone(),
            could_not_run: c.could_not_run.clone(),
        }
    }
}

/// One contestant of a battle.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ContestantDto {
    pub id: String,
    /// 1-based place in the roster (as in `arena battle show`); in a
    /// masked blind battle, its place among the labels.
    pub position: u32,
    /// A blind battle's letter (A, B, …), shuffled per battle.
    pub label: Option<String>,
    /// The persona (Q&A) or backend (Coding); the label while a blind
    /// battle is masked (then `model` and `provider` are empty).
    pub identity: String,
    pub model: String,
    pub provider: String,
    /// `null` while a blind battle is masked.
    pub lane: Option<LaneDto>,
    pub status: ContestantStatusDto,
    pub error: Option<String>,
    pub attempts: u32,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// Its speed figures, as fields of the contestant.
    #[serde(flatten)]
    pub benchmark: BenchmarkDto,
    /// The answer; `null` in battle listings and before it finished.
    pub output: Option<String>,
    pub reasoning: Option<String>,
    /// The output hit the size cap and was cut.
    pub truncated: bool,
    /// Its `result.md`.
    pub result_path: Option<String>,
    /// Coding: its git worktree.
    pub worktree: Option<String>,
    pub diff: Option<DiffSummaryDto>,
    pub check: Option<CheckResultDto>,
    /// Its check in one word (the roster's check column).
    pub check_outcome: CheckOutcomeDto,
    /// What speaks against applying its change ("its check failed: …"),
    /// for an Apply made secondary; `null`: nothing does.
    pub apply_advice: Option<String>,
    /// While queued: why it has not started ("waiting for llama-swap
    /// (127.0.0.1:8080): battle 1a2b3c4d, contestant 2").
    pub waiting: Option<String>,
    /// Coding: its refinement rounds (2, 3, …); empty in battle listings.
    pub rounds: Vec<RoundDto>,
}

impl From<&core::Contestant> for ContestantDto {
    fn from(c: &core::Contestant) -> Self {
        ContestantDto {
            id: c.id.clone(),
            position: c.position + 1,
            label: c.label.clone(),
            identity: c.identity.clone(),
            model: c.model.clone(),
            provider: c.provider.clone(),
            lane: Some(c.lane.into()),
            status: c.status.into(),
            error: c.error.clone(),
            attempts: c.attempts,
            started_at: c.started_at.map(rfc3339),
            finished_at: c.finished_at.map(rfc3339),
            benchmark: (&c.benchmark).into(),
            output: c.output.clone(),
            reasoning: c.reasoning.clone(),
            truncated: c.truncated,
            result_path: c.result_path.as_deref().map(path),
            worktree: c.worktree.as_deref().map(path),
            diff: c.diff.as_ref().map(Into::into),
            check: c.check.as_ref().map(Into::into),
            check_outcome: core::check_outcome::CheckOutcome::of(c.check.as_ref()).into(),
            apply_advice: core::check_outcome::CheckOutcome::of(c.check.as_ref())
                .apply_advice()
                .map(str::to_string),
            waiting: c.waiting.clone(),
            rounds: Vec::new(),
        }
    }
}

/// A battle with its contestants.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BattleDto {
    pub id: String,
    pub battle_type: BattleTypeDto,
    pub status: BattleStatusDto,
    pub prompt: String,
    pub project: String,
    /// `PROJECT/Arena/<battle folder>`.
    pub results_path: String,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// The user's choice, else the analysis's.
    pub winner: Option<WinnerDto>,
    pub contestants: Vec<ContestantDto>,
    /// Coding: the commit every worktree branched from (a working-tree
    /// battle's snapshot commit).
    pub base_commit: Option<String>,
    /// Coding: which base it started from (`head` or `working_tree`);
    /// `null` for Q&A.
    pub base: Option<BaseChoiceDto>,
    pub check_command: Option<String>,
    /// Coding: the battle-level warning of a check that could not run
    /// ("The check `pytest -q` could not run: …"); `null` otherwise.
    pub check_warning: Option<String>,
    /// The series it is a run of, if any.
    pub series_id: Option<String>,
    /// Started blind.
    pub blind: bool,
    /// Blind and not revealed yet: contestants show as their labels, with
    /// no model, provider, lane, speeds, times, costs, result paths, lane
    /// waits or errors, and no winner or analysis.
    pub masked: bool,
    /// The user's tie or "all bad" (a chosen winner is `winner`).
    pub user_verdict: Option<UserVerdictDto>,
    pub tags: Vec<String>,
    /// Its newest analysis: running, failed, or done with its outcome;
    /// `null` when never judged, and while masked.
    pub judging: Option<JudgingDto>,
    /// The machine that ran it; `null` when not recorded (older battles).
    pub machine: Option<String>,
    /// The OS user who started it; `null` when not recorded.
    pub user_name: Option<String>,
    /// The OS user who gave its verdict (a chosen winner, a tie or "all
    /// bad"); `null` while nobody has, or the judge's winner stands.
    pub voted_by: Option<String>,
}

/// A battle's newest analysis in brief, for lists of battles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct JudgingDto {
    pub status: AnalysisStatusDto,
    /// How it ended, once done.
    pub outcome: Option<OutcomeDto>,
}

impl From<core::battle::Judging> for JudgingDto {
    fn from(j: core::battle::Judging) -> Self {
        JudgingDto {
            status: j.status.into(),
            outcome: j.outcome.map(Into::into),
        }
    }
}

/// A battle as the engine handed it to its viewer (`blind::BattleView`).
impl From<&core::blind::BattleView> for BattleDto {
    fn from(view: &core::blind::BattleView) -> Self {
        let b = &view.battle;
        BattleDto {
            id: b.id.clone(),
            battle_type: b.battle_type.into(),
            status: b.status.into(),
            prompt: b.prompt.clone(),
            project: path(&b.project),
            results_path: path(&b.results_path),
            created_at: rfc3339(b.created_at),
            finished_at: b.finished_at.map(rfc3339),
            winner: b.winner.as_ref().map(Into::into),
            contestants: b
                .contestants
                .iter()
                .map(|c| ContestantDto {
                    lane: view.lane(c).map(Into::into),
                    ..c.into()
                })
                .collect(),
            base_commit: b.base_commit.clone(),
            base: core::coding_base::base_of(b).map(Into::into),
            check_command: b.check_command.clone(),
            check_warning: core::check_outcome::battle_warning(b),
            series_id: b.series_id.clone(),
            blind: b.blind,
            masked: view.masked,
            user_verdict: b.user_verdict.map(Into::into),
            tags: b.tags.clone(),
            judging: b.judging.map(Into::into),
            machine: b.machine.clone(),
            user_name: b.user_name.clone(),
            voted_by: b.voted_by.clone(),
        }
    }
}

/// What the history asks for: a page of battles matching a search and
/// filters (all optional), newest first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BattleQueryDto {
    /// Words that must each appear in the prompt or a contestant's
    /// `identity@model provider` (ignoring case).
    pub search: Option<String>,
    pub battle_type: Option<BattleTypeDto>,
    pub status: Option<BattleStatusDto>,
    /// The full id of a series.
    pub series_id: Option<String>,
    /// At most this many (default 50, at most 500)...
    pub limit: Option<u32>,
    /// ...after skipping this many.
    pub offset: Option<u32>,
}

impl BattleQueryDto {
    /// The most battles one page holds.
    pub const MAX_LIMIT: u32 = 500;

    pub fn into_engine(self) -> core::battle::BattleQuery {
        core::battle::BattleQuery {
            search: self.search.filter(|s| !s.trim().is_empty()),
            battle_type: self.battle_type.map(Into::into),
            status: self.status.map(Into::into),
            series_id: self.series_id.filter(|s| !s.trim().is_empty()),
            limit: self
                .limit
                .map_or(core::battle::BattleQuery::DEFAULT_LIMIT, |l| {
                    l.min(Self::MAX_LIMIT) as usize
                }),
            offset: self.offset.unwrap_or(0) as usize,
        }
    }
}

/// A page of battles and how many match in all.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BattlePageDto {
    pub battles: Vec<BattleDto>,
    pub total: u64,
    pub offset: u64,
}

/// A refinement round of a Coding contestant (round 1 is its own run, so
/// these are 2, 3, …).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RoundDto {
    pub id: String,
    pub contestant_id: String,
    pub number: u32,
    /// The user's feedback that started it.
    pub feedback: String,
    /// `null` while it runs.
    pub status: Option<ContestantStatusDto>,
    pub output: String,
    pub error: Option<String>,
    /// Against the base commit, so it includes the earlier rounds' work.
    pub diff: Option<DiffSummaryDto>,
    pub check: Option<CheckResultDto>,
    pub duration_ms: Option<u64>,
    pub result_path: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// What the round cost (USD), when known.
    pub cost_usd: Option<f64>,
}

impl From<&core::battle::Round> for RoundDto {
    fn from(r: &core::battle::Round) -> Self {
        RoundDto {
            id: r.id.clone(),
            contestant_id: r.contestant_id.clone(),
            number: r.number,
            feedback: r.feedback.clone(),
            status: r.status.map(Into::into),
            output: r.output.clone(),
            error: r.error.clone(),
            diff: r.diff.as_ref().map(Into::into),
            check: r.check.as_ref().map(Into::into),
            duration_ms: r.duration_ms,
            result_path: r.result_path.as_deref().map(path),
            created_at: rfc3339(r.created_at),
            finished_at: r.finished_at.map(rfc3339),
            cost_usd: r.cost_usd,
        }
    }
}

/// Everything about one battle: the battle with its outputs and each
/// contestant's rounds, the newest analysis and the cross-examinations
/// (the battle view; `arena battle show --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BattleDetailDto {
    #[serde(flatten)]
    pub battle: BattleDto,
    pub analysis: Option<AnalysisDto>,
    pub cross_examinations: Vec<CrossExaminationDto>,
    /// The user's verdict in words with the judge's beside it, once the
    /// user decided (and the battle is not masked).
    pub vote: Option<VoteWordsDto>,
    /// The battle's newest event when this was read: the replayed journal
    /// up to here is already reflected in the fields above.
    pub last_seq: u64,
}

impl From<&core::blind::DetailView> for BattleDetailDto {
    fn from(d: &core::blind::DetailView) -> Self {
        let mut battle = BattleDto::from(&d.battle);
        for c in &mut battle.contestants {
            if let Some(rounds) = d.rounds.get(&c.id) {
                c.rounds = rounds.iter().map(RoundDto::from).collect();
            }
        }
        BattleDetailDto {
            vote: d.vote.as_ref().map(|w| VoteWordsDto {
                mine: w.mine.clone(),
                judge: w.judge.clone(),
            }),
            analysis: d.analysis.as_ref().map(AnalysisDto::from),
            cross_examinations: d
                .cross_examinations
                .iter()
                .map(CrossExaminationDto::from)
                .collect(),
            battle,
            last_seq: d.last_seq,
        }
    }
}

/// The user's verdict and the judge's, each as a sentence: "You chose
/// B · debugger@qwen3-8b." and "The judge agreed."
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct VoteWordsDto {
    pub mine: String,
    pub judge: String,
}

/// The user's vote on a battle (`vote`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VoteDto {
    /// This contestant won: its label (`B`) or id.
    Winner {
        contestant: String,
    },
    Tie,
    AllBad,
}

impl From<VoteDto> for core::blind::Vote {
    fn from(v: VoteDto) -> Self {
        match v {
            VoteDto::Winner { contestant } => core::blind::Vote::Winner(contestant),
            VoteDto::Tie => core::blind::Vote::Tie,
            VoteDto::AllBad => core::blind::Vote::AllBad,
        }
    }
}

/// One line of a file's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DiffLineDto {
    /// `context` also covers `\ No newline at end of file` (no numbers).
    pub kind: LineKindDto,
    /// Without the `+`/`-`/space marker; a hunk header in full.
    pub text: String,
    /// 1-based, in the old file (context and deleted lines).
    pub old_line: Option<u32>,
    /// 1-based, in the new file (context and added lines).
    pub new_line: Option<u32>,
}

/// One changed file with its lines (none for a binary file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DiffFileDto {
    /// The new path (the old one for a deleted file).
    pub path: String,
    /// The path a renamed file had.
    pub old_path: Option<String>,
    pub status: ChangeStatusDto,
    pub binary: bool,
    pub insertions: usize,
    pub deletions: usize,
    pub lines: Vec<DiffLineDto>,
}

/// A Coding contestant's latest diff against the base commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DiffViewDto {
    /// 1 for the contestant's own run; 2, 3, … for a refinement round
    /// (whose diff includes the earlier rounds' work).
    pub round: u32,
    pub files: Vec<DiffFileDto>,
}

impl From<core::patch::ContestantDiff> for DiffViewDto {
    fn from(d: core::patch::ContestantDiff) -> Self {
        DiffViewDto {
            round: d.round,
            files: d
                .files
                .into_iter()
                .map(|f| DiffFileDto {
                    path: f.file.path,
                    old_path: f.file.old_path,
                    status: f.file.status.into(),
                    binary: f.file.binary,
                    insertions: f.file.insertions,
                    deletions: f.file.deletions,
                    lines: f
                        .lines
                        .into_iter()
                        .map(|l| DiffLineDto {
                            kind: l.kind.into(),
                            text: l.text,
                            old_line: l.old_line,
                            new_line: l.new_line,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// What `apply_diff` brought into the project, or would have: every file
/// it writes, with those that run by themselves flagged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ApplyResultDto {
    pub battle_id: String,
    /// Whose diff was applied (the winner's when none was named).
    pub contestant_id: String,
    /// Whether the files were written. `false`: nothing was, because some
    /// run without the user running the project (their `autorun` is set)
    /// and the user has not said yes; applying again with the user's yes
    /// (`--yes`, "Apply anyway") writes them.
    pub applied: bool,
    pub stats: DiffSummaryDto,
    /// Every file it writes, in the patch's order.
    pub files: Vec<AppliedFileDto>,
}

impl ApplyResultDto {
    pub fn new(
        battle_id: String,
        contestant_id: String,
        applied: &core::agent::apply::Applied,
    ) -> Self {
        let changes = applied.changes();
        ApplyResultDto {
            battle_id,
            contestant_id,
            applied: applied.is_written(),
            stats: (&changes.stats).into(),
            files: changes
                .files
                .iter()
                .map(|f| AppliedFileDto {
                    path: f.path.clone(),
                    old_path: f.old_path.clone(),
                    status: f.status.into(),
                    autorun: f.autorun.map(|kind| AutorunDto {
                        kind: kind.into(),
                        why: kind.why().to_string(),
                    }),
                })
                .collect(),
        }
    }
}

/// One file `apply_diff` writes (creates, changes, deletes or moves).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AppliedFileDto {
    /// The new path (the old one for a deleted file).
    pub path: String,
    /// The path a renamed file had.
    pub old_path: Option<String>,
    pub status: ChangeStatusDto,
    /// Why it runs without the user running the project (`null` for an
    /// ordinary file).
    pub autorun: Option<AutorunDto>,
}

/// Why a file runs without the user running the project: its kind, and a
/// sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AutorunDto {
    pub kind: AutorunKindDto,
    pub why: String,
}

wire_enum!(
    /// What kind of file runs by itself: a CI pipeline, an editor's or
    /// coding assistant's settings, direnv's `.envrc`, a hook manager's
    /// configuration, `.gitattributes`, `.gitmodules`, a dev container.
    AutorunKindDto from core::agent::apply::Autorun {
        Ci, Editor, Direnv, HookManager, GitAttributes, Submodules, DevContainer
    }
);

/// One contestant's git worktree (`arena worktrees list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WorktreeDto {
    pub battle_id: String,
    pub battle_status: BattleStatusDto,
    pub contestant_id: String,
    pub project: String,
    pub path: String,
    /// Its name in git's bookkeeping (`null` when git no longer lists it).
    pub name: Option<String>,
    /// Whether its folder still exists.
    pub exists: bool,
    /// Whether it holds work Arena has not kept, by Arena's records (its
    /// contestant has not finished with a diff); its files are not read.
    pub dirty: bool,
}

impl From<&core::WorktreeEntry> for WorktreeDto {
    fn from(w: &core::WorktreeEntry) -> Self {
        WorktreeDto {
            battle_id: w.battle_id.clone(),
            battle_status: w.battle_status.into(),
            contestant_id: w.contestant_id.clone(),
            project: path(&w.project),
            path: path(&w.path),
            name: w.name.clone(),
            exists: w.exists,
            dirty: w.dirty,
        }
    }
}

/// Where Arena keeps its data, and which machine this is (`arena status`,
/// Settings).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StatusDto {
    /// This machine's name among a team's (`ARENA_MACHINE`, else the host
    /// name).
    pub machine: String,
    pub database: DatabaseDto,
    /// Machines at work on this database now (driving a battle or a
    /// series, using a lane, or serving places), this one included when
    /// it is.
    pub machines: Vec<String>,
    /// Processes serving series' places, seen in the last minute.
    pub workers: Vec<WorkerDto>,
    /// Lanes in use now, per machine.
    pub lanes: Vec<LaneUseDto>,
}

/// A process serving series' places (`arena worker`, the app's switch,
/// or a series' own driver).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WorkerDto {
    pub machine: String,
    /// `worker`, or `series` (a series' driver serving its own places).
    pub role: String,
    pub pid: u32,
    pub user: Option<String>,
    /// Places it runs at once at most, and holds now.
    pub places: u64,
    pub taken: u64,
    /// How long ago it last said so (ms).
    pub seen_ms_ago: i64,
}

/// A lane in use on one machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LaneUseDto {
    pub lane: String,
    pub machine: String,
    /// Requests holding a slot of it, and waiting for one.
    pub held: u64,
    pub waiting: u64,
}

/// The app's worker switch (Settings): whether this app serves places of
/// running series, and how many at once. Off at every start.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WorkerStateDto {
    pub enabled: bool,
    pub places: u32,
}

/// The database, as it answered just now.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DatabaseDto {
    /// `sqlite` (this machine's own) or `postgresql` (a team's).
    pub backend: String,
    /// The file, or the team database's URL (it never holds a password).
    pub location: String,
    pub schema: i64,
    pub server_version: String,
    pub round_trip_ms: f64,
}

impl StatusDto {
    pub fn new(
        machine: &str,
        info: &arena_core::store::StoreInfo,
        activity: &arena_core::Activity,
    ) -> StatusDto {
        StatusDto {
            machine: machine.to_string(),
            machines: activity.machines.clone(),
            workers: activity
                .workers
                .iter()
                .map(|w| WorkerDto {
                    machine: w.machine.clone(),
                    role: w.role.clone(),
                    pid: w.pid,
                    user: w.user.clone(),
                    places: w.places,
                    taken: w.taken,
                    seen_ms_ago: (activity.now_ms - w.seen_at_ms).max(0),
                })
                .collect(),
            lanes: activity
                .lanes
                .iter()
                .map(|l| LaneUseDto {
                    lane: l.lane.clone(),
                    machine: l.machine.clone(),
                    held: l.held,
                    waiting: l.waiting,
                })
                .collect(),
            database: DatabaseDto {
                backend: info.backend.to_string(),
                location: info.location.clone(),
                schema: info.schema,
                server_version: info.server_version.clone(),
                round_trip_ms: info.round_trip_ms,
            },
        }
    }

    /// The database in one line: "PostgreSQL 15.10 at postgres://…,
    /// schema 1, answered in 3 ms".
    pub fn database_line(&self) -> String {
        let d = &self.database;
        let what = match d.backend.as_str() {
            "postgresql" => format!("PostgreSQL {} (a team database)", d.server_version),
            _ => format!("SQLite {} (this machine's own)", d.server_version),
        };
        format!(
            "{what} at {}, schema {}, answered in {:.0} ms",
            d.location, d.schema, d.round_trip_ms
        )
    }
}

/// What pruning worktrees did (`arena worktrees prune`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PruneDto {
    pub removed: Vec<String>,
    /// Worktrees kept, each with the reason (uncommitted work, …).
    pub kept: Vec<KeptWorktreeDto>,
}

/// A worktree pruning kept, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct KeptWorktreeDto {
    pub path: String,
    pub reason: String,
}

impl PruneDto {
    pub fn new(removed: &[std::path::PathBuf], kept: &[(std::path::PathBuf, String)]) -> PruneDto {
        PruneDto {
            removed: removed.iter().map(|p| path(p)).collect(),
            kept: kept
                .iter()
                .map(|(p, reason)| KeptWorktreeDto {
                    path: path(p),
                    reason: reason.clone(),
                })
                .collect(),
        }
    }
}

// ---------------------------------------------------------------------------
// Analysis and cross-examination

/// A judge's verdict, in contestant ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct VerdictDto {
    pub winner: String,
    pub ranking: Vec<String>,
    /// Reason per contestant id.
    pub reasons: BTreeMap<String, String>,
}

impl From<&core::analysis::Verdict> for VerdictDto {
    fn from(v: &core::analysis::Verdict) -> Self {
        VerdictDto {
            winner: v.winner.clone(),
            ranking: v.ranking.clone(),
            reasons: v.reasons.clone(),
        }
    }
}

/// One judge run: the order the contestants were shown in, what came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct JudgeRunDto {
    /// Contestant ids in the order shown, labelled A, B, C, …
    pub order: Vec<String>,
    pub raw: String,
    pub verdict: Option<VerdictDto>,
    pub error: Option<String>,
    /// The first reply was unparsable and a repair was asked for.
    pub repaired: bool,
}

impl From<&core::analysis::JudgeRun> for JudgeRunDto {
    fn from(r: &core::analysis::JudgeRun) -> Self {
        JudgeRunDto {
            order: r.order.clone(),
            raw: r.raw.clone(),
            verdict: r.verdict.as_ref().map(Into::into),
            error: r.error.clone(),
            repaired: r.repaired,
        }
    }
}

/// One contestant's digest, written by the judge model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DigestDto {
    pub contestant_id: String,
    pub text: String,
    /// Length of the digested answer, in words.
    pub words: usize,
}

impl From<&core::analysis::Digest> for DigestDto {
    fn from(d: &core::analysis::Digest) -> Self {
        DigestDto {
            contestant_id: d.contestant_id.clone(),
            text: d.text.clone(),
            words: d.words,
        }
    }
}

/// A battle's analysis (digests, two judge runs, the outcome).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AnalysisDto {
    pub id: String,
    pub battle_id: String,
    pub status: AnalysisStatusDto,
    /// The judge model and its provider.
    pub model: String,
    pub provider: String,
    pub outcome: Option<OutcomeDto>,
    /// The contestant id both judge runs named (or the walkover).
    pub winner: Option<String>,
    /// `outcome == "no_clear_winner"`, for convenience.
    pub no_clear_winner: bool,
    pub ranking: Vec<String>,
    /// Reason per contestant id.
    pub reasons: BTreeMap<String, String>,
    pub digests: Vec<DigestDto>,
    pub judge_runs: Vec<JudgeRunDto>,
    pub error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// What its digest and judge calls cost (USD); `null` when unknown.
    pub cost_usd: Option<f64>,
}

impl From<&core::analysis::Analysis> for AnalysisDto {
    fn from(a: &core::analysis::Analysis) -> Self {
        AnalysisDto {
            id: a.id.clone(),
            battle_id: a.battle_id.clone(),
            status: a.status.into(),
            model: a.model.clone(),
            provider: a.provider.clone(),
            outcome: a.outcome.map(Into::into),
            winner: a.winner.clone(),
            no_clear_winner: a.outcome == Some(core::analysis::Outcome::NoClearWinner),
            ranking: a.ranking.clone(),
            reasons: a.reasons.clone(),
            digests: a.digests.iter().map(Into::into).collect(),
            judge_runs: a.judge_runs.iter().map(Into::into).collect(),
            error: a.error.clone(),
            created_at: rfc3339(a.created_at),
            finished_at: a.finished_at.map(rfc3339),
            cost_usd: a.cost_usd,
        }
    }
}

/// The contestant a cross-examiner preferred, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CrossVerdictDto {
    pub winner: String,
    pub reason: Option<String>,
}

/// One cross-examination of a battle's results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CrossExaminationDto {
    pub id: String,
    pub battle_id: String,
    /// 1, 2, … within the battle (`cross-exam-<n>.md`).
    pub number: u32,
    pub identity: String,
    pub model: String,
    pub provider: String,
    pub question: String,
    pub status: AnalysisStatusDto,
    /// The report.
    pub output: String,
    pub verdict: Option<CrossVerdictDto>,
    pub error: Option<String>,
    /// Its `cross-exam-<n>.md`.
    pub path: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
}

impl From<&core::cross_exam::CrossExamination> for CrossExaminationDto {
    fn from(x: &core::cross_exam::CrossExamination) -> Self {
        CrossExaminationDto {
            id: x.id.clone(),
            battle_id: x.battle_id.clone(),
            number: x.number,
            identity: x.identity.clone(),
            model: x.model.clone(),
            provider: x.provider.clone(),
            question: x.question.clone(),
            status: x.status.into(),
            output: x.output.clone(),
            verdict: x.verdict.as_ref().map(|v| CrossVerdictDto {
                winner: v.winner.clone(),
                reason: v.reason.clone(),
            }),
            error: x.error.clone(),
            path: x.path.as_deref().map(path),
            created_at: rfc3339(x.created_at),
            finished_at: x.finished_at.map(rfc3339),
        }
    }
}

// ---------------------------------------------------------------------------
// Events

/// One battle event, as delivered by `subscribe_battle`. Output and
/// reasoning deltas may be several engine events merged into one (their
/// `seq` is the last merged event's); `seq` still increases strictly, so
/// the highest `seq` seen is where a new subscription picks up.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BattleEventDto {
    pub battle_id: String,
    pub seq: u64,
    /// `null` for battle-wide events (battle status, winner, analysis, …).
    pub contestant_id: Option<String>,
    pub at: String,
    #[serde(flatten)]
    pub kind: EventKindDto,
}

/// What happened; `type` tells which.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKindDto {
    BattleStatus {
        status: BattleStatusDto,
    },
    ContestantStatus {
        status: ContestantStatusDto,
        error: Option<String>,
        attempt: u32,
    },
    /// Answer text produced since the previous `output` event: append it.
    Output {
        text: String,
    },
    /// Reasoning text produced since the previous `reasoning` event: append it.
    Reasoning {
        text: String,
    },
    /// A tool a coding agent used, with a short summary.
    Tool {
        name: String,
        summary: String,
        ok: bool,
    },
    /// Coding: a refinement round started (`status` null, with the
    /// feedback) or ended. The contestant's `output` events that follow
    /// belong to it.
    Round {
        number: u32,
        status: Option<ContestantStatusDto>,
        feedback: Option<String>,
    },
    /// Coding: files the agent touched since the previous such event of
    /// its round (each named once, the first 1,000 only), and `total`, how
    /// many distinct files it touched so far (up to 100,000). Without
    /// `total` (an event an older Arena wrote), `files` is the whole list.
    ChangedFiles {
        files: Vec<String>,
        total: Option<u64>,
    },
    /// Discard this contestant's output and reasoning so far: it runs again.
    Reset {
        reason: String,
    },
    /// A Q&A contestant's answer, whole, when it ends: replaces the output
    /// and reasoning built from its deltas (which the journal no longer
    /// keeps).
    Folded {
        output: String,
        reasoning: String,
    },
    /// A queued contestant waits for its lane: why (`null` once it no longer does).
    Waiting {
        reason: Option<String>,
    },
    Retry {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    Benchmark {
        benchmark: BenchmarkDto,
    },
    Winner {
        winner: Option<WinnerDto>,
    },
    /// A blind battle was revealed: read the battle again for its names,
    /// speeds and analysis.
    Revealed,
    ResultWritten {
        path: String,
    },
    AnalysisStatus {
        analysis_id: String,
        status: AnalysisStatusDto,
        outcome: Option<OutcomeDto>,
        winner: Option<String>,
        error: Option<String>,
    },
    /// Text the judge model produced for one stage (`digest A`, `judge 1`, …).
    AnalysisOutput {
        analysis_id: String,
        stage: String,
        text: String,
    },
    CrossExamStatus {
        cross_exam_id: String,
        number: u32,
        status: AnalysisStatusDto,
        error: Option<String>,
    },
    CrossExamOutput {
        cross_exam_id: String,
        text: String,
    },
}

impl From<core::EventKind> for EventKindDto {
    fn from(kind: core::EventKind) -> Self {
        use core::EventKind as K;
        match kind {
            K::BattleStatus { status } => EventKindDto::BattleStatus {
                status: status.into(),
            },
            K::ContestantStatus {
                status,
                error,
                attempt,
            } => EventKindDto::ContestantStatus {
                status: status.into(),
                error,
                attempt,
            },
            K::Output { text } => EventKindDto::Output { text },
            K::Reasoning { text } => EventKindDto::Reasoning { text },
            K::Tool { name, summary, ok } => EventKindDto::Tool { name, summary, ok },
            K::Round {
                number,
                status,
                feedback,
            } => EventKindDto::Round {
                number,
                status: status.map(Into::into),
                feedback,
            },
            K::ChangedFiles { files, total } => EventKindDto::ChangedFiles { files, total },
            K::Reset { reason } => EventKindDto::Reset { reason },
            K::Folded { output, reasoning } => EventKindDto::Folded { output, reasoning },
            K::Waiting { reason } => EventKindDto::Waiting { reason },
            K::Retry {
                attempt,
                delay_ms,
                reason,
            } => EventKindDto::Retry {
                attempt,
                delay_ms,
                reason,
            },
            K::Benchmark { benchmark } => EventKindDto::Benchmark {
                benchmark: (&benchmark).into(),
            },
            K::Winner { winner } => EventKindDto::Winner {
                winner: winner.as_ref().map(Into::into),
            },
            K::Revealed => EventKindDto::Revealed,
            K::ResultWritten { path } => EventKindDto::ResultWritten { path },
            K::AnalysisStatus {
                analysis_id,
                status,
                outcome,
                winner,
                error,
            } => EventKindDto::AnalysisStatus {
                analysis_id,
                status: status.into(),
                outcome: outcome.map(Into::into),
                winner,
                error,
            },
            K::AnalysisOutput {
                analysis_id,
                stage,
                text,
            } => EventKindDto::AnalysisOutput {
                analysis_id,
                stage,
                text,
            },
            K::CrossExamStatus {
                cross_exam_id,
                number,
                status,
                error,
            } => EventKindDto::CrossExamStatus {
                cross_exam_id,
                number,
                status: status.into(),
                error,
            },
            K::CrossExamOutput {
                cross_exam_id,
                text,
            } => EventKindDto::CrossExamOutput {
                cross_exam_id,
                text,
            },
        }
    }
}

impl From<core::BattleEvent> for BattleEventDto {
    fn from(e: core::BattleEvent) -> Self {
        BattleEventDto {
            battle_id: e.battle_id,
            seq: e.seq,
            contestant_id: e.contestant_id,
            at: rfc3339(e.at),
            kind: e.kind.into(),
        }
    }
}

// ---------------------------------------------------------------------------
// Leaderboard

/// One row of the leaderboard: an (identity, model) pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StandingDto {
    /// 1-based, by rating.
    pub rank: usize,
    pub identity: String,
    pub model: String,
    /// Elo-like: the average player is 1000, +400 ≈ 10:1 odds.
    pub rating: f64,
    /// The 95% interval (from the fitted model's curvature).
    pub rating_low: f64,
    pub rating_high: f64,
    /// Battles finished in (any verdict).
    pub battles: u32,
    /// Battles with a winner or a tie.
    pub decided: u32,
    pub wins: u32,
    pub ties: u32,
    pub losses: u32,
    /// `wins / decided` (0 when nothing was decided).
    pub win_rate: f64,
    pub median_duration_ms: Option<f64>,
    pub median_tokens_per_sec: Option<f64>,
    /// What its runs cost in all (USD); `null` when any cost is unknown.
    pub cost_usd: Option<f64>,
    /// `cost_usd / wins`, when both are known and it won.
    pub cost_per_win_usd: Option<f64>,
    /// The length-controlled rating (same scale): what the rating would
    /// be if answer length did not sway the verdicts. `null` when some
    /// answer's length is unknown.
    pub rating_lc: Option<f64>,
}

impl From<&core::leaderboard::Standing> for StandingDto {
    fn from(s: &core::leaderboard::Standing) -> Self {
        StandingDto {
            rank: s.rank,
            identity: s.identity.clone(),
            model: s.model.clone(),
            rating: s.rating,
            rating_low: s.rating_low,
            rating_high: s.rating_high,
            battles: s.battles,
            decided: s.decided,
            wins: s.wins,
            ties: s.ties,
            losses: s.losses,
            win_rate: s.win_rate,
            median_duration_ms: s.median_duration_ms,
            median_tokens_per_sec: s.median_tokens_per_sec,
            cost_usd: s.cost_usd,
            cost_per_win_usd: s.cost_per_win_usd,
            rating_lc: s.rating_lc,
        }
    }
}

/// How often the judge and the user agreed, over the battles where both
/// gave a verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AgreementDto {
    /// Battles with both a user's and a judge's verdict.
    pub both_chose: u32,
    /// ...where they were the same (the same winner, or both a tie).
    pub agreed: u32,
    /// `agreed / both_chose`; `null` when none.
    pub rate: Option<f64>,
    /// Its 95% Wilson interval `[lo, hi]`.
    pub rate_ci: Option<[f64; 2]>,
}

/// The leaderboard (`arena leaderboard --json`): the standings, judge–human
/// agreement, and how much longer answers sway the verdicts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LeaderboardDto {
    pub standings: Vec<StandingDto>,
    pub agreement: AgreementDto,
    /// The length coefficient of the length-controlled fit (log-odds per
    /// unit of relative length difference; positive: longer answers won
    /// more). `null` when it was not fitted.
    pub length_coefficient: Option<f64>,
}

impl From<&core::leaderboard::Leaderboard> for LeaderboardDto {
    fn from(l: &core::leaderboard::Leaderboard) -> Self {
        LeaderboardDto {
            standings: l.standings.iter().map(Into::into).collect(),
            agreement: AgreementDto {
                both_chose: l.agreement.both_chose,
                agreed: l.agreement.agreed,
                rate: l.agreement.rate,
                rate_ci: l.agreement.rate_ci.map(|(lo, hi)| [lo, hi]),
            },
            length_coefficient: l.length_coefficient,
        }
    }
}

/// What the leaderboard screen asks for: filters (all optional) and whose
/// verdicts count.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LeaderboardQueryDto {
    pub battle_type: Option<BattleTypeDto>,
    /// A series' id (or its start or end).
    pub series_id: Option<String>,
    /// A project folder.
    pub project: Option<String>,
    pub tag: Option<String>,
    /// Battles run on this machine (its name).
    pub machine: Option<String>,
    /// Battles whose verdict this user gave (an OS user's name).
    pub user: Option<String>,
    /// `both` when absent.
    pub source: Option<SourceDto>,
}

impl LeaderboardQueryDto {
    pub fn into_engine(self) -> core::LeaderboardQuery {
        core::LeaderboardQuery {
            battle_type: self.battle_type.map(Into::into),
            series: text(self.series_id),
            project: text(self.project).map(Into::into),
            tag: text(self.tag),
            machine: text(self.machine),
            user: text(self.user),
            source: self.source.map(Into::into).unwrap_or_default(),
        }
    }
}

// ---------------------------------------------------------------------------
// Series

/// What the launcher sends to start a series: a battle's fields, plus how
/// often and against what it runs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StartSeriesRequest {
    pub battle_type: BattleTypeDto,
    pub project: String,
    /// The prompt of every run, unless `prompt_set` is given.
    pub prompt: String,
    /// A prompt-set file: one prompt per line, or JSONL with `prompt` and
    /// optional `goal`, `check`, `tags`.
    pub prompt_set: Option<String>,
    pub contestants: Vec<String>,
    pub check_command: Option<String>,
    pub runs: u32,
    pub parallel: u32,
    pub goal: Option<String>,
    pub goal_model: Option<String>,
    pub confirm_model: Option<String>,
    pub max_turns: u32,
    pub budget_usd: Option<f64>,
    pub until_decided: bool,
    /// Judge a winner of each battle.
    pub analysis: bool,
    pub tags: Vec<String>,
    /// Every battle blind: the user votes on each.
    #[serde(default)]
    pub blind: bool,
    /// An idempotency key: the same key again returns the series it started.
    pub key: Option<String>,
}

/// A trimmed text, `None` when blank.
fn text(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

impl StartSeriesRequest {
    /// The engine's request and key. `prompt_set` is the text of the file
    /// the request names (the caller reads it); fails on a contestant that
    /// is not `IDENTITY@MODEL` or a prompt set that does not parse.
    pub fn into_engine(
        self,
        prompt_set: Option<&str>,
    ) -> Result<(core::series::SeriesRequest, Option<String>), core::Invalid> {
        let prompts = match prompt_set {
            Some(text) => core::series::parse_prompts(text)?,
            None => vec![core::series::SeriesPrompt {
                prompt: self.prompt,
                goal: None,
                check: None,
                tags: Vec::new(),
                task: None,
            }],
        };
        let contestants = self
            .contestants
            .iter()
            .map(|c| core::ContestantSpec::parse(c))
            .collect::<Result<Vec<_>, _>>()?;
        let request = core::series::SeriesRequest {
            battle_type: self.battle_type.into(),
            project: self.project.trim().into(),
            contestants,
            prompts,
            runs: self.runs,
            parallel: self.parallel,
            goal: text(self.goal),
            goal_model: text(self.goal_model),
            confirm_model: text(self.confirm_model),
            max_turns: self.max_turns,
            budget_usd: self.budget_usd,
            until_decided: self.until_decided,
            analysis: self.analysis,
            check_command: text(self.check_command),
            tags: core::blind::tags(&self.tags)?,
            blind: self.blind,
        };
        Ok((request, text(self.key)))
    }
}

/// A series: what it runs, how far it got, and its report per contestant
/// (`arena series show --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SeriesDto {
    pub id: String,
    /// The last eight letters of the id, as commands accept it.
    pub short_id: String,
    pub key: Option<String>,
    pub status: SeriesStatusDto,
    pub battle_type: BattleTypeDto,
    pub project: String,
    /// The first prompt of the set (the only one without a set).
    pub prompt: String,
    /// Prompts in the set.
    pub prompts: usize,
    /// Runs of each prompt (with `until_decided`, the most).
    pub runs: u32,
    pub parallel: u32,
    pub goal: Option<String>,
    pub max_turns: u32,
    pub budget_usd: Option<f64>,
    pub until_decided: bool,
    pub tags: Vec<String>,
    /// Battles at most (runs × prompts).
    pub runs_planned: u64,
    /// Battles that have ended.
    pub runs_done: u64,
    /// Battles under way.
    pub running: u64,
    /// Spent so far (USD); `null` when a price is unknown.
    pub spent_usd: Option<f64>,
    /// What the known costs add up to (USD), even while some are unknown.
    pub spent_known_usd: f64,
    /// Runs and calls that ended without a known cost.
    pub unknown_costs: u64,
    /// The models among them with no price ("model at provider"), for
    /// "set a price".
    pub unpriced: Vec<String>,
    /// About how long it has left when this was read (ms): each battle as
    /// long as its finished ones took on average, the running ones
    /// counted from when they started, `parallel` at a time. `null` before
    /// its first battle ends and once it has ended.
    pub time_left_ms: Option<u64>,
    /// Battles done when the leader's interval separated (`until_decided`).
    pub decided_after: Option<u64>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// Its report folder (report.md, report.json, runs.csv, report.html).
    pub report_path: Option<String>,
    /// Why it ended in `error` (else `null`).
    pub error: Option<String>,
    /// The machine that started it (its Coding project is there).
    pub machine: Option<String>,
    /// Team mode: why its waiting places run nowhere (no connected worker
    /// can serve them, each machine's reason); `null` while some can.
    pub waiting: Option<String>,
    /// Blind battles of it still awaiting your vote: while any do,
    /// `contestants` is empty and no report is written.
    pub awaiting_votes: u64,
    /// Its battles' ids, in the order they were planned.
    pub battles: Vec<String>,
    /// Its report per contestant; empty in listings (`series list`, the
    /// history), which would read every battle of every series for it.
    pub contestants: Vec<SeriesContestantDto>,
}

/// One contestant over a series. Rates are 0–1, each with its 95% Wilson
/// interval `[low, high]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SeriesContestantDto {
    /// A persona name or a CLI agent.
    pub identity: String,
    pub model: String,
    pub runs: u32,
    pub wins: u32,
    pub ties: u32,
    /// Runs with a verdict (a winner or a tie).
    pub decided: u32,
    /// Wins of the decided runs.
    pub win_rate: Option<f64>,
    pub win_rate_ci: [f64; 2],
    /// Results checked against the goal (no judge error).
    pub goal_checked: u32,
    pub goal_passes: u32,
    /// `null` without a goal.
    pub goal_pass_rate: Option<f64>,
    pub goal_pass_rate_ci: [f64; 2],
    /// Goal checks the judge could not answer (not counted as fails).
    pub goal_errors: u32,
    /// Mean turns of the results that reached the goal.
    pub mean_turns: Option<f64>,
    pub errors: u32,
    pub duration_ms_p50: Option<f64>,
    pub duration_ms_p95: Option<f64>,
    pub ttft_ms_p50: Option<f64>,
    /// Generation speed of local runs.
    pub tokens_per_sec_mean: Option<f64>,
    pub tokens_per_sec_sd: Option<f64>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Its own work (answers and later turns); `null` when a price is
    /// unknown, 0 on a local model.
    pub cost_usd: Option<f64>,
    /// Its own cost per result that reached the goal.
    pub cost_per_pass_usd: Option<f64>,
    /// Judging its results against the goal (the goal judge's model), apart.
    pub judging_cost_usd: Option<f64>,
}

impl From<&core::series::ContestantReport> for SeriesContestantDto {
    fn from(r: &core::series::ContestantReport) -> Self {
        let (identity, model) = r
            .contestant
            .split_once('@')
            .unwrap_or((r.contestant.as_str(), ""));
        SeriesContestantDto {
            identity: identity.to_string(),
            model: model.to_string(),
            runs: r.runs,
            wins: r.wins,
            ties: r.ties,
            decided: r.decided,
            win_rate: r.win_rate,
            win_rate_ci: [r.win_rate_low, r.win_rate_high],
            goal_checked: r.goal_checked,
            goal_passes: r.goal_passes,
            goal_pass_rate: r.pass_rate,
            goal_pass_rate_ci: [r.pass_rate_low, r.pass_rate_high],
            goal_errors: r.goal_errors,
            mean_turns: r.mean_turns_to_goal,
            errors: r.errors,
            duration_ms_p50: r.duration_p50_ms,
            duration_ms_p95: r.duration_p95_ms,
            ttft_ms_p50: r.ttft_p50_ms,
            tokens_per_sec_mean: r.tokens_per_sec_mean,
            tokens_per_sec_sd: r.tokens_per_sec_sd,
            prompt_tokens: r.prompt_tokens,
            completion_tokens: r.completion_tokens,
            cost_usd: r.cost_usd,
            cost_per_pass_usd: r.cost_per_pass_usd,
            judging_cost_usd: r.judging_cost_usd,
        }
    }
}

impl From<&core::series::SeriesSummary> for SeriesDto {
    fn from(summary: &core::series::SeriesSummary) -> Self {
        let s = &summary.series;
        let r = &s.request;
        SeriesDto {
            id: s.id.clone(),
            short_id: core::battle::short_id(&s.id),
            key: s.key.clone(),
            status: s.status.into(),
            battle_type: r.battle_type.into(),
            project: path(&r.project),
            prompt: r
                .prompts
                .first()
                .map(|p| p.prompt.clone())
                .unwrap_or_default(),
            prompts: r.prompts.len(),
            runs: r.runs,
            parallel: r.parallel,
            goal: r.goal.clone(),
            max_turns: r.max_turns,
            budget_usd: r.budget_usd,
            until_decided: r.until_decided,
            tags: s.tags.clone(),
            runs_planned: s.total,
            runs_done: summary.progress.done,
            running: summary.progress.running,
            spent_usd: summary.progress.spent_usd,
            spent_known_usd: summary.progress.spent_known_usd,
            unknown_costs: summary.progress.unknown_costs,
            unpriced: summary.progress.unpriced.clone(),
            time_left_ms: summary.progress.time_left_ms,
            decided_after: s.decided_after,
            created_at: rfc3339(s.created_at),
            finished_at: s.finished_at.map(rfc3339),
            report_path: s.report_path.as_deref().map(path),
            error: s.error.clone(),
            machine: s.machine.clone(),
            waiting: s.waiting.clone(),
            awaiting_votes: summary.awaiting_votes,
            battles: summary.battles.clone(),
            contestants: summary.reports.iter().map(Into::into).collect(),
        }
    }
}

// ---------------------------------------------------------------------------
// Catalog, personas, backends, settings

/// Every provider and the models it reported (`arena providers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CatalogDto {
    pub providers: Vec<ProviderModelsDto>,
}

impl From<&core::catalog::Catalog> for CatalogDto {
    fn from(c: &core::catalog::Catalog) -> Self {
        CatalogDto {
            providers: c.providers.iter().map(Into::into).collect(),
        }
    }
}

/// One provider and the models it reported (asked live).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ProviderModelsDto {
    pub name: String,
    pub kind: ProviderKindDto,
    pub base_url: String,
    pub lane: LaneDto,
    /// Whether it answered the model listing.
    pub reachable: bool,
    /// Why it could not list its models, if it could not.
    pub error: Option<String>,
    /// Empty when unreachable.
    pub models: Vec<String>,
}

impl From<&core::catalog::ProviderModels> for ProviderModelsDto {
    fn from(p: &core::catalog::ProviderModels) -> Self {
        let (models, error) = match &p.models {
            Ok(models) => (models.clone(), None),
            Err(e) => (Vec::new(), Some(e.clone())),
        };
        ProviderModelsDto {
            name: p.provider.clone(),
            kind: p.kind.into(),
            base_url: p.base_url.clone(),
            lane: p.lane.into(),
            reachable: p.models.is_ok(),
            error,
            models,
        }
    }
}

/// One persona of the `AGENTS.md` registry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PersonaDto {
    pub name: String,
    pub description: Option<String>,
    pub system_prompt: String,
    pub tools: Vec<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u64>,
}

impl From<&core::persona::Persona> for PersonaDto {
    fn from(p: &core::persona::Persona) -> Self {
        PersonaDto {
            name: p.name.clone(),
            description: p.description.clone(),
            system_prompt: p.system_prompt.clone(),
            tools: p.tools.clone(),
            temperature: p.temperature,
            top_p: p.top_p,
            max_tokens: p.max_tokens,
        }
    }
}

/// The persona registry and where it lives.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PersonasDto {
    /// The `AGENTS.md` file (edits apply to the next battle).
    pub registry: String,
    pub personas: Vec<PersonaDto>,
}

impl From<&core::persona::Registry> for PersonasDto {
    fn from(r: &core::persona::Registry) -> Self {
        PersonasDto {
            registry: path(&r.path),
            personas: r.personas.iter().map(Into::into).collect(),
        }
    }
}

/// A Coding backend (CLI agent) and whether it can run here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BackendDto {
    pub name: String,
    /// The program it runs; `null` for the built-in agent.
    pub program: Option<String>,
    /// Built in, or its program was found.
    pub installed: bool,
    /// Where the program was found.
    pub path: Option<String>,
    /// It can cross-examine (it has an enforceable read-only mode).
    pub read_only: bool,
    /// A `[[backend]]` from arena.toml rather than a known agent.
    pub custom: bool,
    /// A `[[backend]]`'s command as arena.toml has it (empty for a known
    /// agent), for Settings to edit.
    pub command: Vec<String>,
}

impl From<arena_core::backend::BackendStatus> for BackendDto {
    fn from(b: arena_core::backend::BackendStatus) -> Self {
        BackendDto {
            name: b.name,
            program: b.program,
            installed: b.installed,
            path: b.path.map(|p| p.display().to_string()),
            read_only: b.read_only,
            custom: b.custom,
            command: Vec::new(),
        }
    }
}

/// A configured provider, without any key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ProviderSettingsDto {
    pub name: String,
    pub kind: ProviderKindDto,
    pub base_url: String,
    pub lane: LaneDto,
    /// The environment variable holding its API key.
    pub api_key_env: Option<String>,
    /// Whether it has a key (the key itself never crosses IPC).
    pub api_key_set: bool,
    /// Where its key comes from: the `apiKeyEnv` variable when that is
    /// set, else the OS keychain; `null` when it has none.
    pub key_source: Option<KeySourceDto>,
    /// Models offered in addition to what it lists.
    pub models: Vec<String>,
    /// Cloud lane: requests at once, across every battle and process.
    pub max_concurrency: u32,
    /// Cloud lane: at most this many starts a minute (`null`: no limit).
    pub requests_per_minute: Option<u32>,
}

impl ProviderSettingsDto {
    pub fn new(
        p: &core::config::ProviderConfig,
        key_source: Option<core::provider::KeySource>,
    ) -> Self {
        ProviderSettingsDto {
            name: p.name.clone(),
            kind: p.kind.into(),
            base_url: p.base_url.clone(),
            lane: p.lane.into(),
            api_key_env: p.api_key_env.clone(),
            api_key_set: key_source.is_some(),
            key_source: key_source.map(Into::into),
            models: p.models.clone(),
            max_concurrency: p.max_concurrency,
            requests_per_minute: p.requests_per_minute,
        }
    }
}

/// A provider as the settings screen saves it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ProviderInputDto {
    pub name: String,
    /// Checked by the engine, so a bad value is reported as `invalid_input`.
    #[cfg_attr(test, ts(as = "ProviderKindDto"))]
    pub kind: String,
    pub base_url: String,
    #[cfg_attr(test, ts(as = "LaneDto"))]
    pub lane: String,
    /// The environment variable holding its key (blank: none).
    pub api_key_env: Option<String>,
    /// Models to offer in addition to what it lists.
    pub models: Vec<String>,
    /// Cloud lane: requests at once (at least 1; a local server takes one).
    pub max_concurrency: u32,
    /// Cloud lane: starts a minute (`null`: no limit).
    pub requests_per_minute: Option<u32>,
}

/// What `save_settings` writes into arena.toml: the judge model and the
/// whole provider list (in order). Everything else in the file is kept.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SettingsUpdateDto {
    /// `null`: no judge model (battles are not analysed automatically).
    pub default_model: Option<String>,
    pub providers: Vec<ProviderInputDto>,
}

impl SettingsUpdateDto {
    /// The engine's update; fails on an unknown kind or lane, naming the provider.
    pub fn into_engine(self) -> Result<core::config::SettingsUpdate, core::Invalid> {
        let providers = self
            .providers
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                core::config::ProviderInput {
                    name: p.name,
                    kind: p.kind,
                    base_url: p.base_url,
                    lane: p.lane,
                    api_key_env: p.api_key_env,
                    models: p.models,
                    max_concurrency: p.max_concurrency,
                    requests_per_minute: p.requests_per_minute,
                }
                .into_config(i)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(core::config::SettingsUpdate {
            default_model: self.default_model,
            providers,
        })
    }
}

/// Where Arena keeps things and how it is configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SettingsDto {
    /// `ARENA_CONFIG`, else `<config dir>/dev.arena.desktop/arena.toml`.
    pub config_path: Option<String>,
    /// Whether that file exists (without it the defaults apply).
    pub config_exists: bool,
    /// The shared data directory (database and `AGENTS.md`).
    pub data_dir: String,
    /// The judge model for analysis.
    pub default_model: Option<String>,
    pub providers: Vec<ProviderSettingsDto>,
    /// How agents are confined, in one line (as `arena backends` prints it):
    /// `jail: bubblewrap 0.8.0 · Landlock ABI 7 · seccomp`, or
    /// `unavailable: …` with what is missing.
    pub sandbox: String,
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use chrono::{TimeZone, Utc};
    use serde_json::json;

    use super::*;

    #[test]
    fn app_info_serialises_as_snake_case() {
        let info = AppInfo {
            version: "1.2.3".into(),
            commit: "1a2b3c4d5e6f".into(),
            built: "2026-11-27".into(),
            data_dir: "/data/dev.arena.desktop".into(),
            battles: Some(2),
            startup_error: None,
            config_missing: None,
        };
        let json = serde_json::to_value(&info).expect("serialisable");
        assert_eq!(
            json,
            json!({
                "version": "1.2.3",
                "commit": "1a2b3c4d5e6f",
                "built": "2026-11-27",
                "data_dir": "/data/dev.arena.desktop",
                "battles": 2,
                "startup_error": null,
                "config_missing": null
            })
        );
    }

    fn sample_battle() -> core::Battle {
        let at = |s: u32| Utc.with_ymd_and_hms(2026, 11, 21, 9, 15, s).single();
        let contestant = |position: u32, id: &str| core::Contestant {
            id: id.into(),
            battle_id: "b1".into(),
            position,
            identity: "native".into(),
            model: "qwen3-8b".into(),
            provider: "llama-swap".into(),
            lane: core::Lane::Local,
            status: core::ContestantStatus::Done,
            error: None,
            attempts: 1,
            started_at: at(4),
            finished_at: at(9),
            benchmark: core::battle::Benchmark {
                duration_ms: Some(5000),
                ttft_ms: Some(120),
                prompt_tokens: Some(40),
                completion_tokens: Some(400),
                tokens_per_sec: Some(81.5),
                rate_source: Some(core::battle::RateSource::Server),
                cached_tokens: None,
                prompt_per_sec: Some(512.0),
                model_switched: true,
                cost_usd: None,
            },
            output: Some("done".into()),
            reasoning: None,
            truncated: false,
            result_path: Some(PathBuf::from("/p/Arena/b/01-native-qwen3-8b/result.md")),
            run: core::battle::RunSpec::default(),
            worktree: Some(PathBuf::from("/p/.worktrees/c1")),
            diff: Some(core::battle::DiffSummary {
                files: 2,
                insertions: 10,
                deletions: 3,
                omitted: Vec::new(),
                environment: None,
            }),
            check: Some(core::battle::CheckResult {
                command: "cargo test".into(),
                exit_code: Some(0),
                passed: true,
                timed_out: false,
                duration_ms: 900,
                output_tail: "ok".into(),
                ..Default::default()
            }),
            waiting: None,
            label: None,
        };
        core::Battle {
            id: "b1".into(),
            battle_type: core::BattleType::Coding,
            status: core::BattleStatus::Done,
            prompt: "Fix the bug".into(),
            project: PathBuf::from("/p"),
            results_path: PathBuf::from("/p/Arena/b"),
            created_at: at(3).expect("valid time"),
            finished_at: at(10),
            winner: Some(core::battle::Winner {
                contestant_id: "c2".into(),
                source: core::battle::WinnerSource::User,
            }),
            contestants: vec![contestant(0, "c1"), contestant(1, "c2")],
            base_commit: Some("abc123".into()),
            check_command: Some("cargo test".into()),
            series_id: None,
            blind: false,
            revealed_at: None,
            user_verdict: None,
            tags: Vec::new(),
            judging: None,
            machine: Some("alpha".into()),
            user_name: Some("alice".into()),
            voted_by: Some("bob".into()),
            source: None,
        }
    }

    #[test]
    fn a_battle_converts_to_snake_case_json() {
        let json = serde_json::to_value(BattleDto::from(&core::blind::BattleView::of(
            &sample_battle(),
        )))
        .expect("serialisable");
        assert_eq!(json["id"], "b1");
        assert_eq!(json["battle_type"], "coding");
        assert_eq!(json["status"], "done");
        assert_eq!(json["project"], "/p");
        assert_eq!(json["results_path"], "/p/Arena/b");
        assert_eq!(json["created_at"], "2026-11-21T09:15:03.000Z");
        assert_eq!(json["finished_at"], "2026-11-21T09:15:10.000Z");
        assert_eq!(
            json["winner"],
            json!({"contestant_id": "c2", "source": "user"})
        );
        assert_eq!(json["base_commit"], "abc123");
        assert_eq!(json["check_command"], "cargo test");
        assert_eq!(json["machine"], "alpha");
        assert_eq!(json["user_name"], "alice");
        assert_eq!(json["voted_by"], "bob");

        let c = &json["contestants"][1];
        assert_eq!(c["id"], "c2");
        assert_eq!(c["position"], 2, "positions are 1-based");
        assert_eq!(c["lane"], "local");
        assert_eq!(c["status"], "done");
        assert_eq!(c["started_at"], "2026-11-21T09:15:04.000Z");
        // Speed figures are fields of the contestant (the CLI's contract).
        for (key, value) in [
            ("duration_ms", json!(5000)),
            ("ttft_ms", json!(120)),
            ("prompt_tokens", json!(40)),
            ("completion_tokens", json!(400)),
            ("tokens_per_sec", json!(81.5)),
            ("tokens_per_sec_source", json!("server")),
            ("cached_tokens", serde_json::Value::Null),
            ("prompt_per_sec", json!(512.0)),
            ("model_switched", json!(true)),
        ] {
            assert_eq!(c[key], value, "{key}");
        }
        assert!(c.get("benchmark").is_none());
        assert_eq!(c["waiting"], serde_json::Value::Null);
        assert_eq!(c["check_outcome"], "passed");
        assert_eq!(c["apply_advice"], serde_json::Value::Null);
        assert_eq!(c["result_path"], "/p/Arena/b/01-native-qwen3-8b/result.md");
        assert_eq!(c["worktree"], "/p/.worktrees/c1");
        assert_eq!(
            c["diff"],
            json!({"files": 2, "insertions": 10, "deletions": 3, "environment": null})
        );
        assert_eq!(
            c["check"],
            json!({
                "command": "cargo test", "exit_code": 0, "passed": true,
                "timed_out": false, "duration_ms": 900, "output_tail": "ok",
                "not_in_change": [], "not_in_change_count": 0, "touches_check": [],
                "could_not_run": null
            })
        );
        assert_eq!(c["output"], "done");
        assert_eq!(c["reasoning"], serde_json::Value::Null);
    }

    #[test]
    fn events_flatten_their_kind_with_a_snake_case_type() {
        let event = core::BattleEvent {
            battle_id: "b1".into(),
            seq: 7,
            contestant_id: Some("c1".into()),
            at: Utc
                .with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
                .single()
                .expect("valid time"),
            kind: core::EventKind::Retry {
                attempt: 2,
                delay_ms: 500,
                reason: "429".into(),
            },
        };
        let json = serde_json::to_value(BattleEventDto::from(event)).expect("serialisable");
        assert_eq!(
            json,
            json!({
                "battle_id": "b1", "seq": 7, "contestant_id": "c1",
                "at": "2026-01-02T03:04:05.000Z",
                "type": "retry", "attempt": 2, "delay_ms": 500, "reason": "429"
            })
        );
    }

    #[test]
    fn analysis_marks_no_clear_winner() {
        let analysis = core::analysis::Analysis {
            id: "a1".into(),
            battle_id: "b1".into(),
            status: core::analysis::AnalysisStatus::Done,
            model: "judge".into(),
            provider: "local".into(),
            outcome: Some(core::analysis::Outcome::NoClearWinner),
            winner: None,
            ranking: vec!["c1".into(), "c2".into()],
            reasons: BTreeMap::from([("c1".to_string(), "thorough".to_string())]),
            digests: vec![],
            judge_runs: vec![core::analysis::JudgeRun {
                order: vec!["c2".into(), "c1".into()],
                raw: "{}".into(),
                verdict: None,
                error: Some("unparsable".into()),
                repaired: true,
            }],
            cost_usd: None,
            error: None,
            created_at: Utc::now(),
            finished_at: None,
        };
        let json = serde_json::to_value(AnalysisDto::from(&analysis)).expect("serialisable");
        assert_eq!(json["outcome"], "no_clear_winner");
        assert_eq!(json["no_clear_winner"], true);
        assert_eq!(json["reasons"], json!({"c1": "thorough"}));
        assert_eq!(json["judge_runs"][0]["repaired"], true);
    }

    #[test]
    fn a_start_request_parses_contestants() {
        let request: StartBattleRequest = serde_json::from_value(json!({
            "battle_type": "qa",
            "project": " /tmp/p ",
            "prompt": "Why?",
            "contestants": ["debugger@org/model@v2", "explainer@qwen3-8b"],
            "check_command": "  "
        }))
        .expect("deserialisable");
        let engine = request.clone().into_engine().expect("valid");
        assert_eq!(engine.battle_type, core::BattleType::Qa);
        assert_eq!(engine.project, PathBuf::from("/tmp/p"));
        assert_eq!(engine.contestants[0].model, "org/model@v2");
        assert_eq!(engine.check_command, None);

        let bad = StartBattleRequest {
            contestants: vec!["no-model".into()],
            ..request
        };
        assert!(matches!(
            bad.into_engine(),
            Err(core::Invalid::ContestantSpec(_))
        ));
    }
}
