//! Driving a battle: the lease, the two-lane schedule, cancellation from
//! other processes, resume after a crash, and the final write-out.

use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::battle::{Battle, BattleType, Contestant, ContestantStatus};
use crate::decisions::{self, ResumeAction};
use crate::error::{Error, Result};
use crate::event::EventKind;
use crate::store::Tx;

use super::{answer, files, lane, pid_alive, Engine, Live, HEARTBEAT, RENEW_WITHIN};

/// Holds a battle's lease and its live handles; gives both back on drop.
pub(super) struct Held {
    engine: Engine,
    battle_id: String,
    pub(super) live: Arc<Live>,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.heartbeat.abort();
        let mut map = self
            .engine
            .inner
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        map.remove(&self.battle_id);
        drop(map);
        let (store, id, owner) = (
            self.engine.inner.store.clone(),
            self.battle_id.clone(),
            self.engine.inner.me.owner.clone(),
        );
        // Release in the background; an unreleased lease simply expires.
        let release = move || {
            if let Err(e) = store.transact(|tx| tx.release_lease(&id, &owner)) {
                tracing::warn!(battle = %id, error = %e, "could not release lease");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn_blocking(release);
            }
            Err(_) => release(),
        }
    }
}

/// Takes the battle's lease (or says who has it) and starts the heartbeat.
pub(super) async fn hold(engine: &Engine, battle_id: &str) -> Result<Held> {
    let lease = engine.lease_for_now();
    let (id, now) = (battle_id.to_string(), engine.lease_ms());
    let taken = engine
        .db(move |s| s.transact(|tx| tx.take_lease(&id, &lease, now, pid_alive)))
        .await?;
    if !taken {
        let id = battle_id.to_string();
        let holder = engine.db(move |s| s.lease(&id)).await?;
        let who = holder
            .map(|l| format!("process {} on {}", l.pid, l.host))
            .unwrap_or_else(|| "another process".into());
        return Err(Error::Conflict(format!(
            "battle {battle_id} is being run by {who}; wait for it to finish or cancel it"
        )));
    }
    let live = Arc::new(Live {
        cancel: CancellationToken::new(),
        contestants: Default::default(),
    });
    engine
        .inner
        .live
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(battle_id.to_string(), live.clone());
    let heartbeat = tokio::spawn(heartbeat(
        engine.clone(),
        battle_id.to_string(),
        live.clone(),
    ));
    Ok(Held {
        engine: engine.clone(),
        battle_id: battle_id.to_string(),
        live,
        heartbeat,
    })
}

/// Applies cancellations requested by other processes (a read every
/// [`HEARTBEAT`]) and renews the lease once less than [`RENEW_WITHIN`] of
/// it is left: a write every few seconds, not every beat. A lease found
/// taken by another process (this one stood still past its expiry)
/// stops the battle here.
async fn heartbeat(engine: Engine, battle_id: String, live: Arc<Live>) {
    // The lease was just taken: it lasts until about then.
    let mut renewed_until = engine.lease_for_now().expires_at_ms;
    let start = tokio::time::Instant::now() + HEARTBEAT;
    let mut tick = tokio::time::interval_at(start, HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (id, owner) = (battle_id.clone(), engine.inner.me.owner.clone());
        let expires = engine.lease_for_now().expires_at_ms;
        let renew = engine.lease_ms() + RENEW_WITHIN.as_millis() as i64 > renewed_until;
        let polled = engine
            .db(move |s| {
                if !renew {
                    return Ok((true, s.cancel_requests(&id)?));
                }
                s.transact(|tx| {
                    let ours = tx.renew_lease(&id, &owner, expires)?;
                    Ok((ours, tx.cancel_requests(&id)?))
                })
            })
            .await;
        match polled {
            Ok((ours, (battle, contestants))) => {
                if renew && ours {
                    renewed_until = expires;
                }
                if !ours {
                    tracing::error!(battle = %battle_id, "lost the battle's lease; stopping");
                    live.cancel.cancel();
                }
                if battle && !live.cancel.is_cancelled() {
                    live.cancel.cancel();
                }
                for cid in contestants {
                    let token = live.contestant_token(&cid);
                    if !token.is_cancelled() {
                        token.cancel();
                    }
                }
            }
            Err(e) => tracing::warn!(battle = %battle_id, error = %e, "heartbeat failed"),
        }
    }
}

