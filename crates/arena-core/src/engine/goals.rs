//! A series' goal: after each battle, every finished contestant's result
//! is checked (by the battle's check command for Coding, else by the goal
//! judge, confirmed by a second model when asked), and a contestant that
//! misses gets more turns, up to `max_turns`.

use tokio_util::sync::CancellationToken;

use crate::analysis::{self, Fence};
use crate::battle::{Battle, ContestantStatus};
use crate::catalog::Resolved;
use crate::error::Result;
use crate::series::{self, GoalCheck, Series, SeriesPrompt};

use super::analyze::{self, ask, request};
use super::journal::Sink;
use super::lane;
use super::Engine;

/// The models that judge a series' battles, with their providers.
#[derive(Debug, Clone, Default)]
pub(super) struct Judges {
    pub analysis: Option<Resolved>,
    pub goal: Option<Resolved>,
    pub confirm: Option<Resolved>,
}

impl Judges {
    /// Each judge as `(provider, model)`.
    pub fn models(&self) -> impl Iterator<Item = (String, String)> + '_ {
        [&self.analysis, &self.goal, &self.confirm]
            .into_iter()
            .flatten()
            .map(|r| (r.provider.clone(), r.model.clone()))
    }
}

/// Checks every finished contestant's result against the goal, giving it
/// more turns (up to `max_turns`) while it misses: for Coding with a check
/// command, the check decides and a turn is a refine round with the check's
/// output as feedback; otherwise the goal judge decides (confirmed by a
/// second model when asked).
pub(super) async fn check_goals(
    engine: &Engine,
    series: &Series,
    judges: &Judges,
    battle: &Battle,
    prompt: &SeriesPrompt,
    token: &CancellationToken,
) -> Result<()> {
    let request = &series.request;
    // A pack's task: its verifier decides, once per contestant.
    if let Some(task) = &prompt.task {
        return super::task_verdict::verify_results(engine, battle, task, token).await;
    }
    let by_check = battle.battle_type.judged_by_check() && battle.check_command.is_some();
    let goal = request.goal_of(prompt).map(str::to_string);
    if goal.is_none() && !by_check {
        return Ok(());
    }
    let (judge, confirm) = (&judges.goal, &judges.confirm);
    let b = battle.id.clone();
    let recorded = engine.db(move |s| s.goal_checks(&b)).await?;
    for c in battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Done)
    {
        let mut turn = recorded.get(&c.id).map_or(0, |v| v.len() as u32);
        let mut last = recorded.get(&c.id).and_then(|v| v.last().cloned());
        // The latest result: the contestant's own, or its last round's.
        let mut output = c.output.clone().unwrap_or_default();
        let mut check = c.check.clone();
        let rounds = engine.rounds(&c.id).await?;
        if let Some(r) = rounds.last() {
            output = r.output.clone();
            check = r.check.clone();
        }
        loop {
            if token.is_cancelled() {
                return Ok(());
            }
            let passed = last.as_ref().and_then(|g| g.passed);
            let judged_error = last.as_ref().is_some_and(|g| g.passed.is_none());
            if passed == Some(true) || judged_error || turn >= request.max_turns {
                break;
            }
            if turn > 0 {
                // Another turn: a refine round (Coding, in its worktree; Q&A,
                // in the same conversation).
                let feedback = match (&check, &last) {
                    (Some(ch), _) if by_check => format!(
                        "The check `{}` failed. Its output ends with:\n{}\nFix it.",
                        ch.command, ch.output_tail
                    ),
                    (_, Some(g)) => series::next_turn_message(g.reason.as_deref().unwrap_or("")),
                    _ => series::next_turn_message(""),
                };
                let round = engine.refine(&battle.id, &c.id, &feedback).await?;
                output = round.output.clone();
                check = round.check.clone();
            }
            turn += 1;
            let g = if by_check {
                let ch = check.as_ref();
                GoalCheck {
                    turn,
                    passed: Some(ch.is_some_and(|c| c.passed)),
                    reason: ch.map(|c| {
                        format!(
                            "check `{}` {}",
                            c.command,
                            if c.passed { "passed" } else { "failed" }
                        )
                    }),
                    error: None,
                    by_check: true,
                    cost_usd: Some(0.0),
                    at: engine.now(),
                    detail: None,
                }
            } else {
                let (Some(judge), Some(goal)) = (&judge, &goal) else {
                    break;
                };
                let text = if battle.battle_type.has_worktrees() {
                    analyze::result_text_of(engine, battle, c, &output).await
                } else {
                    output.clone()
                };
                let (verdict, mut cost) =
                    judge_goal(engine, battle, &c.id, judge, goal, &text).await;
                let mut confirmed = None;
                if let (Ok(v), Some(confirm)) = (&verdict, &confirm) {
                    if v.pass {
                        let (second, c2) =
                            judge_goal(engine, battle, &c.id, confirm, goal, &text).await;
                        cost = crate::benchmark::add_costs([cost, c2]);
                        confirmed = Some(second);
                    }
                }
                match (verdict, confirmed) {
                    (Ok(v), None) => GoalCheck {
                        turn,
                        passed: Some(v.pass),
                        reason: Some(v.reason),
                        error: None,
                        by_check: false,
                        cost_usd: cost,
                        at: engine.now(),
                        detail: None,
                    },
                    (Ok(v), Some(Ok(second))) => GoalCheck {
                        turn,
                        passed: Some(series::goal_passed(&v, Some(&second))),
                        reason: Some(if second.pass {
                            v.reason
                        } else {
                            format!("not confirmed: {}", second.reason)
                        }),
                        error: None,
                        by_check: false,
                        cost_usd: cost,
                        at: engine.now(),
                        detail: None,
                    },
                    (Err(e), _) | (_, Some(Err(e))) => GoalCheck {
                        turn,
                        passed: None,
                        reason: None,
                        error: Some(e),
                        by_check: false,
                        cost_usd: cost,
                        at: engine.now(),
                        detail: None,
                    },
                }
            };
            let (cid, row) = (c.id.clone(), g.clone());
            engine
                .db(move |s| s.transact(|tx| tx.insert_goal_check(&cid, &row)))
                .await?;
            last = Some(g);
        }
    }
    Ok(())
}

/// A series' goal judge on one result: `Ok(verdict)`, or the judge's
/// failure (a reply that is still no verdict after one repair, or a failed
/// call) — never a fail. With the cost of its calls.
async fn judge_goal(
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
    let seat = battle
        .contestants
        .iter()
        .find(|c| c.id == contestant_id)
        .map_or_else(
            || "a contestant".into(),
            |c| crate::blind::seat_name(battle, c),
        );
    let holder = format!("{}, goal check of {seat}", lane::battle_name(battle));
    let call = |request| {
        let (sink, holder) = (Sink::silent(&battle.id), holder.clone());
        ask(engine, target, request, sink, holder, 0, &token)
    };
    let mut costs = Vec::new();
    let first = match call(request(target, system.clone(), prompt.clone(), 300)).await {
        Ok(reply) => reply,
        Err(e) => return (Err(format!("the goal judge failed: {e}")), None),
    };
    costs.push(first.cost);
    let verdict = match crate::series::parse_goal_verdict(&first.text) {
        Ok(v) => Ok(v),
        Err(first_error) => {
            let repair = format!("{prompt}{}", analysis::repair_note(&first_error));
            match call(request(target, system, repair, 300)).await {
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
