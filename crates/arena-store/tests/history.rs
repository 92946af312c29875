//! The history's queries over a real SQLite file: search, filters, paging
//! and the total, and what the leaderboard reads.

use arena_domain::battle::{
    Battle, BattleQuery, BattleStatus, BattleType, Benchmark, ContestantStatus, Lane, RunSpec,
    Winner, WinnerSource,
};
use arena_store::{NewBattle, NewContestant, RankFilter, Store};

mod common;
use chrono::{DateTime, Utc};

/// One contestant: identity, model, provider, and whether it finished.
type Who<'a> = (&'a str, &'a str, &'a str, bool);

struct Seed<'a> {
    id: &'a str,
    at_ms: i64,
    battle_type: BattleType,
    prompt: &'a str,
    contestants: &'a [Who<'a>],
    status: BattleStatus,
    /// Position of the winner (the user's pick).
    winner: Option<usize>,
    series: Option<(&'a str, u64)>,
    project: &'a str,
    tags: &'a [&'a str],
    /// Started blind; revealed when the user votes.
    blind: bool,
    /// The machine that ran it, and the OS user who started it.
    machine: Option<&'a str>,
    user: Option<&'a str>,
    /// Who chose the winner (through the user's vote, `set_vote`).
    voter: Option<&'a str>,
}

impl Default for Seed<'_> {
    fn default() -> Self {
        Seed {
            id: "",
            at_ms: 0,
            battle_type: BattleType::Qa,
            prompt: "",
            contestants: &[
                ("Debugger", "qwen3-8b", "local", true),
                ("explainer", "gpt-4o", "cloud", true),
            ],
            status: BattleStatus::Done,
            winner: None,
            series: None,
            project: "/tmp/project",
            tags: &[],
            blind: false,
            machine: None,
            user: None,
            voter: None,
        }
    }
}

fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}

/// Records a battle as a run would: inserted, each contestant run and
/// finished, the battle finished, maybe a winner.
fn seed(store: &Store, s: Seed<'_>) {
    store
        .transact(|tx| {
            tx.insert_battle(&NewBattle {
                id: s.id.into(),
                battle_type: s.battle_type,
                prompt: s.prompt.into(),
                project: s.project.into(),
                results_path: format!("{}/Arena/{}", s.project, s.id).into(),
                created_at: at(s.at_ms),
                contestants: s
                    .contestants
                    .iter()
                    .enumerate()
                    .map(|(i, (identity, model, provider, _))| NewContestant {
                        id: format!("{}-c{i}", s.id),
                        identity: identity.to_string(),
                        model: model.to_string(),
                        provider: provider.to_string(),
                        lane: Lane::Cloud,
                        run: RunSpec::default(),
                        label: s.blind.then(|| ["B", "A", "C"][i].to_string()),
                    })
                    .collect(),
                base_commit: None,
                check_command: None,
                series: s.series.map(|(id, slot)| (id.to_string(), slot)),
                blind: s.blind,
                tags: s.tags.iter().map(|t| t.to_string()).collect(),
                machine: s.machine.map(String::from),
                user_name: s.user.map(String::from),
            })?;
            if s.status == BattleStatus::Running {
                return Ok(());
            }
            let t = at(s.at_ms + 1000);
            for (c, who) in tx.contestants(s.id)?.iter().zip(s.contestants) {
                tx.move_contestant(
                    c,
                    ContestantStatus::Queued,
                    ContestantStatus::Running,
                    None,
                    t,
                )?;
                let c = tx.contestant(&c.id)?;
                let (status, error) = if who.3 {
                    (ContestantStatus::Done, None)
                } else {
                    (ContestantStatus::Error, Some("boom"))
                };
                let bench = Benchmark {
                    duration_ms: Some(1000 + u64::from(c.position)),
                    tokens_per_sec: Some(50.0),
                    cost_usd: Some(0.01),
                    ..Benchmark::default()
                };
                tx.finish_contestant(&c, status, error, "answer", "", false, &bench, t)?;
            }
            tx.finish_battle(s.id, s.status, t)?;
            if let Some(w) = s.winner {
                let winner = Winner {
                    contestant_id: format!("{}-c{w}", s.id),
                    source: WinnerSource::User,
                };
                match s.voter {
                    Some(by) => tx.set_vote(s.id, Some(&winner), None, Some(by), false, t)?,
                    None => tx.set_winner(s.id, Some(&winner), t)?,
                }
            }
            Ok(())
        })
        .unwrap();
}

