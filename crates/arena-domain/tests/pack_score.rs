//! Pack scores: pass@k and pass^k against a direct count over subsets,
//! errors left out, intervals that never read as certain, and simulated
//! packs whose true rates are known: how often the interval covers the
//! true rate, and whether known differences are told apart.

use arena_domain::pack_score::{
    pairwise_outcomes, pass_at_k, pass_hat, score, score_with, DuelOutcome, IntervalMethod,
    PackScores, RunOutcome, ScoreOptions, SplitMix64, TaskRun,
};

fn run(task: &str, contestant: &str, n: u32, outcome: RunOutcome) -> TaskRun {
    let (identity, model) = contestant.split_once('@').unwrap_or((contestant, "m"));
    TaskRun {
        task: task.to_string(),
        contestant: contestant.to_string(),
        identity: identity.to_string(),
        model: model.to_string(),
        run: n,
        outcome,
        fail_to_pass_fraction: match outcome {
            RunOutcome::Resolved => Some(1.0),
            RunOutcome::Unresolved => Some(0.0),
            RunOutcome::Error => None,
        },
        cost_usd: Some(0.01),
        seconds: 10.0,
    }
}

/// `c` resolved then `n − c` unresolved runs of a task.
fn runs_of(task: &str, contestant: &str, n: u32, c: u32) -> Vec<TaskRun> {
    (0..n)
        .map(|i| {
            let outcome = if i < c {
                RunOutcome::Resolved
            } else {
                RunOutcome::Unresolved
            };
            run(task, contestant, i + 1, outcome)
        })
        .collect()
}

/// Every k-subset of {0..n} as a bit mask.
fn subsets(n: u32, k: u32) -> Vec<u32> {
    (0u32..(1 << n)).filter(|m| m.count_ones() == k).collect()
}

/// pass@k and pass^k counted directly: over all k-subsets of the n runs
/// (the first c of which succeeded), the share with at least one success
/// and the share with only successes.
fn direct(n: u32, c: u32, k: u32) -> (f64, f64) {
    let all = subsets(n, k);
    let successes = (1u32 << c) - 1;
    let any = all.iter().filter(|m| *m & successes != 0).count();
    let every = all.iter().filter(|m| *m & !successes == 0).count();
    (
        any as f64 / all.len() as f64,
        every as f64 / all.len() as f64,
    )
}

#[test]
fn pass_at_k_and_pass_hat_k_agree_with_counting_subsets() {
    for n in 1..=10 {
        for c in 0..=n {
            for k in 1..=n {
                let (at, hat) = direct(n, c, k);
                assert!(
                    (pass_at_k(n, c, k) - at).abs() < 1e-12,
                    "pass@{k} n={n} c={c}: {} vs {at}",
                    pass_at_k(n, c, k)
                );
                assert!(
                    (pass_hat(n, c, k) - hat).abs() < 1e-12,
                    "pass^{k} n={n} c={c}: {} vs {hat}",
                    pass_hat(n, c, k)
                );
            }
        }
    }
    // Large n: the product form neither overflows nor loses the value.
    let v = pass_at_k(200, 3, 50);
    let direct = 1.0
        - (0..3)
            .map(|i| (150.0 - i as f64) / (200.0 - i as f64))
            .product::<f64>();
    assert!((v - direct).abs() < 1e-12, "{v} vs {direct}");
}

