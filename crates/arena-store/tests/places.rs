//! Series places: opened by the series' driver, claimed by workers (each
//! by one), renewed, finished, left, and taken over when a claim lapses or
//! its process is gone; on both backends, and with four claimers at once.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};

use arena_domain::battle::{BattleType, ContestantSpec};
use arena_domain::decisions::Lease;
use arena_domain::series::{Series, SeriesPrompt, SeriesRequest, SeriesStatus};
use arena_store::{PlaceState, Store, WorkerBeat};

mod common;

fn worker(owner: &str, host: &str, pid: u32, expires_at_ms: i64) -> Lease {
    Lease {
        owner: owner.into(),
        host: host.into(),
        pid,
        expires_at_ms,
    }
}

fn new_series(store: &Store, id: &str, total: u64) {
    let request = SeriesRequest::new(
        BattleType::Qa,
        "/tmp",
        vec![ContestantSpec {
            identity: "debugger".into(),
            model: "m".into(),
        }],
        vec![SeriesPrompt {
            prompt: "p".into(),
            goal: None,
            check: None,
            tags: Vec::new(),
            task: None,
        }],
    );
    let series = Series {
        id: id.into(),
        key: None,
        tags: Vec::new(),
        request,
        status: SeriesStatus::Running,
        total,
        created_at: chrono::Utc::now(),
        finished_at: None,
        decided_after: None,
        report_path: None,
        error: None,
        machine: Some("alpha".into()),
        waiting: None,
        base_commit: None,
        remote_url: None,
    };
    store.transact(|tx| tx.insert_series(&series)).unwrap();
    store.transact(|tx| tx.open_places(id, 0..total)).unwrap();
}

fn states(store: &Store, id: &str) -> Vec<PlaceState> {
    store.places(id).unwrap().iter().map(|p| p.state).collect()
}

