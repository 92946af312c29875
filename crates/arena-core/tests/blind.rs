//! Blind battles against the scripted servers: labels instead of names for
//! every viewer (events, the results folder) until the vote, a vote before
//! the last contestant finished, the reveal, tags, and the leaderboard that
//! counts the user's and the judge's verdicts.

mod common;

use std::time::Duration;

use arena_core::battle::{BattleStatus, ContestantStatus, UserVerdict, WinnerSource};
use arena_core::blind::Vote;
use arena_core::leaderboard::Source;
use arena_core::{EventKind, LeaderboardQuery};
use arena_testserver::ModelScript;
use common::Harness;
use serde_json::Value;

/// A harness whose default model `judge` (cloud) prefers answers with STAR.
async fn harness() -> Harness {
    let mut h = Harness::new().await;
    h.cloud
        .set_model("judge", ModelScript::judge_preferring("STAR"));
    h.reconfigure(|config| config.default_model = Some("judge".into()));
    h
}

fn manifest(battle: &arena_core::Battle) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(battle.results_path.join("manifest.json")).unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn a_blind_battle_is_masked_for_viewers_until_the_vote() {
    let h = harness().await;
    h.cloud
        .set_model("m-fast", ModelScript::text("The STAR answer is 4."));
    // Slow enough to still be running when the user votes.
    h.cloud
        .set_model("m-slow", ModelScript::tokens(200).rate(40.0));
    let mut request = h.request("What is 2+2?", &["debugger@m-fast", "explainer@m-slow"]);
    request.blind = true;
    request.tags = vec![" math ".into(), "Math".into(), "quick".into()];
    let battle = h.engine.create_battle(request).await.unwrap();
    assert!(battle.is_masked());
    assert_eq!(battle.tags, ["math", "quick"]);
    let mut labels: Vec<String> = battle
        .contestants
        .iter()
        .map(|c| c.label.clone().unwrap())
        .collect();
    labels.sort();
    assert_eq!(labels, ["A", "B"]);
    let fast = battle.contestants[0].clone();
    let slow_id = battle.contestants[1].id.clone();
    let fast_label = fast.label.clone().unwrap();

    // Its folder is made; its manifest waits for its end.
    assert!(battle.results_path.is_dir());
    assert!(!battle.results_path.join("manifest.json").exists());

    let engine = h.engine.clone();
    let id = battle.id.clone();
    let run = tokio::spawn(async move { engine.run_battle(&id).await });

    // A viewer watching from the start: outputs, no speeds, and a reveal
    // when voted.
    let watcher = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move { common::collect_until_done(&engine, &id, 0).await })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let b = h.engine.battle(&battle.id).await.unwrap();
        let fast_done = b
            .contestants
            .iter()
            // Its result file is written after its end is recorded.
            .any(|c| {
                c.id == fast.id && c.status == ContestantStatus::Done && c.result_path.is_some()
            });
        if fast_done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the fast one never finished"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Its result file sits under its label and names nobody.
    let b = h.engine.battle(&battle.id).await.unwrap();
    let result = b.contestants[0].result_path.clone().unwrap();
    assert!(
        result
            .to_string_lossy()
            .contains(&format!("contestant-{fast_label}")),
        "{}",
        result.display()
    );
    let md = std::fs::read_to_string(&result).unwrap();
    assert!(
        md.contains("The STAR answer") && !md.contains("m-fast"),
        "{md}"
    );

    // Vote while the slow one still runs.
    let slow = b.contestants.iter().find(|c| c.id == slow_id).unwrap();
    assert_eq!(
        slow.status,
        ContestantStatus::Running,
        "voting before the end"
    );
    let voted = h
        .engine
        .vote(&battle.id, Vote::Winner(fast_label.to_lowercase()))
        .await
        .unwrap();
    assert!(!voted.is_masked());
    let w = voted.winner.clone().unwrap();
    assert_eq!(
        (w.contestant_id.as_str(), w.source),
        (fast.id.as_str(), WinnerSource::User)
    );

    let done = run.await.unwrap().unwrap();
    assert_eq!(done.status, BattleStatus::Done);
    let seen: Vec<EventKind> = watcher.await.unwrap().into_iter().map(|e| e.kind).collect();
    let revealed_at = seen
        .iter()
        .position(|k| matches!(k, EventKind::Revealed))
        .expect("a revealed event");
    assert!(seen[..revealed_at]
        .iter()
        .all(|k| !matches!(k, EventKind::Benchmark { .. } | EventKind::Winner { .. })));
    assert!(seen[..revealed_at]
        .iter()
        .any(|k| matches!(k, EventKind::Output { .. })));
    assert!(
        seen[revealed_at..]
            .iter()
            .any(|k| matches!(k, EventKind::Benchmark { .. })),
        "speeds flow after the reveal"
    );

    // Now the manifest and the result name them, under the same labels.
    let m = manifest(&done);
    let names: Vec<(String, String)> = m["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["label"].as_str().unwrap().to_string(),
                c["model"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        names.contains(&(fast_label.clone(), "m-fast".to_string())),
        "{names:?}"
    );
    assert_eq!(m["winner"]["source"], "user");
    let md = std::fs::read_to_string(&result).unwrap();
    assert!(md.contains("m-fast"), "{md}");

    // The judge runs afterwards; the user's vote stands.
    let a = h.engine.analyze(&battle.id, None).await.unwrap();
    assert_eq!(a.winner.as_deref(), Some(fast.id.as_str()));
    let after = h.engine.battle(&battle.id).await.unwrap();
    assert_eq!(after.winner.as_ref().unwrap().source, WinnerSource::User);
    let words = arena_core::blind::vote_words(&after, Some(&a))
        .unwrap()
        .to_string();
    assert!(
        words.starts_with(&format!("You chose {fast_label} · Debugger@m-fast.")),
        "{words}"
    );
    assert!(words.ends_with("The judge agreed."), "{words}");
}

