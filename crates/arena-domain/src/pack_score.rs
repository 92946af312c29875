//! A pack run's scores, with their uncertainty.
//!
//! A pack run gives, for each task × contestant, a few runs, each
//! resolved, unresolved or an error ([`TaskRun`]). [`score`] turns them
//! into per-contestant figures ([`ContestantScore`]) and paired
//! comparisons ([`PairScore`]):
//!
//! - **Errors are left out.** A run that could not judge the change (no
//!   report, a suite that never started, a crash, a timeout) is counted in
//!   `errors` and nowhere else: it is neither a success nor a failure. A
//!   task whose every run errored is left out of that contestant's scores
//!   (`tasks_all_errors`).
//! - **pass@1** is the mean over tasks of each task's success rate `c/n`
//!   (`n` scored runs, `c` resolved): each task weighs the same whatever
//!   its number of runs.
//! - **pass@k** (at least one of `k` runs succeeds) is Chen et al.'s
//!   unbiased estimator `1 − C(n−c, k) / C(n, k)` per task, computed as the
//!   product `1 − ∏_{i=n−c+1}^{n} (1 − k/i)` (no factorials, no overflow),
//!   averaged over the tasks with at least `k` scored runs. Tasks with
//!   fewer are left out of that `k`; `pass_at_tasks` says how many
//!   counted.
//! - **pass^k** (all `k` runs succeed, τ-bench's reliability) is
//!   `C(c, k) / C(n, k) = ∏_{i=0}^{k−1} (c−i)/(n−i)` per task, averaged the
//!   same way.
//! - **The 95 % interval of pass@1** is a cluster bootstrap over tasks:
//!   tasks are drawn with replacement (each with all its runs), pass@1 is
//!   recomputed, and the 2.5th and 97.5th percentiles of
//!   [`ScoreOptions::resamples`] such means, widened about the estimate by
//!   [`small_sample_factor`] (Student's t and the `T − 1` divisor, which a
//!   plain bootstrap misses on few tasks), are the interval. With fewer
//!   than [`MIN_BOOTSTRAP_TASKS`] tasks, or when every task has the same
//!   rate (all solved, all failed), the bootstrap has nothing to vary and
//!   would read as certain; the interval is then Wilson's score interval
//!   over tasks (the rates summed as successes, the tasks as trials), so
//!   3 of 3 tasks solved reads [0.44, 1], never [1, 1].
//! - **Pairs** compare two contestants on the tasks both have scores for:
//!   the mean of the per-task differences of rates, with a paired cluster
//!   bootstrap interval (the same tasks drawn for both). Where that
//!   degenerates (too few tasks, every difference the same) the interval
//!   is the difference of the two Wilson intervals (`low_a − high_b`,
//!   `high_a − low_b`), wider than any paired interval. A pair is
//!   separable when its interval leaves out 0.
//!
//! Everything is deterministic: the bootstrap draws from a small PRNG
//! seeded by [`ScoreOptions::seed`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::leaderboard::Player;

/// With fewer tasks than this, the bootstrap is not used for an interval
/// (a handful of tasks resampled gives an interval far too narrow).
pub const MIN_BOOTSTRAP_TASKS: usize = 5;

/// z for a two-sided 95 % interval.
const Z95: f64 = 1.959_963_984_540_054;

/// How one run of one task ended, for scoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    Resolved,
    Unresolved,
    /// An error of the run, not a failure of the contestant: left out of
    /// the scores, counted in `errors`.
    Error,
}

/// One run of one task by one contestant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRun {
    pub task: String,
    /// How the pack run names the contestant (its key: runs with the same
    /// key are the same contestant), usually `identity@model`.
    pub contestant: String,
    pub identity: String,
    pub model: String,
    /// The run's number within its task × contestant (1, 2, …).
    pub run: u32,
    pub outcome: RunOutcome,
    /// The part of the FAIL_TO_PASS tests that passed, when known.
    pub fail_to_pass_fraction: Option<f64>,
    /// What the run cost, when known.
    pub cost_usd: Option<f64>,
    /// How long the run took (the agent and the verifier).
    pub seconds: f64,
}

/// How the scores are computed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreOptions {
    /// The PRNG's seed for the bootstrap.
    pub seed: u64,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
}

impl Default for ScoreOptions {
    fn default() -> ScoreOptions {
        ScoreOptions {
            seed: 0x5eed_a7e4_a000_0040,
            resamples: 2000,
        }
    }
}

