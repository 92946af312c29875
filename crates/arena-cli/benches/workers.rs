//! Workers' throughput (team mode): a Q&A series of N battles (two
//! contestants each, 0.4 s per answer on a scripted cloud lane that takes
//! 64 at once) run by `arena series run --parallel 4` alone, then with one
//! and three `arena worker --places 4` processes beside it ("machines" of
//! their own) on one throwaway PostgreSQL: 1, 2 and 4 workers. Throughput
//! is battles ÷ (last battle's end − first battle's creation); reported as
//! the ratios of 2 and 4 workers to 1 (targets ≥ 1.8 and ≥ 3.2).
//!
//! Then a battle's bookkeeping on PostgreSQL against SQLite: the same
//! series with one worker and answers that arrive at once, so the time is
//! Arena's own; wall and the CLI's CPU per battle on each.
//!
//! Run: cargo bench -p arena-cli --bench workers   # ARENA_BENCH_BATTLES=N (default 1000)

#[path = "common.rs"]
mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arena_testdb::Cluster;
use arena_testserver::{ModelScript, TestServer};

const PLACES: u32 = 4;

struct Team<'c> {
    cluster: &'c Cluster,
    db: Option<String>,
    dir: tempfile::TempDir,
}

impl Team<'_> {
    /// `arena ARGS` as `machine` (on SQLite when there is no database).
    fn arena(&self, machine: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_arena"));
        cmd.args(args)
            .env("ARENA_CONFIG", self.dir.path().join("arena.toml"))
            .env(
                "ARENA_DATA_DIR",
                self.dir.path().join(format!("data-{machine}")),
            )
            .env("ARENA_MACHINE", machine)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(db) = &self.db {
            cmd.env("ARENA_DATABASE_URL", self.cluster.url(db))
                .env("ARENA_DATABASE_PASSWORD", self.cluster.password());
        }
        cmd
    }

    fn sql(&self, sql: &str) -> String {
        let db = self.db.as_deref().expect("a team database");
        self.cluster.psql(db, sql).expect("psql")
    }
}

fn team<'c>(cluster: &'c Cluster, server: &TestServer, postgres: bool) -> Team<'c> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("project/.git")).expect("project");
    std::fs::write(
        dir.path().join("arena.toml"),
        format!(
            "[[provider]]\nname = \"cloud\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
             lane = \"cloud\"\nmax_concurrency = 64\n",
            server.base_url()
        ),
    )
    .expect("config");
    let db = postgres.then(|| cluster.create_database().expect("database"));
    Team { cluster, db, dir }
}

/// The CPU time (s) of the children waited for so far.
fn children_cpu() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a zeroed rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

struct Run {
    battles: u64,
    /// First battle created → last battle ended (s).
    span: f64,
    wall: f64,
    /// CPU of every arena process of the run (s).
    cpu: f64,
    by_machine: String,
}

