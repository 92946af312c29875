//! Mining a history on the wire (issue 41): what the app's "Mine my
//! history" asks, where a run stands as it goes, and what it yields —
//! commits scanned, candidates, drops by reason (the scan's and running's
//! apart), the validated tasks, the instructions written and approved,
//! and the time of each stage. Each type only converts from the engine's
//! ([`arena_core::Engine::mine_pack`]).

use std::collections::BTreeMap;

use arena_core as core;
use arena_core::pack::mine::MineProgress;
use arena_core::{InstructionCounts, Instructions, MineRun};
use serde::{Deserialize, Serialize};

use super::{count, text};
use crate::path;

/// The most runs of each tree the app asks for.
pub const MAX_RUNS_TO_VALIDATE: u32 = 9;
/// The most of a dropped candidate's detail sent to the screen.
const DETAIL_CHARS: usize = 2000;

/// What mining a project's history asks (`arena pack mine`).
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MineRequest {
    pub project: String,
    /// Where to write the validated tasks as a pack (a folder that does
    /// not exist yet); none: only mine.
    pub out: Option<String>,
    /// Stop after this many validated tasks.
    pub limit: Option<u32>,
    /// Only commits since / until these dates (`YYYY-MM-DD`).
    pub since: Option<String>,
    pub until: Option<String>,
    /// The tests' command; none: detected from the files at each base.
    pub test_command: Option<String>,
    /// Runs of each tree (BASE, RED, GOLD); none: 3 (5 when they
    /// disagree).
    pub runs_to_validate: Option<u32>,
    /// The model that writes the instructions; none: the default model
    /// when its provider is local.
    pub writer: Option<String>,
}

/// A date as the date field gives it (`YYYY-MM-DD`), or why not.
fn date(what: &str, value: Option<String>) -> Result<Option<String>, core::Invalid> {
    let Some(v) = text(value) else {
        return Ok(None);
    };
    let b = v.as_bytes();
    let number = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = v.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let day = b.len() == 10 && b[4] == b'-' && b[7] == b'-';
    match (day, number(0..4), number(5..7), number(8..10)) {
        (true, Some(_), Some(1..=12), Some(1..=31)) => Ok(Some(v)),
        _ => Err(core::Invalid::Other(format!(
            "the {what} date is a day as YYYY-MM-DD (got `{v}`)"
        ))),
    }
}

impl MineRequest {
    /// The engine's options: what to mine, how to validate, where the
    /// pack goes and who writes it; fails naming the field that is wrong.
    pub fn options(
        &self,
    ) -> Result<
        (
            core::pack::mine::MineOptions,
            core::ValidateOptions,
            core::MinePackOptions,
        ),
        core::Invalid,
    > {
        let since = date("since", self.since.clone())?;
        let until = date("until", self.until.clone())?;
        if let (Some(s), Some(u)) = (&since, &until) {
            if s > u {
                return Err(core::Invalid::Other(format!(
                    "the since date ({s}) is after the until date ({u})"
                )));
            }
        }
        if self.limit == Some(0) {
            return Err(core::Invalid::Other(
                "stop after at least 1 validated task, or leave it blank".into(),
            ));
        }
        let runs = self
            .runs_to_validate
            .unwrap_or(core::ValidateOptions::default().runs);
        if !(1..=MAX_RUNS_TO_VALIDATE).contains(&runs) {
            return Err(core::Invalid::Other(format!(
                "runs to validate is 1 to {MAX_RUNS_TO_VALIDATE} (got {runs})"
            )));
        }
        let test_command = text(self.test_command.clone());
        Ok((
            core::pack::mine::MineOptions {
                project: self.project.trim().into(),
                limit: None,
                // Until the end of the until day, as a person means it.
                since,
                until: until.map(|u| format!("{u} 23:59:59")),
                cancel: None,
            },
            core::ValidateOptions {
                runs,
                test_command: test_command.clone(),
                limit: self.limit.map(|n| n as usize),
                cancel: None,
            },
            core::MinePackOptions {
                out: text(self.out.clone()).map(Into::into),
                test_command,
                writer: text(self.writer.clone()),
            },
        ))
    }
}

