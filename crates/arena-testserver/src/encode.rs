//! Wire encoders for the OpenAI chat (llama.cpp-shaped), Anthropic Messages
//! and OpenAI Responses SSE streams.
//!
//! The per-token events are built from pre-formatted prefixes and suffixes so
//! that a token costs one JSON string escape and a few `memcpy`s.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use serde_json::{json, Value};

use crate::turn::PlannedCall;

/// What a token delta is: reasoning, content, or a piece of the arguments
/// of tool call `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Reasoning,
    Content,
    ToolArgs(usize),
}

/// Numbers reported at the end of a response.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stats {
    pub prompt_tokens: u64,
    /// Token deltas sent (reasoning + content).
    pub completion_tokens: u64,
    /// From the request being received to the first token being sent.
    pub prompt_ms: f64,
    /// From the first token being sent to the last token being sent.
    pub predicted_ms: f64,
    /// What the call cost (USD), sent as `usage.cost` as OpenRouter does.
    pub cost: Option<f64>,
}

impl Stats {
    pub(crate) fn usage_json(&self) -> Value {
        let mut usage = json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        });
        if let Some(cost) = self.cost {
            usage["cost"] = json!(cost);
        }
        usage
    }

    /// llama.cpp's `timings` object.
    pub(crate) fn timings_json(&self) -> Value {
        json!({
            "prompt_n": self.prompt_tokens,
            "prompt_ms": self.prompt_ms,
            "prompt_per_second": per_second(self.prompt_tokens, self.prompt_ms),
            "predicted_n": self.completion_tokens,
            "predicted_ms": self.predicted_ms,
            "predicted_per_second": per_second(self.completion_tokens, self.predicted_ms),
            "cache_n": 0,
        })
    }
}

fn per_second(n: u64, ms: f64) -> f64 {
    if ms > 0.0 && ms.is_finite() {
        n as f64 / ms * 1000.0
    } else {
        0.0
    }
}

/// Appends `s` as a JSON string literal (with quotes) to `buf`.
pub(crate) fn push_json_str(buf: &mut BytesMut, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    buf.reserve(s.len() + 2);
    buf.put_u8(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        buf.put_slice(&bytes[start..i]);
        if escape.is_empty() {
            buf.put_slice(b"\\u00");
            buf.put_u8(HEX[usize::from(b >> 4)]);
            buf.put_u8(HEX[usize::from(b & 0xf)]);
        } else {
            buf.put_slice(escape);
        }
        start = i + 1;
    }
    buf.put_slice(&bytes[start..]);
    buf.put_u8(b'"');
}

/// Encodes one response stream in the wire format of its endpoint.
pub(crate) enum Encoder {
    OpenAi(OpenAiEncoder),
    Anthropic(AnthropicEncoder),
    Responses(ResponsesEncoder),
}

impl Encoder {
    /// Events sent before the first token.
    pub(crate) fn preamble(&mut self, buf: &mut BytesMut) {
        match self {
            Encoder::OpenAi(e) => e.preamble(buf),
            Encoder::Anthropic(e) => e.preamble(buf),
            Encoder::Responses(e) => e.preamble(buf),
        }
    }

    /// One token delta.
    pub(crate) fn token(&mut self, buf: &mut BytesMut, kind: TokenKind, text: &str) {
        match self {
            Encoder::OpenAi(e) => e.token(buf, kind, text),
            Encoder::Anthropic(e) => e.token(buf, kind, text),
            Encoder::Responses(e) => e.token(buf, kind, text),
        }
    }

    /// The malformed line of [`crate::Fault::MalformedAfter`].
    pub(crate) fn malformed(&mut self, buf: &mut BytesMut) {
        match self {
            Encoder::OpenAi(_) => buf.put_slice(b"data: {not json\n\n"),
            Encoder::Anthropic(_) => {
                buf.put_slice(b"event: content_block_delta\ndata: {not json\n\n")
            }
            Encoder::Responses(_) => {
                buf.put_slice(b"event: response.output_text.delta\ndata: {not json\n\n")
            }
        }
    }

