//! Tool-calling turns on all three APIs: OpenAI chat completions, Anthropic
//! Messages and the OpenAI Responses API, streamed and not.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arena_testserver::{tool_results, Fault, ModelScript, TestServer, ToolCall, Turn};
use common::{client, parse_sse, turn, Api, Seen, APIS};
use serde_json::{json, Value};

fn write_args() -> Value {
    json!({
        "path": "src/main.rs",
        "content": "fn main() {\n    println!(\"héllo, \\\"world\\\"\");\n}\n",
    })
}

fn write_call() -> Turn {
    Turn::call("write_file", write_args())
}

/// The stop reason each API reports for a tool-call turn and a text turn
/// (for Responses: whether the output ends in calls).
fn stops(api: Api) -> (&'static str, &'static str) {
    match api {
        Api::Chat | Api::Responses => ("tool_calls", "stop"),
        Api::Messages => ("tool_use", "end_turn"),
    }
}

fn text_seen(api: Api, text: &str) -> Seen {
    Seen {
        text: text.to_string(),
        calls: Vec::new(),
        stop: stops(api).1.to_string(),
    }
}

#[tokio::test]
async fn tool_calls_reassemble_to_the_exact_json_on_every_api() {
    let server = TestServer::start().await.unwrap();
    let base = server.base_url();
    for api in APIS {
        for stream in [true, false] {
            server.set_model(
                "agent",
                ModelScript::turns(vec![Turn::ToolCalls {
                    text: Some("Let me write it.\nNow:".into()),
                    calls: vec![
                        ToolCall::new("write_file", write_args()),
                        ToolCall::new("run", json!({})),
                    ],
                }]),
            );
            let seen = turn(api, &base, &api.body("agent", stream, true, 0)).await;
            let ctx = format!("{api:?} stream={stream}");
            assert_eq!(seen.text, "Let me write it.\nNow:", "{ctx}");
            assert_eq!(seen.stop, stops(api).0, "{ctx}");
            assert_eq!(seen.calls.len(), 2, "{ctx}");
            let (a, b) = (&seen.calls[0], &seen.calls[1]);
            assert_eq!((a.name.as_str(), b.name.as_str()), ("write_file", "run"));
            assert_eq!(a.arguments, write_args().to_string(), "{ctx}");
            assert_eq!(
                serde_json::from_str::<Value>(&a.arguments).unwrap(),
                write_args()
            );
            assert_eq!(b.arguments, "{}", "{ctx}");
            if stream {
                assert!(a.pieces > 1 && a.pieces <= 4, "{ctx}: {} pieces", a.pieces);
                assert_eq!(b.pieces, 2, "{ctx}");
            }
            let prefix = if api == Api::Messages {
                "toolu_"
            } else {
                "call_"
            };
            assert!(
                a.id.starts_with(prefix) && b.id.starts_with(prefix),
                "{ctx}"
            );
            assert_ne!(a.id, b.id);
        }
    }
    // Ids differ across responses too.
    server.set_model(
        "agent",
        ModelScript::turns(vec![write_call(), write_call()]),
    );
    let one = turn(Api::Chat, &base, &Api::Chat.body("agent", true, true, 0)).await;
    let two = turn(Api::Chat, &base, &Api::Chat.body("agent", true, true, 1)).await;
    assert_ne!(one.calls[0].id, two.calls[0].id);
}

#[tokio::test]
async fn turns_come_in_order_then_done() {
    let server = TestServer::start().await.unwrap();
    let base = server.base_url();
    for api in APIS {
        for stream in [true, false] {
            server.set_model(
                "agent",
                ModelScript::turns(vec![
                    Turn::text("first"),
                    write_call(),
                    Turn::text("All written."),
                ]),
            );
            let mut seen = Vec::new();
            for i in 0..4 {
                seen.push(turn(api, &base, &api.body("agent", stream, true, i)).await);
            }
            let ctx = format!("{api:?} stream={stream}");
            assert_eq!(seen[0], text_seen(api, "first"), "{ctx}");
            assert_eq!(seen[1].text, "", "{ctx}");
            assert_eq!(seen[1].calls[0].name, "write_file", "{ctx}");
            assert_eq!(seen[1].stop, stops(api).0, "{ctx}");
            assert_eq!(seen[2], text_seen(api, "All written."), "{ctx}");
            assert_eq!(seen[3], text_seen(api, "done"), "{ctx}");
        }
    }
}

