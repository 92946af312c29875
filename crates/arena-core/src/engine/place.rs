//! One place of a series: the request its battles are checked as, and
//! the run of one place (its battle created or resumed, run to its end,
//! analysed and checked against the goal), which the series' driver and
//! every worker share.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::battle::{BattleRequest, ContestantStatus};
use crate::error::Result;
use crate::series::{Series, SeriesRequest};

use super::goals::{check_goals, Judges};
use super::validate::{self, Plan};
use super::Engine;

/// The request of a series' first battle, for checking the contestants.
pub(super) fn first_battle(r: &SeriesRequest) -> BattleRequest {
    let p = &r.prompts[0];
    BattleRequest {
        battle_type: r.battle_type,
        project: r.project.clone(),
        prompt: p.prompt.clone(),
        contestants: r.contestants.clone(),
        check_command: r.check_of(p).map(str::to_string),
        blind: r.blind,
        tags: r.tags.clone(),
    }
}

/// One place of the series: its battle (created, or the one a stopped
/// process left), run to its end, analysed, and its results checked
/// against the goal. Returns the battle's id.
pub(super) async fn run_place(
    engine: Engine,
    series: Arc<Series>,
    plan: Arc<Plan>,
    judges: Arc<Judges>,
    n: u64,
    existing: Option<String>,
    token: CancellationToken,
) -> Result<(u64, String)> {
    let request = &series.request;
    let (p, _) = request.slot(n);
    let prompt = &request.prompts[p];
    let battle_id = match existing {
        Some(id) => id,
        None => {
            let mut plan = (*plan).clone();
            plan.prompt = prompt.prompt.clone();
            // The series' tags (as edited), then the prompt's own.
            plan.tags =
                crate::blind::tags(&series.tags.iter().chain(&prompt.tags).collect::<Vec<_>>())?;
            // (A pack's task is decided by its verifier, never a check.)
            if plan.battle_type.judged_by_check() && prompt.task.is_none() {
                plan.check_command = request.check_of(prompt).map(str::to_string);
            }
            // A pack's task starts from its base, sealed: nothing of its
            // future is in an agent's reach.
            if let Some(task) = &prompt.task {
                // From the plan's project: on a worker elsewhere, its
                // fetched copy.
                let sealed = engine.seal_base(&plan.project, &task.base).await?;
                let base = crate::agent::seal::sealed_base(&sealed).ok_or_else(|| {
                    crate::error::Error::Git(format!("{} is not sealed", sealed.display()))
                })?;
                plan.start_from(&base);
                plan.take_objects_from(&sealed);
            }
            validate::record(&engine, &plan, Some((series.id.clone(), n)))
                .await?
                .id
        }
    };
    // Cancelling the series cancels its battles.
    let watch = {
        let (engine, id, token) = (engine.clone(), battle_id.clone(), token.clone());
        tokio::spawn(async move {
            token.cancelled().await;
            let _ = engine.cancel_battle(&id).await;
        })
    };
    let battle = match engine.battle(&battle_id).await? {
        b if b.status.is_terminal() => b,
        b if b
            .contestants
            .iter()
            .all(|c| c.status == ContestantStatus::Queued) =>
        {
            engine.run_battle(&battle_id).await?
        }
        _ => match engine.resume(Some(&battle_id)).await?.pop() {
            Some(b) => b,
            None => engine.battle(&battle_id).await?,
        },
    };
    watch.abort();
    if token.is_cancelled() || battle.status != crate::battle::BattleStatus::Done {
        return Ok((n, battle_id));
    }
    if request.analysis {
        if let super::Judged::Failed(e) = engine.judge_ended(&battle, None).await {
            tracing::warn!(battle = %battle_id, error = %e, "the series' analysis of a battle failed");
        }
    }
    check_goals(&engine, &series, &judges, &battle, prompt, &token).await?;
    Ok((n, battle_id))
}
