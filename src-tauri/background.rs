//! Work the app starts and does not wait for: driving a battle to its end,
//! judging it and telling the user (an OS notification), and finishing
//! battles and series an earlier run left running. Failures are logged;
//! the window follows progress through the events.

use arena_core::{Engine, Judged};
use tauri::{AppHandle, Runtime};

use crate::notification;

/// Drives a freshly created battle, judges it (see [`judge`]) and sends
/// the battle-finished notification.
pub async fn run_and_judge<R: Runtime>(app: AppHandle<R>, engine: Engine, battle_id: String) {
    match engine.run_and_judge(&battle_id, None).await {
        Ok((battle, judged)) => {
            log_judged(&battle.id, judged);
            finished(&app, &engine, &battle.id).await;
        }
        Err(err) => tracing::warn!(battle = %battle_id, %err, "running the battle failed"),
    }
}

/// Drives a freshly created series to its end (its battles are judged by
/// the series itself).
pub async fn run_series(engine: Engine, series_id: String) {
    match engine.run_series(&series_id).await {
        Ok(series) => tracing::info!(series = %series.id, status = %series.status, "series ended"),
        Err(err) => tracing::warn!(series = %series_id, %err, "running the series failed"),
    }
}

/// Notifies the user that a battle ended, with its winner when known.
async fn finished<R: Runtime>(app: &AppHandle<R>, engine: &Engine, battle_id: &str) {
    match engine.view_battle(battle_id).await {
        Ok(view) => notification::battle_finished(app, &view),
        Err(err) => tracing::warn!(battle = %battle_id, %err, "reading the finished battle failed"),
    }
}

/// Resumes every battle left running (each as soon as it can, in parallel),
/// judges each one that finishes without an analysis, and notifies about
/// each one that ends now; and every series left running (its battles are
/// its own to resume).
pub async fn resume_all<R: Runtime>(app: AppHandle<R>, engine: Engine) {
    // Analyses, cross-examinations and refine rounds a stopped process left
    // running: marked failed (analyses judged again) by the engine.
    match engine.recover_interrupted().await {
        Ok(recovered) => {
            for r in recovered {
                tracing::info!(battle = %r.battle_id, work = ?r.work, "recovered interrupted work");
            }
        }
        Err(err) => tracing::warn!(%err, "recovering interrupted work failed"),
    }
    let series = {
        let engine = engine.clone();
        tokio::spawn(async move {
            match engine.resume_series(None).await {
                Ok(done) => {
                    for s in done {
                        tracing::info!(series = %s.id, status = %s.status, "resumed series ended");
                    }
                }
                Err(err) => tracing::warn!(%err, "resuming series failed"),
            }
        })
    };
    let ids = match engine.running_battles().await {
        Ok(ids) => ids,
        Err(err) => return tracing::warn!(%err, "listing battles to resume failed"),
    };
    let mut own = Vec::new();
    for id in ids {
        match engine.battle(&id).await {
            Ok(b) if b.series_id.is_some() => {}
            Ok(_) => own.push(id),
            Err(err) => tracing::warn!(battle = %id, %err, "reading a battle to resume failed"),
        }
    }
    let ids = own;
    if !ids.is_empty() {
        tracing::info!(count = ids.len(), "resuming battles");
    }
    let resumes = ids
        .into_iter()
        .map(|id| resume_and_judge(&app, engine.clone(), id));
    futures::future::join_all(resumes).await;
    if let Err(err) = series.await {
        tracing::warn!(%err, "resuming series failed");
    }
}

async fn resume_and_judge<R: Runtime>(app: &AppHandle<R>, engine: Engine, battle_id: String) {
    let finished = match engine.resume(Some(&battle_id)).await {
        Ok(finished) => finished,
        Err(err @ arena_core::Error::Conflict(_)) => {
            // Another live process drives it; it judges it too.
            return tracing::info!(battle = %battle_id, %err, "not resuming");
        }
        Err(err) => return tracing::warn!(battle = %battle_id, %err, "resuming the battle failed"),
    };
    for battle in finished {
        log_judged(&battle.id, engine.judge_ended(&battle, None).await);
        self::finished(app, &engine, &battle.id).await;
    }
}

/// Logs what judging a battle that ended did (the engine records the
/// analysis itself).
fn log_judged(battle_id: &str, judged: Judged) {
    match judged {
        Judged::Done(analysis) => match analysis.error {
            Some(err) => tracing::warn!(battle = %battle_id, %err, "the analysis failed"),
            None => {
                tracing::info!(battle = %battle_id, outcome = ?analysis.outcome, "battle judged")
            }
        },
        Judged::Failed(err) => {
            tracing::warn!(battle = %battle_id, %err, "the battle was not judged")
        }
        Judged::NoModel => {
            tracing::info!(battle = %battle_id, "no default_model, so the battle is not judged")
        }
        Judged::NothingToJudge | Judged::AlreadyJudged => {}
    }
}
