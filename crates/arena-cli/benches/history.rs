//! The history at scale: 10,000 finished battles of four contestants each
//! (varied prompts, identities and models; answers of ~1.5 KB; two thirds
//! judged, some with no clear winner, some with the user's pick; each
//! answer folded as a battle folds it), written
//! through the store's own API in one transaction. Its size per battle,
//! and the time to open it (in this process). Then, as whole
//! processes of the release `arena` binary over that data directory,
//! several runs each, interleaved: `arena --version` (process start-up, the
//! baseline), the first page of `battle list --json`, searches, a status
//! no battle has (`--status error`: every row read), and
//! `leaderboard --json`. Prints median and p95 per command and the ratio to
//! the baseline's median.
//!
//! ```sh
//! cargo bench -p arena-cli --bench history   # ARENA_BENCH_BATTLES=N (10000), ARENA_BENCH_REPEAT=N (15)
//!
//! With `ARENA_BENCH_BASELINE_BIN=/path/to/arena` (another build, say the
//! commit before a change) every command also runs with that binary,
//! interleaved with this build's runs over the same data, and a second
//! table gives this build's median ÷ the baseline's.
//! ```

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use arena_core::analysis::{Analysis, AnalysisStatus, Outcome};
use arena_core::battle::{
    BattleStatus, BattleType, Benchmark, ContestantStatus, Lane, RunSpec, Winner, WinnerSource,
};
use arena_core::store::{AnswerEnd, NewBattle, NewContestant, Store, DATABASE_FILE};
use common::{arena_bin, Bench};

const IDENTITIES: [&str; 6] = [
    "Debugger",
    "Explainer",
    "Architect",
    "Code Reviewer",
    "Skeptic",
    "Teacher",
];
const MODELS: [(&str, &str); 10] = [
    ("qwen3-8b", "local"),
    ("qwen3-32b", "local"),
    ("llama-3.3-70b", "local"),
    ("gemma-3-27b", "local"),
    ("gpt-4o", "openai"),
    ("gpt-4.1-mini", "openai"),
    ("claude-sonnet-4", "anthropic"),
    ("claude-haiku-4", "anthropic"),
    ("mistral-large", "openrouter"),
    ("deepseek-v3", "openrouter"),
];
const TOPICS: [&str; 20] = [
    "Explain Rust lifetimes to a Python programmer",
    "Write a haiku about lanes and queues",
    "Why is my SQLite query slow without an index",
    "Summarise the CAP theorem with one example",
    "Refactor this function to remove the global state",
    "What does 100% test coverage miss",
    "Compare B-trees and LSM trees for a write-heavy workload",
    "Draft a polite reply declining a meeting",
    "Find the off-by-one error in this binary search",
    "How do I undo the last git commit but keep the changes",
    "Design a rate limiter for a public API",
    "Translate this paragraph into plain English",
    "What is the capital of Australia and why not Sydney",
    "Write a shell one-liner that counts unique IPs in a log",
    "Explain backpressure in async streams",
    "Is it safe to store API keys in environment variables",
    "Propose names for a command-line tool that compares models",
    "Review this SQL migration for locking problems",
    "Explain the difference between a mutex and a semaphore",
    "Outline a talk about benchmarking on noisy machines",
];
const FILLER: &str =
    "Please be concrete, give a short example, and say what you would check first. \
Keep it under three hundred words and mention any trade-off that matters in practice. ";

