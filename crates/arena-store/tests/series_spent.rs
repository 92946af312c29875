//! What a series spent, on both backends: the known costs add up even
//! while some are unknown (a cloud model without a price), and the models
//! that ran without a known cost are named once each. (The progress query
//! gave `None` for the whole amount as soon as one cost was unknown, so a
//! series read "spent $0" while it ran and "—" once it was done.)

use arena_domain::battle::{
    BattleStatus, BattleType, Benchmark, ContestantSpec, ContestantStatus, Lane, RunSpec,
};
use arena_domain::series::{Series, SeriesPrompt, SeriesRequest, SeriesStatus};
use arena_store::{NewBattle, NewContestant, Store};
use chrono::{DateTime, Utc};

mod common;

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

fn new_series(store: &Store, id: &str) {
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
        total: 2,
        created_at: at(0),
        finished_at: None,
        decided_after: None,
        report_path: None,
        error: None,
        machine: None,
        waiting: None,
        base_commit: None,
        remote_url: None,
    };
    store.transact(|tx| tx.insert_series(&series)).unwrap();
}

/// A battle of the series whose contestants ran on `(model, provider,
/// cost)`; finished when `ended`, else both still running.
fn battle(store: &Store, id: &str, slot: u64, who: &[(&str, &str, Option<f64>)], ended: bool) {
    store
        .transact(|tx| {
            tx.insert_battle(&NewBattle {
                id: id.into(),
                battle_type: BattleType::Qa,
                prompt: "p".into(),
                project: "/tmp".into(),
                results_path: format!("/tmp/Arena/{id}").into(),
                created_at: at(1000),
                contestants: who
                    .iter()
                    .enumerate()
                    .map(|(i, (model, provider, _))| NewContestant {
                        id: format!("{id}-c{i}"),
                        identity: "debugger".into(),
                        model: model.to_string(),
                        provider: provider.to_string(),
                        lane: Lane::Cloud,
                        run: RunSpec::default(),
                        label: None,
                    })
                    .collect(),
                base_commit: None,
                check_command: None,
                series: Some(("s1".into(), slot)),
                blind: false,
                tags: Vec::new(),
                machine: None,
                user_name: None,
            })?;
            let t = at(2000);
            for (c, (_, _, cost)) in tx.contestants(id)?.iter().zip(who) {
                tx.move_contestant(
                    c,
                    ContestantStatus::Queued,
                    ContestantStatus::Running,
                    None,
                    t,
                )?;
                if !ended {
                    continue;
                }
                let c = tx.contestant(&c.id)?;
                let bench = Benchmark {
                    cost_usd: *cost,
                    ..Benchmark::default()
                };
                tx.finish_contestant(&c, ContestantStatus::Done, None, "a", "", false, &bench, t)?;
            }
            if ended {
                tx.finish_battle(id, BattleStatus::Done, t)?;
            }
            Ok(())
        })
        .unwrap();
}

each_backend! {
    fn the_known_costs_add_up_while_an_unpriced_model_is_named(store: &Store) {
        new_series(store, "s1");
        // Running: nothing has ended, nothing is unknown yet.
        battle(store, "b1", 0, &[("priced", "cloud", None), ("gpt-4.1", "cloud", None)], false);
        let (done, running, spent) = store.series_progress("s1").unwrap();
        assert_eq!((done, running), (0, 1));
        assert_eq!((spent.known_usd, spent.unknown, spent.total()), (0.0, 0, Some(0.0)));

        // Two battles ended: the priced model's costs are kept, the
        // unpriced one's runs counted and its model named once.
        battle(store, "b2", 1, &[("priced", "cloud", Some(0.25)), ("gpt-4.1", "cloud", None)], true);
        battle(store, "b3", 2, &[("priced", "cloud", Some(0.5)), ("gpt-4.1", "cloud", None)], true);
        let (_, _, spent) = store.series_progress("s1").unwrap();
        assert!((spent.known_usd - 0.75).abs() < 1e-9, "{spent:?}");
        assert_eq!(spent.unknown, 2);
        assert_eq!(spent.total(), None);
        assert_eq!(
            spent.unknown_models,
            vec![("cloud".to_string(), "gpt-4.1".to_string())]
        );
        // The read with the pace says the same.
        let ((_, _, with_pace), _) = store.series_progress_and_pace("s1").unwrap();
        assert_eq!(with_pace, spent);
    }
}