#[test]
fn scores_average_tasks_and_leave_short_tasks_out_of_a_k() {
    let mut runs = Vec::new();
    runs.extend(runs_of("t1", "a@m", 5, 5));
    runs.extend(runs_of("t2", "a@m", 5, 2));
    runs.extend(runs_of("t3", "a@m", 5, 0));
    // t4 has only 3 runs: it counts for k ≤ 3.
    runs.extend(runs_of("t4", "a@m", 3, 1));
    let s = score(&runs);
    let a = &s.contestants[0];
    assert_eq!((a.identity.as_str(), a.model.as_str()), ("a", "m"));
    assert_eq!((a.tasks, a.runs, a.resolved, a.errors), (4, 18, 8, 0));
    let tasks = [(5, 5), (5, 2), (5, 0), (3, 1)];
    for k in 1..=5u32 {
        let counted: Vec<_> = tasks.iter().filter(|(n, _)| *n >= k).collect();
        let at = counted
            .iter()
            .map(|(n, c)| direct(*n, *c, k).0)
            .sum::<f64>()
            / counted.len() as f64;
        let hat = counted
            .iter()
            .map(|(n, c)| direct(*n, *c, k).1)
            .sum::<f64>()
            / counted.len() as f64;
        assert!((a.pass_at[&k] - at).abs() < 1e-12, "pass@{k}");
        assert!((a.pass_hat_k[&k] - hat).abs() < 1e-12, "pass^{k}");
        assert_eq!(a.pass_at_tasks[&k], counted.len());
    }
    // pass@1 is the mean of the task rates, not of the runs.
    let mean_rate = (1.0 + 0.4 + 0.0 + 1.0 / 3.0) / 4.0;
    assert!((a.pass_at[&1] - mean_rate).abs() < 1e-12);
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("pass@4") && n.contains("3 of 4 tasks")),
        "{:?}",
        s.notes
    );
    assert!((a.cost_usd.expect("cost") - 0.18).abs() < 1e-9);
    assert!((a.cost_per_solve_usd.expect("per solve") - 0.18 / 8.0).abs() < 1e-9);
    assert!((a.seconds_per_solve.expect("per solve") - 180.0 / 8.0).abs() < 1e-9);
    assert!((a.fail_to_pass_fraction.expect("f2p") - mean_rate).abs() < 1e-12);
}

#[test]
fn errors_are_counted_and_left_out_never_failures() {
    let mut runs = runs_of("t1", "a@m", 2, 2);
    runs.push(run("t1", "a@m", 3, RunOutcome::Error));
    runs.push(run("t2", "a@m", 1, RunOutcome::Error));
    runs.push(run("t2", "a@m", 2, RunOutcome::Error));
    let s = score(&runs);
    let a = &s.contestants[0];
    assert_eq!(a.errors, 3);
    assert_eq!(a.runs, 5);
    assert_eq!(a.tasks, 1);
    assert_eq!(a.tasks_all_errors, 1);
    // Had the errors counted as failures, pass@1 would be 1/3.
    assert_eq!(a.pass_at[&1], 1.0);
    // Errors still cost money: all five runs are in the cost.
    assert!((a.cost_usd.expect("cost") - 0.05).abs() < 1e-9);
    assert!(s.notes.iter().any(|n| n.contains("3 run(s) were errors")));
}

#[test]
fn three_of_three_solved_is_not_certain() {
    let mut runs = Vec::new();
    for t in ["t1", "t2", "t3"] {
        runs.extend(runs_of(t, "a@m", 3, 3));
    }
    let s = score(&runs);
    let i = s.contestants[0].pass_at_1_interval;
    assert_eq!(i.method, IntervalMethod::Wilson);
    assert_eq!(i.high, 1.0);
    assert!(i.low < 0.5, "{i:?}");
    assert!((i.low - 0.4385).abs() < 1e-3, "{i:?}");
    // Thirty tasks all solved: still not [1, 1], though narrower.
    let mut runs = Vec::new();
    for t in 0..30 {
        runs.extend(runs_of(&format!("t{t}"), "a@m", 2, 2));
    }
    let i = score(&runs).contestants[0].pass_at_1_interval;
    assert_eq!(i.method, IntervalMethod::Wilson);
    assert!(i.low > 0.85 && i.low < 0.9, "{i:?}");
    // Nothing solved: [0, something].
    let mut runs = Vec::new();
    for t in ["t1", "t2", "t3", "t4", "t5", "t6"] {
        runs.extend(runs_of(t, "a@m", 3, 0));
    }
    let i = score(&runs).contestants[0].pass_at_1_interval;
    assert_eq!(i.low, 0.0);
    assert!(i.high > 0.3, "{i:?}");
}

