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
}

impl AppState {
    pub fn open() -> AppState {
        match EngineOptions::from_env().and_then(Engine::open) {
            Ok(engine) => AppState::with_engine(engine),
            Err(err) => {
                tracing::error!(%err, "could not open the engine");
                AppState {
                    engine: None,
                    startup_error: Some(err),
                    subscriptions: Subscriptions::default(),
                    worker: Worker::default(),
                }
            }
        }
    }

    pub fn with_engine(engine: Engine) -> AppState {
        AppState {
            engine: Some(engine),
            startup_error: None,
            subscriptions: Subscriptions::default(),
            worker: Worker::default(),
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
