//! IPC commands of the Coding launcher (issue 42): the project's base
//! (HEAD and the uncommitted files) and a dry run of the check's first
//! word in the check's jail before Start. Each validates, calls the
//! engine, and converts to the wire types of `arena_api::coding`.

use std::path::Path;

use arena_api::{CheckProbeDto, CheckProbeRequest, CodingBaseDto};
use tauri::State;

use crate::error::Error;
use crate::state::AppState;

/// HEAD's commit, subject and branch, and the uncommitted files (the
/// first 200 and their count), for "start from HEAD" or "from my working
/// tree as it is". Reads the project's repository only.
#[tauri::command]
pub async fn coding_base(
    state: State<'_, AppState>,
    project: String,
) -> Result<CodingBaseDto, Error> {
    let base = state
        .engine()?
        .coding_base(Path::new(project.trim()))
        .await?;
    Ok((&base).into())
}

/// Whether the check's first word is found where the check will run: a
/// warning to show before Start (`warning` is `null` when it is found).
#[tauri::command]
pub async fn probe_check(
    state: State<'_, AppState>,
    request: CheckProbeRequest,
) -> Result<CheckProbeDto, Error> {
    let probe = state
        .engine()?
        .probe_check(
            Path::new(request.project.trim()),
            request.check_command.trim(),
        )
        .await?;
    Ok(CheckProbeDto {
        program: probe.program,
        warning: probe.warning,
    })
}
