//! Q&A battles end to end against scripted servers on loopback: lanes,
//! failures, cancel, retries, stalls, replay, results and sanitised paths.

mod common;

use std::time::Duration;

use arena_core::battle::{BattleStatus, ContestantStatus, Lane, RateSource};
use arena_core::EventKind;
use arena_testserver::{Fault, ModelScript};
use common::*;

#[tokio::test]
async fn local_contestants_run_one_at_a_time() {
    let h = Harness::new().await;
    for m in ["l1", "l2", "l3"] {
        h.local.set_model(m, script(15, 150.0));
    }
    let battle = h
        .run(&["debugger@l1", "explainer@l2", "architect@l3"])
        .await;
    assert_eq!(battle.status, BattleStatus::Done);
    let intervals: Vec<_> = ["l1", "l2", "l3"]
        .iter()
        .map(|m| interval(&only_request(&h.local, m)))
        .collect();
    for i in 0..3 {
        for j in i + 1..3 {
            assert!(
                !overlaps(intervals[i], intervals[j]),
                "local streams {i} and {j} overlapped"
            );
        }
    }
    // And in battle order.
    assert!(intervals[0].1 <= intervals[1].0 && intervals[1].1 <= intervals[2].0);
    for c in &battle.contestants {
        assert_eq!(c.lane, Lane::Local);
        assert_eq!(c.status, ContestantStatus::Done);
    }
}

#[tokio::test]
async fn cloud_contestants_overlap_and_lanes_run_together() {
    let h = Harness::new().await;
    h.cloud.set_model("c1", script(30, 100.0));
    h.cloud.set_model("c2", script(30, 100.0));
    h.local.set_model("l1", script(12, 100.0));
    h.local.set_model("l2", script(12, 100.0));
    let battle = h
        .run(&["debugger@c1", "debugger@c2", "debugger@l1", "explainer@l1"])
        .await;
    assert_eq!(battle.status, BattleStatus::Done);
    let c1 = interval(&only_request(&h.cloud, "c1"));
    let c2 = interval(&only_request(&h.cloud, "c2"));
    assert!(
        overlaps(c1, c2),
        "cloud contestants did not run in parallel"
    );
    let locals = h.local.requests_for("l1");
    assert_eq!(locals.len(), 2);
    let (l1, l2) = (interval(&locals[0]), interval(&locals[1]));
    assert!(!overlaps(l1, l2));
    assert!(
        overlaps(l1, c1) || overlaps(l1, c2),
        "the local lane waited for the cloud lane"
    );
    let lanes: Vec<_> = battle.contestants.iter().map(|c| c.lane).collect();
    assert_eq!(
        lanes,
        vec![Lane::Cloud, Lane::Cloud, Lane::Local, Lane::Local]
    );
}

#[tokio::test]
async fn a_failing_contestant_leaves_the_others_to_finish() {
    let h = Harness::new().await;
    h.local.set_model(
        "bad",
        ModelScript::tokens(5).with_faults(vec![Fault::Status(400)]),
    );
    h.local.set_model("good", script(10, 500.0));
    h.cloud.set_model("cloudy", script(10, 500.0));
    let battle = h
        .run(&["debugger@bad", "debugger@good", "debugger@cloudy"])
        .await;
    assert_eq!(battle.status, BattleStatus::Done);
    let bad = &battle.contestants[0];
    assert_eq!(bad.status, ContestantStatus::Error);
    let error = bad.error.as_deref().unwrap();
    assert!(error.contains("HTTP 400"), "{error}");
    assert_eq!(
        h.local.requests_for("bad").len(),
        1,
        "a 400 must not be retried"
    );
    assert_eq!(battle.contestants[1].status, ContestantStatus::Done);
    assert_eq!(battle.contestants[2].status, ContestantStatus::Done);
    // The failed one still gets a result file that says why.
    let md = std::fs::read_to_string(bad.result_path.as_ref().unwrap()).unwrap();
    assert!(md.contains("## Error") && md.contains("HTTP 400"));
}

#[tokio::test]
async fn every_contestant_failing_is_a_battle_error() {
    let h = Harness::new().await;
    h.local.set_model(
        "bad",
        ModelScript::tokens(5).with_faults(vec![Fault::Status(404)]),
    );
    h.cloud.set_model(
        "worse",
        ModelScript::tokens(5).with_faults(vec![Fault::Status(401)]),
    );
    let battle = h.run(&["debugger@bad", "debugger@worse"]).await;
    assert_eq!(battle.status, BattleStatus::Error);
}

