//! One model turn, whatever it is for: a contestant's answer, a later turn
//! of its conversation, a digest, a judge's verdict, a goal check, a
//! cross-examination. It waits for its lane (or is handed a slot), streams
//! with retries and backoff, a stall timeout, a time limit and an output
//! cap, and writes its text to its [`Sink`] as it arrives. What the turn is
//! for decides only what is done with the [`Streamed`] result.

use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::battle::{Benchmark, RateSource};
use crate::benchmark::Measurement;
use crate::catalog::Resolved;
use crate::config::Limits;
use crate::decisions;
use crate::error::{Error, Invalid, Result};
use crate::event::EventKind;
use crate::provider::{ChatRequest, Chunk, ProviderError, Timings, Usage};

use super::journal::Sink;
use super::lane::{self, LaneSlot};
use super::Engine;

/// Live benchmark updates go out at most this often.
const BENCH_EVERY: Duration = Duration::from_millis(500);
/// Flush early when this much text is waiting.
const FLUSH_BYTES: usize = 64 * 1024;

/// One model call to make.
pub(super) struct Turn<'a> {
    pub target: Resolved,
    pub request: ChatRequest,
    pub sink: Sink,
    /// How the lane's other waiters see it, when the turn waits itself.
    pub holder: String,
    /// Orders turns that became ready together (a contestant's place).
    pub position: u32,
    pub token: &'a CancellationToken,
}

/// How a turn ended.
pub(super) enum Ending {
    Done,
    Cancelled,
    /// The provider failed for good: not retryable, or out of attempts.
    Failed {
        error: ProviderError,
        attempts: u32,
    },
    /// It ran past `limits.max_duration_secs`; `waiting` is the failure it
    /// was waiting to retry after, if it was.
    TooLong {
        limit: Duration,
        waiting: Option<ProviderError>,
    },
    /// Its provider is no longer in the configuration.
    NoProvider,
    /// Arena itself failed (its database), not the model.
    Internal(Error),
}

impl Ending {
    /// Why it failed, for the user; `None` when it did not.
    pub fn message(&self, provider: &str) -> Option<String> {
        Some(match self {
            Ending::Done | Ending::Cancelled => return None,
            // In the roster's words: "request retried 3×" beside it, not
            // "after 4 attempts" (the same number said two ways).
            Ending::Failed { error, attempts } if *attempts > 1 => {
                format!("{error} (request retried {}×)", attempts - 1)
            }
            Ending::Failed { error, .. } => error.to_string(),
            Ending::TooLong {
                limit,
                waiting: None,
            } => format!(
                "stopped after {} s (limits.max_duration_secs)",
                limit.as_secs()
            ),
            Ending::TooLong {
                limit,
                waiting: Some(failure),
            } => format!(
                "stopped after {} s (limits.max_duration_secs) while waiting to retry: {failure}",
                limit.as_secs()
            ),
            Ending::NoProvider => format!(
                "provider `{provider}` is no longer in the config; add it back or cancel this contestant"
            ),
            Ending::Internal(e) => format!("internal error: {e}"),
        })
    }
}

/// What a turn streamed, and how it ended.
pub(super) struct Streamed {
    pub got: Collected,
    pub ending: Ending,
    /// The local server served another model just before this turn.
    pub model_switched: bool,
    /// When it started streaming (after its wait for the lane).
    pub started: Instant,
    /// When it ended: before its lane's next holder started.
    pub finished_at: chrono::DateTime<chrono::Utc>,
    /// Its lane, still held: dropping it lets the next holder start (a
    /// contestant records its end first, so no two on one local server
    /// ever show as running at once).
    pub slot: Option<LaneSlot>,
}

impl Streamed {
    pub fn measurement(&self) -> Measurement {
        self.got.measurement(self.started)
    }
}

/// What one model call answered, and what it cost (USD; `None` unknown).
pub(super) struct Reply {
    pub text: String,
    pub cost: Option<f64>,
}

