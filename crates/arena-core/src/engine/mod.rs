//! The engine handle: create, run, watch, cancel and resume battles.
//!
//! `Engine` is cheap to clone. The desktop app and the CLI each open one
//! over the same data directory; a battle is driven by one process at a
//! time, which holds its lease in the database and renews it while it runs.

mod analyze;
mod answer;
mod approvals;
mod changes;
mod check;
mod check_probe;
mod coding;
mod cross_exam;
mod drive;
mod export;
mod files;
mod fresh;
mod goals;
mod journal;
mod lane;
mod launch;
mod mine_pack;
mod mine_validate;
mod pack_board;
mod pack_list;
mod pack_run;
mod place;
mod prepare;
mod reserve;
mod rounds;
mod sealed;
mod series;
mod series_report;
mod settings;
mod snapshot;
mod task_verdict;
mod turn;
mod validate;
mod verdict;
mod verify;
mod viewer;
mod work;
mod worker;
mod workspace;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::battle::{Battle, BattleRequest, ContestantStatus};
use crate::blind::{BattleView, DetailView};
use crate::catalog::Catalog;
use crate::clock::{Clock, SystemClock};
use crate::config::{self, Config};
use crate::decisions::Lease;
use crate::error::{Error, Result};
use crate::persona::Registry;
use crate::provider::Provider;
use crate::store::{self, Store};

pub use changes::WorktreeEntry;
pub use check_probe::CheckProbe;
pub use export::ReportFormat;
pub use mine_pack::{
    InstructionCounts, Instructions, MineEvent, MinePackOptions, MinedPack, WriteEvent,
};
pub use mine_validate::{DroppedCandidate, MineRun, ValidateOptions, ValidatedTask};
pub use pack_list::{PackRunListing, PACK_REPORT_FILES};
pub use pack_run::{
    report_csv as pack_report_csv, report_html as pack_report_html,
    report_markdown as pack_report_markdown, solution_backend, PackCheck, PackRunReport,
    PackRunRequest, PackRunRow, PackRunStart, PackRunTask, SkippedTask, TaskCheck, VerifierDetail,
};
pub use prepare::{EnvChoice, EnvEntry, EnvHold, EnvRecord, EnvState, PrunedEnv};
pub use series::SeriesStart;
pub use verdict::LeaderboardQuery;
pub use verify::{Verification, VerifyTask};
pub use work::Recovered;
pub use worker::{Activity, WorkerOptions};

/// How long a lease lasts without renewal.
const LEASE_TTL: Duration = Duration::from_secs(15);
/// A lease (a battle's, a series place's claim) is renewed once it has
/// less than this left: each renewal is a write transaction.
const RENEW_WITHIN: Duration = Duration::from_secs(10);
/// How often a battle's driver looks for cancellations requested by other
/// processes (a read), renewing its lease when it is due.
const HEARTBEAT: Duration = Duration::from_millis(500);
/// How often a subscriber re-reads the journal for events written by
/// another process: with the journal's 25 ms group commit, a viewer in
/// another process trails the driver by well under 250 ms (`benches/follow.rs`).
const FOLLOW_POLL: Duration = Duration::from_millis(100);
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// How often running work looks for a cancellation asked by another process.
const WORK_POLL: Duration = Duration::from_millis(250);

/// What [`Engine::judge_ended`] did.
#[derive(Debug)]
pub enum Judged {
    /// Judged; the analysis may still have failed (its `error`).
    Done(crate::analysis::Analysis),
    /// The analysis could not run.
    Failed(Error),
    /// No judge model: none given and no `default_model`.
    NoModel,
    /// No contestant finished.
    NothingToJudge,
    /// It has an analysis already (a resumed battle judged before).
    AlreadyJudged,
}

