//! IPC commands of the Packs screen (issues 40 and 41): open or import a
//! pack, find the sample pack, start a pack run and read its report, save
//! the report as files, mine a project's history into a validated pack
//! and write its instructions. Each validates,
//! calls the engine (or `arena_core::pack`, off the async threads) and
//! converts to the wire types of `arena_api::packs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arena_api::{
    DefaultWriterDto, DetectedCommandDto, ImportPackRequest, InstructionCountsDto, InstructionsDto,
    MineProgressDto, MineRequest, MineRunDto, PackDto, PackRunListDto, PackRunReportDto,
    PackRunStartDto, ReviewDecisionDto, ReviewItemDto, SavedReportDto, StartPackRunRequest,
    WriteInstructionsRequest,
};
use arena_core::pack::{self, Pack, PackError};
use arena_core::results::rfc3339;
use arena_core::{InstructionCounts, MineEvent, WriteEvent};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime, State};

use crate::background;
use crate::error::Error;
use crate::state::AppState;

/// Where the sample pack may be given explicitly (packaging, tests).
pub const SAMPLE_PACK_ENV: &str = "ARENA_SAMPLE_PACK";

/// Runs blocking work (reading a pack, git) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

fn pack_error(e: PackError) -> Error {
    Error::Engine(e.into())
}

/// A path from the webview: trimmed, absolute, or an `invalid_input`.
fn absolute(what: &str, value: &str) -> Result<PathBuf, Error> {
    let value = value.trim();
    if value.is_empty() {
        return Err(arena_core::Invalid::Other(format!("choose the {what}")).into());
    }
    let path = PathBuf::from(value);
    if !path.is_absolute() {
        return Err(arena_core::Invalid::Other(format!(
            "give the {what}'s full path (it starts with /)"
        ))
        .into());
    }
    Ok(path)
}

fn optional(what: &str, value: Option<String>) -> Result<Option<PathBuf>, Error> {
    match value.filter(|v| !v.trim().is_empty()) {
        Some(v) => absolute(what, &v).map(Some),
        None => Ok(None),
    }
}

/// The pack at `dir` as the screen shows it, checked against `project`.
fn read_pack(dir: &Path, project: Option<&Path>) -> Result<PackDto, Error> {
    let mut pack = Pack::load(dir).map_err(pack_error)?;
    if let Ok(root) = pack.root.canonicalize() {
        pack.root = root;
    }
    let summary = pack::summarize(&pack, project);
    Ok(PackDto::new(&pack.root, project, &summary))
}

/// Reads the pack at `path` (a folder holding `pack.toml`): its tasks,
/// each with whether it can run here (with `project` when given, else the
/// pack's own repository bundle) and why not.
#[tauri::command]
pub async fn open_pack(path: String, project: Option<String>) -> Result<PackDto, Error> {
    let dir = absolute("pack folder", &path)?;
    let project = optional("project folder", project)?;
    blocking(move || read_pack(&dir, project.as_deref())).await
}

/// Imports a SWE-bench JSON/JSONL file or a Harbor task folder into a new
/// pack at `out` (`arena pack import`), and reads it.
#[tauri::command]
pub async fn import_pack(request: ImportPackRequest) -> Result<PackDto, Error> {
    let source = absolute("file or folder to import", &request.source)?;
    let out = absolute("folder of the new pack", &request.out)?;
    let project = optional("project folder", request.project)?;
    let options = pack::ImportOptions {
        out: out.clone(),
        project: project.clone(),
        test_command: request
            .test_command
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty()),
        ..pack::ImportOptions::default()
    };
    blocking(move || {
        let report = pack::import(&source, &options).map_err(pack_error)?;
        read_pack(&report.pack, project.as_deref())
    })
    .await
}

