//! Model scripts: what the server streams for a model, and which faults it injects.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::turn::{has_tools, PlannedCall, Turn, TurnScript, DONE_TEXT, SIDE_REQUEST_TEXT};
use crate::Error;

/// A fault injected into one request.
///
/// Faults are consumed one per chat/messages request for the model, in order
/// (see [`ModelScript::faults`]).
///
/// For the faults that cut a stream short (`DisconnectAfter`, `MalformedAfter`,
/// `StallAfter`), `N` counts every token delta sent, reasoning tokens
/// included (reasoning tokens are sent first). If `N` is larger than the
/// script, the whole script is sent and then the fault is applied.
///
/// Serialized externally tagged in snake case, e.g. `{"status":500}`,
/// `{"rate_limit":{"retry_after_secs":1}}`, `{"disconnect_after":3}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// Respond with this HTTP status and an error JSON body (OpenAI- or
    /// Anthropic-style depending on the endpoint), no stream.
    Status(u16),
    /// Respond `429 Too Many Requests` with a `Retry-After: N` header.
    RateLimit {
        /// Value of the `Retry-After` header, in seconds.
        retry_after_secs: u64,
    },
    /// Send `N` tokens, then abort the connection (no finish event, no `[DONE]`).
    DisconnectAfter(usize),
    /// Send `N` tokens, then a `data: {not json` line, then end the body
    /// cleanly (no finish event, no `[DONE]`).
    MalformedAfter(usize),
    /// Send `N` tokens, then keep the connection open sending nothing until
    /// the client goes away (or the server shuts down).
    StallAfter(usize),
}

/// What the server answers for one model id.
#[derive(Clone, Debug)]
pub struct ModelScript {
    /// Content tokens, one SSE delta each.
    pub content: Vec<String>,
    /// Reasoning tokens, sent before the content as `delta.reasoning_content`
    /// (OpenAI) or `thinking_delta` (Anthropic).
    pub reasoning: Vec<String>,
    /// Delay after the response headers / first role chunk before the first token.
    pub first_token_delay: Duration,
    /// Delay between tokens; `ZERO` streams as fast as possible.
    pub token_interval: Duration,
    /// Reported in `usage.prompt_tokens` / `timings.prompt_n`.
    pub prompt_tokens: u64,
    /// Send the usage chunk when the request asked `stream_options.include_usage`.
    pub usage: bool,
    /// Report what each call cost in `usage.cost` (USD), as OpenRouter does.
    pub cost: Option<f64>,
    /// Include llama.cpp `timings` in the final chunk.
    pub timings: bool,
    /// Consumed one per request in order: request #1 gets `faults[0]`, ...;
    /// when exhausted, requests succeed normally.
    pub faults: Vec<Fault>,
    /// When set, the content is computed from each request's JSON body
    /// (and split after whitespace), replacing `content`. For scripted
    /// peers whose answer depends on what they were asked, like a judge.
    pub responder: Option<Responder>,
    /// When set, the model answers in tool-calling turns (see
    /// [`ModelScript::turns`]); `content` and `responder` are then unused.
    pub turns: Option<TurnScript>,
}

/// Computes a response text from a request body.
#[derive(Clone)]
pub struct Responder(pub std::sync::Arc<dyn Fn(&serde_json::Value) -> String + Send + Sync>);

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}

impl ModelScript {
    /// `n` content tokens `"tok0 "`, `"tok1 "`, ...; no delay, usage and
    /// timings on, 12 prompt tokens, no faults.
    pub fn tokens(n: usize) -> ModelScript {
        ModelScript::from_content((0..n).map(|i| format!("tok{i} ")).collect())
    }

    /// Content tokens from `s`, split after whitespace: each word keeps its
    /// trailing whitespace (leading whitespace stays with the first word).
    /// Other settings as in [`ModelScript::tokens`].
    pub fn text(s: &str) -> ModelScript {
        ModelScript::from_content(split_words(s))
    }

