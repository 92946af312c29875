//! Team mode under faults: the team database restarts while battles run.

mod common;

use std::time::Duration;

use arena_core::battle::{BattleStatus, ContestantStatus};
use common::*;

/// The team database restarts in the middle of a battle's streams: the
/// battle still ends done, every answer whole.
#[tokio::test]
async fn a_battle_survives_the_team_database_restarting_mid_stream() {
    let Some(cluster) = arena_testdb::Cluster::for_test("restart_mid_stream") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let h = Harness::new().await;
    h.local.set_model("l", script(60, 40.0));
    h.cloud.set_model("c", script(60, 40.0));
    let mut config = arena_core::config::Config::clone(&h.engine.config());
    config.database_url = Some(cluster.url(&db));
    let engine = arena_core::Engine::open(options(
        h.data.path().to_path_buf(),
        config,
        Some(cluster.password()),
    ))
    .unwrap();
    let battle = engine
        .create_battle(h.request("go", &["debugger@l", "debugger@c"]))
        .await
        .unwrap();
    let run = {
        let (engine, id) = (engine.clone(), battle.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    tokio::time::sleep(Duration::from_millis(600)).await;
    // Restarted from a thread of its own, which keeps the cluster until
    // the test ends (restarted from one of the runtime's blocking threads,
    // the server was found gone a second later: not what this test is about).
    let (restarted, restarted_rx) = tokio::sync::oneshot::channel();
    let (finish, finish_rx) = std::sync::mpsc::channel::<()>();
    let keeper = std::thread::spawn(move || {
        cluster.restart().unwrap();
        let _ = restarted.send(());
        let _ = finish_rx.recv();
        drop(cluster);
    });
    restarted_rx.await.unwrap();
    let done = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the battle ends")
        .unwrap()
        .expect("run_battle");
    assert_eq!(done.status, BattleStatus::Done, "{done:?}");
    for c in &done.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{c:?}");
        assert!(c.output.as_deref().is_some_and(|o| !o.is_empty()));
    }
    // The engine's last writes (its leases given back) land before the
    // database goes for good: else they would wait out the outage limit.
    drop(engine);
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(finish);
    keeper.join().unwrap();
}
