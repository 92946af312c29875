//! The HTTP server: routing, model registry, responses.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::encode::{AnthropicEncoder, Encoder, OpenAiEncoder, ResponsesEncoder, Stats};
use crate::record::{
    RecordedRequest, RequestLog, ResponseGuard, CHAT_PATH, MESSAGES_PATH, MODELS_PATH,
    RESPONSES_PATH,
};
use crate::stream::{
    due, fault_cutoff, ms, sleep_until, sse_stream, tokens, total_tokens, StreamPlan,
};
use crate::turn::PlannedCall;
use crate::{Fault, ModelScript, ScriptFile};

/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A scripted OpenAI/Anthropic-compatible server on a loopback port.
///
/// Cheap to clone; the server stops when [`TestServer::shutdown`] is called
/// or the last clone is dropped. In-flight streams are then aborted.
#[derive(Clone)]
pub struct TestServer {
    inner: Arc<Inner>,
}

struct Inner {
    state: Arc<AppState>,
    addr: SocketAddr,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.state.cancel.cancel();
    }
}

/// State shared by the handle and the request handlers.
struct AppState {
    models: Mutex<BTreeMap<String, ModelEntry>>,
    log: Arc<RequestLog>,
    cancel: CancellationToken,
    next_id: AtomicU64,
    /// Reads a request's body by its `Content-Length` only, as Python's
    /// `http.server` (and the small servers built on it) does: a body
    /// without one is not read (`411 Length Required`).
    length_only: std::sync::atomic::AtomicBool,
}

struct ModelEntry {
    script: Arc<ModelScript>,
    /// Generation requests served since the script was set (indexes `faults`).
    served: usize,
    /// Turns of a turn sequence consumed since the script was set.
    turns_served: usize,
}

impl AppState {
    fn models(&self) -> MutexGuard<'_, BTreeMap<String, ModelEntry>> {
        self.models.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The script for `model`, the fault for this request (consuming it)
    /// and the index of the turn it answers (consuming the turn when the
    /// request is answered without a fault).
    fn take_script(
        &self,
        model: &str,
        body: &Value,
    ) -> Option<(Arc<ModelScript>, Option<Fault>, usize)> {
        let mut models = self.models();
        let entry = models.get_mut(model)?;
        let fault = entry.script.faults.get(entry.served).cloned();
        entry.served += 1;
        let turn = entry.turns_served;
        if fault.is_none() && entry.script.consumes_turn(body) {
            entry.turns_served += 1;
        }
        Some((Arc::clone(&entry.script), fault, turn))
    }

    fn next_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        format!("{:08x}{n:08x}", unix_secs() & 0xffff_ffff)
    }
}

impl TestServer {
    /// Binds 127.0.0.1:0 and serves in a background tokio task until
    /// dropped or shut down. Must be called inside a tokio runtime.
    pub async fn start() -> io::Result<TestServer> {
        TestServer::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await
    }

