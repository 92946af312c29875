//! Running one Coding contestant: its own git worktree, the agent (the
//! built-in `native` one or a CLI agent in its own process group), then the
//! diff against the base commit, the optional check command, and the result
//! files (`result.md`, `diff.patch`).

use std::path::Path;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::backends;
use crate::agent::native::{self, NativeAgent};
use crate::agent::process::{self, Launch, Line};
use crate::battle::{
    Battle, Benchmark, CheckResult, Contestant, ContestantStatus, DiffSummary, Lane,
};
use crate::error::{Error, Invalid, Result};
use crate::event::EventKind;
use crate::provider::Usage;
use crate::{diff, results};

use super::fresh::check_change;
use super::journal::{Piece, Sink};
use super::lane::{self, LaneSlot};
use super::launch::{self, Reach, Scratch};
use super::workspace::{ensure_worktree, watch_changes, Workspace};
use super::{files, Engine};

/// What an agent run produced.
struct AgentRun {
    explanation: String,
    usage: Option<Usage>,
    /// Why it failed, if it did.
    error: Option<String>,
    cancelled: bool,
}

/// Runs a Coding contestant the scheduler moved to `running`; `slot` is its
/// lane, held while the agent works (not during the diff and the check).
pub(super) async fn run(
    engine: &Engine,
    battle: &Battle,
    c: Contestant,
    token: CancellationToken,
    slot: LaneSlot,
) {
    let span = tracing::info_span!("coding", battle = %battle.id, contestant = %c.id, backend = %c.identity);
    if let Err(e) = run_inner(engine, battle, &c, &token, slot)
        .instrument(span)
        .await
    {
        tracing::error!(contestant = %c.id, error = %e, "coding contestant failed");
        // A full disk: the reserve's room is given back, so that this end,
        // with its reason, can be written (its worktree stays).
        let message = if super::reserve::disk_full(&e) {
            super::reserve::release(engine);
            format!(
                "Arena could not record this contestant's work: the disk it keeps its data on \
                 is full ({e}); its worktree is kept, free some space"
            )
        } else {
            e.to_string()
        };
        let _ = record(
            engine,
            battle,
            &c,
            Outcome {
                status: ContestantStatus::Error,
                error: Some(message),
                explanation: String::new(),
                bench: Benchmark::default(),
                diff: None,
                check: None,
                environment: None,
            },
        )
        .await;
    }
}

struct Outcome {
    status: ContestantStatus,
    error: Option<String>,
    explanation: String,
    bench: Benchmark,
    diff: Option<diff::Diff>,
    check: Option<CheckResult>,
    /// The environment its agent and check saw ([`Workspace::environment_line`]).
    environment: Option<String>,
}

async fn run_inner(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    token: &CancellationToken,
    slot: LaneSlot,
) -> Result<()> {
    let started = Instant::now();
    let model_switched = slot.model_switched;
    let base = battle
        .base_commit
        .clone()
        .ok_or_else(|| Error::Task(format!("battle {} has no base commit", battle.id)))?;
    let path = ensure_worktree(engine, battle, c, &base).await?;
    let Work {
        run,
        diff,
        check,
        environment,
    } = work(engine, battle, c, &path, &battle.prompt, &base, token, slot).await?;
    let mut bench = Benchmark {
        duration_ms: Some(started.elapsed().as_millis() as u64),
        prompt_tokens: run.usage.and_then(|u| u.prompt_tokens),
        completion_tokens: run.usage.and_then(|u| u.completion_tokens),
        model_switched,
        ..Default::default()
    };
    let price = engine.config().price(&c.provider, &c.model);
    bench.cost_usd = crate::benchmark::call_cost(run.usage.as_ref(), &bench, price.as_ref());
    let status = if run.cancelled {
        ContestantStatus::Cancelled
    } else if run.error.is_some() {
        ContestantStatus::Error
    } else {
        ContestantStatus::Done
    };
    record(
        engine,
        battle,
        c,
        Outcome {
            status,
            error: run.error,
            explanation: run.explanation,
            bench,
            diff: Some(diff),
            check,
            environment,
        },
    )
    .await
}

