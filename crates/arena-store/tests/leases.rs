//! Only the battle's driver writes its contestants: a process that lost
//! the lease (it stalled, and another resumed the battle) is refused.

use std::path::{Path, PathBuf};

use arena_domain::battle::{BattleType, CheckResult, DiffSummary, Lane, RunSpec};
use arena_domain::decisions::Lease;
use arena_store::{Error, NewBattle, NewContestant, Store};
use chrono::Utc;

fn lease(owner: &str) -> Lease {
    Lease {
        owner: owner.into(),
        host: "h".into(),
        pid: 1,
        expires_at_ms: i64::MAX,
    }
}

mod common;

/// Battle `b1` (contestant `c1`), whose lease `a` holds, in `store`.
fn seed_battle_driven_by_a(store: &Store) {
    store
        .transact(|tx| {
            tx.insert_battle(&NewBattle {
                id: "b1".into(),
                battle_type: BattleType::Coding,
                prompt: "p".into(),
                project: "/tmp".into(),
                results_path: "/tmp/Arena/b1".into(),
                created_at: Utc::now(),
                contestants: vec![NewContestant {
                    id: "c1".into(),
                    identity: "debugger".into(),
                    model: "m".into(),
                    provider: "p".into(),
                    lane: Lane::Local,
                    run: RunSpec::default(),
                    label: None,
                }],
                base_commit: Some("abc".into()),
                check_command: None,
                series: None,
                blind: false,
                tags: Vec::new(),
                machine: None,
                user_name: None,
            })?;
            assert!(tx.take_lease("b1", &lease("a"), 0, |_| true)?);
            Ok(())
        })
        .unwrap();
}

/// A SQLite store with [`seed_battle_driven_by_a`], and its folder.
fn battle_driven_by_a() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("arena.db")).unwrap();
    seed_battle_driven_by_a(&store);
    (dir, store)
}

each_backend! {
fn a_stale_owner_cannot_set_a_worktree(store: &Store) {
    seed_battle_driven_by_a(store);
    let a = store.clone().acting_as("a");
    let b = store.clone().acting_as("b");
    a.transact(|tx| {
        let c = tx.contestant("c1")?;
        tx.set_worktree(&c, Path::new("/wt/a"))
    })
    .unwrap();

    let refused = b.transact(|tx| {
        let c = tx.contestant("c1")?;
        tx.set_worktree(&c, Path::new("/wt/b"))
    });
    assert!(
        matches!(&refused, Err(Error::Conflict(msg)) if msg.contains("driven by process")),
        "{refused:?}"
    );
    let c = &store.battle("b1").unwrap().contestants[0];
    assert_eq!(c.worktree, Some(PathBuf::from("/wt/a")));
}
}

each_backend! {
fn a_stale_owner_cannot_record_a_diff_or_check(store: &Store) {
    seed_battle_driven_by_a(store);
    let diff = DiffSummary {
        files: 1,
        insertions: 2,
        deletions: 0,
        omitted: Vec::new(),
        environment: None,
    };
    let check = CheckResult {
        command: "cargo test".into(),
        exit_code: Some(0),
        passed: true,
        timed_out: false,
        duration_ms: 10,
        output_tail: "ok".into(),
        ..Default::default()
    };
    let refused = store.clone().acting_as("b").transact(|tx| {
        let c = tx.contestant("c1")?;
        tx.set_diff_and_check(&c, Some(&diff), Some(&check))
    });
    assert!(matches!(refused, Err(Error::Conflict(_))), "{refused:?}");
    let c = &store.battle("b1").unwrap().contestants[0];
    assert_eq!((c.diff.as_ref(), c.check.as_ref()), (None, None));

    // The driver itself records them.
    store
        .clone()
        .acting_as("a")
        .transact(|tx| {
            let c = tx.contestant("c1")?;
            tx.set_diff_and_check(&c, Some(&diff), Some(&check))
        })
        .unwrap();
    let c = &store.battle("b1").unwrap().contestants[0];
    assert_eq!(
        (c.diff.as_ref(), c.check.as_ref()),
        (Some(&diff), Some(&check))
    );
}
}