    fn from_content(content: Vec<String>) -> ModelScript {
        ModelScript {
            content,
            reasoning: Vec::new(),
            first_token_delay: Duration::ZERO,
            token_interval: Duration::ZERO,
            prompt_tokens: 12,
            usage: true,
            cost: None,
            timings: true,
            faults: Vec::new(),
            responder: None,
            turns: None,
        }
    }

    /// Answers each request with `f(request body)`; see [`ModelScript::responder`].
    pub fn respond_with(
        f: impl Fn(&serde_json::Value) -> String + Send + Sync + 'static,
    ) -> ModelScript {
        let mut script = ModelScript::from_content(Vec::new());
        script.responder = Some(Responder(std::sync::Arc::new(f)));
        script
    }

    /// Answers requests with tool-calling agent turns, in order: the first
    /// request that offers tools gets `turns[0]`, the next `turns[1]`, ...;
    /// once they are used up, every such request gets `Turn::Text("done")`
    /// ([`crate::DONE_TEXT`]).
    ///
    /// Requests without tools (no `tools` field, or `null` or `[]`) are an
    /// agent's side requests (title generation, summaries, quota checks):
    /// they are answered with the plain text `"Arena test"`
    /// ([`crate::SIDE_REQUEST_TEXT`]) and do not consume a turn.
    ///
    /// Faults still apply, one per request (side requests included), as
    /// for any script. A request that gets a fault does not consume a turn
    /// (a stream fault cuts the turn it would have answered short), so a
    /// retry gets the same turn again. Replacing the script restarts the
    /// turns. Text is split after whitespace and paced like
    /// [`ModelScript::text`]; each call's arguments are streamed in up to
    /// 4 pieces, each paced and counted like a token (also by the faults
    /// that cut a stream after `N` tokens).
    pub fn turns(turns: Vec<Turn>) -> ModelScript {
        let mut script = ModelScript::from_content(Vec::new());
        script.turns = Some(TurnScript::Sequence(turns));
        script
    }

    /// Like [`ModelScript::turns`], but each request with tools gets
    /// `f(request body)`, e.g. chosen by counting the tool results in the
    /// conversation with [`crate::tool_results`]. `f` is called for every
    /// request with tools (faulted ones too, like a responder); requests
    /// without tools get `"Arena test"` without calling it.
    pub fn turn_with(
        f: impl Fn(&serde_json::Value) -> Turn + Send + Sync + 'static,
    ) -> ModelScript {
        let mut script = ModelScript::from_content(Vec::new());
        script.turns = Some(TurnScript::Chooser(std::sync::Arc::new(f)));
        script
    }

    /// Whether answering `body` (without a fault) moves a turn sequence on.
    pub(crate) fn consumes_turn(&self, body: &serde_json::Value) -> bool {
        matches!(self.turns, Some(TurnScript::Sequence(_))) && has_tools(body)
    }

    /// The turn this script answers `body` with, `turn_index` being the
    /// number of turns of a sequence consumed before it. `None` when the
    /// script has no turns.
    pub(crate) fn turn_for(&self, body: &serde_json::Value, turn_index: usize) -> Option<Turn> {
        let turns = self.turns.as_ref()?;
        if !has_tools(body) {
            return Some(Turn::text(SIDE_REQUEST_TEXT));
        }
        Some(match turns {
            TurnScript::Sequence(list) => list
                .get(turn_index)
                .cloned()
                .unwrap_or_else(|| Turn::text(DONE_TEXT)),
            TurnScript::Chooser(f) => f(body),
        })
    }

    /// This script answering `body`: the responder's text, or the turn's
    /// text and calls (`make_call` builds a call's ids from its index).
    pub(crate) fn for_request(
        self: std::sync::Arc<Self>,
        body: &serde_json::Value,
        turn_index: usize,
        make_call: impl Fn(usize, &crate::ToolCall) -> PlannedCall,
    ) -> (std::sync::Arc<Self>, Vec<PlannedCall>) {
        if let Some(turn) = self.turn_for(body, turn_index) {
            let calls = turn
                .calls()
                .iter()
                .enumerate()
                .map(|(i, c)| make_call(i, c))
                .collect();
            let mut script = (*self).clone();
            script.content = split_words(turn.text_part());
            return (std::sync::Arc::new(script), calls);
        }
        match &self.responder {
            Some(Responder(f)) => {
                let mut script = (*self).clone();
                script.content = split_words(&f(body));
                (std::sync::Arc::new(script), Vec::new())
            }
            None => (self, Vec::new()),
        }
    }

