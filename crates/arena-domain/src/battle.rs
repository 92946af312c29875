//! The battle domain: types, statuses, lanes, and what a battle looks like
//! when read back from the store.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::analysis::{AnalysisStatus, Outcome};
use crate::error::Invalid;

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(format!("unknown {} `{}`", stringify!($name), other)),
                }
            }
        }
    };
}

string_enum!(
    /// What is being compared: code changes or text answers.
    BattleType { Qa => "qa", Coding => "coding" }
);

string_enum!(
    /// A battle is `running` until every contestant is terminal.
    BattleStatus { Running => "running", Done => "done", Cancelled => "cancelled", Error => "error" }
);

string_enum!(
    /// Where a contestant stands. `done`, `error` and `cancelled` are terminal.
    ContestantStatus {
        Queued => "queued",
        Running => "running",
        Done => "done",
        Error => "error",
        Cancelled => "cancelled",
    }
);

string_enum!(
    /// Local contestants run one at a time; cloud contestants all at once.
    Lane { Local => "local", Cloud => "cloud" }
);

string_enum!(
    /// Who chose the winner.
    WinnerSource { Analysis => "analysis", User => "user" }
);

string_enum!(
    /// The user's verdict when it names no winner: every answer as good
    /// (`tie`) or none good enough (`all_bad`). Both rank as a tie.
    UserVerdict { Tie => "tie", AllBad => "all_bad" }
);

string_enum!(
    /// Where a tokens/s figure came from.
    RateSource { Server => "server", Measured => "measured" }
);

impl BattleType {
    pub fn parse_arg(s: &str) -> Result<BattleType, Invalid> {
        match s.to_ascii_lowercase().as_str() {
            "qa" | "q&a" => Ok(BattleType::Qa),
            "coding" | "code" => Ok(BattleType::Coding),
            _ => Err(Invalid::BattleType(s.to_string())),
        }
    }

    /// Whether each contestant works in its own git worktree of the
    /// project: its result is a diff that can be applied, pruned and
    /// refined in place.
    pub fn has_worktrees(self) -> bool {
        match self {
            BattleType::Qa => false,
            BattleType::Coding => true,
        }
    }

    /// Whether a check command can decide pass or fail.
    pub fn judged_by_check(self) -> bool {
        match self {
            BattleType::Qa => false,
            BattleType::Coding => true,
        }
    }

    /// Whether contestants are agents (built in or CLI) rather than
    /// personas.
    pub fn takes_agents(self) -> bool {
        match self {
            BattleType::Qa => false,
            BattleType::Coding => true,
        }
    }

    /// Whether its finished results can be cross-examined.
    pub fn can_examine(self) -> bool {
        match self {
            BattleType::Qa | BattleType::Coding => true,
        }
    }

    /// Its name as a person reads it.
    pub fn label(self) -> &'static str {
        match self {
            BattleType::Qa => "Q&A",
            BattleType::Coding => "Coding",
        }
    }

    /// The heading of a contestant's answer in its report: a Q&A answer
    /// is the output; a Coding answer is its diff, and the text explains it.
    pub fn answer_heading(self) -> &'static str {
        match self {
            BattleType::Qa => "Output",
            BattleType::Coding => "Explanation",
        }
    }
}

impl BattleStatus {
    pub fn is_terminal(self) -> bool {
        !matches!(self, BattleStatus::Running)
    }
}

impl ContestantStatus {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ContestantStatus::Done | ContestantStatus::Error | ContestantStatus::Cancelled
        )
    }
}

/// A battle's short name: the last eight letters and digits of its id.
/// Ids are time-ordered (UUID v7), so their beginnings repeat from one
/// battle to the next within a minute; their ends are random. Commands
/// that take a battle id accept it (see `Store::resolve_battle_id`).
pub fn short_id(id: &str) -> String {
    let tail: Vec<char> = id.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    tail[tail.len().saturating_sub(8)..].iter().collect()
}