/// A drop reason and how many commits it took out.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DropCountDto {
    pub reason: String,
    /// The reason in words.
    pub words: String,
    pub count: u32,
}

/// Drop counts, most first (then by reason).
fn drop_counts(counts: impl Iterator<Item = (String, u32)>) -> Vec<DropCountDto> {
    let mut dropped: Vec<DropCountDto> = counts
        .filter(|(_, n)| *n > 0)
        .map(|(reason, count)| DropCountDto {
            words: arena_core::pack::mine::drop_words(&reason),
            reason,
            count,
        })
        .collect();
    dropped.sort_by(|a, b| b.count.cmp(&a.count).then(a.reason.cmp(&b.reason)));
    dropped
}

/// Where a mining run is, sent as it goes: the stage (`scan`, `split`,
/// `validate`, `write`, then `done` or `cancelled`), commits scanned,
/// candidates, validated, drops by reason so far, the seconds left when
/// known, the commit (or task) at hand.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MineProgressDto {
    pub stage: String,
    pub scanned: u32,
    pub candidates: u32,
    pub validated: u32,
    /// Most first.
    pub dropped: Vec<DropCountDto>,
    pub eta_secs: Option<u32>,
    pub current: Option<String>,
}

impl From<&MineProgress> for MineProgressDto {
    fn from(p: &MineProgress) -> Self {
        let big = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        MineProgressDto {
            stage: p.stage.clone(),
            scanned: big(p.scanned),
            candidates: big(p.candidates),
            validated: big(p.validated),
            dropped: drop_counts(p.dropped.iter().map(|(r, n)| (r.clone(), big(*n)))),
            eta_secs: p.eta_secs.map(big),
            current: p.current.clone(),
        }
    }
}

/// A candidate validated by running: a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ValidatedTaskDto {
    pub commit: String,
    pub committed_at: String,
    pub subject: String,
    /// The tests that fail before the fix and pass after.
    pub fail_to_pass: Vec<String>,
    /// How many tests pass before and after.
    pub pass_to_pass: u32,
    pub seconds: f64,
}

/// A candidate running dropped, with why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DroppedCandidateDto {
    pub commit: String,
    pub subject: String,
    pub reason: String,
    /// The reason in words.
    pub reason_words: String,
    /// The tests that show it, or the error that stopped it (its end).
    pub detail: Option<String>,
    pub seconds: f64,
}

/// A stage's time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StageTimeDto {
    /// `walk`, `classify`, `split`, `validate`, `write`.
    pub stage: String,
    pub seconds: f64,
}

/// The stages in the order they run (others after, by name).
fn stage_times(seconds: &BTreeMap<String, f64>) -> Vec<StageTimeDto> {
    const ORDER: [&str; 5] = ["walk", "classify", "split", "validate", "write"];
    let mut out: Vec<StageTimeDto> = seconds
        .iter()
        .map(|(stage, s)| StageTimeDto {
            stage: stage.clone(),
            seconds: *s,
        })
        .collect();
    out.sort_by_key(|t| {
        (
            ORDER
                .iter()
                .position(|o| *o == t.stage)
                .unwrap_or(ORDER.len()),
            t.stage.clone(),
        )
    });
    out
}

/// How a pack's tasks stand with their instructions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct InstructionCountsDto {
    pub tasks: u32,
    /// Pending or approved: an instruction a run can use.
    pub written: u32,
    pub pending: u32,
    pub approved: u32,
    /// Dropped by the audit or in review.
    pub dropped: u32,
    /// Validated tasks with no instruction yet ("Write instructions").
    pub unwritten: u32,
}

impl From<&InstructionCounts> for InstructionCountsDto {
    fn from(c: &InstructionCounts) -> Self {
        InstructionCountsDto {
            tasks: count(c.tasks),
            written: count(c.written()),
            pending: count(c.pending),
            approved: count(c.approved),
            dropped: count(c.dropped),
            unwritten: count(c.unwritten),
        }
    }
}

