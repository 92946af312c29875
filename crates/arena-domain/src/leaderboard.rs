//! The leaderboard: ratings and records computed from finished battles.
//!
//! Pure computation: no I/O, no async, no database. The store supplies
//! [`BattleOutcome`]s, [`compute`] turns them into a [`Leaderboard`] (the
//! [`Standing`]s, judge–human [`Agreement`] and the length coefficient) and
//! [`to_csv`] renders the standings for export.
//!
//! # Whose verdict counts
//!
//! A battle can carry two verdicts: the user's (a vote or a winner choice; a
//! tie and an "all bad" vote both count as a tie) and the LLM judge's (its
//! winner, or a tie for "no clear winner"). [`Options::source`] picks the
//! one that counts for the ratings and the records: [`Source::Mine`] the
//! user's, [`Source::Judge`] the judge's, [`Source::Both`] (the default) the
//! user's where the user gave one, else the judge's, and [`Source::Packs`]
//! the task packs' verifiers (each task of a pack run as pairwise matches,
//! in place of the judge's verdict). Everything below works
//! on that counted verdict ([`BattleOutcome::verdict`]); the other one only
//! enters the agreement.
//!
//! # Model
//!
//! Every decided battle yields pairwise comparisons: a winner beats each
//! other entry of its battle once; a tie is a draw between every pair of
//! entries (half a win each). Battles without a counted verdict, and battles
//! with fewer than two entries, yield none.
//!
//! Strengths `p_i` are fitted to those comparisons by maximum likelihood
//! under the Bradley–Terry model (`P(i beats j) = p_i / (p_i + p_j)`), using
//! Hunter's (2004) MM algorithm. A draw counts as half a win for each side.
//!
//! **Prior.** A player who never lost (or never won) has no finite maximum
//! likelihood strength. To keep everyone finite, every player also plays one
//! virtual draw against a fixed *anchor* of strength 1, i.e. gets an extra
//! half win and half loss against it. The anchor is never updated, and it
//! pins the scale of the strengths: the normalisation happens once, when
//! strengths become ratings. With no real comparisons, a player's strength
//! is exactly the anchor's.
//!
//! **Speed.** The real games say nothing about the common scale of the
//! strengths (multiplying every `p_i` by `c` changes no ratio); only the
//! prior's one virtual game per player does. Plain MM therefore moves the
//! scale by about `1 / games played` per iteration, and with thousands of
//! battles it needed its full 10,000 iterations per fit. So each MM step is
//! followed by the best common factor `c` for the prior (an exact
//! maximisation along that line): both steps increase the likelihood and
//! neither moves its maximum, which is reached in tens of iterations.
//!
//! **Rating** = `1000 + 400 · log10(p_i / g)`, where `g` is the geometric
//! mean strength of the players that have at least one real comparison, so
//! the average such player sits at 1000 and a 400-point gap means about
//! 10:1 odds. Players without any comparison carry the prior's 1000.
//!
//! **Intervals.** 95% intervals from the curvature of the fitted model at
//! its maximum (a Laplace approximation): the log-posterior's Hessian in
//! `β = ln p`, over the players with a real comparison, is
//! `Σ_games n_ij·p_i·p_j/(p_i+p_j)²` on the pairs and the prior's
//! `p_i·A/(p_i+A)²` on the diagonal; its inverse is the covariance of
//! `β`, and a rating's variance follows from it (a rating is
//! `β_i − β̄`, scaled). Each interval is the rating ± 1.96 standard
//! deviations. The prior keeps the Hessian positive definite, so no
//! interval has zero width, even when every battle ended the same way
//! (where a bootstrap over battles resamples the same data every time and
//! collapses to a point); fewer battles give wider intervals. With two
//! players the interval of their gap, read as a win probability, covers
//! about the Wilson interval of the win rate (a little wider at the
//! extremes, where the prior's pull and the logistic's flat tail meet).
//! A player without any real comparison gets the prior's own interval
//! around 1000. Deterministic, and one small matrix inversion.
//!
//! # Length-controlled rating
//!
//! Judges, human or not, tend to prefer longer answers. The length-controlled
//! rating ([`Standing::rating_lc`], after LMArena's "style control") is what
//! the rating would be if length did not sway the verdicts. Each comparison
//! above (the same ones, a draw again half a win each) becomes a sample of a
//! logistic regression
//!
//! `P(i beats j) = σ(β_i − β_j + γ·d)`, with `d = (l_i − l_j) / (l_i + l_j)`,
//!
//! where `l` is the length of each answer ([`Entry::output_chars`]) and `d`
//! is 0 when both are empty. With `γ = 0` this is the Bradley–Terry model
//! above, `β_i = ln p_i`. The fit lets `γ` take up whatever length explains
//! of the verdicts; `β_i` is what remains, the player's strength at equal
//! length. [`Leaderboard::length_coefficient`] reports `γ`: positive when
//! longer answers won more than their players' strengths explain. An answer
//! twice as long as the other has `d = ⅓`, so its odds are multiplied by
//! `e^(γ/3)`.
//!
//! **Priors.** On `β`, the same one virtual draw per player against the
//! anchor (`β = 0`) as above: close to 0 it acts like a Gaussian prior of
//! precision ¼ (the curvature of a draw's log-likelihood there), further out
//! it is flatter. Being the same prior, it makes the fit with `γ = 0` exactly
//! the plain one: where length explains nothing, `rating_lc` equals `rating`,
//! and any gap between them is length's doing. On `γ`, a Gaussian of mean 0
//! and standard deviation 10, which nowhere restricts a realistic effect; it
//! only keeps `γ` finite when every `d` is 0, or when the longer answer
//! always won.
//!
//! **Fit.** Maximum a posteriori by Newton's method, from `β = 0, γ = 0`: the
//! objective is concave, its Hessian dense but small (one row per player who
//! has a comparison, plus one for `γ`) and solved by Cholesky. While a step
//! promises a large gain it is halved until it delivers at least a small
//! part of it (backtracking); close to the maximum it is taken whole. The
//! fit stops when no parameter moves by more than 1e-9 (about 2e-7 rating
//! points), or after 100 steps; it takes fewer than 10 even when the longer
//! answer always won. Each step is one pass over the comparisons plus a
//! solve cubic in the number of players: milliseconds for 10,000 battles.
//!
//! **Rating** = `1000 + 400 · (β_i − β̄) / ln 10`, where `β̄` is the mean
//! over the players with at least one comparison: the scale of `rating`.
//! Players without any comparison get 1000. There is no interval.
//!
//! **Skipped** (every `rating_lc` and the coefficient `None`) when a
//! comparison involves an answer of unknown length, or there are no
//! comparisons at all.
//!
//! # Judge–human agreement
//!
//! Over the battles that pass the type filter, whatever the source: a battle
//! with at least two entries where both the user and the judge gave a
//! verdict counts in [`Agreement::both_chose`]; they agreed when they named
//! the same winner, or both a tie. The rate comes with a 95% Wilson interval
//! ([`wilson`]).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::battle::BattleType;

/// The rating of an average player.
pub const BASE_RATING: f64 = 1000.0;
/// Rating points per factor of ten in strength (odds).
const RATING_SCALE: f64 = 400.0;
/// Strength of the fixed anchor every player draws against once.
const ANCHOR_STRENGTH: f64 = 1.0;
/// Virtual games against the anchor per player (one draw)...
const PRIOR_GAMES: f64 = 1.0;
/// ...worth half a win.
const PRIOR_WINS: f64 = 0.5;
/// MM stops when no strength changes by more than this, relatively.
const TOLERANCE: f64 = 1e-9;
/// ...or after this many iterations.
const MAX_ITERATIONS: usize = 10_000;
/// Precision of the Gaussian prior on the length coefficient `γ` (standard
/// deviation 10).
const LENGTH_PRIOR_PRECISION: f64 = 0.01;
/// The length-controlled fit stops when no parameter moves by more than
/// this (in log-odds)...
const LENGTH_TOLERANCE: f64 = 1e-9;
/// ...or after this many Newton steps.
const LENGTH_MAX_STEPS: usize = 100;
/// A Newton step that promises a gain (in log-likelihood) below this is
/// taken whole: the maximum is close, and the gain would drown in rounding.
const LENGTH_FULL_STEP_GAIN: f64 = 1e-3;
/// A shortened step `tΔ` must gain at least this part of `t·gᵀΔ` (Armijo).
const LENGTH_ARMIJO: f64 = 1e-4;

/// Who competed: the (identity, model) pair.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Player {
    pub identity: String,
    pub model: String,
}

impl Player {
    pub fn new(identity: impl Into<String>, model: impl Into<String>) -> Player {
        Player {
            identity: identity.into(),
            model: model.into(),
        }
    }
}

/// One finished contestant of a battle, with its speed figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub player: Player,
    pub duration_ms: Option<u64>,
    pub tokens_per_sec: Option<f64>,
    /// What its run cost (USD), when known.
    pub cost_usd: Option<f64>,
    /// The length of its answer in characters, when known (the
    /// length-controlled rating needs it).
    pub output_chars: Option<u64>,
}

/// How a battle ended, in the eyes of the user or of the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The entry at this index (into [`BattleOutcome::entries`]) won. An
    /// index out of range is treated like [`Verdict::None`].
    Winner(usize),
    /// No clear winner (the judge), a tie or "all bad" (the user): a draw
    /// between every pair of entries.
    Tie,
    /// No verdict from this side: when it is the one counted, the battle
    /// counts for `battles` and the speed figures only.
    None,
}

/// Whose verdicts the ratings and records count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The user's verdicts only.
    Mine,
    /// The judge's verdicts only.
    Judge,
    /// The user's verdict where the user gave one, else the judge's.
    #[default]
    Both,
    /// The task packs' verifiers: every task of a pack run as pairwise
    /// matches between its contestants (the one that resolved it at the
    /// higher rate wins, equal rates tie), kept in
    /// [`BattleOutcome::judge`] (see `pack_score::pairwise_outcomes`).
    Packs,
}

impl Source {
    pub const ALL: [Source; 4] = [Source::Mine, Source::Judge, Source::Both, Source::Packs];

    /// `"mine"`, `"judge"` or `"both"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Mine => "mine",
            Source::Judge => "judge",
            Source::Both => "both",
            Source::Packs => "packs",
        }
    }

    /// The source named by [`Source::as_str`]'s text; an error naming the
    /// allowed values otherwise.
    pub fn parse(s: &str) -> Result<Source, String> {
        Source::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                format!("unknown verdict source `{s}`: expected one of mine, judge, both, packs")
            })
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Source {
    type Err = String;

    fn from_str(s: &str) -> Result<Source, String> {
        Source::parse(s)
    }
}

