//! Lanes across machines (team mode): two "machines" — two data
//! directories with their own `ARENA_MACHINE`, two `arena` processes each
//! at any time — on one team database. One scripted local server, named
//! `server = "shared-box"` by both, serves one request at a time in the
//! order the work became ready, and a waiter's reason names the machine
//! that holds the server; two different servers on loopback (one per
//! machine, no `server`) are two lanes and run side by side.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use arena_testserver::{ModelScript, TestServer};
use common::Setup;

const MACHINES: [&str; 2] = ["alpha", "beta"];
/// Processes per machine, each running battles one after another.
const PROCESSES: usize = 2;
const BATTLES_EACH: usize = 5;

/// A machine's config: one local provider at `base_url`, named `server`
/// when given.
fn machine_config(setup: &Setup, machine: &str, base_url: &str, server: Option<&str>) -> PathBuf {
    let path = setup.dir.path().join(format!("arena-{machine}.toml"));
    let server = server
        .map(|s| format!("server = \"{s}\"\n"))
        .unwrap_or_default();
    std::fs::write(
        &path,
        format!(
            "[[provider]]\nname = \"llama-swap\"\nkind = \"openai\"\nbase_url = \"{base_url}\"\n\
             lane = \"local\"\n{server}\n[limits]\nbackoff_base_ms = 20\nstall_timeout_secs = 30\n"
        ),
    )
    .unwrap();
    path
}

/// The battles each machine ran, by id.
struct Ran {
    battles: Vec<(String, &'static str)>,
}

/// Runs every machine's processes to the end; `servers[i]` is machine
/// `i`'s server.
async fn run_team(setup: &Setup, url: &str, password: &str, configs: &[PathBuf]) -> Ran {
    let mut slots = Vec::new();
    for (i, machine) in MACHINES.iter().enumerate() {
        for slot in 0..PROCESSES {
            let (config, url, password) =
                (configs[i].clone(), url.to_string(), password.to_string());
            let (data, project) = (
                setup.dir.path().join(format!("data-{machine}")),
                setup.project(),
            );
            slots.push(tokio::task::spawn_blocking(move || {
                // Staggered, so that readiness orders the machines' work.
                std::thread::sleep(Duration::from_millis((i * PROCESSES + slot) as u64 * 70));
                let mut ids = Vec::new();
                for n in 0..BATTLES_EACH {
                    let out = Command::new(env!("CARGO_BIN_EXE_arena"))
                        .args(["battle", "run", "--type", "qa", "--json", "--prompt"])
                        .arg(format!("{machine} {slot} {n}"))
                        .arg("--project")
                        .arg(&project)
                        .args(["-c", "explainer@m1", "-c", "debugger@m2"])
                        .env("ARENA_CONFIG", &config)
                        .env("ARENA_DATA_DIR", &data)
                        .env("ARENA_MACHINE", machine)
                        .env("ARENA_DATABASE_URL", &url)
                        .env("ARENA_DATABASE_PASSWORD", &password)
                        .env_remove("RUST_LOG")
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{machine}: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let battle: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                    assert_eq!(battle["status"], "done", "{battle}");
                    ids.push((battle["id"].as_str().unwrap().to_string(), *machine));
                }
                ids
            }));
        }
    }
    let mut battles = Vec::new();
    for slot in slots {
        battles.extend(slot.await.unwrap());
    }
    Ran { battles }
}

/// The streaming intervals of the chat requests `server` served.
fn intervals(server: &TestServer) -> Vec<(Instant, Instant)> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .map(|r| {
            (
                r.stream_started_at.expect("stream started"),
                r.stream_finished_at.expect("stream finished"),
            )
        })
        .collect()
}

fn overlapping_pairs(spans: &[(Instant, Instant)]) -> usize {
    let mut n = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.0 < b.1 && b.0 < a.1 {
                n += 1;
            }
        }
    }
    n
}

fn scripted(server: &TestServer) {
    // About a quarter of a second per request.
    for model in ["m1", "m2"] {
        server.set_model(model, ModelScript::tokens(10).rate(40.0));
    }
}

