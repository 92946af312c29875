//! A judge whose model no provider serves (its provider is down, or the
//! name is wrong): the battle records that it was not judged and why, in
//! the engine's words, so every front end can say so.

mod common;

use arena_core::analysis::AnalysisStatus;
use arena_core::config::ProviderKind;
use arena_core::Lane;
use arena_testserver::ModelScript;
use common::*;

/// A loopback address nobody listens on (a port bound, then released).
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

#[tokio::test]
async fn a_judge_whose_provider_is_down_leaves_a_failed_analysis_with_the_reason() {
    let mut h = Harness::new().await;
    h.reconfigure(|config| {
        config.default_model = Some("judge-4o".into());
        config.providers.push(provider(
            "judges",
            ProviderKind::Openai,
            dead_url(),
            Lane::Cloud,
        ));
    });
    h.cloud.set_model("m1", ModelScript::text("Paris."));
    h.cloud.set_model("m2", ModelScript::text("Lyon."));
    let b = h.run(&["debugger@m1", "explainer@m2"]).await;

    let err = h.engine.analyze(&b.id, None).await.unwrap_err();
    let said = err.to_string();
    assert!(said.contains("judge-4o"), "{said}");

    let a = h
        .engine
        .analysis(&b.id)
        .await
        .unwrap()
        .expect("the failed analysis is recorded");
    assert_eq!(a.status, AnalysisStatus::Error);
    assert_eq!(a.model, "judge-4o");
    assert!(a.finished_at.is_some(), "it is over, not running");
    assert_eq!(
        a.cost_usd,
        Some(0.0),
        "no request was made: it cost nothing"
    );
    let why = a.error.as_deref().unwrap_or_default();
    assert_eq!(why, said, "the stored reason is the engine's error");
    assert!(
        why.contains("judges is unreachable") && why.contains("pick one of the models"),
        "the reason names the provider that is down and what to do: {why}"
    );

    // Lists of battles see it too (the history's row), and no winner came of it.
    let battle = h.engine.battle(&b.id).await.unwrap();
    let judging = battle
        .judging
        .expect("the battle carries its analysis in brief");
    assert_eq!(judging.status, AnalysisStatus::Error);
    assert!(battle.winner.is_none(), "{:?}", battle.winner);

    // The events announce it, so a view that follows the battle learns it.
    use futures::StreamExt;
    let mut stream = std::pin::pin!(h.engine.subscribe(&b.id, 0));
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    let announced = loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(event))) => {
                if let arena_core::EventKind::AnalysisStatus {
                    status: AnalysisStatus::Error,
                    error: Some(why),
                    ..
                } = &event.kind
                {
                    break why.contains("judge-4o");
                }
                seen.push(event.kind);
            }
            _ => break false,
        }
    };
    assert!(announced, "no analysis_status error event among {seen:?}");
}