/// One battle as the leaderboard sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BattleOutcome {
    pub battle_id: String,
    pub battle_type: BattleType,
    pub entries: Vec<Entry>,
    /// The user's vote or winner choice: a winner, [`Verdict::Tie`] for a
    /// tie or an "all bad" vote, [`Verdict::None`] when the user did not
    /// choose.
    pub user: Verdict,
    /// The LLM judge's verdict: a winner, [`Verdict::Tie`] for "no clear
    /// winner", [`Verdict::None`] when there is none.
    pub judge: Verdict,
}

impl BattleOutcome {
    /// The verdict that counts under `source`. For [`Source::Both`], the
    /// user's unless it is [`Verdict::None`] (or a winner out of range,
    /// which is treated alike), then the judge's.
    pub fn verdict(&self, source: Source) -> Verdict {
        match source {
            Source::Mine => self.user,
            Source::Judge | Source::Packs => self.judge,
            Source::Both => match self.user {
                Verdict::Winner(w) if w < self.entries.len() => self.user,
                Verdict::Tie => self.user,
                Verdict::Winner(_) | Verdict::None => self.judge,
            },
        }
    }
}

/// One row of the leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
    /// 1-based, by rating descending (ties broken by wins, then name).
    pub rank: usize,
    pub identity: String,
    pub model: String,
    /// Elo-like: the average player is 1000, +400 ≈ 10:1 odds.
    pub rating: f64,
    /// The 95% interval's lower end (see the module's "Intervals"; always
    /// below `rating`).
    pub rating_low: f64,
    /// ...and its upper end (always above `rating`).
    pub rating_high: f64,
    /// The length-controlled rating, on the scale of `rating`: what it
    /// would be if answer length did not sway the verdicts. `None` when
    /// that fit was skipped (an answer of unknown length, or no
    /// comparisons). No interval.
    pub rating_lc: Option<f64>,
    /// Battles this player finished in (any verdict).
    pub battles: u32,
    /// Battles whose counted verdict is a winner or a tie (and that have at
    /// least two entries).
    pub decided: u32,
    pub wins: u32,
    pub ties: u32,
    pub losses: u32,
    /// `wins / decided`, 0 when nothing was decided.
    pub win_rate: f64,
    pub median_duration_ms: Option<f64>,
    pub median_tokens_per_sec: Option<f64>,
    /// What its runs cost in all (USD); `None` when any cost is unknown.
    pub cost_usd: Option<f64>,
    /// `cost_usd / wins`, when both are known and it won.
    pub cost_per_win_usd: Option<f64>,
}

/// How often the judge and the user agreed, over the battles (of the
/// chosen type, whatever the source) where both gave a verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// Battles with at least two entries and both a user's and a judge's
    /// verdict.
    pub both_chose: u32,
    /// ...where they were the same: the same winner, or both a tie.
    pub agreed: u32,
    /// `agreed / both_chose`; `None` when `both_chose` is 0.
    pub rate: Option<f64>,
    /// The 95% Wilson interval of `rate`; `None` with it.
    pub rate_ci: Option<(f64, f64)>,
}

/// What [`compute`] returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaderboard {
    /// Sorted by rating (ties broken by wins, then name).
    pub standings: Vec<Standing>,
    pub agreement: Agreement,
    /// `γ` of the length-controlled fit: log-odds per unit of relative
    /// length difference `d`, positive when longer answers won more than
    /// their players' strengths explain. `None` when the fit was skipped.
    pub length_coefficient: Option<f64>,
}

/// What to compute.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Options {
    /// Only battles of this type; all battles when `None`.
    pub battle_type: Option<BattleType>,
    /// Whose verdicts count for the ratings and records.
    pub source: Source,
}

/// Filters by battle type, picks each battle's counted verdict by
/// [`Options::source`], fits ratings and their intervals, fits the
/// length-controlled ratings, and returns the standings sorted by rating
/// (ties broken by wins, then name) with the judge–human agreement.
///
/// See the [module documentation](self) for the model, including the weak
/// prior (one virtual draw of every player against an anchor of strength 1)
/// that keeps undefeated and winless players finite.
pub fn compute(outcomes: &[BattleOutcome], options: &Options) -> Leaderboard {
    let outcomes: Vec<&BattleOutcome> = outcomes
        .iter()
        .filter(|o| options.battle_type.is_none_or(|t| o.battle_type == t))
        .collect();

    let players: Vec<Player> = outcomes
        .iter()
        .flat_map(|o| o.entries.iter().map(|e| e.player.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index: BTreeMap<&Player, usize> = players.iter().enumerate().map(|(i, p)| (p, i)).collect();
    let n = players.len();

    let mut records = vec![Record::default(); n];
    // The comparisons of each decided battle.
    let mut decided: Vec<Vec<Comparison>> = Vec::new();
    let (mut both_chose, mut agreed) = (0, 0);
    for outcome in &outcomes {
        let ids: Vec<usize> = outcome.entries.iter().map(|e| index[&e.player]).collect();
        let entries = outcome.entries.len();
        let counted = decision(entries, outcome.verdict(options.source));
        for (k, (entry, &id)) in outcome.entries.iter().zip(&ids).enumerate() {
            records[id].add(entry, counted, k);
        }
        if let Some(counted) = counted {
            let lengths: Vec<Option<u64>> =
                outcome.entries.iter().map(|e| e.output_chars).collect();
            let comparisons = comparisons(&ids, &lengths, counted);
            if !comparisons.is_empty() {
                decided.push(comparisons);
            }
        }
        if let (Some(user), Some(judge)) = (
            decision(entries, outcome.user),
            decision(entries, outcome.judge),
        ) {
            both_chose += 1;
            if user == judge {
                agreed += 1;
            }
        }
    }

    let tally = tally(n, decided.iter().map(Vec::as_slice));
    let strengths = fit(&tally);
    let ratings = to_ratings(&strengths, &tally.played);
    let intervals = intervals(&tally, &strengths, &ratings);
    let length = fit_length(n, decided.iter().map(Vec::as_slice));
    let ratings_lc: Vec<Option<f64>> = match &length {
        Some(fit) => fit.ratings().into_iter().map(Some).collect(),
        None => vec![None; n],
    };

    let mut standings: Vec<Standing> = players
        .into_iter()
        .zip(records)
        .zip(ratings.iter().zip(intervals).zip(ratings_lc))
        .map(
            |((player, record), ((&rating, (low, high)), rating_lc))| Standing {
                rank: 0,
                identity: player.identity,
                model: player.model,
                rating,
                rating_low: low,
                rating_high: high,
                rating_lc,
                battles: record.battles,
                decided: record.decided,
                wins: record.wins,
                ties: record.ties,
                losses: record.losses,
                win_rate: if record.decided == 0 {
                    0.0
                } else {
                    f64::from(record.wins) / f64::from(record.decided)
                },
                median_duration_ms: median(record.durations),
                median_tokens_per_sec: median(record.rates),
                cost_usd: crate::benchmark::add_costs(record.costs.iter().copied()),
                cost_per_win_usd: crate::benchmark::add_costs(record.costs.iter().copied())
                    .filter(|_| record.wins > 0)
                    .map(|c| c / f64::from(record.wins)),
            },
        )
        .collect();

    // Ratings are compared at 1e-6 resolution so that players equal up to
    // floating-point noise fall through to the tie-breakers (a quantised
    // key keeps the order total, which a tolerance comparison would not).
    standings.sort_by(|a, b| {
        let key = |s: &Standing| (Reverse(quantise(s.rating)), Reverse(s.wins));
        key(a)
            .cmp(&key(b))
            .then_with(|| a.identity.cmp(&b.identity))
            .then_with(|| a.model.cmp(&b.model))
    });
    for (i, s) in standings.iter_mut().enumerate() {
        s.rank = i + 1;
    }
    Leaderboard {
        standings,
        agreement: Agreement {
            both_chose,
            agreed,
            rate: (both_chose > 0).then(|| f64::from(agreed) / f64::from(both_chose)),
            rate_ci: (both_chose > 0).then(|| wilson(agreed, both_chose)),
        },
        length_coefficient: length.map(|fit| fit.coefficient),
    }
}

/// The CSV header written by [`to_csv`].
pub const CSV_HEADER: &str = "rank,identity,model,rating,rating_low,rating_high,battles,decided,\
wins,ties,losses,win_rate,median_duration_ms,median_tokens_per_sec,rating_lc";

/// CSV with a header row ([`CSV_HEADER`]) and one line per standing, each
/// ended by `\n`. Fields holding a comma, a quote or a line break are quoted
/// as in RFC 4180. Ratings (including `rating_lc`, empty when absent) have 1
/// decimal, the win rate 3; medians are plain numbers and empty when absent.
pub fn to_csv(standings: &[Standing]) -> String {
    let mut out = String::with_capacity(CSV_HEADER.len() + 1 + standings.len() * 96);
    out.push_str(CSV_HEADER);
    out.push('\n');
    for s in standings {
        let optional = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{},{},{},{:.1},{:.1},{:.1},{},{},{},{},{},{:.3},{},{},{}",
            s.rank,
            csv_field(&s.identity),
            csv_field(&s.model),
            s.rating,
            s.rating_low,
            s.rating_high,
            s.battles,
            s.decided,
            s.wins,
            s.ties,
            s.losses,
            s.win_rate,
            optional(s.median_duration_ms),
            optional(s.median_tokens_per_sec),
            s.rating_lc.map(|r| format!("{r:.1}")).unwrap_or_default(),
        );
    }
    out
}

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The 95% Wilson score interval of `k` successes in `n` trials, as
/// proportions; `(0, 1)` when `n` is 0.
pub fn wilson(k: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (f64::from(k), f64::from(n));
    let p = k / n;
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denominator;
    let half = Z95 * ((p * (1.0 - p) / n) + z2 / (4.0 * n * n)).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A usable verdict: one that yields comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Winner(usize),
    Tie,
}

/// The `verdict` of a battle with `entries` entries, if usable: `None` for
/// no verdict, single-entry battles and out-of-range winners, none of which
/// say anything about relative strength.
fn decision(entries: usize, verdict: Verdict) -> Option<Decision> {
    if entries < 2 {
        return None;
    }
    match verdict {
        Verdict::Winner(w) if w < entries => Some(Decision::Winner(w)),
        Verdict::Tie => Some(Decision::Tie),
        Verdict::Winner(_) | Verdict::None => None,
    }
}

/// One game between players `a` and `b`: `a` scored `score` (1 win, ½ draw),
/// `b` scored `1 - score`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Comparison {
    a: usize,
    b: usize,
    score: f64,
    /// `d = (l_a − l_b) / (l_a + l_b)` of their answers' lengths, `None`
    /// when either is unknown.
    length_gap: Option<f64>,
}

