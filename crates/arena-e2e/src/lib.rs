//! End-to-end harness: the real Arena app window, driven through WebDriver.
//!
//! `tauri-driver` (a WebDriver intermediary) starts Debian's `WebKitWebDriver`,
//! which launches the built app binary (`target/debug/arena-app`) with
//! automation on; the tests talk to it with [`fantoccini`]. Every test gets
//! its own [`Harness`]: a temp directory with an isolated data directory
//! (`ARENA_DATA_DIR`), an `arena.toml` (`ARENA_CONFIG`) whose only provider is
//! a scripted model server ([`arena_testserver::TestServer`]) running inside
//! the test process, and a project folder for battles.
//!
//! ```no_run
//! use arena_e2e::Harness;
//!
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn my_screen() -> anyhow::Result<()> {
//!     let Some(h) = Harness::start("my_screen").await? else {
//!         return Ok(()); // no display / no driver: skipped (fails with ARENA_REQUIRE_E2E=1)
//!     };
//!     let app = h.launch().await?;
//!     app.wait_for_text("Arena").await?;
//!     app.screenshot("my-screen").await?;
//!     app.close().await
//! }
//! ```
//!
//! Prerequisites (else the test is skipped with a message, or fails when
//! `ARENA_REQUIRE_E2E=1`): a display (`DISPLAY`, e.g. from `xvfb-run`),
//! `tauri-driver` (`ARENA_TAURI_DRIVER`, `PATH` or `~/.cargo/bin`),
//! `WebKitWebDriver` (`ARENA_WEBKIT_DRIVER`, `PATH` or `/usr/bin`), and the
//! built app (`ARENA_E2E_APP`, else `arena-app` next to the test's own build
//! profile directory; `cargo build -p arena-app` makes it).
//!
//! Screenshots go to `target/e2e-screenshots/<name>.png`, the log of each app
//! run (tauri-driver, WebKitWebDriver and the app's own stderr) to
//! `target/e2e-logs/<test>-<n>.log`; its tail is part of every error.
//!
//! Apps run one at a time: [`Harness::start`] takes an exclusive lock on
//! `target/e2e.lock`, so even test runners that use one process per test
//! (nextest) never run two at once.

mod app;
mod battle;
mod beacon;
mod driver;
mod launcher;
mod lock;
mod processes;
mod tools;
mod window;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use arena_core::{Battle, BattleRequest, BattleType, ContestantSpec, Engine, EngineOptions, Lane};
use arena_testserver::{ModelScript, TestServer};

pub use app::App;
pub use battle::{BattleSnapshot, OutputPane, RosterRow};
pub use beacon::Beacon;
pub use fantoccini::{self, Locator};
pub use launcher::BattleForm;
pub use processes::{process_tree_memory, Memory};
pub use tools::{e2e_required, Tools};
pub use window::Rect;
pub use {arena_core, arena_testserver};

/// How long the `wait_*` helpers wait by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// The model the scripted server serves from the start (a short answer).
pub const MODEL: &str = "scripted";

/// The provider name of the scripted server in the harness's `arena.toml`.
pub const PROVIDER: &str = "scripted";

/// One end-to-end test's world: temp dirs, config, scripted model server.
///
/// Launch the app with [`Harness::launch`] as often as needed (one at a time):
/// every launch uses the same data directory and config.
pub struct Harness {
    name: String,
    tools: Tools,
    root: PathBuf,
    server: TestServer,
    launches: AtomicUsize,
    // Dropped last: the temp dir outlives everything above, the lock too.
    _dir: tempfile::TempDir,
    _lock: lock::RunLock,
}

impl Harness {
    /// Sets up a test named `name` (used for log file names).
    ///
    /// `Ok(None)` when a prerequisite is missing and `ARENA_REQUIRE_E2E` is
    /// not `1`: the reason is printed and the test should return. With
    /// `ARENA_REQUIRE_E2E=1` a missing prerequisite is an error.
    pub async fn start(name: &str) -> Result<Option<Harness>> {
        let tools = match Tools::find() {
            Ok(tools) => tools,
            Err(why) => {
                if e2e_required() {
                    bail!("e2e test {name}: {why} (ARENA_REQUIRE_E2E=1, so this is a failure)");
                }
                tools::announce_skip(name, &why);
                return Ok(None);
            }
        };
        let lock = lock::RunLock::acquire(&tools.target_dir.join("e2e.lock")).await?;

        let dir = tempfile::Builder::new()
            .prefix("arena-e2e-")
            .tempdir()
            .context("creating the test's temp dir")?;
        // Canonical, so that it reads the same as the path the app shows.
        let root = dir
            .path()
            .canonicalize()
            .context("canonicalising the temp dir")?;
        for sub in ["data", "project", "xdg/data", "xdg/config"] {
            std::fs::create_dir_all(root.join(sub))
                .with_context(|| format!("creating {}", root.join(sub).display()))?;
        }

        let server = TestServer::start()
            .await
            .context("starting the scripted model server")?;
        server.set_model(MODEL, ModelScript::tokens(24));

        let harness = Harness {
            name: name.to_string(),
            tools,
            root,
            server,
            launches: AtomicUsize::new(0),
            _dir: dir,
            _lock: lock,
        };
        harness.write_config(&harness.default_config())?;
        Ok(Some(harness))
    }

    /// The isolated data directory (`ARENA_DATA_DIR`), canonical.
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// The config file (`ARENA_CONFIG`).
    pub fn config_path(&self) -> PathBuf {
        self.root.join("arena.toml")
    }

    /// A plain folder to use as a battle's project (results go to `Arena/` in it).
    pub fn project_dir(&self) -> PathBuf {
        self.root.join("project")
    }

    /// The scripted model server the config points at; add models with
    /// [`TestServer::set_model`].
    pub fn server(&self) -> &TestServer {
        &self.server
    }

    /// The tools and paths in use.
    pub fn tools(&self) -> &Tools {
        &self.tools
    }

    /// The default `arena.toml`: the scripted server as the only (local-lane)
    /// provider, [`MODEL`] as the judge, short retry and stall limits.
    pub fn default_config(&self) -> String {
        config_toml(&[ProviderEntry::local(PROVIDER, &self.server)], Some(MODEL))
    }

    /// Replaces `arena.toml` (takes effect at the next launch).
    pub fn write_config(&self, text: &str) -> Result<()> {
        let path = self.config_path();
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    }

    /// The environment every process of this test gets: `ARENA_DATA_DIR`,
    /// `ARENA_CONFIG`, and its own `XDG_DATA_HOME` and `XDG_CONFIG_HOME`, so
    /// that what the webview keeps (local storage: the launcher's remembered
    /// choices) and the window state do not leak from one test into another.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("ARENA_DATA_DIR".into(), self.data_dir().into_os_string()),
            ("ARENA_CONFIG".into(), self.config_path().into_os_string()),
            (
                "XDG_DATA_HOME".into(),
                self.root.join("xdg/data").into_os_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                self.root.join("xdg/config").into_os_string(),
            ),
        ]
    }

    /// Starts tauri-driver, opens a WebDriver session (which launches the
    /// app with this test's environment) and returns the app.
    pub async fn launch(&self) -> Result<App> {
        self.launch_with_env(&[]).await
    }

    /// [`Harness::launch`] with `extra` added to the app's environment after
    /// [`Harness::env`] (so it may override it), e.g. `ARENA_MACHINE`.
    pub async fn launch_with_env(&self, extra: &[(&str, &str)]) -> Result<App> {
        let n = self.launches.fetch_add(1, Ordering::SeqCst) + 1;
        let log = self
            .tools
            .target_dir
            .join("e2e-logs")
            .join(format!("{}-{n}.log", self.name));
        let mut env = self.env();
        env.extend(extra.iter().map(|(k, v)| (k.into(), v.into())));
        App::launch(&self.tools, &env, &log).await
    }

    /// The engine over this test's data directory and config, as the CLI
    /// would open it. Close the app first: one process drives a battle.
    pub fn engine(&self) -> Result<Engine> {
        let config = arena_core::config::from_file(&self.config_path())
            .context("loading the test's arena.toml")?;
        Engine::open(EngineOptions::local(self.data_dir(), config))
            .context("opening the engine on the test's data dir")
    }

    /// Creates a Q&A battle in the project folder with these contestants
    /// (`persona@model`, e.g. `debugger@scripted`) and runs it to the end
    /// through the engine (no analysis).
    pub async fn run_qa_battle(&self, prompt: &str, contestants: &[&str]) -> Result<Battle> {
        let engine = self.engine()?;
        let contestants = contestants
            .iter()
            .map(|c| ContestantSpec::parse(c).with_context(|| format!("contestant {c:?}")))
            .collect::<Result<Vec<_>>>()?;
        let battle = engine
            .create_battle(BattleRequest {
                battle_type: BattleType::Qa,
                project: self.project_dir(),
                prompt: prompt.to_string(),
                contestants,
                check_command: None,
                blind: false,
                tags: Vec::new(),
            })
            .await
            .context("creating the battle")?;
        engine
            .run_battle(&battle.id)
            .await
            .context("running the battle")
    }

    /// The `arena` CLI (`target/<profile>/arena`, from `cargo build -p
    /// arena-cli`) with this test's environment.
    pub fn arena_cli(&self) -> Result<std::process::Command> {
        let path = self.tools.profile_dir.join("arena");
        if !path.is_file() {
            bail!(
                "{} is missing: build it with `cargo build -p arena-cli`",
                path.display()
            );
        }
        let mut cmd = std::process::Command::new(path);
        cmd.envs(self.env()).env_remove("RUST_LOG");
        Ok(cmd)
    }

    /// Makes the project folder a git repository with `files` (path,
    /// content) committed on `main`, for Coding battles.
    pub fn git_project(&self, files: &[(&str, &str)]) -> Result<PathBuf> {
        let dir = self.project_dir();
        git(&dir, &["init", "-q", "-b", "main"])?;
        git(&dir, &["config", "user.email", "arena-e2e@example.invalid"])?;
        git(&dir, &["config", "user.name", "Arena e2e"])?;
        for (path, content) in files {
            let file = dir.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&file, content)
                .with_context(|| format!("writing {}", file.display()))?;
        }
        git(&dir, &["add", "-A"])?;
        git(&dir, &["commit", "-q", "-m", "initial"])?;
        Ok(dir)
    }

    /// Where screenshots go (`target/e2e-screenshots`).
    pub fn screenshot_dir(&self) -> PathBuf {
        screenshot_dir(&self.tools.target_dir)
    }
}