/// Everything needed to open an engine.
pub struct EngineOptions {
    pub data_dir: PathBuf,
    /// Its `database_url`, when set, is the team database the engine opens
    /// instead of the data directory's SQLite.
    pub config: Config,
    pub clock: Arc<dyn Clock>,
    /// The team database's password (never in the config or its URL).
    pub database_password: Option<crate::keychain::Secret>,
    /// This machine's name among a team's; none: the host name.
    pub machine: Option<String>,
    /// Who works here, as battles record it (who started one, who gave
    /// its verdict); none: the OS user ([`crate::config::os_user`]).
    pub user: Option<String>,
}

impl EngineOptions {
    /// The data directory and config the app and the CLI share
    /// (`ARENA_DATA_DIR`, `ARENA_CONFIG`, else the OS defaults).
    /// A team database's password comes from `ARENA_DATABASE_PASSWORD` or
    /// the keychain, this machine's name from `ARENA_MACHINE`, the user's
    /// from `ARENA_USER` (else the OS user).
    pub fn from_env() -> Result<EngineOptions> {
        let config = crate::config::load()?;
        let database_password = match &config.database_url {
            Some(url) => crate::config::database_password(url)?,
            None => None,
        };
        Ok(EngineOptions {
            data_dir: config::data_dir()?,
            config,
            clock: Arc::new(SystemClock),
            database_password,
            machine: crate::config::machine_name()?,
            user: crate::config::user_name()?,
        })
    }

    /// The data directory's SQLite, this host's name: what tests and
    /// benches mostly want.
    pub fn local(data_dir: PathBuf, config: Config) -> EngineOptions {
        EngineOptions {
            data_dir,
            config,
            clock: Arc::new(SystemClock),
            database_password: None,
            machine: None,
            user: None,
        }
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
    /// Streamed events waiting for the journal (group commit).
    journal: journal::Journal,
    /// Analyses, cross-examinations and refine rounds running here, by id.
    work: Mutex<HashMap<String, CancellationToken>>,
    /// How far the team database's clock is ahead of this engine's, and
    /// when that was measured (see [`Engine::lease_ms`]).
    clock_offset: Mutex<Option<(std::time::Instant, i64)>>,
}

/// This process, as a lease holder.
#[derive(Clone)]
struct Me {
    owner: String,
    host: String,
    /// This boot of this computer, on a team database (see
    /// [`claim_machine_name`]).
    boot_id: Option<String>,
    pid: u32,
    /// The user it works for (see [`EngineOptions::user`]).
    user: Option<String>,
}

/// Cancellation handles of a battle being driven here.
struct Live {
    cancel: CancellationToken,
    contestants: Mutex<HashMap<String, CancellationToken>>,
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
        let store = match &options.config.database_url {
            Some(url) => Store::open_postgres(
                url,
                options
                    .database_password
                    .as_ref()
                    .map(crate::keychain::Secret::expose),
            )?,
            None => Store::open(&options.data_dir.join(store::DATABASE_FILE))?,
        }
        .acting_as(&owner);
        let host = options.machine.unwrap_or_else(hostname);
        let boot_id = crate::config::boot_id().filter(|_| store.is_team());
        if let Some(boot) = &boot_id {
            claim_machine_name(&store, &host, boot)?;
        }
        let settings = Settings::new(options.config)?;
        let engine = Engine {
            pinned: None,
            inner: Arc::new(Inner {
                data_dir: options.data_dir,
                settings: RwLock::new(Arc::new(settings)),
                changing: tokio::sync::Mutex::new(()),
                store,
                clock: options.clock,
                me: Me {
                    owner,
                    host,
                    boot_id,
                    pid: std::process::id(),
                    user: options.user.or_else(crate::config::os_user),
                },
                live: Mutex::new(HashMap::new()),
                lanes: lane::Lanes::default(),
                journal: journal::Journal::default(),
                work: Mutex::new(HashMap::new()),
                clock_offset: Mutex::new(None),
            }),
        };
        if engine.inner.me.boot_id.is_some() {
            keep_machine_name(&engine);
        }
        Ok(engine)
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