#[tokio::test]
async fn requests_without_tools_get_plain_text_and_keep_the_turn() {
    let server = TestServer::start().await.unwrap();
    let base = server.base_url();
    for api in APIS {
        for stream in [true, false] {
            server.set_model(
                "agent",
                ModelScript::turns(vec![write_call(), Turn::text("fin")]),
            );
            let ctx = format!("{api:?} stream={stream}");
            let side = api.body("agent", stream, false, 0);
            assert_eq!(
                turn(api, &base, &side).await,
                text_seen(api, "Arena test"),
                "{ctx}"
            );
            let mut empty_tools = api.body("agent", stream, false, 0);
            empty_tools["tools"] = json!([]);
            assert_eq!(
                turn(api, &base, &empty_tools).await,
                text_seen(api, "Arena test"),
                "{ctx}"
            );
            let call = turn(api, &base, &api.body("agent", stream, true, 0)).await;
            assert_eq!(call.calls.len(), 1, "{ctx}");
            assert_eq!(
                turn(api, &base, &side).await,
                text_seen(api, "Arena test"),
                "{ctx}"
            );
            assert_eq!(
                turn(api, &base, &api.body("agent", stream, true, 1)).await,
                text_seen(api, "fin"),
                "{ctx}"
            );
        }
    }
}

#[tokio::test]
async fn turn_with_chooses_by_counting_tool_results() {
    let server = TestServer::start().await.unwrap();
    let base = server.base_url();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    server.set_model(
        "agent",
        ModelScript::turn_with(move |body| {
            counter.fetch_add(1, Ordering::SeqCst);
            match tool_results(body) {
                0 => write_call(),
                1 => Turn::ToolCalls {
                    text: Some("Checking.".into()),
                    calls: vec![ToolCall::new("read_file", json!({"path": "src/main.rs"}))],
                },
                n => Turn::Text(format!("done after {n} results")),
            }
        }),
    );
    let mut expected_calls = 0;
    for api in APIS {
        for stream in [true, false] {
            let ctx = format!("{api:?} stream={stream}");
            // Asked twice at the same point: the same answer (nothing is consumed).
            for _ in 0..2 {
                let s = turn(api, &base, &api.body("agent", stream, true, 0)).await;
                assert_eq!(s.calls[0].name, "write_file", "{ctx}");
                assert_eq!(s.calls[0].arguments, write_args().to_string(), "{ctx}");
            }
            let s = turn(api, &base, &api.body("agent", stream, true, 1)).await;
            assert_eq!(s.text, "Checking.", "{ctx}");
            assert_eq!(s.calls[0].name, "read_file", "{ctx}");
            assert_eq!(s.stop, stops(api).0, "{ctx}");
            let s = turn(api, &base, &api.body("agent", stream, true, 3)).await;
            assert_eq!(s, text_seen(api, "done after 3 results"), "{ctx}");
            // Side requests do not reach the chooser.
            let s = turn(api, &base, &api.body("agent", stream, false, 2)).await;
            assert_eq!(s, text_seen(api, "Arena test"), "{ctx}");
            expected_calls += 4;
            assert_eq!(calls.load(Ordering::SeqCst), expected_calls, "{ctx}");
        }
    }
}

#[tokio::test]
async fn chat_stream_tool_call_chunks_have_the_openai_shape() {
    let server = TestServer::start().await.unwrap();
    server.set_model("agent", ModelScript::turns(vec![write_call()]));
    let resp = Api::Chat
        .post(&server.base_url(), &Api::Chat.body("agent", true, true, 0))
        .await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = parse_sse(&resp.text().await.unwrap());
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": null})
    );
    let id = chunks[1]["choices"][0]["delta"]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        chunks[1]["choices"],
        json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": "write_file", "arguments": ""}}]}, "finish_reason": null}])
    );
    let n = chunks.len();
    let mut args = String::new();
    for c in &chunks[2..n - 2] {
        let tc = &c["choices"][0]["delta"]["tool_calls"];
        assert_eq!(tc.as_array().unwrap().len(), 1);
        assert_eq!(tc[0]["index"], 0);
        assert_eq!(tc[0].as_object().unwrap().len(), 2, "{tc}");
        args.push_str(tc[0]["function"]["arguments"].as_str().unwrap());
        assert!(c["choices"][0]["finish_reason"].is_null());
    }
    assert_eq!(args, write_args().to_string());
    assert_eq!(
        chunks[n - 2]["choices"],
        json!([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])
    );
    assert_eq!(chunks[n - 1]["choices"], json!([]));
    assert_eq!(
        chunks[n - 1]["usage"]["completion_tokens"].as_u64(),
        Some((n - 4) as u64),
        "one completion token per argument piece"
    );
}

