//! The Anthropic Messages API, streaming (`POST /messages`).

use serde_json::json;

use super::openai::preview;
use super::{send, sse, ChatRequest, Chunk, ChunkStream, Provider, ProviderError, Usage};

/// The Messages API requires `max_tokens`; used when the persona sets none.
const DEFAULT_MAX_TOKENS: u64 = 8192;

pub(super) fn request_body(req: &ChatRequest) -> serde_json::Value {
    let mut messages = Vec::new();
    for e in &req.history {
        messages.push(json!({"role": "user", "content": e.user}));
        messages.push(json!({"role": "assistant", "content": e.assistant}));
    }
    messages.push(json!({"role": "user", "content": req.prompt}));
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    if let Some(system) = &req.system {
        body["system"] = json!(system);
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t.min(1.0));
    }
    if let Some(p) = req.top_p {
        body["top_p"] = json!(p);
    }
    body
}

pub(super) async fn stream_chat(
    provider: &Provider,
    req: &ChatRequest,
) -> Result<ChunkStream, ProviderError> {
    let url = provider.url("messages");
    let request = provider.client.post(&url).json(&request_body(req));
    let response = send(provider.authorise(request).await, &url).await?;
    let mut usage = Usage::default();
    let on_event = move |event: sse::Event<'_>, out: &mut sse::Out| {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let value: serde_json::Value = serde_json::from_str(event.data)
            .map_err(|e| ProviderError::Malformed(format!("{e} in `{}`", preview(event.data))))?;
        let kind = value
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or(event.event);
        match kind {
            "message_start" => {
                usage.prompt_tokens = value
                    .pointer("/message/usage/input_tokens")
                    .and_then(|v| v.as_u64());
            }
            "content_block_delta" => {
                let delta = &value["delta"];
                let (chunk, field): (fn(String) -> Chunk, _) =
                    match delta.get("type").and_then(|t| t.as_str()) {
                        Some("text_delta") => (Chunk::Content, "text"),
                        Some("thinking_delta") => (Chunk::Reasoning, "thinking"),
                        _ => return Ok(()),
                    };
                if let Some(t) = delta[field].as_str().filter(|t| !t.is_empty()) {
                    out.chunks.push_back(chunk(t.to_string()));
                }
            }
            "message_delta" => {
                if let Some(n) = value
                    .pointer("/usage/output_tokens")
                    .and_then(|v| v.as_u64())
                {
                    usage.completion_tokens = Some(n);
                }
            }
            "message_stop" => {
                out.finished = true;
                out.stop = true;
                out.chunks.push_back(Chunk::Usage(usage));
            }
            "error" => {
                let message = value
                    .pointer("/error/message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("unknown error")
                    .to_string();
                let overloaded = value.pointer("/error/type").and_then(|t| t.as_str())
                    == Some("overloaded_error");
                if overloaded {
                    return Err(ProviderError::Dropped(format!("overloaded: {message}")));
                }
                return Err(ProviderError::Api(message));
            }
            _ => {}
        }
        Ok(())
    };
    let unfinished = "the server closed the stream before message_stop";
    Ok(sse::chunks(response.bytes_stream(), unfinished, on_event))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_required_max_tokens_and_top_level_system() {
        let b = request_body(&ChatRequest {
            model: "claude".into(),
            system: Some("be brief".into()),
            prompt: "hi".into(),
            temperature: Some(1.5),
            ..Default::default()
        });
        assert_eq!(b["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(b["system"], "be brief");
        assert_eq!(b["temperature"], 1.0);
        assert_eq!(b["messages"][0]["role"], "user");
    }
}
