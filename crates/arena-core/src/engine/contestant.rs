//! Running one Q&A contestant: stream the answer with retries, a stall
//! timeout and caps; coalesce deltas into events; record the outcome and
//! write its result file.

use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::battle::{Battle, Benchmark, Contestant, ContestantStatus, Lane, RateSource};
use crate::benchmark::{self, Measurement};
use crate::config::Limits;
use crate::decisions;
use crate::error::Result;
use crate::event::EventKind;
use crate::provider::{ChatRequest, Chunk, Provider, ProviderError, Timings, Usage};
use crate::results;

use super::lane::LaneSlot;
use super::Engine;

/// Live benchmark updates go out at most this often.
const BENCH_EVERY: Duration = Duration::from_millis(500);
/// Flush early when this much text is waiting.
const FLUSH_BYTES: usize = 64 * 1024;

/// Why an attempt stopped early.
enum Stop {
    Cancelled,
    Provider(ProviderError),
    TooLong(Duration),
    Internal(crate::error::Error),
}

impl From<crate::error::Error> for Stop {
    fn from(e: crate::error::Error) -> Self {
        Stop::Internal(e)
    }
}

/// What one attempt collected.
struct Collected {
    attempt_started: Instant,
    content: String,
    reasoning: String,
    pending_content: String,
    pending_reasoning: String,
    deltas: u64,
    first_token: Option<Instant>,
    last_token: Option<Instant>,
    usage: Option<Usage>,
    timings: Option<Timings>,
    truncated: bool,
    /// Whether any output reached viewers (a retry must then reset it).
    emitted: bool,
    last_bench: Instant,
}