/// The fixture: seven battles, b1 oldest … b7 newest (b6 and b7 at the
/// same instant: the id breaks the tie).
fn seed_history(store: &Store) {
    store
        .transact(|tx| {
            tx.exec_raw(
                "INSERT INTO series (id, request, status, total, created_at)
                 VALUES ('series-1', '{}', 'done', 2, 0)",
                &[],
            )?;
            Ok(())
        })
        .unwrap();
    seed(
        store,
        Seed {
            id: "b1",
            at_ms: 1_000,
            prompt: "Explain Rust lifetimes",
            winner: Some(0),
            ..Seed::default()
        },
    );
    seed(
        store,
        Seed {
            id: "b2",
            at_ms: 2_000,
            prompt: "Am I 100% sure? Say yes",
            ..Seed::default()
        },
    );
    seed(
        store,
        Seed {
            id: "b3",
            at_ms: 3_000,
            battle_type: BattleType::Coding,
            prompt: "Fix the 1000 failing tests in snake_case.rs",
            contestants: &[
                ("aider", "claude-sonnet", "openrouter", true),
                ("native", "gpt-4o", "cloud", false),
            ],
            status: BattleStatus::Error,
            ..Seed::default()
        },
    );
    seed(
        store,
        Seed {
            id: "b4",
            at_ms: 4_000,
            prompt: "Écris un poème ÜBER den Wald",
            contestants: &[("Poet", "mistral-large", "cloud", true)],
            status: BattleStatus::Cancelled,
            ..Seed::default()
        },
    );
    seed(
        store,
        Seed {
            id: "b5",
            at_ms: 5_000,
            prompt: r"Escape C:\path and a_b",
            status: BattleStatus::Running,
            series: Some(("series-1", 0)),
            ..Seed::default()
        },
    );
    for id in ["b6", "b7"] {
        seed(
            store,
            Seed {
                id,
                at_ms: 6_000,
                prompt: "What is a lane?",
                series: Some(("series-1", if id == "b6" { 1 } else { 2 })),
                winner: Some(1),
                ..Seed::default()
            },
        );
    }
}

fn ids(battles: &[Battle]) -> Vec<&str> {
    battles.iter().map(|b| b.id.as_str()).collect()
}

fn search(store: &Store, text: &str) -> Vec<String> {
    let (page, total) = store
        .battle_page(&BattleQuery {
            search: Some(text.into()),
            ..BattleQuery::default()
        })
        .unwrap();
    assert_eq!(total as usize, page.len(), "search {text:?}: one page");
    page.into_iter().map(|b| b.id).collect()
}

each_backend! {
fn an_unfiltered_page_is_newest_first_with_contestant_summaries(store: &Store) {
    seed_history(store);
    let (page, total) = store.battle_page(&BattleQuery::default()).unwrap();
    assert_eq!(total, 7);
    assert_eq!(ids(&page), ["b7", "b6", "b5", "b4", "b3", "b2", "b1"]);
    let b3 = &page[4];
    assert_eq!(b3.contestants.len(), 2);
    assert_eq!(b3.contestants[0].identity, "aider");
    assert_eq!(b3.contestants[1].model, "gpt-4o");
    assert_eq!(b3.contestants[1].status, ContestantStatus::Error);
    assert_eq!(b3.contestants[0].benchmark.duration_ms, Some(1000));
    // Summaries: no output texts (the battle itself has them).
    assert!(page
        .iter()
        .flat_map(|b| &b.contestants)
        .all(|c| c.output.is_none()));
    assert_eq!(
        store.battle("b3").unwrap().contestants[0].output.as_deref(),
        Some("answer")
    );
    assert_eq!(page[0].winner.as_ref().unwrap().contestant_id, "b7-c1");
    assert_eq!(page[0].series_id.as_deref(), Some("series-1"));
    // The old listing is the same first page.
    let old: Vec<String> = store
        .battles(3)
        .unwrap()
        .into_iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(old, ["b7", "b6", "b5"]);
}
}