    /// Events after the last token (finish, usage, terminator).
    pub(crate) fn finish(&mut self, buf: &mut BytesMut, stats: &Stats) {
        match self {
            Encoder::OpenAi(e) => e.finish(buf, stats),
            Encoder::Anthropic(e) => e.finish(buf, stats),
            Encoder::Responses(e) => e.finish(buf, stats),
        }
    }
}

/// OpenAI chat completion chunks in llama.cpp's shape.
pub(crate) struct OpenAiEncoder {
    /// `data: {"id":..,"object":"chat.completion.chunk","created":..,"model":..,"choices":`
    head: Vec<u8>,
    /// Send the usage chunk.
    usage_chunk: bool,
    timings: bool,
    calls: Arc<[PlannedCall]>,
    /// The tool call whose arguments are streaming.
    open_call: Option<usize>,
}

impl OpenAiEncoder {
    pub(crate) fn new(
        id: &str,
        created: u64,
        model: &str,
        usage_chunk: bool,
        timings: bool,
        calls: Arc<[PlannedCall]>,
    ) -> Self {
        let mut head = BytesMut::new();
        head.put_slice(b"data: {\"id\":");
        push_json_str(&mut head, id);
        head.put_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
        head.put_slice(created.to_string().as_bytes());
        head.put_slice(b",\"model\":");
        push_json_str(&mut head, model);
        head.put_slice(b",\"choices\":");
        OpenAiEncoder {
            head: head.to_vec(),
            usage_chunk,
            timings,
            calls,
            open_call: None,
        }
    }

    fn preamble(&mut self, buf: &mut BytesMut) {
        buf.put_slice(&self.head);
        buf.put_slice(
            b"[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null}]}\n\n",
        );
    }

    fn token(&mut self, buf: &mut BytesMut, kind: TokenKind, text: &str) {
        buf.put_slice(&self.head);
        match kind {
            TokenKind::Reasoning => {
                buf.put_slice(b"[{\"index\":0,\"delta\":{\"reasoning_content\":");
            }
            TokenKind::Content => buf.put_slice(b"[{\"index\":0,\"delta\":{\"content\":"),
            TokenKind::ToolArgs(i) => return self.tool_args(buf, i, text),
        }
        push_json_str(buf, text);
        buf.put_slice(b"},\"finish_reason\":null}]}\n\n");
    }

