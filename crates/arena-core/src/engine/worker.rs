//! Workers: take places of running series and run them. On one machine a
//! series' driver is its only worker (it serves its own places); in team
//! mode `arena worker` (and the app's switch) serves the places of every
//! running series it can, on any machine, with its own providers and
//! agents. A worker holds a place by a claim it renews; a worker that dies
//! stops renewing and another takes the place over, resuming its battle
//! (what had finished stays; a running answer runs again).
//!
//! A series a worker cannot serve (a provider, model, persona or agent it
//! lacks; a Coding series whose project is on another machine) is left to
//! others, with the reason recorded for the series screen. On a team
//! database a series' row is data, never a command or a credential: a
//! worker runs its check commands and fetches its remote only as this
//! machine's user allowed (see `approvals`), and only the commit it
//! starts from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::battle::BattleType;
use crate::error::{Error, Result};
use crate::series::Series;
use crate::store::WorkerBeat;

use super::approvals;
use super::goals::Judges;
use super::validate::{self, Plan};
use super::{pid_alive, Engine, RENEW_WITHIN};

/// How often a worker renews its claims, says it is alive and looks for
/// cancelled series.
const RENEW: Duration = Duration::from_secs(2);
/// How often an idle worker looks for places.
const IDLE_POLL: Duration = Duration::from_millis(500);
/// How long a worker leaves alone a series it could not serve.
const REFUSED_FOR: Duration = Duration::from_secs(300);
/// …and one that waits for its user's approval (`arena team approve`):
/// looked at again soon, so an approval is taken up at once.
const APPROVAL_RECHECK: Duration = Duration::from_secs(3);
/// Seen within this long, a worker counts as connected.
pub(crate) const SEEN_WITHIN_MS: i64 = 60_000;

/// What `arena worker` serves.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Places run at once.
    pub places: u32,
    /// Only this series' places (an id or its short form); else every
    /// running series'.
    pub series: Option<String>,
}

/// Which series a worker serves.
#[derive(Debug, Clone)]
pub(super) enum Scope {
    /// Every running series it can (a worker proper; it also drives a
    /// series nobody drives any more).
    Any,
    /// One series' places: its driver serving them.
    One(String),
}

/// A place this worker could not run, for its series' driver.
#[derive(Debug)]
pub(super) struct Refused {
    /// None: the series as a whole (checked before any place was taken).
    pub slot: Option<u64>,
    pub error: Error,
}

/// What a worker knows of a series it serves.
struct Served {
    series: Arc<Series>,
    plan: Arc<Plan>,
    judges: Arc<Judges>,
    /// Cancelled when the series is asked to stop.
    token: CancellationToken,
}

/// A series this worker leaves alone for a while, and why.
struct Left {
    until: Instant,
}

/// A lane in use on one machine.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneUse {
    pub lane: String,
    pub machine: String,
    /// Requests holding one of its slots, and waiting for one.
    pub held: u64,
    pub waiting: u64,
}

/// Who is at work on this database now: the machines with a process that
/// drives a battle or a series or uses a lane, the workers seen in the
/// last minute, and the lanes in use.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    pub machines: Vec<String>,
    pub workers: Vec<WorkerBeat>,
    pub lanes: Vec<LaneUse>,
    /// When this was read (ms, the lease clock), for the workers' ages.
    pub now_ms: i64,
}

/// A machine's latest word that it cannot serve a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub machine: String,
    pub reason: String,
    /// When (ms, the lease clock).
    pub at_ms: i64,
}

impl Engine {
    /// Why machines left series `id` (each one's latest reason; it may be
    /// serving it since).
    pub async fn series_refusals(&self, id: &str) -> Result<Vec<Refusal>> {
        let id = self.series(id).await?.id;
        let rows = self.db(move |s| s.series_refusals(&id)).await?;
        Ok(rows
            .into_iter()
            .map(|(machine, reason, at_ms)| Refusal {
                machine,
                reason,
                at_ms,
            })
            .collect())
    }

