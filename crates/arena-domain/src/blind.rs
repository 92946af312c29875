//! Blind battles: the labels that stand for contestants, what a viewer may
//! see of a battle before the vote, and the vote itself.
//!
//! A blind battle stores everything as any battle does; only what leaves
//! the engine for a viewer is masked ([`masked`], [`mask_event`]) until the
//! battle is revealed. Masking keeps what the contestants *produced* (their
//! answers, reasoning, tools, diffs and checks stream as usual) and drops
//! what tells them apart without reading it: names, models, providers,
//! lanes, speeds and times, costs, result paths, lane waits (one still
//! waiting for its turn reads as running, as one waiting for its first
//! token does), provider errors, the winner and the judge's analysis.

use std::borrow::Cow;
use std::collections::BTreeMap;

use rand::seq::SliceRandom;
use rand::Rng;

use crate::analysis::{Analysis, Outcome};
use crate::battle::{
    Battle, Benchmark, Contestant, ContestantStatus, Lane, Round, UserVerdict, WinnerSource,
};
use crate::cross_exam::CrossExamination;
use crate::error::Invalid;
use crate::event::EventKind;

/// The letters a blind battle's contestants are shown as, in order.
pub const LABELS: [&str; 6] = ["A", "B", "C", "D", "E", "F"];

/// What a masked contestant's error reads: provider errors tend to name
/// the model.
pub const MASKED_ERROR: &str = "failed (the error is shown after your vote)";

/// The most tags a battle or series carries, and the longest one.
pub const MAX_TAGS: usize = 20;
pub const MAX_TAG_CHARS: usize = 40;

/// One label per contestant, by position: the first `n` labels shuffled.
pub fn shuffled_labels(n: usize, rng: &mut impl Rng) -> Vec<String> {
    let mut labels: Vec<String> = LABELS.iter().take(n).map(|l| l.to_string()).collect();
    labels.shuffle(rng);
    labels
}

/// Where a contestant stands among its battle's when they queue for their
/// lanes: its roster place, or in a blind battle its label's (labels are
/// shuffled per battle), so that who goes first on a shared lane, and so
/// the order their work starts and streams in, never follows the
/// launcher's order.
pub fn queue_place(battle: &Battle, c: &Contestant) -> u32 {
    match c.label.as_deref().filter(|_| battle.blind) {
        Some(label) => LABELS
            .iter()
            .position(|l| *l == label)
            .map_or(c.position, |i| i as u32),
        None => c.position,
    }
}

/// How a contestant is named to others waiting on its lane: "contestant 2"
/// by its roster place, "contestant B" in a blind battle.
pub fn seat_name(battle: &Battle, c: &Contestant) -> String {
    match c.label.as_deref().filter(|_| battle.blind) {
        Some(label) => format!("contestant {label}"),
        None => format!("contestant {}", c.position + 1),
    }
}

/// What the user chose in a (blind) battle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vote {
    /// This contestant won: its label (`B`, any case) or its id.
    Winner(String),
    /// Every answer as good.
    Tie,
    /// None good enough.
    AllBad,
}

impl Vote {
    /// The stored verdict when the vote names no winner.
    pub fn verdict(&self) -> Option<UserVerdict> {
        match self {
            Vote::Winner(_) => None,
            Vote::Tie => Some(UserVerdict::Tie),
            Vote::AllBad => Some(UserVerdict::AllBad),
        }
    }
}

/// The id of the contestant a vote for `key` (a label, any case, or a
/// contestant id) picks, which must have produced something to judge:
/// running or done. A vote may come before every contestant finished.
pub fn vote_target(battle: &Battle, key: &str) -> Result<String, Invalid> {
    let key = key.trim();
    let found = battle.contestants.iter().find(|c| {
        c.id == key
            || c.label
                .as_deref()
                .is_some_and(|l| l.eq_ignore_ascii_case(key))
    });
    let Some(c) = found else {
        let labels: Vec<&str> = battle
            .contestants
            .iter()
            .filter_map(|c| c.label.as_deref())
            .collect();
        return Err(Invalid::Other(if labels.is_empty() {
            format!(
                "battle {} has no contestant `{key}`; name a contestant by its id",
                battle.id
            )
        } else {
            format!(
                "battle {} has no contestant `{key}`; vote for one of {}, or --tie or --all-bad",
                battle.id,
                labels.join(", ")
            )
        }));
    };
    match c.status {
        ContestantStatus::Running | ContestantStatus::Done => Ok(c.id.clone()),
        status => Err(Invalid::Other(format!(
            "contestant {} is {status}; vote for one that has answered (running or done), or --tie or --all-bad",
            c.label.as_deref().unwrap_or(&c.id)
        ))),
    }
}

