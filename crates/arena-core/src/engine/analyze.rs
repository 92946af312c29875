//! Judging: the two-stage analysis of a finished battle (digests, then a
//! judge twice in opposite orders) and a series' goal check. Every call is
//! a [`turn`] on the judge model's lane; the prompts, parsing and decisions
//! are in `crate::analysis` and `crate::series`.

use rand::seq::SliceRandom;
use tokio_util::sync::CancellationToken;

use crate::analysis::{
    self, Analysis, AnalysisStatus, Digest, Fence, JudgeItem, JudgeRun, Outcome,
};
use crate::battle::{Battle, ContestantStatus, Winner, WinnerSource};
use crate::catalog::Resolved;
use crate::error::{Error, Invalid, Result};
use crate::provider::ChatRequest;
use crate::results;
use crate::store::Work;

use super::journal::Sink;
use super::lane;
use super::turn::{self, Reply, Turn};
use super::Engine;

/// One call on the judge model, its text streamed to `sink`.
pub(super) async fn ask(
    engine: &Engine,
    target: &Resolved,
    request: ChatRequest,
    sink: Sink,
    holder: String,
    position: u32,
    token: &CancellationToken,
) -> Result<Reply> {
    let turn = Turn {
        target: target.clone(),
        request,
        sink,
        holder,
        position,
        token,
    };
    turn::ask(engine, &turn).await
}

/// The analysis model's name: the override, else `default_model`.
fn model_name(engine: &Engine, model: Option<&str>) -> Result<String> {
    Ok(model
        .map(str::to_string)
        .or_else(|| engine.config().default_model.clone())
        .ok_or_else(|| {
            Invalid::Other(
                "no analysis model: set default_model in arena.toml or pass --model".into(),
            )
        })?)
}