/// A battle's title as people know it: its prompt's first words, quoted
/// ("“What is the capital of France?”", cut with "…" past 40 characters).
/// Other waiters read it in a queue reason, never an internal id.
pub fn title(prompt: &str) -> String {
    const MAX: usize = 40;
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = crate::terminal::printable(line).into_owned();
    let words: String = if line.chars().count() > MAX {
        let cut: String = line.chars().take(MAX - 1).collect();
        format!("{}…", cut.trim_end())
    } else {
        line
    };
    if words.is_empty() {
        "a battle with an empty prompt".into()
    } else {
        format!("“{words}”")
    }
}

/// One `IDENTITY@MODEL` as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContestantSpec {
    pub identity: String,
    pub model: String,
}

impl ContestantSpec {
    /// Splits at the first `@`: the identity never contains one, a model may.
    pub fn parse(s: &str) -> Result<ContestantSpec, Invalid> {
        let (identity, model) = s
            .split_once('@')
            .ok_or_else(|| Invalid::ContestantSpec(s.to_string()))?;
        let (identity, model) = (identity.trim(), model.trim());
        if identity.is_empty() || model.is_empty() {
            return Err(Invalid::ContestantSpec(s.to_string()));
        }
        Ok(ContestantSpec {
            identity: identity.to_string(),
            model: model.to_string(),
        })
    }
}

/// What the user asks for when starting a battle.
#[derive(Debug, Clone)]
pub struct BattleRequest {
    pub battle_type: BattleType,
    pub project: PathBuf,
    pub prompt: String,
    pub contestants: Vec<ContestantSpec>,
    /// Coding: a shell command run in each finished worktree (e.g. `cargo test`).
    pub check_command: Option<String>,
    /// Show the contestants as A, B, C… (shuffled) until the user votes.
    pub blind: bool,
    /// Labels to find it by (`--tag`); see [`crate::blind::tags`].
    pub tags: Vec<String>,
}

/// Which battles a listing shows, and which page of them, newest first
/// (see `Store::battle_page`). The filters combine with AND; `None` (or a
/// blank search) leaves that filter out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BattleQuery {
    /// Words, split at whitespace, that must each appear (ignoring case)
    /// in the prompt or in one of the contestants' `identity@model
    /// provider` (its persona or backend, model and provider), as the
    /// app's history filter matches them.
    pub search: Option<String>,
    pub battle_type: Option<BattleType>,
    pub status: Option<BattleStatus>,
    /// Only the battles of this series (its full id).
    pub series_id: Option<String>,
    /// At most this many battles...
    pub limit: usize,
    /// ...after skipping this many.
    pub offset: usize,
}

impl BattleQuery {
    /// The page size of a listing when none is given.
    pub const DEFAULT_LIMIT: usize = 50;

    /// The newest `limit` battles, unfiltered.
    pub fn newest(limit: usize) -> BattleQuery {
        BattleQuery {
            limit,
            ..BattleQuery::default()
        }
    }

    /// The search words, lower-cased (none for a blank search).
    pub fn words(&self) -> Vec<String> {
        self.search
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_lowercase)
            .collect()
    }
}

impl Default for BattleQuery {
    fn default() -> BattleQuery {
        BattleQuery {
            search: None,
            battle_type: None,
            status: None,
            series_id: None,
            limit: BattleQuery::DEFAULT_LIMIT,
            offset: 0,
        }
    }
}

/// Lines changed by a Coding contestant, against the base commit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffSummary {
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// Files the patch names without their content (too big), each with
    /// why: `path: left out: 1.0 GiB, over the 1 MiB limit for one file …`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<String>,
    /// The project's environment its agent and check saw, in a line: where
    /// it came from (`current tree`, `prepared KEY`), its folders and their
    /// size, and how it was given (copy-on-write, or read-only and why);
    /// `None`: none (the project has no ignored dependency folders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