/// A task the writer left without an instruction, with why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct UnwrittenDto {
    pub id: String,
    pub why: String,
}

/// What became of the instructions of a mined pack.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct InstructionsDto {
    /// `not_asked` (no pack, or a stop), `no_writer`, `written`.
    pub outcome: String,
    /// `provider/model`, when one wrote.
    pub writer: Option<String>,
    /// The writer is a cloud model: the code left the machine.
    pub left_the_machine: bool,
    /// Why none were written (no writer could be chosen).
    pub why_not: Option<String>,
    /// Tasks the writer wrote, dropped by the audit (after one rewrite),
    /// with why.
    pub audit_dropped: Vec<UnwrittenDto>,
    /// Tasks it left as they were, with why (the model failed on it…).
    pub skipped: Vec<UnwrittenDto>,
    /// The pack's instructions as they stand; none without a pack.
    pub counts: Option<InstructionCountsDto>,
}

impl InstructionsDto {
    pub fn new(i: &Instructions, counts: Option<&InstructionCounts>) -> Self {
        let counts = counts.map(InstructionCountsDto::from);
        let mut dto = InstructionsDto {
            outcome: String::new(),
            writer: None,
            left_the_machine: false,
            why_not: None,
            audit_dropped: Vec::new(),
            skipped: Vec::new(),
            counts,
        };
        match i {
            Instructions::NotAsked => dto.outcome = "not_asked".into(),
            Instructions::NoWriter { why } => {
                dto.outcome = "no_writer".into();
                dto.why_not = Some(why.clone());
            }
            Instructions::Written(report) => {
                dto.outcome = "written".into();
                dto.writer = Some(report.writer.clone());
                dto.left_the_machine = report.left_the_machine;
                dto.audit_dropped = report
                    .tasks
                    .iter()
                    .filter(|t| t.state == core::pack::review::ReviewState::Dropped)
                    .map(|t| UnwrittenDto {
                        id: t.id.clone(),
                        why: t.reason.clone().unwrap_or_default(),
                    })
                    .collect();
                dto.skipped = report
                    .skipped
                    .iter()
                    .map(|(id, why)| UnwrittenDto {
                        id: id.clone(),
                        why: why.clone(),
                    })
                    .collect();
            }
        }
        dto
    }
}

/// What mining a history yielded (issue 41, point 7): commits scanned,
/// candidates, drops by reason, validated tasks, instructions written and
/// approved, time per stage, and the pack written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MineRunDto {
    pub project: String,
    /// The pack written (none: no out folder, or nothing validated).
    pub pack: Option<String>,
    pub scanned: u32,
    pub candidates: u32,
    /// Candidates run (validated or dropped); the rest were not reached
    /// (the limit, a stop).
    pub tried: u32,
    pub validated: u32,
    /// Dropped by the static scan, by reason, most first.
    pub scan_dropped: Vec<DropCountDto>,
    /// Dropped by running, by reason, most first.
    pub run_dropped: Vec<DropCountDto>,
    pub tasks: Vec<ValidatedTaskDto>,
    pub dropped_candidates: Vec<DroppedCandidateDto>,
    pub stages: Vec<StageTimeDto>,
    pub instructions: InstructionsDto,
    /// Stopped before the end (what was found so far is here).
    pub cancelled: bool,
}

/// `s`'s last `n` characters.
fn tail(s: &str, n: usize) -> String {
    let chars = s.chars().count();
    s.chars().skip(chars.saturating_sub(n)).collect()
}