/// A battle as a viewer may see it: itself when not masked; else with each
/// contestant shown by its label (ordered by label) and nothing that tells
/// them apart but their work (see the [module documentation](self)). A
/// blind battle keeps its label order once revealed, so the answers the
/// viewer voted on stay where they were.
pub fn masked(battle: &Battle) -> Cow<'_, Battle> {
    if !battle.is_masked() {
        let by_label = battle.blind
            && battle
                .contestants
                .windows(2)
                .any(|pair| pair[0].label > pair[1].label);
        if !by_label {
            return Cow::Borrowed(battle);
        }
        let mut b = battle.clone();
        b.contestants.sort_by(|x, y| x.label.cmp(&y.label));
        return Cow::Owned(b);
    }
    let mut b = battle.clone();
    b.winner = None;
    b.user_verdict = None;
    b.judging = None;
    b.finished_at = None;
    for c in &mut b.contestants {
        let label = c.label.clone().unwrap_or_else(|| "?".into());
        c.identity = label;
        c.model = String::new();
        c.provider = String::new();
        c.error = c.error.as_ref().map(|_| MASKED_ERROR.to_string());
        // Waiting for a lane (a local server, a start rate) is no different
        // to a viewer from waiting for the first token.
        c.waiting = None;
        if c.status == ContestantStatus::Queued {
            c.status = ContestantStatus::Running;
        }
        c.benchmark = Benchmark::default();
        c.started_at = None;
        c.finished_at = None;
        c.result_path = None;
        c.worktree = None;
        c.run = Default::default();
    }
    b.contestants.sort_by(|x, y| x.label.cmp(&y.label));
    // Places follow the labels, not the order they were launched in.
    for (i, c) in b.contestants.iter_mut().enumerate() {
        c.position = i as u32;
    }
    Cow::Owned(b)
}

/// A battle as one viewer may see it: the one place that decides. While a
/// blind battle is masked its contestants are shown by label, in label
/// order and numbered by it, with nothing that tells them apart but their
/// work ([`masked`]), and no lanes.
#[derive(Debug, Clone)]
pub struct BattleView {
    pub battle: Battle,
    /// A blind battle before its reveal.
    pub masked: bool,
}

impl BattleView {
    pub fn of(battle: &Battle) -> BattleView {
        BattleView {
            masked: battle.is_masked(),
            battle: masked(battle).into_owned(),
        }
    }

    /// The lane a contestant runs on, unless that would tell it apart.
    pub fn lane(&self, c: &Contestant) -> Option<Lane> {
        (!self.masked).then_some(c.lane)
    }
}

/// A battle with its rounds, analysis and cross-examinations as one viewer
/// may see it. While masked, rounds keep only their work (no times, costs,
/// errors or files), and the judge's panel and the cross-examinations wait
/// for the vote.
#[derive(Debug, Clone)]
pub struct DetailView {
    pub battle: BattleView,
    /// Rounds by contestant id.
    pub rounds: BTreeMap<String, Vec<Round>>,
    pub analysis: Option<Analysis>,
    pub cross_examinations: Vec<CrossExamination>,
    /// The user's verdict in words with the judge's, once revealed.
    pub vote: Option<VoteWords>,
    /// The battle's newest event when this was read.
    pub last_seq: u64,
}

impl DetailView {
    pub fn new(
        battle: &Battle,
        mut rounds: BTreeMap<String, Vec<Round>>,
        analysis: Option<Analysis>,
        cross_examinations: Vec<CrossExamination>,
        last_seq: u64,
    ) -> DetailView {
        let view = BattleView::of(battle);
        let vote = vote_words(battle, analysis.as_ref());
        if view.masked {
            for r in rounds.values_mut().flatten() {
                r.duration_ms = None;
                r.cost_usd = None;
                r.error = r.error.as_ref().map(|_| MASKED_ERROR.to_string());
                r.result_path = None;
                r.finished_at = None;
            }
        }
        let open = !view.masked;
        DetailView {
            vote,
            analysis: analysis.filter(|_| open),
            cross_examinations: if open { cross_examinations } else { Vec::new() },
            rounds,
            battle: view,
            last_seq,
        }
    }
}