#[tokio::test]
async fn non_streaming_bodies_have_each_apis_shape() {
    let server = TestServer::start().await.unwrap();
    let base = server.base_url();
    server.set_model("agent", ModelScript::turns(vec![write_call(); 3]));

    let v: Value = Api::Chat
        .post(&base, &Api::Chat.body("agent", false, true, 0))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "chat.completion");
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    let msg = &choice["message"];
    assert_eq!(msg["role"], "assistant");
    assert!(msg["content"].is_null());
    let id = msg["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(
        msg["tool_calls"],
        json!([{"id": id, "type": "function",
            "function": {"name": "write_file", "arguments": write_args().to_string()}}])
    );

    let v: Value = Api::Messages
        .post(&base, &Api::Messages.body("agent", false, true, 0))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["stop_reason"], "tool_use");
    let id = v["content"][0]["id"].as_str().unwrap();
    assert!(id.starts_with("toolu_"));
    assert_eq!(
        v["content"],
        json!([{"type": "tool_use", "id": id, "name": "write_file", "input": write_args()}])
    );

    let v: Value = Api::Responses
        .post(&base, &Api::Responses.body("agent", false, true, 0))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["model"], "agent");
    assert!(v["id"].as_str().unwrap().starts_with("resp_"));
    let item = &v["output"][0];
    assert_eq!(v["output"].as_array().unwrap().len(), 1);
    assert_eq!(
        *item,
        json!({"type": "function_call", "id": item["id"], "call_id": item["call_id"],
            "name": "write_file", "arguments": write_args().to_string(), "status": "completed"})
    );
    assert!(item["id"].as_str().unwrap().starts_with("fc_"));
    assert!(item["call_id"].as_str().unwrap().starts_with("call_"));
    let u = &v["usage"];
    assert_eq!(u["input_tokens"], 12);
    assert!(u["output_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn messages_stream_has_a_tool_use_block_after_the_text_block() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "claude",
        ModelScript::turns(vec![Turn::ToolCalls {
            text: Some("On it.".into()),
            calls: vec![ToolCall::new("write_file", write_args())],
        }]),
    );
    let resp = Api::Messages
        .post(
            &server.base_url(),
            &Api::Messages.body("claude", true, true, 0),
        )
        .await;
    let events = parse_sse(&resp.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|e| e.name.as_deref().unwrap()).collect();
    let pieces = names.len() - 9;
    let mut expected = vec![
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
    ];
    expected.extend(std::iter::repeat_n("content_block_delta", pieces));
    expected.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names, expected);
    assert!(pieces > 1);
    let start = events[5].json();
    let id = start["content_block"]["id"].as_str().unwrap();
    assert!(id.starts_with("toolu_"));
    assert_eq!(
        start,
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": id, "name": "write_file", "input": {}}})
    );
    let mut args = String::new();
    for e in &events[6..6 + pieces] {
        let v = e.json();
        assert_eq!(v["index"], 1);
        assert_eq!(v["delta"]["type"], "input_json_delta");
        args.push_str(v["delta"]["partial_json"].as_str().unwrap());
    }
    assert_eq!(serde_json::from_str::<Value>(&args).unwrap(), write_args());
    let md = events[events.len() - 2].json();
    assert_eq!(md["delta"]["stop_reason"], "tool_use");
    assert_eq!(
        md["usage"]["output_tokens"].as_u64(),
        Some(2 + pieces as u64)
    );
}