    /// Who is at work on this database now (see [`Activity`]).
    pub async fn activity(&self) -> Result<Activity> {
        let now_ms = self.lease_ms();
        self.db(move |s| {
            let workers = s.workers_seen(now_ms - SEEN_WITHIN_MS)?;
            let mut machines = s.machines_active(now_ms)?;
            machines.extend(workers.iter().map(|w| w.machine.clone()));
            machines.sort();
            machines.dedup();
            let lanes = s
                .lanes_in_use(now_ms)?
                .into_iter()
                .map(|(lane, machine, held, waiting)| LaneUse {
                    lane,
                    machine,
                    held,
                    waiting,
                })
                .collect();
            Ok::<_, Error>(Activity {
                machines,
                workers,
                lanes,
                now_ms,
            })
        })
        .await
    }

    /// Serves places of running series until `stop` is cancelled (see the
    /// module documentation); in team mode any number of workers on any
    /// machines share the work.
    pub async fn work(&self, options: WorkerOptions, stop: CancellationToken) -> Result<()> {
        let scope = match &options.series {
            Some(id) => Scope::One(self.series(id).await?.id),
            None => Scope::Any,
        };
        serve(self, scope, options.places.max(1), stop, None).await
    }
}

/// The worker's loop: claim what it has room for, run each place, mark it
/// done (or give it back), while a task of its own renews its claims;
/// until `stop`. `driver`: the series' driver serving its own places (its
/// refusals go to `refused`), else a worker proper.
pub(super) async fn serve(
    engine: &Engine,
    scope: Scope,
    places: u32,
    stop: CancellationToken,
    refused: Option<mpsc::UnboundedSender<Refused>>,
) -> Result<()> {
    let engine = &engine.pinned();
    let driver = refused.is_some();
    let role = if driver { "series" } else { "worker" };
    // One row per loop of this process (the app may serve as a worker and
    // drive series at once), apart from its claims' owner.
    let beat_owner = match (&scope, driver) {
        (Scope::One(id), true) => format!("{}/series/{id}", engine.inner.me.owner),
        _ => format!("{}/worker", engine.inner.me.owner),
    };
    let held: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let renewal = AbortOnDrop(tokio::spawn(renew(
        engine.clone(),
        held.clone(),
        WorkerBeat {
            owner: beat_owner.clone(),
            machine: engine.machine().to_string(),
            pid: engine.inner.me.pid,
            role: role.into(),
            user: engine.user().map(str::to_string),
            places: u64::from(places),
            taken: 0,
            started_at_ms: engine.lease_ms(),
            seen_at_ms: 0,
        },
    )));
    let mut running: JoinSet<(String, u64, Result<String>)> = JoinSet::new();
    let mut tasks: HashMap<tokio::task::Id, (String, u64)> = HashMap::new();
    let mut served: HashMap<String, Served> = HashMap::new();
    let mut left: HashMap<String, Left> = HashMap::new();
    let mut failures: HashMap<(String, u64), u32> = HashMap::new();
    let mut driving: JoinSet<()> = JoinSet::new();
    // Places that ended, recorded with the next claim.
    let mut ends: Vec<PlaceEnd> = Vec::new();
    let mut watch = tokio::time::interval(RENEW);
    watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut look = tokio::time::interval(IDLE_POLL);
    look.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled(), if !stop.is_cancelled() => {}
            _ = watch.tick() => {
                if let Err(e) = watch_series(engine, &mut served).await {
                    tracing::warn!(error = %e, "a worker could not look at its series");
                }
                if matches!(scope, Scope::Any) && !stop.is_cancelled() {
                    adopt_series(engine, &served, &mut driving);
                }
            }
            _ = look.tick(), if !stop.is_cancelled() && (running.len() as u32) < places => {
                let room = places as usize - running.len();
                let known = (&mut served, &mut left);
                let ending = std::mem::take(&mut ends);
                match claim(engine, &scope, room, known, refused.as_ref(), ending.clone()).await {
                    Ok(claimed) => {
                        for (series_id, slot) in claimed {
                            let Some(s) = served.get(&series_id) else { continue };
                            lock(&held).push((series_id.clone(), slot));
                            let task = running.spawn(run_claimed(engine.clone(), s, slot));
                            tasks.insert(task.id(), (series_id, slot));
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "a worker could not claim places");
                        record_ends(engine, ending).await;
                    }
                }
            }
            Some(joined) = running.join_next_with_id() => {
                let (series_id, slot, outcome) = match joined {
                    Ok((id, ended)) => {
                        tasks.remove(&id);
                        ended
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "a place's task panicked");
                        let Some((series_id, slot)) = tasks.remove(&e.id()) else { continue };
                        let why = Error::Task(format!("a place's task panicked: {e}"));
                        (series_id, slot, Err(why))
                    }
                };
                let place = (series_id.clone(), slot);
                lock(&held).retain(|p| *p != place);
                let ended = Ended { series_id: &series_id, slot, outcome };
                ends.push(settle(engine, ended, &mut left, &mut failures, refused.as_ref()).await);
                // Room again: look for more at once (recording this end with that claim).
                look.reset_immediately();
            }
            Some(_) = driving.join_next() => {}
        }
        if stop.is_cancelled() {
            // No claim follows.
            record_ends(engine, std::mem::take(&mut ends)).await;
        }
        if stop.is_cancelled() && running.is_empty() {
            break;
        }
    }
    driving.abort_all();
    drop(renewal);
    let forgot = engine
        .db(move |s| s.transact(|tx| tx.forget_worker(&beat_owner)))
        .await;
    if let Err(e) = forgot {
        tracing::warn!(error = %e, "a worker could not say it stopped");
    }
    Ok(())
}

