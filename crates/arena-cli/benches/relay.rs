//! Streaming relay: 6 contestants each streaming 50,000 tokens as fast as
//! the scripted server can send them, all in the cloud lane so they stream
//! at once. Reported:
//! - engine: aggregate deltas/s from the server through the engine to an
//!   event sink (all output accounted for), in-process;
//! - the same battle through the `arena` CLI, with the CLI's peak RSS.
//!
//! Baseline in the same run: a bare reqwest client reading the same six
//! streams (no engine), to show what share of the ceiling the engine keeps.
//! Targets: >= 100,000 deltas/s; CLI peak RSS <= 60 MB.
//!
//! The CLI's peak RSS is `wait4`'s `ru_maxrss`, which Linux takes as the
//! larger of the program's own peak and the peak of the image it replaced
//! at `exec`, i.e. this bench's own memory at the spawn (the child shares
//! or copies it until then). So the CLI rounds run first, while the bench
//! is still small, and the bench's own peak at each spawn is printed: the
//! figure means the CLI's peak only while it is larger.
//!
//! Run: cargo bench -p arena-cli --bench relay

#[path = "common.rs"]
mod common;

use std::pin::pin;
use std::process::Command;
use std::time::Instant;

use arena_core::battle::ContestantSpec;
use arena_core::EventKind;
use arena_testserver::ModelScript;
use futures::StreamExt;

const CONTESTANTS: usize = 6;
const TOKENS: usize = 50_000;
const ROUNDS: usize = 3;

fn models() -> Vec<String> {
    (1..=CONTESTANTS).map(|i| format!("fast{i}")).collect()
}

/// The ceiling: six raw streaming requests read and split into SSE events.
async fn baseline(bench: &common::Bench) -> f64 {
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", bench.cloud.base_url());
    let started = Instant::now();
    let tasks = models().into_iter().map(|m| {
        let (client, url) = (client.clone(), url.clone());
        tokio::spawn(async move {
            let body = serde_json::json!({"model": m, "stream": true, "messages": [{"role": "user", "content": "go"}]});
            let mut stream = client.post(&url).json(&body).send().await.expect("send").bytes_stream();
            let mut events = 0usize;
            while let Some(chunk) = stream.next().await {
                events += chunk.expect("chunk").windows(2).filter(|w| w == b"\n\n").count();
            }
            events
        })
    });
    let events: usize = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.expect("task"))
        .sum();
    assert!(events >= CONTESTANTS * TOKENS);
    (CONTESTANTS * TOKENS) as f64 / started.elapsed().as_secs_f64()
}

async fn engine_round(bench: &common::Bench, engine: &arena_core::Engine, round: usize) -> f64 {
    let request = bench.qa(
        &format!("relay {round}"),
        models()
            .into_iter()
            .map(|model| ContestantSpec {
                identity: "debugger".into(),
                model,
            })
            .collect(),
    );
    let battle = engine.create_battle(request).await.expect("create");
    let sink = {
        let (engine, id) = (engine.clone(), battle.id.clone());
        tokio::spawn(async move {
            // Each contestant's text as a viewer rebuilds it: its deltas,
            // or its folded answer when the viewer replays the journal
            // after the answer ended (it fell behind the live stream).
            let mut bytes: std::collections::HashMap<String, usize> = Default::default();
            let mut events = pin!(engine.subscribe(&id, 0));
            while let Some(event) = events.next().await {
                let event = event.expect("event");
                let who = event.contestant_id.unwrap_or_default();
                match event.kind {
                    EventKind::Output { text } => *bytes.entry(who).or_default() += text.len(),
                    EventKind::Folded { output, .. } => {
                        bytes.insert(who, output.len());
                    }
                    EventKind::BattleStatus { status } if status.is_terminal() => break,
                    _ => {}
                }
            }
            bytes.values().sum::<usize>()
        })
    };
    let started = Instant::now();
    let done = engine.run_battle(&battle.id).await.expect("run");
    let secs = started.elapsed().as_secs_f64();
    let sunk = sink.await.expect("sink");
    let expected: usize = done
        .contestants
        .iter()
        .map(|c| c.output.as_deref().unwrap_or("").len())
        .sum();
    assert_eq!(sunk, expected, "the sink must see every byte");
    for c in &done.contestants {
        assert_eq!(c.completion_tokens(), TOKENS as u64, "{}", c.model);
    }
    (CONTESTANTS * TOKENS) as f64 / secs
}

trait Tokens {
    fn completion_tokens(&self) -> u64;
}

impl Tokens for arena_core::Contestant {
    fn completion_tokens(&self) -> u64 {
        self.benchmark.completion_tokens.unwrap_or(0)
    }
}

/// Runs the battle through the CLI binary; returns (deltas/s, peak RSS in MB).
fn cli_round(bench: &common::Bench, round: usize) -> (f64, f64) {
    let mut cmd = Command::new(common::arena_bin());
    cmd.args(["battle", "run", "--type", "qa", "--json", "--project"])
        .arg(bench.project())
        .args(["--prompt", &format!("cli relay {round}")])
        .env("ARENA_CONFIG", bench.config_path())
        .env("ARENA_DATA_DIR", bench.data())
        .stdout(std::process::Stdio::null());
    for m in models() {
        cmd.args(["-c", &format!("debugger@{m}")]);
    }
    let started = Instant::now();
    // Reaped by wait4 below, which also reports the peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("spawn arena");
    let (status, rss_kb) = wait_with_rusage(child.id());
    let secs = started.elapsed().as_secs_f64();
    assert!(status == 0, "arena exited with {status}");
    ((CONTESTANTS * TOKENS) as f64 / secs, rss_kb as f64 / 1024.0)
}

/// This process's peak resident set so far (`VmHWM`), in MB.
fn own_peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// Waits for a child and returns its exit status and peak RSS (KiB).
fn wait_with_rusage(pid: u32) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid as i32, "wait4 failed");
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

#[tokio::main]
async fn main() {
    let bench = common::Bench::new().await;
    for m in models() {
        bench.cloud.set_model(&m, ModelScript::tokens(TOKENS));
    }
    // The CLI first: its peak RSS cannot read below this process's (see
    // the module's docs), which the engine rounds would raise.
    let mut cli = Vec::new();
    let mut rss = Vec::new();
    for round in 0..ROUNDS {
        let bench = &bench;
        let own = own_peak_mb();
        let (rate, mb) = tokio::task::block_in_place(|| cli_round(bench, round));
        println!(
            "cli round {round}: {rate:.0} deltas/s end to end (incl. start-up), peak RSS {mb:.1} MB \
             (the bench's own peak at the spawn: {own:.1} MB)"
        );
        cli.push(rate);
        rss.push(mb);
    }
    let engine = bench.engine();
    let mut base = Vec::new();
    let mut through = Vec::new();
    for round in 0..ROUNDS {
        let b = baseline(&bench).await;
        let e = engine_round(&bench, &engine, round).await;
        println!(
            "round {round}: raw client {b:.0} deltas/s, engine {e:.0} deltas/s ({:.2} of raw)",
            e / b
        );
        base.push(b);
        through.push(e);
    }
    let (b, e) = (common::median(base), common::median(through));
    println!(
        "relay: engine median {e:.0} deltas/s (target >= 100000), raw client {b:.0} deltas/s, ratio {:.2}",
        e / b
    );
    println!(
        "relay: CLI median {:.0} deltas/s, peak RSS max {:.1} MB (target <= 60 MB)",
        common::median(cli),
        rss.iter().cloned().fold(0.0, f64::max)
    );
}
