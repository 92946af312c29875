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

use crate::pack_score::{self, Interval, TaskRun};

/// `[[model_cutoff]]`: a model (a name, or a glob with `*`, matched
/// without case against the contestant's model with or without its
/// `provider/` prefix) and the last day of its training data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCutoff {
    pub model: String,
    /// `YYYY-MM-DD`.
    pub date: String,
}

impl ModelCutoff {
    /// The date, checked.
    pub fn day(&self) -> Result<NaiveDate, String> {
        NaiveDate::parse_from_str(self.date.trim(), "%Y-%m-%d").map_err(|_| {
            format!(
                "[[model_cutoff]] {}: date `{}` is not a day (YYYY-MM-DD)",
                self.model, self.date
            )
        })
    }
}

/// Cutoffs Arena ships, from the model makers' own statements (the last
/// month of training data, taken as its last day). The user's
/// `[[model_cutoff]]` entries come before these.
pub const KNOWN_CUTOFFS: &[(&str, &str)] = &[
    ("claude-opus-4*", "2025-03-31"),
    ("claude-sonnet-4*", "2025-03-31"),
    ("claude-3-7-sonnet*", "2024-10-31"),
    ("claude-3-5-haiku*", "2024-07-31"),
    ("gpt-4.1*", "2024-06-01"),
    ("gpt-4o*", "2023-10-01"),
    ("o3*", "2024-06-01"),
    ("o4-mini*", "2024-06-01"),
    ("gpt-5*", "2024-09-30"),
    ("qwen2.5-coder*", "2024-09-30"),
    ("qwen3*", "2025-03-31"),
    ("deepseek-v3*", "2024-07-31"),
    ("deepseek-r1*", "2024-07-31"),
    ("gemini-2.5*", "2025-01-31"),
];

/// The user's entries, then the known ones.
pub fn with_known(user: &[ModelCutoff]) -> Vec<ModelCutoff> {
    let mut all = user.to_vec();
    all.extend(KNOWN_CUTOFFS.iter().map(|(m, d)| ModelCutoff {
        model: m.to_string(),
        date: d.to_string(),
    }));
    all
}

/// Checks the user's entries: each date a day, each model named.
pub fn validate(entries: &[ModelCutoff]) -> Result<(), String> {
    for e in entries {
        if e.model.trim().is_empty() {
            return Err("a [[model_cutoff]] has an empty model".into());
        }
        e.day()?;
    }
    Ok(())
}

fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.to_ascii_lowercase(), text.to_ascii_lowercase());
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == t;
    }
    let mut rest = t.as_str();
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// The cutoff of `model` (the first entry that matches it, with or
/// without its `provider/` prefix); `None` when no entry does.
pub fn cutoff_for(model: &str, entries: &[ModelCutoff]) -> Option<NaiveDate> {
    let bare = model.rsplit('/').next().unwrap_or(model);
    entries
        .iter()
        .find(|e| glob(e.model.trim(), model) || glob(e.model.trim(), bare))
        .and_then(|e| e.day().ok())
}

/// The day of a task's `committed_at` (ISO 8601, or a bare day).
pub fn day_of(committed_at: &str) -> Option<NaiveDate> {
    let day = committed_at.trim().get(..10)?;
    NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()
}

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
    fn the_user_s_entry_wins_and_globs_match_with_or_without_the_provider() {
        let mine = vec![ModelCutoff {
            model: "qwen3-coder-30b".into(),
            date: "2025-06-30".into(),
        }];
        let all = with_known(&mine);
        assert_eq!(
            cutoff_for("local/qwen3-coder-30b", &all),
            NaiveDate::from_ymd_opt(2025, 6, 30)
        );
        assert_eq!(
            cutoff_for("qwen3-8b", &all),
            NaiveDate::from_ymd_opt(2025, 3, 31)
        );
        assert_eq!(
            cutoff_for("openai/GPT-4o-mini", &all),
            NaiveDate::from_ymd_opt(2023, 10, 1)
        );
        assert_eq!(cutoff_for("my-own-model", &all), None);
        assert!(validate(&[ModelCutoff {
            model: "x".into(),
            date: "June 2024".into()
        }])
        .is_err());
        for (m, d) in KNOWN_CUTOFFS {
            assert!(ModelCutoff {
                model: m.to_string(),
                date: d.to_string()
            }
            .day()
            .is_ok());
        }
    }

    #[test]
    fn arena_toml_takes_model_cutoffs_and_refuses_a_date_that_is_not_a_day() {
        let config = crate::config::Config::parse(
            "[[model_cutoff]]\nmodel = \"gpt-4o*\"\ndate = \"2024-05-31\"\n",
        )
        .unwrap();
        // The user's entry comes before the shipped one for the same model.
        assert_eq!(
            cutoff_for("gpt-4o", &config.model_cutoffs()),
            NaiveDate::from_ymd_opt(2024, 5, 31)
        );
        let err = crate::config::Config::parse(
            "[[model_cutoff]]\nmodel = \"m\"\ndate = \"last spring\"\n",
        )
        .unwrap_err();
        assert!(err.contains("is not a day"), "{err}");
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
