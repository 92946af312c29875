//! A scripted OpenAI/Anthropic-compatible streaming HTTP server for Arena's
//! engine tests and benchmarks.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use arena_testserver::{Fault, ModelScript, TestServer};
//!
//! let server = TestServer::start().await?;
//! server.set_model("fast", ModelScript::tokens(100));
//! server.set_model("slow", ModelScript::text("hello there world").rate(20.0));
//! server.set_model("flaky", ModelScript::default().with_faults(vec![Fault::Status(503)]));
//! // point a client at server.base_url() ...
//! let seen = server.requests_for("fast");
//! # drop(seen);
//! # Ok(())
//! # }
//! ```
//!
//! Endpoints: `GET /v1/models`, `POST /v1/chat/completions` (OpenAI, streamed
//! in llama.cpp's exact chunk shape when `"stream": true`),
//! `POST /v1/messages` (Anthropic Messages API) and `POST /v1/responses`
//! (OpenAI Responses API). Every request is recorded
//! ([`TestServer::requests`]), and its record is updated in place as its
//! response streams.
//!
//! Tool-calling agents (Qwen Code and OpenCode on chat completions, Claude
//! Code on messages, Codex CLI on responses) are driven with turn scripts:
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use arena_testserver::{tool_results, ModelScript, TestServer, ToolCall, Turn};
//! use serde_json::json;
//!
//! let server = TestServer::start().await?;
//! // Request 1 (with tools) writes a file, request 2 says it is done.
//! server.set_model("agent", ModelScript::turns(vec![
//!     Turn::ToolCalls {
//!         text: Some("Writing it.".into()),
//!         calls: vec![ToolCall::new("write_file", json!({"path": "a.txt", "content": "hi"}))],
//!     },
//!     Turn::text("All done."),
//! ]));
//! // Or decided from the conversation so far:
//! server.set_model("agent2", ModelScript::turn_with(|body| {
//!     if tool_results(body) == 0 {
//!         Turn::call("write_file", json!({"path": "a.txt", "content": "hi"}))
//!     } else {
//!         Turn::text("done")
//!     }
//! }));
//! # Ok(())
//! # }
//! ```
//!
//! Requests without `tools` (an agent's title generation, summaries) are
//! answered `"Arena test"` by turn scripts and do not consume a turn.

mod encode;
mod error;
mod judge;
mod record;
mod script;
mod server;
mod stream;
mod turn;

pub use error::Error;
pub use record::{most_at_once, Flush, RecordedRequest};
pub use script::{parse_model_spec, Fault, ModelScript, Responder, ScriptFile, ScriptFileModel};
pub use server::TestServer;
pub use turn::{has_tools, tool_results, ToolCall, Turn, TurnScript, DONE_TEXT, SIDE_REQUEST_TEXT};