#[tokio::test]
async fn one_named_server_is_one_lane_for_every_machine() {
    let Some(cluster) = arena_testdb::Cluster::for_test("one_named_server_is_one_lane") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let (url, password) = (cluster.url(&db), cluster.password().to_string());
    let setup = Setup::new().await;
    let server = TestServer::start().await.unwrap();
    scripted(&server);
    let configs: Vec<PathBuf> = MACHINES
        .iter()
        .map(|m| machine_config(&setup, m, &server.base_url(), Some("shared-box")))
        .collect();

    let ran = run_team(&setup, &url, &password, &configs).await;
    assert_eq!(ran.battles.len(), MACHINES.len() * PROCESSES * BATTLES_EACH);

    let spans = intervals(&server);
    assert_eq!(spans.len(), 40, "two contestants in each of 20 battles");
    assert_eq!(
        overlapping_pairs(&spans),
        0,
        "the shared server ran two requests at once"
    );

    // First come, first served by readiness: of two contestants whose
    // battles were created clearly apart, the earlier went first. (A
    // battle is ready a little after it is created — the process asks the
    // providers for their models first, a few hundred ms on 2 busy cores —
    // hence the margin of a second; served in any other order, 20 battles
    // over 10 s of serving would break it many times over.)
    let rows = cluster
        .psql(
            &db,
            "SELECT b.created_at, c.position, c.started_at FROM contestants c \
             JOIN battles b ON b.id = c.battle_id ORDER BY c.started_at",
        )
        .unwrap();
    let started: Vec<(i64, i64, i64)> = rows
        .lines()
        .map(|l| {
            let f: Vec<i64> = l.split('|').map(|v| v.parse().unwrap()).collect();
            (f[0], f[1], f[2])
        })
        .collect();
    assert_eq!(started.len(), 40);
    for (i, x) in started.iter().enumerate() {
        for y in &started[i + 1..] {
            // y started after x: it must not have been ready clearly before.
            assert!(
                y.0 + 1000 >= x.0,
                "a contestant ready at {} was served after one ready at {}",
                y.0,
                x.0
            );
        }
    }

    // The waiting reasons name the lane by its server and the holder by
    // its machine; some waiter waited for the other machine.
    let reasons = cluster
        .psql(
            &db,
            "SELECT battle_id || '|' || payload FROM events WHERE kind = 'waiting' \
             UNION ALL SELECT battle_id || '|' || payload FROM live.events WHERE kind = 'waiting'",
        )
        .unwrap();
    let machine_of = |battle: &str| {
        ran.battles
            .iter()
            .find(|(id, _)| id == battle)
            .map(|(_, m)| *m)
            .unwrap()
    };
    let mut across = 0;
    for line in reasons.lines().filter(|l| l.contains("waiting for")) {
        let (battle, payload) = line.split_once('|').unwrap();
        assert!(
            payload.contains("waiting for llama-swap (server shared-box)"),
            "{payload}"
        );
        let other = if machine_of(battle) == "alpha" {
            "beta"
        } else {
            "alpha"
        };
        if payload.contains(&format!(" on {other}")) {
            across += 1;
        }
    }
    assert!(across > 0, "no waiter named the other machine: {reasons}");
}

#[tokio::test]
async fn each_machines_own_loopback_server_is_its_own_lane() {
    let Some(cluster) = arena_testdb::Cluster::for_test("each_machines_own_loopback_server") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let (url, password) = (cluster.url(&db), cluster.password().to_string());
    let setup = Setup::new().await;
    let servers = [
        TestServer::start().await.unwrap(),
        TestServer::start().await.unwrap(),
    ];
    let configs: Vec<PathBuf> = MACHINES
        .iter()
        .zip(&servers)
        .map(|(m, s)| {
            scripted(s);
            machine_config(&setup, m, &s.base_url(), None)
        })
        .collect();

    run_team(&setup, &url, &password, &configs).await;

    // Each server on its own took one request at a time…
    for server in &servers {
        assert_eq!(overlapping_pairs(&intervals(server)), 0);
    }
    // …but the two ran side by side: a lane per machine, not one.
    let both: Vec<_> = servers.iter().flat_map(intervals).collect();
    assert!(
        overlapping_pairs(&both) > 0,
        "two machines' own servers never ran at once"
    );
}
