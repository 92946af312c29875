//! The Anthropic Messages API, streaming (`POST /messages`).

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::json;

use super::openai::preview;
use super::{send, ChatRequest, Chunk, ChunkStream, Provider, ProviderError, Usage};

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
    let mut events = response.bytes_stream().eventsource();

    let stream = async_stream::try_stream! {
        let mut usage = Usage::default();
        let mut finished = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| ProviderError::Dropped(e.to_string()))?;
            if event.data.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(&event.data).map_err(|e| {
                ProviderError::Malformed(format!("{e} in `{}`", preview(&event.data)))
            })?;
            let kind = value.get("type").and_then(|t| t.as_str()).unwrap_or(event.event.as_str());
            match kind {
                "message_start" => {
                    usage.prompt_tokens = value.pointer("/message/usage/input_tokens").and_then(|v| v.as_u64());
                }
                "content_block_delta" => {
                    let delta = &value["delta"];
                    match delta.get("type").and_then(|t| t.as_str()) {
                        Some("text_delta") => {
                            if let Some(t) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                                yield Chunk::Content(t.to_string());
                            }
                        }
                        Some("thinking_delta") => {
                            if let Some(t) = delta["thinking"].as_str().filter(|t| !t.is_empty()) {
                                yield Chunk::Reasoning(t.to_string());
                            }
                        }
                        _ => {}
                    }
                }
                "message_delta" => {
                    if let Some(n) = value.pointer("/usage/output_tokens").and_then(|v| v.as_u64()) {
                        usage.completion_tokens = Some(n);
                    }
                }
                "message_stop" => {
                    finished = true;
                    break;
                }
                "error" => {
                    let message = value.pointer("/error/message").and_then(|m| m.as_str())
                        .unwrap_or("unknown error").to_string();
                    let overloaded = value.pointer("/error/type").and_then(|t| t.as_str()) == Some("overloaded_error");
                    if overloaded {
                        Err(ProviderError::Dropped(format!("overloaded: {message}")))?;
                    }
                    Err(ProviderError::Api(message))?;
                }
                _ => {}
            }
        }
        if !finished {
            Err(ProviderError::Dropped("the server closed the stream before message_stop".into()))?;
        }
        yield Chunk::Usage(usage);
    };
    Ok(Box::pin(stream))
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