each_backend! {
fn search_matches_the_prompt_identity_model_and_provider_ignoring_case(store: &Store) {
    seed_history(store);
    // The prompt.
    assert_eq!(search(store, "RUST"), ["b1"]);
    assert_eq!(search(store, "lane?"), ["b7", "b6"]);
    // A model, an identity (persona or backend), a provider.
    assert_eq!(search(store, "claude-SONNET"), ["b3"]);
    assert_eq!(search(store, "gpt-4o").len(), 6);
    assert_eq!(search(store, "debugger").len(), 5);
    assert_eq!(search(store, "AIDER"), ["b3"]);
    assert_eq!(search(store, "openrouter"), ["b3"]);
    // `identity@model`, as the app shows a contestant.
    assert_eq!(search(store, "poet@mistral"), ["b4"]);
    assert!(search(store, "debugger@gpt").is_empty());
    // Every word must appear, each anywhere.
    assert_eq!(search(store, "  lifetimes \t  QWEN3 "), ["b1"]);
    assert!(search(store, "lifetimes claude").is_empty());
    // Letters beyond ASCII fold too.
    assert_eq!(search(store, "über"), ["b4"]);
    assert_eq!(search(store, "ÉCRIS"), ["b4"]);
    // A blank search is no search.
    assert_eq!(search(store, "   ").len(), 7);
}
}