    /// A piece of the arguments of call `i` (`head` already written),
    /// after the call's opening chunk if it is the call's first piece.
    fn tool_args(&mut self, buf: &mut BytesMut, i: usize, piece: &str) {
        if self.open_call != Some(i) {
            self.open_call = Some(i);
            let call = &self.calls[i];
            let delta = json!({"tool_calls": [{
                "index": i,
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]});
            let choices = json!([{"index": 0, "delta": delta, "finish_reason": null}]);
            buf.put_slice(choices.to_string().as_bytes());
            buf.put_slice(b"}\n\n");
            buf.put_slice(&self.head);
        }
        buf.put_slice(b"[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":");
        buf.put_slice(i.to_string().as_bytes());
        buf.put_slice(b",\"function\":{\"arguments\":");
        push_json_str(buf, piece);
        buf.put_slice(b"}}]},\"finish_reason\":null}]}\n\n");
    }

    fn finish(&mut self, buf: &mut BytesMut, stats: &Stats) {
        buf.put_slice(&self.head);
        buf.put_slice(if self.calls.is_empty() {
            b"[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]"
        } else {
            b"[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]"
        });
        if self.timings && !self.usage_chunk {
            buf.put_slice(b",\"timings\":");
            buf.put_slice(stats.timings_json().to_string().as_bytes());
        }
        buf.put_slice(b"}\n\n");
        if self.usage_chunk {
            buf.put_slice(&self.head);
            buf.put_slice(b"[],\"usage\":");
            buf.put_slice(stats.usage_json().to_string().as_bytes());
            if self.timings {
                buf.put_slice(b",\"timings\":");
                buf.put_slice(stats.timings_json().to_string().as_bytes());
            }
            buf.put_slice(b"}\n\n");
        }
        buf.put_slice(b"data: [DONE]\n\n");
    }
}

/// Anthropic Messages API stream events.
pub(crate) struct AnthropicEncoder {
    id: String,
    model: String,
    input_tokens: u64,
    /// The open content block: its kind and index.
    open: Option<(TokenKind, usize)>,
    next_index: usize,
    calls: Arc<[PlannedCall]>,
}

impl AnthropicEncoder {
    pub(crate) fn new(id: &str, model: &str, input_tokens: u64, calls: Arc<[PlannedCall]>) -> Self {
        AnthropicEncoder {
            id: id.to_string(),
            model: model.to_string(),
            input_tokens,
            open: None,
            next_index: 0,
            calls,
        }
    }

    fn event(buf: &mut BytesMut, name: &str, data: &Value) {
        buf.put_slice(b"event: ");
        buf.put_slice(name.as_bytes());
        buf.put_slice(b"\ndata: ");
        buf.put_slice(data.to_string().as_bytes());
        buf.put_slice(b"\n\n");
    }

    fn preamble(&mut self, buf: &mut BytesMut) {
        Self::event(
            buf,
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": self.id,
                    "type": "message",
                    "role": "assistant",
                    "model": self.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {"input_tokens": self.input_tokens, "output_tokens": 0},
                },
            }),
        );
    }

    fn close_block(&mut self, buf: &mut BytesMut) {
        if let Some((_, index)) = self.open.take() {
            Self::event(
                buf,
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            );
        }
    }

    fn token(&mut self, buf: &mut BytesMut, kind: TokenKind, text: &str) {
        let index = match self.open {
            Some((open_kind, index)) if open_kind == kind => index,
            _ => {
                self.close_block(buf);
                let index = self.next_index;
                self.next_index += 1;
                let block = match kind {
                    TokenKind::Reasoning => {
                        json!({"type": "thinking", "thinking": "", "signature": ""})
                    }
                    TokenKind::Content => json!({"type": "text", "text": ""}),
                    TokenKind::ToolArgs(i) => json!({
                        "type": "tool_use",
                        "id": self.calls[i].call_id,
                        "name": self.calls[i].name,
                        "input": {},
                    }),
                };
                Self::event(
                    buf,
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": index, "content_block": block}),
                );
                self.open = Some((kind, index));
                index
            }
        };
        buf.put_slice(
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":",
        );
        buf.put_slice(index.to_string().as_bytes());
        buf.put_slice(match kind {
            TokenKind::Reasoning => b",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":",
            TokenKind::Content => b",\"delta\":{\"type\":\"text_delta\",\"text\":",
            TokenKind::ToolArgs(_) => {
                b",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":"
            }
        });
        push_json_str(buf, text);
        buf.put_slice(b"}}\n\n");
    }

    fn finish(&mut self, buf: &mut BytesMut, stats: &Stats) {
        self.close_block(buf);
        Self::event(
            buf,
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {
                    "stop_reason": if self.calls.is_empty() { "end_turn" } else { "tool_use" },
                    "stop_sequence": null,
                },
                "usage": {"output_tokens": stats.completion_tokens},
            }),
        );
        Self::event(buf, "message_stop", &json!({"type": "message_stop"}));
    }
}

/// OpenAI Responses API stream events: `event: <type>` plus a `data:` JSON
/// object carrying the same `type` and an increasing `sequence_number`.
///
/// Each run of reasoning tokens becomes a `reasoning` item, each run of
/// content tokens a `message` item with one `output_text` part, and each
/// tool call a `function_call` item, in that order.
pub(crate) struct ResponsesEncoder {
    id: String,
    created: u64,
    model: String,
    input_tokens: u64,
    calls: Arc<[PlannedCall]>,
    /// The `sequence_number` of the next event.
    seq: u64,
    /// The finished output items.
    output: Vec<Value>,
    /// The output item being streamed.
    open: Option<OpenItem>,
    reasoning_tokens: u64,
}

struct OpenItem {
    kind: TokenKind,
    id: String,
    output_index: usize,
    /// Everything streamed into the item so far.
    text: String,
}

