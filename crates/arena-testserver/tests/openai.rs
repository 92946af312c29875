//! The OpenAI-compatible endpoints: models listing, stream shape, timings,
//! non-streaming responses, request recording.

mod common;

use std::time::{Duration, Instant, SystemTime};

use arena_testserver::{ModelScript, TestServer};
use common::{chat_body, client, parse_sse, post_chat, Event};
use futures::StreamExt;
use serde_json::{json, Value};

#[tokio::test]
async fn models_are_listed_sorted_and_recorded() {
    let server = TestServer::start().await.unwrap();
    server.set_model("zeta", ModelScript::default());
    server.set_model("alpha", ModelScript::tokens(1));
    assert_eq!(server.base_url(), format!("http://{}/v1", server.addr()));

    let resp = client()
        .get(format!("{}/models", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!({"object": "list", "data": [
            {"id": "alpha", "object": "model", "created": 0, "owned_by": "arena-testserver"},
            {"id": "zeta", "object": "model", "created": 0, "owned_by": "arena-testserver"},
        ]})
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "GET");
    assert_eq!(r.path, "/v1/models");
    assert_eq!(r.body, Value::Null);
    assert_eq!(r.model, None);
    assert!(r.stream_started_at.is_some());
    assert!(r.stream_finished_at.is_some());
    assert!(server.requests_for("alpha").is_empty());
}

/// The chunks of a finished llama.cpp-style stream, checked for the common fields.
fn chunks(events: &[Event], model: &str) -> Vec<Value> {
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| {
            assert!(e.name.is_none());
            e.json()
        })
        .collect();
    let id = chunks[0]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("chatcmpl-"), "{id}");
    for c in &chunks {
        assert_eq!(c["id"], id.as_str());
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], model);
        assert!(c["created"].as_u64().unwrap() > 0);
    }
    chunks
}

#[tokio::test]
async fn stream_has_llama_cpp_shape_with_usage_and_timings() {
    let server = TestServer::start().await.unwrap();
    server.set_model("m", ModelScript::tokens(5));

    let resp = post_chat(&server.base_url(), &chat_body("m", true, true)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let text = resp.text().await.unwrap();
    let chunks = chunks(&parse_sse(&text), "m");
    assert_eq!(chunks.len(), 1 + 5 + 1 + 1);

    assert_eq!(
        chunks[0]["choices"],
        json!([{"index": 0, "delta": {"role": "assistant", "content": null}, "finish_reason": null}])
    );
    for (i, c) in chunks[1..6].iter().enumerate() {
        assert_eq!(
            c["choices"],
            json!([{"index": 0, "delta": {"content": format!("tok{i} ")}, "finish_reason": null}])
        );
    }
    assert_eq!(
        chunks[6]["choices"],
        json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])
    );
    assert!(chunks[6].get("timings").is_none());
    let last = &chunks[7];
    assert_eq!(last["choices"], json!([]));
    assert_eq!(
        last["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17})
    );
    let t = &last["timings"];
    assert_eq!(t["prompt_n"], 12);
    assert_eq!(t["predicted_n"], 5);
    assert_eq!(t["cache_n"], 0);
    for k in [
        "prompt_ms",
        "prompt_per_second",
        "predicted_ms",
        "predicted_per_second",
    ] {
        assert!(t[k].as_f64().unwrap() >= 0.0, "{k}: {t}");
    }
}

