//! The Arena desktop app: a thin Tauri shell over `arena-core`.
//!
//! - [`commands`]: the IPC commands, each a validation, a call into the
//!   engine and a conversion to [`dto`] types; errors cross as
//!   `{ code, message }` ([`error`]).
//! - [`events`]: `subscribe_battle`'s sink — the battle's event stream,
//!   text deltas coalesced, into a Tauri channel.
//! - [`background`]: running and judging battles without blocking a command,
//!   and resuming battles an earlier run left behind.
//! - [`state`]: the engine and the live subscriptions.
//!
//! # TypeScript bindings
//!
//! The webview's types for every DTO live in `ui/src/ipc/bindings/`,
//! generated from [`dto`] with ts-rs. `cargo test -p arena-app` fails when
//! they are stale; regenerate them with
//!
//! ```sh
//! cargo test -p arena-app -- --ignored export_bindings
//! ```
//!
//! and commit the result (see `bindings.rs`).

pub mod background;
#[cfg(test)]
mod bindings;
pub mod commands;
pub mod dto;
pub mod error;
pub mod events;
#[cfg(test)]
mod ipc_tests;
pub mod state;

pub use error::Error;

use tauri::Manager;
use tracing_subscriber::EnvFilter;

/// Default log filter when `RUST_LOG` is not set.
const DEFAULT_LOG_FILTER: &str = "info";

/// Opens the engine and registers the app's state, commands, page hook and
/// start-up work on `builder`.
///
/// Generic over the runtime so the tests can drive it on the mock runtime.
pub fn app_builder<R: tauri::Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    let state = state::AppState::open();
    let engine = state.engine.clone();
    builder
        // Driven from Rust only: the window is granted none of their commands.
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_dialog::init())
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::list_battles,
            commands::get_battle,
            commands::start_battle,
            commands::cancel_battle,
            commands::cancel_contestant,
            commands::set_winner,
            commands::analyze,
            commands::cross_examine,
            commands::apply_diff,
            commands::contestant_diff,
            commands::open_results_folder,
            commands::open_worktree,
            commands::pick_folder,
            commands::refine,
            commands::leaderboard,
            commands::providers,
            commands::personas,
            commands::backends,
            commands::settings,
            commands::save_settings,
            commands::set_api_key,
            commands::subscribe_battle,
            commands::unsubscribe_battle,
        ])
        .on_page_load(|webview, payload| {
            // A new page has its own channels: the old page's subscriptions
            // have nobody listening any more.
            if payload.event() == tauri::webview::PageLoadEvent::Started {
                if let Some(state) = webview.try_state::<state::AppState>() {
                    state.subscriptions.close_webview(webview.label());
                }
            }
        })
        .setup(move |_app| {
            if let Some(engine) = engine {
                tracing::info!(data_dir = %engine.data_dir().display(), "Arena starting");
                // Battles left running by an earlier run (or a crash) are
                // reconciled, finished and judged in the background.
                tauri::async_runtime::spawn(background::resume_all(engine));
            }
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
