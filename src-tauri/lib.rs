//! The Arena desktop app: a thin Tauri shell over `arena-core`.
//!
//! - [`commands`]: the IPC commands, each a validation, a call into the
//!   engine and a conversion to the wire types of `arena-api`; errors cross
//!   as `{ code, message }` ([`error`]).
//! - [`events`]: `subscribe_battle`'s sink — the battle's event stream,
//!   text deltas coalesced, into a Tauri channel.
//! - [`background`]: running and judging battles without blocking a command,
//!   and resuming battles an earlier run left behind.
//! - [`state`]: the engine, the live subscriptions and the worker switch.
//! - [`worker`]: the worker switch — this app serving places of running
//!   series in the background.
//! - [`notification`]: the OS notification when a battle ends.
//!
//! # Plugins
//!
//! The opener (show a folder in the file manager), dialog (folder picker)
//! and notification plugins are driven from Rust, by commands and
//! [`background`]; the window is granted none of their commands. The
//! window-state plugin remembers the window's size and position (in the data
//! directory); the window starts hidden and is shown once they are restored,
//! so it does not jump.
//!
//! # TypeScript bindings
//!
//! The webview's types for every wire type live in `ui/src/ipc/bindings/`,
//! generated from `arena-api` with ts-rs. `cargo test -p arena-api` fails
//! when they are stale; regenerate them with
//!
//! ```sh
//! cargo test -p arena-api -- --ignored export_bindings
//! ```
//!
//! and commit the result (see `crates/arena-api/src/bindings.rs`).

pub mod background;
pub mod coding;
pub mod commands;
pub mod error;
pub mod events;
#[cfg(test)]
mod ipc_tests;
pub mod notification;
pub mod packs;
pub mod rerun;
pub mod state;
pub mod worker;

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
        .plugin(tauri_plugin_notification::init())
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            commands::app_info,
            commands::status,
            commands::worker_state,
            commands::set_worker,
            commands::list_battles,
            commands::search_battles,
            commands::get_battle,
            commands::start_battle,
            commands::start_series,
            commands::list_series,
            commands::get_series,
            commands::cancel_series,
            commands::export_series_report,
            commands::open_series_folder,
            commands::cancel_battle,
            commands::cancel_contestant,
            commands::cancel_work,
            commands::set_winner,
            commands::vote,
            commands::reveal,
            commands::set_tags,
            commands::set_series_tags,
            commands::analyze,
            commands::cross_examine,
            commands::apply_diff,
            commands::contestant_diff,
            commands::open_results_folder,
            commands::export_battle_report,
            commands::open_worktree,
            commands::pick_folder,
            commands::refine,
            commands::leaderboard,
            commands::check_project,
            coding::coding_base,
            coding::probe_check,
            rerun::battle_launch,
            rerun::rerun_battle,
            commands::providers,
            commands::personas,
            commands::backends,
            commands::settings,
            commands::save_settings,
            commands::save_backend,
            commands::remove_backend,
            commands::save_persona,
            commands::create_config,
            commands::set_api_key,
            commands::subscribe_battle,
            commands::unsubscribe_battle,
            packs::open_pack,
            packs::import_pack,
            packs::sample_pack,
            packs::start_pack_run,
            packs::pack_run_report,
            packs::list_pack_runs,
            packs::save_pack_report,
            packs::mine_history,
            packs::stop_mining,
            packs::write_pack_instructions,
            packs::pack_instructions,
            packs::detect_test_command,
            packs::default_writer,
            packs::review_list,
            packs::review_task,
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
        .setup(move |app| {
            // Hidden until the window-state plugin (see `run`) has put it
            // back where it was.
            if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
                if let Err(err) = window.show() {
                    tracing::warn!(%err, "could not show the main window");
                }
            }
            if let Some(engine) = engine {
                tracing::info!(data_dir = %engine.data_dir().display(), "Arena starting");
                // Battles left running by an earlier run (or a crash) are
                // reconciled, finished and judged in the background.
                tauri::async_runtime::spawn(background::resume_all(app.handle().clone(), engine));
            }
            Ok(())
        })
}

/// Starts the desktop app (blocks until the app exits).
pub fn run() {
    init_tracing();
    app_builder(tauri::Builder::default())
        // Only in the real app: tests on the mock runtime keep no state.
        .plugin(window_state())
        .run(tauri::generate_context!())
        .expect("error while running the Arena app");
}

/// The label of the app's window (tauri.conf.json).
const MAIN_WINDOW: &str = "main";
/// Where the window-state plugin keeps the window's geometry, in the data
/// directory (so `ARENA_DATA_DIR` gives tests their own).
const WINDOW_STATE_FILE: &str = "window-state.json";

/// Remembers the window's size, position, maximised and full-screen state
/// (not its visibility: the app shows its window itself).
fn window_state<R: tauri::Runtime>() -> tauri::plugin::TauriPlugin<R> {
    use tauri_plugin_window_state::{Builder, StateFlags};
    let builder = Builder::default().with_state_flags(StateFlags::all() - StateFlags::VISIBLE);
    match arena_core::config::data_dir() {
        // An absolute path replaces the plugin's default folder.
        Ok(dir) => builder.with_filename(dir.join(WINDOW_STATE_FILE).display().to_string()),
        Err(err) => {
            tracing::warn!(%err, "the window state is kept in the app's config folder");
            builder
        }
    }
    .build()
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
