//! The history and the leaderboard at scale: `Engine::battle_page` over
//! battles that ran for real, and the leaderboard's bulk read giving what
//! reading every battle one by one gave.

mod common;

use std::collections::BTreeMap;

use arena_core::analysis::{Analysis, AnalysisStatus, Outcome};
use arena_core::battle::{
    BattleQuery, BattleStatus, BattleType, Benchmark, ContestantStatus, Lane, RunSpec, Winner,
    WinnerSource,
};
use arena_core::leaderboard::{self, BattleOutcome, Entry, Leaderboard, Options, Player, Verdict};
use arena_core::store::{NewBattle, NewContestant, Store};
use arena_core::Engine;
use arena_testserver::ModelScript;
use chrono::{DateTime, Utc};
use common::Harness;

#[tokio::test]
async fn battle_page_searches_battles_that_ran() {
    let h = Harness::new().await;
    h.cloud.set_model("gpt-test", ModelScript::text("Hello."));
    h.cloud.set_model("other-model", ModelScript::text("Hi."));
    let first = h.run(&["debugger@gpt-test", "explainer@other-model"]).await;
    let request = h.request(
        "Write 100% of a haiku",
        &["architect@gpt-test", "debugger@other-model"],
    );
    let created = h.engine.create_battle(request).await.unwrap();
    let second = h.engine.run_battle(&created.id).await.unwrap();
    assert_eq!(second.status, BattleStatus::Done);

    let page = |search: &str| {
        let engine = h.engine.clone();
        let query = BattleQuery {
            search: Some(search.to_string()),
            ..BattleQuery::default()
        };
        async move { engine.battle_page(query).await.unwrap() }
    };
    let (all, total) = page("").await;
    assert_eq!(total, 2);
    assert_eq!(all[0].id, second.id);
    assert_eq!(all[1].id, first.id);
    assert_eq!(all[0].contestants.len(), 2);
    assert!(
        all[0].contestants[0].output.is_none(),
        "a listing has no outputs"
    );

    let (found, total) = page("HAIKU").await;
    assert_eq!((found[0].id.as_str(), total), (second.id.as_str(), 1));
    let (found, total) = page("architect").await;
    assert_eq!((found[0].id.as_str(), total), (second.id.as_str(), 1));
    let (found, total) = page("explainer@other").await;
    assert_eq!((found[0].id.as_str(), total), (first.id.as_str(), 1));
    assert_eq!(page("cloud").await.1, 2, "the provider");
    assert_eq!(page("100%").await.1, 1);
    assert_eq!(page("lanes. gpt-test").await.1, 1);

    let (page2, total) = h
        .engine
        .battle_page(BattleQuery {
            limit: 1,
            offset: 1,
            status: Some(BattleStatus::Done),
            ..BattleQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (page2.len(), page2[0].id.as_str(), total),
        (1, first.id.as_str(), 2)
    );
    let (none, total) = h
        .engine
        .battle_page(BattleQuery {
            battle_type: Some(BattleType::Coding),
            ..BattleQuery::default()
        })
        .await
        .unwrap();
    assert!(none.is_empty());
    assert_eq!(total, 0);
}

/// A small deterministic generator (no dependency for a test).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// `n` battles of every kind: Q&A and Coding, finished, failed, cancelled
/// and running; contestants that finished or failed; winners chosen by the
/// user or by an analysis; analyses with no clear winner, failed ones, and
/// older ones superseded by a newer one; battles created at the same instant.
fn seed_varied(store: &Store, n: u64) {
    const IDENTITIES: [&str; 4] = ["debugger", "explainer", "architect", "aider"];
    const MODELS: [&str; 5] = ["qwen3-8b", "gpt-4o", "claude", "llama", "mistral"];
    let mut rng = Lcg(7);
    store
        .transact(|tx| {
            for k in 0..n {
                let id = format!("battle-{k:04}");
                let created = 1_000 * (k as i64 / 3); // three at each instant
                let battle_type = if rng.next(4) == 0 {
                    BattleType::Coding
                } else {
                    BattleType::Qa
                };
                let count = 1 + rng.next(4) as usize;
                let contestants: Vec<NewContestant> = (0..count)
                    .map(|i| NewContestant {
                        id: format!("{id}-c{i}"),
                        identity: IDENTITIES[rng.next(4) as usize].into(),
                        model: MODELS[rng.next(5) as usize].into(),
                        provider: "cloud".into(),
                        lane: Lane::Cloud,
                        run: RunSpec::default(),
                        label: None,
                    })
                    .collect();
                // (identity, model) is unique within a battle.
                let mut seen = std::collections::HashSet::new();
                let contestants: Vec<NewContestant> = contestants
                    .into_iter()
                    .filter(|c| seen.insert((c.identity.clone(), c.model.clone())))
                    .collect();
                tx.insert_battle(&NewBattle {
                    id: id.clone(),
                    battle_type,
                    prompt: format!("prompt {k}"),
                    project: "/tmp/p".into(),
                    results_path: "/tmp/p/Arena/x".into(),
                    created_at: at(created),
                    contestants,
                    base_commit: None,
                    check_command: None,
                    series: None,
                    blind: false,
                    tags: Vec::new(),
                })?;
                let status = match rng.next(10) {
                    0 => BattleStatus::Running,
                    1 => BattleStatus::Cancelled,
                    2 => BattleStatus::Error,
                    _ => BattleStatus::Done,
                };
                if status == BattleStatus::Running {
                    continue;
                }
                let t = at(created + 500);
                for c in tx.contestants(&id)? {
                    tx.move_contestant(
                        &c,
                        ContestantStatus::Queued,
                        ContestantStatus::Running,
                        None,
                        t,
                    )?;
                    let c = tx.contestant(&c.id)?;
                    let finished = if rng.next(5) == 0 {
                        ContestantStatus::Error
                    } else {
                        ContestantStatus::Done
                    };
                    let bench = Benchmark {
                        duration_ms: (rng.next(6) != 0).then(|| 100 + rng.next(5000)),
                        tokens_per_sec: (rng.next(6) != 0).then(|| rng.next(2000) as f64 / 10.0),
                        cost_usd: (rng.next(3) != 0).then(|| rng.next(100) as f64 / 1000.0),
                        ..Benchmark::default()
                    };
                    tx.finish_contestant(&c, finished, None, "out", "", false, &bench, t)?;
                }
                tx.finish_battle(&id, status, t)?;
                let positions = tx.contestants(&id)?.len() as u64;
                // Analyses: none, one, or an older one and a newer one.
                for a in 0..rng.next(3) {
                    let outcome = match rng.next(4) {
                        0 => Some(Outcome::NoClearWinner),
                        1 => Some(Outcome::JudgeError),
                        _ => Some(Outcome::Winner),
                    };
                    let winner = (outcome == Some(Outcome::Winner))
                        .then(|| format!("{id}-c{}", rng.next(positions)));
                    let analysis = Analysis {
                        id: format!("{id}-a{a}"),
                        battle_id: id.clone(),
                        status: if rng.next(8) == 0 {
                            AnalysisStatus::Error
                        } else {
                            AnalysisStatus::Done
                        },
                        model: "judge".into(),
                        provider: "cloud".into(),
                        outcome,
                        winner: winner.clone(),
                        ranking: Vec::new(),
                        reasons: BTreeMap::new(),
                        digests: Vec::new(),
                        judge_runs: Vec::new(),
                        error: None,
                        created_at: at(created + 600 + a as i64),
                        finished_at: None,
                        cost_usd: None,
                    };
                    tx.insert_analysis(&analysis)?;
                    tx.finish_analysis(&analysis, t)?;
                    if let Some(w) = winner {
                        let w = Winner {
                            contestant_id: w,
                            source: WinnerSource::Analysis,
                        };
                        tx.set_winner(&id, Some(&w), t)?;
                    }
                }
                if rng.next(6) == 0 {
                    let w = Winner {
                        contestant_id: format!("{id}-c{}", rng.next(positions)),
                        source: WinnerSource::User,
                    };
                    tx.set_winner(&id, Some(&w), t)?;
                }
            }
            Ok(())
        })
        .unwrap();
}

/// The leaderboard as the engine computed it before the bulk read: every
/// battle with its contestants, one by one.
fn leaderboard_one_by_one(store: &Store, battle_type: Option<BattleType>) -> Leaderboard {
    let battles = store.battles(usize::MAX >> 1).unwrap();
    let analysed = store.analysis_outcomes().unwrap();
    let outcomes: Vec<BattleOutcome> = battles
        .into_iter()
        .filter(|b| b.status.is_terminal())
        // With its outputs, which a listing leaves out.
        .map(|b| store.battle(&b.id).unwrap())
        .map(|b| {
            let done: Vec<_> = b
                .contestants
                .iter()
                .filter(|c| c.status == ContestantStatus::Done)
                .collect();
            let place = |id: &str| done.iter().position(|c| c.id == id);
            let user = match (&b.winner, b.user_verdict) {
                (Some(w), _) if w.source == WinnerSource::User => {
                    place(&w.contestant_id).map_or(Verdict::None, Verdict::Winner)
                }
                (_, Some(_)) => Verdict::Tie,
                _ => Verdict::None,
            };
            let judge = match analysed.get(&b.id) {
                Some((Outcome::Winner | Outcome::Walkover, Some(w))) => {
                    place(w).map_or(Verdict::None, Verdict::Winner)
                }
                Some((Outcome::NoClearWinner, _)) => Verdict::Tie,
                _ => Verdict::None,
            };
            BattleOutcome {
                battle_id: b.id.clone(),
                battle_type: b.battle_type,
                entries: done
                    .iter()
                    .map(|c| Entry {
                        player: Player::new(c.identity.clone(), c.model.clone()),
                        duration_ms: c.benchmark.duration_ms,
                        tokens_per_sec: c.benchmark.tokens_per_sec,
                        cost_usd: c.benchmark.cost_usd,
                        output_chars: c.output.as_ref().map(|o| o.chars().count() as u64),
                    })
                    .collect(),
                user,
                judge,
            }
        })
        .collect();
    leaderboard::compute(
        &outcomes,
        &Options {
            battle_type,
            ..Options::default()
        },
    )
}

#[tokio::test]
async fn the_leaderboard_is_what_reading_every_battle_gave() {
    let h = Harness::new().await;
    seed_varied(h.engine.store(), 600);
    let engine: &Engine = &h.engine;
    for battle_type in [None, Some(BattleType::Qa), Some(BattleType::Coding)] {
        let bulk = engine
            .leaderboard(arena_core::LeaderboardQuery {
                battle_type,
                ..Default::default()
            })
            .await
            .unwrap();
        let reference = leaderboard_one_by_one(engine.store(), battle_type);
        let standings = &bulk.standings;
        assert!(
            standings.len() >= 10,
            "{battle_type:?}: {} players",
            standings.len()
        );
        assert!(standings.iter().any(|s| s.wins > 0) && standings.iter().any(|s| s.ties > 0));
        assert_eq!(bulk, reference, "{battle_type:?}");
    }
}
