//! OpenAI-compatible streaming chat completions (`POST /chat/completions`).
//! Reads `delta.content`, `delta.reasoning_content` (llama.cpp, DeepSeek) or
//! `delta.reasoning` (Ollama, OpenRouter), the final `usage` chunk, and
//! llama.cpp's `timings` when present.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::json;

use super::{
    send, sse, ChatRequest, Chunk, ChunkStream, Conversation, Message, Provider, ProviderError,
    Timings, Usage,
};

/// One streamed chunk, read in place: its text is borrowed from the event
/// (copied only when it has escapes).
#[derive(Deserialize)]
struct ChunkJson<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    usage: Option<UsageJson>,
    timings: Option<Timings>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    finish_reason: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning: Option<Cow<'a, str>>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: usize,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct UsageJson {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
    /// OpenRouter: what the call cost, in USD.
    #[serde(default)]
    cost: Option<f64>,
}

#[derive(Deserialize)]
struct PromptTokensDetails {
    cached_tokens: Option<u64>,
}

pub(super) fn request_body(req: &ChatRequest) -> serde_json::Value {
    let mut messages = Vec::new();
    if let Some(system) = &req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for e in &req.history {
        messages.push(json!({"role": "user", "content": e.user}));
        messages.push(json!({"role": "assistant", "content": e.assistant}));
    }
    messages.push(json!({"role": "user", "content": req.prompt}));
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let fields = [
        ("temperature", req.temperature.map(|v| json!(v))),
        ("top_p", req.top_p.map(|v| json!(v))),
        ("max_tokens", req.max_tokens.map(|v| json!(v))),
        ("cache_prompt", req.no_prompt_cache.then_some(json!(false))),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            body[key] = value;
        }
    }
    body
}

pub(super) async fn stream_chat(
    provider: &Provider,
    req: &ChatRequest,
) -> Result<ChunkStream, ProviderError> {
    stream_body(provider, &request_body(req)).await
}

/// A conversation with tools (for the native agent).
pub(super) fn conversation_body(req: &Conversation) -> serde_json::Value {
    let messages: Vec<serde_json::Value> = req
        .messages
        .iter()
        .map(|m| match m {
            Message::System(text) => json!({"role": "system", "content": text}),
            Message::User(text) => json!({"role": "user", "content": text}),
            Message::Assistant { content, tool_calls } => {
                let mut v = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    v["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                        .collect();
                }
                v
            }
            Message::Tool { call_id, content } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        })
        .collect();
    let tools: Vec<serde_json::Value> = req
        .tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
        .collect();
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "tools": tools,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = req.max_tokens {
        body["max_tokens"] = json!(m);
    }
    if req.no_prompt_cache {
        body["cache_prompt"] = json!(false);
    }
    body
}

pub(super) async fn stream_body(
    provider: &Provider,
    body: &serde_json::Value,
) -> Result<ChunkStream, ProviderError> {
    let url = provider.url("chat/completions");
    let request = provider
        .client
        .post(&url)
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .json(body);
    let response = send(provider.authorise(request).await, &url).await?;
    let unfinished = "the server closed the stream before the answer was complete";
    Ok(sse::chunks(response.bytes_stream(), unfinished, on_event))
}

/// What one event of the stream adds.
fn on_event(event: sse::Event<'_>, out: &mut sse::Out) -> Result<(), ProviderError> {
    let data = event.data.trim();
    if data.is_empty() {
        return Ok(());
    }
    if data == "[DONE]" {
        out.finished = true;
        out.stop = true;
        return Ok(());
    }
    let chunk: ChunkJson<'_> = serde_json::from_str(data)
        .map_err(|e| ProviderError::Malformed(format!("{e} in `{}`", preview(data))))?;
    if let Some(error) = chunk.error {
        return Err(ProviderError::Api(
            error
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string()),
        ));
    }
    for choice in chunk.choices {
        if let Some(delta) = choice.delta {
            if let Some(r) = delta.reasoning_content.or(delta.reasoning) {
                if !r.is_empty() {
                    out.chunks.push_back(Chunk::Reasoning(r.into_owned()));
                }
            }
            if let Some(c) = delta.content {
                if !c.is_empty() {
                    out.chunks.push_back(Chunk::Content(c.into_owned()));
                }
            }
            for call in delta.tool_calls.unwrap_or_default() {
                let (name, arguments) = match call.function {
                    Some(f) => (f.name, f.arguments.unwrap_or_default()),
                    None => (None, String::new()),
                };
                out.chunks.push_back(Chunk::ToolCall {
                    index: call.index,
                    id: call.id,
                    name,
                    arguments,
                });
            }
        }
        if choice.finish_reason.is_some() {
            out.finished = true;
        }
    }
    if let Some(u) = chunk.usage {
        out.chunks.push_back(Chunk::Usage(Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens),
            cost: u.cost,
        }));
    }
    if let Some(t) = chunk.timings {
        out.chunks.push_back(Chunk::Timings(t));
    }
    Ok(())
}

pub(super) fn preview(data: &str) -> String {
    let mut s: String = data.chars().take(120).collect();
    if s.len() < data.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_carries_sampling_and_cache_flag_only_when_set() {
        let req = ChatRequest {
            model: "m".into(),
            system: Some("sys".into()),
            prompt: "hi".into(),
            temperature: Some(0.2),
            no_prompt_cache: true,
            ..Default::default()
        };
        let b = request_body(&req);
        assert_eq!(b["messages"][0]["role"], "system");
        assert_eq!(b["messages"][1]["content"], "hi");
        // A conversation: earlier exchanges come before the new message.
        let turn = ChatRequest {
            history: vec![crate::Exchange {
                user: "2+2?".into(),
                assistant: "5".into(),
            }],
            prompt: "Not yet. Continue.".into(),
            ..req.clone()
        };
        let b = request_body(&turn);
        let roles: Vec<&str> = b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert_eq!(b["messages"][2]["content"], "5");
        assert_eq!(b["temperature"], 0.2);
        assert_eq!(b["cache_prompt"], false);
        assert!(b.get("top_p").is_none());
        assert_eq!(b["stream_options"]["include_usage"], true);
        let b = request_body(&ChatRequest::default());
        assert!(b.get("cache_prompt").is_none());
        assert_eq!(b["messages"].as_array().unwrap().len(), 1);
    }
}
