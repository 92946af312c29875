//! Test harness: a real engine over a temp data dir, talking to two real
//! scripted servers on loopback — one configured as a local-lane provider,
//! one as a cloud-lane provider. With `ARENA_TEST_POSTGRES` set (as
//! `scripts/test.sh` sets it for a second run of these tests), its engines
//! keep their data in a fresh database of the run's shared PostgreSQL
//! instead of the data dir's SQLite: team mode's store under the engine.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use arena_core::battle::{BattleRequest, BattleType, ContestantSpec, Lane};
use arena_core::config::{Config, Limits, ProviderConfig, ProviderKind};
use arena_core::{Battle, BattleEvent, Engine, EngineOptions};
use arena_testserver::{ModelScript, RecordedRequest, TestServer};
use futures::StreamExt;

pub struct Harness {
    pub local: TestServer,
    pub cloud: TestServer,
    pub engine: Engine,
    pub data: tempfile::TempDir,
    pub project: tempfile::TempDir,
    /// The team database's password, when the engines use one.
    pub database_password: Option<String>,
    /// The team database, dropped with the harness.
    pub team: Option<TeamDb>,
}

/// A database of the run's shared PostgreSQL, dropped with this.
pub struct TeamDb {
    shared: arena_testdb::Shared,
    name: String,
}

impl TeamDb {
    pub fn url(&self) -> String {
        self.shared.url(&self.name)
    }

    pub fn password(&self) -> &str {
        self.shared.password()
    }
}

impl Drop for TeamDb {
    fn drop(&mut self) {
        let _ = self.shared.drop_database(&self.name);
    }
}

/// A fresh database in the run's shared PostgreSQL, when the run has one
/// (`ARENA_TEST_POSTGRES`).
pub fn team_database() -> Option<TeamDb> {
    let shared = arena_testdb::Shared::from_env()?;
    let name = shared
        .create_database()
        .expect("a database in the shared PostgreSQL");
    Some(TeamDb { shared, name })
}

/// Options for an engine over `data_dir` with `config`, and with the team
/// database's `password` when `config` names one.
pub fn options(data_dir: PathBuf, config: Config, password: Option<&str>) -> EngineOptions {
    EngineOptions {
        database_password: password.map(|p| arena_core::keychain::Secret::new(p.into())),
        ..EngineOptions::local(data_dir, config)
    }
}

/// Short timeouts and backoffs so fault tests run quickly.
pub fn fast_limits() -> Limits {
    Limits {
        max_attempts: 3,
        backoff_base_ms: 20,
        backoff_max_ms: 200,
        stall_timeout_secs: 1,
        connect_timeout_secs: 2,
        coalesce_ms: 20,
        ..Limits::default()
    }
}

pub fn provider(name: &str, kind: ProviderKind, base_url: String, lane: Lane) -> ProviderConfig {
    ProviderConfig::new(name, kind, &base_url, lane)
}

impl Harness {
    pub async fn new() -> Harness {
        Harness::with_limits(fast_limits()).await
    }

    pub async fn with_limits(limits: Limits) -> Harness {
        // The engine's warnings and errors in the test's output.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .with_test_writer()
            .try_init();
        let local = TestServer::start().await.expect("local server");
        let cloud = TestServer::start().await.expect("cloud server");
        let team = team_database();
        let config = Config {
            default_model: None,
            providers: vec![
                provider("local", ProviderKind::Openai, local.base_url(), Lane::Local),
                provider("cloud", ProviderKind::Openai, cloud.base_url(), Lane::Cloud),
            ],
            limits,
            backends: Vec::new(),
            prices: Vec::new(),
            database_url: team.as_ref().map(TeamDb::url),
            team: Default::default(),
            coding: Default::default(),
            model_cutoffs: Vec::new(),
        };
        let database_password = team.as_ref().map(|t| t.password().to_string());
        let data = tempfile::tempdir().expect("data dir");
        let project = tempfile::tempdir().expect("project dir");
        std::fs::create_dir(project.path().join(".git")).expect(".git");
        let engine = Engine::open(options(
            data.path().to_path_buf(),
            config,
            database_password.as_deref(),
        ))
        .expect("engine");
        Harness {
            local,
            cloud,
            engine,
            data,
            project,
            database_password,
            team,
        }
    }

    /// Reopens the engine over the same data dir with its configuration
    /// changed by `change`.
    pub fn reconfigure(&mut self, change: impl FnOnce(&mut Config)) {
        let mut config = Config::clone(&self.engine.config());
        change(&mut config);
        self.engine = Engine::open(self.options(config)).expect("engine");
    }