/// How an interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// Percentiles of a bootstrap over tasks (runs kept with their task).
    ClusterBootstrap,
    /// Wilson's score interval over tasks (the bootstrap degenerated).
    Wilson,
    /// The difference of two Wilson intervals (a pair's bootstrap
    /// degenerated).
    WilsonDifference,
    /// No task to score.
    None,
}

/// A 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub method: IntervalMethod,
}

impl Interval {
    pub fn covers(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// One contestant's scores on a pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContestantScore {
    pub contestant: String,
    pub identity: String,
    pub model: String,
    /// Tasks with at least one scored (not errored) run.
    pub tasks: usize,
    /// Tasks whose every run was an error: left out of the scores.
    pub tasks_all_errors: usize,
    /// Every run, errors included.
    pub runs: usize,
    pub resolved: usize,
    pub errors: usize,
    /// k -> pass@k (Chen's estimator, averaged over tasks with ≥ k scored
    /// runs).
    pub pass_at: BTreeMap<u32, f64>,
    /// k -> how many tasks pass@k and pass^k average.
    pub pass_at_tasks: BTreeMap<u32, usize>,
    pub pass_at_1_interval: Interval,
    /// k -> pass^k (all k runs succeed).
    pub pass_hat_k: BTreeMap<u32, f64>,
    /// Mean over tasks of each task's mean FAIL_TO_PASS fraction (scored
    /// runs that know it).
    pub fail_to_pass_fraction: Option<f64>,
    /// What all its runs cost, errors included (the known costs).
    pub cost_usd: Option<f64>,
    /// `cost_usd` over the resolved runs.
    pub cost_per_solve_usd: Option<f64>,
    /// All its runs' seconds over the resolved runs.
    pub seconds_per_solve: Option<f64>,
}

/// Two contestants compared on the tasks both have scores for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairScore {
    pub a: String,
    pub b: String,
    /// Tasks both have scores for.
    pub tasks: usize,
    /// Mean over those tasks of (a's rate − b's rate).
    pub difference: f64,
    pub interval: Interval,
    /// The interval leaves out 0.
    pub separable: bool,
    /// In words: "A ahead of B by 0.40 (0.10 to 0.70) over 12 tasks" or
    /// "A and B not separable yet: …".
    pub summary: String,
}

/// A pack run's scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackScores {
    pub contestants: Vec<ContestantScore>,
    pub pairs: Vec<PairScore>,
    /// What a reader should know about how these were computed (tasks left
    /// out of a k, errors left out).
    pub notes: Vec<String>,
}

/// Scores with the default options (a fixed seed, 2000 resamples).
pub fn score(runs: &[TaskRun]) -> PackScores {
    score_with(runs, ScoreOptions::default())
}

/// Per task, a contestant's scored runs `n` and resolved `c`, its known
/// FAIL_TO_PASS fractions, and its errors.
#[derive(Debug, Default, Clone)]
struct TaskTally {
    n: u32,
    c: u32,
    errors: u32,
    f2p: Vec<f64>,
}

impl TaskTally {
    fn rate(&self) -> f64 {
        f64::from(self.c) / f64::from(self.n)
    }
}

struct Contestant<'a> {
    identity: &'a str,
    model: &'a str,
    tasks: BTreeMap<&'a str, TaskTally>,
    runs: usize,
    cost: Option<f64>,
    seconds: f64,
}

