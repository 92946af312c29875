//! The Arena desktop app: a thin Tauri shell over `arena-core`.

pub mod commands;
pub mod dto;
pub mod error;
pub mod state;

pub use error::Error;

use tracing_subscriber::EnvFilter;

/// Default log filter when `RUST_LOG` is not set.
const DEFAULT_LOG_FILTER: &str = "info";

/// Registers the app's commands, plugins and setup on `builder`.
///
/// Generic over the runtime so it can also be used with a mock runtime.
pub fn app_builder<R: tauri::Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    builder
        .invoke_handler(tauri::generate_handler![commands::app_info])
        .setup(|app| {
            use tauri::Manager;
            let state = state::AppState::open();
            if let Some(engine) = state.engine.clone() {
                tracing::info!(data_dir = %engine.data_dir().display(), "Arena starting");
                // Battles left running by an earlier run (or a crash) are
                // reconciled and finished in the background.
                tauri::async_runtime::spawn(async move {
                    match engine.resume(None).await {
                        Ok(done) if !done.is_empty() => {
                            tracing::info!(count = done.len(), "resumed battles")
                        }
                        Ok(_) => {}
                        Err(err) => tracing::warn!(%err, "resuming battles failed"),
                    }
                });
            }
            app.manage(state);
            Ok(())
        })
}

/// Starts the desktop app (blocks until the app exits).
pub fn run() {
    init_tracing();
    app_builder(tauri::Builder::default())
        .run(tauri::generate_context!())
        .expect("error while running the Arena app");
}

/// Logs to stderr, filtered by `RUST_LOG` (default: `info`).
fn init_tracing() {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    // Fails only if a global subscriber is already set, which is fine.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