impl MineRunDto {
    pub fn new(project: &std::path::Path, mined: &core::MinedPack) -> Self {
        let run: &MineRun = &mined.run;
        let mut by_running: BTreeMap<String, usize> = BTreeMap::new();
        for d in &run.dropped_candidates {
            *by_running.entry(d.reason.clone()).or_default() += 1;
        }
        let scan = run.dropped.iter().map(|(reason, n)| {
            let ran = by_running.get(reason).copied().unwrap_or(0);
            (reason.clone(), count(n.saturating_sub(ran)))
        });
        MineRunDto {
            project: path(project),
            pack: mined.pack.as_deref().map(path),
            scanned: count(run.scanned),
            candidates: count(run.candidates),
            tried: count(run.tried),
            validated: count(run.validated),
            scan_dropped: drop_counts(scan),
            run_dropped: drop_counts(by_running.into_iter().map(|(r, n)| (r, count(n)))),
            tasks: run
                .tasks
                .iter()
                .map(|v| ValidatedTaskDto {
                    commit: v.task.commit.clone(),
                    committed_at: v.task.committed_at.clone(),
                    subject: v.task.subject.clone(),
                    fail_to_pass: v.fail_to_pass.clone(),
                    pass_to_pass: count(v.pass_to_pass.len()),
                    seconds: v.seconds,
                })
                .collect(),
            dropped_candidates: run
                .dropped_candidates
                .iter()
                .map(|d| DroppedCandidateDto {
                    commit: d.commit.clone(),
                    subject: d.subject.clone(),
                    reason: d.reason.clone(),
                    reason_words: arena_core::pack::mine::drop_words(&d.reason),
                    detail: text(Some(d.detail.join("\n"))).map(|t| tail(&t, DETAIL_CHARS)),
                    seconds: d.seconds,
                })
                .collect(),
            stages: stage_times(&run.seconds_per_stage),
            instructions: InstructionsDto::new(&mined.instructions, mined.counts.as_ref()),
            cancelled: run.cancelled,
        }
    }
}

/// The test command the files of a project call for, and the file that
/// said so.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DetectedCommandDto {
    pub command: String,
    pub because: String,
}

/// The writer mining uses when none is picked: the default model when its
/// provider is local, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DefaultWriterDto {
    /// `provider/model`.
    pub writer: Option<String>,
    pub why_not: Option<String>,
}

/// Writing the instructions of a mined pack's tasks that have none.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct WriteInstructionsRequest {
    pub pack: String,
    /// None: the default model when its provider is local.
    pub writer: Option<String>,
}

impl WriteInstructionsRequest {
    pub fn writer(&self) -> Option<String> {
        text(self.writer.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_what_is_wrong() {
        let ok = MineRequest {
            project: " /p ".into(),
            out: Some(" ".into()),
            limit: Some(2),
            since: Some("2024-01-01".into()),
            until: Some("2024-02-01".into()),
            test_command: Some("  ".into()),
            runs_to_validate: None,
            writer: Some("".into()),
        };
        let (scan, validate, pack) = ok.options().expect("valid");
        assert_eq!(scan.project, std::path::PathBuf::from("/p"));
        assert_eq!(scan.limit, None, "the limit counts validated tasks");
        assert_eq!(scan.until.as_deref(), Some("2024-02-01 23:59:59"));
        assert_eq!(validate.limit, Some(2));
        assert_eq!(validate.runs, 3);
        assert_eq!(validate.test_command, None);
        assert_eq!((pack.out, pack.writer), (None, None));

        let wrong = |r: MineRequest| r.options().unwrap_err().to_string();
        for bad in ["last week", "2024-13-01", "2024-1-01", "--all"] {
            assert!(
                wrong(MineRequest {
                    since: Some(bad.into()),
                    ..ok.clone()
                })
                .contains("since date"),
                "{bad}"
            );
        }
        assert!(wrong(MineRequest {
            since: Some("2024-03-01".into()),
            ..ok.clone()
        })
        .contains("after the until date"));
        assert!(wrong(MineRequest {
            runs_to_validate: Some(0),
            ..ok.clone()
        })
        .contains("runs to validate"));
        assert!(wrong(MineRequest {
            limit: Some(0),
            ..ok.clone()
        })
        .contains("at least 1"));
    }

    #[test]
    fn stages_come_in_the_order_they_run() {
        let seconds: BTreeMap<String, f64> = [("write", 1.0), ("split", 0.1), ("validate", 9.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let names: Vec<String> = stage_times(&seconds).into_iter().map(|t| t.stage).collect();
        assert_eq!(names, vec!["split", "validate", "write"]);
    }
}