/// Scores the runs. See the module's documentation for every rule.
pub fn score_with(runs: &[TaskRun], options: ScoreOptions) -> PackScores {
    let mut by_contestant: BTreeMap<&str, Contestant<'_>> = BTreeMap::new();
    for r in runs {
        let c = by_contestant
            .entry(r.contestant.as_str())
            .or_insert_with(|| Contestant {
                identity: &r.identity,
                model: &r.model,
                tasks: BTreeMap::new(),
                runs: 0,
                cost: None,
                seconds: 0.0,
            });
        c.runs += 1;
        if let Some(cost) = r.cost_usd.filter(|x| x.is_finite()) {
            c.cost = Some(c.cost.unwrap_or(0.0) + cost);
        }
        if r.seconds.is_finite() && r.seconds > 0.0 {
            c.seconds += r.seconds;
        }
        let t = c.tasks.entry(r.task.as_str()).or_default();
        match r.outcome {
            RunOutcome::Error => t.errors += 1,
            RunOutcome::Resolved | RunOutcome::Unresolved => {
                t.n += 1;
                if r.outcome == RunOutcome::Resolved {
                    t.c += 1;
                }
                if let Some(f) = r.fail_to_pass_fraction.filter(|f| f.is_finite()) {
                    t.f2p.push(f.clamp(0.0, 1.0));
                }
            }
        }
    }

    let mut rng = SplitMix64::new(options.seed);
    let mut notes = Vec::new();
    let mut contestants = Vec::new();
    for (key, c) in &by_contestant {
        let scored: Vec<&TaskTally> = c.tasks.values().filter(|t| t.n > 0).collect();
        let errors: usize = c.tasks.values().map(|t| t.errors as usize).sum();
        let resolved: usize = scored.iter().map(|t| t.c as usize).sum();
        let tasks_all_errors = c.tasks.len() - scored.len();
        let max_n = scored.iter().map(|t| t.n).max().unwrap_or(0);
        let mut pass_at = BTreeMap::new();
        let mut pass_hat_k = BTreeMap::new();
        let mut pass_at_tasks = BTreeMap::new();
        for k in 1..=max_n {
            let counted: Vec<&&TaskTally> = scored.iter().filter(|t| t.n >= k).collect();
            let m = counted.len();
            pass_at.insert(
                k,
                counted.iter().map(|t| pass_at_k(t.n, t.c, k)).sum::<f64>() / m as f64,
            );
            pass_hat_k.insert(
                k,
                counted.iter().map(|t| pass_hat(t.n, t.c, k)).sum::<f64>() / m as f64,
            );
            pass_at_tasks.insert(k, m);
            if m < scored.len() {
                notes.push(format!(
                    "{key}: pass@{k} and pass^{k} average {m} of {} tasks (the others have fewer than {k} scored runs)",
                    scored.len()
                ));
            }
        }
        if errors > 0 {
            notes.push(format!(
                "{key}: {errors} run(s) were errors of the run and are left out of the scores"
            ));
        }
        let rates: Vec<f64> = scored.iter().map(|t| t.rate()).collect();
        let interval = rate_interval(&rates, options, &mut rng);
        let f2p: Vec<f64> = scored
            .iter()
            .filter(|t| !t.f2p.is_empty())
            .map(|t| t.f2p.iter().sum::<f64>() / t.f2p.len() as f64)
            .collect();
        let per_solve = |total: f64| (resolved > 0).then(|| total / resolved as f64);
        contestants.push(ContestantScore {
            contestant: key.to_string(),
            identity: c.identity.to_string(),
            model: c.model.to_string(),
            tasks: scored.len(),
            tasks_all_errors,
            runs: c.runs,
            resolved,
            errors,
            pass_at,
            pass_at_tasks,
            pass_at_1_interval: interval,
            pass_hat_k,
            fail_to_pass_fraction: (!f2p.is_empty())
                .then(|| f2p.iter().sum::<f64>() / f2p.len() as f64),
            cost_usd: c.cost,
            cost_per_solve_usd: c.cost.and_then(per_solve),
            seconds_per_solve: per_solve(c.seconds),
        });
    }

    let keys: Vec<&str> = by_contestant.keys().copied().collect();
    let mut pairs = Vec::new();
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i + 1..] {
            pairs.push(pair_score(
                a,
                &by_contestant[a],
                b,
                &by_contestant[b],
                options,
                &mut rng,
            ));
        }
    }
    PackScores {
        contestants,
        pairs,
        notes,
    }
}

/// Chen et al.'s unbiased pass@k for one task: `1 − C(n−c, k)/C(n, k)`,
/// as `1 − ∏_{i=n−c+1}^{n} (1 − k/i)`. `k` must be ≤ `n`.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if n == 0 || k == 0 || k > n {
        return 0.0;
    }
    if n - c < k {
        return 1.0;
    }
    let mut product = 1.0;
    for i in (n - c + 1)..=n {
        product *= 1.0 - f64::from(k) / f64::from(i);
    }
    1.0 - product
}

/// pass^k for one task: `C(c, k)/C(n, k) = ∏_{i=0}^{k−1} (c−i)/(n−i)`, the
/// chance that k runs drawn without replacement all succeeded.
pub fn pass_hat(n: u32, c: u32, k: u32) -> f64 {
    if n == 0 || k > n {
        return 0.0;
    }
    if c < k {
        return 0.0;
    }
    let mut product = 1.0;
    for i in 0..k {
        product *= f64::from(c - i) / f64::from(n - i);
    }
    product
}