/// The check command's result on a contestant's change: run in a fresh
/// tree of the base commit with the change applied, never in the agent's
/// own worktree.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub command: String,
    /// `None` when it timed out or was killed.
    pub exit_code: Option<i32>,
    pub passed: bool,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The last lines of its output.
    pub output_tail: String,
    /// What the agent's worktree held that its change does not carry, so
    /// the check did not see it (a nested git repository, an ignored or
    /// excluded path, a FIFO): the first [`NOT_IN_CHANGE_LISTED`], a
    /// folder by its name once (`calc/`, `target/`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_in_change: Vec<String>,
    /// How many entries there were in all (more than listed past the bound).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_in_change_count: usize,
    /// Files the change touches that decide what the check runs or how
    /// (tests, test configuration, build files;
    /// [`crate::check_files::runs_the_check`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touches_check: Vec<String>,
    /// The check could not run (its program missing or not executable):
    /// why, in a sentence ([`crate::check_outcome::could_not_run`]). It
    /// then says nothing of the change and counts for no contestant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub could_not_run: Option<String>,
}

/// How many entries "not part of the change" a check result names.
pub const NOT_IN_CHANGE_LISTED: usize = 20;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The winner and who chose it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Winner {
    pub contestant_id: String,
    pub source: WinnerSource,
}

/// A battle as stored.
#[derive(Debug, Clone)]
pub struct Battle {
    pub id: String,
    pub battle_type: BattleType,
    pub status: BattleStatus,
    pub prompt: String,
    pub project: PathBuf,
    pub results_path: PathBuf,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub winner: Option<Winner>,
    pub contestants: Vec<Contestant>,
    /// Coding: the commit every worktree branched from.
    pub base_commit: Option<String>,
    pub check_command: Option<String>,
    /// The series it is a run of, if any.
    pub series_id: Option<String>,
    /// Started blind: contestants carry labels (A, B, …) and viewers see
    /// only those until it is revealed.
    pub blind: bool,
    /// When a blind battle was revealed (by the vote, or on request).
    pub revealed_at: Option<DateTime<Utc>>,
    /// The user's tie or "all bad" (a chosen winner is in `winner`).
    pub user_verdict: Option<UserVerdict>,
    pub tags: Vec<String>,
    /// Where its newest analysis stands, if it was ever judged.
    pub judging: Option<Judging>,
    /// The machine that ran it (`ARENA_MACHINE`, else the host name);
    /// none when not recorded (battles from before).
    pub machine: Option<String>,
    /// The OS user who started it (`ARENA_USER`, else the OS user); none
    /// when not recorded.
    pub user_name: Option<String>,
    /// The OS user who gave its verdict (chose the winner, or said a tie
    /// or "all bad"); none while nobody has, or the judge's winner stands.
    pub voted_by: Option<String>,
    /// Coding: the repository its git objects come from when it is not
    /// the project's: a repository Arena sealed (`arena_agent::seal`)
    /// holding only the objects reachable from the base commit, so a task
    /// pack's hidden future stays out of every jail. `None`: the project's.
    pub source: Option<PathBuf>,
}

/// A battle's newest analysis in brief: what a list of battles says of
/// the judge ("judging…", "no clear winner", "the judge failed").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judging {
    pub status: AnalysisStatus,
    /// How it ended, once done.
    pub outcome: Option<Outcome>,
}

impl Battle {
    /// Whether viewers must see labels instead of names: blind and not
    /// revealed yet.
    pub fn is_masked(&self) -> bool {
        self.blind && self.revealed_at.is_none()
    }

    /// The repository its worktrees, base tree and readers take their git
    /// objects from: its sealed [`Battle::source`], else the project.
    pub fn objects_source(&self) -> &std::path::Path {
        self.source.as_deref().unwrap_or(&self.project)
    }
}

/// A contestant as stored, with its benchmark.
#[derive(Debug, Clone)]
pub struct Contestant {
    pub id: String,
    pub battle_id: String,
    pub position: u32,
    pub identity: String,
    pub model: String,
    pub provider: String,
    pub lane: Lane,
    pub status: ContestantStatus,
    pub error: Option<String>,
    pub attempts: u32,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub benchmark: Benchmark,
    pub output: Option<String>,
    pub reasoning: Option<String>,
    pub truncated: bool,
    pub result_path: Option<PathBuf>,
    /// The resolved persona and sampling used to run this contestant, frozen
    /// at battle start so a resumed run asks the same question.
    pub run: RunSpec,
    /// Coding: where it works, what it changed, how the check went.
    pub worktree: Option<PathBuf>,
    pub diff: Option<DiffSummary>,
    pub check: Option<CheckResult>,
    /// While `queued`: why it has not started (its lane is busy, and who
    /// holds it). `None` otherwise.
    pub waiting: Option<String>,
    /// In a blind battle: its letter (A, B, …), shuffled per battle.
    pub label: Option<String>,
}

