//! Series: one contestant set run many times, each run an ordinary battle
//! of the series (see `arena_domain::series` for the rules). Its places
//! are rows of the store; the driver (who holds the series' lease) opens
//! them — within the budget, and with `until_decided` a window at a time —
//! and watches them end for the goal and the "decided" rule, while
//! workers (the driver's own serving, and in team mode `arena worker`s on
//! any machine; `worker.rs`) run them (`place.rs`). A crash loses nothing:
//! every battle knows its place in the series and a place's claim lapses,
//! so `resume_series` (or a worker) drives it on, keeping what finished.

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::catalog::Resolved;
use crate::error::{Error, Invalid, Result};
use crate::series::{self, RunRow, Series, SeriesRequest, SeriesStatus};

use super::goals::Judges;
use super::place::first_battle;
use super::validate::{self, Plan};
use super::worker::{serve as serve_places, AbortOnDrop, Refused, Scope, SEEN_WITHIN_MS};
use super::{pid_alive, Engine, HEARTBEAT};
use crate::store::PlaceState;

/// What starting a series did.
#[derive(Debug, Clone)]
pub enum SeriesStart {
    /// A new series, not yet run ([`Engine::run_series`]).
    Created(Series),
    /// The series started earlier with the same key: nothing was started.
    Existing(Series),
}

impl SeriesStart {
    pub fn series(&self) -> &Series {
        match self {
            SeriesStart::Created(s) | SeriesStart::Existing(s) => s,
        }
    }
}

/// A first guess at a battle's cost before any has finished: per
/// contestant, the prompt (4 characters a token) plus 1,024 tokens out,
/// and for the judges 2,000 tokens in and 500 out per contestant.
fn first_guess(engine: &Engine, plan: &Plan, prompt: &str, judges: &Judges) -> f64 {
    let config = engine.config();
    let prompt_tokens = prompt.len() as u64 / 4 + 100;
    let contestants: f64 = plan
        .models()
        .map(|(provider, model)| {
            config
                .price(provider, model)
                .map_or(0.0, |p| p.cost(prompt_tokens, 0, 1024))
        })
        .sum();
    let n = plan.models().count() as u64;
    let judging: f64 = judges
        .models()
        .filter_map(|(provider, model)| config.price(&provider, &model))
        .map(|p| p.cost(2000 * n, 0, 500 * n))
        .sum();
    contestants + judging
}

