//! Where a Coding battle starts: the project's HEAD, or the user's working
//! tree as it is (tracked and untracked-but-not-ignored files), taken as a
//! snapshot commit in a repository of Arena's own — the user's repository
//! gets no object, ref or index change.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::battle::Battle;

/// The base a Coding battle starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaseChoice {
    /// The project's HEAD commit: uncommitted work is left out.
    #[default]
    Head,
    /// The working tree as it is: a snapshot commit (its parent HEAD).
    WorkingTree,
}

/// The folder of Arena's data directory that holds working-tree
/// snapshots, one repository each (`<data>/snapshots/<commit>`).
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// Which base a battle started from: a battle whose git objects come from a
/// repository under [`SNAPSHOTS_DIR`] started from a working-tree snapshot
/// (its `base_commit` is the snapshot's commit).
pub fn base_of(battle: &Battle) -> Option<BaseChoice> {
    battle.base_commit.as_ref()?;
    Some(match battle.source.as_deref() {
        Some(source) if is_snapshot(source) => BaseChoice::WorkingTree,
        _ => BaseChoice::Head,
    })
}

/// Whether `source` is a snapshot repository's path (by where Arena put it).
pub fn is_snapshot(source: &Path) -> bool {
    source
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == SNAPSHOTS_DIR)
}

/// How a file differs from HEAD in the working tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UncommittedKind {
    Modified,
    /// Added to the index, not committed.
    Added,
    Deleted,
    /// Not tracked and not ignored.
    Untracked,
}

/// One uncommitted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UncommittedFile {
    /// Relative to the project, `/`-separated.
    pub path: String,
    pub kind: UncommittedKind,
}

/// What the launcher shows of a Coding project's base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodingBase {
    /// HEAD's full commit id.
    pub commit: String,
    /// Its first 8 hex digits.
    pub short_commit: String,
    /// Its subject line.
    pub subject: String,
    /// The branch HEAD is on; `None` when detached.
    pub branch: Option<String>,
    /// The first [`UNCOMMITTED_LISTED`] uncommitted files, sorted by path.
    pub uncommitted: Vec<UncommittedFile>,
    /// How many there are in all.
    pub uncommitted_count: usize,
}

/// How many uncommitted files [`CodingBase`] lists.
pub const UNCOMMITTED_LISTED: usize = 200;