each_backend! {
fn search_takes_like_wildcards_literally(store: &Store) {
    seed_history(store);
    // "100%" is not "100 followed by anything" (b3 says "1000").
    assert_eq!(search(store, "100%"), ["b2"]);
    assert_eq!(search(store, "%"), ["b2"]);
    // "_" is not "any one letter".
    assert_eq!(search(store, "a_b"), ["b5"]);
    assert_eq!(search(store, "snake_case"), ["b3"]);
    assert!(search(store, "snake_cas_").is_empty());
    assert!(search(store, "_____________").is_empty());
    // The escape character itself.
    assert_eq!(search(store, r"c:\path"), ["b5"]);
    assert!(search(store, r"\").len() == 1);
}
}

each_backend! {
fn type_status_and_series_filters_combine_with_search(store: &Store) {
    seed_history(store);
    let page = |q: BattleQuery| {
        let (page, total) = store.battle_page(&q).unwrap();
        (
            ids(&page).into_iter().map(String::from).collect::<Vec<_>>(),
            total,
        )
    };
    let coding = page(BattleQuery {
        battle_type: Some(BattleType::Coding),
        ..BattleQuery::default()
    });
    assert_eq!(coding, (vec!["b3".to_string()], 1));
    let qa_done = page(BattleQuery {
        battle_type: Some(BattleType::Qa),
        status: Some(BattleStatus::Done),
        ..BattleQuery::default()
    });
    assert_eq!(qa_done.0, ["b7", "b6", "b2", "b1"]);
    assert_eq!(
        page(BattleQuery {
            status: Some(BattleStatus::Running),
            ..BattleQuery::default()
        })
        .0,
        ["b5"]
    );
    assert_eq!(
        page(BattleQuery {
            status: Some(BattleStatus::Cancelled),
            search: Some("wald".into()),
            ..BattleQuery::default()
        })
        .0,
        ["b4"]
    );
    assert!(page(BattleQuery {
        status: Some(BattleStatus::Done),
        search: Some("wald".into()),
        ..BattleQuery::default()
    })
    .0
    .is_empty());
    assert_eq!(
        page(BattleQuery {
            series_id: Some("series-1".into()),
            ..BattleQuery::default()
        }),
        (vec!["b7".into(), "b6".into(), "b5".into()], 3)
    );
    assert_eq!(
        page(BattleQuery {
            series_id: Some("series-1".into()),
            status: Some(BattleStatus::Done),
            limit: 1,
            ..BattleQuery::default()
        }),
        (vec!["b7".into()], 2)
    );
}
}

each_backend! {
fn pages_follow_each_other_and_the_total_counts_every_match(store: &Store) {
    seed_history(store);
    let page = |limit, offset, search: Option<&str>| {
        let (page, total) = store
            .battle_page(&BattleQuery {
                search: search.map(String::from),
                limit,
                offset,
                ..BattleQuery::default()
            })
            .unwrap();
        (
            ids(&page).into_iter().map(String::from).collect::<Vec<_>>(),
            total,
        )
    };
    assert_eq!(
        page(3, 0, None),
        (vec!["b7".into(), "b6".into(), "b5".into()], 7)
    );
    assert_eq!(
        page(3, 3, None),
        (vec!["b4".into(), "b3".into(), "b2".into()], 7)
    );
    assert_eq!(page(3, 6, None), (vec!["b1".into()], 7));
    assert_eq!(page(3, 7, None), (vec![], 7));
    assert_eq!(page(3, 100, None), (vec![], 7));
    assert_eq!(page(0, 0, None), (vec![], 7));
    // Debugger is in five battles.
    assert_eq!(
        page(2, 0, Some("debugger")),
        (vec!["b7".into(), "b6".into()], 5)
    );
    assert_eq!(page(2, 4, Some("debugger")), (vec!["b1".into()], 5));
    assert_eq!(page(2, 0, Some("nothing-like-this")), (vec![], 0));
    // A huge limit (the engine's "all of them") is fine.
    assert_eq!(page(usize::MAX >> 1, 0, None).0.len(), 7);
    assert_eq!(page(usize::MAX, usize::MAX, None), (vec![], 7));
}
}

each_backend! {
fn pages_of_many_battles_load_every_contestant(store: &Store) {
    // More battles than one `IN (…)` query takes.
    store
        .transact(|tx| {
            for n in 0..1_203 {
                tx.insert_battle(&NewBattle {
                    id: format!("m{n:05}"),
                    battle_type: BattleType::Qa,
                    prompt: format!("prompt {n}"),
                    project: "/tmp/p".into(),
                    results_path: "/tmp/p/Arena/x".into(),
                    created_at: at(n),
                    contestants: (0..(n % 4 + 1))
                        .map(|i| NewContestant {
                            id: format!("m{n}-c{i}"),
                            identity: format!("id{i}"),
                            model: format!("model{}", n % 7),
                            provider: "cloud".into(),
                            lane: Lane::Cloud,
                            run: RunSpec::default(),
                            label: None,
                        })
                        .collect(),
                    base_commit: None,
                    check_command: None,
                    series: None,
                    blind: false,
                    tags: Vec::new(),
                    machine: None,
                    user_name: None,
                })?;
            }
            Ok(())
        })
        .unwrap();
    let all = store.battles(usize::MAX >> 1).unwrap();
    assert_eq!(all.len(), 1_203);
    for (k, b) in all.iter().enumerate() {
        let n = 1_202 - k as i64;
        assert_eq!(b.id, format!("m{n:05}"));
        assert_eq!(b.contestants.len() as i64, n % 4 + 1, "{}", b.id);
        for (i, c) in b.contestants.iter().enumerate() {
            assert_eq!(c.battle_id, b.id);
            assert_eq!(c.position as usize, i);
        }
    }
    let (page, total) = store
        .battle_page(&BattleQuery {
            search: Some("MODEL3".into()),
            limit: 10,
            offset: 5,
            ..BattleQuery::default()
        })
        .unwrap();
    assert_eq!(total, (0..1_203).filter(|n| n % 7 == 3).count() as u64);
    assert_eq!(page.len(), 10);
    assert!(page.iter().all(|b| b.contestants[0].model == "model3"));
}
}

each_backend! {
fn ranked_battles_are_the_finished_ones_with_their_finished_contestants(store: &Store) {
    seed_history(store);
    let ranked = store.ranked_battles(&RankFilter::default()).unwrap();
    let ids: Vec<&str> = ranked.iter().map(|b| b.battle_id.as_str()).collect();
    // b5 is still running.
    assert_eq!(ids, ["b7", "b6", "b4", "b3", "b2", "b1"]);
    let b3 = &ranked[3];
    assert_eq!(b3.battle_type, BattleType::Coding);
    // Its second contestant failed.
    assert_eq!(b3.finished.len(), 1);
    assert_eq!(b3.finished[0].0, "b3-c0");
    assert_eq!(b3.finished[0].1.player.identity, "aider");
    assert_eq!(b3.finished[0].1.duration_ms, Some(1000));
    assert_eq!(b3.finished[0].1.cost_usd, Some(0.01));
    assert_eq!(ranked[0].user_winner.as_deref(), Some("b7-c1"));
    assert_eq!(ranked[0].finished[1].1.player.model, "gpt-4o");
    assert!(ranked[4].user_winner.is_none());
    let coding = store
        .ranked_battles(&RankFilter {
            battle_type: Some(BattleType::Coding),
            ..RankFilter::default()
        })
        .unwrap();
    assert_eq!(coding.len(), 1);
    assert_eq!(coding[0], ranked[3]);
}
}

each_backend! {
fn ranked_battles_filter_by_project_and_tag_and_wait_for_the_reveal(store: &Store) {
    let seeds = [
        ("t1", "/tmp/a", &["math", "hard"][..], false),
        ("t2", "/tmp/a", &["math"][..], false),
        ("t3", "/tmp/b", &["hard"][..], false),
        ("t4", "/tmp/b", &["math"][..], true),
    ];
    for (n, (id, project, tags, blind)) in seeds.into_iter().enumerate() {
        seed(
            store,
            Seed {
                id,
                at_ms: n as i64 * 10_000,
                project,
                tags,
                blind,
                ..Seed::default()
            },
        );
    }
    let ids = |filter: RankFilter| -> Vec<String> {
        let mut ids: Vec<String> = store
            .ranked_battles(&filter)
            .unwrap()
            .into_iter()
            .map(|b| b.battle_id)
            .collect();
        ids.sort();
        ids
    };
    // t4 is blind and not revealed: not ranked yet.
    assert_eq!(ids(RankFilter::default()), ["t1", "t2", "t3"]);
    let math = || RankFilter {
        tag: Some("math".into()),
        ..RankFilter::default()
    };
    assert_eq!(ids(math()), ["t1", "t2"]);
    assert_eq!(
        ids(RankFilter {
            project: Some("/tmp/b".into()),
            ..RankFilter::default()
        }),
        ["t3"]
    );
    assert_eq!(
        ids(RankFilter {
            project: Some("/tmp/a".into()),
            tag: Some("hard".into()),
            ..RankFilter::default()
        }),
        ["t1"]
    );
    // Tags read back sorted; the vote reveals t4 and makes it count.
    assert_eq!(store.battle("t1").unwrap().tags, ["hard", "math"]);
    let b4 = store.battle("t4").unwrap();
    assert!(b4.is_masked());
    assert_eq!(b4.contestants[0].label.as_deref(), Some("B"));
    store
        .transact(|tx| {
            tx.set_vote(
                "t4",
                None,
                Some(arena_domain::battle::UserVerdict::AllBad),
                None,
                true,
                at(99_000),
            )
        })
        .unwrap();
    let b4 = store.battle("t4").unwrap();
    assert!(!b4.is_masked());
    assert_eq!(
        b4.user_verdict,
        Some(arena_domain::battle::UserVerdict::AllBad)
    );
    assert_eq!(ids(math()), ["t1", "t2", "t4"]);
    let t4 = store
        .ranked_battles(&math())
        .unwrap()
        .into_iter()
        .find(|b| b.battle_id == "t4")
        .unwrap();
    assert_eq!(
        t4.user_verdict,
        Some(arena_domain::battle::UserVerdict::AllBad)
    );
    assert!(t4.user_winner.is_none());
    assert_eq!(t4.finished[0].1.output_chars, Some("answer".len() as u64));
    // A user's winner replaces the tie-like verdict only when given with it.
    store
        .transact(|tx| tx.write_tags("t4", &["other".to_string()]))
        .unwrap();
    assert_eq!(store.battle("t4").unwrap().tags, ["other"]);
    assert_eq!(ids(math()), ["t1", "t2"]);
}
}

each_backend! {
fn the_machine_the_user_and_the_voter_are_kept_and_filter_the_ranking(store: &Store) {
    let seeds = [
        // id, machine, started by, the winner's voter
        ("o1", Some("alpha"), Some("alice"), Some("alice")),
        ("o2", Some("beta"), Some("bob"), Some("alice")),
        ("o3", Some("alpha"), Some("bob"), Some("bob")),
        // From before machines were recorded; a judge's winner only.
        ("o4", None, None, None),
    ];
    for (n, (id, machine, user, voter)) in seeds.into_iter().enumerate() {
        seed(
            store,
            Seed {
                id,
                at_ms: n as i64 * 1_000,
                machine,
                user,
                voter,
                winner: voter.map(|_| 0),
                ..Seed::default()
            },
        );
    }
    let o1 = store.battle("o1").unwrap();
    assert_eq!(
        (o1.machine.as_deref(), o1.user_name.as_deref(), o1.voted_by.as_deref()),
        (Some("alpha"), Some("alice"), Some("alice"))
    );
    let o4 = store.battle("o4").unwrap();
    assert_eq!((o4.machine, o4.user_name, o4.voted_by), (None, None, None));
    // A page of the history carries them too.
    let (page, _) = store.battle_page(&BattleQuery::default()).unwrap();
    let kept: Vec<_> = page
        .iter()
        .map(|b| (b.id.as_str(), b.machine.as_deref(), b.user_name.as_deref(), b.voted_by.as_deref()))
        .collect();
    assert_eq!(
        kept,
        [
            ("o4", None, None, None),
            ("o3", Some("alpha"), Some("bob"), Some("bob")),
            ("o2", Some("beta"), Some("bob"), Some("alice")),
            ("o1", Some("alpha"), Some("alice"), Some("alice")),
        ]
    );

    // A judge's winner is nobody's vote; a tie is a verdict too.
    let judged = Winner {
        contestant_id: "o4-c1".into(),
        source: WinnerSource::Analysis,
    };
    store
        .transact(|tx| tx.set_winner("o4", Some(&judged), at(40_000)))
        .unwrap();
    assert_eq!(store.battle("o4").unwrap().voted_by, None);
    store
        .transact(|tx| {
            tx.set_vote(
                "o4",
                None,
                Some(arena_domain::battle::UserVerdict::Tie),
                Some("carol"),
                false,
                at(50_000),
            )
        })
        .unwrap();
    assert_eq!(store.battle("o4").unwrap().voted_by.as_deref(), Some("carol"));

    let ids = |machine: Option<&str>, user: Option<&str>| -> Vec<String> {
        store
            .ranked_battles(&RankFilter {
                machine: machine.map(String::from),
                user: user.map(String::from),
                ..RankFilter::default()
            })
            .unwrap()
            .into_iter()
            .map(|b| b.battle_id)
            .collect()
    };
    assert_eq!(ids(None, None), ["o4", "o3", "o2", "o1"]);
    assert_eq!(ids(Some("alpha"), None), ["o3", "o1"]);
    assert_eq!(ids(Some("beta"), None), ["o2"]);
    // `user` is who gave the verdict, not who started the battle.
    assert_eq!(ids(None, Some("alice")), ["o2", "o1"]);
    assert_eq!(ids(None, Some("bob")), ["o3"]);
    assert_eq!(ids(None, Some("carol")), ["o4"]);
    assert_eq!(ids(Some("beta"), Some("alice")), ["o2"]);
    assert!(ids(Some("beta"), Some("bob")).is_empty());
    assert!(ids(Some("Alpha"), None).is_empty(), "names match exactly");
    assert!(ids(Some("gamma"), None).is_empty());

    // Handing the decision back to the judge (its winner passed back in)
    // leaves no voter.
    let judge = Winner {
        contestant_id: "o1-c1".into(),
        source: WinnerSource::Analysis,
    };
    store
        .transact(|tx| tx.set_vote("o1", Some(&judge), None, Some("alice"), false, at(60_000)))
        .unwrap();
    let o1 = store.battle("o1").unwrap();
    assert_eq!(o1.winner.unwrap().source, WinnerSource::Analysis);
    assert_eq!(o1.voted_by, None);
    assert_eq!(o1.machine.as_deref(), Some("alpha"), "the machine stays");
    assert_eq!(ids(None, Some("alice")), ["o2"]);
}
}