/// A task, aborted when this is dropped (however its owner ends).
pub(super) struct AbortOnDrop<T>(pub tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Renews the claims on the places in `held` and says this worker is
/// alive, every [`RENEW`], whatever the worker's loop is busy with (taking
/// up a series can take a while: its providers asked, its project fetched).
async fn renew(engine: Engine, held: Arc<Mutex<Vec<(String, u64)>>>, mut beat: WorkerBeat) {
    let mut tick = tokio::time::interval(RENEW);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Until when every claim held is known to last: a claim lasts
    // from when it was made or last renewed, never from before this.
    let mut renewed_until = 0;
    loop {
        tick.tick().await;
        let mut places = lock(&held).clone();
        beat.taken = places.len() as u64;
        beat.seen_at_ms = engine.lease_ms();
        // Claims are renewed once they have less than RENEW_WITHIN left
        // (each renewal is a page of the database written), the beat
        // (in the live journal) every time.
        if beat.seen_at_ms + RENEW_WITHIN.as_millis() as i64 <= renewed_until {
            places.clear();
        }
        let (b, expires) = (beat.clone(), engine.lease_for_now().expires_at_ms);
        let owner = engine.inner.me.owner.clone();
        let renewing = !places.is_empty();
        let renewed = engine
            .db(move |s| {
                s.transact(|tx| {
                    let kept = tx.renew_places(&owner, &places, expires)?;
                    tx.beat_worker(&b)?;
                    Ok(kept < places.len())
                })
            })
            .await;
        match renewed {
            Ok(lost) => {
                if renewing {
                    renewed_until = expires;
                }
                if lost {
                    tracing::warn!("a place this worker runs was taken over by another");
                }
            }
            Err(e) => tracing::warn!(error = %e, "a worker's renewal failed"),
        }
    }
}

/// Cancels the places of series asked to stop, and forgets series that
/// ended.
async fn watch_series(engine: &Engine, served: &mut HashMap<String, Served>) -> Result<()> {
    let ids: Vec<String> = served.keys().cloned().collect();
    let stopped = engine
        .db(move |s| {
            let mut stopped = Vec::new();
            for id in ids {
                let series = s.series(&id)?;
                if series.status.is_terminal() || s.series_cancel_requested(&id)? {
                    stopped.push((id, series.status.is_terminal()));
                }
            }
            Ok::<_, Error>(stopped)
        })
        .await?;
    for (id, ended) in stopped {
        if let Some(s) = served.get(&id) {
            s.token.cancel();
        }
        if ended {
            served.remove(&id);
        }
    }
    Ok(())
}

/// A worker proper also drives running series nobody drives any more (the
/// process that started one died), so a team's series finish without
/// anyone resuming them. Each is tried again at the next renewal while
/// another drives it.
fn adopt_series(engine: &Engine, served: &HashMap<String, Served>, driving: &mut JoinSet<()>) {
    if !driving.is_empty() {
        return;
    }
    let ids: Vec<String> = served.keys().cloned().collect();
    let engine = engine.clone();
    driving.spawn(async move {
        for id in ids {
            let (i, now) = (id.clone(), engine.lease_ms());
            let free = engine
                .db(move |s| {
                    Ok::<_, Error>(match s.series_lease(&i)? {
                        None => true,
                        Some(l) => l.expires_at_ms <= now,
                    })
                })
                .await;
            if !matches!(free, Ok(true)) {
                continue;
            }
            match engine.drive_series_only(&id).await {
                Ok(_) | Err(Error::Conflict(_)) => {}
                Err(e) => tracing::warn!(series = %id, error = %e, "could not drive a series"),
            }
        }
    });
}

/// Claims up to `room` places of the series this worker serves (loading
/// and checking each series it meets for the first time).
async fn claim(
    engine: &Engine,
    scope: &Scope,
    room: usize,
    (served, left): (&mut HashMap<String, Served>, &mut HashMap<String, Left>),
    refused: Option<&mpsc::UnboundedSender<Refused>>,
    ends: Vec<PlaceEnd>,
) -> Result<Vec<(String, u64)>> {
    let candidates = match scope {
        Scope::One(id) => vec![id.clone()],
        Scope::Any => engine.db(|s| s.running_series()).await?,
    };
    let now = Instant::now();
    left.retain(|_, l| l.until > now);
    let mut ids = Vec::new();
    for id in candidates {
        if left.contains_key(&id) {
            continue;
        }
        if !served.contains_key(&id) {
            match take_up(engine, &id).await {
                Ok(s) => {
                    served.insert(id.clone(), s);
                }
                Err(e @ (Error::Invalid(_) | Error::Config { .. })) => {
                    refuse(engine, &id, &e, left).await;
                    // The driver decides whether another machine may serve it.
                    if let Some(tx) = refused {
                        let _ = tx.send(Refused {
                            slot: None,
                            error: e,
                        });
                    }
                    continue;
                }
                Err(e) => {
                    tracing::warn!(series = %id, error = %e, "could not read a series to serve");
                    continue;
                }
            }
        }
        ids.push(id);
    }
    if ids.is_empty() {
        record_ends(engine, ends).await;
        return Ok(Vec::new());
    }
    let (me, now_ms, owner) = (
        engine.lease_for_now(),
        engine.lease_ms(),
        engine.inner.me.owner.clone(),
    );
    engine
        .db(move |s| {
            s.transact(|tx| {
                for end in &ends {
                    end.record(tx, &owner)?;
                }
                tx.claim_places(&me, &ids, room, now_ms, pid_alive)
            })
        })
        .await
}

/// How a place this worker ran ended: done, or given back (see
/// [`settle`]). Recorded with the worker's next claim, in its transaction
/// (a place's end and the next place's claim are one write), or alone
/// when no claim follows.
#[derive(Debug, Clone)]
struct PlaceEnd {
    series_id: String,
    slot: u64,
    done: bool,
}

impl PlaceEnd {
    fn record(&self, tx: &mut crate::store::Tx<'_>, owner: &str) -> crate::store::Result<bool> {
        match self.done {
            true => tx.finish_place(&self.series_id, self.slot, owner),
            false => tx.leave_place(&self.series_id, self.slot, owner),
        }
    }
}

/// Records places' ends in a transaction of their own.
async fn record_ends(engine: &Engine, ends: Vec<PlaceEnd>) {
    if ends.is_empty() {
        return;
    }
    let owner = engine.inner.me.owner.clone();
    let kept = engine
        .db(move |s| {
            s.transact(|tx| {
                for end in &ends {
                    end.record(tx, &owner)?;
                }
                Ok(())
            })
        })
        .await;
    if let Err(e) = kept {
        // Their claims lapse and the places are taken again.
        tracing::warn!(error = %e, "could not record places' ends");
    }
}

/// Loads a series and checks that this worker can serve it: its
/// contestants, models and project here, and for Coding that this is the
/// machine its project is on.
async fn take_up(engine: &Engine, id: &str) -> Result<Served> {
    let series = engine.series(id).await?;
    if engine.inner.store.is_team() {
        let (e, s) = (engine.clone(), series.clone());
        tokio::task::spawn_blocking(move || approvals::check_commands(&e, &s)).await??;
    }
    let mut request = super::place::first_battle(&series.request);
    let here = engine.machine();
    let elsewhere = series.machine.as_deref().filter(|m| *m != here);
    if let (BattleType::Coding, true, Some(origin)) = (
        series.request.battle_type,
        engine.inner.store.is_team(),
        elsewhere,
    ) {
        request.project = fetch_project(engine, &series, origin).await?;
    }
    let mut plan = validate::check(engine, request).await?;
    if let Some(base) = &series.base_commit {
        plan.start_from(base);
    }
    let judges = engine.judges(&series.request).await?;
    Ok(Served {
        series: Arc::new(series),
        plan: Arc::new(plan),
        judges: Arc::new(judges),
        token: CancellationToken::new(),
    })
}

/// A Coding series started on machine `origin`: its project, fetched from
/// the git remote the series recorded into this machine's clone of it
/// (under the data folder); refused when it has none.
async fn fetch_project(
    engine: &Engine,
    series: &Series,
    origin: &str,
) -> Result<std::path::PathBuf> {
    let (Some(url), Some(base)) = (series.remote_url.clone(), series.base_commit.clone()) else {
        return Err(crate::error::Invalid::Other(format!(
            "its project is on {origin} and has no git remote holding its base commit, so only {origin} runs it (push the commit and start the series again to share it)"
        ))
        .into());
    };
    let credentials = {
        let (e, s, u) = (engine.clone(), series.clone(), url.clone());
        tokio::task::spawn_blocking(move || approvals::remote(&e, &s, &u)).await??
    };
    let dir = crate::agent::mirror::folder(&engine.data_dir().join("mirrors"), &url);
    let d = dir.clone();
    let local = crate::config::allow_local_remotes();
    // A pack run's tasks each start from a base of their own.
    let mut commits = vec![base];
    for task in series
        .request
        .prompts
        .iter()
        .filter_map(|p| p.task.as_ref())
    {
        if !commits.contains(&task.base) {
            commits.push(task.base.clone());
        }
    }
    tokio::task::spawn_blocking(move || {
        commits.iter().try_for_each(|commit| {
            crate::agent::mirror::update(&url, &d, commit, local, credentials)
        })
    })
    .await?
    .map_err(|e| crate::error::Invalid::Other(format!("cannot fetch its project: {e}")))?;
    Ok(dir)
}

/// Leaves a series alone for a while and records why.
async fn refuse(engine: &Engine, id: &str, why: &Error, left: &mut HashMap<String, Left>) {
    tracing::info!(series = %id, reason = %why, "leaving a series this worker cannot serve");
    let wait = match approvals::awaits_approval(why) {
        true => APPROVAL_RECHECK,
        false => REFUSED_FOR,
    };
    left.insert(
        id.to_string(),
        Left {
            until: Instant::now() + wait,
        },
    );
    let (i, machine, reason, at) = (
        id.to_string(),
        engine.machine().to_string(),
        why.to_string(),
        engine.lease_ms(),
    );
    let recorded = engine
        .db(move |s| s.transact(|tx| tx.refuse_series(&i, &machine, &reason, at)))
        .await;
    if let Err(e) = recorded {
        tracing::warn!(series = %id, error = %e, "could not record why a series was left");
    }
}

/// Runs one claimed place: its battle (the one a lost worker left, if
/// any), analysed and checked against the goal.
fn run_claimed(
    engine: Engine,
    s: &Served,
    slot: u64,
) -> impl std::future::Future<Output = (String, u64, Result<String>)> + Send + 'static {
    let (series, plan, judges, token) = (
        s.series.clone(),
        s.plan.clone(),
        s.judges.clone(),
        s.token.clone(),
    );
    async move {
        let id = series.id.clone();
        let i = id.clone();
        let existing = engine.db(move |s| s.place_battle(&i, slot)).await;
        // A battle left by another process runs its own check command:
        // only when it is one its series asked for (and this machine allowed).
        let existing = match existing {
            Ok(Some(battle)) if engine.inner.store.is_team() => engine
                .battle(&battle)
                .await
                .and_then(|b| approvals::battle_check(&series, b.check_command.as_deref()))
                .map(|()| Some(battle)),
            other => other,
        };
        let existing = match existing {
            Ok(Some(battle)) if series.request.battle_type == BattleType::Coding => {
                take_over_coding(&engine, &plan, &battle)
                    .await
                    .map(|()| Some(battle))
            }
            other => other,
        };
        let outcome = match existing {
            Ok(existing) => {
                super::place::run_place(engine, series, plan, judges, slot, existing, token)
                    .await
                    .map(|(_, battle)| battle)
            }
            Err(e) => Err(e),
        };
        (id, slot, outcome)
    }
}

