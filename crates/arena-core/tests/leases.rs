//! One driver per battle: the lease, cancellation across processes, and
//! resume of a battle whose driver died.

mod common;

use std::time::Duration;

use arena_core::battle::{BattleStatus, ContestantStatus};
use arena_core::store::SqlValue;
use arena_core::Error;
use common::*;

#[tokio::test]
async fn a_second_process_cannot_drive_a_running_battle_but_can_cancel_it() {
    let h = Harness::new().await;
    h.local.set_model("slow", script(1000, 50.0));
    h.cloud.set_model("slowc", script(1000, 50.0));
    let battle = h
        .engine
        .create_battle(h.request("go", &["debugger@slow", "debugger@slowc"]))
        .await
        .unwrap();
    let run = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;

    let other = h.second_engine();
    match other.run_battle(&battle.id).await {
        Err(Error::Conflict(msg)) => assert!(msg.contains("is being run by process"), "{msg}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    // Resuming everything from the other process skips the live battle.
    assert!(other.resume(None).await.unwrap().is_empty());

    // Cancel from the other process: the driver picks it up at its heartbeat.
    let after = other.cancel_battle(&battle.id).await.unwrap();
    assert_eq!(after.status, BattleStatus::Cancelled);
    let finished = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(finished.status, BattleStatus::Cancelled);
    assert!(finished
        .contestants
        .iter()
        .all(|c| c.status == ContestantStatus::Cancelled));
    // The lease is released once the driver is done.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(h.engine.store().lease(&battle.id).unwrap().is_none());
}

#[tokio::test]
async fn resume_keeps_finished_work_and_reruns_what_was_lost() {
    let h = Harness::new().await;
    h.local.set_model("a", script(10, 500.0));
    h.local.set_model("b", script(10, 500.0));
    h.local.set_model("c", script(10, 500.0));
    let battle = h
        .engine
        .create_battle(h.request("go", &["debugger@a", "debugger@b", "debugger@c"]))
        .await
        .unwrap();
    // Simulate a driver that finished `a`, was running `b`, and died: run the
    // battle on an engine whose driving we abandon once `a` is done.
    let doomed = h.second_engine();
    let run = {
        let (engine, id) = (doomed.clone(), battle.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    h.local.set_model("b", script(1000, 20.0)); // b will still be running
                                                // `b` is recorded running a moment before its request leaves; under
                                                // load that moment is long enough for the abort to come first, and
                                                // then nothing was lost. Both, then.
    loop {
        let b = h.engine.battle(&battle.id).await.unwrap();
        if b.contestants[1].status == ContestantStatus::Running
            && h.local.requests_for("b").len() == 1
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    run.abort();
    let _ = run.await;
    drop(doomed);
    // Its lease would live on until expiry; a dead process's lease is freed
    // at once, which the CLI test exercises with a real SIGKILL. Here, expire it.
    h.engine
        .store()
        .transact(|tx| {
            tx.exec_raw("UPDATE leases SET expires_at = 0", &[])?;
            Ok(())
        })
        .unwrap();
    h.local.set_model("b", script(10, 500.0));

    let resumed = h.engine.resume(None).await.unwrap();
    assert_eq!(resumed.len(), 1);
    let b = &resumed[0];
    assert_eq!(b.status, BattleStatus::Done);
    assert!(b
        .contestants
        .iter()
        .all(|c| c.status == ContestantStatus::Done));
    assert_eq!(
        h.local.requests_for("a").len(),
        1,
        "finished work must not run twice"
    );
    assert_eq!(h.local.requests_for("b").len(), 2, "lost work is run again");
    assert_eq!(h.local.requests_for("c").len(), 1);
    assert_eq!(b.contestants[1].attempts, 2);
    for c in &b.contestants {
        assert!(c.result_path.as_ref().unwrap().exists());
    }
}

/// A driver that lost its lease (it stalled, and another process took the
/// battle over) writes nothing more: not its contestants' output, not their
/// end, not the battle's.
#[tokio::test]
async fn a_driver_that_lost_its_lease_writes_nothing_more() {
    let h = Harness::new().await;
    h.local.set_model("slow", script(60, 40.0));
    let battle = h
        .engine
        .create_battle(h.request("go", &["debugger@slow", "explainer@slow"]))
        .await
        .unwrap();
    let run = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    // Once output streams, another process takes the lease over.
    let mut stolen_at = 0;
    for _ in 0..200 {
        let events = h
            .engine
            .store()
            .events_since(&battle.id, 0, 10_000)
            .unwrap();
        if events
            .iter()
            .any(|e| matches!(e.kind, arena_core::EventKind::Output { .. }))
        {
            stolen_at = h
                .engine
                .store()
                .transact(|tx| {
                    tx.exec_raw(
                        "UPDATE leases SET owner = 'the-new-driver', expires_at = ?1 WHERE battle_id = ?2",
                        &[SqlValue::Int(i64::MAX), SqlValue::Text(battle.id.clone())],
                    )?;
                    // Both journals, the kept one and the live one, and
                    // the answers' ends numbered on their rows.
                    let seq = tx.query_i64(
                        "SELECT MAX(m) FROM (SELECT MAX(seq) AS m FROM events WHERE battle_id = ?1
                         UNION ALL SELECT MAX(seq) FROM live.events WHERE battle_id = ?1
                         UNION ALL SELECT MAX(end_seq) FROM contestants WHERE battle_id = ?1) AS both_journals",
                        &[SqlValue::Text(battle.id.clone())],
                    )?;
                    Ok(seq.unwrap_or(0) as u64)
                })
                .unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(stolen_at > 0, "the battle never streamed");
    let ended = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(ended, Err(Error::Conflict(_))), "{ended:?}");
    let after = h
        .engine
        .store()
        .events_since(&battle.id, stolen_at, 10_000)
        .unwrap();
    assert!(
        after.is_empty(),
        "written after losing the lease: {after:?}"
    );
    let b = h.engine.battle(&battle.id).await.unwrap();
    assert_eq!(
        b.status,
        BattleStatus::Running,
        "the new driver finishes it"
    );
    assert_eq!(b.contestants[0].status, ContestantStatus::Running);
    assert_eq!(b.contestants[1].status, ContestantStatus::Queued);
}

/// A clock an hour ahead of the system's (a machine set wrong).
struct AnHourAhead;

impl arena_core::clock::Clock for AnHourAhead {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        arena_core::clock::SystemClock.now() + chrono::Duration::hours(1)
    }
}

/// On a team database leases are kept by the database's clock: a machine
/// whose clock runs an hour ahead does not take a battle another machine is
/// driving (by its own clock, that lease ran out long ago).
#[tokio::test]
async fn a_machine_with_its_clock_an_hour_ahead_takes_no_running_battle() {
    let own_cluster;
    let team = match team_database() {
        Some(db) => (db.url(), db.password().to_string(), Some(db)),
        None => {
            let Some(cluster) = arena_testdb::Cluster::for_test("clock_an_hour_ahead") else {
                return;
            };
            own_cluster = cluster;
            let db = own_cluster.create_database().unwrap();
            (
                own_cluster.url(&db),
                own_cluster.password().to_string(),
                None,
            )
        }
    };
    let (url, password, _keep) = team;
    let h = Harness::new().await;
    h.local.set_model("slow", script(1000, 50.0));
    h.cloud.set_model("slowc", script(1000, 50.0));
    let mut config = arena_core::config::Config::clone(&h.engine.config());
    config.database_url = Some(url);
    let engine = |machine: &str, ahead: bool| {
        let mut options = options(h.data.path().to_path_buf(), config.clone(), Some(&password));
        options.machine = Some(machine.into());
        if ahead {
            options.clock = std::sync::Arc::new(AnHourAhead);
        }
        arena_core::Engine::open(options).unwrap()
    };
    let (alpha, beta) = (engine("alpha", false), engine("beta", true));
    let battle = alpha
        .create_battle(h.request("go", &["debugger@slow", "debugger@slowc"]))
        .await
        .unwrap();
    let run = {
        let (alpha, id) = (alpha.clone(), battle.id.clone());
        tokio::spawn(async move { alpha.run_battle(&id).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    match beta.run_battle(&battle.id).await {
        Err(Error::Conflict(msg)) => assert!(msg.contains("is being run by"), "{msg}"),
        other => panic!("the machine an hour ahead took the battle: {other:?}"),
    }
    assert!(beta.resume(None).await.unwrap().is_empty());
    let after = beta.cancel_battle(&battle.id).await.unwrap();
    assert_eq!(after.status, BattleStatus::Cancelled);
    let finished = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(finished.status, BattleStatus::Cancelled);
}
