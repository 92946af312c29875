//! IPC commands that start a battle again (issue 42, item 12): "Run
//! again" starts the same battle anew at once; "Edit & rerun" reads what
//! it was started with for the launcher. Each reads the stored battle,
//! converts it with `arena_api::LaunchDto`, and (Run again) hands the
//! request to `start_battle`.

use arena_api::{BattleDto, LaunchDto};
use tauri::{AppHandle, Runtime, State};

use crate::error::Error;
use crate::state::AppState;

/// What battle `id` was started with: its type, project, prompt,
/// contestants (in the order they were started in, so a blind battle
/// still masked gives away nothing of who is who), check, blind, tags and
/// base choice. A run of a series is refused: it runs again from its series.
#[tauri::command]
pub async fn battle_launch(state: State<'_, AppState>, id: String) -> Result<LaunchDto, Error> {
    let battle = state.engine()?.battle(&id).await?;
    if battle.series_id.is_some() {
        return Err(arena_core::Invalid::Other(
            "this battle is a run of a series: run the series again instead".into(),
        )
        .into());
    }
    Ok(LaunchDto::from(&battle))
}

/// Starts battle `id` anew: the same prompt, contestants (each on the
/// provider that served it), check, blind, tags and base choice (HEAD or
/// the working tree, as they are now), validated like any new battle.
#[tauri::command]
pub async fn rerun_battle<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    id: String,
) -> Result<BattleDto, Error> {
    let launch = battle_launch(state.clone(), id).await?;
    crate::commands::start_battle(app, state, launch.request()).await
}