/// What one agent run in a worktree produced.
struct Work {
    run: AgentRun,
    diff: diff::Diff,
    check: Option<CheckResult>,
    environment: Option<String>,
}

/// Runs the agent on `prompt` in `path` while watching the files it
/// touches, then gives the lane back, takes the diff against `base` and
/// runs the check.
#[allow(clippy::too_many_arguments)]
async fn work(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    path: &Path,
    prompt: &str,
    base: &str,
    token: &CancellationToken,
    slot: LaneSlot,
) -> Result<Work> {
    let workspace = Workspace::of(engine, battle, (path, &c.id), base, token).await?;
    let watch = watch_changes(engine, c, path);
    let run = match crate::backend::Agent::parse(&c.identity) {
        Some(crate::backend::Agent::Native) => {
            run_native(engine, c, &workspace, prompt, token).await
        }
        _ => run_cli(engine, c, &workspace, prompt, token).await,
    };
    drop(slot);
    if let Some(watch) = watch {
        watch.finish().await;
    }
    // The agent's output and files are journaled before its end.
    Sink::answer(&c.battle_id, &c.id).sync(engine).await?;
    let run = run?;
    workspace.restore(engine).await?;
    let diff = workspace.diff(engine, token).await?;
    // The verdict is computed on what would be applied: the check runs on
    // the change applied to a fresh tree of the base, never here.
    let check = match (&battle.check_command, run.error.is_none() && !run.cancelled) {
        (Some(command), true) => {
            Some(check_change(engine, battle, c, &workspace, &diff, command, token).await)
        }
        _ => None,
    };
    let environment = workspace.environment_line().await;
    Ok(Work {
        run,
        diff,
        check,
        environment,
    })
}

async fn run_native(
    engine: &Engine,
    c: &Contestant,
    workspace: &Workspace,
    prompt: &str,
    token: &CancellationToken,
) -> Result<AgentRun> {
    let path = workspace.path.as_path();
    let provider = engine
        .provider(&c.provider)
        .ok_or_else(|| Invalid::Other(format!("provider `{}` is not configured", c.provider)))?;
    let limits = engine.config().limits.clone();
    // Its commands run sandboxed, with no network at all.
    let scratch = Scratch::create(&engine.data_dir().join("agents").join(&c.id))?;
    let sandbox = launch::agent_sandbox(engine, scratch.path(), workspace.offline())?;
    let agent = NativeAgent {
        provider: &provider,
        model: c.model.clone(),
        worktree: path.to_path_buf(),
        max_steps: limits.native_max_steps,
        command_timeout: Duration::from_secs(limits.native_command_timeout_secs),
        stall: limits.stall_timeout(),
        local: c.lane == Lane::Local,
        sandbox,
        max_file_bytes: Some(limits.max_file_bytes),
    };
    let (tx, forward) = Sink::answer(&c.battle_id, &c.id).forwarder(engine);
    let result = agent
        .run(prompt, token, |event| {
            let piece = match event {
                native::Event::Text(text) => Piece::Text(text),
                native::Event::Tool { name, summary, ok } => {
                    Piece::Event(EventKind::Tool { name, summary, ok })
                }
            };
            let _ = tx.send(piece);
        })
        .await;
    drop(tx);
    let _ = forward.await;
    Ok(match result {
        Ok(outcome) => AgentRun {
            explanation: outcome.explanation,
            usage: Some(outcome.usage),
            error: None,
            cancelled: false,
        },
        Err(native::NativeError::Cancelled) => AgentRun {
            explanation: String::new(),
            usage: None,
            error: None,
            cancelled: true,
        },
        Err(native::NativeError::Provider(e)) => AgentRun {
            explanation: String::new(),
            usage: None,
            error: Some(e.to_string()),
            cancelled: false,
        },
    })
}