/// A Coding battle a worker on another machine left unfinished (it died):
/// once that worker's lease on it has lapsed, the battle moves here — its
/// project is this machine's (folder or clone), its results folder too —
/// so that what had not finished starts again from the base commit in new
/// worktrees (what had finished keeps its diff, in the database). While
/// the lease holds, `Conflict`: the place is given back and tried again.
async fn take_over_coding(engine: &Engine, plan: &Plan, battle_id: &str) -> Result<()> {
    let battle = engine.battle(battle_id).await?;
    let here = engine.machine().to_string();
    if battle.status.is_terminal() || battle.machine.as_deref() == Some(here.as_str()) {
        return Ok(());
    }
    let (id, now) = (battle.id.clone(), engine.lease_ms());
    let held = engine
        .db(move |s| Ok::<_, Error>(s.lease(&id)?.is_some_and(|l| l.expires_at_ms > now)))
        .await?;
    if held {
        return Err(Error::Conflict(format!(
            "battle {} is still driven on {}",
            crate::battle::short_id(&battle.id),
            battle.machine.as_deref().unwrap_or("another machine")
        )));
    }
    let results_path = crate::results::battle_dir(
        &plan.project,
        &battle.id,
        battle.battle_type,
        &battle.prompt,
        battle.created_at,
    )?;
    let (id, project) = (battle.id.clone(), plan.project.clone());
    tracing::info!(battle = %id, from = ?battle.machine, "taking over a Coding battle left unfinished elsewhere");
    engine
        .db(move |s| s.transact(|tx| tx.rehome_battle(&id, &project, &results_path, &here)))
        .await?;
    Ok(())
}

