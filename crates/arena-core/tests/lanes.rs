//! Lanes across battles in one engine, judged from the scripted servers'
//! own request logs: one local server is one serial lane whatever battle or
//! provider name reaches it, two servers are two lanes, a cloud provider
//! runs up to its `max_concurrency`, judges wait their turn, order is first
//! come first served, and a waiting contestant shows why and can be
//! cancelled. (The same across processes: `arena-cli/tests/lanes.rs`.)

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arena_core::battle::{BattleStatus, ContestantStatus, Lane};
use arena_core::clock::SystemClock;
use arena_core::config::{Config, ProviderConfig, ProviderKind};
use arena_core::store::SqlValue;
use arena_core::{Battle, Engine, EngineOptions, EventKind};
use arena_testserver::{most_at_once, ModelScript, RecordedRequest, TestServer};
use common::*;
use serde_json::Value;

/// The prompt a generation request carried (its last message).
fn prompt_of(r: &RecordedRequest) -> String {
    r.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// An engine over `providers` alone, with a battle of `contestants` created in it.
async fn battle_on(
    providers: Vec<ProviderConfig>,
    dirs: &(tempfile::TempDir, tempfile::TempDir),
    contestants: &[&str],
) -> (Engine, Battle) {
    let engine = Engine::open(EngineOptions {
        data_dir: dirs.0.path().to_path_buf(),
        config: Config {
            default_model: None,
            providers,
            limits: fast_limits(),
            backends: Vec::new(),
            prices: Vec::new(),
            database_url: None,
            team: Default::default(),
            coding: Default::default(),
            model_cutoffs: Vec::new(),
        },
        clock: Arc::new(SystemClock),
        database_password: None,
        machine: None,
        user: None,
    })
    .expect("engine");
    let battle = engine
        .create_battle(arena_core::BattleRequest {
            battle_type: arena_core::BattleType::Qa,
            project: dirs.1.path().to_path_buf(),
            prompt: "Explain lanes.".into(),
            contestants: contestants
                .iter()
                .map(|c| arena_core::ContestantSpec::parse(c).unwrap())
                .collect(),
            check_command: None,
            blind: false,
            tags: Vec::new(),
        })
        .await
        .expect("create battle");
    (engine, battle)
}

/// A data directory and a project.
fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
    (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
}

async fn create(h: &Harness, prompt: &str, contestants: &[&str]) -> Battle {
    h.engine
        .create_battle(h.request(prompt, contestants))
        .await
        .expect("create battle")
}

/// Waits until `check` holds for the battle as stored.
async fn wait_for(
    engine: &Engine,
    id: &str,
    what: &str,
    check: impl Fn(&Battle) -> bool,
) -> Battle {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let b = engine.battle(id).await.expect("battle");
        if check(&b) {
            return b;
        }
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn two_battles_share_one_local_lane_first_come_first_served() {
    let h = Harness::new().await;
    h.local.set_model("l1", script(20, 200.0));
    h.local.set_model("l2", script(20, 200.0));
    let a = create(&h, "battle A", &["debugger@l1", "explainer@l2"]).await;
    let b = create(&h, "battle B", &["debugger@l1", "explainer@l2"]).await;
    let engine = h.engine.clone();
    let (a_id, b_id) = (a.id.clone(), b.id.clone());
    let run_a = tokio::spawn(async move { engine.run_battle(&a_id).await });
    // B starts once A's first contestant holds the lane: A's second
    // contestant became ready first, so it goes before both of B's.
    wait_for(&h.engine, &a.id, "A running", |b| {
        b.contestants[0].status == ContestantStatus::Running
    })
    .await;
    let engine = h.engine.clone();
    let run_b = tokio::spawn(async move { engine.run_battle(&b_id).await });
    let waiting = wait_for(&h.engine, &b.id, "B waiting for the lane", |b| {
        b.contestants.iter().all(|c| c.waiting.is_some())
    })
    .await;
    let reason = waiting.contestants[0].waiting.clone().unwrap();
    let address = h.local.addr().to_string();
    // On a team database a loopback server is named with its machine.
    let server = match h.team {
        Some(_) => format!("{address} on {}", hostname()),
        None => address,
    };
    if h.team.is_some() {
        // …and so is the battle holding it.
        assert!(reason.contains(&format!(" on {},", hostname())), "{reason}");
    }
    assert!(
        reason.starts_with(&format!(
            "waiting for local ({server}): {}, contestant ",
            arena_core::battle::title(&a.prompt)
        )),
        "{reason}"
    );
    assert_eq!(waiting.contestants[0].status, ContestantStatus::Queued);
    let (a, b) = (run_a.await.unwrap().unwrap(), run_b.await.unwrap().unwrap());
    assert_eq!(
        (a.status, b.status),
        (BattleStatus::Done, BattleStatus::Done)
    );
    for c in a.contestants.iter().chain(&b.contestants) {
        assert_eq!(c.status, ContestantStatus::Done);
        assert_eq!(c.waiting, None, "a contestant that ran no longer waits");
    }

    let requests = h.local.requests();
    assert_eq!(requests.iter().filter(|r| r.is_generation()).count(), 4);
    assert_eq!(most_at_once(&requests), 1, "two local requests overlapped");
    let mut order: Vec<_> = requests.iter().filter(|r| r.is_generation()).collect();
    order.sort_by_key(|r| r.received_at);
    let order: Vec<(String, String)> = order
        .iter()
        .map(|r| (prompt_of(r), r.model.clone().unwrap()))
        .collect();
    let expected: Vec<(String, String)> = [
        ("battle A", "l1"),
        ("battle A", "l2"),
        ("battle B", "l1"),
        ("battle B", "l2"),
    ]
    .iter()
    .map(|(p, m)| (p.to_string(), m.to_string()))
    .collect();
    assert_eq!(order, expected, "not first come, first served");

    // The reason reached the event stream too, and was cleared by the start.
    let events = collect_until_done(&h.engine, &b.id, 0).await;
    let reasons: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Waiting { reason } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(reasons.first().is_some_and(|r| r.is_some()), "{reasons:?}");
}

/// Two drivers (on a team database, two machines) whose battles want the
/// same two local lanes in opposite orders: each joins both queues in one
/// transaction, and takes its turns in its journal's grouped write. The
/// lanes are locked first and in one order, so neither waits for the
/// other in a circle, and every battle ends done.
#[tokio::test]
async fn battles_wanting_two_lanes_in_opposite_orders_both_run() {
    let mut h = Harness::new().await;
    let other = TestServer::start().await.unwrap();
    h.local.set_model("x", script(5, 1000.0));
    other.set_model("y", script(5, 1000.0));
    h.reconfigure(|c| {
        let gpu2 = provider("gpu2", ProviderKind::Openai, other.base_url(), Lane::Local);
        c.providers.push(gpu2);
    });
    let second = h.second_engine();
    for round in 0..5 {
        let a = create(&h, "battle A", &["debugger@x", "explainer@y"]).await;
        let b = second
            .create_battle(h.request("battle B", &["debugger@y", "explainer@x"]))
            .await
            .unwrap();
        let (ran_a, ran_b) = tokio::join!(h.engine.run_battle(&a.id), second.run_battle(&b.id));
        for battle in [ran_a.unwrap(), ran_b.unwrap()] {
            let errors: Vec<_> = battle.contestants.iter().map(|c| c.error.clone()).collect();
            assert_eq!(
                battle.status,
                BattleStatus::Done,
                "round {round}: {errors:?}"
            );
        }
    }
}

#[tokio::test]
async fn two_local_servers_are_two_lanes_and_one_server_by_two_names_is_one() {
    let one = TestServer::start().await.unwrap();
    let two = TestServer::start().await.unwrap();
    one.set_model("a1", script(30, 150.0));
    one.set_model("a2", script(30, 150.0));
    two.set_model("b1", script(60, 150.0));
    // The same server as `gpu1`, written with `localhost`.
    let alias = one.base_url().replace("127.0.0.1", "localhost");
    let dirs = dirs();
    let (engine, battle) = battle_on(
        vec![
            provider("gpu1", ProviderKind::Openai, one.base_url(), Lane::Local),
            provider("gpu1-again", ProviderKind::Openai, alias, Lane::Local),
            provider("gpu2", ProviderKind::Openai, two.base_url(), Lane::Local),
        ],
        &dirs,
        &["debugger@a1", "explainer@gpu1-again/a2", "debugger@b1"],
    )
    .await;
    assert_eq!(battle.contestants[1].provider, "gpu1-again");
    let battle = engine.run_battle(&battle.id).await.unwrap();
    assert_eq!(battle.status, BattleStatus::Done);
    let a1 = interval(&only_request(&one, "a1"));
    let a2 = interval(&only_request(&one, "a2"));
    let b1 = interval(&only_request(&two, "b1"));
    assert!(
        !overlaps(a1, a2),
        "one server reached by two names ran two requests at once"
    );
    assert!(
        overlaps(b1, a1) || overlaps(b1, a2),
        "the two servers' lanes did not run together"
    );
}

#[tokio::test]
async fn a_cloud_provider_runs_at_most_max_concurrency_requests() {
    let cloud = TestServer::start().await.unwrap();
    for m in ["c1", "c2", "c3", "c4"] {
        cloud.set_model(m, script(30, 200.0));
    }
    let dirs = dirs();
    let (engine, battle) = battle_on(
        vec![ProviderConfig {
            max_concurrency: 2,
            ..provider("cloud", ProviderKind::Openai, cloud.base_url(), Lane::Cloud)
        }],
        &dirs,
        &["debugger@c1", "debugger@c2", "debugger@c3", "debugger@c4"],
    )
    .await;
    let battle = engine.run_battle(&battle.id).await.unwrap();
    assert_eq!(battle.status, BattleStatus::Done);
    assert!(battle
        .contestants
        .iter()
        .all(|c| c.status == ContestantStatus::Done));
    assert_eq!(most_at_once(&cloud.requests()), 2, "max_concurrency = 2");
}

#[tokio::test]
async fn a_start_rate_makes_the_next_contestant_wait_and_says_why() {
    let cloud = TestServer::start().await.unwrap();
    for m in ["c1", "c2", "c3"] {
        cloud.set_model(m, script(5, 500.0));
    }
    let dirs = dirs();
    let (engine, battle) = battle_on(
        vec![ProviderConfig {
            requests_per_minute: Some(2),
            ..provider("cloud", ProviderKind::Openai, cloud.base_url(), Lane::Cloud)
        }],
        &dirs,
        &["debugger@c1", "debugger@c2", "debugger@c3"],
    )
    .await;
    let run = {
        let (engine, id) = (engine.clone(), battle.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    // Once the first two are done, the third's reason is the rate alone
    // (while they ran, it also named them, until its next look).
    let waiting = wait_for(&engine, &battle.id, "the third waits for the rate", |b| {
        b.contestants[..2]
            .iter()
            .all(|c| c.status == ContestantStatus::Done)
            && b.contestants[2].waiting.as_deref().is_some_and(|r| {
                r.starts_with("waiting for cloud: 2 requests per minute reached, next start in")
            })
    })
    .await;
    assert_eq!(waiting.contestants[2].status, ContestantStatus::Queued);
    engine
        .cancel_contestant(&battle.id, &battle.contestants[2].id)
        .await
        .unwrap();
    let battle = run.await.unwrap().unwrap();
    assert_eq!(battle.status, BattleStatus::Done);
    assert_eq!(battle.contestants[2].status, ContestantStatus::Cancelled);
    assert_eq!(
        cloud.requests_for("c3").len(),
        0,
        "a cancelled waiter never calls"
    );
}

#[tokio::test]
async fn a_contestant_waiting_for_its_lane_can_be_cancelled() {
    let h = Harness::new().await;
    h.local.set_model("long", script(200, 100.0));
    h.local.set_model("short", script(5, 200.0));
    let a = create(&h, "hold the lane", &["debugger@long", "explainer@long"]).await;
    let b = create(&h, "wait for it", &["debugger@short", "explainer@short"]).await;
    let run_a = {
        let (engine, id) = (h.engine.clone(), a.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    wait_for(&h.engine, &a.id, "A holds the lane", |b| {
        b.contestants[0].status == ContestantStatus::Running
    })
    .await;
    let run_b = {
        let (engine, id) = (h.engine.clone(), b.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    wait_for(&h.engine, &b.id, "B waits", |b| {
        b.contestants[0].waiting.is_some()
    })
    .await;
    let started = Instant::now();
    let cancelled = h.engine.cancel_battle(&b.id).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "cancel took {:?}",
        started.elapsed()
    );
    assert_eq!(cancelled.status, BattleStatus::Cancelled);
    assert!(cancelled
        .contestants
        .iter()
        .all(|c| c.status == ContestantStatus::Cancelled && c.waiting.is_none()));
    assert_eq!(
        run_b.await.unwrap().unwrap().status,
        BattleStatus::Cancelled
    );
    assert_eq!(h.local.requests_for("short").len(), 0);
    h.engine.cancel_battle(&a.id).await.unwrap();
    run_a.await.unwrap().unwrap();
}

fn judge() -> ModelScript {
    ModelScript::respond_with(|body: &Value| {
        let system = body["messages"][0]["content"].as_str().unwrap_or("");
        if system.contains("You summarise one answer") {
            "A short summary.".into()
        } else {
            r#"{"winner": "A", "ranking": ["A", "B"], "reasons": {"A": "first"}}"#.into()
        }
    })
    .rate(400.0)
}

#[tokio::test]
async fn a_local_judge_waits_for_the_lane_like_everyone_else() {
    let h = Harness::new().await;
    h.local.set_model("l1", script(10, 400.0));
    h.local.set_model("l2", script(10, 400.0));
    h.local.set_model("long", script(80, 100.0));
    h.local.set_model("judge", judge());
    let a = h.run(&["debugger@l1", "explainer@l2"]).await;
    assert_eq!(a.status, BattleStatus::Done);
    // Battle B holds the local lane while A is judged on the same server.
    let b = create(&h, "busy", &["debugger@long", "explainer@long"]).await;
    let run_b = {
        let (engine, id) = (h.engine.clone(), b.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    wait_for(&h.engine, &b.id, "B holds the lane", |b| {
        b.contestants[0].status == ContestantStatus::Running
    })
    .await;
    let analysis = h.engine.analyze(&a.id, Some("judge")).await.unwrap();
    assert_eq!(
        analysis.status,
        arena_core::analysis::AnalysisStatus::Done,
        "{:?}",
        analysis.error
    );
    run_b.await.unwrap().unwrap();
    let requests = h.local.requests();
    assert_eq!(
        most_at_once(&requests),
        1,
        "the judge ran beside a contestant"
    );
    // B's second contestant became ready before the judge: it went first.
    let b_second = h.local.requests_for("long")[1].received_at;
    let judge_first = h.local.requests_for("judge")[0].received_at;
    assert!(b_second < judge_first, "the judge jumped the queue");
}

#[tokio::test]
async fn a_model_switch_on_a_local_lane_is_recorded_and_speeds_kept_apart() {
    let h = Harness::new().await;
    h.local.set_model("l1", script(20, 300.0).prompt_tokens(40));
    h.local.set_model("l2", script(20, 300.0).prompt_tokens(40));
    let first = h.run(&["debugger@l1", "explainer@l2"]).await;
    let [c1, c2] = [&first.contestants[0], &first.contestants[1]];
    assert!(
        !c1.benchmark.model_switched,
        "nothing was known to be loaded before"
    );
    assert!(
        c2.benchmark.model_switched,
        "l2 followed l1 on the same server"
    );
    let again = h.run(&["debugger@l2", "explainer@l2"]).await;
    assert!(again
        .contestants
        .iter()
        .all(|c| !c.benchmark.model_switched));
    for c in first.contestants.iter().chain(&again.contestants) {
        let pp = c.benchmark.prompt_per_sec.expect("prompt processing speed");
        let tg = c.benchmark.tokens_per_sec.expect("generation speed");
        assert!(pp > 0.0 && tg > 0.0);
        assert_ne!(pp, tg, "prompt processing and generation are kept apart");
    }
    // A cloud lane never loads models.
    h.cloud.set_model("c1", script(5, 300.0));
    h.cloud.set_model("c2", script(5, 300.0));
    let cloud = h.run(&["debugger@c1", "debugger@c2"]).await;
    assert!(cloud
        .contestants
        .iter()
        .all(|c| !c.benchmark.model_switched));
    // result.md and the manifest say so.
    let result = std::fs::read_to_string(c2.result_path.as_ref().unwrap()).unwrap();
    assert!(
        result.contains("includes model load"),
        "{} {result}",
        first.id
    );
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(first.results_path.join("manifest.json")).unwrap(),
    )
    .unwrap();
    let m2 = &manifest["contestants"][1]["benchmark"];
    assert_eq!(m2["model_switched"], true, "{manifest}");
    assert!(m2["prompt_per_sec"].as_f64().is_some(), "{manifest}");
}

#[tokio::test]
async fn the_ticket_of_a_process_that_is_gone_does_not_block_the_lane() {
    let h = Harness::new().await;
    h.local.set_model("l1", script(5, 300.0));
    // A process that died while holding the local lane left its ticket.
    let mut lane = format!("local:http://{}", h.local.addr());
    if h.team.is_some() {
        // A team's loopback lane is its machine's own.
        lane = format!("{lane}@{}", hostname());
    }
    let dead = dead_pid();
    h.engine
        .store()
        .transact(|tx| {
            tx.exec_raw(
                "INSERT INTO lane_tickets (lane, ready_at, position, holder, model, owner, host, pid, expires_at, granted_at)
                 VALUES (?1, 0, 0, 'battle deadbeef, contestant 1', 'l1', 'gone', ?2, ?3, ?4, 0)",
                &[
                    SqlValue::Text(lane.clone()),
                    SqlValue::Text(hostname()),
                    SqlValue::Int(i64::from(dead)),
                    SqlValue::Int(i64::MAX),
                ],
            )?;
            Ok(())
        })
        .unwrap();
    let started = Instant::now();
    let battle = h.run(&["debugger@l1", "explainer@l1"]).await;
    assert_eq!(battle.status, BattleStatus::Done);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "waited {:?} for a dead holder",
        started.elapsed()
    );
    // Slots are given back in the background as each contestant ends.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = h
            .engine
            .store()
            .query_i64("SELECT COUNT(*) FROM lane_tickets", &[])
            .unwrap()
            .unwrap_or(-1);
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{left} tickets were never given back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A process id that no longer exists: a child that was started and reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap()
}
