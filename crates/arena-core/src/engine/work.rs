//! Analyses, cross-examinations and refine rounds as work of a process:
//! registered while they run, stopped on request from any process, and
//! recovered when the process that ran them is gone.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::Result;

use super::{pid_alive, Engine, LEASE_TTL, WORK_POLL};

/// Work a stopped process left running, found by
/// [`Engine::recover_interrupted`]: marked failed, and for an analysis the
/// new run's result.
#[derive(Debug)]
pub struct Recovered {
    pub battle_id: String,
    pub work: crate::store::Work,
    pub analysis: Option<Result<crate::analysis::Analysis>>,
}

/// Unregisters a piece of work when it ends (see [`Engine::watch_work`]).
pub(super) struct WorkGuard {
    engine: Engine,
    id: String,
    poll: tokio::task::JoinHandle<()>,
}

impl Drop for WorkGuard {
    fn drop(&mut self) {
        self.poll.abort();
        self.engine
            .inner
            .work
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

impl Engine {
    /// Finds analyses, cross-examinations and refine rounds left `running`
    /// by a process that stopped, and marks them failed with a clear
    /// reason; an interrupted analysis is then run again with the model it
    /// had (when its battle has no newer analysis). The app calls this at
    /// start-up, `arena battle resume` before resuming.
    pub async fn recover_interrupted(&self) -> Result<Vec<Recovered>> {
        let (me, at) = (self.inner.me.clone(), self.now());
        let orphans = self
            .db(move |s| {
                s.transact(|tx| {
                    tx.interrupt_orphans(
                        &me.host,
                        pid_alive,
                        "interrupted: the process running it stopped",
                        at,
                    )
                })
            })
            .await?;
        let mut recovered = Vec::new();
        for o in orphans {
            tracing::warn!(battle = %o.battle_id, work = ?o.work, "found work interrupted by a stopped process");
            let rerun = match o.work {
                crate::store::Work::Analysis => {
                    // Only when it is still the battle's latest analysis.
                    let latest = self.analysis(&o.battle_id).await?;
                    if latest.as_ref().is_some_and(|a| a.id == o.id) {
                        Some(self.analyze(&o.battle_id, Some(&o.model)).await)
                    } else {
                        None
                    }
                }
                _ => None,
            };
            recovered.push(Recovered {
                battle_id: o.battle_id,
                work: o.work,
                analysis: rerun,
            });
        }
        Ok(recovered)
    }

    /// Stops a battle's running analyses or cross-examinations, or a
    /// contestant's running refine round, whichever process runs them: the
    /// request is recorded, applied at once here and within a quarter of a
    /// second elsewhere. Each ends as failed ("cancelled") — a refine round
    /// as `cancelled`. Returns how many were running.
    pub async fn cancel_work(
        &self,
        battle_id: &str,
        work: crate::store::Work,
        contestant_id: Option<&str>,
    ) -> Result<usize> {
        let (bid, cid) = (battle_id.to_string(), contestant_id.map(str::to_string));
        let ids = self
            .db(move |s| s.transact(|tx| tx.request_work_cancel(work, &bid, cid.as_deref())))
            .await?;
        {
            let map = self.inner.work.lock().unwrap_or_else(|p| p.into_inner());
            for id in &ids {
                if let Some(token) = map.get(id) {
                    token.cancel();
                }
            }
        }
        // Wait (a little) for them to end.
        let deadline = tokio::time::Instant::now() + LEASE_TTL;
        for id in &ids {
            while tokio::time::Instant::now() < deadline {
                let (id, w) = (id.clone(), work);
                let running = self.db(move |s| s.work_running(w, &id)).await?;
                if !running {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(ids.len())
    }

    /// Registers a piece of work running here: `token` is cancelled when
    /// [`Engine::cancel_work`] asks, from this process or another (polled).
    pub(super) fn watch_work(
        &self,
        work: crate::store::Work,
        id: &str,
        token: CancellationToken,
    ) -> WorkGuard {
        self.inner
            .work
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), token.clone());
        let (engine, id2) = (self.clone(), id.to_string());
        let poll = tokio::spawn(async move {
            loop {
                tokio::time::sleep(WORK_POLL).await;
                let id3 = id2.clone();
                if let Ok(true) = engine
                    .db(move |s| s.work_cancel_requested(work, &id3))
                    .await
                {
                    token.cancel();
                    return;
                }
            }
        });
        WorkGuard {
            engine: self.clone(),
            id: id.to_string(),
            poll,
        }
    }
}