/// How to launch a CLI backend for one task; writes its private config
/// files into its scratch folder (removed when the returned guard drops).
fn cli_launch(
    engine: &Engine,
    endpoint: Option<backends::Endpoint>,
    c: &Contestant,
    workspace: &Workspace,
    prompt: &str,
) -> Result<(Launch, Scratch, backends::OutputFormat)> {
    let path = workspace.path.as_path();
    let config = engine.config();
    let custom = config.backends.iter().find(|b| b.name == c.identity);
    let scratch = engine.data_dir().join("agents").join(&c.id);
    let (endpoint, door) = launch::through_door(engine, endpoint);
    let plan = backends::Backend::of(&c.identity, custom)
        .and_then(|backend| {
            backends::plan(backend, &c.model, prompt, path, &scratch, endpoint.as_ref())
        })
        .map_err(Invalid::Other)?;
    let output = plan.output;
    let connect = launch::reachable(&plan, endpoint.as_ref());
    let work = Reach {
        connect,
        door,
        ..workspace.offline()
    };
    let (launch, scratch) = launch::prepare(engine, &c.identity, plan, work, &scratch)?;
    Ok((launch, scratch, output))
}

async fn run_cli(
    engine: &Engine,
    c: &Contestant,
    workspace: &Workspace,
    prompt: &str,
    token: &CancellationToken,
) -> Result<AgentRun> {
    let endpoint = engine.agent_endpoint(&c.provider).await;
    let (launch, _scratch, format) = cli_launch(engine, endpoint, c, workspace, prompt)?;
    let (tx, forward) = Sink::answer(&c.battle_id, &c.id).forwarder(engine);
    let mut final_answer: Option<String> = None;
    let exit = process::run(&launch, token, |line| {
        let Line::Stdout(l) = line else { return };
        match format {
            backends::OutputFormat::Lines => {
                let _ = tx.send(Piece::Text(format!("{l}\n")));
            }
            backends::OutputFormat::ClaudeStreamJson => {
                for piece in backends::parse_claude_line(&l) {
                    let piece = match piece {
                        backends::Piece::Text(text) => Piece::Text(text),
                        backends::Piece::Tool { name, summary } => Piece::Event(EventKind::Tool {
                            name,
                            summary,
                            ok: true,
                        }),
                        backends::Piece::Final(text) => {
                            final_answer = Some(text);
                            continue;
                        }
                    };
                    let _ = tx.send(piece);
                }
            }
        }
    })
    .await;
    drop(tx);
    let output = forward.await.unwrap_or_default();
    let explanation = final_answer.unwrap_or(output);
    Ok(match exit {
        Ok(exit) if exit.success() => AgentRun {
            explanation,
            usage: None,
            error: None,
            cancelled: false,
        },
        Ok(exit) => AgentRun {
            explanation,
            usage: None,
            error: (!exit.cancelled).then(|| exit.describe(&c.identity)),
            cancelled: exit.cancelled,
        },
        Err(e) => AgentRun {
            explanation,
            usage: None,
            error: Some(e.to_string()),
            cancelled: false,
        },
    })
}

/// A diff's counts, and the files it names without their content.
fn summarize(d: &diff::Diff) -> DiffSummary {
    DiffSummary {
        files: d.stats.files,
        insertions: d.stats.insertions,
        deletions: d.stats.deletions,
        omitted: d
            .files
            .iter()
            .filter_map(|f| f.omitted.as_ref().map(|why| format!("{}: {why}", f.path)))
            .collect(),
        environment: None,
    }
}

