//! The battle event stream. Every change a viewer can see — status, output,
//! benchmark, winner — is a [`BattleEvent`] with a per-battle sequence number,
//! journaled in the database and broadcast live. Output deltas are coalesced
//! by the runner before they become events, so a fast stream produces a few
//! dozen events a second, not one per token.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::{AnalysisStatus, Outcome};
use crate::battle::{BattleStatus, Benchmark, ContestantStatus, Winner};

/// How many of the files an agent touches are named in its live
/// `changed_files` events; past them the events carry only the count. Each
/// path is sent once, so what a battle keeps of these events grows with
/// the files named, never with the square of the files touched.
pub const CHANGED_FILES_LISTED: usize = 1_000;

/// How many distinct touched files are counted; past this the count stays
/// here (a viewer shows "100000+").
pub const CHANGED_FILES_COUNTED: usize = 100_000;

/// The live list of the files one agent touched, as `changed_files`
/// events: each path is named once (the first [`CHANGED_FILES_LISTED`]),
/// and the count goes on (up to [`CHANGED_FILES_COUNTED`]).
#[derive(Debug, Default)]
pub struct ChangedFilesTally {
    seen: std::collections::HashSet<String>,
    listed: usize,
    new: Vec<String>,
    reported: Option<u64>,
}

impl ChangedFilesTally {
    /// A path the agent touched (again, perhaps).
    pub fn touch(&mut self, path: String) {
        if self.seen.len() >= CHANGED_FILES_COUNTED || self.seen.contains(&path) {
            return;
        }
        if self.listed < CHANGED_FILES_LISTED {
            self.listed += 1;
            self.new.push(path.clone());
        }
        self.seen.insert(path);
    }

    /// The event that tells what changed since the last one, if anything did.
    pub fn event(&mut self) -> Option<EventKind> {
        let total = self.seen.len() as u64;
        if self.reported == Some(total) {
            return None;
        }
        self.reported = Some(total);
        let mut files = std::mem::take(&mut self.new);
        files.sort();
        Some(EventKind::ChangedFiles {
            files,
            total: Some(total),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BattleEvent {
    pub battle_id: String,
    /// 1, 2, 3, … within the battle, never reused.
    pub seq: u64,
    pub contestant_id: Option<String>,
    pub at: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    BattleStatus {
        status: BattleStatus,
    },
    ContestantStatus {
        status: ContestantStatus,
        error: Option<String>,
        attempt: u32,
    },
    /// Answer text produced since the previous `output` event.
    Output {
        text: String,
    },
    /// Reasoning ("thinking") text produced since the previous `reasoning` event.
    Reasoning {
        text: String,
    },
    /// A tool a coding agent used, with a short summary.
    Tool {
        name: String,
        summary: String,
        ok: bool,
    },
    /// Coding: a refinement round started (`status` none, with the feedback)
    /// or ended. The contestant's `output` events that follow belong to it.
    Round {
        number: u32,
        status: Option<ContestantStatus>,
        feedback: Option<String>,
    },
    /// Coding: files the agent touched (relative to its worktree) since the
    /// previous `changed_files` event of its round, among the first
    /// [`CHANGED_FILES_LISTED`] it touched; `total` is how many distinct
    /// files it has touched so far (counted up to
    /// [`CHANGED_FILES_COUNTED`]). An event of an older Arena has no
    /// `total`: its `files` is the whole list so far.
    ChangedFiles {
        files: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
    },
    /// Discard this contestant's output so far: it is being run again.
    Reset {
        reason: String,
    },
    /// A Q&A contestant's answer, whole, written when it ends: it stands
    /// for the `output` and `reasoning` events it replaced in the journal
    /// (the text is kept once). A viewer replaces what it built from them.
    Folded {
        output: String,
        reasoning: String,
    },
    /// A queued contestant waits for its lane: why, and who holds it
    /// (`None` once it no longer waits).
    Waiting {
        reason: Option<String>,
    },
    Retry {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    Benchmark {
        benchmark: Benchmark,
    },
    Winner {
        winner: Option<Winner>,
    },
    /// A blind battle was revealed: its names, speeds and analysis may be
    /// shown from now on (viewers read the battle again).
    Revealed,
    ResultWritten {
        path: String,
    },
    AnalysisStatus {
        analysis_id: String,
        status: AnalysisStatus,
        outcome: Option<Outcome>,
        winner: Option<String>,
        error: Option<String>,
    },
    /// Text the analysis model produced for one stage (`digest A`, `judge 1`, …).
    AnalysisOutput {
        analysis_id: String,
        stage: String,
        text: String,
    },
    CrossExamStatus {
        cross_exam_id: String,
        number: u32,
        status: AnalysisStatus,
        error: Option<String>,
    },
    CrossExamOutput {
        cross_exam_id: String,
        text: String,
    },
}

impl EventKind {
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::BattleStatus { .. } => "battle_status",
            EventKind::ContestantStatus { .. } => "contestant_status",
            EventKind::Output { .. } => "output",
            EventKind::Reasoning { .. } => "reasoning",
            EventKind::Reset { .. } => "reset",
            EventKind::Folded { .. } => "folded",
            EventKind::Waiting { .. } => "waiting",
            EventKind::Tool { .. } => "tool",
            EventKind::ChangedFiles { .. } => "changed_files",
            EventKind::Round { .. } => "round",
            EventKind::Retry { .. } => "retry",
            EventKind::Benchmark { .. } => "benchmark",
            EventKind::Winner { .. } => "winner",
            EventKind::Revealed => "revealed",
            EventKind::ResultWritten { .. } => "result_written",
            EventKind::AnalysisStatus { .. } => "analysis_status",
            EventKind::AnalysisOutput { .. } => "analysis_output",
            EventKind::CrossExamStatus { .. } => "cross_exam_status",
            EventKind::CrossExamOutput { .. } => "cross_exam_output",
        }
    }
}

#[cfg(test)]
mod changed_files_tests {
    use super::*;

    fn files(kind: Option<EventKind>) -> (Vec<String>, u64) {
        match kind {
            Some(EventKind::ChangedFiles { files, total }) => (files, total.unwrap_or(0)),
            other => panic!("not a changed_files event: {other:?}"),
        }
    }

    #[test]
    fn each_path_is_named_once_and_the_count_goes_on() {
        let mut tally = ChangedFilesTally::default();
        tally.touch("b.rs".into());
        tally.touch("a.rs".into());
        tally.touch("b.rs".into());
        assert_eq!(
            files(tally.event()),
            (vec!["a.rs".into(), "b.rs".into()], 2)
        );
        assert_eq!(tally.event(), None, "nothing new, nothing sent");
        tally.touch("a.rs".into());
        assert_eq!(tally.event(), None);
        tally.touch("c.rs".into());
        assert_eq!(files(tally.event()), (vec!["c.rs".into()], 3));
    }

    #[test]
    fn past_the_listed_files_only_the_count_is_sent_and_it_stops_at_its_cap() {
        let mut tally = ChangedFilesTally::default();
        let mut named = 0;
        for i in 0..CHANGED_FILES_COUNTED + 50 {
            tally.touch(format!("f{i}"));
            if i % 10_000 == 0 && i < CHANGED_FILES_COUNTED {
                named += files(tally.event()).0.len();
            }
        }
        let (last, total) = files(tally.event());
        assert_eq!(named + last.len(), CHANGED_FILES_LISTED);
        assert_eq!(total, CHANGED_FILES_COUNTED as u64);
    }
}