/// The pairwise games of one decided battle, given its entries' player ids
/// and answer lengths.
fn comparisons(ids: &[usize], lengths: &[Option<u64>], decision: Decision) -> Vec<Comparison> {
    let mut out = Vec::new();
    match decision {
        Decision::Winner(w) => {
            for (k, &other) in ids.iter().enumerate() {
                if k != w && other != ids[w] {
                    out.push(Comparison {
                        a: ids[w],
                        b: other,
                        score: 1.0,
                        length_gap: length_gap(lengths[w], lengths[k]),
                    });
                }
            }
        }
        Decision::Tie => {
            for (k, &a) in ids.iter().enumerate() {
                for (m, &b) in ids.iter().enumerate().skip(k + 1) {
                    if a != b {
                        out.push(Comparison {
                            a,
                            b,
                            score: 0.5,
                            length_gap: length_gap(lengths[k], lengths[m]),
                        });
                    }
                }
            }
        }
    }
    out
}

/// `(a − b) / (a + b)`: in `[-1, 1]`, 0 when both are 0; `None` when either
/// is unknown.
fn length_gap(a: Option<u64>, b: Option<u64>) -> Option<f64> {
    let (a, b) = (a? as f64, b? as f64);
    Some(if a + b == 0.0 { 0.0 } else { (a - b) / (a + b) })
}

/// A player's record, before it becomes a [`Standing`].
#[derive(Debug, Clone, Default)]
struct Record {
    battles: u32,
    decided: u32,
    wins: u32,
    ties: u32,
    losses: u32,
    durations: Vec<f64>,
    rates: Vec<f64>,
    /// Costs of its runs (`None` for an unknown one).
    costs: Vec<Option<f64>>,
}

impl Record {
    /// Adds the entry at `position` of a battle that ended with `decision`.
    fn add(&mut self, entry: &Entry, decision: Option<Decision>, position: usize) {
        self.battles += 1;
        self.costs.push(entry.cost_usd);
        if let Some(ms) = entry.duration_ms {
            self.durations.push(ms as f64);
        }
        if let Some(rate) = entry.tokens_per_sec.filter(|r| r.is_finite()) {
            self.rates.push(rate);
        }
        match decision {
            None => {}
            Some(Decision::Winner(w)) => {
                self.decided += 1;
                if w == position {
                    self.wins += 1;
                } else {
                    self.losses += 1;
                }
            }
            Some(Decision::Tie) => {
                self.decided += 1;
                self.ties += 1;
            }
        }
    }
}

/// Aggregated games: what the fit needs.
#[derive(Debug, Clone, PartialEq)]
struct Tally {
    /// `(i, j, n_ij)` with `i < j` and `n_ij > 0` games between them.
    pairs: Vec<(usize, usize, f64)>,
    /// Real (not virtual) wins of each player, draws counting ½.
    wins: Vec<f64>,
    /// Whether each player has at least one real game.
    played: Vec<bool>,
}

/// Up to this many players, [`tally`] counts games in an `n × n` table
/// (quicker than a map).
const DENSE_TALLY_PLAYERS: usize = 256;

fn tally<'a>(n: usize, battles: impl IntoIterator<Item = &'a [Comparison]>) -> Tally {
    // Game counts are whole numbers, so they add up exactly in any order;
    // the pairs come out ordered by `(i, j)` either way, and the wins are
    // added in the battles' order: the result is deterministic.
    let dense = n <= DENSE_TALLY_PLAYERS;
    let mut table = vec![0.0; if dense { n * n } else { 0 }];
    let mut games: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut wins = vec![0.0; n];
    let mut played = vec![false; n];
    for c in battles.into_iter().flatten() {
        let (i, j) = (c.a.min(c.b), c.a.max(c.b));
        if dense {
            table[i * n + j] += 1.0;
        } else {
            *games.entry((i, j)).or_insert(0.0) += 1.0;
        }
        wins[c.a] += c.score;
        wins[c.b] += 1.0 - c.score;
        played[c.a] = true;
        played[c.b] = true;
    }
    let pairs = if dense {
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .filter_map(|(i, j)| Some((i, j, table[i * n + j])).filter(|&(_, _, g)| g > 0.0))
            .collect()
    } else {
        games.into_iter().map(|((i, j), g)| (i, j, g)).collect()
    };
    Tally {
        pairs,
        wins,
        played,
    }
}

/// Bradley–Terry strengths by maximum likelihood (MM, Hunter 2004), with
/// one virtual draw of each player against an anchor of fixed strength 1:
///
/// `p_i ← (W_i + ½) / (Σ_j n_ij / (p_i + p_j) + 1 / (p_i + 1))`
///
/// each step followed, for each group of players connected by games, by
/// the common factor that suits the prior best (see [`prior_scale`]), until
/// no strength moves by more than [`TOLERANCE`] relatively, or
/// [`MAX_ITERATIONS`]. The fixed anchor sets the scale; an arbitrary
/// renormalisation would move the fixed point, the prior's best factor does
/// not (it is 1 there). Players without games stay at the anchor's
/// strength, untouched by the others.
fn fit(tally: &Tally) -> Vec<f64> {
    let observed: Vec<f64> = tally.wins.iter().map(|w| w + PRIOR_WINS).collect();
    let mut p = vec![ANCHOR_STRENGTH; observed.len()];
    let mut next = vec![0.0; observed.len()];
    let mut denominator = vec![0.0; observed.len()];
    let groups = connected(observed.len(), &tally.pairs);
    for _ in 0..MAX_ITERATIONS {
        for (d, &pi) in denominator.iter_mut().zip(&p) {
            *d = PRIOR_GAMES / (pi + ANCHOR_STRENGTH);
        }
        for &(i, j, games) in &tally.pairs {
            let t = games / (p[i] + p[j]);
            denominator[i] += t;
            denominator[j] += t;
        }
        for ((n, &w), &d) in next.iter_mut().zip(&observed).zip(&denominator) {
            *n = w / d;
        }
        for group in &groups {
            let scale = prior_scale(group.iter().map(|&i| next[i]));
            for &i in group {
                next[i] *= scale;
            }
        }
        let mut change = 0.0_f64;
        for (pi, &n) in p.iter_mut().zip(&next) {
            change = change.max(((n - *pi) / *pi).abs());
            *pi = n;
        }
        if change < TOLERANCE {
            break;
        }
    }
    p
}