#[test]
fn a_varied_pack_gets_a_bootstrap_interval_around_its_estimate() {
    let mut runs = Vec::new();
    for (t, c) in [5, 4, 0, 2, 5, 1, 3, 0, 5, 2].iter().enumerate() {
        runs.extend(runs_of(&format!("t{t}"), "a@m", 5, *c));
    }
    let s = score(&runs);
    let a = &s.contestants[0];
    let i = a.pass_at_1_interval;
    assert_eq!(i.method, IntervalMethod::ClusterBootstrap);
    assert!(i.low < a.pass_at[&1] && a.pass_at[&1] < i.high, "{i:?}");
    assert!(i.high - i.low > 0.2, "{i:?}");
    // The same runs give the same scores.
    assert_eq!(score(&runs), s);
}

#[test]
fn scores_serialize_with_the_names_the_cli_prints() {
    let mut runs = runs_of("t1", "aider@qwen", 2, 1);
    runs.extend(runs_of("t1", "claude@sonnet", 2, 2));
    let json = serde_json::to_value(score(&runs)).expect("serializes");
    let c = &json["contestants"][0];
    for key in [
        "identity",
        "model",
        "pass_at",
        "pass_at_1_interval",
        "pass_hat_k",
        "resolved",
        "runs",
        "errors",
        "cost_usd",
        "fail_to_pass_fraction",
        "cost_per_solve_usd",
        "seconds_per_solve",
    ] {
        assert!(c.get(key).is_some(), "{key} missing in {c}");
    }
    assert_eq!(c["identity"], "aider");
    assert_eq!(c["pass_at"]["1"], 0.5);
    assert_eq!(c["pass_at"]["2"], 1.0);
    assert!(c["pass_at_1_interval"]["low"].is_number());
    assert!(c["pass_at_1_interval"]["high"].is_number());
    assert_eq!(json["pairs"][0]["a"], "aider@qwen");
    let back: PackScores = serde_json::from_value(json).expect("reads back");
    assert_eq!(back.contestants.len(), 2);
}

#[test]
fn three_tasks_do_not_separate_two_contestants_and_say_so() {
    let mut runs = Vec::new();
    for t in ["t1", "t2", "t3"] {
        runs.extend(runs_of(t, "a@m", 3, 3));
        runs.extend(runs_of(t, "b@m", 3, 0));
    }
    let s = score(&runs);
    let p = &s.pairs[0];
    assert_eq!(p.tasks, 3);
    assert_eq!(p.difference, 1.0);
    assert_eq!(p.interval.method, IntervalMethod::WilsonDifference);
    assert!(!p.separable, "{p:?}");
    assert!(p.summary.contains("not separable yet"), "{}", p.summary);
    assert!(p.summary.contains("covers 0"), "{}", p.summary);
    // Ten such tasks do.
    let mut runs = Vec::new();
    for t in 0..10 {
        runs.extend(runs_of(&format!("t{t}"), "a@m", 3, 0));
        runs.extend(runs_of(&format!("t{t}"), "b@m", 3, 3));
    }
    let p = &score(&runs).pairs[0];
    assert!(p.separable, "{p:?}");
    assert!(
        p.summary.starts_with("b@m ahead of a@m by 1.00 ("),
        "{}",
        p.summary
    );
}

