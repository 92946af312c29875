//! Taking a turn on a lane. A lane is one model server as a resource of
//! the whole machine (see `decisions::lane_of`): whoever calls a model —
//! a contestant, a Coding agent, the judge, an examiner — takes a ticket in
//! the database's queue for its lane and waits until
//! `decisions::lane_turn` says it may go. Tickets are leases: this
//! process renews its own (`renew`), and a waiter drops the tickets of
//! processes that are gone, so nothing waits for a dead holder.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::decisions::{self, LaneSpec, LaneVerdict, Turn};
use crate::error::{Error, Result};
use crate::store::{self, NewTicket, TakeTurn, Tx};

use super::{pid_alive, Engine, Inner, LEASE_TTL};

/// How often a waiter that is next in line looks again (it is also woken at
/// once when a slot is given back in this process); the others look less
/// often, since someone goes before them anyway.
const POLL_NEXT: Duration = Duration::from_millis(20);
const POLL_BEHIND: Duration = Duration::from_millis(200);
/// The same on a team database while its notices arrive: a slot given back
/// on any machine wakes the lane's waiters at once, so these polls are
/// only the fallback (a holder that died; a notice lost).
const TEAM_POLL_NEXT: Duration = Duration::from_secs(1);
const TEAM_POLL_BEHIND: Duration = Duration::from_secs(5);
/// How often this process renews the leases of its tickets.
const RENEW_EVERY: Duration = Duration::from_secs(2);

/// This process's side of the lanes: a wake-up per lane for waiters here,
/// and whether the renewal task runs.
#[derive(Default)]
pub(super) struct Lanes {
    wake: Mutex<HashMap<String, Arc<Notify>>>,
    renewing: AtomicBool,
    /// A team database's notices, once the first lane is joined.
    listener: std::sync::OnceLock<Option<store::Listener>>,
}

impl Lanes {
    fn wake(&self, key: &str) -> Arc<Notify> {
        let mut map = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(key.to_string()).or_default().clone()
    }

    /// Wakes every waiter here (notices may have been missed).
    fn wake_all(&self) {
        let map = self.wake.lock().unwrap_or_else(|p| p.into_inner());
        for wake in map.values() {
            wake.notify_waiters();
        }
    }

    /// How long a waiter sleeps before it looks again, unless woken.
    fn poll(&self, next_in_line: bool) -> Duration {
        let notified = self
            .listener
            .get()
            .and_then(Option::as_ref)
            .is_some_and(store::Listener::healthy);
        match (notified, next_in_line) {
            (true, true) => TEAM_POLL_NEXT,
            (true, false) => TEAM_POLL_BEHIND,
            (false, true) => POLL_NEXT,
            (false, false) => POLL_BEHIND,
        }
    }
}

/// Who wants a lane, for what, and since when.
pub(super) struct Want {
    pub provider: String,
    pub model: String,
    /// How waiters elsewhere see it: "battle 1a2b3c4d, contestant 2".
    pub holder: String,
    pub battle_id: Option<String>,
    /// A contestant's waiting reason is recorded and announced.
    pub contestant_id: Option<String>,
    /// When the work became ready; earlier goes first.
    pub ready_at: DateTime<Utc>,
    /// Breaks ties: the contestant's place in its battle.
    pub position: u32,
}

/// How a battle is named to other waiters: by its title, its prompt's
/// first words ("“What is the capital of France?”"), never its id.
pub(super) fn battle_name(battle: &crate::battle::Battle) -> String {
    crate::battle::title(&battle.prompt)
}

/// A slot of a lane, held until dropped.
pub(super) struct LaneSlot {
    held: Option<(Engine, String, i64)>,
    /// The local server served another model just before: this one's first
    /// token waits for the model to load.
    pub model_switched: bool,
}

impl LaneSlot {
    /// No lane to wait for (the provider is not one of Arena's).
    fn free() -> LaneSlot {
        LaneSlot {
            held: None,
            model_switched: false,
        }
    }

    /// Its ticket, for a caller that gives it back in a transaction of
    /// its own (then [`LaneSlot::given_back`]).
    pub(super) fn ticket(&self) -> Option<i64> {
        self.held.as_ref().map(|(_, _, ticket)| *ticket)
    }

    /// Its ticket was given back in a caller's committed transaction
    /// (with a contestant's end): wakes this process's waiters for it.
    pub(super) fn given_back(mut self) {
        if let Some((engine, key, _)) = self.held.take() {
            engine.inner.lanes.wake(&key).notify_waiters();
        }
    }
}

impl Drop for LaneSlot {
    fn drop(&mut self) {
        if let Some((engine, key, ticket)) = self.held.take() {
            leave(engine, key, ticket);
        }
    }
}

