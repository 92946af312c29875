//! Analysis and cross-examination: the I/O half (model calls, storage,
//! files). The prompts, parsing and decisions are in `crate::analysis` and
//! `crate::cross_exam`.

use std::time::{Duration, Instant};

use futures::StreamExt;
use rand::seq::SliceRandom;

use crate::analysis::{
    self, Analysis, AnalysisStatus, Digest, Fence, JudgeItem, JudgeRun, Outcome,
};
use crate::battle::{Battle, ContestantStatus, Winner, WinnerSource};
use crate::catalog::Resolved;
use crate::cross_exam::{self, CrossExamination};
use crate::decisions;
use crate::error::{Error, Invalid, Result};
use crate::event::EventKind;
use crate::provider::{ChatRequest, Chunk, ProviderError};
use crate::results;
use crate::store::Work;

use super::lane::{self, LaneSlot};
use super::Engine;
use tokio_util::sync::CancellationToken;

/// How often streamed analysis text is flushed as an event.
const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// What a model call is for, to label its streamed text.
struct Stage<'a> {
    battle_id: &'a str,
    kind: StageKind<'a>,
    /// Cancelled when the user stops the analysis or cross-examination.
    token: &'a CancellationToken,
}

enum StageKind<'a> {
    Analysis {
        id: &'a str,
        stage: String,
    },
    CrossExam {
        id: &'a str,
    },
    /// A series' goal judge: its text is not streamed.
    Goal {
        contestant: &'a str,
    },
    /// Another turn of a Q&A contestant: its text streams as the
    /// contestant's output.
    Turn {
        contestant: &'a str,
        position: u32,
        number: u32,
    },
}

impl Stage<'_> {
    /// How the lane's other waiters see this call.
    fn holder(&self) -> String {
        let battle = lane::battle_name(self.battle_id);
        match &self.kind {
            StageKind::Analysis { stage, .. } => match stage.split_once(' ') {
                Some(("digest", _)) => format!("{battle}, analysis (digest)"),
                _ => format!("{battle}, analysis ({stage})"),
            },
            StageKind::CrossExam { .. } => format!("{battle}, cross-examination"),
            StageKind::Goal { contestant } => {
                format!("{battle}, goal check of {}", lane::battle_name(contestant))
            }
            StageKind::Turn {
                position, number, ..
            } => format!("{battle}, contestant {} (round {number})", position + 1),
        }
    }
}

/// What one model call answered, and what it cost (USD; `None` unknown).
pub(super) struct Reply {
    pub text: String,
    pub cost: Option<f64>,
}

/// Waits for the lane of `target`'s provider, as `holder`; `position`
/// orders calls that became ready together.
async fn take_lane(
    engine: &Engine,
    target: &Resolved,
    battle_id: &str,
    holder: String,
    position: u32,
) -> Result<LaneSlot> {
    let want = lane::Want {
        provider: target.provider.clone(),
        model: target.model.clone(),
        holder,
        battle_id: Some(battle_id.to_string()),
        contestant_id: None,
        ready_at: engine.now(),
        position,
    };
    // Nothing cancels an analysis yet, so the wait ends with a slot.
    let never = tokio_util::sync::CancellationToken::new();
    lane::take(engine, want, &never)
        .await?
        .ok_or_else(|| Error::Task("waiting for the lane was cancelled".into()))
}

/// One streamed completion with retries and a stall timeout, in its turn on
/// the model's lane; its text goes to the battle's event stream as it arrives.
async fn call(
    engine: &Engine,
    target: &Resolved,
    req: &ChatRequest,
    stage: &Stage<'_>,
    position: u32,
) -> Result<Reply> {
    // Cancelled, the call (and its wait for the lane) is dropped.
    tokio::select! {
        biased;
        _ = stage.token.cancelled() => Err(Error::Cancelled),
        text = call_in_turn(engine, target, req, stage, position) => text,
    }
}