/// A small deterministic generator (the same data every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Writes `n` finished battles, as runs and analyses would have left them;
/// returns the bytes of the answers' text.
fn seed(store: &Store, n: u64) -> Result<u64, arena_core::store::Error> {
    let mut text = 0u64;
    let mut rng = Lcg(42);
    let start = chrono::Utc::now() - chrono::Duration::days(365);
    // Answers are prose: ~1.5 KB passages of this project's architecture
    // notes, each from its own place (what the database keeps of them is
    // then what it would keep of real answers).
    let prose = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/ARCHITECTURE.md"
    ))
    .expect("docs/ARCHITECTURE.md");
    let words: Vec<&str> = prose.split_inclusive(char::is_whitespace).collect();
    store.transact(|tx| {
        for k in 0..n {
            let id = format!("0190{k:08x}-bench-battle-{k:010}");
            let created = start + chrono::Duration::seconds(k as i64 * 600);
            let topic = TOPICS[rng.next(TOPICS.len() as u64) as usize];
            let prompt = format!(
                "{topic} (#{k}).\n\n{}",
                FILLER.repeat(1 + rng.next(8) as usize)
            );
            // Four distinct (identity, model) pairs.
            let mut picked: Vec<(usize, usize)> = Vec::new();
            while picked.len() < 4 {
                let pair = (
                    rng.next(IDENTITIES.len() as u64) as usize,
                    rng.next(MODELS.len() as u64) as usize,
                );
                if !picked.contains(&pair) {
                    picked.push(pair);
                }
            }
            let battle_type = if rng.next(5) == 0 {
                BattleType::Coding
            } else {
                BattleType::Qa
            };
            tx.insert_battle(&NewBattle {
                id: id.clone(),
                battle_type,
                prompt,
                project: "/home/user/project".into(),
                results_path: format!("/home/user/project/Arena/{id}").into(),
                created_at: created,
                contestants: picked
                    .iter()
                    .enumerate()
                    .map(|(i, &(who, model))| NewContestant {
                        id: format!("{id}-c{i}"),
                        identity: IDENTITIES[who].into(),
                        model: MODELS[model].0.into(),
                        provider: MODELS[model].1.into(),
                        lane: if MODELS[model].1 == "local" {
                            Lane::Local
                        } else {
                            Lane::Cloud
                        },
                        run: RunSpec::default(),
                        label: None,
                    })
                    .collect(),
                base_commit: None,
                check_command: None,
                series: None,
                blind: false,
                tags: Vec::new(),
                machine: None,
                user_name: None,
            })?;
            let finished = created + chrono::Duration::seconds(30);
            for c in tx.contestants(&id)? {
                tx.start_answer(&c, created)?;
                let c = tx.contestant(&c.id)?;
                let failed = rng.next(25) == 0;
                let bench = Benchmark {
                    duration_ms: Some(2_000 + rng.next(20_000)),
                    ttft_ms: Some(100 + rng.next(900)),
                    prompt_tokens: Some(120),
                    completion_tokens: Some(300 + rng.next(500)),
                    tokens_per_sec: Some(10.0 + rng.next(900) as f64 / 10.0),
                    cost_usd: Some(rng.next(500) as f64 / 10_000.0),
                    ..Benchmark::default()
                };
                let (status, error) = if failed {
                    (ContestantStatus::Error, Some("connection reset"))
                } else {
                    (ContestantStatus::Done, None)
                };
                let from = rng.next(words.len() as u64) as usize;
                let answer: String = words.iter().cycle().skip(from).take(230).copied().collect();
                text += answer.len() as u64;
                // As a battle does: its end, text and result file as one marker.
                let path = std::path::PathBuf::from(format!("/results/{id}/{}/result.md", c.id));
                let end = AnswerEnd {
                    status,
                    error,
                    output: &answer,
                    reasoning: "",
                    truncated: false,
                    bench: &bench,
                    result_path: Some(&path),
                };
                tx.end_answer(&c, &end, finished)?;
            }
            tx.finish_battle(&id, BattleStatus::Done, finished)?;
            // Two thirds judged: mostly a winner, some with no clear one.
            if rng.next(3) != 0 {
                let tie = rng.next(8) == 0;
                let winner = (!tie).then(|| format!("{id}-c{}", rng.next(4)));
                let analysis = Analysis {
                    id: format!("{id}-analysis"),
                    battle_id: id.clone(),
                    status: AnalysisStatus::Done,
                    model: "judge".into(),
                    provider: "openai".into(),
                    outcome: Some(if tie {
                        Outcome::NoClearWinner
                    } else {
                        Outcome::Winner
                    }),
                    winner: winner.clone(),
                    ranking: Vec::new(),
                    reasons: BTreeMap::new(),
                    digests: Vec::new(),
                    judge_runs: Vec::new(),
                    error: None,
                    created_at: finished,
                    finished_at: Some(finished),
                    cost_usd: Some(0.002),
                };
                tx.insert_analysis(&analysis)?;
                tx.finish_analysis(&analysis, finished)?;
                if let Some(contestant_id) = winner {
                    let w = Winner {
                        contestant_id,
                        source: WinnerSource::Analysis,
                    };
                    tx.set_winner(&id, Some(&w), finished)?;
                }
            }
            // Now and then the user picks another winner.
            if rng.next(20) == 0 {
                let w = Winner {
                    contestant_id: format!("{id}-c{}", rng.next(4)),
                    source: WinnerSource::User,
                };
                tx.set_winner(&id, Some(&w), finished)?;
            }
        }
        Ok(())
    })?;
    Ok(text)
}

/// One run of `arena ARGS` over the bench's data; its wall time and stdout.
fn run(bench: &Bench, args: &[&str]) -> (Duration, Vec<u8>) {
    run_with(bench, arena_bin(), args)
}

/// `run` with another `arena` binary (a baseline build).
fn run_with(bench: &Bench, bin: &std::path::Path, args: &[&str]) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .env("ARENA_CONFIG", bench.config_path())
        .env("ARENA_DATA_DIR", bench.data())
        .env_remove("RUST_LOG")
        .output()
        .expect("arena runs");
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "arena {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (elapsed, out.stdout)
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Rows of a JSON answer: a list's length, or the leaderboard's standings.
fn json_len(stdout: &[u8]) -> usize {
    serde_json::from_slice::<serde_json::Value>(stdout)
        .ok()
        .and_then(|v| {
            v.as_array()
                .or_else(|| v["standings"].as_array())
                .map(Vec::len)
        })
        .unwrap_or(0)
}

struct Case {
    name: &'static str,
    args: &'static [&'static str],
    /// Target, whole process (ms); none for the baseline.
    target_ms: Option<f64>,
}