/// The folder of the sample pack that ships with Arena, if this install
/// has one: `$ARENA_SAMPLE_PACK`, the app's resources (`packs/sample`),
/// `share/arena/packs/sample` beside the installed binary, or, in a build
/// from the repository, the repository's own `packs/sample`.
#[tauri::command]
pub async fn sample_pack<R: Runtime>(app: AppHandle<R>) -> Result<Option<String>, Error> {
    let resources = app.path().resource_dir().ok();
    blocking(move || Ok(find_sample_pack(resources.as_deref()).map(|p| p.display().to_string())))
        .await
}

/// Where the sample pack is, in the order [`sample_pack`] says.
pub fn find_sample_pack(resources: Option<&Path>) -> Option<PathBuf> {
    let mut places: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os(SAMPLE_PACK_ENV) {
        places.push(dir.into());
    }
    if let Some(r) = resources {
        places.push(r.join("packs").join("sample"));
    }
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        places.push(bin.join("../share/arena/packs/sample"));
    }
    places.push(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("packs")
            .join("sample"),
    );
    places
        .into_iter()
        .find(|p| p.join(pack::PACK_FILE).is_file())
        .map(|p| p.canonicalize().unwrap_or(p))
}

/// Starts a pack run (a Coding series of the pack's tasks) and runs it in
/// the background; tasks that cannot run here are left out, with why.
/// Follow it with `pack_run_report`.
#[tauri::command]
pub async fn start_pack_run(
    state: State<'_, AppState>,
    request: StartPackRunRequest,
) -> Result<PackRunStartDto, Error> {
    let engine = state.engine()?;
    absolute("pack folder", &request.pack)?;
    optional("project folder", request.project.clone())?;
    let started = engine.start_pack_run(request.into_engine()?).await?;
    if let arena_core::SeriesStart::Created(series) = &started.start {
        tauri::async_runtime::spawn(background::run_series(engine.clone(), series.id.clone()));
    }
    Ok(PackRunStartDto::from(&started))
}

/// A pack run's report: every run's verdict so far and the scores with
/// their intervals (read again while it runs).
#[tauri::command]
pub async fn pack_run_report(
    state: State<'_, AppState>,
    id: String,
) -> Result<PackRunReportDto, Error> {
    let engine = state.engine()?;
    let report = engine.pack_run_report(&id).await?;
    let series = engine.series(&id).await?;
    Ok(PackRunReportDto::new(&report, &series))
}

/// Pack runs, newest first, among the newest `limit` series (default 50).
#[tauri::command]
pub async fn list_pack_runs(
    state: State<'_, AppState>,
    limit: Option<u32>,
) -> Result<Vec<PackRunListDto>, Error> {
    let limit = limit.unwrap_or(50).min(10_000) as usize;
    let runs = state.engine()?.pack_runs(limit).await?;
    Ok(runs
        .iter()
        .map(|r| PackRunListDto {
            series_id: r.series_id.clone(),
            pack: r.pack.display().to_string(),
            status: r.status.clone(),
            created_at: rfc3339(r.created_at),
            contestants: r.contestants.clone(),
        })
        .collect())
}

/// Saves a pack run's report as `report.md`, `report.html`, `report.json`
/// and `runs.csv` (what `arena pack report` prints) into `folder`, by
/// default the run's folder in the data directory.
#[tauri::command]
pub async fn save_pack_report(
    state: State<'_, AppState>,
    id: String,
    folder: Option<String>,
) -> Result<SavedReportDto, Error> {
    let folder = optional("report folder", folder)?;
    let (folder, files) = state
        .engine()?
        .write_pack_report(&id, folder.as_deref())
        .await?;
    Ok(SavedReportDto {
        folder: folder.display().to_string(),
        files: files.iter().map(|f| f.display().to_string()).collect(),
    })
}

/// The mining run under way, if any: its stop switch (one at a time).
#[derive(Default)]
pub struct Mining(Mutex<Option<Arc<AtomicBool>>>);

impl Mining {
    /// A new run's stop switch, or a `conflict` while one runs.
    fn begin(&self) -> Result<Arc<AtomicBool>, Error> {
        let mut slot = self
            .0
            .lock()
            .map_err(|_| Error::Internal("mining state".into()))?;
        if slot.is_some() {
            return Err(Error::Engine(arena_core::Error::Conflict(
                "a history is being mined already; stop it or wait for it".into(),
            )));
        }
        let stop = Arc::new(AtomicBool::new(false));
        *slot = Some(stop.clone());
        Ok(stop)
    }