/// Records an analysis that could not start because its model resolves to
/// no provider (unknown, or its provider is unreachable): the battle then
/// says it was not judged and why, in the engine's words, instead of
/// looking as if nobody had tried.
async fn record_unresolved(
    engine: &Engine,
    battle: &Battle,
    model: &str,
    error: &Error,
) -> Result<()> {
    let at = engine.now();
    let a = Analysis {
        id: uuid::Uuid::now_v7().to_string(),
        battle_id: battle.id.clone(),
        status: AnalysisStatus::Error,
        model: model.to_string(),
        // No provider serves it: that is the error.
        provider: String::new(),
        outcome: None,
        winner: None,
        ranking: Vec::new(),
        reasons: Default::default(),
        digests: Vec::new(),
        judge_runs: Vec::new(),
        error: Some(error.to_string()),
        created_at: at,
        finished_at: Some(at),
        // No request was made: it cost nothing (not "unknown", which would
        // make a series' spending unknown).
        cost_usd: Some(0.0),
    };
    engine
        .db(move |s| {
            s.transact(|tx| {
                tx.insert_analysis(&a)?;
                tx.finish_analysis(&a, at)
            })
        })
        .await?;
    tracing::warn!(battle = %battle.id, model, "analysis not started: its model resolves to no provider");
    Ok(())
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
    let name = model_name(engine, model)?;
    let target = match engine.catalog().await.resolve(&name) {
        Ok(target) => target,
        Err(invalid) => {
            let error = Error::from(invalid);
            record_unresolved(engine, &battle, &name, &error).await?;
            return Err(error);
        }
    };
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
    // One instant: the row stores the same end the caller gets back.
    let at = engine.now();
    a.finished_at = Some(at);
    let row = a.clone();
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
                    let new = winner.clone().map(|contestant_id| Winner {
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
            results::render_analysis(&b, &a2).as_bytes(),
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
        let analysis_id = a.id.clone();
        let fence = &fence;
        async move {
            let output = result_text(engine, battle, c).await;
            let (system, prompt) = analysis::digest_prompt(&battle.prompt, &output, fence);
            let req = request(target, system, prompt, 600);
            let sink = Sink::analysis(&battle.id, &analysis_id, format!("digest {}", c.id));
            let holder = format!("{}, analysis (digest)", lane::battle_name(battle));
            let reply = ask(engine, target, req, sink, holder, i as u32, token).await?;
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
        let stage = format!("judge {}", n + 1);
        let sink = Sink::analysis(&battle.id, &a.id, stage.clone());
        let holder = format!("{}, analysis ({stage})", lane::battle_name(battle));
        let judged = request(target, system.clone(), prompt.clone(), 1000);
        let reply = ask(
            engine,
            target,
            judged,
            sink.clone(),
            holder.clone(),
            0,
            token,
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
                let repaired = request(target, system, repair, 1000);
                let reply = ask(engine, target, repaired, sink, holder, 0, token).await?;
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
    if battle.battle_type.has_worktrees() && engine.config().coding.check_decides() {
        check_decides(a, &survivors);
    }
    Ok(())
}

/// A Coding battle's check rule (`[coding] check_decides`): when the
/// judge's winner failed the check and another contestant passed it, that
/// one wins instead, and its reason says why.
fn check_decides(a: &mut Analysis, survivors: &[&crate::battle::Contestant]) {
    use crate::check_outcome::{overrides_winner, CheckOutcome};
    let Some(judged) = a.winner.clone() else {
        return;
    };
    let outcomes: Vec<(String, CheckOutcome)> = survivors
        .iter()
        .map(|c| (c.id.clone(), CheckOutcome::of(c.check.as_ref())))
        .collect();
    let Some(winner) = overrides_winner(&judged, &a.ranking, &outcomes) else {
        return;
    };
    let name = |id: &str| {
        survivors
            .iter()
            .find(|c| c.id == id)
            .map_or(id.to_string(), |c| format!("{}@{}", c.identity, c.model))
    };
    let why = format!(
        "Chosen over the judge's pick, {}, whose check failed while this one's passed (a passed check beats a failed one: [coding] check_decides).",
        name(&judged)
    );
    tracing::info!(judged = %judged, winner = %winner, "the check overrides the judge's winner");
    let judge_said = a.reasons.remove(&winner);
    a.reasons.insert(
        winner.clone(),
        match judge_said {
            Some(r) => format!("{why} The judge said: {r}"),
            None => why,
        },
    );
    a.ranking.retain(|id| id != &winner);
    a.ranking.insert(0, winner.clone());
    a.winner = Some(winner);
}

/// [`result_text`] with `output` as the contestant's latest answer (a
/// series' later turn).
pub(super) async fn result_text_of(
    engine: &Engine,
    battle: &Battle,
    c: &crate::battle::Contestant,
    output: &str,
) -> String {
    let mut latest = c.clone();
    latest.output = Some(output.to_string());
    result_text(engine, battle, &latest).await
}

/// What a contestant produced, as the digest sees it: the answer (Q&A), or
/// the explanation, the change statistics, an excerpt of the diff and the
/// check result (Coding).
async fn result_text(engine: &Engine, battle: &Battle, c: &crate::battle::Contestant) -> String {
    const EXCERPT: usize = 6000;
    let output = c.output.clone().unwrap_or_default();
    if !battle.battle_type.has_worktrees() {
        return output;
    }
    // Its latest work (from the database, whichever machine ran it).
    let mut patch = match engine.latest_patch(battle, c).await {
        Ok(Some((_, patch))) => patch,
        Ok(None) => String::new(),
        Err(e) => {
            tracing::warn!(contestant = %c.id, error = %e, "could not read a diff for the judge");
            String::new()
        }
    };
    let longer = patch.len() > EXCERPT;
    if longer {
        let mut end = EXCERPT;
        while !patch.is_char_boundary(end) {
            end -= 1;
        }
        patch.truncate(end);
    }
    let mut text = format!("Explanation:\n{output}\n\n");
    if let Some(e) = evidence(c) {
        text.push_str(&format!("{e}\n\n"));
    }
    text.push_str(&format!(
        "Diff{}:\n{patch}",
        if longer { " (excerpt)" } else { "" }
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
        use crate::check_outcome::CheckOutcome;
        let verdict = match CheckOutcome::of(Some(check)) {
            CheckOutcome::CouldNotRun => {
                "could not run (its program is missing: this says nothing of the change)"
            }
            _ if check.timed_out => "timed out (failed)",
            outcome => outcome.words(),
        };
        parts.push(format!("check `{}` {verdict}", check.command));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A judge's request: deterministic, with `max_tokens` for its answer.
pub(super) fn request(
    target: &Resolved,
    system: String,
    prompt: String,
    max_tokens: u64,
) -> ChatRequest {
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
