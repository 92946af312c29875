//! A Q&A contestant: its answer as one [`turn`], then further turns of the
//! same conversation; each recorded with its benchmark and written to its
//! result file.

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::battle::{Battle, Benchmark, Contestant, ContestantStatus, Lane, Round};
use crate::benchmark;
use crate::catalog::Resolved;
use crate::error::{Error, Result};
use crate::provider::{ChatRequest, Exchange};
use crate::store::AnswerEnd;

use super::journal::Sink;
use super::lane::{self, LaneSlot};
use super::turn::{self, Ending, Streamed, Turn};
use super::{files, Engine};

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

fn target(c: &Contestant) -> Resolved {
    Resolved {
        provider: c.provider.clone(),
        model: c.model.clone(),
        lane: c.lane,
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
    let turn = Turn {
        target: target(&c),
        request: request(battle, &c),
        sink: Sink::folding_answer(&battle.id, &c.id),
        holder: String::new(),
        position: crate::blind::queue_place(battle, &c),
        token: &token,
    };
    let streamed = turn::run(engine, &turn, Some(slot)).instrument(span).await;
    if let Ending::Internal(e) = &streamed.ending {
        tracing::error!(contestant = %c.id, error = %e, "contestant failed internally");
    }
    if let Err(e) = record(engine, battle, &c, streamed).await {
        tracing::error!(contestant = %c.id, error = %e, "could not record the contestant's end");
    }
}

/// Records the end of a run with its benchmark and its result file: the
/// file is written first, from the answer in hand, so that its end, its
/// text and the file's path are one transaction (a run killed before it
/// commits runs again and writes the file again).
async fn record(engine: &Engine, battle: &Battle, c: &Contestant, s: Streamed) -> Result<()> {
    let mut bench: Benchmark = benchmark::compute(&s.measurement());
    bench.model_switched = s.model_switched;
    let price = engine.config().price(&c.provider, &c.model);
    bench.cost_usd = benchmark::call_cost(s.got.usage.as_ref(), &bench, price.as_ref());
    let status = match s.ending {
        Ending::Done => ContestantStatus::Done,
        Ending::Cancelled => ContestantStatus::Cancelled,
        _ => ContestantStatus::Error,
    };
    let error = s.ending.message(&c.provider);
    let ended = Contestant {
        status,
        error: error.clone(),
        finished_at: Some(s.finished_at),
        output: Some(s.got.content.clone()),
        reasoning: Some(s.got.reasoning.clone()),
        truncated: s.got.truncated,
        benchmark: bench.clone(),
        ..c.clone()
    };
    let written = files::write_result_file(battle, &ended).await;
    let path = written.as_ref().ok().cloned();
    let (c2, at, got, slot) = (c.clone(), s.finished_at, s.got, s.slot);
    let ticket = slot.as_ref().and_then(LaneSlot::ticket);
    let now = engine.now();
    // Answers that end together are recorded in one transaction, and with
    // the last of them the battle's end (its drive then finds it ended);
    // each gives its lane's ticket back in it too.
    let recorded = engine
        .grouped(move |tx| {
            if let Some(ticket) = ticket {
                tx.release_ticket(ticket)?;
            }
            let end = AnswerEnd {
                status,
                error: error.as_deref(),
                output: &got.content,
                reasoning: &got.reasoning,
                truncated: got.truncated,
                bench: &bench,
                result_path: path.as_deref(),
            };
            // Its text is kept once: in its row, not as deltas too.
            if !tx.end_answer(&c2, &end, at)? {
                return Ok(None);
            }
            tx.finish_if_over(&c2.battle_id, now)?;
            Ok(Some(tx.is_masked(&c2.battle_id)?))
        })
        .await;
    // Its end is recorded, and its ticket given back with it: the lane's
    // next holder may start. Not recorded, the slot gives its ticket back
    // alone.
    match (&recorded, slot) {
        (Ok(_), Some(slot)) => slot.given_back(),
        (_, slot) => drop(slot),
    }
    let rendered_masked = battle.is_masked();
    match recorded {
        Ok(Some(masked)) => {
            tracing::info!(contestant = %c.id, %status, "contestant finished");
            // The file was refused, or a reveal came in between: written
            // again from what is recorded.
            if written.is_err() || masked != rendered_masked {
                rewrite_result(engine, battle, c).await?;
            }
            Ok(())
        }
        // Someone else ended it (a cancel); the file says what it recorded.
        Ok(None) => rewrite_result(engine, battle, c).await,
        Err(e) => {
            // Not recorded: it runs again, and writes its file again.
            if let Ok(path) = &written {
                let _ = tokio::fs::remove_file(path).await;
            }
            Err(e)
        }
    }
}

/// Writes a terminal contestant's result file again from its row.
async fn rewrite_result(engine: &Engine, battle: &Battle, c: &Contestant) -> Result<()> {
    let battle = engine.battle(&battle.id).await?;
    match battle.contestants.iter().find(|x| x.id == c.id) {
        Some(c) if c.status.is_terminal() => files::write_result(engine, &battle, c).await,
        _ => Ok(()),
    }
}

/// A Q&A contestant's conversation so far, as exchanges: the battle's
/// question and its answer, then each finished round's feedback and answer.
pub(super) fn conversation(battle: &Battle, c: &Contestant, rounds: &[Round]) -> Vec<Exchange> {
    let mut history = vec![Exchange {
        user: battle.prompt.clone(),
        assistant: c.output.clone().unwrap_or_default(),
    }];
    for r in rounds {
        if r.status == Some(ContestantStatus::Done) {
            history.push(Exchange {
                user: r.feedback.clone(),
                assistant: r.output.clone(),
            });
        }
    }
    history
}

/// Another turn of a finished Q&A contestant, in the same conversation:
/// `round.feedback` is the next message. Streams as the contestant's
/// output (in its turn on the contestant's lane, with retries), then
/// records the round and writes `round-<n>/result.md`.
pub(super) async fn continue_turn(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    mut round: Round,
    history: Vec<Exchange>,
    token: &CancellationToken,
) -> Result<Round> {
    let started = std::time::Instant::now();
    let mut request = request(battle, c);
    request.history = history;
    request.prompt = round.feedback.clone();
    let turn = Turn {
        target: target(c),
        request,
        sink: Sink::round(&battle.id, &c.id),
        holder: format!(
            "{}, {} (round {})",
            lane::battle_name(battle),
            crate::blind::seat_name(battle, c),
            round.number
        ),
        position: crate::blind::queue_place(battle, c),
        token,
    };
    let reply = turn::ask(engine, &turn).await;
    round.duration_ms = Some(started.elapsed().as_millis() as u64);
    match reply {
        Ok(reply) => {
            round.status = Some(ContestantStatus::Done);
            round.output = reply.text;
            round.cost_usd = reply.cost;
        }
        Err(Error::Cancelled) => round.status = Some(ContestantStatus::Cancelled),
        Err(e) => {
            round.status = Some(ContestantStatus::Error);
            round.error = Some(e.to_string());
        }
    }
    files::finish_round(engine, battle, c, round, None).await
}