/// Gives a ticket back and wakes this process's waiters for its lane.
fn leave(engine: Engine, key: String, ticket: i64) {
    let release = move || {
        if let Err(e) = engine.inner.store.transact(|tx| tx.release_ticket(ticket)) {
            tracing::warn!(lane = %key, error = %e, "could not give back a lane slot; it expires");
        }
        engine.inner.lanes.wake(&key).notify_waiters();
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn_blocking(release);
        }
        Err(_) => release(),
    }
}

/// Waits for a slot of the lane that serves `want.provider`. `None` when
/// `token` was cancelled first (the ticket is given back).
pub(super) async fn take(
    engine: &Engine,
    want: Want,
    token: &CancellationToken,
) -> Result<Option<LaneSlot>> {
    join(engine, want).await?.turn(engine, token).await
}

/// A place in a lane's queue, given back when dropped. Joining is apart
/// from waiting so that a battle's contestants join in their roster order
/// before any of them can be served.
pub(super) struct Place {
    /// `None`: the provider is not one of Arena's; no lane to wait for.
    spec: Option<LaneSpec>,
    want: Want,
    ticket: LaneSlot,
}

/// Joins the queue of the lane that serves `want.provider`.
pub(super) async fn join(engine: &Engine, want: Want) -> Result<Place> {
    let mut places = join_all(engine, vec![want]).await;
    places
        .pop()
        .unwrap_or_else(|| Err(Error::Task("no place was made".into())))
}

/// Joins the queues of the lanes that serve each of `wants`, in that
/// order and in one transaction (a battle's contestants, which would
/// otherwise cost one each): each one's place, or why it has none.
pub(super) async fn join_all(engine: &Engine, wants: Vec<Want>) -> Vec<Result<Place>> {
    let specs: Vec<Option<LaneSpec>> = wants
        .iter()
        .map(|w| {
            engine
                .provider(&w.provider)
                .map(|p| decisions::lane_of(&p.config, engine.team_machine()))
        })
        .collect();
    let queued: Vec<(&LaneSpec, &Want)> = specs
        .iter()
        .zip(&wants)
        .filter_map(|(spec, want)| Some((spec.as_ref()?, want)))
        .collect();
    let tickets = if queued.is_empty() {
        Ok(Vec::new())
    } else {
        start_renewing(engine);
        enqueue(engine, &queued).await
    };
    let mut tickets = match tickets {
        Ok(tickets) => tickets.into_iter(),
        Err(e) => {
            let why = e.to_string();
            return wants
                .iter()
                .map(|_| {
                    Err(Error::Task(format!(
                        "could not join the lane's queue: {why}"
                    )))
                })
                .collect();
        }
    };
    specs
        .into_iter()
        .zip(wants)
        .map(|(spec, want)| {
            let ticket = match &spec {
                None => LaneSlot::free(),
                Some(spec) => {
                    let ticket = tickets
                        .next()
                        .ok_or_else(|| Error::Task("a lane ticket is missing".into()))?;
                    LaneSlot {
                        held: Some((engine.clone(), spec.key.clone(), ticket)),
                        model_switched: false,
                    }
                }
            };
            Ok(Place { spec, want, ticket })
        })
        .collect()
}