/// One series of `battles` with `workers` workers (the series' own driver
/// and `workers - 1` `arena worker`s).
fn run(team: &Team<'_>, battles: u64, workers: usize) -> Run {
    let cpu_before = children_cpu();
    let mut helpers: Vec<Child> = (1..workers)
        .map(|i| {
            team.arena(
                &format!("w{i}"),
                &["worker", "--places", &PLACES.to_string()],
            )
            .spawn()
            .expect("worker")
        })
        .collect();
    if workers > 1 {
        // Each worker up (it says so) before the series opens its places.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let seen: usize = team
                .db
                .as_ref()
                .and_then(|db| {
                    team.cluster
                        .psql(db, "SELECT COUNT(*) FROM live.workers")
                        .ok()
                })
                .and_then(|out| out.trim().parse().ok())
                .unwrap_or(0);
            if seen + 1 >= workers {
                break;
            }
            assert!(Instant::now() < deadline, "workers did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let started = Instant::now();
    let out = team
        .arena(
            "w0",
            &[
                "series",
                "run",
                "--type",
                "qa",
                "--prompt",
                "Say hello",
                "--project",
                &team.dir.path().join("project").to_string_lossy(),
                "-c",
                "explainer@m1",
                "-c",
                "debugger@m2",
                "--runs",
                &battles.to_string(),
                "--parallel",
                &PLACES.to_string(),
                "--no-analysis",
                "--json",
            ],
        )
        .output()
        .expect("series run");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "series run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for helper in &mut helpers {
        // SIGINT: a worker finishes what it runs (nothing, now) and leaves.
        // SAFETY: signalling our own child.
        unsafe { libc::kill(helper.id() as i32, libc::SIGINT) };
    }
    for mut helper in helpers {
        helper.wait().expect("worker exit");
    }
    let cpu = children_cpu() - cpu_before;
    let (span, by_machine) = match &team.db {
        Some(_) => {
            let span: f64 = team
                .sql("SELECT (MAX(finished_at) - MIN(created_at)) / 1000.0 FROM battles")
                .trim()
                .parse()
                .expect("span");
            let done: u64 = team
                .sql("SELECT COUNT(*) FROM battles WHERE status = 'done'")
                .trim()
                .parse()
                .expect("count");
            assert_eq!(done, battles, "every battle done");
            let by_machine = team
                .sql("SELECT machine || ' ' || COUNT(*) FROM battles GROUP BY machine ORDER BY machine")
                .lines()
                .collect::<Vec<_>>()
                .join(", ");
            (span, by_machine)
        }
        None => (wall, "w0 (SQLite)".into()),
    };
    Run {
        battles,
        span,
        wall,
        cpu,
        by_machine,
    }
}

fn report(label: &str, r: &Run) {
    println!(
        "{label}: {} battles in {:.1} s (wall {:.1} s): {:.1} battles/s; CPU of Arena's processes {:.1} s ({:.1} ms a battle); by machine: {}",
        r.battles,
        r.span,
        r.wall,
        r.battles as f64 / r.span,
        r.cpu,
        r.cpu * 1000.0 / r.battles as f64,
        r.by_machine
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let battles: u64 = common::setting("ARENA_BENCH_BATTLES", 1000);
    let Some(cluster) = Cluster::for_test("bench-workers") else {
        eprintln!("PostgreSQL is not installed here (postgresql-15): nothing to measure");
        return;
    };
    let server = TestServer::start().await.expect("server");
    // 0.4 s an answer, nearly all of it waiting for the first token.
    for model in ["m1", "m2"] {
        server.set_model(
            model,
            ModelScript::tokens(4)
                .rate(1000.0)
                .first_token_delay(Duration::from_millis(400)),
        );
    }
    let runs: Vec<(usize, Run)> = [1usize, 2, 4]
        .into_iter()
        .map(|workers| {
            let team = team(&cluster, &server, true);
            let r = tokio::task::block_in_place(|| run(&team, battles, workers));
            report(&format!("{workers} worker(s)"), &r);
            (workers, r)
        })
        .collect();
    let rate = |r: &Run| r.battles as f64 / r.span;
    let one = rate(&runs[0].1);
    for (workers, r) in &runs[1..] {
        println!(
            "{workers} workers ÷ 1: {:.2}× (target ≥ {})",
            rate(r) / one,
            if *workers == 2 { "1.8" } else { "3.2" }
        );
    }

    // Bookkeeping: answers at once, one worker, each backend.
    for model in ["m1", "m2"] {
        server.set_model(model, ModelScript::tokens(4));
    }
    let book = battles.min(500);
    let sqlite = tokio::task::block_in_place(|| run(&team(&cluster, &server, false), book, 1));
    report("SQLite, answers at once", &sqlite);
    let pg = tokio::task::block_in_place(|| run(&team(&cluster, &server, true), book, 1));
    report("PostgreSQL, answers at once", &pg);
    println!(
        "bookkeeping, PostgreSQL ÷ SQLite: wall {:.2}×, CPU of Arena's processes {:.2}×",
        pg.wall / sqlite.wall,
        pg.cpu / sqlite.cpu
    );
}
