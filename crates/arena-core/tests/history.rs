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
                    machine: None,
                    user_name: None,
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

/// Each battle records the machine that ran it and who started it, a
/// series' battles too; the user's verdict records who gave it (clearing
/// it forgets them); the leaderboard selects by machine and by voter.
#[tokio::test]
async fn a_battle_records_its_machine_and_who_gave_the_verdict() {
    use arena_core::blind::Vote;
    use arena_core::config::Config;
    use arena_core::series::{parse_prompts, SeriesRequest, SeriesStatus};
    use arena_core::{BattleRequest, EngineOptions, LeaderboardQuery, SeriesStart};

    let h = Harness::new().await;
    h.cloud.set_model("m1", ModelScript::text("One."));
    h.cloud
        .set_model("m2", ModelScript::text("Two, a little longer."));
    let contestants = ["debugger@m1", "explainer@m2"];
    // Another machine and its user, on the same database.
    let machine = |machine: &str, user: &str| {
        Engine::open(EngineOptions {
            machine: Some(machine.into()),
            user: Some(user.into()),
            ..h.options(Config::clone(&h.engine.config()))
        })
        .expect("engine")
    };
    let beta = machine("beta", "alice");
    assert_eq!((beta.machine(), beta.user()), ("beta", Some("alice")));

    // Here: this machine's name and the OS user.
    let here = h.run(&contestants).await;
    assert_eq!(here.machine.as_deref(), Some(h.engine.machine()));
    assert!(h.engine.user().is_some_and(|u| !u.is_empty()));
    assert_eq!(here.user_name.as_deref(), h.engine.user());
    assert_eq!(here.voted_by, None);

    let request: BattleRequest = h.request("Explain lanes.", &contestants);
    let created = beta.create_battle(request).await.unwrap();
    assert_eq!(
        (created.machine.as_deref(), created.user_name.as_deref()),
        (Some("beta"), Some("alice"))
    );
    let there = beta.run_battle(&created.id).await.unwrap();
    assert_eq!(there.status, BattleStatus::Done);
    assert_eq!(there.voted_by, None);

    // The verdicts: alice's on beta's battle, the OS user's here.
    let voted = beta
        .set_winner(&there.id, Some(&there.contestants[0].id))
        .await
        .unwrap();
    assert_eq!(voted.voted_by.as_deref(), Some("alice"));
    let voted = h
        .engine
        .set_winner(&here.id, Some(&here.contestants[1].id))
        .await
        .unwrap();
    assert_eq!(voted.voted_by.as_deref(), h.engine.user());
    // Every machine reads the same.
    let seen = h.engine.battle(&there.id).await.unwrap();
    assert_eq!(
        (
            seen.machine.as_deref(),
            seen.user_name.as_deref(),
            seen.voted_by.as_deref()
        ),
        (Some("beta"), Some("alice"), Some("alice"))
    );
    let (page, _) = h.engine.battle_page(BattleQuery::default()).await.unwrap();
    let machines: Vec<_> = page.iter().map(|b| b.machine.as_deref()).collect();
    assert_eq!(machines, [Some("beta"), Some(h.engine.machine())]);

    // The leaderboard: one battle each, by machine or by voter.
    let board = |machine: Option<&str>, user: Option<&str>| {
        let engine = h.engine.clone();
        let query = LeaderboardQuery {
            machine: machine.map(str::to_string),
            user: user.map(str::to_string),
            ..LeaderboardQuery::default()
        };
        async move {
            let board = engine.leaderboard(query).await.unwrap();
            let winners: Vec<String> = board
                .standings
                .iter()
                .filter(|s| s.wins > 0)
                .map(|s| format!("{}@{}", s.identity, s.model))
                .collect();
            let battles = board.standings.iter().map(|s| s.battles).max();
            (winners, battles)
        }
    };
    assert_eq!(board(None, None).await.1, Some(2));
    assert_eq!(
        board(Some("beta"), None).await,
        (vec!["Debugger@m1".to_string()], Some(1))
    );
    assert_eq!(
        board(Some(h.engine.machine()), None).await,
        (vec!["Explainer@m2".to_string()], Some(1))
    );
    assert_eq!(
        board(None, Some(" alice ")).await,
        (vec!["Debugger@m1".to_string()], Some(1))
    );
    assert_eq!(
        board(None, h.engine.user()).await,
        (vec!["Explainer@m2".to_string()], Some(1))
    );
    assert_eq!(board(Some("beta"), h.engine.user()).await.1, None);
    assert_eq!(board(Some("nowhere"), None).await.1, None);
    // A blank filter is no filter.
    assert_eq!(board(Some("  "), Some("")).await.1, Some(2));

    // Handing the choice back to the judge forgets who chose; a tie is a
    // verdict too, by whoever said it.
    let cleared = beta.set_winner(&there.id, None).await.unwrap();
    assert_eq!(cleared.voted_by, None);
    assert_eq!(board(None, Some("alice")).await.1, None);
    let bob = machine(h.engine.machine(), "bob");
    let tie = bob.vote(&there.id, Vote::Tie).await.unwrap();
    assert_eq!(tie.voted_by.as_deref(), Some("bob"));
    assert_eq!(tie.machine.as_deref(), Some("beta"), "the machine stays");
    assert_eq!(board(None, Some("bob")).await.1, Some(1));

    // A series run on beta: its battles are beta's and alice's.
    let series = SeriesRequest {
        runs: 2,
        ..arena_core::series::SeriesRequest::new(
            BattleType::Qa,
            h.project.path(),
            contestants
                .iter()
                .map(|c| arena_core::battle::ContestantSpec::parse(c).unwrap())
                .collect(),
            parse_prompts("Say something.\n").unwrap(),
        )
    };
    let SeriesStart::Created(series) = beta.create_series(series, None).await.unwrap() else {
        panic!("a new series");
    };
    let done = beta.run_series(&series.id).await.unwrap();
    assert_eq!(done.status, SeriesStatus::Done);
    let (runs, total) = h
        .engine
        .battle_page(BattleQuery {
            series_id: Some(series.id.clone()),
            ..BattleQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(total, 2);
    for b in &runs {
        assert_eq!(
            (b.machine.as_deref(), b.user_name.as_deref()),
            (Some("beta"), Some("alice")),
            "{}",
            b.id
        );
    }
}