/// Runs `turn`: in `slot` when the caller already holds its lane, else
/// after waiting for it (cancelled while waiting, it ends `Cancelled`).
/// The slot comes back in [`Streamed::slot`].
pub(super) async fn run(engine: &Engine, turn: &Turn<'_>, slot: Option<LaneSlot>) -> Streamed {
    let taken = match slot {
        Some(slot) => Ok(Some(slot)),
        None => take_lane(engine, turn).await,
    };
    let started = Instant::now();
    let slot = match taken {
        Ok(Some(slot)) => slot,
        Ok(None) | Err(_) => {
            let ending = match taken {
                Err(e) => Ending::Internal(e),
                _ => Ending::Cancelled,
            };
            return Streamed {
                got: Collected::new(),
                ending,
                model_switched: false,
                started,
                finished_at: engine.now(),
                slot: None,
            };
        }
    };
    let (got, ending) = attempts(engine, turn, started).await;
    // It ends before its lane's next holder starts (its `finished_at`
    // never follows the next one's `started_at`).
    let finished_at = engine.now();
    let model_switched = slot.model_switched;
    // Its events are journaled before its end is recorded: written now,
    // or, when its end is itself a grouped write (a Q&A answer's), queued
    // before it, so that the answers of a battle ending together are one
    // transaction (a sync would cut the journal's gathering short).
    let journaled = if turn.sink.ends_in_queue() {
        turn.sink.check(engine)
    } else {
        turn.sink.sync(engine).await
    };
    let ending = match (journaled, ending) {
        (Err(e), Ending::Done | Ending::Cancelled) => Ending::Internal(e),
        (_, ending) => ending,
    };
    Streamed {
        got,
        ending,
        model_switched,
        started,
        finished_at,
        slot: Some(slot),
    }
}

/// Runs `turn` for its text: the answer and its cost, or why there is none.
pub(super) async fn ask(engine: &Engine, turn: &Turn<'_>) -> Result<Reply> {
    let streamed = run(engine, turn, None).await;
    let message = streamed.ending.message(&turn.target.provider);
    match streamed.ending {
        Ending::Done => {
            let price = engine
                .config()
                .price(&turn.target.provider, &turn.target.model);
            let cost = crate::benchmark::usage_cost(streamed.got.usage.as_ref(), price.as_ref());
            Ok(Reply {
                text: streamed.got.content,
                cost,
            })
        }
        Ending::Cancelled => Err(Error::Cancelled),
        Ending::Failed { error, .. } => Err(error.into()),
        Ending::NoProvider => Err(Invalid::Other(format!(
            "provider `{}` is not configured",
            turn.target.provider
        ))
        .into()),
        Ending::Internal(e) => Err(e),
        Ending::TooLong { .. } => Err(Error::Task(message.unwrap_or_default())),
    }
}

/// Waits for the lane of the turn's model; `None` when cancelled first.
async fn take_lane(engine: &Engine, turn: &Turn<'_>) -> Result<Option<LaneSlot>> {
    let want = lane::Want {
        provider: turn.target.provider.clone(),
        model: turn.target.model.clone(),
        holder: turn.holder.clone(),
        battle_id: Some(turn.sink.battle_id.clone()),
        contestant_id: None,
        ready_at: engine.now(),
        position: turn.position,
    };
    lane::take(engine, want, turn.token).await
}

/// Why an attempt stopped early.
enum Stop {
    Cancelled,
    Provider(ProviderError),
    TooLong,
    Internal(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Internal(e)
    }
}

