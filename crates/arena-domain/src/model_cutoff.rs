//! Models' training cutoffs (issue 41, point 6): `[[model_cutoff]]`
//! entries of arena.toml (model → the last day of its training data) and
//! the few Arena ships. A task committed after a model's cutoff cannot
//! have been in its training data; `crate::pack_cutoff` splits a pack's
//! scores there.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