    /// Another engine (as another process would be) over the same data dir.
    pub fn second_engine(&self) -> Engine {
        Engine::open(self.options(Config::clone(&self.engine.config()))).expect("second engine")
    }

    /// Options for another engine over this harness's data (its data dir,
    /// and its team database when it has one) with `config`.
    pub fn options(&self, config: Config) -> EngineOptions {
        options(
            self.data.path().to_path_buf(),
            config,
            self.database_password.as_deref(),
        )
    }

    pub fn request(&self, prompt: &str, contestants: &[&str]) -> BattleRequest {
        BattleRequest {
            battle_type: BattleType::Qa,
            project: self.project.path().to_path_buf(),
            prompt: prompt.into(),
            contestants: contestants
                .iter()
                .map(|c| ContestantSpec::parse(c).expect("contestant spec"))
                .collect(),
            check_command: None,
            blind: false,
            tags: Vec::new(),
        }
    }

    pub async fn run(&self, contestants: &[&str]) -> Battle {
        let battle = self
            .engine
            .create_battle(self.request("Explain lanes.", contestants))
            .await
            .expect("create battle");
        self.engine
            .run_battle(&battle.id)
            .await
            .expect("run battle")
    }

    pub fn results_root(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap().join("Arena")
    }
}

/// The time a request's response was streaming.
pub fn interval(r: &RecordedRequest) -> (Instant, Instant) {
    let start = r.stream_started_at.expect("stream started");
    let end = r.stream_finished_at.expect("stream finished");
    (start, end)
}

pub fn overlaps(a: (Instant, Instant), b: (Instant, Instant)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

/// The one generation request for `model`.
pub fn only_request(server: &TestServer, model: &str) -> RecordedRequest {
    let reqs = server.requests_for(model);
    assert_eq!(
        reqs.len(),
        1,
        "{model}: expected one request, got {}",
        reqs.len()
    );
    reqs.into_iter().next().unwrap()
}

/// Collects the battle's events from `since` until the battle is terminal.
pub async fn collect_until_done(engine: &Engine, battle_id: &str, since: u64) -> Vec<BattleEvent> {
    let mut events = Vec::new();
    let mut stream = std::pin::pin!(engine.subscribe(battle_id, since));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, stream.next()).await {
        let event = event.expect("event");
        let done = matches!(&event.kind, arena_core::EventKind::BattleStatus { status } if status.is_terminal());
        events.push(event);
        if done {
            break;
        }
    }
    events
}

pub fn script(n: usize, rate: f64) -> ModelScript {
    ModelScript::tokens(n).rate(rate)
}

pub fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository with one commit: README.md and src/lib.rs.
pub fn repo() -> tempfile::TempDir {
    repo_in(&std::env::temp_dir())
}

/// [`repo`] in a folder of its own under `parent`. (Attack tests put the
/// project outside `/tmp`, as a user's would be: a jail has a `/tmp` of its
/// own, where a write "into the project" would land harmlessly and look
/// like an escape.)
pub fn repo_in(parent: &std::path::Path) -> tempfile::TempDir {
    std::fs::create_dir_all(parent).unwrap();
    let dir = tempfile::tempdir_in(parent).unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(
        dir.path(),
        &["config", "user.email", "arena@example.invalid"],
    );
    git(dir.path(), &["config", "user.name", "Arena Test"]);
    std::fs::write(dir.path().join("README.md"), "# Demo\n\nHello.\n").unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "pub fn one() -> u32 {\n    1\n}\n",
    )
    .unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "initial"]);
    dir
}

/// Creates a Coding battle of `contestants` (with the check command
/// `check`) in `project` and runs it to its end, two minutes at most.
pub async fn run_coding(
    h: &Harness,
    project: &std::path::Path,
    contestants: &[&str],
    check: Option<&str>,
) -> Battle {
    let battle = h
        .engine
        .create_battle(BattleRequest {
            battle_type: BattleType::Coding,
            project: project.to_path_buf(),
            prompt: "Make the change.".into(),
            contestants: contestants
                .iter()
                .map(|c| ContestantSpec::parse(c).unwrap())
                .collect(),
            check_command: check.map(str::to_string),
            blind: false,
            tags: Vec::new(),
        })
        .await
        .expect("create");
    tokio::time::timeout(Duration::from_secs(120), h.engine.run_battle(&battle.id))
        .await
        .expect("the battle ends")
        .expect("run")
}