/// Wilson's 95 % score interval for `successes` (may be fractional: summed
/// rates) of `trials`.
pub fn wilson_interval(successes: f64, trials: f64) -> (f64, f64) {
    if trials <= 0.0 {
        return (0.0, 1.0);
    }
    let p = (successes / trials).clamp(0.0, 1.0);
    let z2 = Z95 * Z95;
    let denominator = 1.0 + z2 / trials;
    let centre = (p + z2 / (2.0 * trials)) / denominator;
    let half = Z95 * ((p * (1.0 - p) / trials) + z2 / (4.0 * trials * trials)).sqrt() / denominator;
    // At the edges the bound is exact (0 or 1), not a rounding away from it.
    let low = if p == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let high = if p == 1.0 {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (low, high)
}

/// Whether the bootstrap over these values has nothing to vary (or too
/// little to go on).
fn degenerate(values: &[f64]) -> bool {
    values.len() < MIN_BOOTSTRAP_TASKS || values.iter().all(|v| (v - values[0]).abs() < 1e-12)
}

/// The 95 % interval of the mean of per-task rates.
fn rate_interval(rates: &[f64], options: ScoreOptions, rng: &mut SplitMix64) -> Interval {
    if rates.is_empty() {
        return Interval {
            low: 0.0,
            high: 1.0,
            method: IntervalMethod::None,
        };
    }
    if degenerate(rates) {
        let (low, high) = wilson_interval(rates.iter().sum(), rates.len() as f64);
        return Interval {
            low,
            high,
            method: IntervalMethod::Wilson,
        };
    }
    let (low, high) = bootstrap_mean(rates, options.resamples, 0.0, rng);
    Interval {
        low,
        high,
        method: IntervalMethod::ClusterBootstrap,
    }
}

/// The 2.5th and 97.5th percentiles of the mean of `values` resampled with
/// replacement `resamples` times, widened about the mean by
/// [`small_sample_factor`] and kept within `[floor, 1]`.
fn bootstrap_mean(
    values: &[f64],
    resamples: usize,
    floor: f64,
    rng: &mut SplitMix64,
) -> (f64, f64) {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let resamples = resamples.max(100);
    let mut means = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut sum = 0.0;
        for _ in 0..n {
            sum += values[rng.below(n)];
        }
        means.push(sum / n as f64);
    }
    means.sort_by(f64::total_cmp);
    let factor = small_sample_factor(n);
    let low = mean - (mean - quantile(&means, 0.025)) * factor;
    let high = mean + (quantile(&means, 0.975) - mean) * factor;
    (low.max(floor), high.min(1.0))
}

/// How much wider than the plain percentile bootstrap the interval is
/// made: `√(T/(T−1)) · t₀.₉₇₅(T−1) / z₀.₉₇₅` for `T` tasks. The bootstrap
/// of a mean spreads like the sample's standard deviation with divisor
/// `T` (not `T − 1`) and like a normal (not Student's t), so alone it
/// covers less than 95 % on the few tasks a pack has (about 93 % on 30
/// tasks, less on 10). The factor is 1.06 at 30 tasks, 1.22 at 10, 1.58
/// at 5, and tends to 1.
pub fn small_sample_factor(tasks: usize) -> f64 {
    if tasks < 2 {
        return f64::INFINITY;
    }
    let t = tasks as f64;
    (t / (t - 1.0)).sqrt() * student_t_975(tasks - 1) / Z95
}

/// Student's t 97.5th percentile for `df` degrees of freedom: a table to
/// 30, then the Cornish–Fisher series in 1/df (error below 1e-4).
fn student_t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if (1..=30).contains(&df) {
        return TABLE[df - 1];
    }
    let z = Z95;
    let d = df as f64;
    z + (z.powi(3) + z) / (4.0 * d)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        + (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / (384.0 * d.powi(3))
}

/// The q-quantile of sorted values (linear between neighbours).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let t = pos - lo as f64;
    sorted[lo] * (1.0 - t) + sorted[hi] * t
}