#[tokio::test]
async fn timings_go_on_finish_chunk_without_usage_chunk() {
    let server = TestServer::start().await.unwrap();
    server.set_model("m", ModelScript::tokens(2));
    server.set_model("nousage", ModelScript::tokens(2).without_usage());
    server.set_model(
        "plain",
        ModelScript::tokens(2).without_usage().without_timings(),
    );

    // Request did not ask for usage.
    let text = post_chat(&server.base_url(), &chat_body("m", true, false))
        .await
        .text()
        .await
        .unwrap();
    let c = chunks(&parse_sse(&text), "m");
    assert_eq!(c.len(), 4);
    assert_eq!(c[3]["choices"][0]["finish_reason"], "stop");
    assert_eq!(c[3]["timings"]["predicted_n"], 2);
    assert!(c[3].get("usage").is_none());

    // Request asked, but the script has no usage.
    let text = post_chat(&server.base_url(), &chat_body("nousage", true, true))
        .await
        .text()
        .await
        .unwrap();
    let c = chunks(&parse_sse(&text), "nousage");
    assert_eq!(c.len(), 4);
    assert_eq!(c[3]["timings"]["predicted_n"], 2);

    let text = post_chat(&server.base_url(), &chat_body("plain", true, true))
        .await
        .text()
        .await
        .unwrap();
    let c = chunks(&parse_sse(&text), "plain");
    assert_eq!(c.len(), 4);
    assert!(c[3].get("timings").is_none());
}

#[tokio::test]
async fn reasoning_comes_before_content_and_text_keeps_spaces() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "r",
        ModelScript::text("Hello \"quoted\"\nworld")
            .reasoning(vec!["think ".into(), "hard".into()]),
    );
    let text = post_chat(&server.base_url(), &chat_body("r", true, true))
        .await
        .text()
        .await
        .unwrap();
    let c = chunks(&parse_sse(&text), "r");
    let deltas: Vec<Value> = c[1..c.len() - 2]
        .iter()
        .map(|c| c["choices"][0]["delta"].clone())
        .collect();
    assert_eq!(
        deltas,
        vec![
            json!({"reasoning_content": "think "}),
            json!({"reasoning_content": "hard"}),
            json!({"content": "Hello "}),
            json!({"content": "\"quoted\"\n"}),
            json!({"content": "world"}),
        ]
    );
    assert_eq!(c.last().unwrap()["usage"]["completion_tokens"], 5);
}

#[tokio::test]
async fn paced_stream_reports_real_rate() {
    let server = TestServer::start().await.unwrap();
    server.set_model("paced", ModelScript::tokens(40).rate(200.0));
    let start = Instant::now();
    let text = post_chat(&server.base_url(), &chat_body("paced", true, true))
        .await
        .text()
        .await
        .unwrap();
    let elapsed = start.elapsed();
    // 39 intervals of 5 ms between the first and the last token.
    assert!(elapsed >= Duration::from_millis(190), "{elapsed:?}");
    let c = chunks(&parse_sse(&text), "paced");
    let t = &c.last().unwrap()["timings"];
    let ms = t["predicted_ms"].as_f64().unwrap();
    let tps = t["predicted_per_second"].as_f64().unwrap();
    assert!((190.0..400.0).contains(&ms), "predicted_ms {ms}");
    assert!((150.0..=230.0).contains(&tps), "predicted_per_second {tps}");
    assert!((tps - 40.0 / ms * 1000.0).abs() < 1e-6);
}

#[tokio::test]
async fn tokens_arrive_spread_out_when_paced() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "slow",
        ModelScript::tokens(4)
            .rate(20.0)
            .first_token_delay(Duration::from_millis(100)),
    );
    let resp = post_chat(&server.base_url(), &chat_body("slow", true, false)).await;
    let mut stream = resp.bytes_stream();
    let mut arrivals = Vec::new();
    let mut seen = String::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        let now = Instant::now();
        let s = String::from_utf8(chunk.to_vec()).unwrap();
        for n in 0..4 {
            let tok = format!("\"tok{n} \"");
            if s.contains(&tok) && !seen.contains(&tok) {
                arrivals.push(now);
            }
        }
        seen.push_str(&s);
    }
    assert_eq!(arrivals.len(), 4, "{seen}");
    // The server's own clock: the role chunk was produced at stream start, the
    // first token 100 ms later and the last one 3 intervals of 50 ms after that.
    let started = server.requests_for("slow")[0].stream_started_at.unwrap();
    let since_start: Vec<Duration> = arrivals.iter().map(|a| *a - started).collect();
    assert!(
        since_start[0] >= Duration::from_millis(100),
        "{since_start:?}"
    );
    assert!(
        since_start[3] >= Duration::from_millis(250),
        "{since_start:?}"
    );
    // Tokens are sent one by one, not in a single burst at the end.
    assert!(
        arrivals[3] - arrivals[0] >= Duration::from_millis(75),
        "{since_start:?}"
    );
}

