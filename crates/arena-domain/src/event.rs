//! The battle event stream. Every change a viewer can see — status, output,
//! benchmark, winner — is a [`BattleEvent`] with a per-battle sequence number,
//! journaled in the database and broadcast live. Output deltas are coalesced
//! by the runner before they become events, so a fast stream produces a few
//! dozen events a second, not one per token.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::{AnalysisStatus, Outcome};
use crate::battle::{BattleStatus, Benchmark, ContestantStatus, Winner};

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
    /// Coding: the files the agent has touched so far (relative to its worktree).
    ChangedFiles {
        files: Vec<String>,
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