impl Place {
    /// Waits for its turn: the slot when it comes, `None` when `token` was
    /// cancelled first (the place is given back).
    pub(super) async fn turn(
        self,
        engine: &Engine,
        token: &CancellationToken,
    ) -> Result<Option<LaneSlot>> {
        let none: Option<fn(&mut Tx<'_>) -> store::Result<()>> = None;
        Ok(self.wait(engine, token, none).await?.map(|(slot, _)| slot))
    }

    /// [`Place::turn`], and `then` in the transaction that takes the turn
    /// (a contestant's start): the turns and starts of a battle's
    /// contestants are then one grouped write (see `Engine::grouped`),
    /// not a transaction each. `then` runs apart when there is no lane.
    pub(super) async fn turn_and<T, F>(
        self,
        engine: &Engine,
        token: &CancellationToken,
        then: F,
    ) -> Result<Option<(LaneSlot, T)>>
    where
        T: Send + 'static,
        F: FnMut(&mut Tx<'_>) -> store::Result<T> + Clone + Send + 'static,
    {
        match self.wait(engine, token, Some(then.clone())).await? {
            None => Ok(None),
            Some((slot, Some(value))) => Ok(Some((slot, value))),
            Some((slot, None)) => Ok(Some((slot, engine.grouped(then).await?))),
        }
    }

    /// Waits for the turn; with `then`, takes it in a grouped write that
    /// runs `then` too once it is granted (its value).
    async fn wait<T, F>(
        self,
        engine: &Engine,
        token: &CancellationToken,
        then: Option<F>,
    ) -> Result<Option<(LaneSlot, Option<T>)>>
    where
        T: Send + 'static,
        F: FnMut(&mut Tx<'_>) -> store::Result<T> + Clone + Send + 'static,
    {
        let Place {
            spec,
            want,
            ticket: mut guard,
        } = self;
        let (Some(spec), Some(mut ticket)) = (spec, guard.ticket()) else {
            return Ok(Some((guard, None)));
        };
        if token.is_cancelled() {
            return Ok(None);
        }
        let wake = engine.inner.lanes.wake(&spec.key);
        let shows = want.battle_id.as_deref().zip(want.contestant_id.as_deref());
        let mut shown: Option<String> = None;
        loop {
            let notified = wake.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let now = engine.lease_ms();
            let turn = match peek(engine, &spec, ticket, now).await? {
                Peek::MayGo => {
                    // The reason it waited is cleared as it goes: in the
                    // same grouped write as its start, before it shows as
                    // running.
                    let shown_by = shows.filter(|_| shown.is_some());
                    let grouped = then.clone().map(|then| Start {
                        then,
                        shown_by: shown_by.map(|(b, c)| (b.to_string(), c.to_string())),
                        at: engine.now(),
                    });
                    match try_take(engine, &spec, ticket, &want.model, now, grouped).await? {
                        (TakeTurn::Granted { previous_model }, value) => {
                            guard.model_switched =
                                spec.local && previous_model.is_some_and(|m| m != want.model);
                            if let (Some((b, c)), None) = (shown_by, &then) {
                                show_waiting(engine, b, c, None).await?;
                            }
                            return Ok(Some((guard, value)));
                        }
                        (TakeTurn::Wait(turn), _) => turn,
                        (TakeTurn::Lost, _) => {
                            tracing::warn!(lane = %spec.key, "lane ticket expired while waiting; queueing again");
                            guard.held = None;
                            ticket = enqueue(engine, &[(&spec, &want)])
                                .await?
                                .pop()
                                .ok_or_else(|| Error::Task("no lane ticket was made".into()))?;
                            guard.held = Some((engine.clone(), spec.key.clone(), ticket));
                            continue;
                        }
                    }
                }
                Peek::Wait(turn) => turn,
            };
            let reason = decisions::waiting_reason(&spec, &turn, now);
            if reason != shown {
                if let Some((b, c)) = shows {
                    show_waiting(engine, b, c, reason.as_deref()).await?;
                }
                tracing::debug!(lane = %spec.key, holder = %want.holder, reason = ?reason, "waiting for the lane");
                shown = reason;
            }
            let mut poll = engine
                .inner
                .lanes
                .poll(matches!(turn, Turn::Wait { ahead: 0, .. }));
            // A start rate used up: look again when it frees, not later.
            if let Turn::Wait {
                rate_limited_until: Some(until),
                ..
            } = turn
            {
                let until = Duration::from_millis((until - now).max(1) as u64);
                poll = poll.min(until);
            }
            tokio::select! {
                biased;
                _ = token.cancelled() => return Ok(None),
                _ = &mut notified => {}
                _ = tokio::time::sleep(poll) => {}
            }
        }
    }
}

/// Takes a ticket in the queue of each lane, in one transaction.
async fn enqueue(engine: &Engine, wants: &[(&LaneSpec, &Want)]) -> Result<Vec<i64>> {
    let lease = engine.lease_for_now();
    // Readiness on the lease clock too: first come, first served across
    // machines whose clocks disagree.
    let offset = engine.clock_offset_ms();
    let owned: Vec<_> = wants
        .iter()
        .map(|(spec, want)| {
            (
                spec.key.clone(),
                want.holder.clone(),
                want.model.clone(),
                want.battle_id.clone(),
                want.contestant_id.clone(),
                store::ms(want.ready_at) + offset,
                want.position,
            )
        })
        .collect();
    engine
        .db(move |s| {
            s.transact(|tx| {
                // Several lanes: locked first, in one order.
                tx.lock_lanes(owned.iter().map(|o| o.0.as_str()))?;
                owned
                    .iter()
                    .map(
                        |(lane, holder, model, battle, contestant, ready_at_ms, position)| {
                            tx.enqueue_ticket(&NewTicket {
                                lane,
                                ready_at_ms: *ready_at_ms,
                                position: *position,
                                holder,
                                battle_id: battle.as_deref(),
                                contestant_id: contestant.as_deref(),
                                model,
                                lease: &lease,
                            })
                        },
                    )
                    .collect()
            })
        })
        .await
}

enum Peek {
    /// It may be our turn (or a ticket of a dead process is in the way):
    /// worth taking the write lock for.
    MayGo,
    Wait(Turn),
}

/// Reads the queue without taking the database's write lock.
async fn peek(engine: &Engine, spec: &LaneSpec, ticket: i64, now: i64) -> Result<Peek> {
    let key = spec.key.clone();
    let (tickets, starts) = engine.db(move |s| s.lane_queue(&key, now)).await?;
    let host = &engine.inner.me.host;
    let decision = decisions::lane_decision(tickets, ticket, spec, &starts, now, host, pid_alive);
    // Stale tickets to drop, or a lost ticket to report, need the write
    // lock as much as a turn does.
    Ok(match decision.verdict {
        LaneVerdict::Turn(wait @ Turn::Wait { .. }) if decision.stale.is_empty() => {
            Peek::Wait(wait)
        }
        _ => Peek::MayGo,
    })
}

/// What goes with a turn taken in a grouped write: the waiting reason a
/// contestant shows (battle, contestant), cleared as of `at`, then `then`.
struct Start<F> {
    then: F,
    shown_by: Option<(String, String)>,
    at: DateTime<Utc>,
}

/// Takes the turn if it has come: in a transaction of its own, or with a
/// [`Start`] (run once it is granted) in the journal's next grouped write.
async fn try_take<T, F>(
    engine: &Engine,
    spec: &LaneSpec,
    ticket: i64,
    model: &str,
    now: i64,
    start: Option<Start<F>>,
) -> Result<(TakeTurn, Option<T>)>
where
    T: Send + 'static,
    F: FnMut(&mut Tx<'_>) -> store::Result<T> + Send + 'static,
{
    let (spec, model, host) = (
        spec.clone(),
        model.to_string(),
        engine.inner.me.host.clone(),
    );
    let lanes = vec![spec.key.clone()];
    let take = move |tx: &mut Tx<'_>| tx.take_turn(ticket, &spec, &model, now, &host, pid_alive);
    match start {
        None => Ok((engine.db(move |s| s.transact(take)).await?, None)),
        Some(Start {
            mut then,
            shown_by,
            at,
        }) => {
            engine
                .grouped_on_lanes(lanes, move |tx| {
                    let turn = take(tx)?;
                    let value = match turn {
                        TakeTurn::Granted { .. } => {
                            if let Some((b, c)) = &shown_by {
                                tx.set_waiting(b, c, None, at)?;
                            }
                            Some(then(tx)?)
                        }
                        _ => None,
                    };
                    Ok((turn, value))
                })
                .await
        }
    }
}

async fn show_waiting(
    engine: &Engine,
    battle_id: &str,
    contestant_id: &str,
    reason: Option<&str>,
) -> Result<()> {
    let (b, c, r, at) = (
        battle_id.to_string(),
        contestant_id.to_string(),
        reason.map(str::to_string),
        engine.now(),
    );
    engine
        .db(move |s| s.transact(|tx| tx.set_waiting(&b, &c, r.as_deref(), at)))
        .await
}

/// Starts (once per engine) the task that renews this process's tickets,
/// and on a team database the one that wakes waiters on its notices.
fn start_renewing(engine: &Engine) {
    if engine.inner.lanes.renewing.swap(true, Ordering::SeqCst) {
        return;
    }
    start_listening(engine);
    let weak: Weak<Inner> = Arc::downgrade(&engine.inner);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(RENEW_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            let engine = Engine {
                inner,
                pinned: None,
            };
            let owner = engine.inner.me.owner.clone();
            let expires = engine.lease_ms() + LEASE_TTL.as_millis() as i64;
            if let Err(e) = engine
                .db(move |s| s.transact(|tx| tx.renew_tickets(&owner, expires)))
                .await
            {
                tracing::warn!(error = %e, "could not renew lane tickets");
            }
        }
    });
}

/// Wakes this process's waiters of a lane whenever the team database says
/// a slot of it was given back (on any machine).
fn start_listening(engine: &Engine) {
    let listener = engine
        .inner
        .lanes
        .listener
        .get_or_init(|| engine.inner.store.listener());
    let Some(listener) = listener else { return };
    let mut notices = listener.subscribe();
    let weak: Weak<Inner> = Arc::downgrade(&engine.inner);
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let notice = notices.recv().await;
            let Some(inner) = weak.upgrade() else { return };
            match notice {
                Ok(store::Notice::Lane(key)) => inner.lanes.wake(&key).notify_waiters(),
                Ok(store::Notice::Resync) | Err(RecvError::Lagged(_)) => inner.lanes.wake_all(),
                Err(RecvError::Closed) => return,
            }
        }
    });
}