fn pair_score(
    a: &str,
    ca: &Contestant<'_>,
    b: &str,
    cb: &Contestant<'_>,
    options: ScoreOptions,
    rng: &mut SplitMix64,
) -> PairScore {
    let mut rates_a = Vec::new();
    let mut rates_b = Vec::new();
    for (task, ta) in &ca.tasks {
        let Some(tb) = cb.tasks.get(task) else {
            continue;
        };
        if ta.n > 0 && tb.n > 0 {
            rates_a.push(ta.rate());
            rates_b.push(tb.rate());
        }
    }
    let tasks = rates_a.len();
    let diffs: Vec<f64> = rates_a.iter().zip(&rates_b).map(|(x, y)| x - y).collect();
    let difference = if tasks == 0 {
        0.0
    } else {
        diffs.iter().sum::<f64>() / tasks as f64
    };
    let interval = if tasks == 0 {
        Interval {
            low: -1.0,
            high: 1.0,
            method: IntervalMethod::None,
        }
    } else if degenerate(&diffs) {
        let (la, ha) = wilson_interval(rates_a.iter().sum(), tasks as f64);
        let (lb, hb) = wilson_interval(rates_b.iter().sum(), tasks as f64);
        Interval {
            low: la - hb,
            high: ha - lb,
            method: IntervalMethod::WilsonDifference,
        }
    } else {
        let (low, high) = bootstrap_mean(&diffs, options.resamples, -1.0, rng);
        Interval {
            low,
            high,
            method: IntervalMethod::ClusterBootstrap,
        }
    };
    let separable = tasks > 0 && (interval.low > 0.0 || interval.high < 0.0);
    let summary = if tasks == 0 {
        format!("{a} and {b} share no scored task")
    } else if separable {
        let (ahead, behind, by, low, high) = if difference >= 0.0 {
            (a, b, difference, interval.low, interval.high)
        } else {
            (b, a, -difference, -interval.high, -interval.low)
        };
        format!("{ahead} ahead of {behind} by {by:.2} ({low:.2} to {high:.2}) over {tasks} tasks")
    } else {
        format!(
            "{a} and {b} not separable yet: the difference {difference:+.2} has an interval ({:.2} to {:.2}) that covers 0, over {tasks} tasks",
            interval.low, interval.high
        )
    };
    PairScore {
        a: a.to_string(),
        b: b.to_string(),
        tasks,
        difference,
        interval,
        separable,
        summary,
    }
}

/// Who did better on one task between two contestants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DuelOutcome {
    AWins,
    BWins,
    Tie,
}

/// One task seen as a match between two contestants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskDuel {
    pub task: String,
    pub a: Player,
    pub b: Player,
    pub outcome: DuelOutcome,
}

/// Each task as pairwise matches, for the leaderboard to take as a source
/// of its own: for every two contestants with scored runs on a task, the
/// one that resolved it at the higher rate (resolved over scored runs)
/// wins; equal rates tie (both always or both never included). Errors are
/// left out as in [`score`]. Tasks and contestants come in name order.
pub fn pairwise_outcomes(runs: &[TaskRun]) -> Vec<TaskDuel> {
    // task -> contestant key -> (player, tally)
    let mut tasks: BTreeMap<&str, BTreeMap<&str, (Player, TaskTally)>> = BTreeMap::new();
    for r in runs {
        let entry = tasks
            .entry(r.task.as_str())
            .or_default()
            .entry(r.contestant.as_str())
            .or_insert_with(|| (Player::new(&r.identity, &r.model), TaskTally::default()));
        match r.outcome {
            RunOutcome::Error => entry.1.errors += 1,
            RunOutcome::Resolved => {
                entry.1.n += 1;
                entry.1.c += 1;
            }
            RunOutcome::Unresolved => entry.1.n += 1,
        }
    }
    let mut duels = Vec::new();
    for (task, contestants) in &tasks {
        let scored: Vec<&(Player, TaskTally)> =
            contestants.values().filter(|(_, t)| t.n > 0).collect();
        for (i, (pa, ta)) in scored.iter().map(|x| (&x.0, &x.1)).enumerate() {
            for (pb, tb) in scored[i + 1..].iter().map(|x| (&x.0, &x.1)) {
                // Compare c_a/n_a with c_b/n_b exactly, in integers.
                let lhs = u64::from(ta.c) * u64::from(tb.n);
                let rhs = u64::from(tb.c) * u64::from(ta.n);
                let outcome = match lhs.cmp(&rhs) {
                    std::cmp::Ordering::Greater => DuelOutcome::AWins,
                    std::cmp::Ordering::Less => DuelOutcome::BWins,
                    std::cmp::Ordering::Equal => DuelOutcome::Tie,
                };
                duels.push(TaskDuel {
                    task: task.to_string(),
                    a: pa.clone(),
                    b: pb.clone(),
                    outcome,
                });
            }
        }
    }
    duels
}

/// SplitMix64 (Steele, Lea and Flood 2014): a tiny PRNG whose stream is
/// fixed by its seed forever, so the same runs always give the same
/// intervals, whatever version of any crate.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform float in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in [0, n) (Lemire's multiply-shift; the bias for
    /// the n of a pack is below 2^-40).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}