#[tokio::test]
async fn cancelling_a_battle_stops_running_and_queued_contestants() {
    let h = Harness::new().await;
    h.local.set_model("slow1", script(1000, 20.0));
    h.local.set_model("slow2", script(1000, 20.0));
    h.cloud.set_model("slowc", script(1000, 20.0));
    let battle = h
        .engine
        .create_battle(h.request(
            "go",
            &["debugger@slow1", "debugger@slow2", "debugger@slowc"],
        ))
        .await
        .unwrap();
    let engine = h.engine.clone();
    let id = battle.id.clone();
    let run = tokio::spawn(async move { engine.run_battle(&id).await });
    wait_for_output(&h, &battle.id).await;
    let cancelled = h.engine.cancel_battle(&battle.id).await.unwrap();
    let finished = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(finished.status, BattleStatus::Cancelled);
    assert_eq!(cancelled.status, BattleStatus::Cancelled);
    let statuses: Vec<_> = finished.contestants.iter().map(|c| c.status).collect();
    assert!(
        statuses.iter().all(|s| *s == ContestantStatus::Cancelled),
        "{statuses:?}"
    );
    assert!(
        h.local.requests_for("slow2").is_empty(),
        "a queued contestant started after cancel"
    );
    // The HTTP stream was really dropped.
    let r = only_request(&h.local, "slow1");
    assert!(r.stream_finished_at.is_some());
    // Partial output is kept.
    assert!(!finished.contestants[0]
        .output
        .as_deref()
        .unwrap_or("")
        .is_empty());
}

#[tokio::test]
async fn cancelling_one_contestant_lets_the_rest_finish() {
    let h = Harness::new().await;
    h.cloud.set_model("slow", script(1000, 20.0));
    h.cloud.set_model("quick", script(40, 100.0));
    let battle = h
        .engine
        .create_battle(h.request("go", &["debugger@slow", "debugger@quick"]))
        .await
        .unwrap();
    let engine = h.engine.clone();
    let id = battle.id.clone();
    let run = tokio::spawn(async move { engine.run_battle(&id).await });
    wait_for_output(&h, &battle.id).await;
    let slow = battle.contestants[0].id.clone();
    h.engine.cancel_contestant(&battle.id, &slow).await.unwrap();
    let finished = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(finished.status, BattleStatus::Done);
    assert_eq!(finished.contestants[0].status, ContestantStatus::Cancelled);
    assert_eq!(finished.contestants[1].status, ContestantStatus::Done);
}

async fn wait_for_output(h: &Harness, battle_id: &str) {
    for _ in 0..200 {
        let events = h.engine.store().events_since(battle_id, 0, 1000).unwrap();
        if events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Output { .. }))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no output appeared");
}

#[tokio::test]
async fn transient_errors_are_retried_with_backoff_honouring_retry_after() {
    let h = Harness::new().await;
    h.cloud.set_model(
        "flaky",
        ModelScript::text("finally it works").with_faults(vec![
            Fault::Status(503),
            Fault::RateLimit {
                retry_after_secs: 1,
            },
        ]),
    );
    h.cloud.set_model("fine", script(5, 1000.0));
    let battle = h.run(&["debugger@flaky", "debugger@fine"]).await;
    let flaky = &battle.contestants[0];
    assert_eq!(flaky.status, ContestantStatus::Done, "{:?}", flaky.error);
    assert_eq!(flaky.output.as_deref(), Some("finally it works"));
    let reqs = h.cloud.requests_for("flaky");
    assert_eq!(reqs.len(), 3);
    let waited = reqs[2].received_at - reqs[1].received_at;
    assert!(
        waited >= Duration::from_secs(1),
        "Retry-After not honoured: {waited:?}"
    );
    let events = h
        .engine
        .store()
        .events_since(&battle.id, 0, 10_000)
        .unwrap();
    let retries = events
        .iter()
        .filter(|e| {
            matches!(e.kind, EventKind::Retry { .. })
                && e.contestant_id.as_deref() == Some(&flaky.id)
        })
        .count();
    assert_eq!(retries, 2);
}

