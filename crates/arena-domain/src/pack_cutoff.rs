//! Dates and contamination (issue 41, point 6): a model has seen what was
//! public before its training cutoff, so a task made from a commit after
//! it is uncontaminated by construction. `[[model_cutoff]]` entries of
//! arena.toml name each model's cutoff (a few known ones ship as
//! [`KNOWN_CUTOFFS`]; the user's entries come first and win); a pack's
//! scores are split per contestant into the tasks committed after its
//! model's cutoff and the rest, with the gap between them, as SWE-rebench
//! shows them.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

pub use crate::model_cutoff::{cutoff_for, day_of, with_known, ModelCutoff, KNOWN_CUTOFFS};
use crate::pack_score::{self, Interval, TaskRun};

/// One side of a split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutoffSide {
    pub tasks: usize,
    /// Mean over tasks of each task's resolved runs; `None` with no task.
    pub pass_at_1: Option<f64>,
    pub interval: Option<Interval>,
}

/// A contestant's scores on the tasks after its model's cutoff and on the
/// rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutoffSplit {
    pub contestant: String,
    pub model: String,
    /// `None`: no `[[model_cutoff]]` names the model, so no split.
    pub cutoff: Option<NaiveDate>,
    /// Tasks committed after the cutoff (uncontaminated).
    pub after: CutoffSide,
    /// Tasks committed on or before it.
    pub before: CutoffSide,
    /// Tasks without a commit date (in neither side).
    pub undated: usize,
    /// `after − before`, when both have tasks: a drop after the cutoff
    /// hints that the earlier tasks were seen in training.
    pub gap: Option<f64>,
    /// The split in words.
    pub summary: String,
}

fn side(runs: &[TaskRun], contestant: &str) -> CutoffSide {
    let scores = pack_score::score(runs);
    match scores
        .contestants
        .iter()
        .find(|c| c.contestant == contestant)
    {
        Some(c) if c.tasks > c.tasks_all_errors => CutoffSide {
            tasks: c.tasks - c.tasks_all_errors,
            pass_at_1: c.pass_at.get(&1).copied(),
            interval: Some(c.pass_at_1_interval),
        },
        _ => CutoffSide {
            tasks: 0,
            pass_at_1: None,
            interval: None,
        },
    }
}

fn percent(x: Option<f64>) -> String {
    x.map_or("—".into(), |x| format!("{:.0} %", 100.0 * x))
}

/// Splits each contestant's runs by its model's cutoff: `dates` maps a
/// task id to its `committed_at`.
pub fn split(
    runs: &[TaskRun],
    dates: &BTreeMap<String, String>,
    cutoffs: &[ModelCutoff],
) -> Vec<CutoffSplit> {
    let mut by_contestant: BTreeMap<&str, Vec<&TaskRun>> = BTreeMap::new();
    for r in runs {
        by_contestant.entry(&r.contestant).or_default().push(r);
    }
    let mut out = Vec::new();
    for (contestant, its) in by_contestant {
        let model = its[0].model.clone();
        let cutoff = cutoff_for(&model, cutoffs);
        let (mut after, mut before, mut undated) = (Vec::new(), Vec::new(), BTreeMap::new());
        for r in &its {
            match (cutoff, dates.get(&r.task).and_then(|d| day_of(d))) {
                (Some(c), Some(day)) if day > c => after.push((*r).clone()),
                (Some(_), Some(_)) => before.push((*r).clone()),
                _ => {
                    undated.insert(r.task.clone(), ());
                }
            }
        }
        let (a, b) = (side(&after, contestant), side(&before, contestant));
        let gap = match (a.pass_at_1, b.pass_at_1) {
            (Some(x), Some(y)) => Some(x - y),
            _ => None,
        };
        let summary = match (cutoff, gap) {
            (None, _) => format!("{model}: no training cutoff known; add a [[model_cutoff]]"),
            (Some(c), Some(g)) => format!(
                "{model} (cutoff {c}): {} on {} task(s) after, {} on {} before; gap {:+.0} points",
                percent(a.pass_at_1),
                a.tasks,
                percent(b.pass_at_1),
                b.tasks,
                100.0 * g
            ),
            (Some(c), None) => format!(
                "{model} (cutoff {c}): {} task(s) after, {} before; no gap without both",
                a.tasks, b.tasks
            ),
        };
        out.push(CutoffSplit {
            contestant: contestant.to_string(),
            model,
            cutoff,
            after: a,
            before: b,
            undated: undated.len(),
            gap,
            summary,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack_score::RunOutcome;

    fn run(task: &str, contestant: &str, model: &str, n: u32, ok: bool) -> TaskRun {
        TaskRun {
            task: task.into(),
            contestant: contestant.into(),
            identity: "agent".into(),
            model: model.into(),
            run: n,
            outcome: if ok {
                RunOutcome::Resolved
            } else {
                RunOutcome::Unresolved
            },
            fail_to_pass_fraction: None,
            cost_usd: None,
            seconds: 1.0,
        }
    }

    #[test]
    fn scores_split_at_each_contestant_s_cutoff_with_the_gap() {
        let dates: BTreeMap<String, String> = [
            ("old1", "2023-01-05T10:00:00Z"),
            ("old2", "2023-06-01"),
            ("new1", "2025-05-01T00:00:00+02:00"),
            ("new2", "2025-07-01T00:00:00Z"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let cutoffs = vec![
            ModelCutoff {
                model: "seen-it".into(),
                date: "2024-01-01".into(),
            },
            ModelCutoff {
                model: "late".into(),
                date: "2025-06-01".into(),
            },
        ];
        let mut runs = Vec::new();
        for n in 1..=2 {
            // Solves what it saw, fails what came after.
            for t in ["old1", "old2"] {
                runs.push(run(t, "a@seen-it", "seen-it", n, true));
                runs.push(run(t, "b@late", "late", n, true));
                runs.push(run(t, "c@unknown", "unknown", n, false));
            }
            for t in ["new1", "new2"] {
                runs.push(run(t, "a@seen-it", "seen-it", n, false));
                runs.push(run(t, "b@late", "late", n, t == "new1"));
                runs.push(run(t, "c@unknown", "unknown", n, false));
            }
        }
        runs.push(run("nodate", "a@seen-it", "seen-it", 1, true));
        let splits = split(&runs, &dates, &cutoffs);
        let a = &splits[0];
        assert_eq!(a.contestant, "a@seen-it");
        assert_eq!((a.after.tasks, a.before.tasks, a.undated), (2, 2, 1));
        assert_eq!(a.after.pass_at_1, Some(0.0));
        assert_eq!(a.before.pass_at_1, Some(1.0));
        assert_eq!(a.gap, Some(-1.0));
        assert!(a.summary.contains("gap -100 points"), "{}", a.summary);
        // `late`'s cutoff puts new1 before it.
        let b = &splits[1];
        assert_eq!((b.after.tasks, b.before.tasks), (1, 3));
        assert_eq!(b.after.pass_at_1, Some(0.0));
        assert_eq!(b.before.pass_at_1, Some(1.0));
        // Intervals are never points on so few tasks.
        let i = b.before.interval.unwrap();
        assert!(i.low < 1.0, "{i:?}");
        let c = &splits[2];
        assert_eq!(c.cutoff, None);
        assert_eq!(c.gap, None);
        assert!(c.summary.contains("no training cutoff known"));
    }
}