/// Records the outcome, then writes `diff.patch` and `result.md`.
async fn record(engine: &Engine, battle: &Battle, c: &Contestant, outcome: Outcome) -> Result<()> {
    let Outcome {
        status,
        error,
        explanation,
        bench,
        diff,
        check,
        environment,
    } = outcome;
    let summary = diff.as_ref().map(|d| DiffSummary {
        environment,
        ..summarize(d)
    });
    // The patch is on disk before the contestant is `done`: a crash in
    // between leaves a contestant that runs again, never one without a diff.
    if let Some(d) = &diff {
        let dir = results::confined(&battle.results_path, &[&results::contestant_dir(c)])?;
        files::write_all(vec![(dir.join(results::DIFF_FILE), d.patch.clone())]).await?;
    }
    let (c2, at) = (c.clone(), engine.now());
    let (summary2, check2) = (summary.clone(), check.clone());
    let patch = diff.map(|d| d.patch);
    let recorded = engine
        .db(move |s| {
            s.transact(|tx| {
                // In the database too, for every machine of a team.
                if let Some(patch) = &patch {
                    tx.put_patch(&c2.id, 1, patch)?;
                }
                tx.set_diff_and_check(&c2, summary2.as_ref(), check2.as_ref())?;
                tx.finish_contestant(
                    &c2,
                    status,
                    error.as_deref(),
                    &explanation,
                    "",
                    false,
                    &bench,
                    at,
                )
            })
        })
        .await?;
    if !recorded {
        return Ok(());
    }
    let battle = engine.battle(&battle.id).await?;
    let Some(c) = battle.contestants.iter().find(|x| x.id == c.id).cloned() else {
        return Ok(());
    };
    files::write_result(engine, &battle, &c).await
}

/// The task for a refinement round: the original prompt, what the agent
/// said last time, and the user's feedback. (Agents' own session resume is
/// not used: every backend gets the same, self-contained follow-up.)
fn refine_prompt(prompt: &str, previous: &str, feedback: &str) -> String {
    format!(
        "{prompt}\n\nYou have already worked on this task in this repository; your changes are in \
         the working tree. What you reported last time:\n{}\n\nThe reviewer's feedback:\n{feedback}\n\n\
         Continue from the current state of the files and address the feedback.",
        previous.trim()
    )
}

/// Runs refinement round `round` of a finished Coding contestant in its own
/// worktree; writes `round-<n>/result.md` and `round-<n>/diff.patch`.
pub(super) async fn refine(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    mut round: crate::battle::Round,
    previous: &str,
    token: &CancellationToken,
) -> Result<crate::battle::Round> {
    let started = Instant::now();
    let base = battle
        .base_commit
        .clone()
        .ok_or_else(|| Error::Task(format!("battle {} has no base commit", battle.id)))?;
    let path = c.worktree.clone().filter(|p| p.exists()).ok_or_else(|| {
        Error::Conflict(format!(
            "contestant {}'s worktree is gone (pruned?); it cannot be refined",
            c.id
        ))
    })?;
    let prompt = refine_prompt(&battle.prompt, previous, &round.feedback);
    let want = lane::Want {
        provider: c.provider.clone(),
        model: c.model.clone(),
        holder: format!(
            "{}, {} (refine round {})",
            lane::battle_name(battle),
            crate::blind::seat_name(battle, c),
            round.number
        ),
        battle_id: Some(battle.id.clone()),
        contestant_id: None,
        ready_at: engine.now(),
        position: crate::blind::queue_place(battle, c),
    };
    let outcome = match lane::take(engine, want, token).await {
        Ok(Some(slot)) => Some(work(engine, battle, c, &path, &prompt, &base, token, slot).await),
        Ok(None) => None,
        Err(e) => Some(Err(e)),
    };
    round.duration_ms = Some(started.elapsed().as_millis() as u64);
    let diff = match outcome {
        // Cancelled while waiting for its lane.
        None => {
            round.status = Some(ContestantStatus::Cancelled);
            None
        }
        Some(Ok(Work {
            run,
            diff,
            check,
            environment,
        })) => {
            round.status = Some(if run.cancelled {
                ContestantStatus::Cancelled
            } else if run.error.is_some() {
                ContestantStatus::Error
            } else {
                ContestantStatus::Done
            });
            round.error = run.error;
            round.output = run.explanation;
            round.diff = Some(DiffSummary {
                environment,
                ..summarize(&diff)
            });
            round.check = check;
            Some(diff)
        }
        Some(Err(e)) => {
            round.status = Some(ContestantStatus::Error);
            round.error = Some(e.to_string());
            None
        }
    };
    files::finish_round(engine, battle, c, round, diff.map(|d| d.patch)).await
}