    fn end(&self) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = None;
        }
    }

    /// Asks the run under way to stop; whether one was running.
    fn stop(&self) -> bool {
        match self.0.lock() {
            Ok(slot) => slot.as_ref().is_some_and(|s| {
                s.store(true, Ordering::SeqCst);
                true
            }),
            Err(_) => false,
        }
    }
}

fn mining<R: Runtime>(app: &AppHandle<R>) -> tauri::State<'_, Mining> {
    if app.try_state::<Mining>().is_none() {
        app.manage(Mining::default());
    }
    app.state::<Mining>()
}

/// Mines a project's history as `arena pack mine` does
/// ([`arena_core::Engine::mine_pack`]): the static scan, each candidate
/// validated by running (BASE, RED, GOLD in the check's jail), with `out`
/// the validated tasks written as a pack and their instructions written
/// by the writer model (local by default). Where it is goes to
/// `on_progress` as it goes; `stop_mining` ends it early (the test runs
/// at hand too) with what was validated so far.
#[tauri::command]
pub async fn mine_history<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    request: MineRequest,
    on_progress: Channel<MineProgressDto>,
) -> Result<MineRunDto, Error> {
    let engine = state.engine()?;
    let project = absolute("project folder", &request.project)?;
    optional("folder of the new pack", request.out.clone())?;
    let (scan, mut validate, pack) = request.options()?;
    let stop = mining(&app).begin()?;
    validate.cancel = Some(stop);
    let result = engine
        .mine_pack(&scan, &validate, &pack, |event| {
            if let MineEvent::Progress(p) = event {
                // A page that went away stops listening; the run goes on.
                let _ = on_progress.send(MineProgressDto::from(p));
            }
        })
        .await;
    mining(&app).end();
    Ok(MineRunDto::new(&project, &result?))
}

/// Writes the instructions of the mined pack at `request.pack` whose
/// validated tasks have none (no writer was reachable when it was mined),
/// with the writer model (local by default), telling `on_progress` the
/// task at hand; `stop_mining` ends it between two tasks.
#[tauri::command]
pub async fn write_pack_instructions<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    request: WriteInstructionsRequest,
    on_progress: Channel<MineProgressDto>,
) -> Result<InstructionsDto, Error> {
    let engine = state.engine()?;
    let dir = absolute("pack folder", &request.pack)?;
    let writer = request.writer();
    let stop = mining(&app).begin()?;
    let result = engine
        .write_mined_instructions(&dir, writer.as_deref(), &Some(stop), |event| {
            if let WriteEvent::Task { id, at, of } = event {
                let _ = on_progress.send(MineProgressDto {
                    stage: "write".into(),
                    scanned: 0,
                    candidates: 0,
                    validated: 0,
                    dropped: Vec::new(),
                    eta_secs: None,
                    current: Some(format!("the instruction of {id} ({at} of {of})")),
                });
            }
        })
        .await;
    mining(&app).end();
    let (instructions, counts) = result?;
    Ok(InstructionsDto::new(&instructions, Some(&counts)))
}

/// How the pack at `pack`'s tasks stand with their instructions (written,
/// approved, pending, dropped, not written yet): the yield's
/// "instructions approved" after review.
#[tauri::command]
pub async fn pack_instructions(pack: String) -> Result<InstructionCountsDto, Error> {
    let dir = absolute("pack folder", &pack)?;
    blocking(move || Ok(InstructionCountsDto::from(&InstructionCounts::load(&dir)?))).await
}