pub(super) async fn drive(engine: &Engine, battle_id: &str) -> Result<Battle> {
    // The battle runs to its end with the configuration it started with.
    let engine = &engine.pinned();
    let battle = engine.battle(battle_id).await?;
    if battle.status.is_terminal() {
        return Ok(battle);
    }
    let held = hold(engine, battle_id).await?;
    super::reserve::keep(engine).await;
    schedule(engine, &battle, &held.live).await?;
    finish(engine, battle_id, held.live.cancel.is_cancelled()).await
}

/// Starts every queued contestant of `battle` (as read just before): each
/// waits for its lane (machine-wide, see `lane::take`), runs, and gives
/// the lane back; returns when every one has ended. What a contestant's
/// task could not record (it panicked; the database failed) [`finish`]
/// settles.
async fn schedule(engine: &Engine, battle: &Battle, live: &Arc<Live>) -> Result<()> {
    // Everyone queued now became ready now; battle order breaks the tie.
    let ready_at = engine.now();
    let mut waiting: Vec<&Contestant> = battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Queued)
        .collect();
    // They join their lanes' queues in roster order (a blind battle's in
    // label order), together, before any of them can be served, so a
    // battle's contestants go, and start, in that order.
    waiting.sort_by_key(|c| crate::blind::queue_place(battle, c));
    let wants = waiting.iter().map(|c| want(battle, c, ready_at)).collect();
    let places = lane::join_all(engine, wants).await;
    let mut running: JoinSet<()> = JoinSet::new();
    for (c, place) in waiting.into_iter().zip(places) {
        let token = live.contestant_token(&c.id);
        let (engine, battle, c) = (engine.clone(), battle.clone(), c.clone());
        running.spawn(async move {
            take_part(&engine, &battle, c, token, place).await;
        });
    }
    while let Some(joined) = running.join_next().await {
        if let Err(e) = joined {
            tracing::error!(battle = %battle.id, error = %e, "contestant task failed");
        }
    }
    Ok(())
}

/// What a contestant asks of its lane.
fn want(battle: &Battle, c: &Contestant, ready_at: chrono::DateTime<chrono::Utc>) -> lane::Want {
    lane::Want {
        provider: c.provider.clone(),
        model: c.model.clone(),
        holder: format!(
            "{}, {}",
            lane::battle_name(battle),
            crate::blind::seat_name(battle, c)
        ),
        battle_id: Some(battle.id.clone()),
        contestant_id: Some(c.id.clone()),
        ready_at,
        position: crate::blind::queue_place(battle, c),
    }
}