/// Two contestants on one local server: the second waits for the lane.
/// While the battle is masked, nothing says so (a wait would tell a local
/// model from a cloud one): both read as running, waiting for nothing, in
/// the battle and in the event stream.
#[tokio::test]
async fn a_masked_contestant_waiting_for_its_lane_reads_as_running() {
    let h = harness().await;
    h.local.set_model("l1", ModelScript::tokens(40).rate(100.0));
    h.local.set_model("l2", ModelScript::tokens(5).rate(100.0));
    let mut request = h.request("Which lane?", &["debugger@l1", "explainer@l2"]);
    request.blind = true;
    let battle = h.engine.create_battle(request).await.unwrap();
    let watcher = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move { common::collect_until_done(&engine, &id, 0).await })
    };
    let run = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move { engine.run_battle(&id).await })
    };
    // Look while one holds the lane and the other waits for it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut seen_waiting = false;
    loop {
        let itself = h.engine.battle(&battle.id).await.unwrap();
        let view = h.engine.view_battle(&battle.id).await.unwrap();
        if itself
            .contestants
            .iter()
            .all(|c| c.status == ContestantStatus::Done)
        {
            break;
        }
        seen_waiting |= itself
            .contestants
            .iter()
            .any(|c| c.status == ContestantStatus::Queued && c.waiting.is_some());
        assert!(view.masked);
        for c in &view.battle.contestants {
            assert_ne!(c.status, ContestantStatus::Queued, "{c:?}");
            assert_eq!(c.waiting, None, "{c:?}");
        }
        assert!(tokio::time::Instant::now() < deadline, "never finished");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen_waiting, "no contestant was seen waiting for the lane");
    run.await.unwrap().unwrap();
    // The lane did make one wait (the server saw them one after the other).
    assert_eq!(
        h.local
            .requests()
            .iter()
            .filter(|r| r.is_generation())
            .count(),
        2
    );
    let events = watcher.await.unwrap();
    for e in &events {
        assert!(
            !matches!(
                e.kind,
                EventKind::Waiting { .. }
                    | EventKind::ContestantStatus {
                        status: ContestantStatus::Queued,
                        ..
                    }
            ),
            "a masked viewer saw {:?}",
            e.kind
        );
    }
}