/// An answer's deltas are in the live journal: another process's store
/// reads them with the rest of the battle's events, in one sequence; the
/// driver's fold leaves one `folded` event in their place (and a stale
/// owner cannot fold); the last store to close removes the live journal.
#[test]
fn the_live_journal_is_shared_then_folded_by_the_driver() {
    use arena_domain::event::EventKind;
    let (dir, store) = battle_driven_by_a();
    let a = store.clone().acting_as("a");
    let elsewhere = Store::open(&dir.path().join("arena.db")).unwrap();
    let now = Utc::now();
    a.transact(|tx| {
        tx.emit(
            "b1",
            Some("c1"),
            now,
            EventKind::Reset { reason: "r".into() },
        )?;
        tx.emit_live(
            "b1",
            Some("c1"),
            now,
            EventKind::Output { text: "hel".into() },
        )?;
        tx.emit_live(
            "b1",
            Some("c1"),
            now,
            EventKind::Output { text: "lo".into() },
        )?;
        Ok(())
    })
    .unwrap();
    let seen = elsewhere.events_since("b1", 0, 100).unwrap();
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    // (1 is the battle's creation.)
    assert_eq!(seqs, [1, 2, 3, 4], "{seen:?}");
    assert!(matches!(&seen[3].kind, EventKind::Output { text } if text == "lo"));

    let c = store.battle("b1").unwrap().contestants[0].clone();
    assert!(a.transact(|tx| tx.start_answer(&c, now)).unwrap());
    let started = elsewhere.events_since("b1", 4, 100).unwrap();
    assert!(
        matches!(&started[..], [e] if e.kind.name() == "contestant_status" && e.seq == 5),
        "the start is journaled live, with the deltas: {started:?}"
    );
    let c = store.battle("b1").unwrap().contestants[0].clone();
    let bench = arena_domain::battle::Benchmark::default();
    let end = arena_store::AnswerEnd {
        status: arena_domain::battle::ContestantStatus::Done,
        error: None,
        output: "hello",
        reasoning: "",
        truncated: false,
        bench: &bench,
        result_path: None,
    };
    let b = store.clone().acting_as("b");
    assert!(b.transact(|tx| tx.end_answer(&c, &end, now)).is_err());
    assert!(a.transact(|tx| tx.end_answer(&c, &end, now)).unwrap());
    let after = elsewhere.events_since("b1", 0, 100).unwrap();
    let kinds: Vec<&str> = after.iter().map(|e| e.kind.name()).collect();
    assert_eq!(
        kinds,
        [
            "battle_status",
            "reset",
            "benchmark",
            "contestant_status",
            "folded"
        ]
    );
    let seqs: Vec<u64> = after.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 6, 7, 8], "the end follows every delta");
    assert!(matches!(&after[4].kind, EventKind::Folded { output, .. } if output == "hello"));
    // A viewer that saw part of the end gets the rest, and paging stops
    // at the limit inside the end's one row.
    let rest = elsewhere.events_since("b1", 6, 100).unwrap();
    assert_eq!(rest.iter().map(|e| e.seq).collect::<Vec<_>>(), [7, 8]);
    let page = elsewhere.events_since("b1", 2, 2).unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [6, 7]);
    assert!(
        a.transact(|tx| tx.end_answer(&c, &end, now))
            .map(|ended| !ended)
            .unwrap(),
        "an answer ends once"
    );

    let live = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("live-"))
    };
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        assert!(
            live(dir.path()),
            "beside the database without a runtime folder"
        );
        drop((store, a, b, elsewhere));
        assert!(!live(dir.path()), "removed by the last store to close it");
    }
}
