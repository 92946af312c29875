//! What a Coding contestant's check says of it, and a check that could not
//! run at all: a missing program (exit 127, "command not found", "No such
//! file or directory" for the program it names, a missing interpreter) or
//! one that could not be executed (exit 126). Such a check says nothing of
//! any contestant's change: it is one warning for the whole battle, left
//! out of every contestant's score (no one "failed the check").

use serde::{Deserialize, Serialize};

use crate::battle::{Battle, CheckResult};
use crate::leaderboard::Verdict;

/// A contestant's check, in one word: what the roster's check column, the
/// judge's prompt and the leaderboard read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    Passed,
    Failed,
    /// The check could not run (its program is missing): it says nothing
    /// of the change.
    CouldNotRun,
    /// No check (none given, not run yet, or a Q&A battle).
    None,
}

impl CheckOutcome {
    /// The outcome of a contestant's check result.
    pub fn of(check: Option<&CheckResult>) -> Self {
        match check {
            None => CheckOutcome::None,
            Some(c) if c.could_not_run.is_some() => CheckOutcome::CouldNotRun,
            Some(c) if c.passed => CheckOutcome::Passed,
            Some(_) => CheckOutcome::Failed,
        }
    }

    /// How a roster or a judge's prompt says it.
    pub fn words(self) -> &'static str {
        match self {
            CheckOutcome::Passed => "passed",
            CheckOutcome::Failed => "failed",
            CheckOutcome::CouldNotRun => "could not run",
            CheckOutcome::None => "none",
        }
    }

    /// What Apply should say of a contestant with this outcome: `None`
    /// when nothing speaks against applying it.
    pub fn apply_advice(self) -> Option<&'static str> {
        match self {
            CheckOutcome::Failed => Some(
                "its check failed: applying it brings a change the check rejected into your project",
            ),
            _ => None,
        }
    }
}

/// The first word of a check command: the program it runs (after any
/// `NAME=value` assignments), without quotes.
pub fn first_word(command: &str) -> Option<&str> {
    command
        .split(|c: char| c.is_whitespace() || ";&|()".contains(c))
        .map(|w| w.trim_matches(['"', '\'']))
        // `NAME=value` assignments before the program are not it.
        .find(|w| !w.is_empty() && (!w.contains('=') || w.starts_with('=')))
}

/// Why a check that ended with `exit_code` and printed `tail` could not
/// run, or `None` when it ran (and passed or failed on its own terms): exit
/// 127 (not found, a missing interpreter) or 126 (not executable), or the
/// shell's "not found" / "No such file or directory" for the command's
/// first word whatever the status.
pub fn could_not_run(command: &str, exit_code: Option<i32>, tail: &str) -> Option<String> {
    let word = first_word(command).unwrap_or(command);
    let said = said_missing(word, tail);
    match exit_code {
        Some(127) => Some(match said {
            Some(line) => format!("`{word}` was not found where the check runs (exit 127: {line})"),
            None => format!(
                "a program it runs was not found where the check runs (exit 127){}",
                last_line(tail).map_or(String::new(), |l| format!(": {l}"))
            ),
        }),
        Some(126) => Some(format!(
            "a program it runs could not be executed (exit 126: not executable, or its interpreter is missing){}",
            last_line(tail).map_or(String::new(), |l| format!(": {l}"))
        )),
        Some(0) | None => None,
        Some(_) => said.map(|line| format!("`{word}` was not found where the check runs: {line}")),
    }
}

/// The line of `tail` where a shell or `env` says `word` (or the
/// interpreter it names) is missing.
fn said_missing<'a>(word: &str, tail: &'a str) -> Option<&'a str> {
    let name = word.rsplit('/').next().unwrap_or(word);
    // Only the shell's or env's own words: a test's output that mentions
    // the program and a missing file is not the program missing.
    const SAYERS: [&str; 6] = [
        "sh: ",
        "bash: ",
        "/bin/sh: ",
        "/usr/bin/env: ",
        "env: ",
        "zsh: ",
    ];
    tail.lines().map(str::trim).find(|line| {
        if !SAYERS.iter().any(|p| line.starts_with(p)) && !line.starts_with(word) {
            return false;
        }
        let mentions = line.contains(word) || (!name.is_empty() && line.contains(name));
        let missing = line.contains("command not found")
            || line.ends_with(": not found")
            || line.contains(": not found")
            || line.contains("No such file or directory")
            || line.contains("bad interpreter");
        mentions && missing
    })
}