each_backend! {
    fn a_place_is_claimed_finished_and_left(store: &Store) {
        new_series(store, "s1", 3);
        assert_eq!(store.series("s1").unwrap().machine.as_deref(), Some("alpha"));
        // Opening again keeps what is there.
        assert_eq!(store.transact(|tx| tx.open_places("s1", 0..4)).unwrap(), 1);
        let a = worker("a", "alpha", 10, 1_000);
        let ids = vec!["s1".to_string()];
        let got = store
            .transact(|tx| tx.claim_places(&a, &ids, 2, 0, |_| true))
            .unwrap();
        assert_eq!(got, vec![("s1".to_string(), 0), ("s1".to_string(), 1)]);
        let places = store.places("s1").unwrap();
        assert_eq!(places[0].owner.as_deref(), Some("a"));
        assert_eq!(places[0].host.as_deref(), Some("alpha"));
        assert_eq!(places[0].attempts, 1);

        assert!(store.transact(|tx| tx.finish_place("s1", 0, "a")).unwrap());
        // Not b's to finish or leave.
        assert!(!store.transact(|tx| tx.finish_place("s1", 1, "b")).unwrap());
        assert!(!store.transact(|tx| tx.leave_place("s1", 1, "b")).unwrap());
        assert!(store.transact(|tx| tx.leave_place("s1", 1, "a")).unwrap());
        assert_eq!(
            states(store, "s1"),
            [PlaceState::Done, PlaceState::Open, PlaceState::Open, PlaceState::Open]
        );
        let mine = vec![("s1".to_string(), 0), ("s1".to_string(), 1)];
        assert_eq!(store.transact(|tx| tx.renew_places("a", &mine, 5_000)).unwrap(), 0);

        store
            .transact(|tx| tx.refuse_series("s1", "beta", "no provider `gpu`", 7))
            .unwrap();
        store
            .transact(|tx| tx.refuse_series("s1", "beta", "no model `m`", 8))
            .unwrap();
        assert_eq!(
            store.series_refusals("s1").unwrap(),
            vec![("beta".to_string(), "no model `m`".to_string(), 8)]
        );
        store
            .transact(|tx| tx.set_series_waiting("s1", Some("no worker can serve it")))
            .unwrap();
        assert_eq!(
            store.series("s1").unwrap().waiting.as_deref(),
            Some("no worker can serve it")
        );

        assert_eq!(store.transact(|tx| tx.drop_open_places("s1")).unwrap(), 3);
        assert_eq!(
            states(store, "s1"),
            [PlaceState::Done, PlaceState::Dropped, PlaceState::Dropped, PlaceState::Dropped]
        );
        let none = store
            .transact(|tx| tx.claim_places(&a, &ids, 4, 0, |_| true))
            .unwrap();
        assert!(none.is_empty());
    }

    fn a_lapsed_claim_or_a_dead_process_loses_its_place(store: &Store) {
        new_series(store, "s2", 2);
        let ids = vec!["s2".to_string()];
        let a = worker("a", "alpha", 10, 1_000);
        let got = store
            .transact(|tx| tx.claim_places(&a, &ids, 2, 0, |_| true))
            .unwrap();
        assert_eq!(got.len(), 2);
        // Another machine waits out the claim; renewing pushes it on.
        let b = worker("b", "beta", 20, 20_000);
        let early = store
            .transact(|tx| tx.claim_places(&b, &ids, 2, 999, |_| true))
            .unwrap();
        assert!(early.is_empty());
        let mine = vec![("s2".to_string(), 0), ("s2".to_string(), 1)];
        assert_eq!(store.transact(|tx| tx.renew_places("a", &mine, 2_000)).unwrap(), 2);
        let renewed = store
            .transact(|tx| tx.claim_places(&b, &ids, 2, 1_500, |_| true))
            .unwrap();
        assert!(renewed.is_empty());
        let late = store
            .transact(|tx| tx.claim_places(&b, &ids, 1, 2_000, |_| true))
            .unwrap();
        assert_eq!(late, vec![("s2".to_string(), 0)]);
        assert_eq!(store.places("s2").unwrap()[0].attempts, 2);
        // The lost claim can no longer be finished.
        assert!(!store.transact(|tx| tx.finish_place("s2", 0, "a")).unwrap());
        // On a's own machine, a's dead process frees its place at once.
        let c = worker("c", "alpha", 30, 20_000);
        let at_once = store
            .transact(|tx| tx.claim_places(&c, &ids, 2, 1_500, |pid| pid != 10))
            .unwrap();
        assert_eq!(at_once, vec![("s2".to_string(), 1)]);

        // Places held by live processes of this machine do not hide the
        // open ones behind them; a claimer's own lapsed claims are work it
        // still runs, never claimed again by it.
        new_series(store, "s4", 40);
        let ids4 = vec!["s4".to_string()];
        let busy = worker("busy", "alpha", 50, 1_000);
        let held = store
            .transact(|tx| tx.claim_places(&busy, &ids4, 30, 0, |_| true))
            .unwrap();
        assert_eq!(held.len(), 30);
        let other = worker("other", "alpha", 60, 1_000);
        let got = store
            .transact(|tx| tx.claim_places(&other, &ids4, 4, 500, |_| true))
            .unwrap();
        let slots: Vec<u64> = got.iter().map(|(_, slot)| *slot).collect();
        assert_eq!(slots, [30, 31, 32, 33]);
        let again = store
            .transact(|tx| tx.claim_places(&busy, &ids4, 3, 500, |_| true))
            .unwrap();
        let slots: Vec<u64> = again.iter().map(|(_, slot)| *slot).collect();
        assert_eq!(slots, [34, 35, 36]);

        // A cancelled series gives nothing more.
        new_series(store, "s3", 1);
        store.transact(|tx| tx.request_series_cancel("s3")).unwrap();
        let cancelled = store
            .transact(|tx| tx.claim_places(&c, &["s3".to_string()], 1, 0, |_| true))
            .unwrap();
        assert!(cancelled.is_empty());
    }

    fn workers_say_they_serve(store: &Store) {
        let beat = |owner: &str, seen_at_ms| WorkerBeat {
            owner: owner.into(),
            machine: "alpha".into(),
            pid: 7,
            role: "worker".into(),
            user: Some("ada".into()),
            places: 4,
            taken: 1,
            started_at_ms: 1,
            seen_at_ms,
        };
        store.transact(|tx| tx.beat_worker(&beat("w1", 100))).unwrap();
        store.transact(|tx| tx.beat_worker(&beat("w2", 10))).unwrap();
        store.transact(|tx| tx.beat_worker(&beat("w1", 200))).unwrap();
        assert_eq!(store.workers_seen(50).unwrap(), vec![beat("w1", 200)]);
        store.transact(|tx| tx.forget_worker("w1")).unwrap();
        assert!(store.workers_seen(50).unwrap().is_empty());
    }
}

/// Four claimers on four handles at once, one place at a time: every
/// place goes to exactly one of them.
fn four_claimers_take_each_place_once(stores: Vec<Store>) {
    new_series(&stores[0], "race", 60);
    let start = Arc::new(Barrier::new(stores.len()));
    let claimers: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(i, store)| {
            let start = start.clone();
            std::thread::spawn(move || {
                let me = worker(&format!("w{i}"), "alpha", i as u32, i64::MAX);
                let ids = vec!["race".to_string()];
                start.wait();
                let mut mine = Vec::new();
                loop {
                    let got = store
                        .transact(|tx| tx.claim_places(&me, &ids, 1, 0, |_| true))
                        .unwrap();
                    if got.is_empty() {
                        break mine;
                    }
                    mine.extend(got.into_iter().map(|(_, slot)| slot));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(claimer.join().unwrap());
    }
    let unique: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(all.len(), 60, "a place was claimed twice: {all:?}");
    assert_eq!(unique.len(), 60);
}

#[test]
fn four_claimers_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("arena.db");
    let stores = (0..4).map(|_| Store::open(&path).unwrap()).collect();
    four_claimers_take_each_place_once(stores);
}

#[test]
fn four_claimers_on_postgres() {
    let Some(cluster) = arena_testdb::Cluster::for_test("places::four_claimers_on_postgres") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let stores = (0..4)
        .map(|_| Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap())
        .collect();
    four_claimers_take_each_place_once(stores);
}