/// On a shared lane a blind battle's contestants go in label order, not the
/// launcher's: the labels are shuffled per battle, so which one the server
/// serves first (and so which streams first) tells nothing of the roster.
#[tokio::test]
async fn a_blind_battle_queues_its_contestants_by_label_not_by_launcher_order() {
    let h = harness().await;
    let models = ["l1", "l2", "l3", "l4"];
    for m in models {
        h.local.set_model(m, ModelScript::tokens(3).rate(500.0));
    }
    let mut orders = Vec::new();
    for round in 0..4 {
        let mut request = h.request(
            &format!("Which goes first? ({round})"),
            &[
                "debugger@l1",
                "explainer@l2",
                "architect@l3",
                "code-reviewer@l4",
            ],
        );
        request.blind = true;
        let before = h.local.requests().len();
        let battle = h.engine.create_battle(request).await.unwrap();
        let battle = h.engine.run_battle(&battle.id).await.unwrap();
        let served: Vec<String> = h.local.requests()[before..]
            .iter()
            .filter(|r| r.is_generation())
            .filter_map(|r| r.model.clone())
            .collect();
        let mut by_label = battle.contestants.clone();
        by_label.sort_by(|a, b| a.label.cmp(&b.label));
        let expected: Vec<String> = by_label.iter().map(|c| c.model.clone()).collect();
        assert_eq!(served, expected, "served out of label order: {battle:?}");
        orders.push(expected);
    }
    // The labels were shuffled: not every battle went in launcher order.
    assert!(
        orders.iter().any(|o| o.as_slice() != models),
        "four battles all went in launcher order: {orders:?}"
    );
}

#[tokio::test]
async fn votes_are_checked_and_a_tie_stands_against_the_judge() {
    let h = harness().await;
    h.cloud.set_model("m1", ModelScript::text("plain"));
    h.cloud.set_model("m2", ModelScript::text("with STAR"));
    let mut request = h.request("Say something.", &["debugger@m1", "explainer@m2"]);
    request.blind = true;
    let battle = h.engine.create_battle(request).await.unwrap();
    let battle = h.engine.run_battle(&battle.id).await.unwrap();
    // The manifest, written at the end, names nobody while blind.
    let text = std::fs::read_to_string(battle.results_path.join("manifest.json"))
        .unwrap()
        .to_lowercase();
    for secret in ["m1", "m2", "debugger", "explainer", "cloud"] {
        assert!(!text.contains(secret), "{secret} in the manifest: {text}");
    }
    // Unknown labels are refused, naming the ones there are.
    let e = h
        .engine
        .vote(&battle.id, Vote::Winner("Z".into()))
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(e.is_user_error(), "{text}");
    assert!(text.contains("A, B") || text.contains("B, A"), "{text}");
    assert!(
        h.engine.battle(&battle.id).await.unwrap().is_masked(),
        "nothing changed"
    );

    let voted = h.engine.vote(&battle.id, Vote::Tie).await.unwrap();
    assert_eq!(voted.user_verdict, Some(UserVerdict::Tie));
    assert!(voted.winner.is_none() && !voted.is_masked());
    // The judge picks m2, but the user's tie stands.
    let a = h.engine.analyze(&battle.id, None).await.unwrap();
    assert!(a.winner.is_some());
    let after = h.engine.battle(&battle.id).await.unwrap();
    assert!(after.winner.is_none());
    assert_eq!(after.user_verdict, Some(UserVerdict::Tie));
    let words = arena_core::blind::vote_words(&after, Some(&a))
        .unwrap()
        .to_string();
    assert!(
        words.starts_with("You called it a tie. The judge chose"),
        "{words}"
    );
    // Choosing a winner afterwards replaces the tie.
    let winner = after.contestants[0].id.clone();
    let chosen = h
        .engine
        .set_winner(&battle.id, Some(&winner))
        .await
        .unwrap();
    assert_eq!(chosen.user_verdict, None);
    // Tags can be edited; bad ones are refused with nothing changed.
    let tagged = h
        .engine
        .set_tags(&battle.id, &["rust".into(), "fast".into()])
        .await
        .unwrap();
    assert_eq!(tagged.tags, ["fast", "rust"]);
    assert!(h
        .engine
        .set_tags(&battle.id, &["a,b".into()])
        .await
        .is_err());
    assert_eq!(
        h.engine.battle(&battle.id).await.unwrap().tags,
        ["fast", "rust"]
    );
    assert_eq!(
        manifest(&tagged)["tags"],
        serde_json::json!(["fast", "rust"])
    );
}

