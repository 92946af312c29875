//! Tool-calling model turns: what an agent's model answers on each request.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The plain text answered to side requests (requests without `tools`, such
/// as an agent's title generation or summaries) by turn scripts.
pub const SIDE_REQUEST_TEXT: &str = "Arena test";

/// The text answered with tools once a [`crate::ModelScript::turns`] list is used up.
pub const DONE_TEXT: &str = "done";

/// One model response: text and/or tool calls.
///
/// In a script file a turn is `{"text": "..."}` or
/// `{"tool_calls": [{"name": "write_file", "arguments": {...}}], "text": "optional"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TurnRepr", into = "TurnRepr")]
pub enum Turn {
    /// A plain text answer (finish reason `stop` / `end_turn` / a `message` item).
    Text(String),
    /// Tool calls, optionally preceded by text. With no calls it is
    /// answered like [`Turn::Text`] (of the text, or `""`).
    ToolCalls {
        /// Text sent before the calls.
        text: Option<String>,
        /// The calls, in order.
        calls: Vec<ToolCall>,
    },
}

impl Turn {
    /// A plain text turn.
    pub fn text(s: impl Into<String>) -> Turn {
        Turn::Text(s.into())
    }

    /// A turn of one tool call without text.
    pub fn call(name: impl Into<String>, arguments: Value) -> Turn {
        Turn::ToolCalls {
            text: None,
            calls: vec![ToolCall::new(name, arguments)],
        }
    }

    /// The text of the turn (`""` when it has none).
    pub(crate) fn text_part(&self) -> &str {
        match self {
            Turn::Text(t) => t,
            Turn::ToolCalls { text, .. } => text.as_deref().unwrap_or(""),
        }
    }

    pub(crate) fn calls(&self) -> &[ToolCall] {
        match self {
            Turn::Text(_) => &[],
            Turn::ToolCalls { calls, .. } => calls,
        }
    }
}

/// One tool (function) call of a [`Turn`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The tool's name, e.g. `"write_file"`.
    pub name: String,
    /// The arguments; should be a JSON object. Sent as its compact JSON
    /// text (OpenAI `arguments` strings, Anthropic `input_json_delta`s).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// The script-file shape of a [`Turn`].
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
}

impl TryFrom<TurnRepr> for Turn {
    type Error = String;

    fn try_from(r: TurnRepr) -> Result<Turn, String> {
        if let Some(c) = r.tool_calls.iter().find(|c| !c.arguments.is_object()) {
            return Err(format!(
                "the arguments of tool call '{}' must be a JSON object",
                c.name
            ));
        }
        match (r.text, r.tool_calls.is_empty()) {
            (None, true) => Err("a turn needs \"text\" or \"tool_calls\"".to_string()),
            (Some(text), true) => Ok(Turn::Text(text)),
            (text, false) => Ok(Turn::ToolCalls {
                text,
                calls: r.tool_calls,
            }),
        }
    }
}

impl From<Turn> for TurnRepr {
    fn from(t: Turn) -> TurnRepr {
        match t {
            Turn::Text(text) => TurnRepr {
                text: Some(text),
                tool_calls: Vec::new(),
            },
            Turn::ToolCalls { text, calls } => TurnRepr {
                text,
                tool_calls: calls,
            },
        }
    }
}

/// How a turn-scripted model picks its turns (see [`crate::ModelScript::turns`]).
#[derive(Clone)]
pub enum TurnScript {
    /// Request `i` with tools gets turn `i`; after the last, [`DONE_TEXT`].
    Sequence(Vec<Turn>),
    /// Each request with tools gets `f(request body)`.
    Chooser(Arc<dyn Fn(&Value) -> Turn + Send + Sync>),
}

impl fmt::Debug for TurnScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnScript::Sequence(turns) => f.debug_tuple("Sequence").field(turns).finish(),
            TurnScript::Chooser(_) => f.write_str("Chooser(..)"),
        }
    }
}