#[tokio::test]
async fn token_flushes_are_recorded_with_wall_clock_times() {
    let server = TestServer::start().await.unwrap();
    server.set_model("paced", ModelScript::tokens(5).rate(50.0));
    server.set_model("burst", ModelScript::tokens(300));
    let before = SystemTime::now();
    for m in ["paced", "burst"] {
        post_chat(&server.base_url(), &chat_body(m, true, false))
            .await
            .text()
            .await
            .unwrap();
    }
    let after = SystemTime::now();

    // Paced: one frame per token, in order, 20 ms apart.
    let paced = common::eventually(2, || {
        let r = server.requests_for("paced").into_iter().next()?;
        r.stream_finished_at.map(|_| r)
    })
    .await;
    let counts: Vec<usize> = paced.flushes.iter().map(|f| f.tokens).collect();
    assert_eq!(counts, vec![1, 2, 3, 4, 5]);
    let times: Vec<SystemTime> = (0..5).map(|i| paced.token_sent_at(i).unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(before <= times[0] && times[4] <= after);
    assert!(times[4].duration_since(times[0]).unwrap() >= Duration::from_millis(60));
    assert_eq!(paced.token_sent_at(5), None);

    // Unpaced: batched frames, every token accounted for.
    let burst = server.requests_for("burst").remove(0);
    assert!(burst.flushes.len() < 300, "{} frames", burst.flushes.len());
    assert_eq!(burst.flushes.last().map(|f| f.tokens), Some(300));
    assert!(burst.token_sent_at(299).is_some());
    assert_eq!(burst.token_sent_at(300), None);
}

#[tokio::test]
async fn non_streaming_completion() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(3).reasoning(vec!["why ".into(), "not".into()]),
    );
    // "stream" absent means non-streaming.
    let body = json!({"model": "m", "messages": []});
    let resp = post_chat(&server.base_url(), &body).await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "m");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["message"]["content"], "tok0 tok1 tok2 ");
    assert_eq!(v["choices"][0]["message"]["reasoning_content"], "why not");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17})
    );
    assert_eq!(v["timings"]["predicted_n"], 5);
}

#[tokio::test]
async fn unknown_model_is_404() {
    let server = TestServer::start().await.unwrap();
    let resp = post_chat(&server.base_url(), &chat_body("x", true, false)).await;
    assert_eq!(resp.status(), 404);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v,
        json!({"error": {"message": "model 'x' not found", "type": "invalid_request_error"}})
    );
    let r = &server.requests_for("x")[0];
    assert!(r.stream_started_at.is_none());
}

#[tokio::test]
async fn requests_are_recorded_with_stream_times() {
    let server = TestServer::start().await.unwrap();
    server.set_model(
        "m",
        ModelScript::tokens(3).first_token_delay(Duration::from_millis(100)),
    );
    server.set_model("other", ModelScript::tokens(1));
    let body = chat_body("m", true, true);
    let text = client()
        .post(format!("{}/chat/completions?x=1", server.base_url()))
        .header("X-Test-Header", "Yes")
        .bearer_auth("sk-test")
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"));
    post_chat(&server.base_url(), &chat_body("other", false, false))
        .await
        .text()
        .await
        .unwrap();

    let all = server.requests();
    assert_eq!(all.len(), 2);
    let mine = server.requests_for("m");
    assert_eq!(mine.len(), 1);
    let r = &mine[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.model.as_deref(), Some("m"));
    assert_eq!(r.body, body);
    assert_eq!(r.header("x-test-header"), Some("Yes"));
    assert!(r
        .headers
        .iter()
        .any(|(k, v)| k == "authorization" && v == "Bearer sk-test"));
    assert!(r.headers.iter().all(|(k, _)| *k == k.to_lowercase()));
    assert_eq!(r.fault, None);
    let started = r.stream_started_at.unwrap();
    let finished = common::eventually(2, || server.requests_for("m")[0].stream_finished_at).await;
    assert!(r.received_at <= started);
    assert!(finished.duration_since(started) >= Duration::from_millis(100));
    assert_eq!(server.requests_for("other").len(), 1);

    server.clear_requests();
    assert!(server.requests().is_empty());
}

