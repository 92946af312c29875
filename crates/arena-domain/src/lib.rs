//! Arena's pure domain: what a battle, a contestant, a lane, an analysis
//! and a leaderboard are, and every decision about them that needs no
//! outside world — state transitions, resume and lane turns, verdict
//! parsing, the Bradley–Terry fit, reading a patch, the configuration as
//! data. No I/O, no async runtime, no clock: callers pass the time in.
//! (`tests/no_io.rs` checks the dependency tree.)

pub mod analysis;
pub mod autorun;
pub mod backend;
pub mod battle;
pub mod benchmark;
pub mod blind;
pub mod check_files;
pub mod check_outcome;
pub mod coding_base;
pub mod config;
pub mod cross_exam;
pub mod decisions;
pub mod error;
pub mod event;
pub mod instruction;
pub mod leaderboard;
pub mod mining;
pub mod mining_cargo;
pub mod mining_validate;
pub mod model_cutoff;
pub mod pack;
pub mod pack_cutoff;
pub mod pack_score;
pub mod patch;
pub mod secret;
pub mod series;
pub mod terminal;
pub mod test_infra;
pub mod test_report;

pub use error::{Invalid, SettingsError};

/// Arena's version: `ARENA_VERSION` when the build set it (a package built
/// with another version, see `scripts/package.sh`), else the workspace's.
pub const VERSION: &str = match option_env!("ARENA_VERSION") {
    Some(v) => v,
    None => env!("CARGO_PKG_VERSION"),
};