/// Whether a request offers the model tools: a `tools` field that is not
/// null and not an empty array.
pub fn has_tools(body: &Value) -> bool {
    match body.get("tools") {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}

/// Counts the tool results in a request body of any of the three APIs:
/// OpenAI chat `messages` with role `"tool"`, Anthropic `messages` content
/// blocks of type `"tool_result"`, and Responses `input` items of type
/// `"function_call_output"` (or `"custom_tool_call_output"`).
pub fn tool_results(body: &Value) -> usize {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, |msgs| {
            msgs.iter()
                .map(|m| {
                    if m.get("role").and_then(Value::as_str) == Some("tool") {
                        return 1;
                    }
                    m.get("content")
                        .and_then(Value::as_array)
                        .map_or(0, |blocks| {
                            blocks
                                .iter()
                                .filter(|b| type_is(b, &["tool_result"]))
                                .count()
                        })
                })
                .sum()
        });
    let input = body
        .get("input")
        .and_then(Value::as_array)
        .map_or(0, |items| {
            items
                .iter()
                .filter(|i| type_is(i, &["function_call_output", "custom_tool_call_output"]))
                .count()
        });
    messages + input
}

fn type_is(v: &Value, types: &[&str]) -> bool {
    v.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| types.contains(&t))
}

/// A tool call as it is sent in one response.
#[derive(Clone, Debug)]
pub(crate) struct PlannedCall {
    pub name: String,
    /// The arguments' compact JSON text.
    pub arguments: String,
    /// `arguments` split into the streamed pieces.
    pub pieces: Vec<String>,
    /// `call_…` (OpenAI) or `toolu_…` (Anthropic).
    pub call_id: String,
    /// The Responses `function_call` item id, `fc_…`.
    pub item_id: String,
}

/// At most this many argument pieces per call.
const MAX_PIECES: usize = 4;

impl PlannedCall {
    pub(crate) fn new(call: &ToolCall, call_id: String, item_id: String) -> PlannedCall {
        let arguments = call.arguments.to_string();
        PlannedCall {
            name: call.name.clone(),
            pieces: split_pieces(&arguments, MAX_PIECES),
            arguments,
            call_id,
            item_id,
        }
    }
}

/// Splits `s` into at most `max` pieces of about equal length (in chars);
/// at least one piece (which may be empty).
pub(crate) fn split_pieces(s: &str, max: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let per = chars.len().div_ceil(max.max(1));
    chars.chunks(per).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pieces_reassemble() {
        for s in ["", "{}", "{\"a\":1}", "ünï\"cødé🎉 and a longer text here"] {
            let p = split_pieces(s, 4);
            assert!(!p.is_empty() && p.len() <= 4, "{p:?}");
            assert_eq!(p.concat(), s);
        }
        assert_eq!(split_pieces("{}", 4), vec!["{", "}"]);
        assert_eq!(split_pieces("abcdefgh", 4).len(), 4);
    }

    #[test]
    fn counts_tool_results_of_all_apis() {
        let openai = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": []},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        ]});
        assert_eq!(tool_results(&openai), 2);
        let anthropic = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "ok"},
                {"type": "text", "text": "more"},
            ]},
        ]});
        assert_eq!(tool_results(&anthropic), 1);
        let responses = json!({"input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "call_id": "c", "name": "x", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
        ]});
        assert_eq!(tool_results(&responses), 1);
        assert_eq!(tool_results(&json!({"input": "just text"})), 0);
        assert_eq!(tool_results(&Value::Null), 0);
    }

    #[test]
    fn tools_presence() {
        assert!(!has_tools(&json!({})));
        assert!(!has_tools(&json!({"tools": null})));
        assert!(!has_tools(&json!({"tools": []})));
        assert!(has_tools(&json!({"tools": [{"type": "function"}]})));
    }

    #[test]
    fn turn_json_shape() {
        let turns: Vec<Turn> = serde_json::from_str(
            r#"[{"text": "hi"},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "a"}}], "text": "ok"},
                {"tool_calls": [{"name": "ls"}]}]"#,
        )
        .unwrap();
        assert_eq!(
            turns,
            vec![
                Turn::text("hi"),
                Turn::ToolCalls {
                    text: Some("ok".into()),
                    calls: vec![ToolCall::new("write_file", json!({"path": "a"}))],
                },
                Turn::call("ls", json!({})),
            ]
        );
        let back: Vec<Turn> =
            serde_json::from_value(serde_json::to_value(&turns).unwrap()).unwrap();
        assert_eq!(back, turns);
        for bad in [
            r#"{}"#,
            r#"{"txt": "x"}"#,
            r#"{"tool_calls": [{"name": "x", "arguments": [1]}]}"#,
            r#"{"tool_calls": [{"name": "x", "args": {}}]}"#,
        ] {
            assert!(serde_json::from_str::<Turn>(bad).is_err(), "{bad}");
        }
    }
}
