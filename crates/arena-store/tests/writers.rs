//! Two processes writing one battle at once (two handles, two connections),
//! on SQLite (its writers take turns) and on PostgreSQL (the battle's row
//! is locked while a transaction decides): every event gets its own number,
//! with no gap and no repeat; of two processes taking a free lease at the
//! same moment, one gets it; a one-slot lane never grants two at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use arena_domain::battle::{BattleType, Lane, RunSpec};
use arena_domain::decisions::{LaneSpec, Lease};
use arena_domain::event::EventKind;
use arena_store::{NewBattle, NewContestant, Store};
use arena_store::{NewTicket, TakeTurn};
use chrono::Utc;

const PER_WRITER: usize = 40;

fn new_battle(store: &Store, id: &str) {
    store
        .transact(|tx| {
            tx.insert_battle(&NewBattle {
                id: id.into(),
                battle_type: BattleType::Qa,
                prompt: "p".into(),
                project: "/tmp".into(),
                results_path: "/tmp/Arena/b1".into(),
                created_at: Utc::now(),
                contestants: vec![NewContestant {
                    id: format!("{id}-c1"),
                    identity: "debugger".into(),
                    model: "m".into(),
                    provider: "p".into(),
                    lane: Lane::Cloud,
                    run: RunSpec::default(),
                    label: None,
                }],
                base_commit: None,
                check_command: None,
                series: None,
                blind: false,
                tags: Vec::new(),
                machine: None,
                user_name: None,
            })
        })
        .unwrap();
}

fn two_writers_number_one_battle_without_gaps_or_repeats(a: Store, b: Store) {
    new_battle(&a, "b1");
    let before = a.events_since("b1", 0, 10_000).unwrap().len();
    let writers: Vec<_> = [("a", a.clone()), ("b", b)]
        .into_iter()
        .map(|(name, store)| {
            std::thread::spawn(move || {
                for i in 0..PER_WRITER {
                    store
                        .transact(|tx| {
                            // Two events per transaction: numbered together.
                            for part in 0..2 {
                                tx.emit(
                                    "b1",
                                    None,
                                    Utc::now(),
                                    EventKind::Reset {
                                        reason: format!("{name}{i}.{part}"),
                                    },
                                )?;
                            }
                            Ok(())
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let events = a.events_since("b1", 0, 10_000).unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=(before + 4 * PER_WRITER) as u64).collect();
    assert_eq!(seqs, expected, "numbers with gaps or repeats");
    // A transaction's two events are next to each other.
    for pair in events[before..].chunks(2) {
        let reasons: Vec<String> = pair
            .iter()
            .map(|e| match &e.kind {
                EventKind::Reset { reason } => reason.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(reasons[0].replace(".0", ".1"), reasons[1], "{reasons:?}");
    }
}

fn of_two_takers_of_a_free_lease_one_gets_it(a: Store, b: Store) {
    for round in 0..15 {
        let battle = format!("race{round}");
        new_battle(&a, &battle);
        let start = Arc::new(Barrier::new(2));
        let takers: Vec<_> = [("a", a.clone()), ("b", b.clone())]
            .into_iter()
            .map(|(owner, store)| {
                let (start, battle) = (start.clone(), battle.clone());
                std::thread::spawn(move || {
                    let me = Lease {
                        owner: owner.into(),
                        host: "h".into(),
                        pid: 1,
                        expires_at_ms: i64::MAX,
                    };
                    start.wait();
                    store
                        .transact(|tx| tx.take_lease(&battle, &me, 0, |_| true))
                        .unwrap()
                })
            })
            .collect();
        let won: Vec<bool> = takers.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "round {round}: {won:?}"
        );
    }
}

fn a_one_slot_lane_grants_one_at_a_time(a: Store, b: Store) {
    const TURNS: usize = 12;
    let spec = LaneSpec {
        key: "local:http://127.0.0.1:1".into(),
        label: "one slot".into(),
        slots: 1,
        requests_per_minute: None,
        local: true,
        team: true,
    };
    let holding = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = [("a", a), ("b", b)]
        .into_iter()
        .map(|(owner, store)| {
            let (spec, holding, most) = (spec.clone(), holding.clone(), most.clone());
            std::thread::spawn(move || {
                let me = Lease {
                    owner: owner.into(),
                    host: "h".into(),
                    pid: 1,
                    expires_at_ms: i64::MAX,
                };
                for turn in 0..TURNS {
                    let now = Utc::now().timestamp_millis();
                    let ticket = store
                        .transact(|tx| {
                            tx.enqueue_ticket(&NewTicket {
                                lane: &spec.key,
                                ready_at_ms: now,
                                position: 0,
                                holder: &format!("{owner} {turn}"),
                                battle_id: None,
                                contestant_id: None,
                                model: "m",
                                lease: &me,
                            })
                        })
                        .unwrap();
                    loop {
                        let now = Utc::now().timestamp_millis();
                        let taken = store
                            .transact(|tx| tx.take_turn(ticket, &spec, "m", now, "h", |_| true))
                            .unwrap();
                        match taken {
                            TakeTurn::Granted { .. } => break,
                            TakeTurn::Wait(_) => std::thread::yield_now(),
                            TakeTurn::Lost => panic!("{owner} lost its ticket"),
                        }
                    }
                    let now_holding = holding.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now_holding, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    holding.fetch_sub(1, Ordering::SeqCst);
                    store.transact(|tx| tx.release_ticket(ticket)).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        1,
        "two held the one slot at once"
    );
}

#[test]
fn sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("arena.db");
    let (a, b) = (Store::open(&path).unwrap(), Store::open(&path).unwrap());
    two_writers_number_one_battle_without_gaps_or_repeats(a.clone(), b.clone());
    of_two_takers_of_a_free_lease_one_gets_it(a.clone(), b.clone());
    a_one_slot_lane_grants_one_at_a_time(a, b);
}

#[test]
fn postgres() {
    let Some(cluster) = arena_testdb::Cluster::for_test("writers::postgres") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let open = || Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    two_writers_number_one_battle_without_gaps_or_repeats(open(), open());
    of_two_takers_of_a_free_lease_one_gets_it(open(), open());
    a_one_slot_lane_grants_one_at_a_time(open(), open());
}
