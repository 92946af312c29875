//! Wire encoders for the OpenAI (llama.cpp-shaped) and Anthropic SSE streams.
//!
//! The per-token events are built from pre-formatted prefixes and suffixes so
//! that a token costs one JSON string escape and a few `memcpy`s.

use bytes::{BufMut, BytesMut};
use serde_json::{json, Value};

/// Whether a token is reasoning or content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Reasoning,
    Content,
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
}

impl Stats {
    pub(crate) fn usage_json(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        })
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
}

impl Encoder {
    /// Events sent before the first token.
    pub(crate) fn preamble(&mut self, buf: &mut BytesMut) {
        match self {
            Encoder::OpenAi(e) => e.preamble(buf),
            Encoder::Anthropic(e) => e.preamble(buf),
        }
    }

    /// One token delta.
    pub(crate) fn token(&mut self, buf: &mut BytesMut, kind: TokenKind, text: &str) {
        match self {
            Encoder::OpenAi(e) => e.token(buf, kind, text),
            Encoder::Anthropic(e) => e.token(buf, kind, text),
        }
    }

    /// The malformed line of [`crate::Fault::MalformedAfter`].
    pub(crate) fn malformed(&mut self, buf: &mut BytesMut) {
        match self {
            Encoder::OpenAi(_) => buf.put_slice(b"data: {not json\n\n"),
            Encoder::Anthropic(_) => {
                buf.put_slice(b"event: content_block_delta\ndata: {not json\n\n")
            }
        }
    }

    /// Events after the last token (finish, usage, terminator).
    pub(crate) fn finish(&mut self, buf: &mut BytesMut, stats: &Stats) {
        match self {
            Encoder::OpenAi(e) => e.finish(buf, stats),
            Encoder::Anthropic(e) => e.finish(buf, stats),
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
}

impl OpenAiEncoder {
    pub(crate) fn new(
        id: &str,
        created: u64,
        model: &str,
        usage_chunk: bool,
        timings: bool,
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
        buf.put_slice(match kind {
            TokenKind::Reasoning => b"[{\"index\":0,\"delta\":{\"reasoning_content\":",
            TokenKind::Content => b"[{\"index\":0,\"delta\":{\"content\":",
        });
        push_json_str(buf, text);
        buf.put_slice(b"},\"finish_reason\":null}]}\n\n");
    }

    fn finish(&mut self, buf: &mut BytesMut, stats: &Stats) {
        buf.put_slice(&self.head);
        buf.put_slice(b"[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]");
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
}

impl AnthropicEncoder {
    pub(crate) fn new(id: &str, model: &str, input_tokens: u64) -> Self {
        AnthropicEncoder {
            id: id.to_string(),
            model: model.to_string(),
            input_tokens,
            open: None,
            next_index: 0,
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
                "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                "usage": {"output_tokens": stats.completion_tokens},
            }),
        );
        Self::event(buf, "message_stop", &json!({"type": "message_stop"}));
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
        let mut e = OpenAiEncoder::new("chatcmpl-1", 7, "m\"x", true, true);
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
