//! A long series through the real `arena` binary: four contestants on the
//! scripted server (cloud lane, 8 tokens each), `--runs N` battles, four at
//! a time, no analysis. Reports battles per second and wall time per
//! battle, the CLI's resident memory after 10% of the battles and just
//! before the last one ended (their ratio should stay near 1: memory
//! flat), and the last seen (with the report written at the end), database bytes
//! per battle; then how long `battle list` and `leaderboard` take with
//! those battles in the database.
//!
//! ```sh
//! cargo bench -p arena-cli --bench series            # ARENA_BENCH_RUNS=N (default 1000)
//! ```

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arena_testserver::ModelScript;
use common::{arena_bin, Bench};

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

fn dir_bytes(dir: &std::path::Path, prefix: &str) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn timed(bench: &Bench, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = Command::new(arena_bin())
        .args(args)
        .env("ARENA_CONFIG", bench.config_path())
        .env("ARENA_DATA_DIR", bench.data())
        .output()
        .expect("arena runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let runs: u64 = std::env::var("ARENA_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let bench = Bench::new().await;
    for m in ["m1", "m2", "m3", "m4"] {
        bench.cloud.set_model(m, ModelScript::tokens(8));
    }
    let project = bench.project().to_string_lossy().into_owned();
    let runs_arg = runs.to_string();
    let started = Instant::now();
    // ARENA_BENCH_WRAP=heaptrack (say) runs the CLI under a profiler.
    let mut command = match std::env::var("ARENA_BENCH_WRAP") {
        Ok(wrap) => {
            let mut c = Command::new(wrap);
            c.arg(arena_bin());
            c
        }
        Err(_) => Command::new(arena_bin()),
    };
    let mut child = command
        .args([
            "series",
            "run",
            "--type",
            "qa",
            "--project",
            &project,
            "--prompt",
            "Say hi.",
            "-c",
            "debugger@m1",
            "-c",
            "explainer@m2",
            "-c",
            "architect@m3",
            "-c",
            "code reviewer@m4",
            "--runs",
            &runs_arg,
            "--parallel",
            "4",
            "--no-analysis",
            "--json",
        ])
        .env("ARENA_CONFIG", bench.config_path())
        .env("ARENA_DATA_DIR", bench.data())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("arena series run");
    let pid = child.id();
    let engine = bench.engine();
    // (battles done, RSS) while it runs: the first past 10%, the last
    // before the last battle ended (the run's memory, before the report
    // written at its end), and the last seen (with that report).
    let (mut early, mut late, mut last) = (None, None, None);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            assert!(status.success(), "the series failed");
            break;
        }
        let rss = rss_kib(pid);
        if let Ok(list) = engine.series_list(1).await {
            if let Some(s) = list.first() {
                if let (Ok(p), Some(k)) = (engine.series_progress(&s.id).await, rss) {
                    if early.is_none() && p.done >= runs / 10 {
                        early = Some((p.done, k));
                    }
                    if p.done < runs {
                        late = Some((p.done, k));
                    }
                    last = Some((p.done, k));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wall = started.elapsed();
    let db = dir_bytes(&bench.data(), "arena.db");
    println!("series of {runs} battles × 4 contestants, 4 at a time");
    println!(
        "  wall: {:.1} s, {:.1} battles/s, {:.1} ms per battle",
        wall.as_secs_f64(),
        runs as f64 / wall.as_secs_f64(),
        wall.as_secs_f64() * 1000.0 / runs as f64
    );
    if let (Some((d1, k1)), Some((d2, k2))) = (early, late) {
        println!(
            "  CLI RSS: {} KiB at battle {d1}, {} KiB at battle {d2}: ratio {:.3}",
            k1,
            k2,
            k2 as f64 / k1 as f64
        );
    }
    if let Some((_, k)) = last {
        println!("  CLI RSS last seen (with the report at the end): {k} KiB");
    }
    println!(
        "  database: {} bytes, {:.0} bytes per battle",
        db,
        db as f64 / runs as f64
    );
    let list = timed(&bench, &["battle", "list", "--limit", "50", "--json"]);
    let board = timed(&bench, &["leaderboard", "--json"]);
    // The series' report, as its screen reads it while it runs.
    let id = engine.series_list(1).await.expect("the series")[0]
        .id
        .clone();
    let shown = timed(&bench, &["series", "show", &id, "--json"]);
    println!(
        "  with {runs} battles: `battle list` {} ms, `leaderboard` {} ms, `series show` {} ms (whole processes)",
        list.as_millis(),
        board.as_millis(),
        shown.as_millis()
    );
}