    /// Like [`TestServer::start`] but on the given address.
    pub async fn bind(addr: SocketAddr) -> io::Result<TestServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(AppState {
            models: Mutex::new(BTreeMap::new()),
            log: Arc::new(RequestLog::default()),
            cancel: CancellationToken::new(),
            next_id: AtomicU64::new(1),
            length_only: std::sync::atomic::AtomicBool::new(false),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("set_nodelay failed: {e}");
            }
        });
        let stop = state.cancel.clone().cancelled_owned();
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(stop)
                .await
            {
                tracing::warn!("arena-testserver stopped with an error: {e}");
            }
        });
        tracing::debug!("arena-testserver listening on {addr}");
        Ok(TestServer {
            inner: Arc::new(Inner { state, addr }),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The OpenAI-style base URL, `"http://127.0.0.1:PORT/v1"`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.inner.addr)
    }

    /// Registers or replaces the script for a model id (also listed by
    /// `/v1/models`). Replacing a script restarts its fault sequence.
    pub fn set_model(&self, model: &str, script: ModelScript) {
        self.inner.state.models().insert(
            model.to_string(),
            ModelEntry {
                script: Arc::new(script),
                served: 0,
                turns_served: 0,
            },
        );
    }

    /// Reads request bodies by their `Content-Length` only (a server on
    /// Python's `http.server`): a request with a body and no length (a
    /// chunked one) gets `411 Length Required` (and is not recorded).
    pub fn require_content_length(&self, on: bool) {
        self.inner.state.length_only.store(on, Ordering::Relaxed);
    }

    /// Unregisters a model; returns whether it was registered.
    pub fn remove_model(&self, model: &str) -> bool {
        self.inner.state.models().remove(model).is_some()
    }

    /// The registered model ids, sorted.
    pub fn models(&self) -> Vec<String> {
        self.inner.state.models().keys().cloned().collect()
    }

    /// Registers every model of a script file.
    pub fn apply_script_file(&self, file: &ScriptFile) {
        for (name, script) in file.scripts() {
            self.set_model(&name, script);
        }
    }

    /// Every request received so far (all paths), in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.state.log.snapshot()
    }

    /// Only the generation requests (chat completions, messages, responses)
    /// whose body `"model"` equals `model`.
    pub fn requests_for(&self, model: &str) -> Vec<RecordedRequest> {
        self.inner.state.log.snapshot_for(model)
    }

    /// Forgets the recorded requests (in-flight ones stop being updated).
    pub fn clear_requests(&self) {
        self.inner.state.log.clear();
    }

    /// Stops the server: no new connections, in-flight streams are aborted.
    /// Also happens when the last clone is dropped.
    pub fn shutdown(&self) {
        self.inner.state.cancel.cancel();
    }

    /// Resolves once [`TestServer::shutdown`] has been called.
    pub async fn stopped(&self) {
        self.inner.state.cancel.cancelled().await;
    }
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestServer")
            .field("addr", &self.inner.addr)
            .field("models", &self.models())
            .finish()
    }
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Which API an endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    OpenAi,
    Anthropic,
    Responses,
}

async fn handle(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let unframed = !parts
        .headers
        .contains_key(axum::http::header::CONTENT_LENGTH)
        && parts
            .headers
            .contains_key(axum::http::header::TRANSFER_ENCODING);
    if unframed && state.length_only.load(Ordering::Relaxed) {
        return (
            axum::http::StatusCode::LENGTH_REQUIRED,
            "this server reads a body by its Content-Length only\n",
        )
            .into_response();
    }
    let (raw, read_error) = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => (b, None),
        Err(e) => (Bytes::new(), Some(e.to_string())),
    };
    let parsed: Result<Value, String> = if raw.is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_slice(&raw).map_err(|e| e.to_string())
    };
    let body = match &parsed {
        Ok(v) => v.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&raw).into_owned()),
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    let received_at = Instant::now();
    let seq = state.log.push(RecordedRequest {
        method: parts.method.as_str().to_string(),
        path: path.clone(),
        model: model.clone(),
        body,
        headers,
        received_at,
        stream_started_at: None,
        stream_finished_at: None,
        fault: None,
        flushes: Vec::new(),
    });
    let mut guard = ResponseGuard::new(Arc::clone(&state.log), seq);

    let api = match path.as_str() {
        MODELS_PATH if parts.method == Method::GET => {
            guard.started();
            return list_models(&state);
        }
        CHAT_PATH if parts.method == Method::POST => Api::OpenAi,
        MESSAGES_PATH if parts.method == Method::POST => Api::Anthropic,
        RESPONSES_PATH if parts.method == Method::POST => Api::Responses,
        MODELS_PATH | CHAT_PATH | MESSAGES_PATH | RESPONSES_PATH => {
            return error_response(
                Api::OpenAi,
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("method {} not allowed on {path}", parts.method),
            );
        }
        _ => {
            let api = if path.contains("messages") {
                Api::Anthropic
            } else {
                Api::OpenAi
            };
            return error_response(
                api,
                StatusCode::NOT_FOUND,
                &format!("no route for {} {path}", parts.method),
            );
        }
    };
    if let Some(e) = read_error {
        return error_response(
            api,
            StatusCode::BAD_REQUEST,
            &format!("cannot read body: {e}"),
        );
    }
    let body = match parsed {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return error_response(
                api,
                StatusCode::BAD_REQUEST,
                "request body must be a JSON object",
            )
        }
        Err(e) => {
            return error_response(
                api,
                StatusCode::BAD_REQUEST,
                &format!("invalid JSON body: {e}"),
            )
        }
    };
    let Some(model) = model else {
        return error_response(api, StatusCode::BAD_REQUEST, "missing \"model\"");
    };
    generate(&state, api, &body, &model, guard, received_at).await
}