/// An event as a viewer of a masked battle may see it: `None` for what
/// would tell the contestants apart (speeds, lane waits, the winner, the
/// analysis, cross-examinations, result paths), errors reworded, queued
/// read as running.
pub fn mask_event(kind: EventKind) -> Option<EventKind> {
    match kind {
        EventKind::ContestantStatus {
            status,
            error,
            attempt,
        } => Some(EventKind::ContestantStatus {
            // Queued reads as running (see `masked`).
            status: match status {
                ContestantStatus::Queued => ContestantStatus::Running,
                status => status,
            },
            error: error.map(|_| MASKED_ERROR.to_string()),
            attempt,
        }),
        EventKind::Retry {
            attempt, delay_ms, ..
        } => Some(EventKind::Retry {
            attempt,
            delay_ms,
            reason: "the provider failed; trying again".into(),
        }),
        EventKind::Benchmark { .. }
        | EventKind::Waiting { .. }
        | EventKind::Winner { .. }
        | EventKind::ResultWritten { .. }
        | EventKind::AnalysisStatus { .. }
        | EventKind::AnalysisOutput { .. }
        | EventKind::CrossExamStatus { .. }
        | EventKind::CrossExamOutput { .. } => None,
        kind @ (EventKind::BattleStatus { .. }
        | EventKind::Output { .. }
        | EventKind::Reasoning { .. }
        | EventKind::Tool { .. }
        | EventKind::Round { .. }
        | EventKind::ChangedFiles { .. }
        | EventKind::Reset { .. }
        | EventKind::Folded { .. }
        | EventKind::Revealed) => Some(kind),
    }
}

/// Follows one battle's event stream for a viewer: masks while the battle
/// is masked, and stops masking at its [`EventKind::Revealed`].
#[derive(Debug, Clone, Copy)]
pub struct EventMask {
    masked: bool,
}

impl EventMask {
    /// For a battle that `masked` (see [`Battle::is_masked`]) when the
    /// viewer read it.
    pub fn new(masked: bool) -> EventMask {
        EventMask { masked }
    }

    pub fn is_masked(&self) -> bool {
        self.masked
    }

    /// The event as the viewer sees it, or `None` to drop it.
    pub fn apply(&mut self, kind: EventKind) -> Option<EventKind> {
        if matches!(kind, EventKind::Revealed) {
            self.masked = false;
            return Some(kind);
        }
        if self.masked {
            mask_event(kind)
        } else {
            Some(kind)
        }
    }
}

/// A contestant's name after the reveal: `B · debugger@qwen3-8b` (or
/// `debugger@qwen3-8b` in a battle that was never blind).
pub fn revealed_name(battle: &Battle, contestant_id: &str) -> String {
    battle
        .contestants
        .iter()
        .find(|c| c.id == contestant_id)
        .map(|c| match &c.label {
            Some(l) => format!("{l} · {}@{}", c.identity, c.model),
            None => format!("{}@{}", c.identity, c.model),
        })
        .unwrap_or_else(|| contestant_id.to_string())
}

/// The user's verdict and the judge's, each as a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoteWords {
    /// "You chose B · debugger@qwen3-8b.", "You called it a tie.", …
    pub mine: String,
    /// "The judge agreed.", "The judge chose A · …", …
    pub judge: String,
}

impl std::fmt::Display for VoteWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.mine, self.judge)
    }
}

/// The user's verdict in words with the judge's (the newest analysis)
/// beside it: "You chose B · debugger@qwen3-8b." and "The judge agreed."
/// `None` when the user has not decided (or the battle is still masked).
pub fn vote_words(battle: &Battle, analysis: Option<&Analysis>) -> Option<VoteWords> {
    if battle.is_masked() {
        return None;
    }
    let name = |id: &str| revealed_name(battle, id);
    let user_winner = battle
        .winner
        .as_ref()
        .filter(|w| w.source == WinnerSource::User);
    let mine = match (user_winner, battle.user_verdict) {
        (Some(w), _) => format!("You chose {}.", name(&w.contestant_id)),
        (None, Some(UserVerdict::Tie)) => "You called it a tie.".into(),
        (None, Some(UserVerdict::AllBad)) => "You found them all bad.".into(),
        (None, None) => return None,
    };
    let judge = match analysis.map(|a| (a.status, a.outcome, a.winner.as_deref())) {
        Some((_, Some(Outcome::Winner | Outcome::Walkover), Some(w))) => {
            if user_winner.is_some_and(|v| v.contestant_id == w) {
                "The judge agreed.".to_string()
            } else {
                format!("The judge chose {}.", name(w))
            }
        }
        Some((_, Some(Outcome::NoClearWinner), _)) if user_winner.is_none() => {
            "The judge agreed.".into()
        }
        Some((_, Some(Outcome::NoClearWinner), _)) => "The judge saw no clear winner.".into(),
        Some((crate::analysis::AnalysisStatus::Running, ..)) => {
            "The judge is still at work.".into()
        }
        _ => "The judge gave no verdict.".into(),
    };
    Some(VoteWords { mine, judge })
}