/// The groups of players connected by games (each in index order), for
/// players with at least one game; groups ordered by their first player.
/// Multiplying a group's strengths by a common factor changes none of the
/// probabilities of its games.
fn connected(n: usize, pairs: &[(usize, usize, f64)]) -> Vec<Vec<usize>> {
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut parent: Vec<usize> = (0..n).collect();
    let mut played = vec![false; n];
    for &(i, j, _) in pairs {
        played[i] = true;
        played[j] = true;
        let (a, b) = (root(&mut parent, i), root(&mut parent, j));
        parent[a.max(b)] = a.min(b);
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in (0..n).filter(|&i| played[i]) {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    groups.into_values().collect()
}

/// The factor `c` for which `c·p` best fits the prior (every player's
/// virtual draw against the anchor), the real games being indifferent to
/// it: the root of `Σ_i G·c·p_i / (c·p_i + A) = n·W` (G games and W wins
/// per player against an anchor of strength A). Newton's method on `ln c`,
/// kept inside the bracket it narrows (the left side grows with `c`).
/// 1 when there is nothing to fit or no finite answer.
fn prior_scale(strengths: impl Iterator<Item = f64> + Clone) -> f64 {
    let target = strengths.clone().count() as f64 * PRIOR_WINS;
    let (mut low, mut high) = (f64::NEG_INFINITY, f64::INFINITY);
    let mut u = 0.0_f64;
    for _ in 0..100 {
        let c = u.exp();
        let (mut h, mut slope) = (-target, 0.0);
        for pi in strengths.clone() {
            let s = c * pi / (c * pi + ANCHOR_STRENGTH);
            h += PRIOR_GAMES * s;
            slope += PRIOR_GAMES * s * (1.0 - s);
        }
        if h == 0.0 {
            break;
        }
        if h > 0.0 {
            high = u;
        } else {
            low = u;
        }
        let mut step = u - h / slope;
        if !(step.is_finite() && step > low && step < high) {
            step = match (low.is_finite(), high.is_finite()) {
                (true, true) => (low + high) / 2.0,
                (true, false) => low + 1.0,
                (false, true) => high - 1.0,
                (false, false) => break,
            };
        }
        let done = (step - u).abs() <= 1e-15 * u.abs().max(1.0);
        u = step;
        if done {
            break;
        }
    }
    let c = u.exp();
    if c.is_finite() && c > 0.0 {
        c
    } else {
        1.0
    }
}

/// Strengths to ratings, centred on the geometric mean of the players who
/// played; those who did not get [`BASE_RATING`].
fn to_ratings(strengths: &[f64], played: &[bool]) -> Vec<f64> {
    let logs: Vec<f64> = strengths
        .iter()
        .zip(played)
        .filter(|(_, &played)| played)
        .map(|(p, _)| p.log10())
        .collect();
    let centre = if logs.is_empty() {
        0.0
    } else {
        logs.iter().sum::<f64>() / logs.len() as f64
    };
    strengths
        .iter()
        .zip(played)
        .map(|(p, &played)| {
            if played {
                BASE_RATING + RATING_SCALE * (p.log10() - centre)
            } else {
                BASE_RATING
            }
        })
        .collect()
}

/// `(low, high)` per player: the rating ± [`Z95`] standard deviations,
/// from the inverse of the log-posterior's Hessian in `β = ln p` at the
/// fitted strengths (see the module's "Intervals").
fn intervals(tally: &Tally, strengths: &[f64], ratings: &[f64]) -> Vec<(f64, f64)> {
    // Rating points per unit of β.
    let k = RATING_SCALE / std::f64::consts::LN_10;
    let prior = |p: f64| PRIOR_GAMES * p * ANCHOR_STRENGTH / (p + ANCHOR_STRENGTH).powi(2);
    let played: Vec<usize> = (0..strengths.len()).filter(|&i| tally.played[i]).collect();
    let m = played.len();
    let mut place = vec![usize::MAX; strengths.len()];
    for (at, &i) in played.iter().enumerate() {
        place[i] = at;
    }
    // The negative Hessian, lower triangle.
    let mut h = vec![0.0; m * m];
    for (at, &i) in played.iter().enumerate() {
        h[at * m + at] = prior(strengths[i]);
    }
    for &(i, j, games) in &tally.pairs {
        let (pi, pj) = (strengths[i], strengths[j]);
        let w = games * pi * pj / (pi + pj).powi(2);
        let (a, b) = (place[i].max(place[j]), place[i].min(place[j]));
        h[a * m + a] += w;
        h[b * m + b] += w;
        h[a * m + b] -= w;
    }
    // Σ = H⁻¹, a column at a time from one factorisation.
    let covariance: Option<Vec<Vec<f64>>> = cholesky(h).map(|l| {
        (0..m)
            .map(|c| {
                let mut unit = vec![0.0; m];
                unit[c] = 1.0;
                solve_factored(&l, &unit)
            })
            .collect()
    });
    // Var(β_i − β̄) = Σ_ii − 2·mean_k Σ_ik + mean_kl Σ_kl.
    let spread = covariance.as_ref().map(|cov| {
        let row_means: Vec<f64> = cov
            .iter()
            .map(|r| r.iter().sum::<f64>() / m as f64)
            .collect();
        let all_mean = row_means.iter().sum::<f64>() / m as f64;
        (0..m)
            .map(|a| (cov[a][a] - 2.0 * row_means[a] + all_mean).max(0.0).sqrt())
            .collect::<Vec<f64>>()
    });
    // Without a real comparison: the prior's draw alone, around the anchor.
    let alone = (1.0 / prior(ANCHOR_STRENGTH)).sqrt();
    ratings
        .iter()
        .enumerate()
        .map(|(i, &rating)| {
            let sd = match &spread {
                Some(spread) if place[i] != usize::MAX => spread[place[i]],
                _ => alone,
            };
            let half = Z95 * k * sd;
            (rating - half, rating + half)
        })
        .collect()
}

/// One sample of the length-controlled fit: `a` scored `score` against `b`
/// (players by their place in [`LengthFit::players`]) with length gap `gap`.
#[derive(Debug, Clone, Copy)]
struct Sample {
    a: usize,
    b: usize,
    gap: f64,
    score: f64,
}

/// The length-controlled fit's result.
#[derive(Debug, Clone, PartialEq)]
struct LengthFit {
    /// How many players there are in all.
    n: usize,
    /// The players with at least one comparison, in order of appearance.
    players: Vec<usize>,
    /// `β` of each of them.
    strengths: Vec<f64>,
    /// `γ`.
    coefficient: f64,
    /// Newton steps taken.
    steps: usize,
}

impl LengthFit {
    /// Length-controlled ratings of all `n` players, centred on the mean
    /// `β` of those with comparisons; the others get [`BASE_RATING`].
    fn ratings(&self) -> Vec<f64> {
        let mut out = vec![BASE_RATING; self.n];
        let centre = self.strengths.iter().sum::<f64>() / self.strengths.len().max(1) as f64;
        for (&i, &beta) in self.players.iter().zip(&self.strengths) {
            out[i] = BASE_RATING + RATING_SCALE * (beta - centre) / std::f64::consts::LN_10;
        }
        out
    }
}

/// The length-controlled model fitted to the comparisons of `n` players
/// (see the [module documentation](self)); `None` when a comparison
/// involves an answer of unknown length, or there is none.
///
/// Newton's method on the log-posterior, parameters `β` (one per player
/// with comparisons) then `γ`, from zero. A step Δ whose predicted gain
/// `½·gᵀΔ` (g the gradient) is at least [`LENGTH_FULL_STEP_GAIN`] is
/// halved until the part `tΔ` taken gains at least [`LENGTH_ARMIJO`] of
/// `t·gᵀΔ` (Armijo's rule); a smaller one is taken whole. Stops once the full
/// step moves no parameter by more than [`LENGTH_TOLERANCE`], after
/// [`LENGTH_MAX_STEPS`], or when rounding leaves no step that helps (or
/// no system that solves), at the parameters reached so far.
fn fit_length<'a>(
    n: usize,
    battles: impl IntoIterator<Item = &'a [Comparison]>,
) -> Option<LengthFit> {
    let mut place = vec![usize::MAX; n];
    let mut players = Vec::new();
    let mut samples = Vec::new();
    for c in battles.into_iter().flatten() {
        let gap = c.length_gap?;
        for i in [c.a, c.b] {
            if place[i] == usize::MAX {
                place[i] = players.len();
                players.push(i);
            }
        }
        samples.push(Sample {
            a: place[c.a],
            b: place[c.b],
            gap,
            score: c.score,
        });
    }
    if samples.is_empty() {
        return None;
    }
    let mut x = vec![0.0; players.len() + 1];
    let mut here = evaluate(&samples, &x);
    let mut steps = 0;
    while steps < LENGTH_MAX_STEPS {
        steps += 1;
        let Some(step) = solve(here.hessian.clone(), &here.gradient) else {
            break;
        };
        // The log-posterior's slope along the step: twice its predicted gain.
        let slope: f64 = here.gradient.iter().zip(&step).map(|(g, d)| g * d).sum();
        let mut t = 1.0;
        let moved = loop {
            let trial: Vec<f64> = x.iter().zip(&step).map(|(x, d)| x + t * d).collect();
            let there = evaluate(&samples, &trial);
            if slope < 2.0 * LENGTH_FULL_STEP_GAIN
                || there.value >= here.value + LENGTH_ARMIJO * t * slope
            {
                x = trial;
                here = there;
                break true;
            }
            t /= 2.0;
            if t < 1e-10 {
                break false;
            }
        };
        // Judged by the full step, so that a heavily shortened one cannot
        // pass for convergence.
        if !moved || step.iter().all(|d| d.abs() <= LENGTH_TOLERANCE) {
            break;
        }
    }
    let coefficient = x.pop().unwrap_or(0.0);
    Some(LengthFit {
        n,
        players,
        strengths: x,
        coefficient,
        steps,
    })
}

/// The log-posterior of the length-controlled model at `x` (`β` then `γ`),
/// its gradient, and its negated Hessian (positive definite, row-major,
/// lower triangle only: that is all [`solve`] reads).
struct Evaluation {
    value: f64,
    gradient: Vec<f64>,
    hessian: Vec<f64>,
}

fn evaluate(samples: &[Sample], x: &[f64]) -> Evaluation {
    let dim = x.len();
    let g = dim - 1;
    let gamma = x[g];
    let mut value = -LENGTH_PRIOR_PRECISION * gamma * gamma / 2.0;
    let mut gradient = vec![0.0; dim];
    let mut hessian = vec![0.0; dim * dim];
    gradient[g] = -LENGTH_PRIOR_PRECISION * gamma;
    hessian[g * dim + g] = LENGTH_PRIOR_PRECISION;
    // The prior: each player's virtual draw against the anchor.
    let anchor = ANCHOR_STRENGTH.ln();
    for (i, &beta) in x[..g].iter().enumerate() {
        let (l, p) = logistic(beta - anchor, PRIOR_WINS / PRIOR_GAMES);
        value += PRIOR_GAMES * l;
        gradient[i] += PRIOR_WINS - PRIOR_GAMES * p;
        hessian[i * dim + i] += PRIOR_GAMES * p * (1.0 - p);
    }
    for s in samples {
        let (l, p) = logistic(x[s.a] - x[s.b] + gamma * s.gap, s.score);
        value += l;
        let r = s.score - p;
        let w = p * (1.0 - p);
        gradient[s.a] += r;
        gradient[s.b] -= r;
        gradient[g] += r * s.gap;
        hessian[s.a * dim + s.a] += w;
        hessian[s.b * dim + s.b] += w;
        hessian[s.a.max(s.b) * dim + s.a.min(s.b)] -= w;
        hessian[g * dim + s.a] += w * s.gap;
        hessian[g * dim + s.b] -= w * s.gap;
        hessian[g * dim + g] += w * s.gap * s.gap;
    }
    Evaluation {
        value,
        gradient,
        hessian,
    }
}

/// The log-likelihood of scoring `y` (1 a win, ½ a draw) at log-odds `z`,
/// `y·ln σ(z) + (1 − y)·ln σ(−z)`, and `σ(z)`; both without overflow.
fn logistic(z: f64, y: f64) -> (f64, f64) {
    let e = (-z.abs()).exp();
    let p = if z >= 0.0 {
        1.0 / (1.0 + e)
    } else {
        e / (1.0 + e)
    };
    let l = -e.ln_1p() - y * (-z).max(0.0) - (1.0 - y) * z.max(0.0);
    (l, p)
}

/// `x` with `A·x = b`, for `A` symmetric positive definite given by its
/// lower triangle (row-major, `n × n`): Cholesky, then two triangular
/// solves. `None` when `A` is not (numerically) positive definite.
fn solve(a: Vec<f64>, b: &[f64]) -> Option<Vec<f64>> {
    cholesky(a).map(|l| solve_factored(&l, b))
}

/// The Cholesky factor `L` (`A = L·Lᵀ`, in the lower triangle, row-major)
/// of `A` given by its lower triangle; `None` when `A` is not
/// (numerically) positive definite.
fn cholesky(mut a: Vec<f64>) -> Option<Vec<f64>> {
    let n = (a.len() as f64).sqrt() as usize;
    for j in 0..n {
        let d = a[j * n + j] - (0..j).map(|k| a[j * n + k].powi(2)).sum::<f64>();
        if !(d > 0.0 && d.is_finite()) {
            return None;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let dot: f64 = (0..j).map(|k| a[i * n + k] * a[j * n + k]).sum();
            a[i * n + j] = (a[i * n + j] - dot) / d;
        }
    }
    Some(a)
}

/// `x` with `L·Lᵀ·x = b`, `L` from [`cholesky`].
fn solve_factored(l: &[f64], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    // L·y = b, then Lᵀ·x = y.
    let mut x = b.to_vec();
    for i in 0..n {
        let dot: f64 = l[i * n..i * n + i]
            .iter()
            .zip(&x[..i])
            .map(|(l, y)| l * y)
            .sum();
        x[i] = (x[i] - dot) / l[i * n + i];
    }
    for i in (0..n).rev() {
        let dot: f64 = (i + 1..n).map(|k| l[k * n + i] * x[k]).sum();
        x[i] = (x[i] - dot) / l[i * n + i];
    }
    x
}

/// The median, the mean of the two middle values for an even count.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// A rating as an integer key at 1e-6 resolution, for sorting.
fn quantise(rating: f64) -> i64 {
    (rating * 1e6).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn player(name: &str) -> Player {
        Player::new(name, "m")
    }

    fn entry(name: &str) -> Entry {
        Entry {
            player: player(name),
            duration_ms: None,
            tokens_per_sec: None,
            cost_usd: Some(0.01),
            output_chars: Some(1000),
        }
    }

    fn outcome(
        id: usize,
        battle_type: BattleType,
        names: &[&str],
        verdict: Verdict,
    ) -> BattleOutcome {
        BattleOutcome {
            battle_id: format!("b{id}"),
            battle_type,
            entries: names.iter().map(|n| entry(n)).collect(),
            user: verdict,
            judge: Verdict::None,
        }
    }

    /// `games` Qa duels between `a` and `b`, `a` winning the first `a_wins`.
    /// The winner's position alternates so that nothing depends on it.
    fn duels(out: &mut Vec<BattleOutcome>, a: &str, b: &str, a_wins: usize, games: usize) {
        for g in 0..games {
            let (names, a_at) = if g % 2 == 0 { ([a, b], 0) } else { ([b, a], 1) };
            let winner = if g < a_wins { a_at } else { 1 - a_at };
            let id = out.len();
            out.push(outcome(id, BattleType::Qa, &names, Verdict::Winner(winner)));
        }
    }

    fn known_set() -> Vec<BattleOutcome> {
        let mut out = Vec::new();
        duels(&mut out, "A", "B", 8, 10);
        duels(&mut out, "B", "C", 8, 10);
        duels(&mut out, "A", "C", 9, 10);
        out
    }

    fn find<'a>(standings: &'a [Standing], name: &str) -> &'a Standing {
        standings
            .iter()
            .find(|s| s.identity == name)
            .unwrap_or_else(|| panic!("no standing for {name}"))
    }

    fn assert_interval(s: &Standing) {
        assert!(s.rating.is_finite() && s.rating_low.is_finite() && s.rating_high.is_finite());
        assert!(
            s.rating_low <= s.rating && s.rating <= s.rating_high,
            "{}: {} not in [{}, {}]",
            s.identity,
            s.rating,
            s.rating_low,
            s.rating_high
        );
    }

    #[test]
    fn known_set_orders_and_counts() {
        let standings = compute(&known_set(), &Options::default()).standings;
        let names: Vec<&str> = standings.iter().map(|s| s.identity.as_str()).collect();
        assert_eq!(names, ["A", "B", "C"]);
        assert_eq!(
            standings.iter().map(|s| s.rank).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert!(standings[0].rating > standings[1].rating);
        assert!(standings[1].rating > standings[2].rating);
        for s in &standings {
            assert_interval(s);
            assert!(
                s.rating_low < s.rating_high,
                "{}: degenerate interval",
                s.identity
            );
            assert_eq!((s.battles, s.decided, s.ties), (20, 20, 0));
        }
        let (a, b, c) = (
            find(&standings, "A"),
            find(&standings, "B"),
            find(&standings, "C"),
        );
        assert_eq!((a.wins, a.losses), (17, 3));
        assert_eq!((b.wins, b.losses), (10, 10));
        assert_eq!((c.wins, c.losses), (3, 17));
        assert_eq!(a.win_rate, 17.0 / 20.0);
        assert_eq!(b.win_rate, 0.5);
        assert_eq!(c.win_rate, 3.0 / 20.0);
        // Centred: the geometric mean strength is rating 1000.
        let mean = standings.iter().map(|s| s.rating).sum::<f64>() / 3.0;
        assert!((mean - BASE_RATING).abs() < 1e-9, "mean rating {mean}");
    }

    #[test]
    fn ties_only_give_equal_ratings() {
        let out: Vec<BattleOutcome> = (0..4)
            .map(|i| outcome(i, BattleType::Qa, &["X", "Y"], Verdict::Tie))
            .collect();
        let standings = compute(&out, &Options::default()).standings;
        assert_eq!(standings.len(), 2);
        let (x, y) = (find(&standings, "X"), find(&standings, "Y"));
        assert!((x.rating - y.rating).abs() < 1e-6);
        assert!((x.rating - BASE_RATING).abs() < 1e-6);
        for s in [x, y] {
            assert_interval(s);
            assert_eq!(
                (s.battles, s.decided, s.wins, s.ties, s.losses),
                (4, 4, 0, 4, 0)
            );
            assert_eq!(s.win_rate, 0.0);
        }
        // Equal ratings fall through to the name.
        assert_eq!(standings[0].identity, "X");
    }

    #[test]
    fn ties_in_a_three_way_battle_are_pairwise_draws() {
        let out = vec![
            outcome(0, BattleType::Qa, &["A", "B", "C"], Verdict::Tie),
            outcome(1, BattleType::Qa, &["A", "B"], Verdict::Winner(0)),
        ];
        let tally = tally(3, ratings_input(&out).iter().map(Vec::as_slice));
        assert_eq!(tally.pairs, vec![(0, 1, 2.0), (0, 2, 1.0), (1, 2, 1.0)]);
        assert_eq!(tally.wins, vec![2.0, 1.0, 1.0]);
    }

    /// The decided battles' comparisons, players indexed by sorted name.
    fn ratings_input(out: &[BattleOutcome]) -> Vec<Vec<Comparison>> {
        let names: BTreeSet<&Player> = out
            .iter()
            .flat_map(|o| o.entries.iter().map(|e| &e.player))
            .collect();
        let index: BTreeMap<&Player, usize> =
            names.into_iter().enumerate().map(|(i, p)| (p, i)).collect();
        out.iter()
            .filter_map(|o| {
                let ids: Vec<usize> = o.entries.iter().map(|e| index[&e.player]).collect();
                let lengths: Vec<Option<u64>> = o.entries.iter().map(|e| e.output_chars).collect();
                decision(o.entries.len(), o.verdict(Source::Both))
                    .map(|d| comparisons(&ids, &lengths, d))
            })
            .collect()
    }

    #[test]
    fn undefeated_player_is_finite() {
        let mut out = Vec::new();
        duels(&mut out, "Champ", "Chump", 6, 6);
        let standings = compute(&out, &Options::default()).standings;
        let (champ, chump) = (find(&standings, "Champ"), find(&standings, "Chump"));
        assert_eq!(standings[0].identity, "Champ");
        assert!(champ.rating > chump.rating);
        assert_interval(champ);
        assert_interval(chump);
        assert_eq!((champ.wins, champ.losses, champ.win_rate), (6, 0, 1.0));
        assert_eq!((chump.wins, chump.losses, chump.win_rate), (0, 6, 0.0));
    }

    #[test]
    fn type_filter_excludes_other_types() {
        let mut out = vec![outcome(0, BattleType::Qa, &["A", "B"], Verdict::Winner(0))];
        for i in 1..4 {
            out.push(outcome(
                i,
                BattleType::Coding,
                &["A", "B", "C"],
                Verdict::Winner(1),
            ));
        }
        let qa = compute(
            &out,
            &Options {
                battle_type: Some(BattleType::Qa),
                ..Options::default()
            },
        )
        .standings;
        assert_eq!(
            qa.iter().map(|s| s.identity.as_str()).collect::<Vec<_>>(),
            ["A", "B"]
        );
        assert_eq!((qa[0].battles, qa[0].wins, qa[1].losses), (1, 1, 1));

        let coding = compute(
            &out,
            &Options {
                battle_type: Some(BattleType::Coding),
                ..Options::default()
            },
        )
        .standings;
        assert_eq!(coding.len(), 3);
        assert_eq!(coding[0].identity, "B");
        assert_eq!(find(&coding, "A").battles, 3);
        assert_eq!(find(&coding, "A").losses, 3);

        let all = compute(&out, &Options::default()).standings;
        assert_eq!(find(&all, "A").battles, 4);
    }

    #[test]
    fn same_input_same_output() {
        let mut out = known_set();
        out.push(outcome(
            99,
            BattleType::Qa,
            &["A", "B", "C", "D"],
            Verdict::Tie,
        ));
        let options = Options::default();
        assert_eq!(compute(&out, &options), compute(&out, &options));
    }

    #[test]
    fn swapping_names_swaps_results() {
        let build = |a: &str, c: &str| {
            let mut out = Vec::new();
            duels(&mut out, a, "B", 7, 10);
            duels(&mut out, "B", c, 6, 9);
            duels(&mut out, a, c, 3, 4);
            out.push(outcome(50, BattleType::Qa, &[a, "B", c], Verdict::Tie));
            out.push(outcome(
                51,
                BattleType::Qa,
                &[c, a, "B"],
                Verdict::Winner(0),
            ));
            out
        };
        let plain = compute(&build("A", "C"), &Options::default()).standings;
        let swapped = compute(&build("C", "A"), &Options::default()).standings;
        for (x, y) in [("A", "C"), ("B", "B"), ("C", "A")] {
            let (s, t) = (find(&plain, x), find(&swapped, y));
            assert_eq!(s.rank, t.rank, "{x} vs {y}");
            assert!(
                (s.rating - t.rating).abs() < 1e-6,
                "{x}: {} vs {}",
                s.rating,
                t.rating
            );
            assert!((s.rating_low - t.rating_low).abs() < 1e-6, "{x} low");
            assert!((s.rating_high - t.rating_high).abs() < 1e-6, "{x} high");
            assert_eq!(
                (s.battles, s.decided, s.wins, s.ties, s.losses),
                (t.battles, t.decided, t.wins, t.ties, t.losses)
            );
        }
    }

    #[test]
    fn medians_skip_missing_figures() {
        let figures = [
            (Some(100), Some(10.0)),
            (None, Some(40.0)),
            (Some(300), Some(20.0)),
            (Some(200), Some(30.0)),
            (None, None),
        ];
        let out: Vec<BattleOutcome> = figures
            .iter()
            .enumerate()
            .map(|(i, &(duration_ms, tokens_per_sec))| BattleOutcome {
                battle_id: format!("b{i}"),
                battle_type: BattleType::Qa,
                entries: vec![
                    Entry {
                        player: player("Fast"),
                        duration_ms,
                        tokens_per_sec,
                        cost_usd: None,
                        output_chars: None,
                    },
                    entry("Blank"),
                ],
                user: Verdict::None,
                judge: Verdict::None,
            })
            .collect();
        let standings = compute(&out, &Options::default()).standings;
        let fast = find(&standings, "Fast");
        assert_eq!(fast.median_duration_ms, Some(200.0)); // 100, 200, 300
        assert_eq!(fast.median_tokens_per_sec, Some(25.0)); // (20 + 30) / 2
        let blank = find(&standings, "Blank");
        assert_eq!(
            (blank.median_duration_ms, blank.median_tokens_per_sec),
            (None, None)
        );

        assert_eq!(median(vec![3.0, 1.0]), Some(2.0));
        assert_eq!(median(vec![5.0]), Some(5.0));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn undecided_players_still_appear_at_the_prior() {
        let mut out = known_set();
        out.push(outcome(90, BattleType::Qa, &["A", "Newbie"], Verdict::None));
        out.push(outcome(91, BattleType::Qa, &["Solo"], Verdict::Winner(0)));
        out.push(outcome(
            92,
            BattleType::Qa,
            &["B", "Lost"],
            Verdict::Winner(5),
        ));
        let standings = compute(&out, &Options::default()).standings;
        assert_eq!(standings.len(), 6);
        for name in ["Newbie", "Solo", "Lost"] {
            let s = find(&standings, name);
            // The prior's interval: one virtual draw says little.
            assert_eq!(s.rating, 1000.0);
            assert!((s.rating_low + s.rating_high - 2000.0).abs() < 1e-9);
            assert!(s.rating_high - s.rating > 600.0, "{}", s.rating_high);
            assert_eq!(
                (s.battles, s.decided, s.wins, s.losses, s.win_rate),
                (1, 0, 0, 0, 0.0)
            );
        }
        let a = find(&standings, "A");
        assert_eq!((a.battles, a.decided, a.wins), (21, 20, 17));
        // The undecided battles change nothing about the others' ratings.
        let plain = compute(&known_set(), &Options::default()).standings;
        for s in &plain {
            let t = find(&standings, &s.identity);
            assert_eq!(
                (s.rating, s.rating_low, s.rating_high),
                (t.rating, t.rating_low, t.rating_high)
            );
        }
    }

    /// Two players, `a_wins` of `games` won by A: A's rating interval,
    /// read as A's probability of beating B (their gap is twice A's
    /// distance from 1000), beside the Wilson interval of A's win rate.
    fn two_player(a_wins: usize, games: usize) -> ((f64, f64), (f64, f64), Standing) {
        let mut out = Vec::new();
        duels(&mut out, "A", "B", a_wins, games);
        let standings = compute(&out, &Options::default()).standings;
        let a = find(&standings, "A").clone();
        let win =
            |rating: f64| 1.0 / (1.0 + 10f64.powf(-2.0 * (rating - BASE_RATING) / RATING_SCALE));
        let implied = (win(a.rating_low), win(a.rating_high));
        (implied, wilson(a_wins as u32, games as u32), a)
    }

    /// Small samples are a personal leaderboard's normal case: 5 of 5
    /// battles won gives an interval, not a point (a bootstrap over
    /// battles that all end the same way resamples the same data and
    /// collapsed to one); 50 of 50 a narrower one; and with two players the
    /// interval agrees with the Wilson interval of the win rate.
    #[test]
    fn intervals_stay_honest_when_every_battle_ends_the_same_way() {
        let mut widths = Vec::new();
        for (wins, games) in [(5, 5), (50, 50), (3, 6), (0, 5)] {
            let (implied, wilson, a) = two_player(wins, games);
            assert_interval(&a);
            let width = a.rating_high - a.rating_low;
            assert!(
                width > 50.0,
                "{wins}/{games}: [{}, {}]",
                a.rating_low,
                a.rating_high
            );
            // The implied interval covers (nearly all of) Wilson's...
            let overlap = implied.1.min(wilson.1) - implied.0.max(wilson.0);
            let shorter = (implied.1 - implied.0).min(wilson.1 - wilson.0);
            assert!(
                overlap >= 0.9 * shorter,
                "{wins}/{games}: implied {implied:?}, Wilson {wilson:?}"
            );
            // ...and is not much wider.
            let ratio = (implied.1 - implied.0) / (wilson.1 - wilson.0);
            assert!(
                (0.8..=2.5).contains(&ratio),
                "{wins}/{games}: implied {implied:?} is {ratio:.2}× Wilson {wilson:?}"
            );
            widths.push(width);
        }
        // 3 of 6: an even record reads about as Wilson does.
        let (implied, wilson, _) = two_player(3, 6);
        assert!((implied.0 - wilson.0).abs() < 0.03 && (implied.1 - wilson.1).abs() < 0.03);
        // Fewer battles, wider intervals.
        assert!(
            widths[0] > widths[1],
            "5 of 5 {} vs 50 of 50 {}",
            widths[0],
            widths[1]
        );
    }

    /// A beats B, B beats C, C beats A: nobody is better, and everyone's
    /// interval is the same, wide and not a point.
    #[test]
    fn a_three_player_cycle_gives_equal_wide_intervals() {
        let out = vec![
            outcome(0, BattleType::Qa, &["A", "B"], Verdict::Winner(0)),
            outcome(1, BattleType::Qa, &["B", "C"], Verdict::Winner(0)),
            outcome(2, BattleType::Qa, &["C", "A"], Verdict::Winner(0)),
        ];
        let standings = compute(&out, &Options::default()).standings;
        for s in &standings {
            assert_interval(s);
            assert!(
                (s.rating - BASE_RATING).abs() < 1e-6,
                "{}: {}",
                s.identity,
                s.rating
            );
            let (low, high) = (s.rating_low - BASE_RATING, s.rating_high - BASE_RATING);
            assert!(
                (low + high).abs() < 1e-6,
                "centred on 1000: [{low}, {high}]"
            );
            assert!(high > 200.0, "three battles say little: ±{high}");
            assert!((high - (standings[0].rating_high - BASE_RATING)).abs() < 1e-6);
        }
        // Ten times the battles, the same cycle: narrower.
        let many: Vec<BattleOutcome> = (0..10)
            .flat_map(|k| {
                out.iter().map(move |o| BattleOutcome {
                    battle_id: format!("{}-{k}", o.battle_id),
                    ..o.clone()
                })
            })
            .collect();
        let narrow = compute(&many, &Options::default()).standings;
        assert!(
            narrow[0].rating_high - narrow[0].rating_low
                < standings[0].rating_high - standings[0].rating_low
        );
    }

    /// A player whose battles were all undecided carries the prior's 1000,
    /// with the prior's own (wide) interval, never a point.
    #[test]
    fn a_player_without_a_decided_battle_gets_the_priors_interval() {
        let mut out = known_set();
        out.push(outcome(99, BattleType::Qa, &["A", "Z"], Verdict::None));
        let standings = compute(&out, &Options::default()).standings;
        let z = find(&standings, "Z");
        assert_eq!(z.rating, BASE_RATING);
        assert!(
            z.rating_low < 600.0 && z.rating_high > 1400.0,
            "[{}, {}]",
            z.rating_low,
            z.rating_high
        );
        for s in &standings {
            assert_interval(s);
            assert!(
                s.rating_low < s.rating && s.rating < s.rating_high,
                "{}",
                s.identity
            );
        }
        assert!(compute(&[], &Options::default()).standings.is_empty());
    }

    #[test]
    fn csv_header_quoting_and_rows() {
        let mut out = Vec::new();
        duels(&mut out, "Acme, \"Labs\"", "Plain", 2, 3);
        out[0].entries[0].duration_ms = Some(1500);
        out[0].entries[0].tokens_per_sec = Some(12.5);
        let standings = compute(&out, &Options::default()).standings;
        let csv = to_csv(&standings);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), standings.len() + 1);
        assert_eq!(
            lines[0],
            "rank,identity,model,rating,rating_low,rating_high,battles,decided,wins,ties,losses,\
             win_rate,median_duration_ms,median_tokens_per_sec,rating_lc"
        );
        assert!(csv.ends_with('\n'));
        let acme = find(&standings, "Acme, \"Labs\"");
        let expected = format!(
            "1,\"Acme, \"\"Labs\"\"\",m,{:.1},{:.1},{:.1},3,3,2,0,1,0.667,1500,12.5,{:.1}",
            acme.rating,
            acme.rating_low,
            acme.rating_high,
            acme.rating_lc.unwrap()
        );
        assert_eq!(lines[1], expected);
        assert!(lines[2].starts_with("2,Plain,m,"));
        let plain = find(&standings, "Plain").rating_lc.unwrap();
        let tail = format!(",3,3,1,0,2,0.333,,,{plain:.1}");
        assert!(lines[2].ends_with(&tail), "{}", lines[2]);
        // An unknown length: the last column is empty.
        out[1].entries[1].output_chars = None;
        let csv = to_csv(&compute(&out, &Options::default()).standings);
        for line in csv.lines().skip(1) {
            assert!(line.ends_with(','), "{line}");
        }
        assert_eq!(csv_field("a\nb"), "\"a\nb\"");
        assert_eq!(csv_field("plain"), "plain");
    }

    #[test]
    fn fit_matches_expected_wins() {
        // Expected wins (real + against the anchor) equal observed wins
        // (real + the prior's half) at the maximum: the likelihood equations.
        let mut out = known_set();
        out.push(outcome(
            60,
            BattleType::Qa,
            &["A", "B", "C", "D"],
            Verdict::Tie,
        ));
        out.push(outcome(61, BattleType::Qa, &["D", "C"], Verdict::Winner(0)));
        let battles = ratings_input(&out);
        let tally = tally(4, battles.iter().map(Vec::as_slice));
        let p = fit(&tally);
        let mut expected: Vec<f64> = p.iter().map(|pi| pi / (pi + ANCHOR_STRENGTH)).collect();
        for &(i, j, games) in &tally.pairs {
            expected[i] += games * p[i] / (p[i] + p[j]);
            expected[j] += games * p[j] / (p[i] + p[j]);
        }
        for (i, (e, w)) in expected.iter().zip(&tally.wins).enumerate() {
            assert!(
                (e - (w + PRIOR_WINS)).abs() < 1e-6,
                "player {i}: expected {e}, observed {w} + ½"
            );
        }
        // And the public ratings are these strengths on the log scale.
        let standings = compute(&out, &Options::default()).standings;
        let (a, d) = (find(&standings, "A"), find(&standings, "D"));
        let gap = RATING_SCALE * (p[0] / p[3]).log10();
        assert!((a.rating - d.rating - gap).abs() < 1e-9);
    }

    /// `battles` four-player battles among `players`, the winner drawn by
    /// fixed strengths (deterministic), every eighth a tie.
    fn crowd(players: usize, battles: usize) -> Vec<BattleOutcome> {
        let mut rng = StdRng::seed_from_u64(3);
        let names: Vec<String> = (0..players).map(|i| format!("p{i:03}")).collect();
        (0..battles)
            .map(|id| {
                let mut four: Vec<&str> = Vec::new();
                while four.len() < 4 {
                    let name = names[rng.gen_range(0..players)].as_str();
                    if !four.contains(&name) {
                        four.push(name);
                    }
                }
                // Lower-numbered players win more often.
                let verdict = if id % 8 == 0 {
                    Verdict::Tie
                } else {
                    let best = (0..4).min_by_key(|&k| four[k]).unwrap_or(0);
                    Verdict::Winner(if rng.gen_bool(0.6) {
                        best
                    } else {
                        rng.gen_range(0..4)
                    })
                };
                outcome(id, BattleType::Qa, &four, verdict)
            })
            .collect()
    }

    #[test]
    fn many_battles_reach_the_maximum_well_within_the_iteration_limit() {
        // Plain MM ran out of iterations here before reaching it: the
        // common scale moved by ~1/games per step.
        let out = crowd(40, 4_000);
        let battles = ratings_input(&out);
        let tally = tally(40, battles.iter().map(Vec::as_slice));
        let p = fit(&tally);
        let mut expected: Vec<f64> = p.iter().map(|pi| pi / (pi + ANCHOR_STRENGTH)).collect();
        for &(i, j, games) in &tally.pairs {
            expected[i] += games * p[i] / (p[i] + p[j]);
            expected[j] += games * p[j] / (p[i] + p[j]);
        }
        for (i, (e, w)) in expected.iter().zip(&tally.wins).enumerate() {
            let observed = w + PRIOR_WINS;
            assert!(
                ((e - observed) / observed).abs() < 1e-7,
                "player {i}: expected {e}, observed {observed}"
            );
        }
        // The prior's best common factor is 1 there.
        assert!((prior_scale(p.iter().copied()) - 1.0).abs() < 1e-9);
        // And the strongest player is first.
        let standings = compute(&out, &Options::default()).standings;
        assert_eq!(standings[0].identity, "p000");
    }

    #[test]
    fn prior_scale_solves_the_prior_equation() {
        for p in [
            vec![1.0, 1.0],
            vec![0.01, 3.0, 40.0],
            vec![1e-12, 1e9],
            vec![],
        ] {
            let c = prior_scale(p.iter().copied());
            let lhs: f64 = p.iter().map(|pi| c * pi / (c * pi + ANCHOR_STRENGTH)).sum();
            assert!(
                (lhs - p.len() as f64 * PRIOR_WINS).abs() < 1e-9,
                "{p:?}: c = {c}, {lhs}"
            );
        }
        assert_eq!(prior_scale([1.0, 1.0].into_iter()), 1.0);
    }

    #[test]
    fn groups_are_the_players_connected_by_games() {
        let pairs = [(0, 3, 1.0), (1, 4, 2.0), (3, 5, 1.0), (4, 6, 1.0)];
        assert_eq!(connected(8, &pairs), vec![vec![0, 3, 5], vec![1, 4, 6]]);
        assert!(connected(3, &[]).is_empty());
    }

    #[test]
    fn separate_groups_each_reach_the_maximum() {
        // Q&A personas and Coding backends never meet: two groups, each
        // with its own scale against the anchor.
        let mut out = crowd(20, 2_000);
        let coding: Vec<BattleOutcome> = crowd(20, 2_000)
            .into_iter()
            .map(|mut o| {
                o.battle_id.push('c');
                for e in &mut o.entries {
                    e.player.model = "coder".into();
                }
                o
            })
            .collect();
        out.extend(coding);
        let battles = ratings_input(&out);
        let tally = tally(40, battles.iter().map(Vec::as_slice));
        assert_eq!(connected(40, &tally.pairs).len(), 2);
        let p = fit(&tally);
        let mut expected: Vec<f64> = p.iter().map(|pi| pi / (pi + ANCHOR_STRENGTH)).collect();
        for &(i, j, games) in &tally.pairs {
            expected[i] += games * p[i] / (p[i] + p[j]);
            expected[j] += games * p[j] / (p[i] + p[j]);
        }
        for (e, w) in expected.iter().zip(&tally.wins) {
            assert!(((e - (w + PRIOR_WINS)) / (w + PRIOR_WINS)).abs() < 1e-7);
        }
    }

    #[test]
    fn a_dense_and_a_sparse_tally_agree() {
        let out = crowd(12, 300);
        let battles = ratings_input(&out);
        let dense = tally(12, battles.iter().map(Vec::as_slice));
        let sparse = tally(DENSE_TALLY_PLAYERS + 1, battles.iter().map(Vec::as_slice));
        assert_eq!(dense.pairs, sparse.pairs);
        assert_eq!(dense.wins, sparse.wins[..12]);
        assert_eq!(dense.played, sparse.played[..12]);
    }

    #[test]
    fn cost_per_win_is_known_only_when_every_cost_is() {
        let outcomes: Vec<BattleOutcome> = (0..2)
            .map(|i| outcome(i, BattleType::Qa, &["A", "B"], Verdict::Winner(0)))
            .collect();
        let standings = compute(&outcomes, &Options::default()).standings;
        let a = standings.iter().find(|s| s.identity == "A").unwrap();
        let b = standings.iter().find(|s| s.identity == "B").unwrap();
        assert!((a.cost_usd.unwrap() - 0.02).abs() < 1e-12);
        assert!((a.cost_per_win_usd.unwrap() - 0.01).abs() < 1e-12);
        assert_eq!(b.cost_per_win_usd, None, "no win, no cost per win");
        let mut unknown = outcomes.clone();
        unknown[0].entries[0].cost_usd = None;
        let a = compute(&unknown, &Options::default())
            .standings
            .into_iter()
            .find(|s| s.identity == "A")
            .unwrap();
        assert_eq!((a.cost_usd, a.cost_per_win_usd), (None, None));
    }

    /// A two-entry Qa battle with the user's and the judge's verdicts.
    fn judged(id: usize, names: &[&str], user: Verdict, judge: Verdict) -> BattleOutcome {
        BattleOutcome {
            judge,
            ..outcome(id, BattleType::Qa, names, user)
        }
    }

    #[test]
    fn source_parses_prints_and_serialises() {
        for source in Source::ALL {
            assert_eq!(source.as_str().parse::<Source>(), Ok(source));
            assert_eq!(Source::parse(source.as_str()), Ok(source));
            assert_eq!(source.to_string(), source.as_str());
            let json = serde_json::to_string(&source).unwrap();
            assert_eq!(json, format!("\"{}\"", source.as_str()));
            assert_eq!(serde_json::from_str::<Source>(&json).unwrap(), source);
        }
        assert_eq!(Source::default(), Source::Both);
        assert_eq!(Options::default().source, Source::Both);
        let error = "Judge".parse::<Source>().unwrap_err();
        assert!(error.contains("`Judge`"), "{error}");
        assert!(error.contains("mine, judge, both"), "{error}");
    }

    #[test]
    fn the_source_picks_the_counted_verdict() {
        // A–B: the user backs A, the judge B. A–C: only the judge chose, C.
        let mut out: Vec<BattleOutcome> = (0..6)
            .map(|i| {
                let (names, a) = if i % 2 == 0 {
                    (["A", "B"], 0)
                } else {
                    (["B", "A"], 1)
                };
                judged(i, &names, Verdict::Winner(a), Verdict::Winner(1 - a))
            })
            .collect();
        for i in 6..10 {
            out.push(judged(i, &["A", "C"], Verdict::None, Verdict::Winner(1)));
        }
        let with = |source| {
            compute(
                &out,
                &Options {
                    source,
                    ..Options::default()
                },
            )
            .standings
        };
        let names = |s: &[Standing]| s.iter().map(|s| s.identity.clone()).collect::<Vec<_>>();

        let mine = with(Source::Mine);
        assert_eq!(names(&mine), ["A", "C", "B"]);
        let (a, c) = (find(&mine, "A"), find(&mine, "C"));
        assert_eq!((a.battles, a.decided, a.wins, a.losses), (10, 6, 6, 0));
        assert_eq!((c.decided, c.rating), (0, BASE_RATING));

        let judge = with(Source::Judge);
        assert_eq!(judge.last().unwrap().identity, "A");
        let a = find(&judge, "A");
        assert_eq!((a.decided, a.wins, a.losses), (10, 0, 10));
        assert_eq!(find(&judge, "B").wins, 6);
        assert_eq!(find(&judge, "C").wins, 4);

        // The user where given (A over B), else the judge (C over A).
        let both = with(Source::Both);
        assert_eq!(names(&both), ["C", "A", "B"]);
        let a = find(&both, "A");
        assert_eq!((a.decided, a.wins, a.losses), (10, 6, 4));
        assert!(find(&mine, "A").rating > a.rating);
        assert!(find(&judge, "A").rating < a.rating);
        assert_eq!(compute(&out, &Options::default()).standings, both);

        // The pick itself; a winner out of range counts as no choice.
        let battle = judged(0, &["A", "B"], Verdict::Winner(2), Verdict::Tie);
        assert_eq!(battle.verdict(Source::Mine), Verdict::Winner(2));
        assert_eq!(battle.verdict(Source::Judge), Verdict::Tie);
        assert_eq!(battle.verdict(Source::Both), Verdict::Tie);
        let battle = judged(0, &["A", "B"], Verdict::Tie, Verdict::Winner(0));
        assert_eq!(battle.verdict(Source::Both), Verdict::Tie);
    }

    #[test]
    fn agreement_counts_the_battles_where_both_chose() {
        let (w0, w1, w2) = (Verdict::Winner(0), Verdict::Winner(1), Verdict::Winner(2));
        let abc = ["A", "B", "C"];
        let mut out = Vec::new();
        let mut add = |names: &[&str], user, judge| {
            let id = out.len();
            out.push(judged(id, names, user, judge));
        };
        for _ in 0..5 {
            add(&abc, w0, w0); // the same winner
        }
        for _ in 0..2 {
            add(&abc, Verdict::Tie, Verdict::Tie); // ties agree with ties
        }
        add(&abc, w1, w2); // different winners
        add(&abc, Verdict::Tie, w0); // a tie against a winner
        add(&abc, Verdict::None, w1); // only the judge chose
                                      // None of these count: a lone entry, a winner out of range, or
                                      // another battle type.
        add(&["A"], w0, w0);
        add(&abc, Verdict::Winner(3), w0);
        let mut coding = judged(99, &abc, w0, w0);
        coding.battle_type = BattleType::Coding;
        out.push(coding);

        let qa = Options {
            battle_type: Some(BattleType::Qa),
            ..Options::default()
        };
        for source in Source::ALL {
            let agreement = compute(
                &out,
                &Options {
                    source,
                    ..qa.clone()
                },
            )
            .agreement;
            assert_eq!((agreement.both_chose, agreement.agreed), (9, 7), "{source}");
            assert_eq!(agreement.rate, Some(7.0 / 9.0));
            assert_eq!(agreement.rate_ci, Some(wilson(7, 9)));
        }
        // Without the type filter, the Coding battle agrees too.
        let all = compute(&out, &Options::default()).agreement;
        assert_eq!((all.both_chose, all.agreed), (10, 8));

        let none = compute(&known_set(), &Options::default()).agreement;
        assert_eq!(
            none,
            Agreement {
                both_chose: 0,
                agreed: 0,
                rate: None,
                rate_ci: None
            }
        );
    }

    /// Gives each battle's winner an answer of `long` characters and every
    /// other entry `short` (ties: everyone `short`).
    fn longer_wins(out: &mut [BattleOutcome], long: u64, short: u64) {
        for o in out {
            let winner = o.verdict(Source::Both);
            for (k, e) in o.entries.iter_mut().enumerate() {
                e.output_chars = Some(if winner == Verdict::Winner(k) {
                    long
                } else {
                    short
                });
            }
        }
    }

    #[test]
    fn length_control_discounts_wins_that_length_explains() {
        // The known set, but every winner wrote three times as much: the
        // players differ only in how often they were the longer one.
        let mut out = known_set();
        longer_wins(&mut out, 3000, 1000);
        let board = compute(&out, &Options::default());
        let gamma = board.length_coefficient.unwrap();
        assert!(gamma > 5.0, "γ = {gamma}");
        let spread = |r: &dyn Fn(&Standing) -> f64| {
            let (a, c) = (find(&board.standings, "A"), find(&board.standings, "C"));
            r(a) - r(c)
        };
        let plain = spread(&|s| s.rating);
        let controlled = spread(&|s| s.rating_lc.unwrap());
        assert!(plain > 300.0, "plain spread {plain}");
        // Length explains every verdict, so only γ's prior keeps it finite
        // (about 10); what is left of the spread (about a fifth) is what
        // that finite γ leaves unexplained.
        assert!(
            controlled.abs() < plain / 4.0,
            "controlled spread {controlled} against {plain}"
        );
        // Centred like the plain ratings.
        let mean = board
            .standings
            .iter()
            .map(|s| s.rating_lc.unwrap())
            .sum::<f64>()
            / 3.0;
        assert!((mean - BASE_RATING).abs() < 1e-9, "mean {mean}");

        // Reversed (the shorter answer always won): as clearly negative.
        let mut short = known_set();
        longer_wins(&mut short, 1000, 3000);
        let reversed = compute(&short, &Options::default()).length_coefficient;
        assert!((reversed.unwrap() + gamma).abs() < 1e-6, "{reversed:?}");
    }

    #[test]
    fn equal_lengths_leave_the_rating_alone() {
        // Every answer is 1000 characters: `d` is 0 throughout, so γ stays
        // 0 and the fit is the plain one, prior and all.
        let mut out = known_set();
        out.push(outcome(
            60,
            BattleType::Qa,
            &["A", "B", "C", "D"],
            Verdict::Tie,
        ));
        out.push(outcome(61, BattleType::Qa, &["D", "E"], Verdict::Winner(0)));
        out.push(outcome(62, BattleType::Qa, &["A", "F"], Verdict::None));
        let board = compute(&out, &Options::default());
        assert_eq!(board.length_coefficient, Some(0.0));
        for s in &board.standings {
            let lc = s.rating_lc.unwrap();
            assert!(
                (lc - s.rating).abs() < 1e-5,
                "{}: {lc} vs {}",
                s.identity,
                s.rating
            );
        }
        assert_eq!(find(&board.standings, "F").rating_lc, Some(BASE_RATING));
        // Empty answers are equal lengths too.
        for o in &mut out {
            for e in &mut o.entries {
                e.output_chars = Some(0);
            }
        }
        assert_eq!(compute(&out, &Options::default()), board);
    }

    /// Random answer lengths (200–5000 characters); with `bias`, each
    /// battle's winner is handed the longest answer with that probability.
    fn random_lengths(out: &mut [BattleOutcome], bias: f64) {
        let mut rng = StdRng::seed_from_u64(11);
        for o in out {
            for e in &mut o.entries {
                e.output_chars = Some(rng.gen_range(200..=5000));
            }
            if let Verdict::Winner(w) = o.verdict(Source::Both) {
                if rng.gen_bool(bias) {
                    let longest = (0..o.entries.len())
                        .max_by_key(|&k| o.entries[k].output_chars)
                        .unwrap_or(w);
                    let l = o.entries[longest].output_chars;
                    o.entries[longest].output_chars = o.entries[w].output_chars;
                    o.entries[w].output_chars = l;
                }
            }
        }
    }

    #[test]
    fn lengths_unrelated_to_the_outcome_change_little() {
        let mut out = crowd(20, 4_000);
        random_lengths(&mut out, 0.0);
        let board = compute(&out, &Options::default());
        let gamma = board.length_coefficient.unwrap();
        assert!(gamma.abs() < 0.25, "γ = {gamma}");
        let by_lc = |s: &[Standing]| {
            let mut s = s.to_vec();
            s.sort_by(|a, b| b.rating_lc.unwrap().total_cmp(&a.rating_lc.unwrap()));
            s.into_iter().map(|s| s.identity).collect::<Vec<_>>()
        };
        let lc_order = by_lc(&board.standings);
        assert_eq!(lc_order[0], board.standings[0].identity);
        for (k, s) in board.standings.iter().enumerate() {
            let at = lc_order.iter().position(|n| *n == s.identity).unwrap();
            assert!(
                at.abs_diff(k) <= 2,
                "{} is {k} by rating, {at} by rating_lc",
                s.identity
            );
            let gap = s.rating_lc.unwrap() - s.rating;
            assert!(gap.abs() < 15.0, "{}: {gap}", s.identity);
        }
    }

    #[test]
    fn an_unknown_length_skips_the_length_control() {
        let mut out = known_set();
        out[3].entries[1].output_chars = None;
        let board = compute(&out, &Options::default());
        assert_eq!(board.length_coefficient, None);
        assert!(board.standings.iter().all(|s| s.rating_lc.is_none()));
        // Its rating and records do not care.
        let plain = compute(&known_set(), &Options::default());
        for (s, t) in board.standings.iter().zip(&plain.standings) {
            assert_eq!((s.rating, s.wins), (t.rating, t.wins));
        }
        // An unknown length in a battle without comparisons is no matter.
        let mut out = known_set();
        out.push(outcome(70, BattleType::Qa, &["A", "B"], Verdict::None));
        out[30].entries[0].output_chars = None;
        assert!(compute(&out, &Options::default())
            .length_coefficient
            .is_some());
        // No comparisons at all: nothing to fit.
        let undecided = vec![outcome(0, BattleType::Qa, &["A", "B"], Verdict::None)];
        let board = compute(&undecided, &Options::default());
        assert_eq!(board.length_coefficient, None);
        assert!(board.standings.iter().all(|s| s.rating_lc.is_none()));
        assert_eq!(compute(&[], &Options::default()).length_coefficient, None);
    }

    #[test]
    fn the_length_fit_reaches_the_maximum_in_few_steps() {
        // At the maximum the gradient of the log-posterior is zero,
        // computed here from scratch.
        let mut out = crowd(30, 3_000);
        random_lengths(&mut out, 0.5);
        let battles = ratings_input(&out);
        let fit = fit_length(30, battles.iter().map(Vec::as_slice)).unwrap();
        assert!(fit.steps <= 20, "{} steps", fit.steps);
        assert!(fit.coefficient > 0.5, "γ = {}", fit.coefficient);
        let sigma = |z: f64| 1.0 / (1.0 + (-z).exp());
        let mut beta = [0.0; 30];
        for (&i, &b) in fit.players.iter().zip(&fit.strengths) {
            beta[i] = b;
        }
        let gamma = fit.coefficient;
        let mut gradient: Vec<f64> = beta.iter().map(|&b| 0.5 - sigma(b)).collect();
        let mut gradient_gamma = -LENGTH_PRIOR_PRECISION * gamma;
        for c in battles.iter().flatten() {
            let d = c.length_gap.unwrap();
            let r = c.score - sigma(beta[c.a] - beta[c.b] + gamma * d);
            gradient[c.a] += r;
            gradient[c.b] -= r;
            gradient_gamma += r * d;
        }
        for (i, g) in gradient.iter().enumerate() {
            assert!(g.abs() < 1e-8, "player {i}: {g}");
        }
        assert!(gradient_gamma.abs() < 1e-8, "γ: {gradient_gamma}");
    }

    #[test]
    fn solve_solves_a_positive_definite_system() {
        // Lower triangle only; the upper one is ignored.
        let a = vec![4.0, 99.0, 99.0, 2.0, 5.0, 99.0, -1.0, 1.0, 3.0];
        let full = [[4.0, 2.0, -1.0], [2.0, 5.0, 1.0], [-1.0, 1.0, 3.0]];
        let b = [1.0, -2.0, 0.5];
        let x = solve(a, &b).unwrap();
        for (row, bi) in full.iter().zip(b) {
            let ax: f64 = row.iter().zip(&x).map(|(a, x)| a * x).sum();
            assert!((ax - bi).abs() < 1e-12, "{ax} vs {bi}");
        }
        assert_eq!(solve(vec![1.0, 0.0, 2.0, 1.0], &[1.0, 1.0]), None);
    }

    /// `cargo test --release -p arena-domain --lib leaderboard -- --ignored
    /// --nocapture`: 10,000 four-entry battles.
    #[test]
    #[ignore]
    fn ten_thousand_battles_time() {
        let mut out = crowd(40, 10_000);
        random_lengths(&mut out, 0.3);
        let battles = ratings_input(&out);
        let start = std::time::Instant::now();
        let fit = fit_length(40, battles.iter().map(Vec::as_slice)).unwrap();
        let fit_time = start.elapsed();
        let comparisons: usize = battles.iter().map(Vec::len).sum();
        println!(
            "length fit: {comparisons} comparisons, {} steps, γ = {:.3}, {fit_time:?}",
            fit.steps, fit.coefficient
        );
        let start = std::time::Instant::now();
        let board = compute(&out, &Options::default());
        println!(
            "compute: {:?} (γ = {:?})",
            start.elapsed(),
            board.length_coefficient
        );
        if !cfg!(debug_assertions) {
            assert!(fit_time.as_millis() < 100, "{fit_time:?}");
        }
    }
}