fn last_line(tail: &str) -> Option<&str> {
    tail.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("[Arena:"))
}

/// The battle-level warning of a Coding battle whose check could not run
/// for some contestant: one sentence with the reason, or `None`.
pub fn battle_warning(battle: &Battle) -> Option<String> {
    let (command, reason) = battle.contestants.iter().find_map(|c| {
        let check = c.check.as_ref()?;
        Some((check.command.as_str(), check.could_not_run.as_deref()?))
    })?;
    Some(format!(
        "The check `{command}` could not run: {reason}. It counts for no contestant."
    ))
}

/// The check rule of a Coding battle (`[coding] check_decides`) applied to
/// a judge's winner: when its check failed and another contestant's
/// passed, the first contestant of `ranking` whose check passed (else the
/// first in `outcomes`' order) wins instead. `None`: the judge's winner
/// stands. `outcomes` pairs each contestant id with its outcome.
pub fn overrides_winner(
    winner: &str,
    ranking: &[String],
    outcomes: &[(String, CheckOutcome)],
) -> Option<String> {
    let of = |id: &str| {
        outcomes
            .iter()
            .find(|(c, _)| c == id)
            .map_or(CheckOutcome::None, |(_, o)| *o)
    };
    if of(winner) != CheckOutcome::Failed {
        return None;
    }
    ranking
        .iter()
        .map(String::as_str)
        .chain(outcomes.iter().map(|(c, _)| c.as_str()))
        .find(|id| of(id) == CheckOutcome::Passed)
        .map(str::to_string)
}