#[tokio::test]
async fn the_leaderboard_counts_mine_the_judges_or_both_with_filters() {
    let h = harness().await;
    // m2 always has STAR: the judge always picks it.
    h.cloud.set_model(
        "m1",
        ModelScript::text("plain answer, rather long and wordy"),
    );
    h.cloud.set_model("m2", ModelScript::text("STAR"));
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join(".git")).unwrap();
    // Four battles; the user votes m1 in the first two (disagreeing with
    // the judge), m2 in the third (agreeing), not at all in the fourth,
    // which is in another project and tagged.
    let mut ids = Vec::new();
    for n in 0..4 {
        let mut request = h.request(&format!("Question {n}"), &["debugger@m1", "explainer@m2"]);
        if n == 3 {
            request.project = other.path().to_path_buf();
            request.tags = vec!["elsewhere".into()];
        }
        let b = h.engine.create_battle(request).await.unwrap();
        let b = h.engine.run_battle(&b.id).await.unwrap();
        h.engine.analyze(&b.id, None).await.unwrap();
        let pick = match n {
            0 | 1 => Some(b.contestants[0].id.clone()),
            2 => Some(b.contestants[1].id.clone()),
            _ => None,
        };
        if let Some(pick) = pick {
            h.engine.vote(&b.id, Vote::Winner(pick)).await.unwrap();
        }
        ids.push(b.id);
    }
    let board = |source: Source, project: Option<&std::path::Path>, tag: Option<&str>| {
        let engine = h.engine.clone();
        let query = LeaderboardQuery {
            source,
            project: project.map(|p| p.to_path_buf()),
            tag: tag.map(str::to_string),
            ..LeaderboardQuery::default()
        };
        async move { engine.leaderboard(query).await.unwrap() }
    };
    let wins = |b: &arena_core::leaderboard::Leaderboard, model: &str| {
        b.standings
            .iter()
            .find(|s| s.model == model)
            .map_or(0, |s| s.wins)
    };
    let mine = board(Source::Mine, None, None).await;
    assert_eq!((wins(&mine, "m1"), wins(&mine, "m2")), (2, 1));
    let judge = board(Source::Judge, None, None).await;
    assert_eq!((wins(&judge, "m1"), wins(&judge, "m2")), (0, 4));
    let both = board(Source::Both, None, None).await;
    assert_eq!((wins(&both, "m1"), wins(&both, "m2")), (2, 2));
    // Agreement: 3 battles with both verdicts, 1 agreed.
    assert_eq!((both.agreement.both_chose, both.agreement.agreed), (3, 1));
    let (lo, hi) = both.agreement.rate_ci.unwrap();
    assert!(lo < 1.0 / 3.0 && 1.0 / 3.0 < hi);
    assert!(both.standings.iter().all(|s| s.rating_lc.is_some()));
    // Filters: the other project, the tag.
    let elsewhere = board(Source::Both, Some(other.path()), None).await;
    assert_eq!(elsewhere.standings.iter().map(|s| s.battles).max(), Some(1));
    let tagged = board(Source::Both, None, Some("elsewhere")).await;
    assert_eq!((wins(&tagged, "m1"), wins(&tagged, "m2")), (0, 1));
    let missing = h
        .engine
        .leaderboard(LeaderboardQuery {
            project: Some("/no/such/folder".into()),
            ..LeaderboardQuery::default()
        })
        .await
        .unwrap_err();
    assert!(missing.is_user_error(), "{missing}");
}