/// Stream windows of two requests, to check overlap the way the engine tests do.
async fn window(server: &TestServer, model: &str) -> (Instant, Instant) {
    common::eventually(2, || {
        let r = server.requests_for(model).into_iter().next()?;
        Some((r.stream_started_at?, r.stream_finished_at?))
    })
    .await
}

#[tokio::test]
async fn concurrent_streams_overlap_and_sequential_ones_do_not() {
    let server = TestServer::start().await.unwrap();
    for m in ["a", "b", "c", "d"] {
        server.set_model(m, ModelScript::tokens(10).rate(100.0));
    }
    let base = server.base_url();
    let run = |m: &'static str| {
        let base = base.clone();
        async move {
            post_chat(&base, &chat_body(m, true, true))
                .await
                .text()
                .await
                .unwrap()
        }
    };
    tokio::join!(run("a"), run("b"));
    run("c").await;
    run("d").await;
    let (a0, a1) = window(&server, "a").await;
    let (b0, b1) = window(&server, "b").await;
    let (c0, c1) = window(&server, "c").await;
    let (d0, d1) = window(&server, "d").await;
    assert!(a0 < b1 && b0 < a1, "a and b should overlap");
    assert!(c1 <= d0, "c must finish before d starts");
    assert!(c0 < c1 && d0 < d1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpaced_streams_are_batched_and_fast() {
    let server = TestServer::start().await.unwrap();
    const N: usize = 20_000;
    server.set_model("fast", ModelScript::tokens(N));
    let base = server.base_url();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let base = base.clone();
        tasks.push(tokio::spawn(async move {
            let resp = post_chat(&base, &chat_body("fast", true, true)).await;
            let mut stream = resp.bytes_stream();
            let mut frames = 0usize;
            let mut body = Vec::new();
            while let Some(chunk) = stream.next().await {
                frames += 1;
                body.extend_from_slice(&chunk.unwrap());
            }
            (frames, String::from_utf8(body).unwrap())
        }));
    }
    for t in tasks {
        let (frames, text) = t.await.unwrap();
        let events = parse_sse(&text);
        assert_eq!(events.len(), 1 + N + 2 + 1);
        assert!(frames < N / 4, "{frames} frames for {N} tokens");
        let c = events[N].json();
        assert_eq!(
            c["choices"][0]["delta"]["content"],
            format!("tok{} ", N - 1)
        );
        let usage = events[N + 2].json();
        assert_eq!(usage["usage"]["completion_tokens"], N);
        assert!(usage["timings"]["predicted_per_second"].as_f64().unwrap() > 0.0);
    }
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let server = TestServer::start().await.unwrap();
    server.set_model("m", ModelScript::tokens(1));
    let base = server.base_url();
    post_chat(&base, &chat_body("m", true, false))
        .await
        .text()
        .await
        .unwrap();
    server.shutdown();
    server.stopped().await;
    let mut refused = false;
    for _ in 0..100 {
        if client().get(format!("{base}/models")).send().await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "server still answering after shutdown");
}

#[tokio::test]
async fn dropping_the_last_handle_stops_the_server() {
    let server = TestServer::start().await.unwrap();
    let clone = server.clone();
    let base = server.base_url();
    drop(server);
    assert!(client().get(format!("{base}/models")).send().await.is_ok());
    drop(clone);
    let mut refused = false;
    for _ in 0..100 {
        if client().get(format!("{base}/models")).send().await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "server still answering after drop");
}