/// The check rule applied to a battle's judge verdict on the leaderboard
/// (`outcomes` by the finished contestants' places): a winner whose check
/// failed gives way to the first whose check passed; a tie or no verdict
/// becomes a win for the one contestant whose check passed when every
/// other ran its check and failed it. Otherwise the verdict stands.
pub fn decides(verdict: Verdict, outcomes: &[CheckOutcome]) -> Verdict {
    let passed: Vec<usize> = (0..outcomes.len())
        .filter(|&i| outcomes[i] == CheckOutcome::Passed)
        .collect();
    match verdict {
        Verdict::Winner(i) if outcomes.get(i) == Some(&CheckOutcome::Failed) => {
            passed.first().map_or(verdict, |&p| Verdict::Winner(p))
        }
        Verdict::Tie | Verdict::None
            if passed.len() == 1
                && outcomes.len() >= 2
                && outcomes
                    .iter()
                    .enumerate()
                    .all(|(i, o)| i == passed[0] || *o == CheckOutcome::Failed) =>
        {
            Verdict::Winner(passed[0])
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(exit: Option<i32>, tail: &str) -> CheckResult {
        CheckResult {
            command: "pytest -q".into(),
            exit_code: exit,
            passed: exit == Some(0),
            output_tail: tail.into(),
            ..Default::default()
        }
    }

    #[test]
    fn exit_127_and_126_could_not_run_with_the_shells_words() {
        let why = could_not_run("pytest -q", Some(127), "sh: 1: pytest: not found\n").unwrap();
        assert!(why.contains("`pytest` was not found"), "{why}");
        assert!(why.contains("sh: 1: pytest: not found"), "{why}");
        let why =
            could_not_run("./run.sh", Some(126), "sh: 1: ./run.sh: Permission denied").unwrap();
        assert!(why.contains("exit 126"), "{why}");
        assert!(why.contains("Permission denied"), "{why}");
    }

    #[test]
    fn a_missing_first_word_under_another_status_could_not_run() {
        let why = could_not_run(
            ".venv/bin/pytest",
            Some(2),
            "sh: 1: .venv/bin/pytest: No such file or directory",
        );
        assert!(why.is_some());
        // A missing interpreter: env says so for the script.
        let why = could_not_run(
            "FOO=1 ./check.py",
            Some(127),
            "/usr/bin/env: 'python9': No such file or directory",
        )
        .unwrap();
        assert!(why.contains("exit 127"), "{why}");
    }

    #[test]
    fn a_check_that_ran_and_failed_is_not_could_not_run() {
        assert_eq!(
            could_not_run("pytest -q", Some(1), "1 failed, 2 passed"),
            None
        );
        assert_eq!(could_not_run("pytest -q", Some(0), ""), None);
        assert_eq!(could_not_run("pytest -q", None, "timed out"), None);
        // A test's own output naming another missing file is the test's.
        assert_eq!(
            could_not_run(
                "pytest -q",
                Some(1),
                "open data.csv: No such file or directory"
            ),
            None
        );
    }

    #[test]
    fn a_failed_checks_winner_gives_way_to_a_passed_one() {
        use CheckOutcome::*;
        let outcomes = vec![
            ("a".to_string(), Failed),
            ("b".to_string(), Passed),
            ("c".to_string(), Passed),
        ];
        let ranking = vec!["a".to_string(), "c".to_string(), "b".to_string()];
        assert_eq!(overrides_winner("a", &ranking, &outcomes), Some("c".into()));
        assert_eq!(overrides_winner("b", &ranking, &outcomes), Option::None);
        // Nobody passed, or the check could not run: the judge stands.
        let none = vec![("a".to_string(), Failed), ("b".to_string(), CouldNotRun)];
        assert_eq!(overrides_winner("a", &[], &none), Option::None);
    }

    #[test]
    fn the_leaderboard_rule() {
        use CheckOutcome::*;
        assert_eq!(
            decides(Verdict::Winner(0), &[Failed, Passed]),
            Verdict::Winner(1)
        );
        assert_eq!(
            decides(Verdict::Winner(1), &[Failed, Passed]),
            Verdict::Winner(1)
        );
        assert_eq!(
            decides(Verdict::None, &[Failed, Passed]),
            Verdict::Winner(1)
        );
        assert_eq!(
            decides(Verdict::Tie, &[Passed, Failed, Failed]),
            Verdict::Winner(0)
        );
        // Two passed: the check does not tell them apart.
        assert_eq!(decides(Verdict::Tie, &[Passed, Passed]), Verdict::Tie);
        // A check that could not run says nothing.
        assert_eq!(
            decides(Verdict::None, &[CouldNotRun, Passed]),
            Verdict::None
        );
        assert_eq!(
            decides(Verdict::Winner(0), &[CouldNotRun, Passed]),
            Verdict::Winner(0)
        );
        assert_eq!(decides(Verdict::None, &[None, None]), Verdict::None);
    }

    #[test]
    fn outcomes_and_the_first_word() {
        assert_eq!(CheckOutcome::of(None), CheckOutcome::None);
        assert_eq!(
            CheckOutcome::of(Some(&result(Some(0), ""))),
            CheckOutcome::Passed
        );
        assert_eq!(
            CheckOutcome::of(Some(&result(Some(1), ""))),
            CheckOutcome::Failed
        );
        let mut gone = result(Some(127), "");
        gone.could_not_run = Some("missing".into());
        assert_eq!(CheckOutcome::of(Some(&gone)), CheckOutcome::CouldNotRun);
        assert_eq!(first_word("CI=1 PYTHONPATH=. pytest -q"), Some("pytest"));
        assert_eq!(first_word("  'npm' test"), Some("npm"));
        assert_eq!(first_word(""), None);
        assert!(CheckOutcome::Failed.apply_advice().is_some());
        assert!(CheckOutcome::Passed.apply_advice().is_none());
    }
}