    /// The store itself, for tests that stage what a crash leaves behind;
    /// everything else goes through the engine.
    #[cfg(feature = "testing")]
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
                crate::agent::jail::jail_info().map(|_| Some(Enforcement::Jail))
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
            Ok(Some(Enforcement::Jail)) => match crate::agent::jail::jail_info() {
                Ok(info) => format!("jail: {info}"),
                Err(why) => format!("unavailable: {why}"),
            },
        }
    }

    /// The database this engine keeps its data in, asked now (an error
    /// when it does not answer).
    pub async fn database_info(&self) -> Result<store::StoreInfo> {
        self.db(|s| s.info()).await
    }

    /// Whether this engine works on a team's database (PostgreSQL).
    pub(crate) fn database_is_team(&self) -> bool {
        self.inner.store.is_team()
    }

    /// This machine's name among a team's (`ARENA_MACHINE`, else the host
    /// name).
    pub fn machine(&self) -> &str {
        &self.inner.me.host
    }

    /// Who works here (`ARENA_USER`, else the OS user), as battles record
    /// who started them and who gave their verdicts; none when unknown.
    pub fn user(&self) -> Option<&str> {
        self.inner.me.user.as_deref()
    }

    /// This machine's name when the lanes are a team's (a team database).
    pub(crate) fn team_machine(&self) -> Option<&str> {
        self.inner
            .store
            .is_team()
            .then_some(self.inner.me.host.as_str())
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

    /// A battle as its viewer may see it (see `blind::BattleView`): what
    /// the CLI and the app show. `battle` is the battle itself.
    pub async fn view_battle(&self, id: &str) -> Result<BattleView> {
        Ok(BattleView::of(&self.battle(id).await?))
    }

    /// [`Engine::battle_detail`] as its viewer may see it.
    pub async fn view_detail(&self, id: &str) -> Result<DetailView> {
        let d = self.battle_detail(id).await?;
        Ok(DetailView::new(
            &d.battle,
            d.rounds,
            d.analysis,
            d.cross_examinations,
            d.last_seq,
        ))
    }

    /// [`Engine::battles`] as their viewer may see them.
    pub async fn view_battles(&self, limit: usize) -> Result<Vec<BattleView>> {
        let battles = self.battles(limit).await?;
        Ok(battles.iter().map(BattleView::of).collect())
    }

    /// [`Engine::battle_page`] as its viewer may see it.
    pub async fn view_page(
        &self,
        query: crate::battle::BattleQuery,
    ) -> Result<(Vec<BattleView>, u64)> {
        let (battles, total) = self.battle_page(query).await?;
        Ok((battles.iter().map(BattleView::of).collect(), total))
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

    /// How many transactions this process's journal writer has committed
    /// (streamed events, grouped; for benchmarks).
    pub fn journal_commits(&self) -> u64 {
        self.inner.journal.commits()
    }

    /// How many write transactions this engine's database has run (for
    /// tests and benchmarks).
    pub fn write_transactions(&self) -> u64 {
        self.inner.store.write_transactions()
    }

    /// The battles still `running` (to resume), oldest first.
    pub async fn running_battles(&self) -> Result<Vec<String>> {
        self.db(|s| s.running_battles()).await
    }

    /// A battle's full id from the id or a unique prefix of it.
    pub async fn resolve_battle_id(&self, key: &str) -> Result<String> {
        let key = key.to_string();
        self.db(move |s| s.resolve_battle_id(&key)).await
    }

    /// A series' full id from the id or a unique prefix of it.
    pub async fn resolve_series_id(&self, key: &str) -> Result<String> {
        let key = key.to_string();
        self.db(move |s| s.resolve_series_id(&key)).await
    }

    /// Validates the request and records the battle (status `running`, all
    /// contestants `queued`) with its results folder and manifest. Nothing
    /// is created when validation fails. Call [`Engine::run_battle`] next.
    /// Whether `project` can hold a battle of `battle_type`, as the launcher
    /// asks while the path is typed or picked: a full path to a folder
    /// that exists (and, for a battle that works in worktrees, a git
    /// repository with a commit). Returns the folder, made canonical.
    pub async fn check_project(
        &self,
        project: &std::path::Path,
        battle_type: crate::battle::BattleType,
    ) -> Result<std::path::PathBuf> {
        let folder = validate::project_folder(project)?;
        if battle_type == crate::battle::BattleType::Coding {
            validate::git_base(&folder).await?;
        }
        Ok(folder)
    }

    pub async fn create_battle(&self, request: BattleRequest) -> Result<Battle> {
        validate::create(self, request).await
    }

    /// Drives the battle to a terminal status and returns it. Fails with
    /// `Conflict` when another live process is driving it.
    pub async fn run_battle(&self, id: &str) -> Result<Battle> {
        drive::drive(self, id).await
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

    /// Judges a battle that just ended, as every front end does after a
    /// run or a resume: with `model`, else `default_model`, when at least
    /// one contestant finished and it has no analysis yet.
    pub async fn judge_ended(&self, battle: &Battle, model: Option<&str>) -> Judged {
        if model.is_none() && self.config().default_model.is_none() {
            return Judged::NoModel;
        }
        if !battle
            .contestants
            .iter()
            .any(|c| c.status == ContestantStatus::Done)
        {
            return Judged::NothingToJudge;
        }
        match self.analysis(&battle.id).await {
            Ok(Some(_)) => return Judged::AlreadyJudged,
            Ok(None) => {}
            Err(e) => return Judged::Failed(e),
        }
        match self.analyze(&battle.id, model).await {
            Ok(a) => Judged::Done(a),
            Err(e) => Judged::Failed(e),
        }
    }

    /// Drives a battle to its end, then judges it ([`Engine::judge_ended`]).
    pub async fn run_and_judge(&self, id: &str, model: Option<&str>) -> Result<(Battle, Judged)> {
        let battle = self.run_battle(id).await?;
        let judged = self.judge_ended(&battle, model).await;
        Ok((battle, judged))
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
        cross_exam::cross_examine(self, battle_id, examiner, question).await
    }

    pub async fn cross_examinations(
        &self,
        battle_id: &str,
    ) -> Result<Vec<crate::cross_exam::CrossExamination>> {
        let id = battle_id.to_string();
        self.db(move |s| s.cross_examinations(&id)).await
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
        // Contestants that start or stop together move in one transaction.
        self.grouped(move |tx| tx.move_contestant(&c, from, to, error.as_deref(), at))
            .await
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
            expires_at_ms: self.lease_ms() + LEASE_TTL.as_millis() as i64,
        }
    }

    /// Now, on the clock leases and lane tickets are kept by (ms): this
    /// engine's own on SQLite; on a team database the database's, so that
    /// machines whose clocks disagree still agree on when a lease expired
    /// and who was ready first. The difference is measured with a round
    /// trip (its midpoint; off by at most half of it) and kept for 30 s.
    pub(crate) fn lease_ms(&self) -> i64 {
        store::ms(self.now()) + self.clock_offset_ms()
    }

    /// How far the lease clock is ahead of this engine's (0 on SQLite);
    /// see [`Engine::lease_ms`].
    /// Renews this machine's name's claim (see [`claim_machine_name`]) off
    /// the caller's thread, with the clock's difference every 30 s.
    fn renew_machine_name(&self) {
        let (Some(boot), Ok(runtime)) = (
            self.inner.me.boot_id.clone(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        let (store, host) = (self.inner.store.clone(), self.inner.me.host.clone());
        runtime.spawn_blocking(move || {
            if let Err(e) = claim_machine_name(&store, &host, &boot) {
                tracing::error!(error = %e, "this machine's name");
            }
        });
    }

    pub(crate) fn clock_offset_ms(&self) -> i64 {
        const FRESH: std::time::Duration = std::time::Duration::from_secs(30);
        if !self.inner.store.is_team() {
            return 0;
        }
        let mut cached = self
            .inner
            .clock_offset
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let offset = match *cached {
            Some((at, offset)) if at.elapsed() < FRESH => offset,
            previous => {
                let before = store::ms(self.now());
                match self.inner.store.database_now_ms() {
                    Ok(Some(db)) => {
                        let after = store::ms(self.now());
                        // A slow answer (the store busy) says little about
                        // the difference: keep the last one.
                        let offset = match (after - before <= 500, previous) {
                            (false, Some((_, last))) => last,
                            _ => db - (before + after) / 2,
                        };
                        *cached = Some((std::time::Instant::now(), offset));
                        self.renew_machine_name();
                        offset
                    }
                    Ok(None) => 0,
                    Err(e) => {
                        // Kept for another 30 s: not asked again on every call.
                        tracing::warn!(error = %e, "cannot read the team database's clock; using the last difference");
                        let offset = previous.map_or(0, |(_, offset)| offset);
                        *cached = Some((std::time::Instant::now(), offset));
                        offset
                    }
                }
            }
        };
        offset
    }
}

/// Renews this machine's name's claim every 30 s while the engine lives
/// (when it is opened inside a runtime; else with the clock's difference).
fn keep_machine_name(engine: &Engine) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(&engine.inner);
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(30));
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            Engine {
                inner,
                pinned: None,
            }
            .renew_machine_name();
        }
    });
}