#[tokio::test]
async fn a_dropped_stream_is_retried_and_its_partial_output_reset() {
    let h = Harness::new().await;
    h.cloud.set_model(
        "drops",
        ModelScript::text("one two three four five six")
            .with_faults(vec![Fault::DisconnectAfter(3)]),
    );
    h.cloud.set_model("fine", script(5, 1000.0));
    let battle = h.run(&["debugger@drops", "debugger@fine"]).await;
    let c = &battle.contestants[0];
    assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
    assert_eq!(c.output.as_deref(), Some("one two three four five six"));
    // A viewer replaying events and applying resets sees the same text.
    let events = h
        .engine
        .store()
        .events_since(&battle.id, 0, 10_000)
        .unwrap();
    let resets = events
        .iter()
        .filter(|e| e.contestant_id.as_deref() == Some(&c.id))
        .filter(|e| matches!(e.kind, EventKind::Reset { .. }))
        .count();
    assert_eq!(text_of(&events, &c.id), "one two three four five six");
    assert_eq!(resets, 1);
}

#[tokio::test]
async fn retries_give_up_after_max_attempts() {
    let h = Harness::new().await;
    h.cloud.set_model(
        "down",
        ModelScript::tokens(3).with_faults(vec![
            Fault::Status(500),
            Fault::Status(502),
            Fault::Status(503),
            Fault::Status(500),
        ]),
    );
    h.cloud.set_model("fine", script(5, 1000.0));
    let battle = h.run(&["debugger@down", "debugger@fine"]).await;
    let c = &battle.contestants[0];
    assert_eq!(c.status, ContestantStatus::Error);
    assert!(
        c.error.as_deref().unwrap().contains("(request retried 2×)"),
        "{:?}",
        c.error
    );
    assert_eq!(h.cloud.requests_for("down").len(), 3);
}

