//! Series: one contestant set run many times, each run an ordinary battle
//! of the series (see `arena_domain::series` for the rules). The driver
//! keeps up to `parallel` battles going — always within the lanes — and
//! before each new one checks the cancel flag and the budget; after each,
//! it judges the goal and, with `until_decided`, whether the leader has
//! separated. A crash loses nothing: every battle knows its place in the
//! series, so `resume_series` finishes the unfinished ones and starts only
//! the places that have none.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::battle::{BattleRequest, ContestantStatus};
use crate::catalog::Resolved;
use crate::error::{Error, Invalid, Result};
use crate::series::{self, RunRow, Series, SeriesRequest, SeriesStatus};

use super::goals::{check_goals, Judges};
use super::validate::{self, Plan};
use super::{pid_alive, Engine, HEARTBEAT};

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
        };
        let row = series.clone();
        let inserted = self
            .db(move |s| s.transact(|tx| tx.insert_series(&row)))
            .await;
        match inserted {
            Ok(()) => Ok(SeriesStart::Created(series)),
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
    async fn judges(&self, request: &SeriesRequest) -> Result<Judges> {
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
    /// Fails with `Conflict` when another live process drives it.
    pub async fn run_series(&self, id: &str) -> Result<Series> {
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
        let token = CancellationToken::new();
        let heartbeat = tokio::spawn(series_heartbeat(engine.clone(), id.clone(), token.clone()));
        let driven = drive_series(engine, &series, &token).await;
        heartbeat.abort();
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

/// The request of a series' first battle, for checking the contestants.
fn first_battle(r: &SeriesRequest) -> BattleRequest {
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

/// Renews the series' lease and watches its cancel flag; cancels `token`
/// when asked to stop or when the lease is lost.
async fn series_heartbeat(engine: Engine, id: String, token: CancellationToken) {
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
                    token.cancel();
                }
                if cancel {
                    token.cancel();
                }
            }
            Err(e) => tracing::warn!(series = %id, error = %e, "series heartbeat failed"),
        }
    }
}

/// Runs the series' places until all are done or it must stop: how it
/// ended and, when decided, after how many battles.
async fn drive_series(
    engine: &Engine,
    series: &Series,
    token: &CancellationToken,
) -> Result<(SeriesStatus, Option<u64>)> {
    let request = &series.request;
    let plan = Arc::new(validate::check(engine, first_battle(request)).await?);
    let judges = Arc::new(engine.judges(request).await?);
    let series = Arc::new(series.clone());
    let i = series.id.clone();
    let slots: BTreeMap<u64, String> = engine.db(move |s| s.series_battles(&i)).await?;
    let mut running: JoinSet<Result<(u64, String)>> = JoinSet::new();
    let mut next = 0u64;
    let mut stop: Option<SeriesStatus> = None;
    let mut decided_after = None;
    // What the driver knows so far, kept up to date battle by battle so
    // that a long series costs the same per battle at its end as at its start.
    let mut rows: Vec<RunRow> = Vec::new();
    let mut done = 0u64;
    let mut battle_costs: Vec<f64> = Vec::new();
    loop {
        while stop.is_none() && (running.len() as u32) < request.parallel && next < series.total {
            if token.is_cancelled() {
                stop = Some(SeriesStatus::Cancelled);
                break;
            }
            let n = next;
            let existing = slots.get(&n).cloned();
            if existing.is_none() {
                if let Some(budget) = request.budget_usd {
                    let i = series.id.clone();
                    let (_, _, spent) = engine.db(move |s| s.series_progress(&i)).await?;
                    let (prompt, _) = request.slot(n);
                    let guess =
                        first_guess(engine, &plan, &request.prompts[prompt].prompt, &judges);
                    let expected = series::expected_battle_cost(&battle_costs, guess);
                    let in_flight = expected * running.len() as f64;
                    if !series::may_spend(
                        spent.unwrap_or(f64::INFINITY) + in_flight,
                        expected,
                        Some(budget),
                    ) {
                        stop = Some(SeriesStatus::BudgetReached);
                        break;
                    }
                }
            }
            next += 1;
            running.spawn(run_place(
                engine.clone(),
                series.clone(),
                plan.clone(),
                judges.clone(),
                n,
                existing,
                token.clone(),
            ));
        }
        let Some(joined) = running.join_next().await else {
            break;
        };
        match joined {
            Ok(Ok((slot, battle_id))) => {
                done += 1;
                if request.budget_usd.is_none() && !request.until_decided {
                    continue;
                }
                let new_rows = engine.place_rows(&series, slot, &battle_id).await?;
                if request.budget_usd.is_some() {
                    let analysis = engine.analysis(&battle_id).await?;
                    let cost = crate::benchmark::add_costs(
                        new_rows
                            .iter()
                            .map(|r| r.cost_usd)
                            .chain([analysis.map_or(Some(0.0), |a| a.cost_usd)]),
                    );
                    battle_costs.extend(cost);
                }
                // Only "until decided" needs the rows so far.
                if request.until_decided {
                    rows.extend(new_rows);
                }
                if request.until_decided
                    && stop.is_none()
                    && series::decided(&series::report(&rows))
                {
                    decided_after = Some(done);
                    stop = Some(SeriesStatus::Decided);
                }
            }
            Ok(Err(e)) => {
                tracing::warn!(series = %series.id, error = %e, "a battle of the series failed");
                if matches!(e, Error::Invalid(_) | Error::Config { .. }) && stop.is_none() {
                    // The same mistake would stop every other battle too.
                    running.abort_all();
                    return Err(e);
                }
            }
            Err(e) => tracing::error!(series = %series.id, error = %e, "a battle task panicked"),
        }
    }
    if token.is_cancelled() {
        stop = Some(SeriesStatus::Cancelled);
    }
    Ok((stop.unwrap_or(SeriesStatus::Done), decided_after))
}

/// One place of the series: its battle (created, or the one a stopped
/// process left), run to its end, analysed, and its results checked
/// against the goal. Returns the battle's id.
async fn run_place(
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
            if plan.battle_type.judged_by_check() {
                plan.check_command = request.check_of(prompt).map(str::to_string);
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