fn list_models(state: &AppState) -> Response {
    let data: Vec<Value> = state
        .models()
        .keys()
        .map(
            |id| json!({"id": id, "object": "model", "created": 0, "owned_by": "arena-testserver"}),
        )
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

fn error_type(api: Api, status: StatusCode) -> &'static str {
    let code = status.as_u16();
    if api == Api::Anthropic {
        match code {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            500.. => "api_error",
            _ => "invalid_request_error",
        }
    } else {
        match code {
            401 => "authentication_error",
            403 => "permission_error",
            429 => "rate_limit_error",
            500.. => "server_error",
            _ => "invalid_request_error",
        }
    }
}

/// An error in the endpoint's JSON shape.
fn error_response(api: Api, status: StatusCode, message: &str) -> Response {
    let kind = error_type(api, status);
    let body = match api {
        Api::OpenAi | Api::Responses => json!({"error": {"message": message, "type": kind}}),
        Api::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
    };
    (status, axum::Json(body)).into_response()
}

async fn generate(
    state: &AppState,
    api: Api,
    body: &Value,
    model: &str,
    guard: ResponseGuard,
    received_at: Instant,
) -> Response {
    let Some((script, fault, turn)) = state.take_script(model, body) else {
        return error_response(
            api,
            StatusCode::NOT_FOUND,
            &format!("model '{model}' not found"),
        );
    };
    let prefix = match api {
        Api::OpenAi => "chatcmpl-",
        Api::Anthropic => "msg_",
        Api::Responses => "resp_",
    };
    let base = state.next_id();
    let id = format!("{prefix}{base}");
    let (script, calls) = script.for_request(body, turn, |i, call| {
        let call_id = match api {
            Api::OpenAi | Api::Responses => format!("call_{base}_{i}"),
            Api::Anthropic => format!("toolu_{base}_{i}"),
        };
        PlannedCall::new(call, call_id, format!("fc_{base}_{i}"))
    });
    let calls: Arc<[PlannedCall]> = calls.into();
    guard.set_fault(fault.clone());
    match fault {
        Some(Fault::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return error_response(
                api,
                status,
                &format!("injected fault: HTTP {}", status.as_u16()),
            );
        }
        Some(Fault::RateLimit { retry_after_secs }) => {
            let mut resp = error_response(
                api,
                StatusCode::TOO_MANY_REQUESTS,
                &format!("injected fault: rate limited, retry after {retry_after_secs}s"),
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            return resp;
        }
        _ => {}
    }
    let created = unix_secs();
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if !streaming {
        return complete(
            state,
            api,
            &id,
            created,
            model,
            script,
            calls,
            fault,
            guard,
            received_at,
        )
        .await;
    }
    let encoder = match api {
        Api::OpenAi => {
            let include_usage = body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Encoder::OpenAi(OpenAiEncoder::new(
                &id,
                created,
                model,
                include_usage && script.usage,
                script.timings,
                Arc::clone(&calls),
            ))
        }
        Api::Anthropic => Encoder::Anthropic(AnthropicEncoder::new(
            &id,
            model,
            script.prompt_tokens,
            Arc::clone(&calls),
        )),
        Api::Responses => Encoder::Responses(ResponsesEncoder::new(
            &id,
            created,
            model,
            script.prompt_tokens,
            Arc::clone(&calls),
        )),
    };
    let stream = sse_stream(StreamPlan {
        script,
        calls,
        fault,
        encoder,
        guard,
        cancel: state.cancel.clone(),
        received_at,
    });
    let mut resp = Response::new(Body::from_stream(stream));
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// A non-streaming response: waits as long as the stream would take, then
/// answers with the whole completion (or applies the stream fault to the body).
#[allow(clippy::too_many_arguments)]
async fn complete(
    state: &AppState,
    api: Api,
    id: &str,
    created: u64,
    model: &str,
    script: Arc<ModelScript>,
    calls: Arc<[PlannedCall]>,
    fault: Option<Fault>,
    mut guard: ResponseGuard,
    received_at: Instant,
) -> Response {
    guard.started();
    let total = total_tokens(&script, &calls);
    let sent = fault_cutoff(fault.as_ref()).map_or(total, |n| n.min(total));
    let t0 = tokio::time::Instant::now() + script.first_token_delay;
    let first_at = received_at + script.first_token_delay;
    let end = due(t0, script.token_interval, sent.saturating_sub(1));
    if !sleep_until(end, &state.cancel).await {
        return error_response(
            api,
            StatusCode::SERVICE_UNAVAILABLE,
            "test server shutting down",
        );
    }
    match fault {
        Some(Fault::DisconnectAfter(_)) => {
            let stream = async_stream::stream! {
                let _guard = guard;
                yield Ok::<_, io::Error>(Bytes::from_static(b"{\"id\":"));
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                yield Err(io::Error::new(io::ErrorKind::ConnectionAborted, "injected fault: disconnect"));
            };
            return json_body_response(Body::from_stream(stream));
        }
        Some(Fault::MalformedAfter(_)) => {
            return json_body_response(Body::from("{not json"));
        }
        Some(Fault::StallAfter(_)) => {
            let cancel = state.cancel.clone();
            let stream = async_stream::stream! {
                let _guard = guard;
                cancel.cancelled().await;
                yield Err::<Bytes, _>(io::Error::new(io::ErrorKind::ConnectionAborted, "test server shutting down"));
            };
            return json_body_response(Body::from_stream(stream));
        }
        _ => {}
    }
    let now = Instant::now();
    let stats = Stats {
        prompt_tokens: script.prompt_tokens,
        completion_tokens: sent as u64,
        prompt_ms: ms(first_at.saturating_duration_since(received_at)),
        predicted_ms: ms(now.saturating_duration_since(first_at)),
        cost: script.cost,
    };
    let reasoning: String = script.reasoning.concat();
    let content: String = script.content.concat();
    let body = match api {
        Api::OpenAi => {
            let mut message = json!({"role": "assistant", "content": content});
            if !script.reasoning.is_empty() {
                message["reasoning_content"] = Value::String(reasoning);
            }
            let finish_reason = if calls.is_empty() {
                "stop"
            } else {
                if script.content.is_empty() {
                    message["content"] = Value::Null;
                }
                message["tool_calls"] = calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        })
                    })
                    .collect();
                "tool_calls"
            };
            let mut body = json!({
                "id": id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            });
            if script.usage {
                body["usage"] = stats.usage_json();
            }
            if script.timings {
                body["timings"] = stats.timings_json();
            }
            body
        }
        Api::Anthropic => {
            let mut blocks = Vec::new();
            if !script.reasoning.is_empty() {
                blocks.push(json!({"type": "thinking", "thinking": reasoning, "signature": ""}));
            }
            if calls.is_empty() || !script.content.is_empty() {
                blocks.push(json!({"type": "text", "text": content}));
            }
            for c in calls.iter() {
                let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                blocks.push(
                    json!({"type": "tool_use", "id": c.call_id, "name": c.name, "input": input}),
                );
            }
            json!({
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
                "stop_sequence": null,
                "usage": {"input_tokens": script.prompt_tokens, "output_tokens": sent},
            })
        }
        Api::Responses => {
            let mut encoder =
                ResponsesEncoder::new(id, created, model, script.prompt_tokens, Arc::clone(&calls));
            for (kind, text) in tokens(&script, &calls) {
                encoder.push_token(kind, text);
            }
            encoder.completed_response(&stats)
        }
    };
    let resp = axum::Json(body).into_response();
    drop(guard);
    resp
}

fn json_body_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}