#[tokio::main]
async fn main() {
    let battles: u64 = common::setting("ARENA_BENCH_BATTLES", 10_000);
    let repeat: usize = common::setting("ARENA_BENCH_REPEAT", 15);
    let bench = Bench::new().await;
    let seeded = Instant::now();
    let store = Store::open(&bench.data().join(DATABASE_FILE)).expect("store");
    let text = seed(&store, battles).expect("seed");
    drop(store);
    let db_bytes: u64 = std::fs::read_dir(bench.data())
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("arena.db"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    println!(
        "seeded {battles} battles × 4 contestants in {:.1} s ({:.0} MB of database, {:.1} KiB per battle \
         for {:.1} KiB of answers: {:.2}×)",
        seeded.elapsed().as_secs_f64(),
        db_bytes as f64 / 1e6,
        db_bytes as f64 / battles as f64 / 1024.0,
        text as f64 / battles as f64 / 1024.0,
        db_bytes as f64 / text.max(1) as f64
    );
    // Opening it: the schema check and the live journal, as every command
    // and the app do first (in this process, median of `repeat`).
    let mut opens: Vec<f64> = (0..repeat)
        .map(|_| {
            let started = Instant::now();
            let store = Store::open(&bench.data().join(DATABASE_FILE)).expect("store");
            let took = started.elapsed().as_secs_f64() * 1000.0;
            drop(store);
            took
        })
        .collect();
    opens.sort_by(f64::total_cmp);
    println!(
        "opening it: median {:.1} ms, p95 {:.1} ms\n",
        percentile(&opens, 0.5),
        percentile(&opens, 0.95)
    );

    let cases = [
        Case {
            name: "arena --version (start-up)",
            args: &["--version"],
            target_ms: None,
        },
        Case {
            name: "battle list --json (first 50)",
            args: &["battle", "list", "--json"],
            target_ms: Some(200.0),
        },
        Case {
            name: "battle list --search haiku --json",
            args: &["battle", "list", "--search", "haiku", "--json"],
            target_ms: Some(200.0),
        },
        Case {
            name: "battle list --search \"sqlite claude\" --json",
            args: &["battle", "list", "--search", "sqlite claude", "--json"],
            target_ms: Some(200.0),
        },
        Case {
            name: "battle list --search no-such-word --json",
            args: &["battle", "list", "--search", "no-such-word", "--json"],
            target_ms: Some(200.0),
        },
        Case {
            // No battle has it: every row is read (no index on status).
            name: "battle list --status error --json",
            args: &["battle", "list", "--status", "error", "--json"],
            target_ms: Some(200.0),
        },
        Case {
            name: "leaderboard --json",
            args: &["leaderboard", "--json"],
            target_ms: Some(1000.0),
        },
    ];
    // One untimed run each (the file into the page cache), then the runs
    // interleaved so the machine's noise spreads over every command.
    let baseline_bin = std::env::var_os("ARENA_BENCH_BASELINE_BIN").map(std::path::PathBuf::from);
    let mut rows = Vec::new();
    let mut base_times: Vec<Vec<f64>> = vec![Vec::with_capacity(repeat); cases.len()];
    for case in &cases {
        let (_, out) = run(&bench, case.args);
        rows.push((json_len(&out), Vec::with_capacity(repeat)));
        if let Some(bin) = &baseline_bin {
            run_with(&bench, bin, case.args);
        }
    }
    for _ in 0..repeat {
        for ((case, (_, times)), base) in cases.iter().zip(rows.iter_mut()).zip(&mut base_times) {
            times.push(run(&bench, case.args).0.as_secs_f64() * 1000.0);
            if let Some(bin) = &baseline_bin {
                base.push(run_with(&bench, bin, case.args).0.as_secs_f64() * 1000.0);
            }
        }
    }
    let medians: Vec<f64> = rows
        .iter_mut()
        .map(|(_, times)| {
            times.sort_by(f64::total_cmp);
            percentile(times, 0.5)
        })
        .collect();
    let baseline = medians[0];
    println!("{battles} battles, {repeat} runs each (whole processes, release build)\n");
    println!(
        "| command | rows | median | p95 | median ÷ start-up | target | met |\n|---|---|---|---|---|---|---|"
    );
    for ((case, (count, times)), median) in cases.iter().zip(&rows).zip(&medians) {
        let p95 = percentile(times, 0.95);
        let (target, met) = match case.target_ms {
            Some(t) => (
                format!("≤ {t:.0} ms"),
                if p95 <= t {
                    "yes"
                } else if *median <= t {
                    "median only"
                } else {
                    "no"
                },
            ),
            None => ("—".to_string(), "—"),
        };
        println!(
            "| `{}` | {} | {median:.1} ms | {p95:.1} ms | {:.2} | {target} | {met} |",
            case.name,
            count,
            median / baseline
        );
    }
    if baseline_bin.is_some() {
        println!("\n| command | this build | baseline | ÷ baseline |\n|---|---|---|---|");
        for ((case, median), base) in cases.iter().zip(&medians).zip(&mut base_times) {
            base.sort_by(f64::total_cmp);
            let base_median = percentile(base, 0.5);
            println!(
                "| `{}` | {median:.1} ms | {base_median:.1} ms | {:.2} |",
                case.name,
                median / base_median
            );
        }
    }
}
