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

/// A store with battle `b1` (contestant `c1`), whose lease `a` holds.
fn battle_driven_by_a() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("arena.db")).unwrap();
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
            })?;
            assert!(tx.take_lease("b1", &lease("a"), 0, |_| true)?);
            Ok(())
        })
        .unwrap();
    (dir, store)
}

#[test]
fn a_stale_owner_cannot_set_a_worktree() {
    let (_dir, store) = battle_driven_by_a();
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

#[test]
fn a_stale_owner_cannot_record_a_diff_or_check() {
    let (_dir, store) = battle_driven_by_a();
    let diff = DiffSummary {
        files: 1,
        insertions: 2,
        deletions: 0,
        omitted: Vec::new(),
    };
    let check = CheckResult {
        command: "cargo test".into(),
        exit_code: Some(0),
        passed: true,
        timed_out: false,
        duration_ms: 10,
        output_tail: "ok".into(),
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
