//! A pack task's verdicts: when a task battle's contestants have ended,
//! each one's change is verified by the task's verifier
//! ([`super::verify`]) once, and the verdict is kept as the series' goal
//! check with what the verifier found ([`VerifierDetail`]), so a resumed
//! pack run never verifies a finished run again.

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::battle::{Battle, ContestantStatus};
use crate::error::{Error, Result};
use crate::pack::{Pack, Task};
use crate::series::{GoalCheck, TaskRef, TaskTests};
use crate::test_report::Outcome;

use super::Engine;

/// What a verifier found beside its verdict, kept with the goal check
/// ([`GoalCheck::detail`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifierDetail {
    pub fail_to_pass_passed: usize,
    pub fail_to_pass_total: usize,
    /// The agent's edits left out before the tests ran: `path: why`.
    pub dropped: Vec<String>,
    /// Listed tests that did not pass, and listed tests the report lacks.
    pub failed: Vec<String>,
    pub missing: Vec<String>,
    pub verifier_seconds: f64,
    /// The last lines of the verifier's output.
    pub output_tail: String,
}

/// The verdicts of a task battle's contestants whose agents have ended:
/// each one's change verified by the task's verifier, once (a verdict
/// already recorded is kept), recorded as its goal check.
pub(super) async fn verify_results(
    engine: &Engine,
    battle: &Battle,
    task: &TaskRef,
    token: &CancellationToken,
) -> Result<()> {
    let b = battle.id.clone();
    let recorded = engine.db(move |s| s.goal_checks(&b)).await?;
    // What the series carries; from the pack for a run recorded before
    // the series carried it.
    let loaded = match &task.tests {
        Some(tests) => Ok(tests.clone()),
        None => {
            tokio::task::spawn_blocking({
                let task = task.clone();
                move || {
                    let pack = Pack::load(&task.pack)?;
                    let t = pack.task(&task.id).ok_or_else(|| {
                        Error::Task(format!("the pack has no task `{}` any more", task.id))
                    })?;
                    task_tests(t).ok_or_else(|| Error::Task("the task lacks its tests".into()))
                }
            })
            .await?
        }
    };
    for c in battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Done && !recorded.contains_key(&c.id))
    {
        if token.is_cancelled() {
            return Ok(());
        }
        let check = match &loaded {
            Err(e) => failed_check(engine, format!("the task could not be read: {e}")),
            Ok(t) => verify_one(engine, battle, c, t, token).await,
        };
        let cid = c.id.clone();
        engine
            .db(move |s| s.transact(|tx| tx.insert_goal_check(&cid, &check)))
            .await?;
    }
    Ok(())
}

/// A verdict that is an error of the run.
fn failed_check(engine: &Engine, why: String) -> GoalCheck {
    GoalCheck {
        turn: 1,
        passed: None,
        reason: None,
        error: Some(why),
        by_check: true,
        cost_usd: Some(0.0),
        at: engine.now(),
        detail: None,
    }
}

/// A task's verifier runs 6 hours at most, whatever its row says.
const MAX_VERIFIER_SECS: u64 = 6 * 3600;

/// One contestant's change verified by the task's verifier.
async fn verify_one(
    engine: &Engine,
    battle: &Battle,
    c: &crate::battle::Contestant,
    task: &TaskTests,
    token: &CancellationToken,
) -> GoalCheck {
    let what = super::verify::VerifyTask {
        test_patch: task.test_patch.clone(),
        lists: task.lists.clone(),
        test_command: task.test_command.clone(),
        // The row's own limit, bounded (a team's row is data).
        time_limit: std::time::Duration::from_secs(
            task.time_limit_secs
                .unwrap_or(engine.config().limits.check_timeout_secs)
                .min(MAX_VERIFIER_SECS),
        ),
    };
    let v = match super::verify::verify(engine, battle, c, &what, token).await {
        Ok(v) => v,
        Err(e) => return failed_check(engine, format!("the verifier could not run: {e}")),
    };
    let grade = &v.grade;
    let dropped: Vec<String> = v
        .dropped
        .iter()
        .map(|d| format!("{}: {}", d.path, d.reason))
        .collect();
    let detail = VerifierDetail {
        fail_to_pass_passed: grade.fail_to_pass_passed,
        fail_to_pass_total: grade.fail_to_pass_total,
        dropped: dropped.clone(),
        failed: grade.failed.clone(),
        missing: grade.missing.clone(),
        verifier_seconds: v.seconds,
        output_tail: v.output_tail.clone(),
    };
    let mut reason = format!(
        "{} ({}/{} FAIL_TO_PASS passed)",
        grade.reason, grade.fail_to_pass_passed, grade.fail_to_pass_total
    );
    if !dropped.is_empty() {
        reason.push_str(&format!(
            "; dropped before the tests: {}",
            dropped.join(", ")
        ));
    }
    let (passed, error, reason) = match &grade.outcome {
        Outcome::Resolved => (Some(true), None, Some(reason)),
        Outcome::Unresolved => (Some(false), None, Some(reason)),
        Outcome::Error(why) => (None, Some(why.clone()), None),
    };
    GoalCheck {
        turn: 1,
        passed,
        reason,
        error,
        by_check: true,
        cost_usd: Some(0.0),
        at: engine.now(),
        detail: serde_json::to_string(&detail).ok(),
    }
}

/// What a task's verifier runs, carried in the series; `None` when the
/// task lacks a part (its verdict then says so).
pub(super) fn task_tests(task: &Task) -> Option<TaskTests> {
    Some(TaskTests {
        test_patch: task.test_patch.clone()?,
        lists: task.lists.clone()?,
        test_command: task.test_command()?.to_string(),
        time_limit_secs: task
            .toml
            .verifier_timeout_sec
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(|s| s.ceil() as u64),
    })
}
