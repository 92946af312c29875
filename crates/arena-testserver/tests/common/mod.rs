//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::{json, Value};

/// One SSE event: its `event:` name (if any) and its `data:` payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }
}

/// Parses a whole SSE body (events separated by blank lines).
pub fn parse_sse(text: &str) -> Vec<Event> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push(v);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            Event {
                name,
                data: data.join("\n"),
            }
        })
        .collect()
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

pub fn chat_body(model: &str, stream: bool, include_usage: bool) -> Value {
    let mut body = json!({
        "model": model,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
    });
    if include_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

pub async fn post_chat(base: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{base}/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Polls `f` until it returns Some, for at most `secs` seconds.
pub async fn eventually<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {secs}s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Which API a tool-calling request is sent to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Chat,
    Messages,
    Responses,
}

pub const APIS: [Api; 3] = [Api::Chat, Api::Messages, Api::Responses];

impl Api {
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "chat/completions",
            Api::Messages => "messages",
            Api::Responses => "responses",
        }
    }

    /// A request body offering one `write_file` tool (when `tools`), after
    /// `results` earlier tool round trips.
    pub fn body(self, model: &str, stream: bool, tools: bool, results: usize) -> Value {
        let mut body = match self {
            Api::Chat => {
                let mut messages = vec![json!({"role": "user", "content": "write a file"})];
                for i in 0..results {
                    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": format!("c{i}"), "type": "function",
                         "function": {"name": "write_file", "arguments": "{}"}}]}));
                    messages.push(
                        json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "ok"}),
                    );
                }
                json!({"model": model, "messages": messages, "stream": stream,
                       "stream_options": {"include_usage": true}})
            }
            Api::Messages => {
                let mut messages = vec![json!({"role": "user", "content": "write a file"})];
                for i in 0..results {
                    messages.push(json!({"role": "assistant", "content": [
                        {"type": "tool_use", "id": format!("t{i}"), "name": "write_file", "input": {}}]}));
                    messages.push(json!({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok"}]}));
                }
                json!({"model": model, "max_tokens": 1000, "messages": messages, "stream": stream})
            }
            Api::Responses => {
                let mut input = vec![json!({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "write a file"}]})];
                for i in 0..results {
                    input.push(json!({"type": "function_call", "call_id": format!("c{i}"),
                        "name": "write_file", "arguments": "{}"}));
                    input.push(
                        json!({"type": "function_call_output", "call_id": format!("c{i}"),
                        "output": "ok"}),
                    );
                }
                json!({"model": model, "instructions": "be brief", "input": input, "stream": stream})
            }
        };
        if tools {
            let schema = json!({"type": "object", "properties": {
                "path": {"type": "string"}, "content": {"type": "string"}}});
            body["tools"] = match self {
                Api::Chat => json!([{"type": "function", "function": {
                    "name": "write_file", "description": "Write a file", "parameters": schema}}]),
                Api::Messages => json!([{"name": "write_file", "description": "Write a file",
                    "input_schema": schema}]),
                Api::Responses => json!([{"type": "function", "name": "write_file",
                    "description": "Write a file", "parameters": schema, "strict": false}]),
            };
        }
        body
    }

    pub async fn post(self, base: &str, body: &Value) -> reqwest::Response {
        let mut req = client().post(format!("{base}/{}", self.path())).json(body);
        if self == Api::Messages {
            req = req
                .header("x-api-key", "test-key")
                .header("anthropic-version", "2023-06-01");
        }
        req.send().await.unwrap()
    }
}

/// A call as a client reassembles it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: String,
    pub name: String,
    /// The arguments text, concatenated from its pieces.
    pub arguments: String,
    /// How many argument pieces were streamed (1 for a non-streaming response).
    pub pieces: usize,
}

/// A model turn as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub text: String,
    pub calls: Vec<Call>,
    /// `finish_reason` / `stop_reason` / whether the Responses output ends in calls.
    pub stop: String,
}