/// A machine name's claim lasts this long without renewal (renewed with
/// the database clock's difference, every 30 s while the engine works).
const MACHINE_NAME_FRESH_MS: i64 = 90_000;

/// Claims (or renews) this machine's name on the team database: two
/// computers under one name would each take the other's running processes
/// for dead ones of its own, and take over their work. Refused while
/// another computer (another boot) has claimed it lately.
fn claim_machine_name(store: &Store, name: &str, boot_id: &str) -> Result<()> {
    let now_ms = store
        .database_now_ms()?
        .unwrap_or_else(|| store::ms(chrono::Utc::now()));
    let taken =
        store.transact(|tx| tx.claim_machine_name(name, boot_id, now_ms, MACHINE_NAME_FRESH_MS))?;
    match taken {
        None => Ok(()),
        Some(seen_at) => Err(crate::error::Invalid::Other(format!(
            "the machine name `{name}` is in use on the team database by another computer (its Arena was there {} s ago); give this one a name of its own with ARENA_MACHINE=…, or, if this computer restarted, wait {} s",
            ((now_ms - seen_at) / 1000).max(0),
            ((seen_at + MACHINE_NAME_FRESH_MS - now_ms) / 1000).max(1)
        ))
        .into()),
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

/// Whether process `pid` of this machine exists. Lanes and leases ask it
/// of every holder each time a waiter looks (every 20 ms for the next in
/// line); the answer is kept for a quarter second, process-wide, so the
/// kernel is asked once per holder and interval, not once per look.
pub(crate) fn pid_alive(pid: u32) -> bool {
    const FRESH: std::time::Duration = std::time::Duration::from_millis(250);
    static SEEN: Mutex<Option<HashMap<u32, (std::time::Instant, bool)>>> = Mutex::new(None);
    let now = std::time::Instant::now();
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    if let Some((at, alive)) = seen.get(&pid) {
        if now.duration_since(*at) < FRESH {
            return *alive;
        }
    }
    let alive = ask_kernel(pid);
    seen.retain(|_, (at, _)| now.duration_since(*at) < FRESH);
    seen.insert(pid, (now, alive));
    alive
}

fn ask_kernel(pid: u32) -> bool {
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
