//! A team database's notices: a lane slot given back on one "machine"
//! (store handle) reaches another's listener, and a listener that lost its
//! connection comes back and says notices may have been missed.

use std::time::{Duration, Instant};

use arena_domain::decisions::Lease;
use arena_store::{NewTicket, Notice, Store};

fn lease() -> Lease {
    Lease {
        owner: "alpha-process".into(),
        host: "alpha".into(),
        pid: 1,
        expires_at_ms: i64::MAX,
    }
}

/// The next notice within `within`, if any.
fn next(rx: &mut tokio::sync::broadcast::Receiver<Notice>, within: Duration) -> Option<Notice> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        match rx.try_recv() {
            Ok(notice) => return Some(notice),
            Err(tokio::sync::broadcast::error::TryRecvError::Empty) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!("{e}"),
        }
    }
    None
}

/// Joins `lane`'s queue as a process of machine alpha.
fn enqueue(store: &Store, lane: &str) -> arena_store::Result<i64> {
    store.transact(|tx| {
        tx.enqueue_ticket(&NewTicket {
            lane,
            ready_at_ms: 0,
            position: 0,
            holder: "battle 1a2b3c4d, contestant 1",
            battle_id: None,
            contestant_id: None,
            model: "m",
            lease: &lease(),
        })
    })
}

fn wait_healthy(listener: &arena_store::Listener) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !listener.healthy() {
        assert!(Instant::now() < deadline, "the listener never listened");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_slot_given_back_on_one_machine_wakes_the_lanes_waiters_on_another() {
    let Some(cluster) = arena_testdb::Cluster::for_test("notices") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let alpha = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    let beta = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    let listener = beta.listener().expect("a team database is listened to");
    let mut notices = listener.subscribe();
    wait_healthy(&listener);

    let ticket = enqueue(&alpha, "local:server:shared-box").unwrap();
    // Joining a queue frees nothing: no notice.
    assert_eq!(next(&mut notices, Duration::from_millis(300)), None);
    alpha.transact(|tx| tx.release_ticket(ticket)).unwrap();
    assert_eq!(
        next(&mut notices, Duration::from_secs(5)),
        Some(Notice::Lane("local:server:shared-box".into()))
    );
    // A ticket given back twice (already gone) tells nobody.
    alpha.transact(|tx| tx.release_ticket(ticket)).unwrap();
    assert_eq!(next(&mut notices, Duration::from_millis(300)), None);

    // The server restarts: the listener listens again and says that
    // notices may have been missed meanwhile.
    cluster.restart().unwrap();
    assert_eq!(
        next(&mut notices, Duration::from_secs(15)),
        Some(Notice::Resync)
    );
    wait_healthy(&listener);
    // The store rides out the restart: its first statement after it
    // finds the old connection gone and is made again on a new one.
    let again = enqueue(&alpha, "cloud:openai").unwrap();
    alpha.transact(|tx| tx.release_ticket(again)).unwrap();
    assert_eq!(
        next(&mut notices, Duration::from_secs(5)),
        Some(Notice::Lane("cloud:openai".into()))
    );
}

#[test]
fn sqlite_has_no_listener() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("arena.db")).unwrap();
    assert!(store.listener().is_none());
    assert!(!store.is_team());
}
