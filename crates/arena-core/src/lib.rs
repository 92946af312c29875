//! The Arena engine: battles between AI contestants, with no Tauri in sight.
//!
//! Entry point: [`Engine`]. Front ends (the desktop app, the `arena` CLI)
//! create battles, run them, and follow their [`event::BattleEvent`]
//! stream. See `docs/ARCHITECTURE.md` for the map.

pub use arena_domain::{
    analysis, battle, benchmark, blind, check_outcome, coding_base, cross_exam, decisions, event,
    leaderboard, pack_cutoff, pack_score, patch, series, test_infra, test_report, VERSION,
};

pub mod clock;
pub mod config;
mod engine;
pub mod error;
pub mod html;
pub mod pack;
pub mod persona;
pub mod results;
pub use arena_agent as agent;
pub use arena_agent::{backend, diff, worktree};
pub use arena_provider as provider;
pub use arena_provider::{catalog, keychain};
pub use arena_store as store;

pub use battle::{
    Battle, BattleRequest, BattleStatus, BattleType, Contestant, ContestantSpec, ContestantStatus,
    Lane,
};
/// A Coding check's dry run before the battle (issue 42).
pub use engine::CheckProbe;
/// Running a task pack (a series of its tasks) and its report.
pub use engine::{
    pack_report_csv, pack_report_html, pack_report_markdown, solution_backend, PackCheck,
    PackRunReport, PackRunRequest, PackRunRow, PackRunStart, PackRunTask, SkippedTask, TaskCheck,
    VerifierDetail,
};
pub use engine::{
    Activity, Engine, EngineOptions, EnvChoice, EnvEntry, EnvHold, EnvRecord, EnvState, Judged,
    LeaderboardQuery, PrunedEnv, Recovered, ReportFormat, SeriesStart, WorkerOptions,
    WorktreeEntry,
};
/// Mining validated by running (issue 41).
pub use engine::{DroppedCandidate, MineRun, ValidateOptions, ValidatedTask};
/// Mining into a pack, its instructions written (the CLI's and the app's one path).
pub use engine::{
    InstructionCounts, Instructions, MineEvent, MinePackOptions, MinedPack, WriteEvent,
};
/// Pack runs listed, and a run's report saved as files (the app's Packs screen).
pub use engine::{PackRunListing, PACK_REPORT_FILES};
/// The verifier of a task pack's runs (issue 40).
pub use engine::{Verification, VerifyTask};
pub use error::{Error, Invalid, Result};
pub use event::{BattleEvent, EventKind};