    /// Sets `token_interval = 1 / tokens_per_sec`; a rate that is zero,
    /// negative or not finite means unlimited (`ZERO` interval).
    pub fn rate(mut self, tokens_per_sec: f64) -> Self {
        self.token_interval = if tokens_per_sec.is_finite() && tokens_per_sec > 0.0 {
            Duration::try_from_secs_f64(1.0 / tokens_per_sec).unwrap_or(Duration::ZERO)
        } else {
            Duration::ZERO
        };
        self
    }

    /// Sets the delay before the first token.
    pub fn first_token_delay(mut self, d: Duration) -> Self {
        self.first_token_delay = d;
        self
    }

    /// Sets the reasoning tokens (sent before the content).
    pub fn reasoning(mut self, tokens: Vec<String>) -> Self {
        self.reasoning = tokens;
        self
    }

    /// Sets the faults, consumed one per request.
    pub fn with_faults(mut self, faults: Vec<Fault>) -> Self {
        self.faults = faults;
        self
    }

    /// Turns off the llama.cpp `timings` object.
    pub fn without_timings(mut self) -> Self {
        self.timings = false;
        self
    }

    /// Turns off the usage chunk.
    pub fn without_usage(mut self) -> Self {
        self.usage = false;
        self
    }

    /// Reports `usd` as each call's `usage.cost`.
    pub fn cost(mut self, usd: f64) -> Self {
        self.cost = Some(usd);
        self
    }

    /// Sets the reported prompt token count.
    pub fn prompt_tokens(mut self, n: u64) -> Self {
        self.prompt_tokens = n;
        self
    }

    /// Number of token deltas a full response sends (reasoning + content).
    pub fn total_tokens(&self) -> usize {
        self.reasoning.len() + self.content.len()
    }
}

impl Default for ModelScript {
    /// Same as `ModelScript::tokens(5)`.
    fn default() -> Self {
        ModelScript::tokens(5)
    }
}

/// Splits `s` after each run of whitespace, so each piece is a word followed
/// by its trailing whitespace.
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut seen_word = false;
    let mut in_space = false;
    for ch in s.chars() {
        if ch.is_whitespace() {
            in_space = true;
        } else {
            if in_space && seen_word {
                out.push(std::mem::take(&mut cur));
            }
            in_space = false;
            seen_word = true;
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A JSON script file for the `arena-testserver` binary:
/// `{ "models": { "name": { "tokens": 100, "rate": 50.0, ... } } }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptFile {
    /// Scripts by model id.
    pub models: BTreeMap<String, ScriptFileModel>,
}

/// One model of a [`ScriptFile`]. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptFileModel {
    /// Number of `"tokN "` content tokens (default 5); ignored when `text` is set.
    pub tokens: Option<usize>,
    /// Tokens per second; 0 (the default) = unlimited.
    pub rate: f64,
    /// Delay before the first token, in milliseconds.
    pub first_token_delay_ms: u64,
    /// Number of `"thinkN "` reasoning tokens sent before the content.
    pub reasoning_tokens: usize,
    /// Literal content text (split after whitespace) instead of `tokens`.
    pub text: Option<String>,
    /// Faults consumed one per request.
    pub faults: Vec<Fault>,
    /// Reported prompt tokens (default 12).
    pub prompt_tokens: Option<u64>,
    /// Send the usage chunk (default true).
    pub usage: Option<bool>,
    /// Send llama.cpp timings (default true).
    pub timings: Option<bool>,
    /// Tool-calling agent turns (see [`ModelScript::turns`]), each
    /// `{"text": "..."}` or `{"tool_calls": [{"name": "write_file",
    /// "arguments": {...}}], "text": "optional"}`; replaces `tokens`/`text`.
    pub turns: Option<Vec<Turn>>,
}

