//! Fault injection on the OpenAI endpoint.

mod common;

use std::time::Duration;

use arena_testserver::{Fault, ModelScript, TestServer};
use common::{chat_body, eventually, parse_sse, post_chat};
use futures::StreamExt;
use serde_json::{json, Value};

#[tokio::test]
async fn status_fault_then_success() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(2).with_faults(vec![Fault::Status(503), Fault::Status(400)]),
    );
    let base = server.base_url();

    let resp = post_chat(&base, &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 503);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "server_error");
    assert!(v["error"]["message"].as_str().unwrap().contains("503"));

    let resp = post_chat(&base, &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");

    // Faults exhausted: normal stream.
    let resp = post_chat(&base, &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().ends_with("data: [DONE]\n\n"));

    let reqs = server.requests_for("m");
    assert_eq!(
        reqs.iter().map(|r| r.fault.clone()).collect::<Vec<_>>(),
        vec![Some(Fault::Status(503)), Some(Fault::Status(400)), None]
    );
    assert!(reqs[0].stream_started_at.is_none());
    assert!(reqs[1].stream_started_at.is_none());
    assert!(reqs[2].stream_started_at.is_some());

    // Replacing the script restarts the fault sequence.
    server.set_model(
        "m",
        ModelScript::tokens(2).with_faults(vec![Fault::Status(500)]),
    );
    let resp = post_chat(&base, &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 500);
}

#[tokio::test]
async fn rate_limit_fault_sets_retry_after() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::default().with_faults(vec![Fault::RateLimit {
            retry_after_secs: 2,
        }]),
    );
    let resp = post_chat(&server.base_url(), &chat_body("m", true, false)).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"].to_str().unwrap(), "2");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert_eq!(
        server.requests_for("m")[0].fault,
        Some(Fault::RateLimit {
            retry_after_secs: 2
        })
    );
}

#[tokio::test]
async fn disconnect_fault_aborts_after_n_tokens() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(10).with_faults(vec![Fault::DisconnectAfter(3)]),
    );
    let resp = post_chat(&server.base_url(), &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    let mut errored = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(b) => text.push_str(std::str::from_utf8(&b).unwrap()),
            Err(_) => {
                errored = true;
                break;
            }
        }
    }
    assert!(errored, "body should end with an error, got {text:?}");
    let events = parse_sse(&text);
    assert_eq!(events.len(), 4, "{text}");
    for (i, e) in events[1..].iter().enumerate() {
        assert_eq!(
            e.json()["choices"][0]["delta"]["content"],
            format!("tok{i} ")
        );
    }
    assert!(!text.contains("finish_reason\":\"stop"));
    assert!(!text.contains("[DONE]"));
    let r = eventually(2, || {
        let r = server.requests_for("m").pop()?;
        r.stream_finished_at.map(|_| r)
    })
    .await;
    assert_eq!(r.fault, Some(Fault::DisconnectAfter(3)));
    assert!(r.stream_started_at.is_some());
}

#[tokio::test]
async fn malformed_fault_sends_bad_line_and_ends_cleanly() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(10).with_faults(vec![Fault::MalformedAfter(2)]),
    );
    let resp = post_chat(&server.base_url(), &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 200);
    // The body itself ends properly.
    let text = resp.text().await.unwrap();
    let events = parse_sse(&text);
    assert_eq!(events.len(), 4, "{text}");
    assert_eq!(events[2].json()["choices"][0]["delta"]["content"], "tok1 ");
    assert_eq!(events[3].data, "{not json");
    assert!(text.ends_with("data: {not json\n\n"));
    assert!(!text.contains("[DONE]"));
}

#[tokio::test]
async fn stall_fault_holds_the_stream_until_the_client_leaves() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(10).with_faults(vec![Fault::StallAfter(1)]),
    );
    let resp = post_chat(&server.base_url(), &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    while !text.contains("tok0 ") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("first token")
            .unwrap()
            .unwrap();
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    // Nothing more comes.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), stream.next())
            .await
            .is_err(),
        "stream should stall"
    );
    assert!(!text.contains("tok1 "));
    let r = &server.requests_for("m")[0];
    assert_eq!(r.fault, Some(Fault::StallAfter(1)));
    assert!(r.stream_started_at.is_some());
    assert!(r.stream_finished_at.is_none());

    // The client goes away: the server notices and records the end.
    drop(stream);
    let finished = eventually(5, || server.requests_for("m")[0].stream_finished_at).await;
    assert!(finished > r.stream_started_at.unwrap());
}

#[tokio::test]
async fn stall_is_released_by_shutdown() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(3).with_faults(vec![Fault::StallAfter(0)]),
    );
    let resp = post_chat(&server.base_url(), &chat_body("m", true, true)).await;
    let mut stream = resp.bytes_stream();
    // Role chunk.
    stream.next().await.unwrap().unwrap();
    server.shutdown();
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut errored = false;
        while let Some(chunk) = stream.next().await {
            if chunk.is_err() {
                errored = true;
            }
        }
        errored
    })
    .await
    .expect("stream should end after shutdown");
    assert!(rest, "aborted stream should end with an error");
    eventually(2, || server.requests_for("m")[0].stream_finished_at).await;
}

#[tokio::test]
async fn faults_in_non_streaming_mode() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(3).with_faults(vec![
            Fault::MalformedAfter(1),
            Fault::DisconnectAfter(1),
            Fault::Status(502),
        ]),
    );
    let base = server.base_url();
    let body = json!({"model": "m", "stream": false});
    let text = post_chat(&base, &body).await.text().await.unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_err());
    assert!(post_chat(&base, &body).await.text().await.is_err());
    assert_eq!(post_chat(&base, &body).await.status(), 502);
    let v: Value = post_chat(&base, &body).await.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "tok0 tok1 tok2 ");
}
