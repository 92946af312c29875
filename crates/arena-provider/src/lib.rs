//! Talking to model servers: streaming chat in the OpenAI-compatible and
//! Anthropic Messages dialects, and model discovery through `/models`.
//!
//! A provider turns one [`ChatRequest`] into a stream of [`Chunk`]s. It knows
//! nothing of battles; retries, stall timeouts and caps live in the runner.

mod anthropic;
pub mod catalog;
pub mod keychain;
mod openai;
mod sse;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use serde::Deserialize;

use crate::keychain::Secret;
pub use arena_domain::benchmark::{Timings, Usage};
use arena_domain::config::{ProviderConfig, ProviderKind};

/// Why a provider call failed; [`ProviderError::is_retryable`] says whether
/// another attempt may succeed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ProviderError {
    #[error("cannot reach {url}: {message}")]
    Connect { url: String, message: String },
    #[error("{url} answered HTTP {status}: {message}")]
    Status {
        url: String,
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("the stream broke off: {0}")]
    Dropped(String),
    #[error("malformed stream data: {0}")]
    Malformed(String),
    #[error("the server reported an error: {0}")]
    Api(String),
    #[error("stalled: no data for {} s (limits.stall_timeout_secs)", .0.as_secs())]
    Stalled(Duration),
}

impl ProviderError {
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Connect { .. } | ProviderError::Dropped(_) => true,
            ProviderError::Status { status, .. } => *status == 429 || *status >= 500,
            ProviderError::Malformed(_) | ProviderError::Api(_) | ProviderError::Stalled(_) => {
                false
            }
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// One chat turn: an optional system prompt and the user's prompt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub system: Option<String>,
    /// Earlier exchanges of the conversation, oldest first: each the user's
    /// message and the model's answer. Empty for a fresh question.
    pub history: Vec<Exchange>,
    pub prompt: String,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u64>,
    /// Ask a llama.cpp server not to reuse its prompt cache, so speed figures
    /// are comparable between contestants. Sent only to local providers.
    pub no_prompt_cache: bool,
}

/// One earlier exchange of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    pub user: String,
    pub assistant: String,
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Content(String),
    Reasoning(String),
    Usage(Usage),
    Timings(Timings),
    /// A piece of a tool call: the first piece of call `index` carries its id
    /// and name, later ones more of its JSON arguments.
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
}

/// A message of a tool-using conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    System(String),
    User(String),
    Assistant {
        content: String,
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        call_id: String,
        content: String,
    },
}

/// A complete tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// JSON text, as the model wrote it.
    pub arguments: String,
}

/// A tool the model may call: its JSON Schema parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: serde_json::Value,
}

/// A tool-using conversation (OpenAI-compatible providers).
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub no_prompt_cache: bool,
}

pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<Chunk, ProviderError>> + Send>>;

/// Where a provider's API key comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The environment variable named by `api_key_env`.
    Env,
    /// The OS keychain (see [`crate::keychain`]).
    Keychain,
}

/// A configured provider plus the HTTP client to reach it.
#[derive(Debug, Clone)]
pub struct Provider {
    pub config: ProviderConfig,
    client: reqwest::Client,
    /// The keychain entry, looked up once (clones share it); a new
    /// configuration makes new providers, hence a new lookup.
    stored_key: Arc<tokio::sync::OnceCell<Option<Secret>>>,
}

impl Provider {
    pub fn new(config: ProviderConfig, client: reqwest::Client) -> Provider {
        Provider {
            config,
            client,
            stored_key: Arc::default(),
        }
    }

