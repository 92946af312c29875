//! The Anthropic Messages endpoint.

mod common;

use arena_testserver::{Fault, ModelScript, TestServer};
use common::{client, parse_sse};
use serde_json::{json, Value};

async fn post_messages(server: &TestServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/messages?beta=true", server.base_url()))
        .header("x-api-key", "test-key")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
}

fn body(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    })
}

#[tokio::test]
async fn stream_shape_with_thinking_and_text() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "claude",
        ModelScript::tokens(3)
            .reasoning(vec!["hmm ".into(), "ok".into()])
            .prompt_tokens(7),
    );
    let resp = post_messages(&server, &body("claude", true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let events = parse_sse(&resp.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|e| e.name.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        vec![
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let data: Vec<Value> = events.iter().map(|e| e.json()).collect();
    for (e, d) in events.iter().zip(&data) {
        assert_eq!(d["type"], e.name.as_deref().unwrap());
    }
    let msg = &data[0]["message"];
    assert!(msg["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(msg["role"], "assistant");
    assert_eq!(msg["model"], "claude");
    assert_eq!(msg["usage"]["input_tokens"], 7);
    assert_eq!(data[1]["index"], 0);
    assert_eq!(data[1]["content_block"]["type"], "thinking");
    assert_eq!(
        data[2]["delta"],
        json!({"type": "thinking_delta", "thinking": "hmm "})
    );
    assert_eq!(data[3]["delta"]["thinking"], "ok");
    assert_eq!(data[4]["index"], 0);
    assert_eq!(data[5]["index"], 1);
    assert_eq!(
        data[5]["content_block"],
        json!({"type": "text", "text": ""})
    );
    for (i, d) in data[6..9].iter().enumerate() {
        assert_eq!(d["index"], 1);
        assert_eq!(
            d["delta"],
            json!({"type": "text_delta", "text": format!("tok{i} ")})
        );
    }
    assert_eq!(data[9]["index"], 1);
    assert_eq!(data[10]["delta"]["stop_reason"], "end_turn");
    assert_eq!(data[10]["usage"]["output_tokens"], 5);

    let r = &server.requests_for("claude")[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert!(r.stream_started_at.is_some());
}

#[tokio::test]
async fn text_only_stream_starts_at_block_zero() {
    let server = TestServer::start().await.unwrap();
    server.set_model("c", ModelScript::tokens(1));
    let events = parse_sse(
        &post_messages(&server, &body("c", true))
            .await
            .text()
            .await
            .unwrap(),
    );
    assert_eq!(events.len(), 6);
    let start = events[1].json();
    assert_eq!(start["index"], 0);
    assert_eq!(start["content_block"]["type"], "text");
}

#[tokio::test]
async fn errors_use_anthropic_shape() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "c",
        ModelScript::tokens(4).with_faults(vec![
            Fault::Status(529),
            Fault::RateLimit {
                retry_after_secs: 3,
            },
            Fault::MalformedAfter(1),
        ]),
    );
    let resp = post_messages(&server, &body("c", true)).await;
    assert_eq!(resp.status(), 529);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");
    assert!(v["error"]["message"].is_string());

    let resp = post_messages(&server, &body("c", true)).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"].to_str().unwrap(), "3");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");

    let text = post_messages(&server, &body("c", true))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        text.ends_with("event: content_block_delta\ndata: {not json\n\n"),
        "{text}"
    );
    assert!(!text.contains("message_stop"));

    let resp = post_messages(&server, &body("nope", true)).await;
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!({"type": "error", "error": {"type": "not_found_error", "message": "model 'nope' not found"}})
    );
}

#[tokio::test]
async fn non_streaming_message() {
    let server = TestServer::start().await.unwrap();
    server.set_model("c", ModelScript::text("hello world"));
    let v: Value = post_messages(&server, &body("c", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(
        v["content"],
        json!([{"type": "text", "text": "hello world"}])
    );
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["usage"], json!({"input_tokens": 12, "output_tokens": 2}));
}