#[tokio::test]
async fn a_stalled_stream_fails_with_a_clear_error() {
    let h = Harness::new().await;
    h.cloud.set_model(
        "stuck",
        ModelScript::tokens(10).with_faults(vec![Fault::StallAfter(2)]),
    );
    h.cloud.set_model("fine", script(5, 1000.0));
    let started = std::time::Instant::now();
    let battle = h.run(&["debugger@stuck", "debugger@fine"]).await;
    let c = &battle.contestants[0];
    assert_eq!(c.status, ContestantStatus::Error);
    let error = c.error.as_deref().unwrap();
    assert!(error.contains("stalled: no data for 1 s"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        c.output.as_deref(),
        Some("tok0 tok1 "),
        "partial output is kept"
    );
}

#[tokio::test]
async fn a_malformed_chunk_fails_with_a_clear_error() {
    let h = Harness::new().await;
    h.cloud.set_model(
        "garbled",
        ModelScript::tokens(10).with_faults(vec![Fault::MalformedAfter(2)]),
    );
    h.cloud.set_model("fine", script(5, 1000.0));
    let battle = h.run(&["debugger@garbled", "debugger@fine"]).await;
    let c = &battle.contestants[0];
    assert_eq!(c.status, ContestantStatus::Error);
    assert!(
        c.error
            .as_deref()
            .unwrap()
            .contains("malformed stream data"),
        "{:?}",
        c.error
    );
}

#[tokio::test]
async fn output_beyond_the_cap_is_truncated_and_kept() {
    let limits = arena_core::config::Limits {
        max_output_bytes: 50,
        ..fast_limits()
    };
    let h = Harness::with_limits(limits).await;
    h.cloud.set_model("chatty", ModelScript::tokens(500));
    h.cloud.set_model("fine", script(3, 1000.0));
    let battle = h.run(&["debugger@chatty", "debugger@fine"]).await;
    let c = &battle.contestants[0];
    assert_eq!(c.status, ContestantStatus::Done);
    assert!(c.truncated);
    assert_eq!(c.output.as_deref().unwrap().len(), 50);
}

/// The journal's writer gathers streamed text longer when nobody in this
/// process watches live (a series in a terminal): other processes' viewers
/// read the journal and can wait that long; the battle is the same.
#[tokio::test]
async fn the_journal_writes_less_often_when_nobody_in_the_process_watches() {
    let h = Harness::new().await;
    // 1.2 s of streaming: long enough that the commits every battle makes
    // anyway (its start and end) do not decide the ratio — on a team
    // database, whose commits take longer, 0.6 s left it on the edge.
    h.cloud.set_model("a", script(120, 100.0));
    h.cloud.set_model("b", script(120, 100.0));
    let commits_of = |viewed: bool| {
        let h = &h;
        async move {
            let battle = h
                .engine
                .create_battle(h.request("go", &["debugger@a", "explainer@b"]))
                .await
                .unwrap();
            let viewer = viewed.then(|| {
                let (engine, id) = (h.engine.clone(), battle.id.clone());
                tokio::spawn(async move { collect_until_done(&engine, &id, 0).await })
            });
            let before = h.engine.journal_commits();
            let done = h.engine.run_battle(&battle.id).await.unwrap();
            let commits = h.engine.journal_commits() - before;
            if let Some(viewer) = viewer {
                let seen = viewer.await.unwrap();
                for c in &done.contestants {
                    assert_eq!(Some(text_of(&seen, &c.id).as_str()), c.output.as_deref());
                }
            }
            assert!(done
                .contestants
                .iter()
                .all(|c| c.output.as_deref().is_some_and(|o| !o.is_empty())));
            commits
        }
    };
    let unwatched = commits_of(false).await;
    let watched = commits_of(true).await;
    assert!(
        unwatched * 2 <= watched,
        "{unwatched} transactions unwatched, {watched} watched over the same 1.2 s of streaming"
    );
}

/// A battle's contestants join their lanes' queues in one transaction,
/// take their turns and start in one grouped write, and record their ends
/// and give their lane tickets back in another: a battle of six costs
/// about the write transactions of a battle of two (each contestant used
/// to add seven: its ticket, its turn, its start, its end, its ticket
/// given back, and two reads of the battle in write transactions).
#[tokio::test]
async fn more_contestants_are_not_more_write_transactions() {
    let h = Harness::new().await;
    for i in 0..6 {
        h.cloud.set_model(&format!("m{i}"), script(20, 200.0));
    }
    let writes_of = |n: usize| {
        let h = &h;
        async move {
            let roster: Vec<String> = (0..n).map(|i| format!("debugger@m{i}")).collect();
            let roster: Vec<&str> = roster.iter().map(String::as_str).collect();
            let before = h.engine.write_transactions();
            let battle = h.run(&roster).await;
            assert!(battle
                .contestants
                .iter()
                .all(|c| c.status == ContestantStatus::Done));
            h.engine.write_transactions() - before
        }
    };
    let two = writes_of(2).await;
    let six = writes_of(6).await;
    assert!(
        six < two + 8,
        "a battle of two made {two} write transactions, one of six {six}"
    );
}

#[tokio::test]
async fn events_replay_from_any_seq_then_follow_live() {
    let h = Harness::new().await;
    h.local.set_model("a", script(40, 400.0));
    h.cloud.set_model(
        "b",
        ModelScript::tokens(40)
            .rate(400.0)
            .reasoning(vec!["hmm ".into(), "ok ".into()]),
    );
    let battle = h
        .engine
        .create_battle(h.request("go", &["debugger@a", "debugger@b"]))
        .await
        .unwrap();
    // A live viewer from the start.
    let live = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move { collect_until_done(&engine, &id, 0).await })
    };
    // One that joins mid-stream, having missed the first events.
    let joined = {
        let (engine, id) = (h.engine.clone(), battle.id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(40)).await;
            collect_until_done(&engine, &id, 3).await
        })
    };
    let finished = h.engine.run_battle(&battle.id).await.unwrap();
    let live = live.await.unwrap();
    let joined = joined.await.unwrap();
    let seqs: Vec<u64> = live.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "gapless, ordered"
    );

    // The journal keeps each answer once: its deltas were folded into one
    // `folded` event when it ended.
    let journal = h
        .engine
        .store()
        .events_since(&battle.id, 0, 100_000)
        .unwrap();
    assert!(journal.len() < live.len());
    assert!(!journal
        .iter()
        .any(|e| matches!(e.kind, EventKind::Output { .. })));
    // Late viewers from any point, mid-stream included, see exactly the
    // journal's tail and rebuild every answer.
    let last = journal.last().map_or(0, |e| e.seq);
    for since in [0, 1, 5, seqs.len() as u64 / 2, last - 1] {
        let replay = collect_until_done(&h.engine, &battle.id, since).await;
        let tail: Vec<_> = journal.iter().filter(|e| e.seq > since).cloned().collect();
        assert_eq!(replay, tail, "since_seq {since}");
    }
    // The live viewer and a late one rebuild the stored text; the live
    // deltas were coalesced.
    for c in &finished.contestants {
        assert_eq!(Some(text_of(&live, &c.id).as_str()), c.output.as_deref());
        assert_eq!(Some(text_of(&joined, &c.id).as_str()), c.output.as_deref());
        assert_eq!(Some(text_of(&journal, &c.id).as_str()), c.output.as_deref());
        let outputs = live
            .iter()
            .filter(|e| {
                e.contestant_id.as_deref() == Some(&c.id)
                    && matches!(e.kind, EventKind::Output { .. })
            })
            .count();
        assert!(
            outputs < 40,
            "deltas were not coalesced: {outputs} output events for 40 tokens"
        );
    }
    let reasoning = &finished.contestants[1].reasoning;
    assert_eq!(reasoning.as_deref(), Some("hmm ok "));

    // The battle view's snapshot says which events it already reflects.
    let detail = h.engine.battle_detail(&battle.id).await.unwrap();
    assert_eq!(detail.last_seq, last);
    assert_eq!(detail.battle.status, BattleStatus::Done);
    assert_eq!(detail.rounds.len(), 2, "an entry per contestant");
    assert!(detail.rounds.values().all(Vec::is_empty));
    let fresh = h
        .engine
        .create_battle(h.request("go", &["debugger@a", "debugger@b"]))
        .await
        .unwrap();
    let created = h.engine.battle_detail(&fresh.id).await.unwrap();
    let first = h.engine.store().events_since(&fresh.id, 0, 100).unwrap();
    assert_eq!(created.last_seq, first.len() as u64);
    h.engine.cancel_battle(&fresh.id).await.unwrap();
}

