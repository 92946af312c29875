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
//! in llama.cpp's exact chunk shape when `"stream": true`) and
//! `POST /v1/messages` (Anthropic Messages API). Every request is recorded
//! ([`TestServer::requests`]), and its record is updated in place as its
//! response streams.

mod encode;
mod error;
mod record;
mod script;
mod server;
mod stream;

pub use error::Error;
pub use record::RecordedRequest;
pub use script::{parse_model_spec, Fault, ModelScript, Responder, ScriptFile, ScriptFileModel};
pub use server::TestServer;
