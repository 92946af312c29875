//! Machine-wide lanes under load: two battles started together, each with
//! 3 local + 3 cloud contestants, one local server. Measured from the
//! scripted servers' own request records:
//! - local busy ÷ work: the local server's busy span (first request's
//!   stream start to last one's end) ÷ the sum of its stream times. 1.00
//!   means no idle gap while work waited for it. Target ≤ 1.03.
//! - wall ÷ ideal: the wall time of both battles ÷ max(Σ local stream
//!   times, longest cloud stream). Target ≤ 1.10.
//! - hand-over: the median gap between one local stream's end and the next
//!   one's start — the cost of passing the lane on (giving the ticket back,
//!   the next waiter taking it, its request reaching the server) — and the
//!   longest one (with two processes, the hand-over from one to the other,
//!   which goes through the database).
//!
//! Two set-ups: both battles in one engine (the app, or a series), and two
//! `arena battle run` processes started together (hand-over across
//! processes, through the database).
//!
//! Run: cargo bench -p arena-cli --bench lanes

#[path = "common.rs"]
mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arena_core::battle::ContestantSpec;
use arena_testserver::{ModelScript, RecordedRequest, TestServer};

const ROUNDS: usize = 5;
const LOCAL: [&str; 3] = ["l1", "l2", "l3"];
const CLOUD: [&str; 3] = ["c1", "c2", "c3"];

struct Figures {
    busy_over_work: f64,
    wall_over_ideal: f64,
    handover_ms: f64,
    /// The longest hand-over (across processes: the one between the battles).
    longest_handover_ms: f64,
}

fn streams(server: &TestServer) -> Vec<(Instant, Instant)> {
    let mut v: Vec<(Instant, Instant)> = server
        .requests()
        .iter()
        .filter(|r| r.is_generation())
        .map(|r: &RecordedRequest| {
            (
                r.stream_started_at.expect("start"),
                r.stream_finished_at.expect("end"),
            )
        })
        .collect();
    v.sort();
    v
}

fn figures(bench: &common::Bench, wall: f64) -> Figures {
    let local = streams(&bench.local);
    let cloud = streams(&bench.cloud);
    assert_eq!(local.len(), 6, "six local streams");
    for pair in local.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "two local streams overlapped");
    }
    let work: f64 = local.iter().map(|(s, e)| (*e - *s).as_secs_f64()).sum();
    let span = (local.last().expect("last").1 - local[0].0).as_secs_f64();
    let longest_cloud = cloud
        .iter()
        .map(|(s, e)| (*e - *s).as_secs_f64())
        .fold(0.0, f64::max);
    let gaps: Vec<f64> = local
        .windows(2)
        .map(|p| (p[1].0 - p[0].1).as_secs_f64() * 1000.0)
        .collect();
    Figures {
        busy_over_work: span / work,
        wall_over_ideal: wall / work.max(longest_cloud),
        longest_handover_ms: gaps.iter().copied().fold(0.0, f64::max),
        handover_ms: common::median(gaps),
    }
}

fn contestants() -> Vec<&'static str> {
    // Local and cloud interleaved, as a user would list them.
    vec!["l1", "c1", "l2", "c2", "l3", "c3"]
}

async fn setup() -> common::Bench {
    let bench = common::Bench::new().await;
    let script = || {
        ModelScript::tokens(50)
            .rate(100.0)
            .first_token_delay(Duration::from_millis(20))
    };
    for m in LOCAL {
        bench.local.set_model(m, script());
    }
    for m in CLOUD {
        bench.cloud.set_model(m, script());
    }
    bench
}

async fn in_one_engine(round: usize) -> Figures {
    let bench = setup().await;
    let engine = bench.engine();
    let mut ids = Vec::new();
    for battle in 0..2 {
        let request = bench.qa(
            &format!("round {round} battle {battle}"),
            contestants()
                .iter()
                .map(|m| ContestantSpec {
                    identity: "debugger".into(),
                    model: (*m).into(),
                })
                .collect(),
        );
        ids.push(engine.create_battle(request).await.expect("create").id);
    }
    let started = Instant::now();
    let runs = ids.iter().map(|id| engine.run_battle(id));
    for done in futures::future::join_all(runs).await {
        assert_eq!(done.expect("run").status, arena_core::BattleStatus::Done);
    }
    figures(&bench, started.elapsed().as_secs_f64())
}

async fn in_two_processes(round: usize) -> Figures {
    let bench = setup().await;
    let spawn = |battle: usize| {
        let mut cmd = Command::new(common::arena_bin());
        cmd.args(["battle", "run", "--type", "qa", "--no-analysis", "--json"])
            .arg("--project")
            .arg(bench.project())
            .args(["--prompt", &format!("round {round} battle {battle}")])
            .env("ARENA_CONFIG", bench.config_path())
            .env("ARENA_DATA_DIR", bench.data())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for m in contestants() {
            cmd.args(["-c", &format!("debugger@{m}")]);
        }
        cmd.spawn().expect("arena")
    };
    let started = Instant::now();
    let children = [spawn(0), spawn(1)];
    for mut child in children {
        let status = tokio::task::spawn_blocking(move || child.wait().expect("wait"))
            .await
            .expect("join");
        assert!(status.success(), "arena failed");
    }
    figures(&bench, started.elapsed().as_secs_f64())
}

fn report(name: &str, rounds: Vec<Figures>) {
    let pick = |f: fn(&Figures) -> f64| common::median(rounds.iter().map(f).collect());
    println!(
        "{name}: median over {ROUNDS} rounds: local busy/work = {:.4} (target <= 1.03), \
         wall/ideal = {:.4} (target <= 1.10), hand-over = {:.1} ms (longest {:.1} ms)",
        pick(|f| f.busy_over_work),
        pick(|f| f.wall_over_ideal),
        pick(|f| f.handover_ms),
        pick(|f| f.longest_handover_ms),
    );
}

#[tokio::main]
async fn main() {
    let mut one = Vec::new();
    let mut two = Vec::new();
    for round in 0..ROUNDS {
        let f = in_one_engine(round).await;
        println!(
            "one engine, round {round}: busy/work {:.4}, wall/ideal {:.4}, hand-over {:.1} ms (longest {:.1})",
            f.busy_over_work, f.wall_over_ideal, f.handover_ms, f.longest_handover_ms
        );
        one.push(f);
        let f = in_two_processes(round).await;
        println!(
            "two processes, round {round}: busy/work {:.4}, wall/ideal {:.4}, hand-over {:.1} ms (longest {:.1})",
            f.busy_over_work, f.wall_over_ideal, f.handover_ms, f.longest_handover_ms
        );
        two.push(f);
    }
    report("one engine", one);
    report("two processes", two);
}
