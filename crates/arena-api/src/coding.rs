//! Coding battles on the wire (issue 42): where a battle starts (HEAD or
//! the working tree as it is), what the launcher shows of a project's base
//! (HEAD's commit and the uncommitted files), a check that could not run
//! (a battle-level warning, before and after the battle), and each
//! contestant's check outcome. Each type only converts from the engine's.

use arena_core as core;
use serde::{Deserialize, Serialize};

/// Where a Coding battle starts: `head` (the project's HEAD commit; the
/// default) or `working_tree` (the working tree as it is — tracked and
/// untracked-but-not-ignored files — as a snapshot commit in Arena's own
/// repository; the user's repository is left untouched).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum BaseChoiceDto {
    #[default]
    Head,
    WorkingTree,
}

impl From<core::coding_base::BaseChoice> for BaseChoiceDto {
    fn from(b: core::coding_base::BaseChoice) -> Self {
        match b {
            core::coding_base::BaseChoice::Head => BaseChoiceDto::Head,
            core::coding_base::BaseChoice::WorkingTree => BaseChoiceDto::WorkingTree,
        }
    }
}

impl From<BaseChoiceDto> for core::coding_base::BaseChoice {
    fn from(b: BaseChoiceDto) -> Self {
        match b {
            BaseChoiceDto::Head => core::coding_base::BaseChoice::Head,
            BaseChoiceDto::WorkingTree => core::coding_base::BaseChoice::WorkingTree,
        }
    }
}

/// A contestant's check in one word: `passed`, `failed`, `could_not_run`
/// (its program was missing or not executable: it says nothing of the
/// change and counts for no one), or `none` (no check, not run yet, Q&A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcomeDto {
    Passed,
    Failed,
    CouldNotRun,
    None,
}

impl From<core::check_outcome::CheckOutcome> for CheckOutcomeDto {
    fn from(o: core::check_outcome::CheckOutcome) -> Self {
        use core::check_outcome::CheckOutcome as O;
        match o {
            O::Passed => CheckOutcomeDto::Passed,
            O::Failed => CheckOutcomeDto::Failed,
            O::CouldNotRun => CheckOutcomeDto::CouldNotRun,
            O::None => CheckOutcomeDto::None,
        }
    }
}

/// How a file differs from HEAD: `modified`, `added` (in the index, not
/// committed), `deleted` or `untracked` (not ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum UncommittedKindDto {
    Modified,
    Added,
    Deleted,
    Untracked,
}

impl From<core::coding_base::UncommittedKind> for UncommittedKindDto {
    fn from(k: core::coding_base::UncommittedKind) -> Self {
        use core::coding_base::UncommittedKind as K;
        match k {
            K::Modified => UncommittedKindDto::Modified,
            K::Added => UncommittedKindDto::Added,
            K::Deleted => UncommittedKindDto::Deleted,
            K::Untracked => UncommittedKindDto::Untracked,
        }
    }
}

/// One uncommitted file of the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UncommittedFileDto {
    /// Relative to the project, `/`-separated.
    pub path: String,
    pub kind: UncommittedKindDto,
}

/// What the launcher shows of a Coding project's base (`coding_base`):
/// HEAD's commit and subject, and the uncommitted files a battle from HEAD
/// would leave out (a battle from the working tree takes them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CodingBaseDto {
    /// HEAD's full commit id.
    pub commit: String,
    /// Its first 8 hex digits.
    pub short_commit: String,
    /// HEAD's subject line.
    pub subject: String,
    /// The branch HEAD is on; `null` when detached.
    pub branch: Option<String>,
    /// The first 200 uncommitted files, sorted by path.
    pub uncommitted: Vec<UncommittedFileDto>,
    /// How many there are in all (more than listed past 200).
    pub uncommitted_count: usize,
}

impl From<&core::coding_base::CodingBase> for CodingBaseDto {
    fn from(b: &core::coding_base::CodingBase) -> Self {
        CodingBaseDto {
            commit: b.commit.clone(),
            short_commit: b.short_commit.clone(),
            subject: b.subject.clone(),
            branch: b.branch.clone(),
            uncommitted: b
                .uncommitted
                .iter()
                .map(|f| UncommittedFileDto {
                    path: f.path.clone(),
                    kind: f.kind.into(),
                })
                .collect(),
            uncommitted_count: b.uncommitted_count,
        }
    }
}

/// What the launcher asks before Start (`probe_check`): whether the check's
/// program can be found where the check will run (its jail, with the
/// check's environment). A warning, never a refusal.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CheckProbeRequest {
    pub project: String,
    pub check_command: String,
}

/// The answer to a [`CheckProbeRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CheckProbeDto {
    /// The program the check runs first (its first word).
    pub program: Option<String>,
    /// Why the check will not be able to run ("`pytest` is not found where
    /// the check runs …"); `null`: it was found, or it could not be told
    /// before the battle.
    pub warning: Option<String>,
}