impl Collected {
    fn new() -> Collected {
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
            // Q&A requests offer no tools.
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
}

fn request(battle: &Battle, c: &Contestant) -> ChatRequest {
    ChatRequest {
        model: c.model.clone(),
        system: c.run.system_prompt.clone(),
        history: Vec::new(),
        prompt: battle.prompt.clone(),
        temperature: c.run.temperature,
        top_p: c.run.top_p,
        max_tokens: c.run.max_tokens,
        no_prompt_cache: c.lane == Lane::Local,
    }
}

/// How a run ended.
struct Ended {
    status: ContestantStatus,
    error: Option<String>,
    got: Collected,
}

impl Ended {
    fn new(status: ContestantStatus, error: Option<String>, got: Collected) -> Ended {
        Ended { status, error, got }
    }
}

/// Runs a contestant that the scheduler moved to `running`, to a terminal
/// status, holding its lane's slot until the model has answered.
pub(super) async fn run(
    engine: &Engine,
    battle: &Battle,
    c: Contestant,
    token: CancellationToken,
    slot: LaneSlot,
) {
    let span = tracing::info_span!("contestant", battle = %battle.id, contestant = %c.id, model = %c.model);
    let run_started = Instant::now();
    let ended = run_attempts(engine, battle, &c, &token, run_started)
        .instrument(span)
        .await;
    let model_switched = slot.model_switched;
    // It finished before its lane's next holder starts (its `finished_at`
    // never follows the next one's `started_at`).
    let finished_at = engine.now();
    drop(slot);
    let ended = ended.unwrap_or_else(|e| {
        tracing::error!(contestant = %c.id, error = %e, "contestant failed internally");
        Ended::new(
            ContestantStatus::Error,
            Some(format!("internal error: {e}")),
            Collected::new(),
        )
    });
    let mut bench = benchmark::compute(&ended.got.measurement(run_started));
    bench.model_switched = model_switched;
    let price = engine.config().price(&c.provider, &c.model);
    bench.cost_usd = benchmark::call_cost(ended.got.usage.as_ref(), &bench, price.as_ref());
    if let Err(e) = record(engine, battle, &c, ended, bench, finished_at).await {
        tracing::error!(contestant = %c.id, error = %e, "could not record the contestant's end");
    }
}

async fn run_attempts(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    token: &CancellationToken,
    run_started: Instant,
) -> Result<Ended> {
    let limits = engine.config().limits.clone();
    let deadline = run_started + limits.max_duration();
    let Some(provider) = engine.provider(&c.provider) else {
        let message = format!(
            "provider `{}` is no longer in the config; add it back or cancel this contestant",
            c.provider
        );
        return Ok(Ended::new(
            ContestantStatus::Error,
            Some(message),
            Collected::new(),
        ));
    };
    let req = request(battle, c);
    let mut attempt = 1;
    loop {
        let mut got = Collected::new();
        let stopped = stream_once(
            engine, c, &provider, &req, token, deadline, &limits, &mut got,
        )
        .await;
        let failure = match stopped {
            Ok(()) => return Ok(Ended::new(ContestantStatus::Done, None, got)),
            Err(Stop::Cancelled) => return Ok(Ended::new(ContestantStatus::Cancelled, None, got)),
            Err(Stop::Internal(e)) => return Err(e),
            Err(Stop::TooLong(d)) => {
                let message = format!("stopped after {} s (limits.max_duration_secs)", d.as_secs());
                return Ok(Ended::new(ContestantStatus::Error, Some(message), got));
            }
            Err(Stop::Provider(e)) => e,
        };
        if !failure.is_retryable() || attempt >= limits.max_attempts {
            let message = if attempt > 1 {
                format!("{failure} (after {attempt} attempts)")
            } else {
                failure.to_string()
            };
            return Ok(Ended::new(ContestantStatus::Error, Some(message), got));
        }
        let delay = decisions::backoff_delay(
            attempt,
            Duration::from_millis(limits.backoff_base_ms),
            Duration::from_millis(limits.backoff_max_ms),
            rand::thread_rng().gen::<f64>(),
            failure.retry_after(),
        );
        tracing::warn!(contestant = %c.id, attempt, ?delay, error = %failure, "retrying");
        let (c2, at, emitted) = (c.clone(), engine.now(), got.emitted);
        let reason = failure.to_string();
        engine
            .db(move |s| {
                s.transact(|tx| {
                    tx.require_lease(&c2.battle_id)?;
                    if emitted {
                        tx.emit(
                            &c2.battle_id,
                            Some(&c2.id),
                            at,
                            EventKind::Reset {
                                reason: reason.clone(),
                            },
                        )?;
                    }
                    tx.emit(
                        &c2.battle_id,
                        Some(&c2.id),
                        at,
                        EventKind::Retry {
                            attempt: attempt + 1,
                            delay_ms: delay.as_millis() as u64,
                            reason,
                        },
                    )
                })
            })
            .await?;
        tokio::select! {
            _ = token.cancelled() => {
                return Ok(Ended::new(ContestantStatus::Cancelled, None, Collected::new()));
            }
            _ = tokio::time::sleep_until(deadline) => {
                let message = format!("stopped after {} s (limits.max_duration_secs) while waiting to retry: {failure}", limits.max_duration_secs);
                return Ok(Ended::new(ContestantStatus::Error, Some(message), Collected::new()));
            }
            _ = tokio::time::sleep(delay) => {}
        }
        attempt += 1;
    }
}

/// One request: streams until the answer is complete, the cap is reached, or
/// something stops it. Output is flushed to viewers every `coalesce_ms`.
#[allow(clippy::too_many_arguments)]
async fn stream_once(
    engine: &Engine,
    c: &Contestant,
    provider: &Provider,
    req: &ChatRequest,
    token: &CancellationToken,
    deadline: Instant,
    limits: &Limits,
    got: &mut Collected,
) -> std::result::Result<(), Stop> {
    let stall = limits.stall_timeout();
    let coalesce = Duration::from_millis(limits.coalesce_ms.max(1));
    let mut cancelled = pin!(token.cancelled());
    let mut too_long = pin!(tokio::time::sleep_until(deadline));
    let max_duration = limits.max_duration();

    let connected = tokio::select! {
        biased;
        _ = &mut cancelled => return Err(Stop::Cancelled),
        _ = &mut too_long => return Err(Stop::TooLong(max_duration)),
        r = tokio::time::timeout(stall, provider.stream_chat(req)) => r,
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
            _ = &mut too_long => break Err(Stop::TooLong(max_duration)),
            _ = &mut flush_timer, if flush_armed => {
                flush_armed = false;
                flush(engine, c, got).await?;
            }
            item = stream.next() => {
                last_data = Instant::now();
                match item {
                    None => break Ok(()),
                    Some(Err(e)) => break Err(Stop::Provider(e)),
                    Some(Ok(chunk)) => {
                        let fits = got.push(chunk, limits.max_output_bytes);
                        if !fits {
                            break Ok(());
                        }
                        if got.pending() >= FLUSH_BYTES {
                            flush(engine, c, got).await?;
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
    flush(engine, c, got).await?;
    result
}

/// Sends waiting output (and, now and then, a live benchmark) as events.
async fn flush(engine: &Engine, c: &Contestant, got: &mut Collected) -> Result<()> {
    if got.pending() == 0 {
        return Ok(());
    }
    let content = std::mem::take(&mut got.pending_content);
    let reasoning = std::mem::take(&mut got.pending_reasoning);
    let bench = (got.last_bench.elapsed() >= BENCH_EVERY).then(|| {
        got.last_bench = Instant::now();
        live_benchmark(got)
    });
    got.emitted = true;
    let (battle_id, id, at) = (c.battle_id.clone(), c.id.clone(), engine.now());
    engine
        .db(move |s| {
            s.transact(|tx| {
                tx.require_lease(&battle_id)?;
                if !reasoning.is_empty() {
                    tx.emit(
                        &battle_id,
                        Some(&id),
                        at,
                        EventKind::Reasoning { text: reasoning },
                    )?;
                }
                if !content.is_empty() {
                    tx.emit(
                        &battle_id,
                        Some(&id),
                        at,
                        EventKind::Output { text: content },
                    )?;
                }
                if let Some(benchmark) = bench {
                    tx.emit(
                        &battle_id,
                        Some(&id),
                        at,
                        EventKind::Benchmark { benchmark },
                    )?;
                }
                Ok(())
            })
        })
        .await
}

/// Tokens so far and the rate so far, for live display.
fn live_benchmark(got: &Collected) -> Benchmark {
    let now = Instant::now();
    let rate = match got.first_token {
        Some(first) if got.deltas >= 2 && now > first => {
            Some((got.deltas - 1) as f64 / (now - first).as_secs_f64())
        }
        _ => None,
    };
    Benchmark {
        duration_ms: Some((now - got.attempt_started).as_millis() as u64),
        ttft_ms: got
            .first_token
            .map(|t| (t - got.attempt_started).as_millis() as u64),
        completion_tokens: Some(got.deltas),
        tokens_per_sec: rate,
        rate_source: rate.map(|_| RateSource::Measured),
        ..Default::default()
    }
}

/// Records the end of a run (at `at`) and writes its result file.
async fn record(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    ended: Ended,
    bench: Benchmark,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    let c2 = c.clone();
    let Ended { status, error, got } = ended;
    let recorded = engine
        .db(move |s| {
            s.transact(|tx| {
                tx.finish_contestant(
                    &c2,
                    status,
                    error.as_deref(),
                    &got.content,
                    &got.reasoning,
                    got.truncated,
                    &bench,
                    at,
                )
            })
        })
        .await?;
    if recorded {
        tracing::info!(contestant = %c.id, %status, "contestant finished");
        let battle = engine.battle(&battle.id).await?;
        if let Some(c) = battle.contestants.iter().find(|x| x.id == c.id) {
            write_result(engine, &battle, c).await?;
        }
    }
    Ok(())
}

/// Writes `result.md` for a terminal contestant and refreshes the manifest.
pub(super) async fn write_result(engine: &Engine, battle: &Battle, c: &Contestant) -> Result<()> {
    let (b, c2) = (battle.clone(), c.clone());
    let path = tokio::task::spawn_blocking(move || results::write_result(&b, &c2)).await??;
    let (c2, at) = (c.clone(), engine.now());
    engine
        .db(move |s| s.transact(|tx| tx.set_result_path(&c2, &path, at)))
        .await?;
    let battle = engine.battle(&battle.id).await?;
    tokio::task::spawn_blocking(move || results::write_manifest(&battle)).await??;
    Ok(())
}

/// A Q&A contestant's conversation so far, as exchanges: the battle's
/// question and its answer, then each finished round's feedback and answer.
pub(super) fn conversation(
    battle: &Battle,
    c: &Contestant,
    rounds: &[crate::battle::Round],
) -> Vec<crate::provider::Exchange> {
    let mut history = vec![crate::provider::Exchange {
        user: battle.prompt.clone(),
        assistant: c.output.clone().unwrap_or_default(),
    }];
    for r in rounds {
        if r.status == Some(ContestantStatus::Done) {
            history.push(crate::provider::Exchange {
                user: r.feedback.clone(),
                assistant: r.output.clone(),
            });
        }
    }
    history
}

/// Another turn of a finished Q&A contestant, in the same conversation:
/// `round.feedback` is the next message. Streams like a run (in its turn on
/// the contestant's lane, with retries), then records the round and writes
/// `round-<n>/result.md`.
pub(super) async fn continue_turn(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    mut round: crate::battle::Round,
    history: Vec<crate::provider::Exchange>,
    token: &CancellationToken,
) -> Result<crate::battle::Round> {
    let started = Instant::now();
    let mut req = request(battle, c);
    req.history = history;
    req.prompt = round.feedback.clone();
    let reply = super::analyze::turn(engine, battle, c, &req, round.number, token).await;
    round.duration_ms = Some(started.elapsed().as_millis() as u64);
    match reply {
        Ok(reply) => {
            round.status = Some(ContestantStatus::Done);
            round.output = reply.text;
            round.cost_usd = reply.cost;
        }
        Err(crate::error::Error::Cancelled) => round.status = Some(ContestantStatus::Cancelled),
        Err(e) => {
            round.status = Some(ContestantStatus::Error);
            round.error = Some(e.to_string());
        }
    }
    let dir = results::confined(
        &battle.results_path,
        &[
            &results::contestant_dir(c),
            &format!("round-{}", round.number),
        ],
    )?;
    let md = super::coding::render_round(battle, c, &round);
    let file = dir.join(results::RESULT_FILE);
    let f = file.clone();
    tokio::task::spawn_blocking(move || results::write_atomic(&f, md.as_bytes())).await??;
    round.result_path = Some(file);
    round.finished_at = Some(engine.now());
    let (bid, r, at) = (battle.id.clone(), round.clone(), engine.now());
    engine
        .db(move |s| s.transact(|tx| tx.finish_round(&bid, &r, at)))
        .await?;
    Ok(round)
}