/// One `[[provider]]` of a test config (OpenAI-compatible).
#[derive(Debug, Clone)]
pub struct ProviderEntry {
    pub name: String,
    pub base_url: String,
    pub lane: Lane,
}

impl ProviderEntry {
    /// `server` as a local-lane provider (one contestant at a time).
    pub fn local(name: &str, server: &TestServer) -> ProviderEntry {
        ProviderEntry::at(name, &server.base_url(), Lane::Local)
    }

    /// `server` as a cloud-lane provider (contestants in parallel).
    pub fn cloud(name: &str, server: &TestServer) -> ProviderEntry {
        ProviderEntry::at(name, &server.base_url(), Lane::Cloud)
    }

    /// Any base URL (one nobody listens on, say).
    pub fn at(name: &str, base_url: &str, lane: Lane) -> ProviderEntry {
        ProviderEntry {
            name: name.to_string(),
            base_url: base_url.to_string(),
            lane,
        }
    }
}

/// An `arena.toml` with these providers, `default_model` as the judge (none:
/// battles are not judged), and short retry and stall limits.
pub fn config_toml(providers: &[ProviderEntry], default_model: Option<&str>) -> String {
    let mut text = String::new();
    if let Some(model) = default_model {
        text.push_str(&format!("default_model = {}\n", toml_string(model)));
    }
    for p in providers {
        text.push_str(&format!(
            "\n[[provider]]\nname = {}\nkind = \"openai\"\nbase_url = {}\nlane = \"{}\"\n",
            toml_string(&p.name),
            toml_string(&p.base_url),
            p.lane
        ));
    }
    text.push_str("\n[limits]\nbackoff_base_ms = 20\nstall_timeout_secs = 5\n");
    text
}

/// A TOML basic string (JSON's escaping is valid TOML for these).
fn toml_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Runs `git args` in `dir`; the error carries git's stderr.
fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .with_context(|| format!("running git {args:?} (is git installed?)"))?;
    if !out.status.success() {
        bail!(
            "git {args:?} in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

fn screenshot_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("e2e-screenshots")
}

/// The id of `battle`'s contestant that runs `model`.
pub fn contestant_with_model(battle: &Battle, model: &str) -> Result<String> {
    battle
        .contestants
        .iter()
        .find(|c| c.model == model)
        .map(|c| c.id.clone())
        .with_context(|| format!("no contestant with model {model}"))
}
