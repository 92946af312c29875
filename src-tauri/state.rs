//! What the app keeps between commands: the engine (or why it could not
//! open), the live event subscriptions and the worker switch.

use arena_core::{Engine, EngineOptions};

use crate::error::Error;
use crate::events::Subscriptions;
use crate::worker::Worker;

pub struct AppState {
    pub engine: Option<Engine>,
    /// Shown in the window when the engine could not open (for example a
    /// mistake in arena.toml), so the app still starts and says what to fix.
    pub startup_error: Option<arena_core::Error>,
    /// Battle event streams flowing into webviews.
    pub subscriptions: Subscriptions,
    /// The worker switch in Settings (off at start).
    pub worker: Worker,
    /// The config file `ARENA_CONFIG` names when it did not exist at start:
    /// the engine runs with the defaults, and the window offers to create it.
    pub config_missing: std::sync::Mutex<Option<std::path::PathBuf>>,
}

impl AppState {
    pub fn open() -> AppState {
        // A config file named but missing is no reason not to start: the
        // defaults run until the user creates it (the window offers to).
        let missing = match arena_core::config::config_path() {
            (Some(path), true) if !path.exists() => Some(path),
            _ => None,
        };
        let options = match &missing {
            Some(path) => {
                tracing::warn!(path = %path.display(), "ARENA_CONFIG names a file that does not exist; running with the defaults");
                defaults()
            }
            None => EngineOptions::from_env(),
        };
        let state = match options.and_then(Engine::open) {
            Ok(engine) => AppState::with_engine(engine),
            Err(err) => {
                tracing::error!(%err, "could not open the engine");
                AppState {
                    engine: None,
                    startup_error: Some(err),
                    subscriptions: Subscriptions::default(),
                    worker: Worker::default(),
                    config_missing: Default::default(),
                }
            }
        };
        *state
            .config_missing
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = missing;
        state
    }

    pub fn with_engine(engine: Engine) -> AppState {
        AppState {
            engine: Some(engine),
            startup_error: None,
            subscriptions: Subscriptions::default(),
            worker: Worker::default(),
            config_missing: Default::default(),
        }
    }

    /// The engine, or an `engine_unavailable` error saying why there is none.
    pub fn engine(&self) -> Result<&Engine, Error> {
        self.engine.as_ref().ok_or_else(|| {
            Error::Unavailable(
                self.startup_error
                    .as_ref()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "it did not open".into()),
            )
        })
    }
}

/// What the engine opens with when the config file is missing: the
/// defaults, with the data directory, machine and user from the environment.
fn defaults() -> arena_core::Result<EngineOptions> {
    let mut options = EngineOptions::local(
        arena_core::config::data_dir()?,
        arena_core::config::Config::default(),
    );
    options.machine = arena_core::config::machine_name()?;
    options.user = arena_core::config::user_name()?;
    Ok(options)
}