    /// The API key and where it came from: the `api_key_env` variable when
    /// it is set, else the provider's keychain entry, else none. A keychain
    /// that cannot be reached counts as no entry (logged once, at debug).
    pub async fn api_key(&self) -> Option<(KeySource, Secret)> {
        if let Some(key) = self.config.env_api_key() {
            return Some((KeySource::Env, Secret::new(key)));
        }
        let stored = self
            .stored_key
            .get_or_init(|| async {
                let name = self.config.name.clone();
                let lookup = tokio::task::spawn_blocking(move || keychain::get(&name)).await;
                match lookup {
                    Ok(Ok(key)) => key,
                    Ok(Err(err)) => {
                        tracing::debug!(provider = %self.config.name, %err, "no key from the keychain");
                        None
                    }
                    Err(err) => {
                        tracing::debug!(provider = %self.config.name, %err, "keychain lookup failed");
                        None
                    }
                }
            })
            .await;
        stored.clone().map(|key| (KeySource::Keychain, key))
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.config.base_url.trim_end_matches('/'), path)
    }

    /// Starts a streaming chat. Resolves once the server accepted the request
    /// (HTTP 2xx); errors before that are returned here.
    pub async fn stream_chat(&self, req: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        match self.config.kind {
            ProviderKind::Openai => openai::stream_chat(self, req).await,
            ProviderKind::Anthropic => anthropic::stream_chat(self, req).await,
        }
    }

    /// Streams one turn of a tool-using conversation. Only OpenAI-compatible
    /// providers support this (the native agent's dialect).
    pub async fn stream_conversation(
        &self,
        req: &Conversation,
    ) -> Result<ChunkStream, ProviderError> {
        match self.config.kind {
            ProviderKind::Openai => openai::stream_body(self, &openai::conversation_body(req)).await,
            ProviderKind::Anthropic => Err(ProviderError::Api(format!(
                "provider `{}` speaks the Anthropic API; the native agent needs an OpenAI-compatible provider",
                self.config.name
            ))),
        }
    }

    /// The models the server reports, plus any listed in the config.
    pub async fn list_models(&self, timeout: Duration) -> Result<Vec<String>, ProviderError> {
        let url = self.url("models");
        let request = self.authorise(self.client.get(&url).timeout(timeout)).await;
        let response = send(request, &url).await?;
        #[derive(Deserialize)]
        struct Listing {
            data: Vec<Entry>,
        }
        #[derive(Deserialize)]
        struct Entry {
            id: String,
        }
        let listing: Listing = response
            .json()
            .await
            .map_err(|e| ProviderError::Malformed(format!("{url}: {e}")))?;
        let mut models: Vec<String> = listing.data.into_iter().map(|e| e.id).collect();
        for m in &self.config.models {
            if !models.contains(m) {
                models.push(m.clone());
            }
        }
        Ok(models)
    }

    async fn authorise(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let key = self.api_key().await.map(|(_, key)| key);
        match (self.config.kind, key) {
            (ProviderKind::Openai, Some(key)) => request.bearer_auth(key.expose()),
            (ProviderKind::Anthropic, key) => {
                let request = request.header("anthropic-version", "2023-06-01");
                match key {
                    Some(key) => request.header("x-api-key", key.expose()),
                    None => request,
                }
            }
            (ProviderKind::Openai, None) => request,
        }
    }
}

/// Sends a request; maps transport failures and non-2xx answers to errors.
async fn send(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<reqwest::Response, ProviderError> {
    let response = request.send().await.map_err(|e| ProviderError::Connect {
        url: url.to_string(),
        message: error_chain(&e),
    })?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = response.text().await.unwrap_or_default();
    Err(ProviderError::Status {
        url: url.to_string(),
        status: status.as_u16(),
        retry_after,
        message: error_message(&body),
    })
}

/// The most useful line of an error body: `error.message` when it is JSON.
fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    let mut text: String = text.chars().take(500).collect();
    if text.is_empty() {
        text = "(no body)".into();
    }
    text
}

/// reqwest hides the useful part ("connection refused") in its source chain.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_errors() {
        let status = |s| ProviderError::Status {
            url: "u".into(),
            status: s,
            retry_after: None,
            message: String::new(),
        };
        assert!(status(429).is_retryable());
        assert!(status(503).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(!status(404).is_retryable());
        assert!(ProviderError::Dropped("x".into()).is_retryable());
        assert!(!ProviderError::Malformed("x".into()).is_retryable());
        assert!(!ProviderError::Stalled(Duration::from_secs(1)).is_retryable());
    }

    #[test]
    fn error_bodies_are_summarised() {
        assert_eq!(
            error_message(r#"{"error":{"message":"model not found","type":"x"}}"#),
            "model not found"
        );
        assert_eq!(error_message("plain text\n"), "plain text");
        assert_eq!(error_message(""), "(no body)");
    }
}
