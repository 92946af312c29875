//! The paced, batched token stream shared by all endpoints.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::Stream;
use tokio_util::sync::CancellationToken;

use crate::encode::{Encoder, Stats, TokenKind};
use crate::record::ResponseGuard;
use crate::turn::PlannedCall;
use crate::{Fault, ModelScript};

/// At most this many events go into one body frame when tokens are due at once.
const BATCH_EVENTS: usize = 64;
/// ... or this many bytes.
const BATCH_BYTES: usize = 32 * 1024;
/// Pause before aborting a connection, so the bytes sent before the fault
/// are flushed to the socket first.
const DISCONNECT_FLUSH_PAUSE: Duration = Duration::from_millis(20);

/// Everything one streamed response needs.
pub(crate) struct StreamPlan {
    pub script: Arc<ModelScript>,
    /// Tool calls streamed after the content.
    pub calls: Arc<[PlannedCall]>,
    pub fault: Option<Fault>,
    pub encoder: Encoder,
    pub guard: ResponseGuard,
    pub cancel: CancellationToken,
    pub received_at: Instant,
}

/// Every token delta of a response in order: reasoning, content, then the
/// argument pieces of each tool call.
pub(crate) fn tokens<'a>(
    script: &'a ModelScript,
    calls: &'a [PlannedCall],
) -> impl Iterator<Item = (TokenKind, &'a str)> + 'a {
    script
        .reasoning
        .iter()
        .map(|t| (TokenKind::Reasoning, t.as_str()))
        .chain(
            script
                .content
                .iter()
                .map(|t| (TokenKind::Content, t.as_str())),
        )
        .chain(calls.iter().enumerate().flat_map(|(i, c)| {
            c.pieces
                .iter()
                .map(move |p| (TokenKind::ToolArgs(i), p.as_str()))
        }))
}

/// The number of token deltas [`tokens`] yields.
pub(crate) fn total_tokens(script: &ModelScript, calls: &[PlannedCall]) -> usize {
    script.total_tokens() + calls.iter().map(|c| c.pieces.len()).sum::<usize>()
}

/// How many tokens a fault lets through before it strikes (`None` = no
/// stream fault).
pub(crate) fn fault_cutoff(fault: Option<&Fault>) -> Option<usize> {
    match fault {
        Some(Fault::DisconnectAfter(n) | Fault::MalformedAfter(n) | Fault::StallAfter(n)) => {
            Some(*n)
        }
        _ => None,
    }
}

/// The due time of token `i` on the absolute schedule starting at `t0`.
pub(crate) fn due(t0: tokio::time::Instant, interval: Duration, i: usize) -> tokio::time::Instant {
    let n = u32::try_from(i).unwrap_or(u32::MAX);
    interval
        .checked_mul(n)
        .and_then(|d| t0.checked_add(d))
        .unwrap_or_else(|| t0 + Duration::from_secs(86_400 * 365))
}

/// Sleeps until `deadline` unless it has passed; returns false if the
/// server shut down meanwhile.
pub(crate) async fn sleep_until(
    deadline: tokio::time::Instant,
    cancel: &CancellationToken,
) -> bool {
    if deadline <= tokio::time::Instant::now() {
        return !cancel.is_cancelled();
    }
    tokio::select! {
        _ = tokio::time::sleep_until(deadline) => true,
        _ = cancel.cancelled() => false,
    }
}

fn shutdown_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "test server shutting down",
    )
}

/// The SSE body: preamble, paced tokens (batched when several are due),
/// then the finish events or the fault.
pub(crate) fn sse_stream(
    plan: StreamPlan,
) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
    async_stream::stream! {
        let StreamPlan { script, calls, fault, mut encoder, mut guard, cancel, received_at } = plan;
        let mut buf = BytesMut::with_capacity(BATCH_BYTES + 4096);

        encoder.preamble(&mut buf);
        guard.started();
        yield Ok(buf.split().freeze());

        let total = total_tokens(&script, &calls);
        let limit = fault_cutoff(fault.as_ref()).map_or(total, |n| n.min(total));
        let interval = script.token_interval;
        let paced = !interval.is_zero();
        let t0 = tokio::time::Instant::now() + script.first_token_delay;
        if !sleep_until(t0, &cancel).await {
            yield Err(shutdown_error());
            return;
        }

        let tokens = tokens(&script, &calls).take(limit);
        let mut first_sent: Option<Instant> = None;
        let mut last_sent: Option<Instant> = None;
        let mut batched = 0usize;
        let mut sent = 0usize;
        for (i, (kind, text)) in tokens.enumerate() {
            if paced && i > 0 && !sleep_until(due(t0, interval, i), &cancel).await {
                yield Err(shutdown_error());
                return;
            }
            encoder.token(&mut buf, kind, text);
            let now = Instant::now();
            first_sent.get_or_insert(now);
            last_sent = Some(now);
            batched += 1;
            sent = i + 1;
            let next_not_due = paced && due(t0, interval, i + 1) > tokio::time::Instant::now();
            if next_not_due || batched >= BATCH_EVENTS || buf.len() >= BATCH_BYTES {
                batched = 0;
                if cancel.is_cancelled() {
                    yield Err(shutdown_error());
                    return;
                }
                guard.flushed(sent);
                yield Ok(buf.split().freeze());
            }
        }
        // Tokens still in the buffer go out with the next frame, whichever
        // way the stream ends below (without an await before it).
        if batched > 0 {
            guard.flushed(sent);
        }

        match fault {
            Some(Fault::DisconnectAfter(_)) => {
                if !buf.is_empty() {
                    yield Ok(buf.split().freeze());
                }
                let pause = tokio::time::Instant::now() + DISCONNECT_FLUSH_PAUSE;
                let _ = sleep_until(pause, &cancel).await;
                yield Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "injected fault: disconnect",
                ));
                return;
            }
            Some(Fault::MalformedAfter(_)) => {
                encoder.malformed(&mut buf);
                yield Ok(buf.split().freeze());
                return;
            }
            Some(Fault::StallAfter(_)) => {
                if !buf.is_empty() {
                    yield Ok(buf.split().freeze());
                }
                // Hyper drops this stream when the client goes away.
                cancel.cancelled().await;
                yield Err(shutdown_error());
                return;
            }
            _ => {}
        }

        let finished = Instant::now();
        let stats = Stats {
            prompt_tokens: script.prompt_tokens,
            completion_tokens: limit as u64,
            prompt_ms: ms(first_sent.unwrap_or(finished).saturating_duration_since(received_at)),
            predicted_ms: match (first_sent, last_sent) {
                (Some(a), Some(b)) => ms(b.saturating_duration_since(a)),
                _ => 0.0,
            },
            cost: script.cost,
        };
        encoder.finish(&mut buf, &stats);
        yield Ok(buf.split().freeze());
        drop(guard);
    }
}

/// A duration in fractional milliseconds.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