#[test]
fn pairs_use_only_the_tasks_both_ran() {
    let mut runs = Vec::new();
    runs.extend(runs_of("t1", "a@m", 2, 2));
    runs.extend(runs_of("t1", "b@m", 2, 0));
    runs.extend(runs_of("t2", "a@m", 2, 0));
    // b never got a scored run of t2; a never ran t3.
    runs.push(run("t2", "b@m", 1, RunOutcome::Error));
    runs.extend(runs_of("t3", "b@m", 2, 2));
    let p = &score(&runs).pairs[0];
    assert_eq!(p.tasks, 1);
    assert_eq!(p.difference, 1.0);
}

#[test]
fn pairwise_outcomes_compare_rates_per_task() {
    let mut runs = Vec::new();
    runs.extend(runs_of("t1", "a@m", 3, 2));
    runs.extend(runs_of("t1", "b@m", 2, 1)); // 2/3 > 1/2
    runs.extend(runs_of("t2", "a@m", 3, 0));
    runs.extend(runs_of("t2", "b@m", 3, 0)); // both never: tie
    runs.extend(runs_of("t3", "a@m", 4, 2));
    runs.extend(runs_of("t3", "b@m", 2, 1)); // 2/4 = 1/2: tie
    runs.extend(runs_of("t4", "a@m", 1, 0));
    runs.push(run("t4", "b@m", 1, RunOutcome::Error)); // no duel
    runs.extend(runs_of("t5", "a@m", 2, 0));
    runs.extend(runs_of("t5", "b@m", 2, 1));
    let duels = pairwise_outcomes(&runs);
    let got: Vec<(&str, &str, &str, DuelOutcome)> = duels
        .iter()
        .map(|d| {
            (
                d.task.as_str(),
                d.a.identity.as_str(),
                d.b.identity.as_str(),
                d.outcome,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("t1", "a", "b", DuelOutcome::AWins),
            ("t2", "a", "b", DuelOutcome::Tie),
            ("t3", "a", "b", DuelOutcome::Tie),
            ("t5", "a", "b", DuelOutcome::BWins),
        ]
    );
}

// ---------------------------------------------------------------- simulation

/// A standard normal (Box–Muller).
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = rng.next_f64().max(f64::MIN_POSITIVE);
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Gamma(shape, 1) (Marsaglia and Tsang 2000; shape < 1 boosted).
fn gamma(rng: &mut SplitMix64, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = rng.next_f64().max(f64::MIN_POSITIVE);
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u = rng.next_f64().max(f64::MIN_POSITIVE);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

fn beta(rng: &mut SplitMix64, a: f64, b: f64) -> f64 {
    let x = gamma(rng, a);
    let y = gamma(rng, b);
    x / (x + y)
}

/// A simulated pack: `tasks` tasks whose success rates are drawn from
/// Beta(a, b), each run `runs` times by contestant `name`.
fn simulate(
    rng: &mut SplitMix64,
    name: &str,
    tasks: usize,
    runs: u32,
    a: f64,
    b: f64,
) -> Vec<TaskRun> {
    let mut out = Vec::new();
    for t in 0..tasks {
        let p = beta(rng, a, b);
        for r in 0..runs {
            let outcome = if rng.next_f64() < p {
                RunOutcome::Resolved
            } else {
                RunOutcome::Unresolved
            };
            out.push(run(&format!("t{t}"), name, r + 1, outcome));
        }
    }
    out
}

/// How often the pass@1 interval covers the true rate (the mean of the
/// Beta the task rates are drawn from) over `replications` packs.
fn coverage(
    replications: usize,
    resamples: usize,
    tasks: usize,
    (a, b): (f64, f64),
    seed: u64,
) -> f64 {
    let truth = a / (a + b);
    let mut rng = SplitMix64::new(seed);
    let mut covered = 0;
    for rep in 0..replications {
        let runs = simulate(&mut rng, "a@m", tasks, 5, a, b);
        let s = score_with(
            &runs,
            ScoreOptions {
                seed: seed ^ rep as u64,
                resamples,
            },
        );
        if s.contestants[0].pass_at_1_interval.covers(truth) {
            covered += 1;
        }
    }
    covered as f64 / replications as f64
}

#[test]
fn intervals_cover_the_true_rate_near_the_nominal_level() {
    // 5 runs per task; task rates from a moderate Beta(2, 3) and from a
    // U-shaped Beta(0.5, 0.5) (most tasks nearly always or nearly never
    // solved, as agent benchmarks often are); 30 tasks, and 10.
    for (tasks, beta) in [(30, (2.0, 3.0)), (30, (0.5, 0.5)), (10, (2.0, 3.0))] {
        let c = coverage(300, 500, tasks, beta, 40);
        println!(
            "coverage of the 95% pass@1 interval, Beta{beta:?}, {tasks} tasks × 5 runs, 300 packs: {c:.3}"
        );
        assert!(
            (0.90..=0.99).contains(&c),
            "Beta{beta:?}, {tasks} tasks: coverage {c}"
        );
    }
}

/// The numbers in BENCHMARKS.md: `cargo test --release -p arena-domain
/// --test pack_score -- --ignored --nocapture coverage_long`.
#[test]
#[ignore = "long: run for BENCHMARKS.md"]
fn coverage_long() {
    for tasks in [30, 10, 5] {
        for (a, b) in [(2.0, 3.0), (0.5, 0.5), (1.0, 4.0)] {
            let c = coverage(4000, 2000, tasks, (a, b), 2026);
            println!(
                "coverage of the 95% pass@1 interval, Beta({a}, {b}) (true rate {:.2}), {tasks} tasks × 5 runs, 4000 packs, 2000 resamples: {c:.3}",
                a / (a + b)
            );
        }
    }
}

#[test]
fn a_known_difference_is_separated_and_equal_contestants_mostly_are_not() {
    let mut rng = SplitMix64::new(7);
    let reps = 100;
    let options = ScoreOptions {
        seed: 1,
        resamples: 500,
    };
    let mut separated_different = 0;
    let mut separated_equal = 0;
    for _ in 0..reps {
        // 0.3 against 0.7 over 40 tasks, 5 runs each (task rates spread
        // around those means).
        let mut runs = simulate(&mut rng, "weak@m", 40, 5, 3.0, 7.0);
        runs.extend(simulate(&mut rng, "strong@m", 40, 5, 7.0, 3.0));
        let p = &score_with(&runs, options).pairs[0];
        if p.separable && p.summary.starts_with("strong@m ahead of weak@m") {
            separated_different += 1;
        }
        // Two equal contestants, 0.5 each.
        let mut runs = simulate(&mut rng, "one@m", 40, 5, 5.0, 5.0);
        runs.extend(simulate(&mut rng, "two@m", 40, 5, 5.0, 5.0));
        if score_with(&runs, options).pairs[0].separable {
            separated_equal += 1;
        }
    }
    println!(
        "0.3 vs 0.7 separated in {separated_different}/{reps}; 0.5 vs 0.5 separated in {separated_equal}/{reps}"
    );
    assert!(separated_different >= 98, "{separated_different}/{reps}");
    assert!(separated_equal <= 12, "{separated_equal}/{reps}");
}

#[test]
fn the_small_sample_factor_is_as_documented() {
    use arena_domain::pack_score::small_sample_factor;
    for (tasks, want) in [(5, 1.58), (10, 1.22), (30, 1.06)] {
        let f = small_sample_factor(tasks);
        assert!((f - want).abs() < 0.005, "{tasks}: {f}");
    }
    // Past the table (30 degrees of freedom) the series takes over
    // smoothly and the factor falls towards 1.
    let (at31, at32, at1000) = (
        small_sample_factor(31),
        small_sample_factor(32),
        small_sample_factor(1000),
    );
    assert!(
        at31 < small_sample_factor(30) && at32 < at31,
        "{at31} {at32}"
    );
    assert!((at1000 - 1.0).abs() < 0.002, "{at1000}");
    assert!(small_sample_factor(1).is_infinite());
}