impl ResponsesEncoder {
    /// `id` is the response id, `resp_…`.
    pub(crate) fn new(
        id: &str,
        created: u64,
        model: &str,
        input_tokens: u64,
        calls: Arc<[PlannedCall]>,
    ) -> Self {
        ResponsesEncoder {
            id: id.to_string(),
            created,
            model: model.to_string(),
            input_tokens,
            calls,
            seq: 0,
            output: Vec::new(),
            open: None,
            reasoning_tokens: 0,
        }
    }

    fn event(&mut self, buf: &mut BytesMut, name: &str, mut data: Value) {
        data["type"] = Value::from(name);
        data["sequence_number"] = Value::from(self.seq);
        self.seq += 1;
        buf.put_slice(b"event: ");
        buf.put_slice(name.as_bytes());
        buf.put_slice(b"\ndata: ");
        buf.put_slice(data.to_string().as_bytes());
        buf.put_slice(b"\n\n");
    }

    /// The response object; `usage` null while in progress.
    fn response(&self, status: &str, usage: Option<&Stats>) -> Value {
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": null,
            "incomplete_details": null,
            "instructions": null,
            "model": self.model,
            "output": if usage.is_some() { Value::from(self.output.clone()) } else { json!([]) },
            "parallel_tool_calls": true,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage.map(|s| self.usage(s)),
        })
    }

    fn usage(&self, stats: &Stats) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": stats.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + stats.completion_tokens,
        })
    }

    fn preamble(&mut self, buf: &mut BytesMut) {
        let response = self.response("in_progress", None);
        self.event(buf, "response.created", json!({"response": response}));
        let response = self.response("in_progress", None);
        self.event(buf, "response.in_progress", json!({"response": response}));
    }

    /// The id of the output item at `output_index`, e.g. `msg_<response id>_0`.
    fn item_id(&self, prefix: &str, output_index: usize) -> String {
        let base = self.id.strip_prefix("resp_").unwrap_or(&self.id);
        format!("{prefix}{base}_{output_index}")
    }

    fn open_item(&mut self, buf: &mut BytesMut, kind: TokenKind) {
        self.close_item(buf);
        let output_index = self.output.len();
        let (id, item) = match kind {
            TokenKind::Reasoning => {
                let id = self.item_id("rs_", output_index);
                let item = json!({"type": "reasoning", "id": id, "summary": []});
                (id, item)
            }
            TokenKind::Content => {
                let id = self.item_id("msg_", output_index);
                let item = json!({
                    "type": "message",
                    "id": id,
                    "role": "assistant",
                    "status": "in_progress",
                    "content": [],
                });
                (id, item)
            }
            TokenKind::ToolArgs(i) => {
                let call = &self.calls[i];
                let item = json!({
                    "type": "function_call",
                    "id": call.item_id,
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": "",
                    "status": "in_progress",
                });
                (call.item_id.clone(), item)
            }
        };
        self.event(
            buf,
            "response.output_item.added",
            json!({"output_index": output_index, "item": item}),
        );
        if kind == TokenKind::Content {
            self.event(
                buf,
                "response.content_part.added",
                json!({
                    "item_id": id,
                    "output_index": output_index,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }),
            );
        }
        self.open = Some(OpenItem {
            kind,
            id,
            output_index,
            text: String::new(),
        });
    }

    fn close_item(&mut self, buf: &mut BytesMut) {
        let Some(OpenItem {
            kind,
            id,
            output_index,
            text,
        }) = self.open.take()
        else {
            return;
        };
        let item = match kind {
            TokenKind::Reasoning => {
                self.event(
                    buf,
                    "response.reasoning_text.done",
                    json!({"item_id": id, "output_index": output_index, "content_index": 0, "text": text}),
                );
                json!({
                    "type": "reasoning",
                    "id": id,
                    "summary": [],
                    "content": [{"type": "reasoning_text", "text": text}],
                })
            }
            TokenKind::Content => {
                self.event(
                    buf,
                    "response.output_text.done",
                    json!({
                        "item_id": id,
                        "output_index": output_index,
                        "content_index": 0,
                        "text": text,
                        "logprobs": [],
                    }),
                );
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                self.event(
                    buf,
                    "response.content_part.done",
                    json!({
                        "item_id": id,
                        "output_index": output_index,
                        "content_index": 0,
                        "part": part,
                    }),
                );
                json!({
                    "type": "message",
                    "id": id,
                    "role": "assistant",
                    "status": "completed",
                    "content": [part],
                })
            }
            TokenKind::ToolArgs(i) => {
                let call = &self.calls[i];
                let (call_id, name) = (call.call_id.clone(), call.name.clone());
                self.event(
                    buf,
                    "response.function_call_arguments.done",
                    json!({
                        "item_id": id,
                        "output_index": output_index,
                        "name": name,
                        "arguments": text,
                    }),
                );
                json!({
                    "type": "function_call",
                    "id": id,
                    "call_id": call_id,
                    "name": name,
                    "arguments": text,
                    "status": "completed",
                })
            }
        };
        self.event(
            buf,
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
        self.output.push(item);
    }

    fn token(&mut self, buf: &mut BytesMut, kind: TokenKind, text: &str) {
        if self.open.as_ref().map(|o| o.kind) != Some(kind) {
            self.open_item(buf, kind);
        }
        if kind == TokenKind::Reasoning {
            self.reasoning_tokens += 1;
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        open.text.push_str(text);
        let (id, output_index) = (open.id.clone(), open.output_index);
        let (name, data) = match kind {
            TokenKind::Reasoning => (
                "response.reasoning_text.delta",
                json!({"item_id": id, "output_index": output_index, "content_index": 0, "delta": text}),
            ),
            TokenKind::Content => (
                "response.output_text.delta",
                json!({
                    "item_id": id,
                    "output_index": output_index,
                    "content_index": 0,
                    "delta": text,
                    "logprobs": [],
                }),
            ),
            TokenKind::ToolArgs(_) => (
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": output_index, "delta": text}),
            ),
        };
        self.event(buf, name, data);
    }

    fn finish(&mut self, buf: &mut BytesMut, stats: &Stats) {
        self.close_item(buf);
        let response = self.response("completed", Some(stats));
        self.event(buf, "response.completed", json!({"response": response}));
    }

    /// The completed response object after feeding all tokens (for a
    /// non-streaming response).
    pub(crate) fn completed_response(&mut self, stats: &Stats) -> Value {
        let mut sink = BytesMut::new();
        self.close_item(&mut sink);
        self.response("completed", Some(stats))
    }

    /// Feeds one token (for a non-streaming response).
    pub(crate) fn push_token(&mut self, kind: TokenKind, text: &str) {
        let mut sink = BytesMut::new();
        self.token(&mut sink, kind, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut buf = BytesMut::new();
        push_json_str(&mut buf, s);
        String::from_utf8(buf.to_vec()).unwrap()
    }

    #[test]
    fn json_escape_matches_serde() {
        for s in [
            "",
            "plain",
            "quote\" back\\slash",
            "nl\ncr\rtab\t",
            "\u{0}\u{1}\u{8}\u{c}\u{1f}",
            "ünïcødé 🎉",
        ] {
            let ours = esc(s);
            assert_eq!(serde_json::from_str::<String>(&ours).unwrap(), s);
            assert_eq!(ours, serde_json::to_string(s).unwrap());
        }
    }

    #[test]
    fn openai_token_chunk_is_valid_json() {
        let mut e = OpenAiEncoder::new("chatcmpl-1", 7, "m\"x", true, true, Arc::from([]));
        let mut buf = BytesMut::new();
        e.token(&mut buf, TokenKind::Content, "a\"b");
        let text = String::from_utf8(buf.to_vec()).unwrap();
        let json = text
            .strip_prefix("data: ")
            .unwrap()
            .strip_suffix("\n\n")
            .unwrap();
        let v: Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["model"], "m\"x");
        assert_eq!(v["created"], 7);
        assert_eq!(v["choices"][0]["delta"]["content"], "a\"b");
        assert!(v["choices"][0]["finish_reason"].is_null());
    }
}