#[tokio::test]
async fn responses_stream_events_come_in_order_with_increasing_sequence_numbers() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "codex",
        ModelScript::turns(vec![Turn::ToolCalls {
            text: Some("Two steps.".into()),
            calls: vec![
                ToolCall::new("write_file", write_args()),
                ToolCall::new("shell", json!({"command": ["ls"]})),
            ],
        }])
        .reasoning(vec!["plan ".into(), "it".into()])
        .prompt_tokens(30),
    );
    let resp = Api::Responses
        .post(
            &server.base_url(),
            &Api::Responses.body("codex", true, true, 0),
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = parse_sse(&resp.text().await.unwrap());
    common::check_responses_stream(&events);
    let v: Vec<Value> = events.iter().map(|e| e.json()).collect();
    let seqs: Vec<u64> = v
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..v.len() as u64).collect::<Vec<_>>());

    // Event names with runs of deltas collapsed.
    let mut names: Vec<&str> = Vec::new();
    let mut deltas = Vec::new();
    for e in &events {
        let n = e.name.as_deref().unwrap();
        if n.ends_with(".delta") && names.last() == Some(&n) {
            *deltas.last_mut().unwrap() += 1;
            continue;
        }
        if n.ends_with(".delta") {
            deltas.push(1);
        }
        names.push(n);
    }
    assert_eq!(
        names,
        vec![
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_text.delta",
            "response.reasoning_text.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(deltas[0], 2);
    assert_eq!(deltas[1], 2);
    assert!(deltas[2] > 1);

    let created = &v[0];
    assert_eq!(created["response"]["model"], "codex");
    assert_eq!(created["response"]["object"], "response");
    assert!(created["response"]["usage"].is_null());
    let msg_added = v
        .iter()
        .find(|e| e["type"] == "response.output_item.added" && e["item"]["type"] == "message")
        .unwrap();
    let msg_id = msg_added["item"]["id"].as_str().unwrap();
    assert!(msg_id.starts_with("msg_"));
    assert_eq!(
        msg_added["item"],
        json!({"type": "message", "id": msg_id, "role": "assistant", "status": "in_progress",
            "content": []})
    );
    let text_delta = v
        .iter()
        .find(|e| e["type"] == "response.output_text.delta")
        .unwrap();
    assert_eq!(text_delta["item_id"], msg_id);
    assert_eq!(text_delta["output_index"], 1);
    assert_eq!(text_delta["content_index"], 0);
    assert_eq!(text_delta["delta"], "Two ");
    let fc_added: Vec<&Value> = v
        .iter()
        .filter(|e| {
            e["type"] == "response.output_item.added" && e["item"]["type"] == "function_call"
        })
        .collect();
    let item = &fc_added[1]["item"];
    assert_eq!(fc_added[1]["output_index"], 3);
    assert_eq!(
        *item,
        json!({"type": "function_call", "id": item["id"], "call_id": item["call_id"],
            "name": "shell", "arguments": "", "status": "in_progress"})
    );
    let args_done: Vec<&Value> = v
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.done")
        .collect();
    assert_eq!(args_done[0]["arguments"], write_args().to_string());
    assert_eq!(args_done[1]["arguments"], r#"{"command":["ls"]}"#);
    assert_eq!(args_done[1]["item_id"], item["id"]);
    assert_eq!(args_done[1]["output_index"], 3);

    let done = &v.last().unwrap()["response"];
    let out = done["output"].as_array().unwrap();
    let types: Vec<&str> = out.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["reasoning", "message", "function_call", "function_call"]
    );
    assert_eq!(out[0]["content"][0]["text"], "plan it");
    assert_eq!(
        out[1]["content"],
        json!([{"type": "output_text", "text": "Two steps.", "annotations": []}])
    );
    let tokens = v
        .iter()
        .filter(|e| e["type"].as_str().unwrap().ends_with(".delta"))
        .count() as u64;
    assert_eq!(done["usage"]["input_tokens"], 30);
    assert_eq!(done["usage"]["output_tokens"].as_u64(), Some(tokens));
    assert_eq!(done["usage"]["total_tokens"].as_u64(), Some(30 + tokens));
    assert_eq!(
        done["usage"]["output_tokens_details"]["reasoning_tokens"],
        2
    );
}

#[tokio::test]
async fn responses_endpoint_serves_plain_scripts_and_is_recorded() {
    let server = TestServer::start().await.unwrap();
    server.set_model("m", ModelScript::text("hello there world"));
    let base = server.base_url();
    let body = json!({"model": "m", "input": "hi", "stream": true});
    let seen = turn(Api::Responses, &base, &body).await;
    assert_eq!(seen, text_seen(Api::Responses, "hello there world"));
    let body = json!({"model": "m", "input": "hi"});
    let seen = turn(Api::Responses, &base, &body).await;
    assert_eq!(seen, text_seen(Api::Responses, "hello there world"));

    let reqs = server.requests_for("m");
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.path, "/v1/responses");
        assert!(r.is_generation());
        assert_eq!(r.body["input"], "hi");
        assert!(r.stream_started_at.is_some() && r.stream_finished_at.is_some());
    }

    // Unknown model, wrong method: OpenAI-style errors.
    let resp = Api::Responses
        .post(&base, &json!({"model": "nope", "input": "hi"}))
        .await;
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("nope"));
    let resp = client()
        .get(format!("{base}/responses"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
}

#[tokio::test]
async fn faults_apply_to_turn_scripts_and_keep_the_turn() {
    let server = TestServer::start().await.unwrap();
    let base = server.base_url();
    for api in APIS {
        server.set_model(
            "agent",
            ModelScript::turns(vec![write_call(), Turn::text("fin")]).with_faults(vec![
                Fault::Status(503),
                Fault::RateLimit {
                    retry_after_secs: 1,
                },
                Fault::DisconnectAfter(2),
            ]),
        );
        let body = api.body("agent", true, true, 0);
        let resp = api.post(&base, &body).await;
        assert_eq!(resp.status(), 503, "{api:?}");
        let v: Value = resp.json().await.unwrap();
        assert!(v["error"]["message"].as_str().unwrap().contains("503"));
        let resp = api.post(&base, &body).await;
        assert_eq!(resp.status(), 429, "{api:?}");
        assert_eq!(resp.headers()["retry-after"], "1");
        // Cut inside the call's arguments: the body ends in an error.
        let resp = api.post(&base, &body).await;
        assert_eq!(resp.status(), 200);
        assert!(resp.text().await.is_err(), "{api:?}");
        // The retry gets the whole call, then the next turn.
        let seen = turn(api, &base, &body).await;
        assert_eq!(seen.calls[0].arguments, write_args().to_string(), "{api:?}");
        let seen = turn(api, &base, &api.body("agent", true, true, 1)).await;
        assert_eq!(seen, text_seen(api, "fin"), "{api:?}");
        let faults: Vec<Option<Fault>> = server
            .requests_for("agent")
            .iter()
            .rev()
            .take(5)
            .rev()
            .map(|r| r.fault.clone())
            .collect();
        assert_eq!(
            faults,
            vec![
                Some(Fault::Status(503)),
                Some(Fault::RateLimit {
                    retry_after_secs: 1
                }),
                Some(Fault::DisconnectAfter(2)),
                None,
                None
            ]
        );
    }
}

#[tokio::test]
async fn malformed_fault_on_the_responses_stream() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "agent",
        ModelScript::turns(vec![write_call()]).with_faults(vec![Fault::MalformedAfter(1)]),
    );
    let text = Api::Responses
        .post(
            &server.base_url(),
            &Api::Responses.body("agent", true, true, 0),
        )
        .await
        .text()
        .await
        .unwrap();
    let events = parse_sse(&text);
    let last = events.last().unwrap();
    assert_eq!(last.data, "{not json");
    let deltas = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("response.function_call_arguments.delta"))
        .count();
    assert_eq!(deltas, 1);
    assert!(!text.contains("response.completed"));
}

#[tokio::test]
async fn turns_are_paced_like_tokens() {
    let server = TestServer::start().await.unwrap();
    // 2 text tokens + 2 argument pieces at 50/s: 3 intervals of 20 ms.
    server.set_model(
        "slow",
        ModelScript::turns(vec![Turn::ToolCalls {
            text: Some("a b".into()),
            calls: vec![ToolCall::new("run", json!({}))],
        }])
        .rate(50.0),
    );
    let start = Instant::now();
    let seen = turn(
        Api::Responses,
        &server.base_url(),
        &Api::Responses.body("slow", true, true, 0),
    )
    .await;
    assert!(
        start.elapsed() >= Duration::from_millis(55),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(seen.calls[0].pieces, 2);
}