/// A refinement round of a Coding contestant: the user's feedback, and what
/// the agent did with it, in the same worktree (round 1 is the contestant's
/// own run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub id: String,
    pub contestant_id: String,
    pub number: u32,
    pub feedback: String,
    /// `None` while it runs.
    pub status: Option<ContestantStatus>,
    pub output: String,
    pub error: Option<String>,
    /// Against the base commit, so it includes the earlier rounds' work.
    pub diff: Option<DiffSummary>,
    pub check: Option<CheckResult>,
    pub duration_ms: Option<u64>,
    pub result_path: Option<PathBuf>,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// What the round cost (USD), when known.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// Speed figures for one contestant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Benchmark {
    pub duration_ms: Option<u64>,
    pub ttft_ms: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub tokens_per_sec: Option<f64>,
    pub rate_source: Option<RateSource>,
    /// Prompt tokens the server answered from its cache (llama.cpp `cache_n`).
    pub cached_tokens: Option<u64>,
    /// Prompt processing speed (tokens/s), when the server reports it
    /// (llama.cpp `prompt_per_second`); generation is `tokens_per_sec`.
    #[serde(default)]
    pub prompt_per_sec: Option<f64>,
    /// The local lane served another model just before this contestant, so
    /// the server loaded this one first: its time to first token includes
    /// the model load.
    #[serde(default)]
    pub model_switched: bool,
    /// What the run cost (USD): the server's figure, else its tokens at the
    /// model's `[[price]]` (local models are free); `None` when unknown.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// Everything needed to (re)run a Q&A contestant without re-reading config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub system_prompt: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_battle_is_titled_by_its_prompts_first_words() {
        assert_eq!(
            title("\n  What is the capital of France?\nAnswer briefly."),
            "“What is the capital of France?”"
        );
        assert_eq!(
            title("Write a function that parses every date format people use"),
            "“Write a function that parses every date…”"
        );
        assert_eq!(title("  \n"), "a battle with an empty prompt");
    }

    #[test]
    fn battle_types_answer_questions() {
        let answers: Vec<_> = BattleType::ALL
            .iter()
            .map(|t| {
                (
                    *t,
                    t.has_worktrees(),
                    t.judged_by_check(),
                    t.takes_agents(),
                    t.can_examine(),
                    t.label(),
                    t.answer_heading(),
                )
            })
            .collect();
        assert_eq!(
            answers,
            [
                (BattleType::Qa, false, false, false, true, "Q&A", "Output"),
                (
                    BattleType::Coding,
                    true,
                    true,
                    true,
                    true,
                    "Coding",
                    "Explanation"
                ),
            ]
        );
        for t in BattleType::ALL {
            assert_eq!(t.as_str().parse::<BattleType>(), Ok(*t));
            assert_eq!(BattleType::parse_arg(t.label()).ok(), Some(*t));
        }
    }

    #[test]
    fn contestant_spec_splits_at_first_at() {
        let c = ContestantSpec::parse("debugger@org/model@v2").unwrap();
        assert_eq!(c.identity, "debugger");
        assert_eq!(c.model, "org/model@v2");
        assert!(ContestantSpec::parse("nomodel").is_err());
        assert!(ContestantSpec::parse("@m").is_err());
        assert!(ContestantSpec::parse("x@ ").is_err());
    }

    #[test]
    fn enums_round_trip_through_strings() {
        for s in ContestantStatus::ALL {
            assert_eq!(s.as_str().parse::<ContestantStatus>().unwrap(), *s);
        }
        for l in Lane::ALL {
            assert_eq!(l.as_str().parse::<Lane>().unwrap(), *l);
        }
        assert_eq!(BattleType::parse_arg("QA").unwrap(), BattleType::Qa);
        assert!(BattleType::parse_arg("poetry").is_err());
    }
}