/// How one place's run ended.
struct Ended<'a> {
    series_id: &'a str,
    slot: u64,
    outcome: Result<String>,
}

/// Failures of one place on this worker before it is given up as done
/// (its battle, if any, keeps what it has): a place that cannot run must
/// not hold its series up for ever.
const GIVE_UP_AFTER: u32 = 3;
/// A series is left alone this long after one of its places failed here.
const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(5);
/// …and this long after another process still held its battle.
const PAUSE_AFTER_CONFLICT: Duration = Duration::from_secs(2);

/// Decides how a place ended: done; given back (to this worker's next
/// look, after a pause, or another's) with why when it cannot be served
/// here; or, failing again and again, given up as done. The end is for
/// the caller to record.
async fn settle(
    engine: &Engine,
    ended: Ended<'_>,
    left: &mut HashMap<String, Left>,
    failures: &mut HashMap<(String, u64), u32>,
    refused: Option<&mpsc::UnboundedSender<Refused>>,
) -> PlaceEnd {
    let Ended {
        series_id,
        slot,
        outcome,
    } = ended;
    let key = (series_id.to_string(), slot);
    let pause = |left: &mut HashMap<String, Left>, d: Duration| {
        let until = Instant::now() + d;
        let entry = left.entry(series_id.to_string()).or_insert(Left { until });
        entry.until = entry.until.max(until);
    };
    let done = match &outcome {
        Ok(_) => true,
        Err(Error::Conflict(msg)) => {
            // Another process still drives its battle (a worker thought
            // lost that is not): try again later.
            tracing::info!(series = %series_id, slot, "{msg}");
            pause(left, PAUSE_AFTER_CONFLICT);
            false
        }
        Err(Error::Invalid(_) | Error::Config { .. }) => false,
        Err(e) => {
            let n = failures.entry(key.clone()).or_insert(0);
            *n += 1;
            tracing::warn!(series = %series_id, slot, attempt = *n, error = %e, "a place of the series failed");
            pause(left, PAUSE_AFTER_FAILURE);
            *n >= GIVE_UP_AFTER
        }
    };
    if done {
        failures.remove(&key);
    }
    if let Err(e @ (Error::Invalid(_) | Error::Config { .. })) = outcome {
        refuse(engine, series_id, &e, left).await;
        if let Some(tx) = refused {
            let _ = tx.send(Refused {
                slot: Some(slot),
                error: e,
            });
        }
    }
    PlaceEnd {
        series_id: series_id.to_string(),
        slot,
        done,
    }
}