/// Tags as stored: trimmed, blanks dropped, duplicates (ignoring case)
/// dropped, in the order given. Refuses a tag over [`MAX_TAG_CHARS`]
/// characters, one with a comma or a control character, and more than
/// [`MAX_TAGS`] tags.
pub fn tags<S: AsRef<str>>(given: &[S]) -> Result<Vec<String>, Invalid> {
    let mut out: Vec<String> = Vec::new();
    for tag in given {
        let tag = tag.as_ref().trim();
        if tag.is_empty() {
            continue;
        }
        if tag.chars().count() > MAX_TAG_CHARS {
            return Err(Invalid::Other(format!(
                "tag `{tag}` is longer than {MAX_TAG_CHARS} characters; use a shorter one"
            )));
        }
        if tag.chars().any(|c| c == ',' || c.is_control()) {
            return Err(Invalid::Other(format!(
                "tag `{tag}` holds a comma or a control character; give each tag on its own (`--tag a --tag b`)"
            )));
        }
        if !out.iter().any(|t| t.eq_ignore_ascii_case(tag)) {
            out.push(tag.to_string());
        }
    }
    if out.len() > MAX_TAGS {
        return Err(Invalid::Other(format!(
            "{} tags given; a battle carries at most {MAX_TAGS}",
            out.len()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::battle::{BattleStatus, BattleType, Contestant, Lane, Winner, WinnerSource};
    use rand::SeedableRng;

    fn contestant(id: &str, position: u32, label: &str, status: ContestantStatus) -> Contestant {
        Contestant {
            id: id.into(),
            battle_id: "b".into(),
            position,
            identity: format!("persona-{id}"),
            model: format!("model-{id}"),
            provider: "secret-provider".into(),
            lane: Lane::Local,
            status,
            error: Some("model-x at secret-provider: 500".into()),
            attempts: 1,
            started_at: Some(chrono::DateTime::UNIX_EPOCH),
            finished_at: Some(chrono::DateTime::UNIX_EPOCH),
            benchmark: Benchmark {
                duration_ms: Some(1200),
                tokens_per_sec: Some(42.0),
                ..Benchmark::default()
            },
            output: Some(format!("answer {id}")),
            reasoning: None,
            truncated: false,
            result_path: Some("/p/Arena/x/01-persona-model/result.md".into()),
            run: Default::default(),
            worktree: None,
            diff: None,
            check: None,
            waiting: Some("waiting for llama-swap".into()),
            label: Some(label.into()),
        }
    }

    fn battle(blind: bool) -> Battle {
        Battle {
            id: "b".into(),
            battle_type: BattleType::Qa,
            status: BattleStatus::Running,
            prompt: "p".into(),
            project: "/p".into(),
            results_path: "/p/Arena/x".into(),
            created_at: chrono::DateTime::UNIX_EPOCH,
            finished_at: None,
            winner: Some(Winner {
                contestant_id: "1".into(),
                source: WinnerSource::Analysis,
            }),
            contestants: vec![
                contestant("1", 0, "B", ContestantStatus::Done),
                contestant("2", 1, "A", ContestantStatus::Running),
                contestant("3", 2, "C", ContestantStatus::Queued),
            ],
            base_commit: None,
            check_command: None,
            series_id: None,
            blind,
            revealed_at: None,
            user_verdict: None,
            tags: vec![],
            judging: None,
            machine: None,
            user_name: None,
            voted_by: None,
            source: None,
        }
    }

    #[test]
    fn labels_are_a_shuffle_of_the_first_letters() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut seen_orders = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let mut labels = shuffled_labels(4, &mut rng);
            seen_orders.insert(labels.join(""));
            labels.sort();
            assert_eq!(labels, ["A", "B", "C", "D"]);
        }
        assert!(seen_orders.len() > 5, "the order changes: {seen_orders:?}");
    }

    #[test]
    fn a_masked_battle_shows_labels_in_order_and_only_the_work() {
        let b = masked(&battle(true)).into_owned();
        assert!(b.winner.is_none());
        let labels: Vec<&str> = b.contestants.iter().map(|c| c.identity.as_str()).collect();
        assert_eq!(labels, ["A", "B", "C"]);
        let text = format!("{b:?}");
        for secret in [
            "persona-",
            "model-",
            "secret-provider",
            "llama-swap",
            "01-persona",
        ] {
            assert!(!text.contains(secret), "{secret} leaks in {text}");
        }
        assert!(b
            .contestants
            .iter()
            .all(|c| c.benchmark == Benchmark::default()));
        assert_eq!(b.contestants[1].output.as_deref(), Some("answer 1"));
        assert_eq!(b.contestants[0].error.as_deref(), Some(MASKED_ERROR));
        // Every one not yet done reads the same: running, waiting for nothing.
        let states: Vec<_> = b
            .contestants
            .iter()
            .map(|c| (c.status, c.waiting.as_deref()))
            .collect();
        assert_eq!(
            states,
            [
                (ContestantStatus::Running, None),
                (ContestantStatus::Done, None),
                (ContestantStatus::Running, None)
            ]
        );
    }

    #[test]
    fn an_open_or_revealed_battle_is_shown_as_it_is() {
        let open = battle(false);
        assert_eq!(masked(&open).contestants[0].identity, "persona-1");
        let mut revealed = battle(true);
        revealed.revealed_at = Some(chrono::DateTime::UNIX_EPOCH);
        assert!(!revealed.is_masked());
        let shown = masked(&revealed);
        // Named again, in the order the viewer voted on (A, B, C), not the
        // roster's.
        let named: Vec<(&str, &str)> = shown
            .contestants
            .iter()
            .map(|c| (c.label.as_deref().unwrap_or(""), c.model.as_str()))
            .collect();
        assert_eq!(
            named,
            [("A", "model-2"), ("B", "model-1"), ("C", "model-3")]
        );
    }

    #[test]
    fn events_are_masked_until_the_reveal() {
        let mut mask = EventMask::new(true);
        assert_eq!(
            mask.apply(EventKind::Benchmark {
                benchmark: Benchmark::default()
            }),
            None
        );
        assert_eq!(mask.apply(EventKind::Winner { winner: None }), None);
        // A lane wait, or being queued, reads as running does.
        assert_eq!(
            mask.apply(EventKind::Waiting {
                reason: Some("llama-swap busy".into())
            }),
            None
        );
        assert_eq!(
            mask.apply(EventKind::ContestantStatus {
                status: ContestantStatus::Queued,
                error: None,
                attempt: 1
            }),
            Some(EventKind::ContestantStatus {
                status: ContestantStatus::Running,
                error: None,
                attempt: 1
            })
        );
        let out = EventKind::Output { text: "hi".into() };
        assert_eq!(mask.apply(out.clone()), Some(out));
        assert_eq!(mask.apply(EventKind::Revealed), Some(EventKind::Revealed));
        assert!(!mask.is_masked());
        let winner = EventKind::Winner { winner: None };
        assert_eq!(mask.apply(winner.clone()), Some(winner));
    }

    #[test]
    fn a_vote_names_a_label_or_an_id_of_one_that_answered() {
        let b = battle(true);
        assert_eq!(vote_target(&b, "b").unwrap(), "1");
        assert_eq!(vote_target(&b, "A").unwrap(), "2", "running counts");
        assert_eq!(vote_target(&b, "1").unwrap(), "1");
        let queued = vote_target(&b, "C").unwrap_err().to_string();
        assert!(queued.contains("queued"), "{queued}");
        let unknown = vote_target(&b, "Z").unwrap_err().to_string();
        assert!(
            unknown.contains("A, B, C") || unknown.contains("B, A, C"),
            "{unknown}"
        );
        assert_eq!(Vote::AllBad.verdict(), Some(UserVerdict::AllBad));
    }

    fn analysis(
        status: crate::analysis::AnalysisStatus,
        outcome: Option<Outcome>,
        winner: Option<&str>,
    ) -> Analysis {
        Analysis {
            id: "a".into(),
            battle_id: "b".into(),
            status,
            model: "judge".into(),
            provider: "p".into(),
            outcome,
            winner: winner.map(str::to_string),
            ranking: vec![],
            reasons: Default::default(),
            digests: vec![],
            judge_runs: vec![],
            error: None,
            created_at: chrono::DateTime::UNIX_EPOCH,
            finished_at: None,
            cost_usd: None,
        }
    }

    #[test]
    fn vote_words_put_the_judge_beside_the_user() {
        use crate::analysis::AnalysisStatus::{Done, Error, Running};
        let mut b = battle(true);
        let mine = Winner {
            contestant_id: "1".into(),
            source: WinnerSource::User,
        };
        let picked = |w: &str| analysis(Done, Some(Outcome::Winner), Some(w));
        let no_clear = analysis(Done, Some(Outcome::NoClearWinner), None);
        let words = |b: &Battle, a: Option<&Analysis>| vote_words(b, a).map(|w| w.to_string());
        // Nothing while masked, or before the user decided (the
        // analysis's winner is not the user's verdict).
        b.winner = Some(mine.clone());
        assert_eq!(words(&b, Some(&picked("1"))), None);
        b.revealed_at = Some(chrono::DateTime::UNIX_EPOCH);
        b.winner = Some(Winner {
            source: WinnerSource::Analysis,
            ..mine.clone()
        });
        assert_eq!(words(&b, Some(&picked("1"))), None);
        b.winner = Some(mine.clone());
        let chose = vote_words(&b, Some(&picked("1"))).unwrap();
        assert_eq!(chose.mine, "You chose B · persona-1@model-1.");
        assert_eq!(chose.judge, "The judge agreed.");
        assert_eq!(
            vote_words(&b, Some(&picked("2"))).unwrap().judge,
            "The judge chose A · persona-2@model-2."
        );
        let walkover = analysis(Done, Some(Outcome::Walkover), Some("1"));
        assert_eq!(
            vote_words(&b, Some(&walkover)).unwrap().judge,
            "The judge agreed."
        );
        assert_eq!(
            vote_words(&b, Some(&no_clear)).unwrap().judge,
            "The judge saw no clear winner."
        );
        let running = analysis(Running, None, None);
        assert_eq!(
            vote_words(&b, Some(&running)).unwrap().judge,
            "The judge is still at work."
        );
        let failed = analysis(Error, Some(Outcome::JudgeError), None);
        assert_eq!(
            vote_words(&b, Some(&failed)).unwrap().judge,
            "The judge gave no verdict."
        );
        // A chosen winner comes before a tie; an unknown id stays as it is.
        b.user_verdict = Some(UserVerdict::Tie);
        assert_eq!(
            vote_words(&b, None).unwrap().mine,
            "You chose B · persona-1@model-1."
        );
        b.winner = Some(Winner {
            contestant_id: "zz".into(),
            ..mine.clone()
        });
        assert_eq!(vote_words(&b, None).unwrap().mine, "You chose zz.");
        // A tie and "all bad" agree with "no clear winner".
        b.winner = None;
        assert_eq!(
            words(&b, Some(&no_clear)).unwrap(),
            "You called it a tie. The judge agreed."
        );
        assert_eq!(
            vote_words(&b, Some(&picked("1"))).unwrap().judge,
            "The judge chose B · persona-1@model-1."
        );
        assert_eq!(
            vote_words(&b, None).unwrap().judge,
            "The judge gave no verdict."
        );
        b.user_verdict = Some(UserVerdict::AllBad);
        assert_eq!(
            words(&b, Some(&no_clear)).unwrap(),
            "You found them all bad. The judge agreed."
        );
        // A battle that was never blind names contestants without labels.
        let mut plain = battle(false);
        for c in &mut plain.contestants {
            c.label = None;
        }
        plain.winner = Some(mine);
        let words = vote_words(&plain, Some(&picked("2"))).unwrap();
        assert_eq!(words.mine, "You chose persona-1@model-1.");
        assert_eq!(words.judge, "The judge chose persona-2@model-2.");
    }

    #[test]
    fn tags_are_trimmed_deduplicated_and_bounded() {
        assert_eq!(
            tags(&[" rust ", "", "Rust", "math"]).unwrap(),
            ["rust", "math"]
        );
        assert!(tags(&["a,b"]).unwrap_err().to_string().contains("comma"));
        assert!(tags(&["x".repeat(41)]).is_err());
        let many: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
        assert!(tags(&many).unwrap_err().to_string().contains("at most 20"));
    }
}