impl Engine {
    /// Starts a series: checks the request as a battle's (contestants,
    /// models, project) and its own rules (caps, goals, budget), then
    /// records it. With `key`, a series already started with that key is
    /// returned and nothing starts; the same key with another request is
    /// refused. Call [`Engine::run_series`] next.
    pub async fn create_series(
        &self,
        mut request: SeriesRequest,
        key: Option<String>,
    ) -> Result<SeriesStart> {
        request.validate()?;
        // One project however it was named (a missing one is reported below).
        if let Ok(project) = request.project.canonicalize() {
            request.project = project;
        }
        let key = key.map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
        if let Some(key) = &key {
            let k = key.clone();
            if let Some(existing) = self.db(move |s| s.series_by_key(&k)).await? {
                if existing.request == request {
                    return Ok(SeriesStart::Existing(existing));
                }
                return Err(Invalid::Other(format!(
                    "the key `{key}` started series {} with a different request; use another key, or the same request to get that series back",
                    crate::battle::short_id(&existing.id)
                ))
                .into());
            }
        }
        let plan = validate::check(self, first_battle(&request)).await?;
        let judges = self.judges(&request).await?;
        // A Coding series starts every place from the project's HEAD now;
        // on a team, workers elsewhere fetch it from a remote that holds it.
        // (A pack run's places start from their tasks' bases: its first.)
        let first_task = request.prompts.first().and_then(|p| p.task.as_ref());
        let base_commit = match first_task {
            Some(task) => Some(task.base.clone()),
            None => plan.base_commit().map(str::to_string),
        };
        let remote_url = match (&base_commit, self.inner.store.is_team()) {
            (Some(base), true) => {
                // A pack run's tasks start from bases of their own: the
                // remote must hold each of them too.
                let mut bases = vec![base.clone()];
                bases.extend(
                    request
                        .prompts
                        .iter()
                        .filter_map(|p| Some(p.task.as_ref()?.base.clone())),
                );
                let project = request.project.clone();
                tokio::task::spawn_blocking(move || {
                    let mut held = None;
                    for base in &bases {
                        let url = crate::worktree::remote_holding(&project, base)?;
                        if url.is_none() || (held.is_some() && held != url) {
                            return Ok(None);
                        }
                        held = url;
                    }
                    Ok::<_, crate::worktree::WorktreeError>(held)
                })
                .await?
                .map_err(|e| Invalid::Other(e.to_string()))?
                // Never a password into the team's database.
                .map(|url| crate::agent::mirror::shareable(&url))
            }
            _ => None,
        };
        if request.budget_usd.is_some() {
            let config = self.config();
            let unpriced = plan
                .models()
                .map(|(p, m)| (p.to_string(), m.to_string()))
                .chain(judges.models())
                .find(|(p, m)| config.price(p, m).is_none());
            if let Some((provider, model)) = unpriced {
                return Err(Invalid::Other(format!(
                    "--budget needs the price of every model, and `{model}` at `{provider}` has none: add a [[price]] with provider = \"{provider}\" and model = \"{model}\" to arena.toml, or leave out --budget"
                ))
                .into());
            }
        }
        let series = Series {
            id: uuid::Uuid::now_v7().to_string(),
            key,
            total: request.battles(),
            tags: request.tags.clone(),
            request,
            status: SeriesStatus::Running,
            created_at: self.now(),
            finished_at: None,
            decided_after: None,
            report_path: None,
            error: None,
            machine: Some(self.machine().to_string()),
            waiting: None,
            base_commit,
            remote_url,
        };
        let row = series.clone();
        let inserted = self
            .db(move |s| s.transact(|tx| tx.insert_series(&row)))
            .await;
        match inserted {
            Ok(()) => {
                // Its check commands are this user's: approved here.
                if let Err(e) = super::approvals::remember_started(self, &series) {
                    tracing::warn!(error = %e, "could not remember a series' check commands");
                }
                Ok(SeriesStart::Created(series))
            }
            // Two starts with one key at once: the other one won.
            Err(Error::Store(_)) if series.key.is_some() => {
                let k = series.key.clone().unwrap_or_default();
                match self.db(move |s| s.series_by_key(&k)).await? {
                    Some(existing) if existing.request == series.request => {
                        Ok(SeriesStart::Existing(existing))
                    }
                    _ => Err(Error::Conflict(
                        "another series was started with the same key at the same time".into(),
                    )),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The models that judge a series' battles, resolved to their
    /// providers once (discovery asks every provider).
    pub(super) async fn judges(&self, request: &SeriesRequest) -> Result<Judges> {
        let default = self.config().default_model.clone();
        let has_goal = request.prompts.iter().any(|p| request.goal_of(p).is_some());
        let goal_model =
            match (has_goal, request.goal_model.clone().or(default.clone())) {
                (false, _) => None,
                (true, Some(m)) => Some(m),
                (true, None) => return Err(Invalid::Other(
                    "a goal needs a judge: pass --goal-model or set default_model in arena.toml"
                        .into(),
                )
                .into()),
            };
        let analysis_model = default.filter(|_| request.analysis);
        let confirm_model = request.confirm_model.clone().filter(|_| has_goal);
        if analysis_model.is_none() && goal_model.is_none() {
            return Ok(Judges::default());
        }
        let catalog = self.catalog().await;
        let resolve = |m: Option<String>| -> Result<Option<Resolved>> {
            Ok(match m {
                Some(m) => Some(catalog.resolve(&m)?),
                None => None,
            })
        };
        Ok(Judges {
            analysis: resolve(analysis_model)?,
            goal: resolve(goal_model)?,
            confirm: resolve(confirm_model)?,
        })
    }

    pub async fn series(&self, id: &str) -> Result<Series> {
        let id = self.resolve_series(id).await?;
        self.db(move |s| s.series(&id)).await
    }

    pub async fn series_list(&self, limit: usize) -> Result<Vec<Series>> {
        self.db(move |s| s.series_list(limit)).await
    }

    async fn resolve_series(&self, key: &str) -> Result<String> {
        let key = key.to_string();
        self.db(move |s| s.resolve_series_id(&key)).await
    }

    /// Asks the series to stop (from any process): no new battle starts and
    /// the running ones are cancelled; it ends `cancelled`. A series nobody
    /// drives ends at once.
    pub async fn cancel_series(&self, id: &str) -> Result<Series> {
        let id = self.resolve_series(id).await?;
        let i = id.clone();
        self.db(move |s| s.transact(|tx| tx.request_series_cancel(&i)))
            .await?;
        let (i, now) = (id.clone(), self.lease_ms());
        let lease = self.lease_for_now();
        let free = self
            .db(move |s| {
                s.transact(|tx| {
                    let free = tx.take_series_lease(&i, &lease, now, pid_alive)?;
                    if free {
                        tx.release_series_lease(&i, &lease.owner)?;
                    }
                    Ok(free)
                })
            })
            .await?;
        if free {
            // Nobody drives it: cancel its unfinished battles and end it here.
            let slots = {
                let i = id.clone();
                self.db(move |s| s.series_battles(&i)).await?
            };
            for battle_id in slots.values() {
                if !self.battle(battle_id).await?.status.is_terminal() {
                    self.cancel_battle(battle_id).await?;
                }
            }
            let (i, at) = (id.clone(), self.now());
            self.db(move |s| {
                s.transact(|tx| tx.finish_series(&i, SeriesStatus::Cancelled, at, None))
            })
            .await?;
        }
        self.series(&id).await
    }

    /// Series left running by a process that stopped: all of them, or just
    /// `only`; each is driven to its end (finished battles are kept, an
    /// unfinished one is resumed, places without a battle are started).
    /// Series another live process drives are skipped.
    pub async fn resume_series(&self, only: Option<&str>) -> Result<Vec<Series>> {
        let ids = match only {
            Some(id) => vec![self.resolve_series(id).await?],
            None => self.db(|s| s.running_series()).await?,
        };
        let mut out = Vec::new();
        for id in ids {
            match self.run_series(&id).await {
                Ok(s) => out.push(s),
                Err(Error::Conflict(msg)) if only.is_none() => {
                    tracing::info!(series = %id, "{msg}");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Drives a series to its end and writes its report; returns it ended.
    /// This process serves `parallel` of its places itself; in team mode
    /// workers elsewhere may take the others. Fails with `Conflict` when
    /// another live process drives it.
    pub async fn run_series(&self, id: &str) -> Result<Series> {
        self.drive(id, true).await
    }

    /// Drives a series whose driver died, leaving its places to the
    /// workers (a worker adopting it serves them as a worker).
    pub(super) async fn drive_series_only(&self, id: &str) -> Result<Series> {
        self.drive(id, false).await
    }

    async fn drive(&self, id: &str, serve: bool) -> Result<Series> {
        let id = self.resolve_series(id).await?;
        let engine = &self.pinned();
        let series = engine.series(&id).await?;
        if series.status.is_terminal() {
            return Ok(series);
        }
        let lease = engine.lease_for_now();
        let (i, now) = (id.clone(), engine.lease_ms());
        let owner = lease.owner.clone();
        let taken = engine
            .db(move |s| s.transact(|tx| tx.take_series_lease(&i, &lease, now, pid_alive)))
            .await?;
        if !taken {
            return Err(Error::Conflict(format!(
                "series {} is being run by another process; wait for it, or cancel it",
                crate::battle::short_id(&id)
            )));
        }
        let (token, lost) = (CancellationToken::new(), CancellationToken::new());
        // Stopped however this ends, even when the driving is dropped.
        let heartbeat = AbortOnDrop(tokio::spawn(series_heartbeat(
            engine.clone(),
            id.clone(),
            token.clone(),
            lost.clone(),
        )));
        let driven = drive_series(engine, &series, (&token, &lost), serve).await;
        drop(heartbeat);
        let (i, o) = (id.clone(), owner);
        let released = engine
            .db(move |s| s.transact(|tx| tx.release_series_lease(&i, &o)))
            .await;
        released?;
        let (status, decided_after) = match driven {
            Ok(ended) => ended,
            // A mistake that would stop every battle (a model or persona
            // gone since the series started) ends it: resuming would only
            // meet it again. Other failures (the database, a lost lease)
            // leave it running, to be resumed.
            Err(e @ (Error::Invalid(_) | Error::Config { .. })) => {
                let (i, message, at) = (id.clone(), e.to_string(), engine.now());
                engine
                    .db(move |s| s.transact(|tx| tx.fail_series(&i, &message, at)))
                    .await?;
                tracing::warn!(series = %id, error = %e, "series stopped by an error");
                if let Err(e) = engine.write_series_report(&id).await {
                    tracing::warn!(series = %id, error = %e, "could not write the series report");
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let (i, at) = (id.clone(), engine.now());
        engine
            .db(move |s| s.transact(|tx| tx.finish_series(&i, status, at, decided_after)))
            .await?;
        match engine.write_series_report(&id).await {
            // A blind series' report waits for the votes.
            Err(Error::Conflict(why)) => tracing::info!(series = %id, "{why}"),
            Err(e) => tracing::warn!(series = %id, error = %e, "could not write the series report"),
            Ok(_) => {}
        }
        tracing::info!(series = %id, status = %status, "series finished");
        engine.series(&id).await
    }

    /// Replaces a series' tags: its battles trade the old ones for the
    /// new (keeping their own), and its battles to come carry them.
    pub async fn set_series_tags(&self, id: &str, tags: &[String]) -> Result<Series> {
        let tags = crate::blind::tags(tags)?;
        let series = self.series(id).await?;
        let (i, old) = (series.id.clone(), series.tags.clone());
        let battles = self
            .db(move |s| {
                s.transact(|tx| tx.set_series_tags(&i, &old, &tags))?;
                s.series_battles(&i)
            })
            .await?;
        // Each battle's manifest lists its tags.
        for battle_id in battles.values() {
            let battle = self.battle(battle_id).await?;
            tokio::task::spawn_blocking(move || crate::results::write_manifest(&battle)).await??;
        }
        self.series(&series.id).await
    }
}

/// Renews the series' lease and watches its cancel flag: cancels `token`
/// when asked to stop, `lost` when another process took the lease.
async fn series_heartbeat(
    engine: Engine,
    id: String,
    token: CancellationToken,
    lost: CancellationToken,
) {
    let mut tick = tokio::time::interval(HEARTBEAT * 4);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let (i, lease, now) = (id.clone(), engine.lease_for_now(), engine.lease_ms());
        let polled = engine
            .db(move |s| {
                let ours = s.transact(|tx| tx.take_series_lease(&i, &lease, now, pid_alive))?;
                Ok::<_, Error>((ours, s.series_cancel_requested(&i)?))
            })
            .await;
        match polled {
            Ok((ours, cancel)) => {
                if !ours {
                    tracing::error!(series = %id, "lost the series' lease; stopping");
                    lost.cancel();
                }
                if cancel {
                    token.cancel();
                }
            }
            Err(e) => tracing::warn!(series = %id, error = %e, "series heartbeat failed"),
        }
    }
}

/// The series' driver: opens its places (all at once; with a budget or
/// "until decided", a window of `parallel` per connected worker, checking
/// the budget before each), serves `parallel` of them itself when `serve`,
/// watches places end for the goal and the "decided" rule, and drops the
/// places nobody took once it must stop. Returns how the series ended
/// and, when decided, after how many battles.
async fn drive_series(
    engine: &Engine,
    series: &Series,
    (token, lost): (&CancellationToken, &CancellationToken),
    serve: bool,
) -> Result<(SeriesStatus, Option<u64>)> {
    let request = &series.request;
    let team = engine.inner.store.is_team();
    // Checked here too: alone, a mistake in the request (a model gone
    // since it started) ends the series at once. In a team another
    // machine may serve what this one cannot.
    let prices = match validate::check(engine, first_battle(request)).await {
        Ok(plan) => Some((plan, engine.judges(request).await?)),
        Err(e @ (Error::Invalid(_) | Error::Config { .. })) if team => {
            tracing::info!(series = %series.id, error = %e, "this machine cannot serve the series; its workers may");
            None
        }
        Err(e) => return Err(e),
    };
    let id = series.id.clone();
    let windowed = request.budget_usd.is_some() || request.until_decided;
    let (refusals_tx, mut refusals) = mpsc::unbounded_channel();
    let serving = CancellationToken::new();
    let local = serve.then(|| {
        let (engine, stop, scope) = (engine.clone(), serving.clone(), Scope::One(id.clone()));
        let places = request.parallel;
        tokio::spawn(
            async move { serve_places(&engine, scope, places, stop, Some(refusals_tx)).await },
        )
    });
    let mut driver = Driver {
        engine,
        series,
        team,
        serve,
        windowed,
        prices,
        seen: BTreeSet::new(),
        rows: Vec::new(),
        battle_costs: Vec::new(),
        done: 0,
        stop: None,
        decided_after: None,
        waiting: series.waiting.clone(),
    };
    let ended = driver.run(token, lost, &mut refusals).await;
    serving.cancel();
    if let Some(local) = local {
        match local.await {
            Ok(Err(e)) => {
                tracing::warn!(series = %id, error = %e, "serving the series' places failed")
            }
            Err(e) => {
                tracing::error!(series = %id, error = %e, "serving the series' places panicked")
            }
            Ok(Ok(())) => {}
        }
    }
    ended?;
    let mut stop = driver.stop;
    if token.is_cancelled() {
        stop = Some(SeriesStatus::Cancelled);
    }
    Ok((stop.unwrap_or(SeriesStatus::Done), driver.decided_after))
}

/// What a series' driver knows as it goes, kept up to date place by
/// place so that a long series costs the same per battle at its end as at
/// its start.
struct Driver<'a> {
    engine: &'a Engine,
    series: &'a Series,
    team: bool,
    serve: bool,
    windowed: bool,
    /// The plan and judges, for guessing a battle's cost (none when this
    /// machine cannot serve the series).
    prices: Option<(Plan, Judges)>,
    /// Places seen done.
    seen: BTreeSet<u64>,
    rows: Vec<RunRow>,
    battle_costs: Vec<f64>,
    done: u64,
    stop: Option<SeriesStatus>,
    decided_after: Option<u64>,
    /// What the series says about its waiting places now.
    waiting: Option<String>,
}

/// How often a series' driver looks at its places.
const DRIVER_POLL: std::time::Duration = std::time::Duration::from_millis(250);

impl Driver<'_> {
    async fn run(
        &mut self,
        token: &CancellationToken,
        lost: &CancellationToken,
        refusals: &mut mpsc::UnboundedReceiver<Refused>,
    ) -> Result<()> {
        let engine = self.engine;
        let id = self.series.id.clone();
        let mut tick = tokio::time::interval(DRIVER_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = token.cancelled(), if self.stop.is_none() => {}
                // Another process drives it now: leave everything as it is.
                _ = lost.cancelled() => {
                    return Err(Error::Conflict(format!(
                        "series {} is now driven by another process",
                        crate::battle::short_id(&id)
                    )));
                }
                Some(refused) = refusals.recv() => {
                    tracing::warn!(series = %id, slot = ?refused.slot, error = %refused.error, "this machine cannot serve the series");
                    if !self.team || self.others_serving().await? == 0 {
                        // Alone, the same mistake would stop every other battle too.
                        self.stop_here(SeriesStatus::Cancelled).await?;
                        return Err(refused.error);
                    }
                }
            }
            if token.is_cancelled() && self.stop.is_none() {
                self.stop_here(SeriesStatus::Cancelled).await?;
            }
            let i = id.clone();
            let places = engine.db(move |s| s.places(&i)).await?;
            for place in places.iter().filter(|p| p.state == PlaceState::Done) {
                if self.seen.insert(place.slot) {
                    self.place_done(place.slot).await?;
                }
            }
            let active = places
                .iter()
                .filter(|p| matches!(p.state, PlaceState::Open | PlaceState::Taken))
                .count() as u64;
            let opened = self.open_more(places.len() as u64, active).await?;
            if self.team {
                self.say_who_serves(&places).await?;
            }
            let all_placed = places.len() as u64 + opened >= self.series.total;
            if opened == 0 && active == 0 && (all_placed || self.stop.is_some()) {
                return Ok(());
            }
        }
    }

    /// A place ended: counts it and, with a budget or "until decided",
    /// reads what its battle cost and whether the leader has separated.
    async fn place_done(&mut self, slot: u64) -> Result<()> {
        let engine = self.engine;
        let request = &self.series.request;
        self.done += 1;
        if request.budget_usd.is_none() && !request.until_decided {
            return Ok(());
        }
        let i = self.series.id.clone();
        let Some(battle_id) = engine.db(move |s| s.place_battle(&i, slot)).await? else {
            return Ok(());
        };
        let new_rows = engine.place_rows(self.series, slot, &battle_id).await?;
        if request.budget_usd.is_some() {
            let analysis = engine.analysis(&battle_id).await?;
            let cost = crate::benchmark::add_costs(
                new_rows
                    .iter()
                    .map(|r| r.cost_usd)
                    .chain([analysis.map_or(Some(0.0), |a| a.cost_usd)]),
            );
            self.battle_costs.extend(cost);
        }
        if request.until_decided {
            self.rows.extend(new_rows);
            if self.stop.is_none() && series::decided(&series::report(&self.rows)) {
                self.decided_after = Some(self.done);
                self.stop_here(SeriesStatus::Decided).await?;
            }
        }
        Ok(())
    }

    /// Opens the places the series may run next: all of them, or within
    /// the window and the budget. How many it opened.
    async fn open_more(&mut self, placed: u64, active: u64) -> Result<u64> {
        let engine = self.engine;
        let request = &self.series.request;
        if self.stop.is_some() || placed >= self.series.total {
            return Ok(0);
        }
        let id = self.series.id.clone();
        if !self.windowed {
            let (i, total) = (id, self.series.total);
            engine
                .db(move |s| s.transact(|tx| tx.open_places(&i, placed..total)))
                .await?;
            return Ok(self.series.total - placed);
        }
        let workers = self.others_serving().await? + u64::from(self.serve);
        let window = u64::from(request.parallel) * workers.max(1);
        let mut opened = 0;
        while placed + opened < self.series.total && active + opened < window {
            let slot = placed + opened;
            if let Some(budget) = request.budget_usd {
                let i = id.clone();
                let (_, _, spent) = engine.db(move |s| s.series_progress(&i)).await?;
                let spent = spent.total();
                let (prompt, _) = request.slot(slot);
                let guess = self.prices.as_ref().map_or(0.0, |(plan, judges)| {
                    first_guess(engine, plan, &request.prompts[prompt].prompt, judges)
                });
                let expected = series::expected_battle_cost(&self.battle_costs, guess);
                let in_flight = expected * (active + opened) as f64;
                if !series::may_spend(
                    spent.unwrap_or(f64::INFINITY) + in_flight,
                    expected,
                    Some(budget),
                ) {
                    self.stop_here(SeriesStatus::BudgetReached).await?;
                    break;
                }
            }
            let i = id.clone();
            engine
                .db(move |s| s.transact(|tx| tx.open_places(&i, slot..slot + 1)))
                .await?;
            opened += 1;
        }
        Ok(opened)
    }

    /// The series must stop: places nobody took will not run (those taken
    /// finish, unless it was cancelled, which cancels their battles).
    async fn stop_here(&mut self, status: SeriesStatus) -> Result<()> {
        self.stop.get_or_insert(status);
        let i = self.series.id.clone();
        self.engine
            .db(move |s| s.transact(|tx| tx.drop_open_places(&i)))
            .await?;
        Ok(())
    }

    /// Workers (other than this driver) seen serving lately.
    async fn others_serving(&self) -> Result<u64> {
        if !self.team {
            return Ok(0);
        }
        let since = self.engine.lease_ms() - SEEN_WITHIN_MS;
        let workers = self.engine.db(move |s| s.workers_seen(since)).await?;
        Ok(workers.iter().filter(|w| w.role == "worker").count() as u64)
    }

    /// Team mode: says on the series when places wait and no connected
    /// worker can serve them (each machine's reason), and clears it when
    /// one can.
    async fn say_who_serves(&mut self, places: &[crate::store::Place]) -> Result<()> {
        let engine = self.engine;
        let open = places.iter().any(|p| p.state == PlaceState::Open);
        let taken = places.iter().any(|p| p.state == PlaceState::Taken);
        let why = if open && !taken {
            let (i, now) = (self.series.id.clone(), engine.lease_ms());
            let (workers, refusals) = engine
                .db(move |s| {
                    Ok::<_, Error>((
                        s.workers_seen(now - SEEN_WITHIN_MS)?,
                        s.series_refusals(&i)?,
                    ))
                })
                .await?;
            // Machines with a worker proper (not only drivers of other series).
            let mut machines: BTreeSet<String> = workers
                .into_iter()
                .filter(|w| w.role == "worker")
                .map(|w| w.machine)
                .collect();
            if self.serve {
                machines.insert(engine.machine().to_string());
            }
            let recent: BTreeMap<String, String> = refusals
                .into_iter()
                .filter(|(_, _, at)| now - at < REFUSAL_FRESH_MS)
                .map(|(machine, reason, _)| (machine, reason))
                .collect();
            if machines.is_empty() {
                Some(
                    "no worker is connected: start `arena worker` on a machine that can run it"
                        .to_string(),
                )
            } else if machines.iter().all(|m| recent.contains_key(m)) {
                let reasons: Vec<String> = machines
                    .iter()
                    .map(|m| format!("{m}: {}", recent[m]))
                    .collect();
                Some(format!(
                    "no connected worker can serve it ({})",
                    reasons.join("; ")
                ))
            } else {
                None
            }
        } else {
            None
        };
        if why != self.waiting {
            let (i, w) = (self.series.id.clone(), why.clone());
            engine
                .db(move |s| s.transact(|tx| tx.set_series_waiting(&i, w.as_deref())))
                .await?;
            self.waiting = why;
        }
        Ok(())
    }
}

/// A machine's word that it cannot serve a series counts this long.
const REFUSAL_FRESH_MS: i64 = 300_000;
