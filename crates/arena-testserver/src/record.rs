//! Request recording.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use crate::Fault;

/// One request the server received, updated in place while its response streams.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `"POST"`.
    pub method: String,
    /// Request path without the query string, e.g. `"/v1/chat/completions"`.
    pub path: String,
    /// The body's `"model"` field, if any.
    pub model: Option<String>,
    /// The parsed JSON body; `Null` for GET (or an empty body), a JSON string
    /// holding the raw text if the body is not valid JSON.
    pub body: serde_json::Value,
    /// Request headers, names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    /// When the request (headers and body) had been received.
    pub received_at: Instant,
    /// When the first response body byte was produced; `None` if the request
    /// ended in an error status (or the client left before any byte). For a
    /// non-streaming completion, when its (simulated) generation started.
    pub stream_started_at: Option<Instant>,
    /// When the response body ended or the client dropped it.
    pub stream_finished_at: Option<Instant>,
    /// Which fault was applied, if any.
    pub fault: Option<Fault>,
    /// Every body frame of a streamed response that carried token deltas, in
    /// order: how many deltas had been sent once it was handed to the HTTP
    /// layer, and the wall-clock time of that (for latency measurements
    /// against another process's clock, e.g. a webview's).
    pub flushes: Vec<Flush>,
}

/// One body frame of a streamed response, see [`RecordedRequest::flushes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flush {
    /// Token deltas sent so far, this frame's included (reasoning, content
    /// and tool-call argument pieces, counted as the faults count them).
    pub tokens: usize,
    /// When the frame was handed to the HTTP layer.
    pub at: SystemTime,
}

/// The most generation requests that were streaming at the same moment
/// (first response byte to end of body), from the server's own record:
/// 1 means they ran strictly one after another. Requests that never
/// streamed do not count; touching intervals do not overlap.
pub fn most_at_once(requests: &[RecordedRequest]) -> usize {
    let mut edges: Vec<(Instant, i32)> = Vec::new();
    for r in requests.iter().filter(|r| r.is_generation()) {
        if let (Some(start), Some(end)) = (r.stream_started_at, r.stream_finished_at) {
            edges.push((start, 1));
            edges.push((end, -1));
        }
    }
    // Ends sort before starts at the same instant.
    edges.sort_by_key(|(at, delta)| (*at, *delta));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, delta) in edges {
        now += delta;
        most = most.max(now);
    }
    most as usize
}

impl RecordedRequest {
    /// Whether this is a generation request: chat completions, messages or responses.
    pub fn is_generation(&self) -> bool {
        is_generation_path(&self.path)
    }

    /// When token delta `index` (0-based, in stream order) was sent: the
    /// time of the first flush that included it; `None` if it never was.
    pub fn token_sent_at(&self, index: usize) -> Option<SystemTime> {
        let i = self.flushes.partition_point(|f| f.tokens <= index);
        self.flushes.get(i).map(|f| f.at)
    }

    /// The value of header `name` (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The API paths the server serves.
pub(crate) const MODELS_PATH: &str = "/v1/models";
pub(crate) const CHAT_PATH: &str = "/v1/chat/completions";
pub(crate) const MESSAGES_PATH: &str = "/v1/messages";
pub(crate) const RESPONSES_PATH: &str = "/v1/responses";

/// Whether a request to `path` asks for a generation (and is recorded).
pub(crate) fn is_generation_path(path: &str) -> bool {
    path == CHAT_PATH || path == MESSAGES_PATH || path == RESPONSES_PATH
}

/// The shared request log. Entries are addressed by a sequence number that
/// stays valid (or becomes stale, and is then ignored) across [`RequestLog::clear`].
#[derive(Default)]
pub(crate) struct RequestLog {
    inner: Mutex<LogInner>,
}

#[derive(Default)]
struct LogInner {
    /// Sequence number of `entries[0]`.
    first_seq: u64,
    entries: Vec<RecordedRequest>,
}

impl RequestLog {
    fn lock(&self) -> MutexGuard<'_, LogInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `req` and returns its sequence number.
    pub(crate) fn push(&self, req: RecordedRequest) -> u64 {
        let mut log = self.lock();
        log.entries.push(req);
        log.first_seq + log.entries.len() as u64 - 1
    }

    pub(crate) fn update(&self, seq: u64, f: impl FnOnce(&mut RecordedRequest)) {
        let mut log = self.lock();
        let Some(idx) = seq.checked_sub(log.first_seq) else {
            return;
        };
        if let Some(r) = usize::try_from(idx)
            .ok()
            .and_then(|i| log.entries.get_mut(i))
        {
            f(r);
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<RecordedRequest> {
        self.lock().entries.clone()
    }

    pub(crate) fn snapshot_for(&self, model: &str) -> Vec<RecordedRequest> {
        self.lock()
            .entries
            .iter()
            .filter(|r| r.is_generation() && r.model.as_deref() == Some(model))
            .cloned()
            .collect()
    }

    pub(crate) fn clear(&self) {
        let mut log = self.lock();
        log.first_seq += log.entries.len() as u64;
        log.entries.clear();
    }
}

/// Tracks the response of one recorded request; records
/// `stream_finished_at` when dropped (body ended, client gone, or server
/// shutting down), unless already set.
pub(crate) struct ResponseGuard {
    log: Arc<RequestLog>,
    seq: u64,
    started: bool,
}

impl ResponseGuard {
    pub(crate) fn new(log: Arc<RequestLog>, seq: u64) -> Self {
        ResponseGuard {
            log,
            seq,
            started: false,
        }
    }

    /// Records the first response byte being produced (only the first call counts).
    pub(crate) fn started(&mut self) {
        if !self.started {
            self.started = true;
            let now = Instant::now();
            self.log.update(self.seq, |r| {
                r.stream_started_at.get_or_insert(now);
            });
        }
    }

    pub(crate) fn set_fault(&self, fault: Option<Fault>) {
        self.log.update(self.seq, |r| r.fault = fault);
    }

    /// Records a body frame carrying tokens: `tokens` sent so far, now.
    pub(crate) fn flushed(&self, tokens: usize) {
        let at = SystemTime::now();
        self.log
            .update(self.seq, |r| r.flushes.push(Flush { tokens, at }));
    }
}

impl Drop for ResponseGuard {
    fn drop(&mut self) {
        let now = Instant::now();
        self.log.update(self.seq, |r| {
            r.stream_finished_at.get_or_insert(now);
        });
    }
}