impl ScriptFileModel {
    /// Builds the [`ModelScript`] this entry describes.
    pub fn to_script(&self) -> ModelScript {
        let mut script = match (&self.turns, &self.text) {
            (Some(turns), _) => ModelScript::turns(turns.clone()),
            (None, Some(text)) => ModelScript::text(text),
            (None, None) => ModelScript::tokens(self.tokens.unwrap_or(5)),
        };
        script = script
            .rate(self.rate)
            .first_token_delay(Duration::from_millis(self.first_token_delay_ms))
            .reasoning(
                (0..self.reasoning_tokens)
                    .map(|i| format!("think{i} "))
                    .collect(),
            )
            .with_faults(self.faults.clone());
        if let Some(p) = self.prompt_tokens {
            script.prompt_tokens = p;
        }
        if let Some(u) = self.usage {
            script.usage = u;
        }
        if let Some(t) = self.timings {
            script.timings = t;
        }
        script
    }
}

impl ScriptFile {
    /// Parses a script file from JSON text.
    pub fn from_json(text: &str) -> Result<ScriptFile, Error> {
        Ok(serde_json::from_str(text)?)
    }

    /// Reads and parses a script file.
    pub fn load(path: &Path) -> Result<ScriptFile, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        ScriptFile::from_json(&text)
    }

    /// The `(model id, script)` pairs of the file, sorted by id.
    pub fn scripts(&self) -> Vec<(String, ModelScript)> {
        self.models
            .iter()
            .map(|(name, m)| (name.clone(), m.to_script()))
            .collect()
    }
}