/// Sends `body` to `api` and decodes the answer (streamed or not) the way
/// a client would, checking the wire shapes on the way.
pub async fn turn(api: Api, base: &str, body: &Value) -> Seen {
    let resp = api.post(base, body).await;
    assert_eq!(resp.status(), 200);
    let stream = body["stream"].as_bool().unwrap_or(false);
    let text = resp.text().await.unwrap();
    match (api, stream) {
        (Api::Chat, true) => decode_chat_stream(&text),
        (Api::Chat, false) => {
            let v: Value = serde_json::from_str(&text).unwrap();
            let choice = &v["choices"][0];
            let calls = choice["message"]["tool_calls"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| {
                            assert_eq!(c["type"], "function");
                            Call {
                                id: c["id"].as_str().unwrap().to_string(),
                                name: c["function"]["name"].as_str().unwrap().to_string(),
                                arguments: c["function"]["arguments"].as_str().unwrap().to_string(),
                                pieces: 1,
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            Seen {
                text: choice["message"]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                calls,
                stop: choice["finish_reason"].as_str().unwrap().to_string(),
            }
        }
        (Api::Messages, true) => decode_messages_stream(&text),
        (Api::Messages, false) => {
            let v: Value = serde_json::from_str(&text).unwrap();
            let mut seen = Seen {
                text: String::new(),
                calls: Vec::new(),
                stop: v["stop_reason"].as_str().unwrap().to_string(),
            };
            for b in v["content"].as_array().unwrap() {
                match b["type"].as_str().unwrap() {
                    "text" => seen.text.push_str(b["text"].as_str().unwrap()),
                    "tool_use" => {
                        assert!(b["input"].is_object());
                        seen.calls.push(Call {
                            id: b["id"].as_str().unwrap().to_string(),
                            name: b["name"].as_str().unwrap().to_string(),
                            arguments: b["input"].to_string(),
                            pieces: 1,
                        });
                    }
                    other => panic!("unexpected block {other}"),
                }
            }
            seen
        }
        (Api::Responses, true) => {
            let events = parse_sse(&text);
            check_responses_stream(&events);
            let done = events.last().unwrap().json();
            let mut seen = seen_of_response(&done["response"]);
            for (call, item) in seen.calls.iter_mut().zip(
                done["response"]["output"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|i| i["type"] == "function_call"),
            ) {
                call.pieces = events
                    .iter()
                    .map(Event::json)
                    .filter(|v| {
                        v["type"] == "response.function_call_arguments.delta"
                            && v["item_id"] == item["id"]
                    })
                    .count();
            }
            seen
        }
        (Api::Responses, false) => {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["object"], "response");
            assert_eq!(v["status"], "completed");
            seen_of_response(&v)
        }
    }
}

fn decode_chat_stream(text: &str) -> Seen {
    let events = parse_sse(text);
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let mut seen = Seen {
        text: String::new(),
        calls: Vec::new(),
        stop: String::new(),
    };
    for e in &events[..events.len() - 1] {
        let c = e.json();
        assert_eq!(c["object"], "chat.completion.chunk");
        let Some(choice) = c["choices"].get(0) else {
            continue; // the usage chunk
        };
        if let Some(f) = choice["finish_reason"].as_str() {
            assert!(seen.stop.is_empty(), "two finish reasons");
            seen.stop = f.to_string();
        }
        let delta = &choice["delta"];
        if let Some(t) = delta["content"].as_str() {
            assert!(seen.calls.is_empty(), "text after a tool call");
            seen.text.push_str(t);
        }
        for tc in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = tc["index"].as_u64().unwrap() as usize;
            if let Some(id) = tc["id"].as_str() {
                assert_eq!(i, seen.calls.len(), "calls open in index order");
                assert_eq!(tc["type"], "function");
                assert_eq!(tc["function"]["arguments"], "");
                seen.calls.push(Call {
                    id: id.to_string(),
                    name: tc["function"]["name"].as_str().unwrap().to_string(),
                    arguments: String::new(),
                    pieces: 0,
                });
            } else {
                assert_eq!(i + 1, seen.calls.len(), "pieces of the last opened call");
                assert!(tc.get("id").is_none() && tc["function"].get("name").is_none());
                let call = &mut seen.calls[i];
                call.arguments
                    .push_str(tc["function"]["arguments"].as_str().unwrap());
                call.pieces += 1;
            }
        }
    }
    seen
}

fn decode_messages_stream(text: &str) -> Seen {
    let events = parse_sse(text);
    let mut seen = Seen {
        text: String::new(),
        calls: Vec::new(),
        stop: String::new(),
    };
    let mut open: Option<(u64, String)> = None;
    for e in &events {
        let v = e.json();
        assert_eq!(v["type"].as_str(), e.name.as_deref());
        match e.name.as_deref().unwrap() {
            "content_block_start" => {
                assert!(open.is_none());
                let b = &v["content_block"];
                let kind = b["type"].as_str().unwrap().to_string();
                if kind == "tool_use" {
                    assert_eq!(b["input"], json!({}));
                    seen.calls.push(Call {
                        id: b["id"].as_str().unwrap().to_string(),
                        name: b["name"].as_str().unwrap().to_string(),
                        arguments: String::new(),
                        pieces: 0,
                    });
                } else {
                    assert!(seen.calls.is_empty(), "text after a tool call");
                }
                open = Some((v["index"].as_u64().unwrap(), kind));
            }
            "content_block_delta" => {
                let (index, kind) = open.as_ref().unwrap();
                assert_eq!(v["index"].as_u64(), Some(*index));
                let d = &v["delta"];
                match kind.as_str() {
                    "text" => {
                        assert_eq!(d["type"], "text_delta");
                        seen.text.push_str(d["text"].as_str().unwrap());
                    }
                    "tool_use" => {
                        assert_eq!(d["type"], "input_json_delta");
                        let call = seen.calls.last_mut().unwrap();
                        call.arguments.push_str(d["partial_json"].as_str().unwrap());
                        call.pieces += 1;
                    }
                    other => panic!("unexpected block {other}"),
                }
            }
            "content_block_stop" => {
                assert_eq!(v["index"].as_u64(), open.take().map(|o| o.0));
            }
            "message_delta" => seen.stop = v["delta"]["stop_reason"].as_str().unwrap().to_string(),
            "message_start" | "message_stop" => {}
            other => panic!("unexpected event {other}"),
        }
    }
    assert_eq!(events.last().unwrap().name.as_deref(), Some("message_stop"));
    seen
}

/// Checks a finished Responses stream: names, types, sequence numbers,
/// and that every item's events agree with the final response.
pub fn check_responses_stream(events: &[Event]) {
    let jsons: Vec<Value> = events.iter().map(Event::json).collect();
    for (e, v) in events.iter().zip(&jsons) {
        assert_eq!(v["type"].as_str(), e.name.as_deref(), "{v}");
    }
    let seqs: Vec<u64> = jsons
        .iter()
        .map(|v| v["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(seqs[0], 0);
    let names: Vec<&str> = events.iter().map(|e| e.name.as_deref().unwrap()).collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(*names.last().unwrap(), "response.completed");
    let created = &jsons[0]["response"];
    assert!(created["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["output"], json!([]));
    let done = &jsons.last().unwrap()["response"];
    assert_eq!(done["id"], created["id"]);
    assert_eq!(done["model"], created["model"]);
    assert_eq!(done["status"], "completed");
    let u = &done["usage"];
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap()
    );

    // Rebuild the output from the item events, like the OpenAI SDK does.
    let mut output: Vec<Value> = Vec::new();
    let mut open: Option<usize> = None;
    for (name, v) in names[2..names.len() - 1].iter().zip(&jsons[2..]) {
        match *name {
            "response.output_item.added" => {
                assert!(open.is_none(), "item added while another is open");
                let i = v["output_index"].as_u64().unwrap() as usize;
                assert_eq!(i, output.len());
                output.push(v["item"].clone());
                open = Some(i);
            }
            "response.output_item.done" => {
                let i = v["output_index"].as_u64().unwrap() as usize;
                assert_eq!(open.take(), Some(i));
                let item = &v["item"];
                assert_eq!(item["id"], output[i]["id"]);
                if item["type"] != "reasoning" {
                    assert_eq!(item["status"], "completed");
                }
                let built = &output[i];
                match item["type"].as_str().unwrap() {
                    "message" => assert_eq!(
                        item["content"][0]["text"], built["content"][0]["text"],
                        "message text"
                    ),
                    "function_call" => assert_eq!(item["arguments"], built["arguments"]),
                    _ => {}
                }
                output[i] = item.clone();
            }
            "response.content_part.added" => {
                let i = open.unwrap();
                assert_eq!(v["output_index"].as_u64(), Some(i as u64));
                assert_eq!(v["item_id"], output[i]["id"]);
                assert_eq!(v["content_index"], 0);
                assert_eq!(v["part"]["type"], "output_text");
                output[i]["content"]
                    .as_array_mut()
                    .unwrap()
                    .push(v["part"].clone());
            }
            "response.output_text.delta"
            | "response.function_call_arguments.delta"
            | "response.reasoning_text.delta" => {
                let i = open.unwrap();
                assert_eq!(v["output_index"].as_u64(), Some(i as u64));
                assert_eq!(v["item_id"], output[i]["id"]);
                let delta = v["delta"].as_str().unwrap();
                let target = match *name {
                    "response.output_text.delta" => &mut output[i]["content"][0]["text"],
                    "response.function_call_arguments.delta" => &mut output[i]["arguments"],
                    _ => continue,
                };
                *target = Value::from(format!("{}{delta}", target.as_str().unwrap()));
            }
            "response.output_text.done" | "response.content_part.done" => {
                let i = open.unwrap();
                assert_eq!(v["item_id"], output[i]["id"]);
                let text = if *name == "response.output_text.done" {
                    &v["text"]
                } else {
                    &v["part"]["text"]
                };
                assert_eq!(*text, output[i]["content"][0]["text"]);
            }
            "response.function_call_arguments.done" => {
                let i = open.unwrap();
                assert_eq!(v["item_id"], output[i]["id"]);
                assert_eq!(v["arguments"], output[i]["arguments"]);
            }
            "response.reasoning_text.done" => {}
            other => panic!("unexpected event {other}"),
        }
    }
    assert!(open.is_none());
    assert_eq!(done["output"], Value::from(output));
}

fn seen_of_response(r: &Value) -> Seen {
    let mut seen = Seen {
        text: String::new(),
        calls: Vec::new(),
        stop: String::new(),
    };
    for item in r["output"].as_array().unwrap() {
        match item["type"].as_str().unwrap() {
            "message" => {
                assert!(seen.calls.is_empty(), "text after a tool call");
                assert_eq!(item["role"], "assistant");
                for part in item["content"].as_array().unwrap() {
                    assert_eq!(part["type"], "output_text");
                    seen.text.push_str(part["text"].as_str().unwrap());
                }
            }
            "function_call" => {
                assert!(item["id"].as_str().unwrap().starts_with("fc_"));
                seen.calls.push(Call {
                    id: item["call_id"].as_str().unwrap().to_string(),
                    name: item["name"].as_str().unwrap().to_string(),
                    arguments: item["arguments"].as_str().unwrap().to_string(),
                    pieces: 1,
                })
            }
            "reasoning" => {}
            other => panic!("unexpected item {other}"),
        }
    }
    seen.stop = if seen.calls.is_empty() {
        "stop".into()
    } else {
        "tool_calls".into()
    };
    seen
}
