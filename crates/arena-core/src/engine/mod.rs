//! The engine handle: create, run, watch, cancel and resume battles.
//!
//! `Engine` is cheap to clone. The desktop app and the CLI each open one
//! over the same data directory; a battle is driven by one process at a
//! time, which holds its lease in the database and renews it while it runs.

mod analyze;
pub mod coding;
mod contestant;
mod drive;
mod export;
mod lane;
mod series;
mod settings;
mod validate;
mod verdict;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::Stream;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::battle::{Battle, BattleRequest, ContestantStatus};
use crate::catalog::Catalog;
use crate::clock::{Clock, SystemClock};
use crate::config::{self, Config};
use crate::decisions::Lease;
use crate::error::{Error, Result};
use crate::event::BattleEvent;
use crate::persona::Registry;
use crate::provider::Provider;
use crate::store::{self, Store};

pub use export::ReportFormat;
pub use series::SeriesStart;
pub use verdict::LeaderboardQuery;

/// How long a lease lasts without renewal, and how often it is renewed (the
/// renewal also picks up cancellations requested by other processes).
const LEASE_TTL: Duration = Duration::from_secs(15);
const HEARTBEAT: Duration = Duration::from_millis(500);
/// How often a subscriber re-reads the journal for events written by another process.
const FOLLOW_POLL: Duration = Duration::from_millis(250);
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// How often running work looks for a cancellation asked by another process.
const WORK_POLL: Duration = Duration::from_millis(250);

/// See [`Engine::judging`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judging {
    Ready,
    /// No `default_model` and none given.
    NoModel,
    /// No contestant finished.
    NothingToJudge,
}

/// One Coding contestant's worktree.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorktreeEntry {
    pub battle_id: String,
    pub battle_status: crate::battle::BattleStatus,
    pub contestant_id: String,
    pub project: PathBuf,
    pub path: PathBuf,
    /// Its folder name (its branch is `arena/<name>`).
    pub name: Option<String>,
    pub exists: bool,
    pub dirty: bool,
}

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
struct WorkGuard {
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

/// Everything needed to open an engine.
pub struct EngineOptions {
    pub data_dir: PathBuf,
    pub config: Config,
    pub clock: Arc<dyn Clock>,
}

impl EngineOptions {
    /// The data directory and config the app and the CLI share
    /// (`ARENA_DATA_DIR`, `ARENA_CONFIG`, else the OS defaults).
    pub fn from_env() -> Result<EngineOptions> {
        Ok(EngineOptions {
            data_dir: config::data_dir()?,
            config: crate::config::load()?,
            clock: Arc::new(SystemClock),
        })
    }
}

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    /// The settings this handle works with when they must not change under
    /// it (a battle being driven keeps those it started with); else the
    /// engine's current ones.
    pinned: Option<Arc<Settings>>,
}

struct Inner {
    data_dir: PathBuf,
    /// Replaced as a whole when the configuration changes.
    settings: RwLock<Arc<Settings>>,
    /// Held while the configuration is being changed (the config file
    /// written, a key stored), so two changes cannot undo each other.
    changing: tokio::sync::Mutex<()>,
    store: Store,
    clock: Arc<dyn Clock>,
    me: Me,
    /// Battles this process is driving.
    live: Mutex<HashMap<String, Arc<Live>>>,
    lanes: lane::Lanes,
    /// Analyses, cross-examinations and refine rounds running here, by id.
    work: Mutex<HashMap<String, CancellationToken>>,
}

/// This process, as a lease holder.
#[derive(Clone)]
struct Me {
    owner: String,
    host: String,
    pid: u32,
}

/// Cancellation handles of a battle being driven here.
struct Live {
    cancel: CancellationToken,
    contestants: Mutex<HashMap<String, CancellationToken>>,
    wake: Notify,
}

impl Live {
    fn contestant_token(&self, id: &str) -> CancellationToken {
        let mut map = self.contestants.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id.to_string())
            .or_insert_with(|| self.cancel.child_token())
            .clone()
    }
}