/// Parses a `NAME:TOKENS:RATE` model spec (as used by the binary's
/// `--model`). The name may itself contain colons (`qwen3:8b:100:50`);
/// `RATE` is tokens per second, 0 = unlimited.
pub fn parse_model_spec(spec: &str) -> Result<(String, ModelScript), Error> {
    let bad = |why: &str| Error::ModelSpec {
        spec: spec.to_string(),
        why: why.to_string(),
    };
    let mut parts = spec.rsplitn(3, ':');
    let rate = parts.next().ok_or_else(|| bad("missing RATE"))?;
    let tokens = parts.next().ok_or_else(|| bad("missing TOKENS"))?;
    let name = parts.next().ok_or_else(|| bad("missing NAME"))?;
    if name.is_empty() {
        return Err(bad("empty NAME"));
    }
    let tokens: usize = tokens
        .parse()
        .map_err(|_| bad("TOKENS is not a non-negative integer"))?;
    let rate: f64 = rate.parse().map_err(|_| bad("RATE is not a number"))?;
    if !rate.is_finite() || rate < 0.0 {
        return Err(bad("RATE must be >= 0"));
    }
    Ok((name.to_string(), ModelScript::tokens(tokens).rate(rate)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_splits_after_whitespace() {
        let s = ModelScript::text("  Hello world  foo\nbar");
        assert_eq!(s.content, vec!["  Hello ", "world  ", "foo\n", "bar"]);
        assert!(ModelScript::text("").content.is_empty());
        assert_eq!(ModelScript::text("a ").content, vec!["a "]);
    }

    #[test]
    fn tokens_and_defaults() {
        let s = ModelScript::default();
        assert_eq!(s.content, vec!["tok0 ", "tok1 ", "tok2 ", "tok3 ", "tok4 "]);
        assert!(s.usage && s.timings);
        assert_eq!(s.prompt_tokens, 12);
        assert_eq!(s.token_interval, Duration::ZERO);
        assert_eq!(
            ModelScript::tokens(1).rate(200.0).token_interval,
            Duration::from_millis(5)
        );
        assert_eq!(
            ModelScript::tokens(1).rate(0.0).token_interval,
            Duration::ZERO
        );
    }

    #[test]
    fn fault_json_shape() {
        let faults: Vec<Fault> = serde_json::from_str(
            r#"[{"status":500},{"rate_limit":{"retry_after_secs":1}},{"disconnect_after":3},{"malformed_after":2},{"stall_after":1}]"#,
        )
        .unwrap();
        assert_eq!(
            faults,
            vec![
                Fault::Status(500),
                Fault::RateLimit {
                    retry_after_secs: 1
                },
                Fault::DisconnectAfter(3),
                Fault::MalformedAfter(2),
                Fault::StallAfter(1),
            ]
        );
    }

    #[test]
    fn script_file_parses() {
        let f = ScriptFile::from_json(
            r#"{"models":{"a":{"tokens":100,"rate":50.0,"first_token_delay_ms":7,"reasoning_tokens":2,"faults":[{"status":503}]},
                "b":{"text":"hi there"}}}"#,
        )
        .unwrap();
        let scripts = f.scripts();
        assert_eq!(scripts.len(), 2);
        let (name, a) = &scripts[0];
        assert_eq!(name, "a");
        assert_eq!(a.content.len(), 100);
        assert_eq!(a.reasoning, vec!["think0 ", "think1 "]);
        assert_eq!(a.token_interval, Duration::from_millis(20));
        assert_eq!(a.first_token_delay, Duration::from_millis(7));
        assert_eq!(a.faults, vec![Fault::Status(503)]);
        assert_eq!(scripts[1].1.content, vec!["hi ", "there"]);
        assert!(ScriptFile::from_json(r#"{"models":{"a":{"bogus":1}}}"#).is_err());
    }

    #[test]
    fn script_file_turns() {
        let f = ScriptFile::from_json(
            r#"{"models":{"agent":{"rate":10,"turns":[
                {"tool_calls":[{"name":"write_file","arguments":{"path":"a"}}],"text":"ok"},
                {"text":"fin"}]}}}"#,
        )
        .unwrap();
        let (_, s) = &f.scripts()[0];
        assert_eq!(s.token_interval, Duration::from_millis(100));
        match &s.turns {
            Some(TurnScript::Sequence(turns)) => assert_eq!(
                turns,
                &vec![
                    Turn::ToolCalls {
                        text: Some("ok".into()),
                        calls: vec![crate::ToolCall::new(
                            "write_file",
                            serde_json::json!({"path": "a"})
                        )],
                    },
                    Turn::text("fin"),
                ]
            ),
            other => panic!("{other:?}"),
        }
        for bad in [
            r#"{"models":{"a":{"turns":[{}]}}}"#,
            r#"{"models":{"a":{"turns":[{"tool_calls":[{"name":"x","arguments":"{}"}]}]}}}"#,
        ] {
            assert!(ScriptFile::from_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn turn_selection() {
        let s = ModelScript::turns(vec![Turn::call("x", serde_json::json!({}))]);
        let tools = serde_json::json!({"tools": [{"type": "function"}]});
        let none = serde_json::json!({"messages": []});
        assert!(s.consumes_turn(&tools));
        assert!(!s.consumes_turn(&none));
        assert_eq!(s.turn_for(&none, 0), Some(Turn::text(SIDE_REQUEST_TEXT)));
        assert_eq!(s.turn_for(&tools, 1), Some(Turn::text(DONE_TEXT)));
        assert!(ModelScript::tokens(1).turn_for(&tools, 0).is_none());
        let w = ModelScript::turn_with(|_| Turn::text("w"));
        assert!(!w.consumes_turn(&tools));
        assert_eq!(w.turn_for(&tools, 7), Some(Turn::text("w")));
    }

    #[test]
    fn model_spec() {
        let (n, s) = parse_model_spec("qwen3:8b:100:50").unwrap();
        assert_eq!(n, "qwen3:8b");
        assert_eq!(s.content.len(), 100);
        assert_eq!(s.token_interval, Duration::from_millis(20));
        let (n, s) = parse_model_spec("m:3:0").unwrap();
        assert_eq!(n, "m");
        assert_eq!(s.token_interval, Duration::ZERO);
        assert!(parse_model_spec("m:3").is_err());
        assert!(parse_model_spec(":3:1").is_err());
        assert!(parse_model_spec("m:x:1").is_err());
        assert!(parse_model_spec("m:3:-1").is_err());
    }
}