async fn call_in_turn(
    engine: &Engine,
    target: &Resolved,
    req: &ChatRequest,
    stage: &Stage<'_>,
    position: u32,
) -> Result<Reply> {
    let provider = engine.provider(&target.provider).ok_or_else(|| {
        Invalid::Other(format!("provider `{}` is not configured", target.provider))
    })?;
    let _slot = take_lane(engine, target, stage.battle_id, stage.holder(), position).await?;
    let limits = engine.config().limits.clone();
    let mut attempt = 1;
    loop {
        match stream_text(engine, &provider, req, stage, limits.stall_timeout()).await {
            Ok((text, usage)) => {
                let price = engine.config().price(&target.provider, &target.model);
                let cost = crate::benchmark::usage_cost(usage.as_ref(), price.as_ref());
                return Ok(Reply { text, cost });
            }
            Err(Error::Provider(e)) if e.is_retryable() && attempt < limits.max_attempts => {
                let delay = decisions::backoff_delay(
                    attempt,
                    Duration::from_millis(limits.backoff_base_ms),
                    Duration::from_millis(limits.backoff_max_ms),
                    rand::random::<f64>(),
                    e.retry_after(),
                );
                tracing::warn!(attempt, ?delay, error = %e, "analysis call failed; retrying");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn stream_text(
    engine: &Engine,
    provider: &crate::provider::Provider,
    req: &ChatRequest,
    stage: &Stage<'_>,
    stall: Duration,
) -> Result<(String, Option<crate::provider::Usage>)> {
    let mut stream = tokio::time::timeout(stall, provider.stream_chat(req))
        .await
        .map_err(|_| ProviderError::Stalled(stall))??;
    let mut text = String::new();
    let mut usage = None;
    let mut pending = String::new();
    let mut last_flush = Instant::now();
    loop {
        let next = tokio::time::timeout(stall, stream.next())
            .await
            .map_err(|_| ProviderError::Stalled(stall))?;
        match next {
            None => break,
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(Chunk::Content(t))) => {
                text.push_str(&t);
                pending.push_str(&t);
            }
            Some(Ok(Chunk::Usage(u))) => usage = Some(u),
            Some(Ok(_)) => {}
        }
        if !pending.is_empty() && last_flush.elapsed() >= FLUSH_EVERY {
            emit_text(engine, stage, std::mem::take(&mut pending)).await?;
            last_flush = Instant::now();
        }
    }
    if !pending.is_empty() {
        emit_text(engine, stage, pending).await?;
    }
    Ok((text, usage))
}

async fn emit_text(engine: &Engine, stage: &Stage<'_>, text: String) -> Result<()> {
    let kind = match &stage.kind {
        StageKind::Analysis { id, stage } => EventKind::AnalysisOutput {
            analysis_id: id.to_string(),
            stage: stage.clone(),
            text,
        },
        StageKind::CrossExam { id } => EventKind::CrossExamOutput {
            cross_exam_id: id.to_string(),
            text,
        },
        StageKind::Goal { .. } => return Ok(()),
        StageKind::Turn { .. } => EventKind::Output { text },
    };
    let contestant = match &stage.kind {
        StageKind::Turn { contestant, .. } => Some(contestant.to_string()),
        _ => None,
    };
    let (battle_id, at) = (stage.battle_id.to_string(), engine.now());
    engine
        .db(move |s| {
            s.transact(|tx| {
                tx.emit(&battle_id, contestant.as_deref(), at, kind)
                    .map(|_| ())
            })
        })
        .await
}

/// The analysis model: the override, else `default_model`, resolved to a provider.
async fn resolve_model(engine: &Engine, model: Option<&str>) -> Result<Resolved> {
    let model = model
        .map(str::to_string)
        .or_else(|| engine.config().default_model.clone())
        .ok_or_else(|| {
            Invalid::Other(
                "no analysis model: set default_model in arena.toml or pass --model".into(),
            )
        })?;
    Ok(engine.catalog().await.resolve(&model)?)
}

/// Runs the two-stage analysis of a finished battle; records and returns it.
pub(super) async fn analyze(
    engine: &Engine,
    battle_id: &str,
    model: Option<&str>,
) -> Result<Analysis> {
    let battle = engine.battle(battle_id).await?;
    if !battle.status.is_terminal() {
        return Err(Error::Conflict(format!(
            "battle {battle_id} is still running; analyse it when it has finished"
        )));
    }
    let target = resolve_model(engine, model).await?;
    let mut a = Analysis {
        id: uuid::Uuid::now_v7().to_string(),
        battle_id: battle.id.clone(),
        status: AnalysisStatus::Running,
        model: target.model.clone(),
        provider: target.provider.clone(),
        outcome: None,
        winner: None,
        ranking: Vec::new(),
        reasons: Default::default(),
        digests: Vec::new(),
        judge_runs: Vec::new(),
        error: None,
        created_at: engine.now(),
        finished_at: None,
        cost_usd: None,
    };
    let (row, me) = (a.clone(), engine.inner.me.clone());
    engine
        .db(move |s| {
            s.transact(|tx| {
                tx.insert_analysis(&row)?;
                tx.set_owner(Work::Analysis, &row.id, &me.host, me.pid)
            })
        })
        .await?;

    let token = CancellationToken::new();
    let watch = engine.watch_work(Work::Analysis, &a.id, token.clone());
    let judged = judge(engine, &battle, &target, &mut a, &token).await;
    drop(watch);
    match judged {
        Ok(()) => a.status = AnalysisStatus::Done,
        Err(e) => {
            a.status = AnalysisStatus::Error;
            a.error = Some(e.to_string());
        }
    }
    a.finished_at = Some(engine.now());
    let (row, at) = (a.clone(), engine.now());
    let winner = match a.outcome {
        Some(Outcome::Winner | Outcome::Walkover) => a.winner.clone(),
        _ => None,
    };
    engine
        .db(move |s| {
            s.transact(|tx| {
                tx.finish_analysis(&row, at)?;
                // The user's choice stands; otherwise the winner follows the analysis.
                let current = tx.battle_winner(&row.battle_id)?;
                if !tx.user_decided(&row.battle_id)? {
                    let new = winner.map(|contestant_id| Winner {
                        contestant_id,
                        source: WinnerSource::Analysis,
                    });
                    if new != current {
                        tx.set_winner(&row.battle_id, new.as_ref(), at)?;
                    }
                }
                Ok(())
            })
        })
        .await?;
    let battle = engine.battle(battle_id).await?;
    let (b, a2) = (battle.clone(), a.clone());
    tokio::task::spawn_blocking(move || {
        results::write_atomic(
            &b.results_path.join("analysis.md"),
            render(&b, &a2).as_bytes(),
        )?;
        results::write_manifest(&b)
    })
    .await??;
    tracing::info!(battle = %battle_id, outcome = ?a.outcome, "analysis finished");
    Ok(a)
}

/// Digest each finished contestant, then judge twice in opposite orders.
async fn judge(
    engine: &Engine,
    battle: &Battle,
    target: &Resolved,
    a: &mut Analysis,
    token: &CancellationToken,
) -> Result<()> {
    let survivors: Vec<_> = battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Done)
        .collect();
    if survivors.len() < 2 {
        a.outcome = Some(Outcome::Walkover);
        a.winner = survivors.first().map(|c| c.id.clone());
        a.ranking = survivors.iter().map(|c| c.id.clone()).collect();
        a.cost_usd = Some(0.0);
        return Ok(());
    }
    let fence = Fence::new(&uuid::Uuid::new_v4().simple().to_string());

    // Stage 1: digests, all asked at once: the model's lane takes them in
    // turn (one at a time on a local server).
    let digest_one = |i: usize| {
        let c = survivors[i];
        let output = result_text(battle, c);
        let (system, prompt) = analysis::digest_prompt(&battle.prompt, &output, &fence);
        let req = request(target, system, prompt, 600);
        let analysis_id = a.id.clone();
        async move {
            let stage = Stage {
                battle_id: &battle.id,
                kind: StageKind::Analysis {
                    id: &analysis_id,
                    stage: format!("digest {}", c.id),
                },
                token,
            };
            let reply = call(engine, target, &req, &stage, i as u32).await?;
            let digest = Digest {
                contestant_id: c.id.clone(),
                text: reply.text,
                words: analysis::word_count(&output),
            };
            Ok::<_, Error>((digest, reply.cost))
        }
    };
    let digested = futures::future::try_join_all((0..survivors.len()).map(digest_one)).await?;
    let mut costs: Vec<Option<f64>> = digested.iter().map(|(_, cost)| *cost).collect();
    a.digests = digested.into_iter().map(|(d, _)| d).collect();

    // Stage 2: the judge, twice, the second time in reverse order.
    let mut order: Vec<String> = survivors.iter().map(|c| c.id.clone()).collect();
    order.shuffle(&mut rand::thread_rng());
    let orders = [order.clone(), analysis::reversed(&order)];
    let evidences: std::collections::HashMap<String, String> = survivors
        .iter()
        .filter_map(|c| Some((c.id.clone(), evidence(c)?)))
        .collect();
    for (n, order) in orders.iter().enumerate() {
        let labels = analysis::labels(order.len());
        let items: Vec<JudgeItem<'_>> = order
            .iter()
            .zip(&labels)
            .filter_map(|(id, label)| {
                let d = a.digests.iter().find(|d| &d.contestant_id == id)?;
                Some(JudgeItem {
                    label,
                    digest: &d.text,
                    words: d.words,
                    evidence: evidences.get(id).map(String::as_str),
                })
            })
            .collect();
        let (system, prompt) = analysis::judge_prompt(&battle.prompt, &items, &fence);
        let stage = Stage {
            battle_id: &battle.id,
            kind: StageKind::Analysis {
                id: &a.id,
                stage: format!("judge {}", n + 1),
            },
            token,
        };
        let reply = call(
            engine,
            target,
            &request(target, system.clone(), prompt.clone(), 1000),
            &stage,
            0,
        )
        .await?;
        costs.push(reply.cost);
        let raw = reply.text;
        let mut run = JudgeRun {
            order: order.clone(),
            raw: raw.clone(),
            verdict: None,
            error: None,
            repaired: false,
        };
        match analysis::parse_verdict(&raw, order) {
            Ok(v) => run.verdict = Some(v),
            Err(first_error) => {
                run.repaired = true;
                let repair = format!("{prompt}{}", analysis::repair_note(&first_error));
                let reply = call(
                    engine,
                    target,
                    &request(target, system, repair, 1000),
                    &stage,
                    0,
                )
                .await?;
                costs.push(reply.cost);
                let again = reply.text;
                run.raw = again.clone();
                match analysis::parse_verdict(&again, order) {
                    Ok(v) => run.verdict = Some(v),
                    Err(e) => run.error = Some(format!("{first_error}; after one repair: {e}")),
                }
            }
        }
        a.judge_runs.push(run);
    }
    a.cost_usd = crate::benchmark::add_costs(costs);
    let (outcome, verdict) = analysis::decide(&a.judge_runs);
    a.outcome = Some(outcome);
    if let Some(v) = verdict {
        a.winner = Some(v.winner);
        a.ranking = v.ranking;
        a.reasons = v.reasons;
    }
    Ok(())
}

/// What a contestant produced, as the digest sees it: the answer (Q&A), or
/// the explanation, the change statistics, an excerpt of the diff and the
/// check result (Coding).
/// [`result_text`] with `output` as the contestant's latest answer (a
/// series' later turn).
pub(super) fn result_text_of(
    battle: &Battle,
    c: &crate::battle::Contestant,
    output: &str,
) -> String {
    let mut latest = c.clone();
    latest.output = Some(output.to_string());
    result_text(battle, &latest)
}

fn result_text(battle: &Battle, c: &crate::battle::Contestant) -> String {
    let output = c.output.clone().unwrap_or_default();
    if battle.battle_type != crate::battle::BattleType::Coding {
        return output;
    }
    const EXCERPT: usize = 6000;
    let patch = c
        .result_path
        .as_ref()
        .and_then(|p| p.parent())
        .and_then(|d| std::fs::read_to_string(d.join(results::DIFF_FILE)).ok())
        .unwrap_or_default();
    let mut cut = patch.len().min(EXCERPT);
    while !patch.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut text = format!("Explanation:\n{output}\n\n");
    if let Some(e) = evidence(c) {
        text.push_str(&format!("{e}\n\n"));
    }
    text.push_str(&format!(
        "Diff{}:\n{}",
        if cut < patch.len() { " (excerpt)" } else { "" },
        &patch[..cut]
    ));
    text
}

/// Coding evidence for the judge: change statistics and the check result.
fn evidence(c: &crate::battle::Contestant) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(d) = &c.diff {
        parts.push(format!(
            "{} files changed, +{} -{}",
            d.files, d.insertions, d.deletions
        ));
    }
    if let Some(check) = &c.check {
        let verdict = if check.passed {
            "passed"
        } else if check.timed_out {
            "timed out"
        } else {
            "failed"
        };
        parts.push(format!("check `{}` {verdict}", check.command));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn request(target: &Resolved, system: String, prompt: String, max_tokens: u64) -> ChatRequest {
    ChatRequest {
        model: target.model.clone(),
        system: Some(system),
        history: Vec::new(),
        prompt,
        temperature: Some(0.0),
        top_p: None,
        max_tokens: Some(max_tokens),
        no_prompt_cache: false,
    }
}

/// One more turn of a Q&A contestant's conversation (`req` holds it), in
/// its turn on the contestant's lane, with retries; the answer streams as
/// the contestant's output events.
pub(super) async fn turn(
    engine: &Engine,
    battle: &Battle,
    c: &crate::battle::Contestant,
    req: &ChatRequest,
    number: u32,
    token: &CancellationToken,
) -> Result<Reply> {
    let target = Resolved {
        provider: c.provider.clone(),
        model: c.model.clone(),
        lane: c.lane,
    };
    let stage = Stage {
        battle_id: &battle.id,
        kind: StageKind::Turn {
            contestant: &c.id,
            position: c.position,
            number,
        },
        token,
    };
    call(engine, &target, req, &stage, c.position).await
}

/// A series' goal judge on one result: `Ok(verdict)`, or the judge's
/// failure (a reply that is still no verdict after one repair, or a failed
/// call) — never a fail. With the cost of its calls.
pub(super) async fn judge_goal(
    engine: &Engine,
    battle: &Battle,
    contestant_id: &str,
    target: &Resolved,
    goal: &str,
    output: &str,
) -> (Result<crate::series::GoalVerdict, String>, Option<f64>) {
    let fence = Fence::new(&uuid::Uuid::new_v4().simple().to_string());
    let (system, prompt) = crate::series::goal_prompt(goal, &battle.prompt, output, &fence);
    let token = CancellationToken::new();
    let stage = Stage {
        battle_id: &battle.id,
        kind: StageKind::Goal {
            contestant: contestant_id,
        },
        token: &token,
    };
    let mut costs = Vec::new();
    let first = match call(
        engine,
        target,
        &request(target, system.clone(), prompt.clone(), 300),
        &stage,
        0,
    )
    .await
    {
        Ok(reply) => reply,
        Err(e) => return (Err(format!("the goal judge failed: {e}")), None),
    };
    costs.push(first.cost);
    let verdict = match crate::series::parse_goal_verdict(&first.text) {
        Ok(v) => Ok(v),
        Err(first_error) => {
            let repair = format!("{prompt}{}", analysis::repair_note(&first_error));
            match call(
                engine,
                target,
                &request(target, system, repair, 300),
                &stage,
                0,
            )
            .await
            {
                Ok(reply) => {
                    costs.push(reply.cost);
                    crate::series::parse_goal_verdict(&reply.text)
                        .map_err(|e| format!("{first_error}; after one repair: {e}"))
                }
                Err(e) => Err(format!("{first_error}; the repair failed: {e}")),
            }
        }
    };
    (verdict, crate::benchmark::add_costs(costs))
}

fn name_of(battle: &Battle, id: &str) -> String {
    battle
        .contestants
        .iter()
        .find(|c| c.id == id)
        .map(|c| format!("{} · {}", c.identity, c.model))
        .unwrap_or_else(|| id.to_string())
}

/// `analysis.md`: outcome, winner, ranking, reasons, the judge runs, digests.
fn render(battle: &Battle, a: &Analysis) -> String {
    let name = |id: &str| name_of(battle, id);
    let mut md = format!(
        "# Analysis\n\n- Battle: `{}`\n- Judge model: {} ({})\n",
        battle.id, a.model, a.provider
    );
    let outcome = match (a.status, a.outcome) {
        (AnalysisStatus::Error, _) => format!("error: {}", a.error.as_deref().unwrap_or("unknown")),
        (_, Some(Outcome::Winner)) => format!(
            "winner: **{}**",
            a.winner.as_deref().map(name).unwrap_or_default()
        ),
        (_, Some(Outcome::Walkover)) => match &a.winner {
            Some(w) => format!(
                "winner by walkover (the only contestant that finished): **{}**",
                name(w)
            ),
            None => "no contestant finished".into(),
        },
        (_, Some(Outcome::NoClearWinner)) => {
            "no clear winner: the judge's verdicts changed with the order".into()
        }
        (_, Some(Outcome::JudgeError)) => {
            "judge error: a verdict could not be read (nobody's loss)".into()
        }
        (_, None) => "running".into(),
    };
    md.push_str(&format!("- Outcome: {outcome}\n\n"));
    if !a.ranking.is_empty() {
        md.push_str("## Ranking\n\n");
        for (i, id) in a.ranking.iter().enumerate() {
            let reason = a
                .reasons
                .get(id)
                .map(|r| format!(" — {r}"))
                .unwrap_or_default();
            md.push_str(&format!("{}. {}{}\n", i + 1, name(id), reason));
        }
        md.push('\n');
    }
    for (n, run) in a.judge_runs.iter().enumerate() {
        md.push_str(&format!("## Judge run {}\n\nOrder shown: ", n + 1));
        let shown: Vec<String> = analysis::labels(run.order.len())
            .iter()
            .zip(&run.order)
            .map(|(l, id)| format!("{l} = {}", name(id)))
            .collect();
        md.push_str(&shown.join(", "));
        md.push_str("\n\n");
        match (&run.verdict, &run.error) {
            (Some(v), _) => md.push_str(&format!("Verdict: {}\n\n", name(&v.winner))),
            (None, Some(e)) => md.push_str(&format!("Unreadable verdict: {e}\n\n")),
            _ => {}
        }
    }
    if !a.digests.is_empty() {
        md.push_str("## Digests\n\n");
        for d in &a.digests {
            md.push_str(&format!(
                "### {} ({} words)\n\n{}\n\n",
                name(&d.contestant_id),
                d.words,
                d.text.trim()
            ));
        }
    }
    md
}

/// Cross-examines a finished battle with a persona and model.
pub(super) async fn cross_examine(
    engine: &Engine,
    battle_id: &str,
    spec: &crate::battle::ContestantSpec,
    question: Option<&str>,
) -> Result<CrossExamination> {
    let battle = engine.battle(battle_id).await?;
    if !battle.status.is_terminal() {
        return Err(Error::Conflict(format!(
            "battle {battle_id} is still running; cross-examine it when it has finished"
        )));
    }
    // Agents must run read-only; refuse before anything is created.
    if let Some(backend) = crate::backend::find(&spec.identity) {
        return cross_examine_with_agent(engine, &battle, backend, spec, question).await;
    }
    let registry = engine.personas()?;
    let persona = registry
        .find(&spec.identity)
        .ok_or_else(|| Invalid::UnknownPersona {
            name: spec.identity.clone(),
            known: registry.names().join(", "),
            registry: registry.path.display().to_string(),
        })?;
    let target = engine.catalog().await.resolve(&spec.model)?;
    let done: Vec<_> = battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Done)
        .collect();
    if done.is_empty() {
        return Err(Error::Conflict(format!(
            "battle {battle_id} has no finished results to examine"
        )));
    }
    let question = question
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .unwrap_or(cross_exam::DEFAULT_QUESTION);
    let mut x = start_cross_exam(engine, &battle, &persona.name, &target, question).await?;

    let mut order: Vec<String> = done.iter().map(|c| c.id.clone()).collect();
    order.shuffle(&mut rand::thread_rng());
    let results: Vec<(String, String)> = order
        .iter()
        .filter_map(|id| done.iter().find(|c| &c.id == id))
        .map(|c| (c.id.clone(), c.output.clone().unwrap_or_default()))
        .collect();
    let fence = Fence::new(&uuid::Uuid::new_v4().simple().to_string());
    let (system, prompt) = cross_exam::prompt(question, &battle.prompt, &results, &fence);
    let system = format!("{}\n\n{system}", persona.system_prompt);
    let req = ChatRequest {
        model: target.model.clone(),
        system: Some(system),
        history: Vec::new(),
        prompt,
        temperature: persona.temperature,
        top_p: persona.top_p,
        max_tokens: persona.max_tokens,
        no_prompt_cache: false,
    };
    let token = CancellationToken::new();
    let watch = engine.watch_work(Work::CrossExamination, &x.id, token.clone());
    let stage = Stage {
        battle_id: &battle.id,
        kind: StageKind::CrossExam { id: &x.id },
        token: &token,
    };
    let answered = call(engine, &target, &req, &stage, 0).await;
    drop(watch);
    match answered {
        Ok(Reply { text, .. }) => {
            x.verdict = cross_exam::parse_verdict(&text, &order);
            x.output = text;
            x.status = AnalysisStatus::Done;
        }
        Err(e) => {
            x.status = AnalysisStatus::Error;
            x.error = Some(e.to_string());
        }
    }
    finish_cross_exam(engine, &battle, x).await
}

/// Cross-examination by a CLI agent, run read-only in the results folder.
async fn cross_examine_with_agent(
    engine: &Engine,
    battle: &Battle,
    backend: &crate::backend::BackendInfo,
    spec: &crate::battle::ContestantSpec,
    question: Option<&str>,
) -> Result<CrossExamination> {
    let sandboxed = engine.sandboxed();
    if !crate::agent::backends::can_examine(backend.agent, sandboxed) {
        return Err(Invalid::Other(format!(
            "backend `{}` cannot be made read-only without the agent sandbox (`[limits] sandbox = \"strict\"` on a kernel with Landlock), so it cannot cross-examine; \
             use qwen, codex or claude-code, or a persona with a model",
            backend.name
        ))
        .into());
    }
    let target = engine.catalog().await.resolve(&spec.model)?;
    let endpoint = engine.agent_endpoint(&target.provider).await;
    let (endpoint, door) = super::coding::through_door(engine, endpoint);
    let done: Vec<_> = battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Done)
        .collect();
    let files: Vec<(String, String)> = done
        .iter()
        .filter_map(|c| {
            let path = c.result_path.as_ref()?;
            let rel = path.strip_prefix(&battle.results_path).ok()?;
            Some((c.id.clone(), rel.to_string_lossy().into_owned()))
        })
        .collect();
    if files.is_empty() {
        return Err(Error::Conflict(format!(
            "battle {} has no finished results to examine",
            battle.id
        )));
    }
    let question = question
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .unwrap_or(cross_exam::DEFAULT_QUESTION);
    let prompt = cross_exam::agent_prompt(question, &files);
    let scratch = engine
        .data_dir()
        .join("agents")
        .join(format!("cross-exam-{}", uuid::Uuid::new_v4().simple()));
    // In the sandbox the kernel keeps it read-only, whatever its flags;
    // without one, its own read-only mode must.
    let plan = if sandboxed {
        crate::agent::backends::plan(
            crate::agent::backends::Backend::Agent(backend.agent),
            &target.model,
            &prompt,
            &battle.results_path,
            &scratch,
            endpoint.as_ref(),
        )
    } else {
        crate::agent::backends::read_only_plan(
            backend.agent,
            &target.model,
            &prompt,
            &battle.results_path,
            &scratch,
            endpoint.as_ref(),
        )
    }
    .map_err(Invalid::Other)?;
    // Read-only by the kernel: the results folder is readable, nothing but
    // its scratch folder writable.
    let connect = super::coding::reachable(&plan, endpoint.as_ref());
    let results = super::coding::Reach {
        programs: &[],
        workspace: &battle.results_path,
        writable: false,
        objects: &[],
        connect,
        door,
        own_config: &[],
        toolchains: false,
    };
    let (launch, _scratch) = super::coding::prepare(engine, backend.name, plan, results, &scratch)?;

    let mut x = start_cross_exam(engine, battle, backend.name, &target, question).await?;

    // Lines go to the battle's event stream as they come.
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let forward = {
        let (engine, battle_id, id) = (engine.clone(), battle.id.clone(), x.id.clone());
        tokio::spawn(async move {
            // Only labels the text it records; nothing to cancel here.
            let never = CancellationToken::new();
            let mut all = String::new();
            while let Some(first) = lines_rx.recv().await {
                let mut batch = first;
                batch.push('\n');
                while let Ok(more) = lines_rx.try_recv() {
                    batch.push_str(&more);
                    batch.push('\n');
                }
                all.push_str(&batch);
                let stage = Stage {
                    battle_id: &battle_id,
                    kind: StageKind::CrossExam { id: &id },
                    token: &never,
                };
                if let Err(e) = emit_text(&engine, &stage, batch).await {
                    tracing::warn!(error = %e, "could not record cross-examination output");
                }
            }
            all
        })
    };
    let token = CancellationToken::new();
    let watch = engine.watch_work(Work::CrossExamination, &x.id, token.clone());
    let stage = Stage {
        battle_id: &battle.id,
        kind: StageKind::CrossExam { id: &x.id },
        token: &token,
    };
    let slot = tokio::select! {
        biased;
        _ = token.cancelled() => Err(Error::Cancelled),
        slot = take_lane(engine, &target, &battle.id, stage.holder(), 0) => slot,
    };
    let exit = match slot {
        Ok(_slot) => crate::agent::process::run(&launch, &token, |line| {
            if let crate::agent::process::Line::Stdout(l) = line {
                let _ = lines_tx.send(l);
            }
        })
        .await
        .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    drop(lines_tx);
    drop(watch);
    let output = forward.await?;
    match exit {
        Ok(exit) if exit.cancelled => {
            x.status = AnalysisStatus::Error;
            x.error = Some(Error::Cancelled.to_string());
        }
        Ok(exit) if exit.success() => {
            let order: Vec<String> = files.iter().map(|(id, _)| id.clone()).collect();
            x.verdict = cross_exam::parse_verdict(&output, &order);
            x.status = AnalysisStatus::Done;
        }
        Ok(exit) => {
            x.status = AnalysisStatus::Error;
            x.error = Some(exit.describe(backend.name));
        }
        Err(e) => {
            x.status = AnalysisStatus::Error;
            x.error = Some(e);
        }
    }
    x.output = output;
    finish_cross_exam(engine, battle, x).await
}

/// Records a new cross-examination (status running) and numbers it.
async fn start_cross_exam(
    engine: &Engine,
    battle: &Battle,
    identity: &str,
    target: &Resolved,
    question: &str,
) -> Result<CrossExamination> {
    let mut x = CrossExamination {
        id: uuid::Uuid::now_v7().to_string(),
        battle_id: battle.id.clone(),
        number: 0,
        identity: identity.to_string(),
        model: target.model.clone(),
        provider: target.provider.clone(),
        question: question.to_string(),
        status: AnalysisStatus::Running,
        output: String::new(),
        verdict: None,
        error: None,
        path: None,
        created_at: engine.now(),
        finished_at: None,
    };
    let (row, me) = (x.clone(), engine.inner.me.clone());
    x.number = engine
        .db(move |s| {
            s.transact(|tx| {
                let number = tx.insert_cross_examination(&row)?;
                tx.set_owner(Work::CrossExamination, &row.id, &me.host, me.pid)?;
                Ok(number)
            })
        })
        .await?;
    Ok(x)
}

/// Writes `cross-exam-<n>.md` and stores the finished cross-examination.
async fn finish_cross_exam(
    engine: &Engine,
    battle: &Battle,
    mut x: CrossExamination,
) -> Result<CrossExamination> {
    let path = results::confined(
        &battle.results_path,
        &[&format!("cross-exam-{}.md", x.number)],
    )?;
    let names = |id: &str| name_of(battle, id);
    results::write_atomic(&path, cross_exam::render(&x, &names).as_bytes())?;
    x.path = Some(path);
    x.finished_at = Some(engine.now());
    let (row, at) = (x.clone(), engine.now());
    engine
        .db(move |s| s.transact(|tx| tx.finish_cross_examination(&row, at)))
        .await?;
    Ok(x)
}