/// One contestant's part: wait for its turn at its place in the lane's
/// queue (`queued`, with the reason shown), then run (`running`) while
/// holding the slot; it starts in the transaction that takes its turn.
/// Cancelled while waiting, it never starts.
async fn take_part(
    engine: &Engine,
    battle: &Battle,
    mut c: Contestant,
    token: CancellationToken,
    place: Result<lane::Place>,
) {
    use ContestantStatus::{Cancelled, Queued, Running};
    let start = {
        let (engine, c, qa) = (
            engine.clone(),
            c.clone(),
            battle.battle_type == BattleType::Qa,
        );
        move |tx: &mut Tx<'_>| {
            let at = engine.now();
            if qa {
                tx.start_answer(&c, at)
            } else {
                tx.move_contestant(&c, Queued, Running, None, at)
            }
        }
    };
    let waited = match place {
        Ok(place) => place.turn_and(engine, &token, start).await,
        Err(e) => Err(e),
    };
    let slot = match waited {
        Ok(Some((slot, true))) => slot,
        // Someone else ended it first (a cancel).
        Ok(Some((_, false))) => return,
        // Cancelled while waiting: it never starts.
        Ok(None) => {
            match engine.move_contestant(&c, Queued, Cancelled, None).await {
                Ok(true) => {
                    if let Ok(fresh) = engine.battle(&battle.id).await {
                        if let Some(c) = fresh.contestants.iter().find(|x| x.id == c.id) {
                            let _ = files::write_result(engine, &fresh, c).await;
                        }
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(contestant = %c.id, error = %e, "could not record a cancellation")
                }
            }
            return;
        }
        Err(e) => {
            tracing::error!(contestant = %c.id, error = %e, "could not wait for the lane or start");
            let message = format!("internal error before it started: {e}");
            let _ = engine
                .move_contestant(&c, Queued, ContestantStatus::Error, Some(message))
                .await;
            return;
        }
    };
    c.status = ContestantStatus::Running;
    c.attempts += 1;
    match battle.battle_type {
        BattleType::Qa => answer::run(engine, battle, c, token, slot).await,
        BattleType::Coding => super::coding::run(engine, battle, c, token, slot).await,
    }
}

/// Records the battle's final status, unless its last contestant's end
/// already did, and writes its manifest. A contestant still queued or
/// running has no task left here: its task ended without recording its
/// end (it panicked, or the database failed), and it is marked failed, so
/// that the battle can finish.
async fn finish(engine: &Engine, battle_id: &str, cancel_requested: bool) -> Result<Battle> {
    let mut battle = engine.battle(battle_id).await?;
    if !battle.status.is_terminal() {
        // A full disk (a write that failed, or fails now) never leaves the
        // battle running: the reserve's room is given back for this write.
        let ended = match settle(engine, battle_id, cancel_requested).await {
            Err(e) if super::reserve::disk_full(&e) && super::reserve::release(engine) => {
                settle(engine, battle_id, cancel_requested).await
            }
            ended => ended,
        }?;
        if let Some(status) = ended {
            tracing::info!(battle = %battle_id, %status, "battle finished");
        }
        battle = engine.battle(battle_id).await?;
    }
    files::write_manifest(&battle).await?;
    Ok(battle)
}

/// Marks the contestants that did not record their end failed (with the
/// full disk as the reason when a write failed for it) and records the
/// battle's outcome, if it has one.
async fn settle(
    engine: &Engine,
    battle_id: &str,
    cancel_requested: bool,
) -> Result<Option<crate::battle::BattleStatus>> {
    let (id, at) = (battle_id.to_string(), engine.now());
    let why = if super::reserve::released(engine) {
        "Arena could not record this contestant's end: the disk it keeps its data on is full \
         (database or disk is full); free some space"
    } else {
        "internal error: this contestant's run ended without recording its end"
    };
    engine
        .db(move |s| {
            s.transact(|tx| {
                for c in tx.contestants(&id)? {
                    if !c.status.is_terminal() {
                        tx.move_contestant(&c, c.status, ContestantStatus::Error, Some(why), at)?;
                    }
                }
                let statuses: Vec<_> = tx.contestants(&id)?.iter().map(|c| c.status).collect();
                match decisions::battle_outcome(&statuses, cancel_requested) {
                    Some(status) => Ok(tx.finish_battle(&id, status, at)?.then_some(status)),
                    None => Ok(None),
                }
            })
        })
        .await
}