#[tokio::test]
async fn results_folder_holds_manifest_and_result_files() {
    let h = Harness::new().await;
    h.local.set_model(
        "qwen3-8b",
        ModelScript::text("The answer is 42.").rate(200.0),
    );
    h.cloud.set_model(
        "big-model",
        ModelScript::tokens(30).without_timings().rate(200.0),
    );
    let battle = h
        .run(&["debugger@qwen3-8b", "code-reviewer@big-model"])
        .await;
    assert_eq!(battle.status, BattleStatus::Done);
    assert!(battle.results_path.starts_with(h.results_root()));
    let name = battle
        .results_path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.contains("-qa-explain-lanes-"), "{name}");

    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(battle.results_path.join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["id"], battle.id);
    assert_eq!(manifest["battle_type"], "qa");
    assert_eq!(manifest["status"], "done");
    assert_eq!(manifest["prompt"], "Explain lanes.");
    assert!(manifest["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(manifest["finished_at"].is_string());
    assert!(manifest["winner"].is_null());
    let cs = manifest["contestants"].as_array().unwrap();
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[0]["identity"], "Debugger");
    assert_eq!(cs[0]["model"], "qwen3-8b");
    assert_eq!(cs[0]["lane"], "local");
    assert_eq!(cs[0]["status"], "done");
    assert_eq!(cs[1]["identity"], "Code Reviewer");
    assert_eq!(cs[1]["lane"], "cloud");

    let local = &battle.contestants[0];
    let md = std::fs::read_to_string(local.result_path.as_ref().unwrap()).unwrap();
    assert!(local
        .result_path
        .as_ref()
        .unwrap()
        .ends_with("01-debugger-qwen3-8b/result.md"));
    assert!(md.starts_with("# Debugger · qwen3-8b\n"), "{md}");
    if let Some(machine) = &battle.machine {
        assert!(md.contains(&format!("- Ran on: `{machine}`")), "{md}");
    }
    assert!(md.contains("## Benchmark") && md.contains("(as the server reports)"));
    assert!(md.contains("## Output\n\nThe answer is 42.\n"));
    assert_eq!(local.benchmark.rate_source, Some(RateSource::Server));
    let cloud = &battle.contestants[1];
    assert_eq!(cloud.benchmark.rate_source, Some(RateSource::Measured));
    let rate = cloud.benchmark.tokens_per_sec.unwrap();
    assert!(
        (100.0..400.0).contains(&rate),
        "measured {rate} tok/s for a 200 tok/s stream"
    );
    assert!(cloud.benchmark.ttft_ms.is_some() && cloud.benchmark.duration_ms.is_some());

    // Nothing is added to the project's tree to keep results out of git
    // (a real repository gets `/Arena/` in its own `info/exclude`: see
    // `results::tests::results_are_excluded_through_the_repository_not_the_tree`).
    assert!(!h.project.path().join(".gitignore").exists());
}