/// The test command the files at the project's HEAD call for, and the
/// file that said so (none: nothing says), as mining detects it at each
/// base when none is given.
#[tauri::command]
pub async fn detect_test_command(project: String) -> Result<Option<DetectedCommandDto>, Error> {
    let dir = absolute("project folder", &project)?;
    blocking(move || {
        let root = pack::repository_root(&dir).map_err(pack_error)?;
        let found = pack::mine::test_command_at(&root, "HEAD").map_err(pack_error)?;
        Ok(found.map(|(command, because)| DetectedCommandDto { command, because }))
    })
    .await
}

/// The model that writes mined tasks' instructions when none is picked:
/// the default model when its provider is local; else why there is none.
#[tauri::command]
pub async fn default_writer(state: State<'_, AppState>) -> Result<DefaultWriterDto, Error> {
    let config = state.engine()?.config();
    Ok(
        match arena_core::pack::instruct::Writer::choose(&config, None).await {
            Ok(w) => DefaultWriterDto {
                writer: Some(w.name()),
                why_not: None,
            },
            Err(e) => DefaultWriterDto {
                writer: None,
                why_not: Some(e.to_string()),
            },
        },
    )
}

/// Stops the mining run under way (it reports what it found so far);
/// whether one was running.
#[tauri::command]
pub async fn stop_mining<R: Runtime>(app: AppHandle<R>) -> Result<bool, Error> {
    Ok(mining(&app).stop())
}

/// The tasks of the pack at `pack` whose instruction Arena wrote, pending
/// ones first, for review.
#[tauri::command]
pub async fn review_list(pack: String) -> Result<Vec<ReviewItemDto>, Error> {
    let dir = absolute("pack folder", &pack)?;
    blocking(move || {
        let pack = Pack::load(&dir).map_err(pack_error)?;
        Ok(pack::review::reviewable(&pack)
            .iter()
            .map(ReviewItemDto::from)
            .collect())
    })
    .await
}

/// A reviewer's decision on task `id`: approve, drop (with a reason) or
/// edit its instruction (refused, saying why, when the edit gives the fix
/// away). Returns the task as it is now.
#[tauri::command]
pub async fn review_task(
    pack: String,
    id: String,
    decision: ReviewDecisionDto,
) -> Result<ReviewItemDto, Error> {
    let dir = absolute("pack folder", &pack)?;
    blocking(move || {
        let item = pack::review::decide(&dir, &id, decision.into()).map_err(pack_error)?;
        Ok(ReviewItemDto::from(&item))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_build_finds_its_sample_pack() {
        let found = find_sample_pack(None).expect("packs/sample in the repository");
        assert!(found.join("pack.toml").is_file(), "{}", found.display());
        assert!(found.ends_with("packs/sample"), "{}", found.display());
    }

    #[test]
    fn one_mining_run_at_a_time_and_stop_reaches_it() {
        let m = Mining::default();
        assert!(!m.stop(), "nothing to stop");
        let stop = m.begin().expect("the first run");
        assert_eq!(m.begin().unwrap_err().code(), "conflict");
        assert!(m.stop());
        assert!(stop.load(Ordering::SeqCst), "the run sees the stop");
        m.end();
        assert!(m.begin().is_ok(), "a new run after the end");
    }

    #[test]
    fn a_relative_pack_folder_is_refused_with_how_to_fix_it() {
        let err = absolute("pack folder", "packs/sample").unwrap_err();
        assert_eq!(err.code(), "invalid_input");
        assert!(err.to_string().contains("full path"), "{err}");
        assert_eq!(
            absolute("pack folder", "  ").unwrap_err().code(),
            "invalid_input"
        );
    }

    #[test]
    fn the_sample_pack_reads_with_its_tasks_runnable_from_its_bundle() {
        let dir = find_sample_pack(None).expect("the sample pack");
        let shown = read_pack(&dir, None).expect("it reads");
        assert_eq!(shown.name, "sample");
        assert_eq!(shown.tasks.len(), 3);
        assert!(shown.bundle.is_some());
        for t in &shown.tasks {
            assert_eq!(t.kind, "repo");
            assert!(t.runnable, "{t:?}");
            assert!(t.why_not.is_none(), "{t:?}");
            assert!(t.test_command.is_some(), "{t:?}");
        }
    }
}
