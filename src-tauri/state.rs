//! What the app keeps between commands: the engine, or why it could not open.

use arena_core::{Engine, EngineOptions};

pub struct AppState {
    pub engine: Option<Engine>,
    /// Shown in the window when the engine could not open (for example a
    /// mistake in arena.toml), so the app still starts and says what to fix.
    pub startup_error: Option<arena_core::Error>,
}

impl AppState {
    pub fn open() -> AppState {
        match EngineOptions::from_env().and_then(Engine::open) {
            Ok(engine) => AppState {
                engine: Some(engine),
                startup_error: None,
            },
            Err(err) => {
                tracing::error!(%err, "could not open the engine");
                AppState {
                    engine: None,
                    startup_error: Some(err),
                }
            }
        }
    }
}