#[tokio::test]
async fn model_names_cannot_escape_the_results_root() {
    let h = Harness::new().await;
    // A name nothing else in the temp folder has, so "not written" means it.
    let escape = format!("arena-escape-{}", std::process::id());
    let sneaky = format!("../../{escape}");
    h.cloud.set_model(&sneaky, ModelScript::text("sneaky"));
    h.cloud
        .set_model("/etc/passwd", ModelScript::text("sneakier"));
    let battle = h
        .run(&[&format!("debugger@{sneaky}"), "debugger@/etc/passwd"])
        .await;
    assert_eq!(battle.status, BattleStatus::Done);
    let root = h.results_root();
    for c in &battle.contestants {
        let path = c.result_path.as_ref().unwrap();
        assert!(path.starts_with(&battle.results_path), "{}", path.display());
        assert!(path.starts_with(&root));
        assert!(!path
            .components()
            .any(|p| p == std::path::Component::ParentDir));
        assert!(path.exists());
    }
    // Nothing was written next to the project.
    let parent = h.project.path().parent().unwrap();
    assert!(!parent.join(&escape).exists());
}

#[tokio::test]
async fn the_anthropic_messages_api_streams_too() {
    use arena_core::config::{Config, ProviderKind};
    let server = arena_testserver::TestServer::start().await.unwrap();
    server.set_model(
        "claude-test",
        ModelScript::text("Hello from Messages.").reasoning(vec!["thinking ".into()]),
    );
    server.set_model("claude-two", ModelScript::text("Second."));
    let data = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let engine = arena_core::Engine::open(arena_core::EngineOptions {
        data_dir: data.path().into(),
        config: Config {
            default_model: None,
            providers: vec![provider(
                "anthropic",
                ProviderKind::Anthropic,
                server.base_url(),
                Lane::Cloud,
            )],
            limits: fast_limits(),
            backends: Vec::new(),
            prices: Vec::new(),
            database_url: None,
            team: Default::default(),
            coding: Default::default(),
            model_cutoffs: Vec::new(),
        },
        clock: std::sync::Arc::new(arena_core::clock::SystemClock),
        database_password: None,
        machine: None,
        user: None,
    })
    .unwrap();
    let battle = engine
        .create_battle(arena_core::BattleRequest {
            battle_type: arena_core::BattleType::Qa,
            project: project.path().into(),
            prompt: "hi".into(),
            contestants: vec![
                arena_core::ContestantSpec::parse("explainer@claude-test").unwrap(),
                arena_core::ContestantSpec::parse("debugger@claude-two").unwrap(),
            ],
            check_command: None,
            blind: false,
            tags: Vec::new(),
        })
        .await
        .unwrap();
    let battle = engine.run_battle(&battle.id).await.unwrap();
    let c = &battle.contestants[0];
    assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
    assert_eq!(c.output.as_deref(), Some("Hello from Messages."));
    assert_eq!(c.reasoning.as_deref(), Some("thinking "));
    let req = &server.requests_for("claude-test")[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        req.body["system"]
            .as_str()
            .map(|s| s.starts_with("You are a patient teacher")),
        Some(true)
    );
    // No project .git: nothing is written to keep results out of git.
    assert!(!project.path().join(".gitignore").exists());
    assert!(!project.path().join(".git").exists());
}

#[tokio::test]
async fn local_requests_ask_llama_cpp_not_to_reuse_its_prompt_cache() {
    let h = Harness::new().await;
    h.local.set_model("l", ModelScript::tokens(3));
    h.cloud.set_model("c", ModelScript::tokens(3));
    h.run(&["debugger@l", "debugger@c"]).await;
    let local = only_request(&h.local, "l");
    let cloud = only_request(&h.cloud, "c");
    assert_eq!(local.body["cache_prompt"], false);
    assert!(cloud.body.get("cache_prompt").is_none());
    assert_eq!(local.body["stream_options"]["include_usage"], true);
    assert_eq!(local.body["temperature"], 0.2);
    assert_eq!(local.body["messages"][0]["role"], "system");
}

/// A contestant's answer as a viewer rebuilds it from events: deltas
/// appended, a reset clearing them, a fold replacing them.
fn text_of(events: &[arena_core::BattleEvent], contestant: &str) -> String {
    let mut text = String::new();
    for e in events
        .iter()
        .filter(|e| e.contestant_id.as_deref() == Some(contestant))
    {
        match &e.kind {
            EventKind::Output { text: t } => text.push_str(t),
            EventKind::Reset { .. } => text.clear(),
            EventKind::Folded { output, .. } => text = output.clone(),
            _ => {}
        }
    }
    text
}