/// Resume for one battle: take the lease, reconcile each contestant, drive
/// the rest. `None` when another live process holds it and `strict` is off.
pub(super) async fn resume_one(
    engine: &Engine,
    battle_id: &str,
    strict: bool,
) -> Result<Option<Battle>> {
    let engine = &engine.pinned();
    let battle = engine.battle(battle_id).await?;
    if battle.status.is_terminal() {
        return Ok(Some(battle));
    }
    let held = match hold(engine, battle_id).await {
        Ok(held) => held,
        Err(Error::Conflict(msg)) if !strict => {
            tracing::info!(battle = %battle_id, "{msg}");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let max = engine.config().limits.max_resume_attempts;
    for c in &battle.contestants {
        let written = c.result_path.as_ref().is_some_and(|p| p.exists());
        let action = decisions::reconcile(c.status, c.attempts, written, max);
        let (c2, at) = (c.clone(), engine.now());
        match action {
            ResumeAction::Keep => {}
            ResumeAction::WriteResult => files::write_result(engine, &battle, c).await?,
            ResumeAction::Rerun => {
                tracing::info!(battle = %battle_id, contestant = %c.id, "re-running interrupted contestant");
                engine
                    .db(move |s| {
                        s.transact(|tx| {
                            tx.emit(
                                &c2.battle_id,
                                Some(&c2.id),
                                at,
                                EventKind::Reset {
                                    reason: "the process running it stopped; running it again"
                                        .into(),
                                },
                            )?;
                            tx.move_contestant(
                                &c2,
                                ContestantStatus::Running,
                                ContestantStatus::Queued,
                                None,
                                at,
                            )
                        })
                    })
                    .await?;
                // It starts again from its base: the lost attempt's files
                // and commits are not the task it is given.
                if let Some(path) = c.worktree.clone() {
                    let project = battle.objects_source().to_path_buf();
                    tokio::task::spawn_blocking(move || {
                        crate::worktree::remove(&project, &path, true)
                    })
                    .await?
                    .map_err(|e| {
                        Error::Git(format!("clearing the lost attempt's worktree: {e}"))
                    })?;
                }
            }
            ResumeAction::GiveUp(message) => {
                engine
                    .move_contestant(
                        c,
                        ContestantStatus::Running,
                        ContestantStatus::Error,
                        Some(message),
                    )
                    .await?;
                let fresh = engine.battle(battle_id).await?;
                if let Some(c) = fresh.contestants.iter().find(|x| x.id == c.id) {
                    files::write_result(engine, &fresh, c).await?;
                }
            }
        }
    }
    let id = battle_id.to_string();
    let (cancel_requested, _) = engine
        .db(move |s| s.transact(|tx| tx.cancel_requests(&id)))
        .await?;
    if cancel_requested {
        held.live.cancel.cancel();
    }
    let battle = engine.battle(battle_id).await?;
    super::reserve::keep(engine).await;
    schedule(engine, &battle, &held.live).await?;
    let done = finish(engine, battle_id, held.live.cancel.is_cancelled()).await?;
    drop(held);
    Ok(Some(done))
}

/// Cancels a battle nobody is driving: every unfinished contestant becomes
/// `cancelled` and the battle is finished. `None` when a live process drives
/// it (it will apply the request itself).
pub(super) async fn settle_cancel(engine: &Engine, battle_id: &str) -> Result<Option<Battle>> {
    let held = match hold(engine, battle_id).await {
        Ok(held) => held,
        Err(Error::Conflict(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let battle = engine.battle(battle_id).await?;
    let (cancel_battle, wanted) = {
        let id = battle_id.to_string();
        engine
            .db(move |s| s.transact(|tx| tx.cancel_requests(&id)))
            .await?
    };
    for c in battle
        .contestants
        .iter()
        .filter(|c| !c.status.is_terminal())
    {
        if !cancel_battle && !wanted.contains(&c.id) {
            continue;
        }
        engine
            .move_contestant(c, c.status, ContestantStatus::Cancelled, None)
            .await?;
    }
    if cancel_battle {
        let done = finish(engine, battle_id, true).await?;
        drop(held);
        return Ok(Some(done));
    }
    drop(held);
    // Only some contestants were cancelled; the rest wait for a resume.
    engine.battle(battle_id).await.map(Some)
}
