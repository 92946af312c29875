//! IPC commands: thin wrappers that validate input, call into the engine and
//! map results to DTOs and [`Error`].

use tauri::{AppHandle, Manager, Runtime, State};

use crate::dto::AppInfo;
use crate::error::Error;
use crate::state::AppState;

/// The app version, the shared data directory, and whether the engine opened.
#[tauri::command]
pub async fn app_info<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
) -> Result<AppInfo, Error> {
    let (data_dir, battles) = match &state.engine {
        Some(engine) => (
            engine.data_dir().to_path_buf(),
            Some(engine.battle_count().await?),
        ),
        None => (app.path().app_data_dir().map_err(Error::DataDir)?, None),
    };
    Ok(AppInfo {
        version: app.package_info().version.to_string(),
        data_dir: data_dir.display().to_string(),
        battles,
        startup_error: state.startup_error.as_ref().map(|e| e.to_string()),
    })
}
