//! Scheduler overhead: 6 contestants (3 local, 3 cloud) on the scripted
//! server. Each stream takes ~1 s, so the ideal makespan is the local lane's
//! three streams back to back (the cloud lane runs alongside). Reported:
//! makespan ÷ ideal, where "ideal" is measured from the server's own record
//! of when each stream ran (max of Σ local stream times, longest cloud
//! stream). Target ≤ 1.02.
//!
//! Run: cargo bench -p arena-cli --bench scheduler

#[path = "common.rs"]
mod common;

use std::time::{Duration, Instant};

use arena_core::battle::ContestantSpec;
use arena_testserver::ModelScript;

const ROUNDS: usize = 5;

#[tokio::main]
async fn main() {
    let bench = common::Bench::new().await;
    let engine = bench.engine();
    let script = || {
        ModelScript::tokens(100)
            .rate(100.0)
            .first_token_delay(Duration::from_millis(20))
    };
    for m in ["l1", "l2", "l3"] {
        bench.local.set_model(m, script());
    }
    for m in ["c1", "c2", "c3"] {
        bench.cloud.set_model(m, script());
    }
    let mut ratios = Vec::new();
    for round in 0..ROUNDS {
        let contestants = ["l1", "c1", "l2", "c2", "l3", "c3"]
            .iter()
            .map(|m| ContestantSpec {
                identity: "debugger".into(),
                model: (*m).into(),
            })
            .collect();
        let request = bench.qa(&format!("round {round}"), contestants);
        let battle = engine.create_battle(request).await.expect("create");
        let started = Instant::now();
        let done = engine.run_battle(&battle.id).await.expect("run");
        let makespan = started.elapsed().as_secs_f64();
        assert!(done
            .contestants
            .iter()
            .all(|c| c.status == arena_core::ContestantStatus::Done));

        let stream_secs = |server: &arena_testserver::TestServer, m: &str| {
            let r = server.requests_for(m).pop().expect("request");
            (r.stream_finished_at.expect("end") - r.stream_started_at.expect("start")).as_secs_f64()
        };
        let local: f64 = ["l1", "l2", "l3"]
            .iter()
            .map(|m| stream_secs(&bench.local, m))
            .sum();
        let cloud = ["c1", "c2", "c3"]
            .iter()
            .map(|m| stream_secs(&bench.cloud, m))
            .fold(0.0, f64::max);
        let ideal = local.max(cloud);
        let ratio = makespan / ideal;
        println!("round {round}: makespan {makespan:.3} s, ideal {ideal:.3} s, ratio {ratio:.4}");
        ratios.push(ratio);
    }
    println!(
        "scheduler overhead: median makespan/ideal = {:.4} over {ROUNDS} rounds (target <= 1.02)",
        common::median(ratios)
    );
}