#[tokio::test]
async fn a_blind_series_withholds_its_figures_until_every_battle_is_voted() {
    use arena_core::battle::{BattleType, ContestantSpec};
    use arena_core::series::{parse_prompts, SeriesRequest, SeriesStatus};
    use arena_core::SeriesStart;
    let h = harness().await;
    h.cloud.set_model("m1", ModelScript::text("plain"));
    h.cloud.set_model("m2", ModelScript::text("with STAR"));
    let request = SeriesRequest {
        runs: 2,
        tags: vec!["blind-series".into()],
        blind: true,
        ..SeriesRequest::new(
            BattleType::Qa,
            h.project.path(),
            ["debugger@m1", "explainer@m2"]
                .iter()
                .map(|c| ContestantSpec::parse(c).unwrap())
                .collect(),
            parse_prompts("Say something.\n").unwrap(),
        )
    };
    let SeriesStart::Created(series) = h.engine.create_series(request, None).await.unwrap() else {
        panic!("a new series");
    };
    let done = h.engine.run_series(&series.id).await.unwrap();
    assert_eq!(done.status, SeriesStatus::Done);
    assert!(
        done.report_path.is_none(),
        "no report while votes are awaited"
    );
    let summary = h.engine.series_summary(&series.id).await.unwrap();
    assert_eq!(summary.awaiting_votes, 2);
    assert!(summary.reports.is_empty() && summary.rows.is_empty());
    let refused = h.engine.write_series_report(&series.id).await.unwrap_err();
    assert!(refused.to_string().contains("await your vote"), "{refused}");
    // Each battle is blind and carries the series' tag.
    let first = h.engine.battle(&summary.battles[0]).await.unwrap();
    let second = h.engine.battle(&summary.battles[1]).await.unwrap();
    assert!(first.is_masked() && second.is_masked());
    assert_eq!(first.tags, ["blind-series"]);
    h.engine.vote(&first.id, Vote::Tie).await.unwrap();
    assert_eq!(
        h.engine
            .series_summary(&series.id)
            .await
            .unwrap()
            .awaiting_votes,
        1
    );
    // The last reveal writes the report, with every contestant's figures.
    h.engine.reveal(&second.id).await.unwrap();
    let summary = h.engine.series_summary(&series.id).await.unwrap();
    assert_eq!(summary.awaiting_votes, 0);
    assert_eq!(summary.reports.len(), 2);
    let dir = summary
        .series
        .report_path
        .expect("the report, written at the reveal");
    assert!(dir.join("report.html").is_file());

    // The series' tags are edited: its battles trade the old for the new
    // and keep their own.
    h.engine
        .set_tags(&first.id, &["blind-series".into(), "own".into()])
        .await
        .unwrap();
    let edited = h
        .engine
        .set_series_tags(&series.id, &["shared".into(), " later ".into()])
        .await
        .unwrap();
    assert_eq!(edited.tags, ["shared", "later"]);
    let first = h.engine.battle(&first.id).await.unwrap();
    let second = h.engine.battle(&second.id).await.unwrap();
    assert_eq!(first.tags, ["later", "own", "shared"]);
    assert_eq!(second.tags, ["later", "shared"]);
    assert_eq!(
        manifest(&second)["tags"],
        serde_json::json!(["later", "shared"])
    );
    let refused = h.engine.set_series_tags(&series.id, &["a,b".into()]).await;
    assert!(refused.is_err());
    assert_eq!(
        h.engine.series(&series.id).await.unwrap().tags,
        ["shared", "later"]
    );
}