/// Attempts until one ends the turn; retryable failures wait their backoff
/// (viewers of a contestant's answer see the retry, and a reset of what
/// they already saw).
async fn attempts(engine: &Engine, turn: &Turn<'_>, started: Instant) -> (Collected, Ending) {
    let limits = engine.config().limits.clone();
    let deadline = started + limits.max_duration();
    let Some(provider) = engine.provider(&turn.target.provider) else {
        return (Collected::new(), Ending::NoProvider);
    };
    let mut attempt = 1;
    loop {
        let mut got = Collected::new();
        let stopped = stream_once(engine, turn, &provider, deadline, &limits, &mut got).await;
        let failure = match stopped {
            Ok(()) => return (got, Ending::Done),
            Err(Stop::Cancelled) => return (got, Ending::Cancelled),
            Err(Stop::Internal(e)) => return (got, Ending::Internal(e)),
            Err(Stop::TooLong) => {
                let limit = limits.max_duration();
                return (
                    got,
                    Ending::TooLong {
                        limit,
                        waiting: None,
                    },
                );
            }
            Err(Stop::Provider(e)) => e,
        };
        if !failure.is_retryable() || attempt >= limits.max_attempts {
            let ending = Ending::Failed {
                error: failure,
                attempts: attempt,
            };
            return (got, ending);
        }
        let delay = decisions::backoff_delay(
            attempt,
            Duration::from_millis(limits.backoff_base_ms),
            Duration::from_millis(limits.backoff_max_ms),
            rand::thread_rng().gen::<f64>(),
            failure.retry_after(),
        );
        tracing::warn!(battle = %turn.sink.battle_id, holder = %turn.holder, attempt, ?delay, error = %failure, "retrying");
        if turn.sink.is_answer() {
            let reason = failure.to_string();
            let mut notices = Vec::new();
            if got.emitted {
                notices.push(EventKind::Reset {
                    reason: reason.clone(),
                });
            }
            notices.push(EventKind::Retry {
                attempt: attempt + 1,
                delay_ms: delay.as_millis() as u64,
                reason,
            });
            if let Err(e) = turn.sink.write(engine, notices).await {
                return (Collected::new(), Ending::Internal(e));
            }
        }
        tokio::select! {
            _ = turn.token.cancelled() => return (Collected::new(), Ending::Cancelled),
            _ = tokio::time::sleep_until(deadline) => {
                let ending = Ending::TooLong { limit: limits.max_duration(), waiting: Some(failure) };
                return (Collected::new(), ending);
            }
            _ = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

/// One request: streams until the answer is complete, the cap is reached,
/// or something stops it. Text is flushed to the sink every `coalesce`.
async fn stream_once(
    engine: &Engine,
    turn: &Turn<'_>,
    provider: &crate::provider::Provider,
    deadline: Instant,
    limits: &Limits,
    got: &mut Collected,
) -> std::result::Result<(), Stop> {
    let stall = limits.stall_timeout();
    let coalesce = turn.sink.coalesce(limits, engine.inner.store.watched());
    let mut cancelled = pin!(turn.token.cancelled());
    let mut too_long = pin!(tokio::time::sleep_until(deadline));

    let connected = tokio::select! {
        biased;
        _ = &mut cancelled => return Err(Stop::Cancelled),
        _ = &mut too_long => return Err(Stop::TooLong),
        r = tokio::time::timeout(stall, provider.stream_chat(&turn.request)) => r,
    };
    let mut stream = match connected {
        Err(_) => return Err(Stop::Provider(ProviderError::Stalled(stall))),
        Ok(Err(e)) => return Err(Stop::Provider(e)),
        Ok(Ok(stream)) => stream,
    };

    let mut last_data = Instant::now();
    let mut stall_timer = pin!(tokio::time::sleep(stall));
    let mut flush_timer = pin!(tokio::time::sleep(coalesce));
    let mut flush_armed = false;
    let result = loop {
        tokio::select! {
            biased;
            _ = &mut cancelled => break Err(Stop::Cancelled),
            _ = &mut too_long => break Err(Stop::TooLong),
            _ = &mut flush_timer, if flush_armed => {
                flush_armed = false;
                flush(engine, &turn.sink, got).await?;
            }
            item = stream.next() => {
                last_data = Instant::now();
                match item {
                    None => break Ok(()),
                    Some(Err(e)) => break Err(Stop::Provider(e)),
                    Some(Ok(chunk)) => {
                        if !got.push(chunk, limits.max_output_bytes) {
                            break Ok(());
                        }
                        if got.pending() >= FLUSH_BYTES {
                            flush(engine, &turn.sink, got).await?;
                        } else if !flush_armed && got.pending() > 0 {
                            flush_timer.as_mut().reset(last_data + coalesce);
                            flush_armed = true;
                        }
                    }
                }
            }
            _ = &mut stall_timer => {
                if last_data.elapsed() >= stall {
                    break Err(Stop::Provider(ProviderError::Stalled(stall)));
                }
                stall_timer.as_mut().reset(last_data + stall);
            }
        }
    };
    flush(engine, &turn.sink, got).await?;
    result
}

/// Sends waiting text (and, for an answer now and then, a live benchmark)
/// to the sink.
async fn flush(engine: &Engine, sink: &Sink, got: &mut Collected) -> Result<()> {
    if got.pending() == 0 {
        return Ok(());
    }
    let content = std::mem::take(&mut got.pending_content);
    let reasoning = std::mem::take(&mut got.pending_reasoning);
    let bench = (sink.is_answer() && got.last_bench.elapsed() >= BENCH_EVERY).then(|| {
        got.last_bench = Instant::now();
        got.live_benchmark()
    });
    got.emitted = true;
    let mut kinds = Vec::new();
    if !reasoning.is_empty() {
        kinds.extend(sink.reasoning(reasoning));
    }
    if !content.is_empty() {
        kinds.extend(sink.output(content));
    }
    kinds.extend(bench.map(|benchmark| EventKind::Benchmark { benchmark }));
    sink.write(engine, kinds).await
}

/// What one attempt collected.
pub(super) struct Collected {
    attempt_started: Instant,
    pub content: String,
    pub reasoning: String,
    pending_content: String,
    pending_reasoning: String,
    deltas: u64,
    first_token: Option<Instant>,
    last_token: Option<Instant>,
    pub usage: Option<Usage>,
    timings: Option<Timings>,
    pub truncated: bool,
    /// Whether any output reached viewers (a retry must then reset it).
    emitted: bool,
    last_bench: Instant,
}

impl Collected {
    pub fn new() -> Collected {
        let now = Instant::now();
        Collected {
            attempt_started: now,
            content: String::new(),
            reasoning: String::new(),
            pending_content: String::new(),
            pending_reasoning: String::new(),
            deltas: 0,
            first_token: None,
            last_token: None,
            usage: None,
            timings: None,
            truncated: false,
            emitted: false,
            last_bench: now,
        }
    }

    /// Adds a chunk; returns false once the output cap is reached.
    fn push(&mut self, chunk: Chunk, cap: usize) -> bool {
        let room = cap.saturating_sub(self.content.len() + self.reasoning.len());
        let (text, full, pending) = match chunk {
            Chunk::Content(t) => (t, &mut self.content, &mut self.pending_content),
            Chunk::Reasoning(t) => (t, &mut self.reasoning, &mut self.pending_reasoning),
            Chunk::Usage(u) => {
                self.usage = Some(u);
                return true;
            }
            Chunk::Timings(t) => {
                self.timings = Some(t);
                return true;
            }
            // Turns offer no tools.
            Chunk::ToolCall { .. } => return true,
        };
        let now = Instant::now();
        self.first_token.get_or_insert(now);
        self.last_token = Some(now);
        self.deltas += 1;
        let (text, fits) = if text.len() <= room {
            (text.as_str(), true)
        } else {
            let mut cut = room;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.truncated = true;
            (&text[..cut], false)
        };
        full.push_str(text);
        pending.push_str(text);
        fits
    }

    fn pending(&self) -> usize {
        self.pending_content.len() + self.pending_reasoning.len()
    }

    fn measurement(&self, run_started: Instant) -> Measurement {
        Measurement {
            run_started: run_started.into_std(),
            attempt_started: self.attempt_started.into_std(),
            first_token: self.first_token.map(Instant::into_std),
            last_token: self.last_token.map(Instant::into_std),
            finished: Instant::now().into_std(),
            deltas: self.deltas,
            usage: self.usage,
            timings: self.timings,
        }
    }

    /// Tokens so far and the rate so far, for live display.
    fn live_benchmark(&self) -> Benchmark {
        let now = Instant::now();
        let rate = match self.first_token {
            Some(first) if self.deltas >= 2 && now > first => {
                Some((self.deltas - 1) as f64 / (now - first).as_secs_f64())
            }
            _ => None,
        };
        Benchmark {
            duration_ms: Some((now - self.attempt_started).as_millis() as u64),
            ttft_ms: self
                .first_token
                .map(|t| (t - self.attempt_started).as_millis() as u64),
            completion_tokens: Some(self.deltas),
            tokens_per_sec: rate,
            rate_source: rate.map(|_| RateSource::Measured),
            ..Default::default()
        }
    }
}