/// A configuration and the providers made from it (with their HTTP client
/// and their cached API keys).
struct Settings {
    config: Arc<Config>,
    providers: Vec<Provider>,
}

impl Settings {
    fn new(config: Config) -> Result<Settings> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(config.limits.connect_timeout_secs))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| Error::Task(format!("http client: {e}")))?;
        let providers = config
            .providers
            .iter()
            .map(|p| Provider::new(p.clone(), http.clone()))
            .collect();
        Ok(Settings {
            config: Arc::new(config),
            providers,
        })
    }
}

impl Engine {
    /// Opens the database under `data_dir` and prepares the providers.
    pub fn open(options: EngineOptions) -> Result<Engine> {
        let owner = uuid::Uuid::new_v4().to_string();
        let store = Store::open(&options.data_dir.join(store::DATABASE_FILE))?.acting_as(&owner);
        let settings = Settings::new(options.config)?;
        Ok(Engine {
            pinned: None,
            inner: Arc::new(Inner {
                data_dir: options.data_dir,
                settings: RwLock::new(Arc::new(settings)),
                changing: tokio::sync::Mutex::new(()),
                store,
                clock: options.clock,
                me: Me {
                    owner,
                    host: hostname(),
                    pid: std::process::id(),
                },
                live: Mutex::new(HashMap::new()),
                lanes: lane::Lanes::default(),
                work: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The configuration in effect (a running battle keeps the one it
    /// started with; see [`Engine::save_settings`]).
    pub fn config(&self) -> Arc<Config> {
        self.settings().config.clone()
    }

    fn settings(&self) -> Arc<Settings> {
        match &self.pinned {
            Some(settings) => settings.clone(),
            None => self
                .inner
                .settings
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    /// This engine with its current settings fixed, for work that must not
    /// see a configuration change half-way (driving a battle).
    fn pinned(&self) -> Engine {
        Engine {
            inner: self.inner.clone(),
            pinned: Some(self.settings()),
        }
    }

    /// Makes `config` the configuration of everything that starts from now
    /// on; providers are rebuilt (so API keys are looked up again). Callers
    /// hold `inner.changing`.
    fn replace_config(&self, config: Config) -> Result<()> {
        let settings = Arc::new(Settings::new(config)?);
        *self
            .inner
            .settings
            .write()
            .unwrap_or_else(|p| p.into_inner()) = settings;
        Ok(())
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.inner.clock.now()
    }

    /// Runs blocking database work off the async threads.
    async fn db<T: Send + 'static, E: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, E> + Send + 'static,
    ) -> Result<T>
    where
        Error: From<E>,
    {
        let store = self.inner.store.clone();
        Ok(tokio::task::spawn_blocking(move || f(&store)).await??)
    }

    /// Every provider's models (asked live, in parallel).
    pub async fn catalog(&self) -> Catalog {
        Catalog::discover(&self.settings().providers, DISCOVERY_TIMEOUT).await
    }

    /// Every Coding backend (built in and `[[backend]]`) and where it is installed.
    pub async fn backends(&self) -> Result<Vec<crate::backend::BackendStatus>> {
        let custom = self.config().backends.clone();
        let sandboxed = self.sandboxed();
        Ok(
            tokio::task::spawn_blocking(move || crate::backend::statuses(&custom, sandboxed))
                .await?,
        )
    }

    /// Whether agents run in the kernel sandbox (`[limits] sandbox` is not
    /// off and the machine can).
    pub fn sandboxed(&self) -> bool {
        matches!(self.sandbox_ready(), Ok(Some(_)))
    }

    /// How agents are confined as `[limits] sandbox` asks: `None` when it
    /// is off; an error naming what this machine lacks and how to get it.
    pub fn sandbox_ready(
        &self,
    ) -> std::result::Result<Option<crate::agent::sandbox::Enforcement>, String> {
        use crate::agent::sandbox::{self, Enforcement};
        match self.config().limits.sandbox {
            crate::config::SandboxMode::Off => Ok(None),
            crate::config::SandboxMode::Strict => {
                sandbox::jail_info().map(|_| Some(Enforcement::Jail))
            }
            crate::config::SandboxMode::Landlock if sandbox::supported() => {
                Ok(Some(Enforcement::Landlock))
            }
            crate::config::SandboxMode::Landlock => {
                Err(sandbox::SandboxError::Unsupported.to_string())
            }
        }
    }

    /// The sandbox's state in one line, for `arena backends` and Settings:
    /// `jail: bubblewrap 0.8.0 · Landlock ABI 7 · seccomp`.
    pub fn sandbox_state(&self) -> String {
        use crate::agent::sandbox::{self, Enforcement};
        match self.sandbox_ready() {
            Err(why) => format!("unavailable: {why}"),
            Ok(None) => {
                "off: agents and checks run with your rights ([limits] sandbox = \"off\")".into()
            }
            Ok(Some(Enforcement::Landlock)) => format!(
                "Landlock ABI {} alone, no jail ([limits] sandbox = \"landlock\")",
                sandbox::abi_version()
            ),
            Ok(Some(Enforcement::Jail)) => match sandbox::jail_info() {
                Ok(info) => format!("jail: {info}"),
                Err(why) => format!("unavailable: {why}"),
            },
        }
    }

    /// The persona registry, seeded on first use.
    pub fn personas(&self) -> Result<Registry> {
        Registry::load_or_seed(&self.inner.data_dir)
    }

    fn provider(&self, name: &str) -> Option<Provider> {
        self.settings()
            .providers
            .iter()
            .find(|p| p.config.name == name)
            .cloned()
    }

    /// How a CLI agent reaches `provider`: its URL and its key (or a
    /// placeholder, which servers without authentication accept).
    async fn agent_endpoint(&self, provider: &str) -> Option<crate::agent::backends::Endpoint> {
        let p = self.provider(provider)?;
        let api_key = match p.api_key().await {
            Some((_, key)) => key,
            None => crate::keychain::Secret::new("arena-no-key".into()),
        };
        Some(crate::agent::backends::Endpoint {
            kind: p.config.kind,
            base_url: p.config.base_url.clone(),
            api_key,
        })
    }

    pub async fn battle(&self, id: &str) -> Result<Battle> {
        let id = id.to_string();
        self.db(move |s| s.battle(&id)).await
    }

    /// A battle with its newest analysis, cross-examinations and rounds,
    /// read consistently, and the `seq` of its newest event at that moment.
    pub async fn battle_detail(&self, id: &str) -> Result<crate::store::BattleDetail> {
        let id = id.to_string();
        self.db(move |s| s.battle_detail(&id)).await
    }

    /// Battles, newest first, without contestants' outputs.
    pub async fn battles(&self, limit: usize) -> Result<Vec<Battle>> {
        self.db(move |s| s.battles(limit)).await
    }

    /// A page of the battles `query` selects (search, type, status,
    /// series), newest first, without contestants' outputs, and how many
    /// it selects in all.
    pub async fn battle_page(
        &self,
        query: crate::battle::BattleQuery,
    ) -> Result<(Vec<Battle>, u64)> {
        self.db(move |s| s.battle_page(&query)).await
    }

    pub async fn battle_count(&self) -> Result<u64> {
        self.db(|s| s.battle_count()).await
    }

    /// Validates the request and records the battle (status `running`, all
    /// contestants `queued`) with its results folder and manifest. Nothing
    /// is created when validation fails. Call [`Engine::run_battle`] next.
    pub async fn create_battle(&self, request: BattleRequest) -> Result<Battle> {
        validate::create(self, request).await
    }

    /// Drives the battle to a terminal status and returns it. Fails with
    /// `Conflict` when another live process is driving it.
    pub async fn run_battle(&self, id: &str) -> Result<Battle> {
        drive::drive(self, id).await
    }

    /// Events of a battle with `seq > since_seq`: first the journal, then live
    /// events as they happen (also those written by another process). The
    /// stream does not end by itself. It is a viewer's: while a blind
    /// battle is masked, what would tell its contestants apart is left out
    /// or reworded (see `blind::mask_event`) until its `revealed` event.
    pub fn subscribe(
        &self,
        battle_id: &str,
        since_seq: u64,
    ) -> impl Stream<Item = Result<BattleEvent>> + Send + 'static {
        let engine = self.clone();
        let battle_id = battle_id.to_string();
        let mut rx = self.inner.store.subscribe();
        async_stream::try_stream! {
            let mut last = since_seq;
            // A blind battle's viewer sees labels only until its reveal.
            let masked = engine.battle(&battle_id).await.is_ok_and(|b| b.is_masked());
            let mut mask = crate::blind::EventMask::new(masked);
            loop {
                loop {
                    let (id, from) = (battle_id.clone(), last);
                    let batch = engine.db(move |s| s.events_since(&id, from, 2000)).await?;
                    if batch.is_empty() {
                        break;
                    }
                    for event in batch {
                        last = event.seq;
                        if let Some(event) = viewed(&mut mask, event) {
                            yield event;
                        }
                    }
                }
                loop {
                    tokio::select! {
                        received = rx.recv() => match received {
                            Ok(e) if e.battle_id == battle_id && e.seq <= last => {}
                            Ok(e) if e.battle_id == battle_id && e.seq == last + 1 => {
                                last = e.seq;
                                if let Some(e) = viewed(&mut mask, e) {
                                    yield e;
                                }
                            }
                            Ok(e) if e.battle_id == battle_id => break, // a gap: replay it
                            Ok(_) => {}
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        },
                        _ = tokio::time::sleep(FOLLOW_POLL) => break,
                    }
                }
            }
        }
    }

    /// Cancels a whole battle: running contestants are stopped, queued ones
    /// never start. Works whichever process drives it.
    pub async fn cancel_battle(&self, battle_id: &str) -> Result<Battle> {
        self.cancel(battle_id, None).await
    }

    /// Cancels one contestant; the rest of the battle goes on.
    pub async fn cancel_contestant(&self, battle_id: &str, contestant_id: &str) -> Result<Battle> {
        self.cancel(battle_id, Some(contestant_id)).await
    }

    async fn cancel(&self, battle_id: &str, contestant_id: Option<&str>) -> Result<Battle> {
        let battle = self.battle(battle_id).await?;
        if let Some(cid) = contestant_id {
            if !battle.contestants.iter().any(|c| c.id == cid) {
                return Err(Error::not_found(
                    "contestant",
                    format!("{cid} in battle {battle_id}"),
                ));
            }
        }
        if battle.status.is_terminal() {
            return Ok(battle);
        }
        let (bid, cid) = (battle_id.to_string(), contestant_id.map(str::to_string));
        self.db(move |s| s.transact(|tx| tx.request_cancel(&bid, cid.as_deref())))
            .await?;
        if let Some(live) = self.live(battle_id) {
            match contestant_id {
                Some(cid) => live.contestant_token(cid).cancel(),
                None => live.cancel.cancel(),
            }
            live.wake.notify_one();
            return self.wait_terminal(battle_id, contestant_id).await;
        }
        // Not driven here: if nobody drives it, settle it ourselves (the lease
        // makes sure no other process does the same). Otherwise the driving
        // process sees the request at its next heartbeat.
        match drive::settle_cancel(self, battle_id).await? {
            Some(battle) => Ok(battle),
            None => self.wait_terminal(battle_id, contestant_id).await,
        }
    }

    /// Waits (up to a few heartbeats) for a cancellation to take effect.
    async fn wait_terminal(&self, battle_id: &str, contestant_id: Option<&str>) -> Result<Battle> {
        let deadline = tokio::time::Instant::now() + LEASE_TTL;
        loop {
            let battle = self.battle(battle_id).await?;
            let done = match contestant_id {
                Some(cid) => battle
                    .contestants
                    .iter()
                    .any(|c| c.id == cid && c.status.is_terminal()),
                None => battle.status.is_terminal(),
            };
            if done || tokio::time::Instant::now() >= deadline {
                return Ok(battle);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Judges a finished battle (digest → judge, twice in opposite orders)
    /// with `model` or the configured `default_model`. The winner follows
    /// the analysis unless the user has chosen one.
    pub async fn analyze(
        &self,
        battle_id: &str,
        model: Option<&str>,
    ) -> Result<crate::analysis::Analysis> {
        analyze::analyze(self, battle_id, model).await
    }

    /// Whether a battle that just ended should be judged now, as the front
    /// ends do after a run or a resume: it needs a judge model (`model`, else
    /// `default_model`) and at least one finished contestant.
    pub fn judging(&self, battle: &Battle, model: Option<&str>) -> Judging {
        if model.is_none() && self.config().default_model.is_none() {
            Judging::NoModel
        } else if !battle
            .contestants
            .iter()
            .any(|c| c.status == ContestantStatus::Done)
        {
            Judging::NothingToJudge
        } else {
            Judging::Ready
        }
    }

    /// The newest analysis of a battle, if any.
    pub async fn analysis(&self, battle_id: &str) -> Result<Option<crate::analysis::Analysis>> {
        let id = battle_id.to_string();
        self.db(move |s| s.latest_analysis(&id)).await
    }

    /// Points a persona and model at a finished battle's results to
    /// interrogate and compare them; stored and written to `cross-exam-<n>.md`.
    pub async fn cross_examine(
        &self,
        battle_id: &str,
        examiner: &crate::battle::ContestantSpec,
        question: Option<&str>,
    ) -> Result<crate::cross_exam::CrossExamination> {
        analyze::cross_examine(self, battle_id, examiner, question).await
    }

    pub async fn cross_examinations(
        &self,
        battle_id: &str,
    ) -> Result<Vec<crate::cross_exam::CrossExamination>> {
        let id = battle_id.to_string();
        self.db(move |s| s.cross_examinations(&id)).await
    }

    /// A battle that must be a Coding battle; `what` ends the error for a
    /// Q&A one ("only Coding battles {what}").
    async fn coding_battle(&self, battle_id: &str, what: &str) -> Result<Battle> {
        let battle = self.battle(battle_id).await?;
        if battle.battle_type != crate::battle::BattleType::Coding {
            return Err(crate::error::Invalid::Other(format!(
                "battle {battle_id} is a Q&A battle; only Coding battles {what}"
            ))
            .into());
        }
        Ok(battle)
    }

    /// Brings a Coding contestant's diff (by default the winner's) into the
    /// project's working tree. Refuses on a dirty project or a patch that
    /// does not apply, changing nothing.
    pub async fn apply(
        &self,
        battle_id: &str,
        contestant_id: Option<&str>,
    ) -> Result<(String, crate::diff::DiffStats)> {
        let battle = self
            .coding_battle(battle_id, "have a diff to apply")
            .await?;
        let id = match contestant_id {
            Some(id) => id.to_string(),
            None => battle.winner.as_ref().map(|w| w.contestant_id.clone()).ok_or_else(|| {
                crate::error::Invalid::Other(format!(
                    "battle {battle_id} has no winner yet; name the contestant to apply, or set a winner"
                ))
            })?,
        };
        let c = contestant_of(&battle, &id)?;
        // The latest round that finished carries all the work so far.
        let (_, patch_path) = self.latest_patch(c).await?.ok_or_else(|| {
            Error::Conflict(format!(
                "contestant {id} has no diff.patch (status {})",
                c.status
            ))
        })?;
        let project = battle.project.clone();
        let stats = tokio::task::spawn_blocking(move || {
            let patch =
                std::fs::read_to_string(&patch_path).map_err(|e| Error::io(&patch_path, e))?;
            crate::diff::apply(&project, &patch).map_err(|e| Error::Conflict(e.to_string()))
        })
        .await??;
        Ok((id, stats))
    }

    /// A Coding contestant's changes, file by file and line by line: those
    /// of its latest finished refinement round, else of its own run (the
    /// diff `apply` takes), read from that round's `diff.patch`.
    pub async fn contestant_diff(
        &self,
        battle_id: &str,
        contestant_id: &str,
    ) -> Result<crate::patch::ContestantDiff> {
        let battle = self.coding_battle(battle_id, "have diffs").await?;
        let c = contestant_of(&battle, contestant_id)?;
        if !c.status.is_terminal() {
            return Err(Error::Conflict(format!(
                "contestant {contestant_id} is still {}; its diff is ready when it finishes",
                c.status
            )));
        }
        let (round, path) = self
            .latest_patch(c)
            .await?
            .ok_or_else(|| Error::not_found("diff of contestant", contestant_id))?;
        let files = tokio::task::spawn_blocking(move || {
            let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            Ok::<_, Error>(crate::patch::parse(&String::from_utf8_lossy(&bytes)))
        })
        .await??;
        Ok(crate::patch::ContestantDiff { round, files })
    }

    /// The `diff.patch` with a contestant's latest work and its round
    /// number: the latest refinement round that finished, else its own run
    /// (round 1). `None` when that file was not written.
    async fn latest_patch(&self, c: &crate::Contestant) -> Result<Option<(u32, PathBuf)>> {
        let latest_round = self
            .rounds(&c.id)
            .await?
            .into_iter()
            .rev()
            .find(|r| r.status == Some(ContestantStatus::Done))
            .and_then(|r| Some((r.number, r.result_path?)));
        let (round, result) = match latest_round {
            Some((number, path)) => (number, Some(path)),
            None => (1, c.result_path.clone()),
        };
        let Some(patch) = result
            .as_ref()
            .and_then(|p| p.parent())
            .map(|d| d.join(crate::results::DIFF_FILE))
        else {
            return Ok(None);
        };
        let probe = patch.clone();
        let exists = tokio::task::spawn_blocking(move || probe.is_file()).await?;
        Ok(exists.then_some((round, patch)))
    }

    /// A battle's results folder (`PROJECT/Arena/<battle>`), when it exists.
    pub async fn results_folder(&self, battle_id: &str) -> Result<PathBuf> {
        let battle = self.battle(battle_id).await?;
        existing_folder("results folder", battle.results_path).await
    }

    /// A Coding contestant's worktree, when it exists.
    pub async fn worktree(&self, battle_id: &str, contestant_id: &str) -> Result<PathBuf> {
        let battle = self.coding_battle(battle_id, "have a worktree").await?;
        let c = contestant_of(&battle, contestant_id)?;
        let path = c.worktree.clone().ok_or_else(|| {
            Error::Conflict(format!(
                "contestant {contestant_id} has no worktree yet (it is {})",
                c.status
            ))
        })?;
        existing_folder("worktree", path).await
    }

    /// Continues a finished contestant with the user's feedback, as a new
    /// round with its own output: a Coding contestant in its own worktree
    /// (with its diff and check), a Q&A contestant in the same conversation
    /// (its question, its answers and the feedback so far, then this one).
    pub async fn refine(
        &self,
        battle_id: &str,
        contestant_id: &str,
        feedback: &str,
    ) -> Result<crate::battle::Round> {
        let feedback = feedback.trim();
        if feedback.is_empty() {
            return Err(crate::error::Invalid::Other(
                "the feedback is empty; say what to change".into(),
            )
            .into());
        }
        let battle = self.battle(battle_id).await?;
        if !battle.status.is_terminal() {
            return Err(Error::Conflict(format!(
                "battle {battle_id} is still running; refine a contestant when it has finished"
            )));
        }
        let c = contestant_of(&battle, contestant_id)?.clone();
        let coding = battle.battle_type == crate::battle::BattleType::Coding;
        if coding && !c.worktree.as_ref().is_some_and(|p| p.exists()) {
            return Err(Error::Conflict(format!(
                "contestant {contestant_id} has no worktree any more (pruned?); it cannot be refined"
            )));
        }
        if !coding && c.status != ContestantStatus::Done {
            return Err(Error::Conflict(format!(
                "contestant {contestant_id} has no answer to continue from ({})",
                c.status
            )));
        }
        let held = drive::hold(self, battle_id).await?;
        let rounds = self.rounds(contestant_id).await?;
        let round = crate::battle::Round {
            id: uuid::Uuid::now_v7().to_string(),
            contestant_id: c.id.clone(),
            number: rounds.iter().map(|r| r.number).max().unwrap_or(1) + 1,
            feedback: feedback.to_string(),
            status: None,
            output: String::new(),
            error: None,
            diff: None,
            check: None,
            duration_ms: None,
            result_path: None,
            created_at: self.now(),
            finished_at: None,
            cost_usd: None,
        };
        let (bid, r) = (battle.id.clone(), round.clone());
        let me = self.inner.me.clone();
        self.db(move |s| {
            s.transact(|tx| {
                tx.insert_round(&bid, &r)?;
                tx.set_owner(crate::store::Work::Round, &r.id, &me.host, me.pid)
            })
        })
        .await?;
        let token = held.live.contestant_token(&c.id);
        let watch = self.watch_work(crate::store::Work::Round, &round.id, token.clone());
        let done = if coding {
            let previous = rounds
                .iter()
                .rev()
                .find(|r| !r.output.trim().is_empty())
                .map(|r| r.output.clone())
                .or_else(|| c.output.clone())
                .unwrap_or_default();
            coding::refine(self, &battle, &c, round, &previous, &token).await
        } else {
            let history = contestant::conversation(&battle, &c, &rounds);
            contestant::continue_turn(self, &battle, &c, round, history, &token).await
        };
        drop(watch);
        drop(held);
        done
    }

    /// A contestant's refinement rounds (2, 3, …).
    pub async fn rounds(&self, contestant_id: &str) -> Result<Vec<crate::battle::Round>> {
        let id = contestant_id.to_string();
        self.db(move |s| s.rounds(&id)).await
    }

    /// Arena's worktrees: per Coding contestant, where and in what state
    /// (from Arena's records; a worktree's own files are not followed).
    pub async fn worktrees(&self) -> Result<Vec<WorktreeEntry>> {
        let battles = self.db(|s| s.battles(usize::MAX >> 1)).await?;
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            for b in battles
                .iter()
                .filter(|b| b.battle_type == crate::battle::BattleType::Coding)
            {
                for c in &b.contestants {
                    let Some(path) = &c.worktree else { continue };
                    let exists = path.symlink_metadata().is_ok_and(|m| m.is_dir());
                    let dirty = exists
                        && crate::worktree::is_dirty(path).unwrap_or_else(|error| {
                            tracing::warn!(worktree = %path.display(), %error, "cannot tell whether the worktree is dirty");
                            true
                        });
                    out.push(WorktreeEntry {
                        battle_id: b.id.clone(),
                        battle_status: b.status,
                        contestant_id: c.id.clone(),
                        project: b.project.clone(),
                        path: path.clone(),
                        exists,
                        dirty,
                        name: path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    });
                }
            }
            Ok(out)
        })
        .await?
    }

    /// Removes the worktrees of finished battles. A worktree with
    /// uncommitted work is kept unless `force` (its diff.patch is in the
    /// results folder either way). Returns (removed, kept with the reason).
    pub async fn prune_worktrees(
        &self,
        force: bool,
    ) -> Result<(Vec<PathBuf>, Vec<(PathBuf, String)>)> {
        let entries = self.worktrees().await?;
        let known: std::collections::HashSet<String> = self
            .db(|s| s.battles(usize::MAX >> 1))
            .await?
            .into_iter()
            .map(|b| b.id)
            .collect();
        let root = self.inner.data_dir.join("worktrees");
        tokio::task::spawn_blocking(move || {
            let (mut removed, mut kept) = (Vec::new(), Vec::new());
            // Worktrees of battles that are no longer in the database (their
            // project unknown): removed whole, links in them removed, not
            // followed; uncommitted work needs `force`.
            for path in orphans(&root, &known) {
                let dirty = !force && crate::worktree::is_dirty(&path).unwrap_or(true);
                if dirty {
                    kept.push((
                        path,
                        "it has uncommitted changes; pass --force to remove it".into(),
                    ));
                    continue;
                }
                match std::fs::remove_dir_all(&path) {
                    Ok(()) => removed.push(path),
                    Err(err) => kept.push((path, err.to_string())),
                }
            }
            for e in entries {
                if !e.battle_status.is_terminal() {
                    kept.push((e.path, "its battle is still running".into()));
                    continue;
                }
                if !e.exists {
                    continue; // already gone
                }
                match crate::worktree::remove(&e.project, &e.path, force) {
                    Ok(()) => removed.push(e.path),
                    Err(err) => kept.push((e.path, err.to_string())),
                }
            }
            Ok((removed, kept))
        })
        .await?
    }

    /// Reconciles and finishes battles left running by a process that
    /// stopped: all of them, or just `only`. Battles another live process is
    /// driving are skipped (or, for `only`, refused).
    pub async fn resume(&self, only: Option<&str>) -> Result<Vec<Battle>> {
        let ids = match only {
            Some(id) => vec![self.battle(id).await?.id],
            None => self.db(|s| s.running_battles()).await?,
        };
        let runs = ids
            .iter()
            .map(|id| drive::resume_one(self, id, only.is_some()));
        let mut finished = Vec::new();
        for result in futures::future::join_all(runs).await {
            if let Some(battle) = result? {
                finished.push(battle);
            }
        }
        Ok(finished)
    }

    /// Moves a contestant from `from` to `to` (guarded: only if it is still
    /// in `from`), announcing it; whether it moved.
    async fn move_contestant(
        &self,
        c: &crate::Contestant,
        from: ContestantStatus,
        to: ContestantStatus,
        error: Option<String>,
    ) -> Result<bool> {
        let (c, at) = (c.clone(), self.now());
        self.db(move |s| s.transact(|tx| tx.move_contestant(&c, from, to, error.as_deref(), at)))
            .await
    }

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
    fn watch_work(
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

    fn live(&self, battle_id: &str) -> Option<Arc<Live>> {
        let map = self.inner.live.lock().unwrap_or_else(|p| p.into_inner());
        map.get(battle_id).cloned()
    }

    fn lease_for_now(&self) -> Lease {
        Lease {
            owner: self.inner.me.owner.clone(),
            host: self.inner.me.host.clone(),
            pid: self.inner.me.pid,
            expires_at_ms: store::ms(self.now()) + LEASE_TTL.as_millis() as i64,
        }
    }
}

/// The worktree folders under `root/<battle id>/` of battles the database
/// no longer has.
fn orphans(root: &Path, known: &std::collections::HashSet<String>) -> Vec<PathBuf> {
    let folders = |dir: &Path| -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .collect()
            })
            .unwrap_or_default()
    };
    folders(root)
        .into_iter()
        .filter(|b| !known.contains(&*b.file_name().to_string_lossy()))
        .flat_map(|b| folders(&b.path()))
        .map(|w| w.path())
        .collect()
}

/// `path` when it is a folder; else a `not_found` naming it.
async fn existing_folder(what: &'static str, path: PathBuf) -> Result<PathBuf> {
    let probe = path.clone();
    if tokio::task::spawn_blocking(move || probe.is_dir()).await? {
        Ok(path)
    } else {
        Err(Error::not_found(what, path.display().to_string()))
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether a process with this id exists on this machine.
pub(crate) fn pid_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        // SAFETY: kill with signal 0 sends nothing; it only checks existence.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true // fall back to lease expiry
    }
}

/// An event as a viewer sees it (see [`Engine::subscribe`]).
fn viewed(mask: &mut crate::blind::EventMask, event: BattleEvent) -> Option<BattleEvent> {
    let BattleEvent {
        battle_id,
        seq,
        contestant_id,
        at,
        kind,
    } = event;
    mask.apply(kind).map(|kind| BattleEvent {
        battle_id,
        seq,
        contestant_id,
        at,
        kind,
    })
}

/// One of a battle's contestants, by id.
fn contestant_of<'a>(battle: &'a Battle, contestant_id: &str) -> Result<&'a crate::Contestant> {
    battle
        .contestants
        .iter()
        .find(|c| c.id == contestant_id)
        .ok_or_else(|| {
            Error::not_found(
                "contestant",
                format!("{contestant_id} in battle {}", battle.id),
            )
        })
}
