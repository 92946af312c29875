//! IPC commands: thin wrappers that validate input, call into the engine and
//! map results to DTOs and [`Error`]. Arguments arrive camelCase from the
//! webview (`battleId`) and are snake_case here.
//!
//! Every command is granted to the main window by
//! `permissions/app.toml` + `capabilities/default.json`; a new command needs
//! an entry in both (and a wrapper in `ui/src/ipc/index.ts`).

use std::collections::BTreeMap;

use arena_core::{ContestantSpec, Engine};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime, State, Webview, Window};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_opener::OpenerExt;

use crate::background;
use crate::error::Error;
use crate::events;
use crate::state::AppState;
use arena_api::{
    AnalysisDto, AppInfo, ApplyResultDto, BackendDto, BattleDetailDto, BattleDto, BattleEventDto,
    BattlePageDto, BattleQueryDto, BattleTypeDto, CrossExaminationDto, DiffViewDto, LeaderboardDto,
    LeaderboardQueryDto, PersonasDto, ProviderModelsDto, ProviderSettingsDto, RoundDto, SeriesDto,
    SettingsDto, SettingsUpdateDto, StartBattleRequest, StartSeriesRequest, StatusDto, VoteDto,
    WorkDto, WorkerStateDto,
};

/// `list_battles` without a limit.
const DEFAULT_LIST_LIMIT: u32 = 100;
/// The most battles one `list_battles` returns.
const MAX_LIST_LIMIT: u32 = 10_000;

/// Runs blocking work (file reads, PATH lookups) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
}

/// An optional id from the webview: blank means none.
fn non_blank(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

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
        // The engine's own choice (ARENA_DATA_DIR first), as it would open.
        None => match arena_core::config::data_dir() {
            Ok(dir) => (dir, None),
            Err(_) => (app.path().app_data_dir().map_err(Error::DataDir)?, None),
        },
    };
    let config_missing = state
        .config_missing
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|p| p.display().to_string());
    Ok(AppInfo {
        version: arena_core::VERSION.to_string(),
        commit: arena_api::COMMIT.to_string(),
        built: arena_api::BUILT.to_string(),
        data_dir: data_dir.display().to_string(),
        battles,
        startup_error: state.startup_error.as_ref().map(|e| e.to_string()),
        config_missing,
    })
}

/// Creates the missing config file `ARENA_CONFIG` names, with the defaults
/// the app runs with meanwhile (never over a file that exists by then).
#[tauri::command]
/// `true` when it wrote the file, `false` when one was there by then.
pub async fn create_config(state: State<'_, AppState>) -> Result<bool, Error> {
    let path = config_file()?;
    let created = blocking(move || Ok(Engine::create_config(&path)?)).await?;
    *state
        .config_missing
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = None;
    Ok(created)
}

/// Where Arena keeps its data (the database, asked now) and which machine
/// this is (`arena status`). Fails when the database does not answer.
#[tauri::command]
pub async fn status(state: State<'_, AppState>) -> Result<StatusDto, Error> {
    let engine = state.engine()?;
    let info = engine.database_info().await?;
    let activity = engine.activity().await?;
    Ok(StatusDto::new(engine.machine(), &info, &activity))
}

/// Whether this app serves places of running series (the worker switch in
/// Settings), and how many at once.
#[tauri::command]
pub async fn worker_state(state: State<'_, AppState>) -> Result<WorkerStateDto, Error> {
    Ok(worker_dto(state.worker.state()))
}

/// Turns the worker switch on (with `places`, 1 to 16; a new number starts
/// the worker again) or off. Off answers at once: the places under way
/// finish in the background.
#[tauri::command]
pub async fn set_worker(
    state: State<'_, AppState>,
    enabled: bool,
    places: u32,
) -> Result<WorkerStateDto, Error> {
    let engine = state.engine()?;
    Ok(worker_dto(state.worker.set(engine, enabled, places)?))
}

fn worker_dto(state: crate::worker::State) -> WorkerStateDto {
    WorkerStateDto {
        enabled: state.enabled,
        places: state.places,
    }
}

/// Battles, newest first, without contestants' outputs.
#[tauri::command]
pub async fn list_battles(
    state: State<'_, AppState>,
    limit: Option<u32>,
) -> Result<Vec<BattleDto>, Error> {
    let limit = limit.unwrap_or(DEFAULT_LIST_LIMIT).min(MAX_LIST_LIMIT) as usize;
    let battles = state.engine()?.view_battles(limit).await?;
    Ok(battles.iter().map(BattleDto::from).collect())
}

/// A page of battles matching a search and filters, newest first, with
/// how many match in all (the search runs in the database).
#[tauri::command]
pub async fn search_battles(
    state: State<'_, AppState>,
    query: BattleQueryDto,
) -> Result<BattlePageDto, Error> {
    let query = query.into_engine();
    let offset = query.offset as u64;
    let (battles, total) = state.engine()?.view_page(query).await?;
    Ok(BattlePageDto {
        battles: battles.iter().map(BattleDto::from).collect(),
        total,
        offset,
    })
}

/// A battle with its outputs, its newest analysis, its cross-examinations
/// and every contestant's refinement rounds.
#[tauri::command]
pub async fn get_battle(state: State<'_, AppState>, id: String) -> Result<BattleDetailDto, Error> {
    let detail = state.engine()?.view_detail(&id).await?;
    Ok(BattleDetailDto::from(&detail))
}

/// Validates and records a battle, then runs it (and judges it, when a
/// `default_model` is configured) in the background. Returns the battle as
/// created; follow it with `subscribe_battle`.
#[tauri::command]
pub async fn start_battle<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    request: StartBattleRequest,
) -> Result<BattleDto, Error> {
    let engine = state.engine()?;
    let from_working_tree = request.base == arena_api::BaseChoiceDto::WorkingTree;
    let request = request.into_engine()?;
    let battle = if from_working_tree {
        engine.create_battle_from_working_tree(request).await?
    } else {
        engine.create_battle(request).await?
    };
    tauri::async_runtime::spawn(background::run_and_judge(
        app,
        engine.clone(),
        battle.id.clone(),
    ));
    Ok(shown(&battle))
}

/// Validates and records a series (or, for a key used before, returns the
/// series it started), then runs it in the background. Poll it with
/// `get_series`; its battles stream like any battle.
#[tauri::command]
pub async fn start_series(
    state: State<'_, AppState>,
    request: StartSeriesRequest,
) -> Result<SeriesDto, Error> {
    let engine = state.engine()?;
    let prompt_set = match non_blank(request.prompt_set.clone()) {
        Some(file) => Some(
            blocking(move || {
                std::fs::read_to_string(&file).map_err(|e| {
                    arena_core::Invalid::Other(format!("cannot read the prompt set {file}: {e}"))
                        .into()
                })
            })
            .await?,
        ),
        None => None,
    };
    let (request, key) = request.into_engine(prompt_set.as_deref())?;
    let started = engine.create_series(request, key).await?;
    if let arena_core::SeriesStart::Created(series) = &started {
        tauri::async_runtime::spawn(background::run_series(engine.clone(), series.id.clone()));
    }
    series_dto(engine, &started.series().id).await
}

async fn series_dto(engine: &Engine, id: &str) -> Result<SeriesDto, Error> {
    Ok(SeriesDto::from(&engine.series_summary(id).await?))
}

/// Series, newest first (default 50), with their progress; without the
/// report per contestant (`contestants` empty: `get_series` has it).
#[tauri::command]
pub async fn list_series(
    state: State<'_, AppState>,
    limit: Option<u32>,
) -> Result<Vec<SeriesDto>, Error> {
    let engine = state.engine()?;
    let limit = limit.unwrap_or(50).min(MAX_LIST_LIMIT) as usize;
    let mut all = Vec::new();
    for s in engine.series_list(limit).await? {
        all.push(SeriesDto::from(&engine.series_overview(&s.id).await?));
    }
    Ok(all)
}

/// A series: its progress, its battles and its report per contestant.
#[tauri::command]
pub async fn get_series(state: State<'_, AppState>, id: String) -> Result<SeriesDto, Error> {
    series_dto(state.engine()?, &id).await
}

/// Stops a series (whichever process runs it): no new battle starts and
/// the running ones are cancelled.
#[tauri::command]
pub async fn cancel_series(state: State<'_, AppState>, id: String) -> Result<SeriesDto, Error> {
    let engine = state.engine()?;
    let series = engine.cancel_series(&id).await?;
    series_dto(engine, &series.id).await
}

/// Writes the series' report files (report.html, report.md, report.json,
/// runs.csv) into its folder; returns the path of report.html.
#[tauri::command]
pub async fn export_series_report(state: State<'_, AppState>, id: String) -> Result<String, Error> {
    let dir = state.engine()?.write_series_report(&id).await?;
    Ok(dir.join("report.html").display().to_string())
}

/// Shows a series' report folder in the OS file manager (written first
/// when it is not yet).
#[tauri::command]
pub async fn open_series_folder<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    id: String,
) -> Result<(), Error> {
    let dir = state.engine()?.write_series_report(&id).await?;
    open_folder(&app, &dir)
}

/// Cancels a whole battle; returns it once the cancellation took effect.
#[tauri::command]
pub async fn cancel_battle(state: State<'_, AppState>, id: String) -> Result<BattleDto, Error> {
    let battle = state.engine()?.cancel_battle(&id).await?;
    Ok(shown(&battle))
}

/// Cancels one contestant; the rest of the battle goes on.
#[tauri::command]
pub async fn cancel_contestant(
    state: State<'_, AppState>,
    battle_id: String,
    contestant_id: String,
) -> Result<BattleDto, Error> {
    let battle = state
        .engine()?
        .cancel_contestant(&battle_id, &contestant_id)
        .await?;
    Ok(shown(&battle))
}

/// Stops a battle's running analysis or cross-examinations, or (with
/// `contestantId`) that contestant's running refine round, whichever
/// process runs them; returns how many were running.
#[tauri::command]
pub async fn cancel_work(
    state: State<'_, AppState>,
    battle_id: String,
    work: WorkDto,
    contestant_id: Option<String>,
) -> Result<u32, Error> {
    let stopped = state
        .engine()?
        .cancel_work(&battle_id, work.into(), contestant_id.as_deref())
        .await?;
    Ok(u32::try_from(stopped).unwrap_or(u32::MAX))
}

/// Sets the user's winner (it overrides the analysis), or clears that
/// choice with `contestantId: null`.
#[tauri::command]
pub async fn set_winner(
    state: State<'_, AppState>,
    battle_id: String,
    contestant_id: Option<String>,
) -> Result<BattleDto, Error> {
    let contestant_id = non_blank(contestant_id);
    let battle = state
        .engine()?
        .set_winner(&battle_id, contestant_id.as_deref())
        .await?;
    Ok(shown(&battle))
}

/// The user's vote (a winner by label or id, a tie, or "all bad"), also
/// while contestants still run; a blind battle is revealed.
#[tauri::command]
pub async fn vote(
    state: State<'_, AppState>,
    battle_id: String,
    vote: VoteDto,
) -> Result<BattleDto, Error> {
    let battle = state.engine()?.vote(&battle_id, vote.into()).await?;
    Ok(shown(&battle))
}

/// Shows a blind battle's names without a vote.
#[tauri::command]
pub async fn reveal(state: State<'_, AppState>, battle_id: String) -> Result<BattleDto, Error> {
    let battle = state.engine()?.reveal(&battle_id).await?;
    Ok(shown(&battle))
}

/// Replaces a series' tags (its battles follow).
#[tauri::command]
pub async fn set_series_tags(
    state: State<'_, AppState>,
    series_id: String,
    tags: Vec<String>,
) -> Result<SeriesDto, Error> {
    let engine = state.engine()?;
    let series = engine.set_series_tags(&series_id, &tags).await?;
    Ok(SeriesDto::from(&engine.series_summary(&series.id).await?))
}

/// Replaces a battle's tags.
#[tauri::command]
pub async fn set_tags(
    state: State<'_, AppState>,
    battle_id: String,
    tags: Vec<String>,
) -> Result<BattleDto, Error> {
    let battle = state.engine()?.set_tags(&battle_id, &tags).await?;
    Ok(shown(&battle))
}

/// Judges a finished battle with `model`, else the configured
/// `default_model`. Resolves when the analysis is done; its progress
/// streams as `analysis_status` / `analysis_output` events.
#[tauri::command]
pub async fn analyze(
    state: State<'_, AppState>,
    battle_id: String,
    model: Option<String>,
) -> Result<AnalysisDto, Error> {
    let model = non_blank(model);
    let analysis = state
        .engine()?
        .analyze(&battle_id, model.as_deref())
        .await?;
    Ok(AnalysisDto::from(&analysis))
}

/// Points `examiner` (`IDENTITY@MODEL`: a persona and model, or a CLI agent
/// that can run read-only) at a finished battle's results. Resolves when
/// the report is done; it streams as `cross_exam_*` events.
#[tauri::command]
pub async fn cross_examine(
    state: State<'_, AppState>,
    battle_id: String,
    examiner: String,
    question: Option<String>,
) -> Result<CrossExaminationDto, Error> {
    let examiner = ContestantSpec::parse(&examiner)?;
    let question = non_blank(question);
    let report = state
        .engine()?
        .cross_examine(&battle_id, &examiner, question.as_deref())
        .await?;
    Ok(CrossExaminationDto::from(&report))
}

/// Brings a Coding contestant's diff (by default the winner's) into the
/// project, listing every file it writes. Refuses on a dirty project or an
/// unsafe patch, changing nothing. With files that run by themselves it
/// writes nothing (`applied: false`, those files flagged) unless `confirmed`
/// (the user's "Apply anyway").
#[tauri::command]
pub async fn apply_diff(
    state: State<'_, AppState>,
    battle_id: String,
    contestant_id: Option<String>,
    confirmed: Option<bool>,
) -> Result<ApplyResultDto, Error> {
    use arena_core::agent::apply::Consent;
    let contestant_id = non_blank(contestant_id);
    let consent = if confirmed == Some(true) {
        Consent::Given
    } else {
        Consent::Ask
    };
    let (contestant_id, applied) = state
        .engine()?
        .apply(&battle_id, contestant_id.as_deref(), consent)
        .await?;
    Ok(ApplyResultDto::new(battle_id, contestant_id, &applied))
}

/// A finished Coding contestant's latest diff (its last finished
/// refinement round's, else its own), file by file and line by line.
#[tauri::command]
pub async fn contestant_diff(
    state: State<'_, AppState>,
    battle_id: String,
    contestant_id: String,
) -> Result<DiffViewDto, Error> {
    let diff = state
        .engine()?
        .contestant_diff(&battle_id, &contestant_id)
        .await?;
    Ok(diff.into())
}

/// Writes the battle's report (one self-contained HTML file) into its
/// results folder as `report.html`; returns its path.
#[tauri::command]
pub async fn export_battle_report(
    state: State<'_, AppState>,
    battle_id: String,
) -> Result<String, Error> {
    let file = state.engine()?.write_battle_report(&battle_id).await?;
    Ok(file.display().to_string())
}

/// Shows a battle's results folder in the OS file manager.
#[tauri::command]
pub async fn open_results_folder<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    battle_id: String,
) -> Result<(), Error> {
    let folder = state.engine()?.results_folder(&battle_id).await?;
    open_folder(&app, &folder)
}

/// Shows a Coding contestant's worktree in the OS file manager.
#[tauri::command]
pub async fn open_worktree<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    battle_id: String,
    contestant_id: String,
) -> Result<(), Error> {
    let folder = state.engine()?.worktree(&battle_id, &contestant_id).await?;
    open_folder(&app, &folder)
}

fn open_folder<R: Runtime>(app: &AppHandle<R>, folder: &std::path::Path) -> Result<(), Error> {
    app.opener()
        .open_path(folder.display().to_string(), None::<&str>)
        .map_err(|e| {
            // The opener's own words (a launcher's exit status) are for the log.
            tracing::warn!(folder = %folder.display(), err = %e, "no file manager opened the folder");
            Error::Open {
                path: folder.display().to_string(),
            }
        })
}

/// Asks the user for a folder with the OS dialog (over the calling
/// window); `null` when they cancel.
#[tauri::command]
pub async fn pick_folder<R: Runtime>(
    window: Window<R>,
    title: Option<String>,
) -> Result<Option<String>, Error> {
    let mut dialog = window.dialog().file().set_parent(&window);
    if let Some(title) = non_blank(title) {
        dialog = dialog.set_title(title);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    dialog.pick_folder(move |folder| {
        // The receiver only goes away if the command was dropped.
        let _ = tx.send(folder);
    });
    let folder = rx
        .await
        .map_err(|_| Error::Internal("the folder dialog ended without an answer".into()))?;
    Ok(folder
        .as_ref()
        .and_then(|f| f.as_path())
        .map(|p| p.display().to_string()))
}

/// Continues a finished Coding contestant in its worktree with the user's
/// feedback, as a new round. Resolves when the round ends; it streams as
/// `round` / `output` events of that contestant.
#[tauri::command]
pub async fn refine(
    state: State<'_, AppState>,
    battle_id: String,
    contestant_id: String,
    feedback: String,
) -> Result<RoundDto, Error> {
    let round = state
        .engine()?
        .refine(&battle_id, &contestant_id, &feedback)
        .await?;
    Ok(RoundDto::from(&round))
}

/// Whether a folder can hold a battle of this type, asked while the
/// launcher's Project field is typed or picked: the folder, made
/// canonical, or why not (`invalid_input`, with what to do).
#[tauri::command]
pub async fn check_project(
    state: State<'_, AppState>,
    project: String,
    battle_type: BattleTypeDto,
) -> Result<String, Error> {
    let folder = state
        .engine()?
        .check_project(std::path::Path::new(project.trim()), battle_type.into())
        .await?;
    Ok(folder.display().to_string())
}

/// Ratings per (identity, model), for one battle type or all, and of
/// one series or all battles.
#[tauri::command]
pub async fn leaderboard(
    state: State<'_, AppState>,
    query: LeaderboardQueryDto,
) -> Result<LeaderboardDto, Error> {
    let board = state.engine()?.leaderboard(query.into_engine()).await?;
    Ok(LeaderboardDto::from(&board))
}

/// Every provider with the models it serves (asked live, in parallel).
#[tauri::command]
pub async fn providers(state: State<'_, AppState>) -> Result<Vec<ProviderModelsDto>, Error> {
    let catalog = state.engine()?.catalog().await;
    Ok(catalog
        .providers
        .iter()
        .map(ProviderModelsDto::from)
        .collect())
}

/// The persona registry (`AGENTS.md`, seeded on first use).
#[tauri::command]
pub async fn personas(state: State<'_, AppState>) -> Result<PersonasDto, Error> {
    let engine = state.engine()?.clone();
    blocking(move || Ok(PersonasDto::from(&engine.personas()?))).await
}

/// The Coding backends: the known CLI agents and the `[[backend]]`s of
/// arena.toml, whether each is installed and which can cross-examine.
#[tauri::command]
pub async fn backends(state: State<'_, AppState>) -> Result<Vec<BackendDto>, Error> {
    let engine = state.engine()?;
    let config = engine.config();
    Ok(engine
        .backends()
        .await?
        .into_iter()
        .map(|b| {
            let mut dto = BackendDto::from(b);
            if let Some(custom) = config.backends.iter().find(|c| c.name == dto.name) {
                dto.command = custom.command.clone();
            }
            dto
        })
        .collect())
}

/// The config file, the data directory, the judge model and the providers
/// (with where each key comes from, never the key).
#[tauri::command]
pub async fn settings(state: State<'_, AppState>) -> Result<SettingsDto, Error> {
    settings_of(state.engine()?).await
}

/// Writes the judge model and the providers into arena.toml (comments and
/// other sections are kept; a provider renamed in place keeps its table and
/// its keychain key) and applies them to what starts from now on. Rejects
/// invalid input with `invalid_input`, naming the field.
#[tauri::command]
pub async fn save_settings(
    state: State<'_, AppState>,
    update: SettingsUpdateDto,
) -> Result<SettingsDto, Error> {
    let engine = state.engine()?;
    let update = update.into_engine()?;
    let path = config_file()?;
    engine.save_settings(&path, update).await?;
    settings_of(engine).await
}

/// Adds a `[[backend]]` to arena.toml, or writes over the one named
/// `previous` (comments and other sections kept, atomically). Rejects
/// invalid input with `invalid_input`, naming the field.
#[tauri::command]
pub async fn save_backend(
    state: State<'_, AppState>,
    input: arena_api::BackendInputDto,
) -> Result<Vec<BackendDto>, Error> {
    let engine = state.engine()?;
    let (previous, backend) = input.into_engine();
    engine
        .save_backend(&config_file()?, previous, Some(backend))
        .await?;
    backends(state).await
}

/// Removes the `[[backend]]` named `name` from arena.toml.
#[tauri::command]
pub async fn remove_backend(
    state: State<'_, AppState>,
    name: String,
) -> Result<Vec<BackendDto>, Error> {
    let engine = state.engine()?;
    engine
        .save_backend(&config_file()?, Some(name), None)
        .await?;
    backends(state).await
}

/// Adds a persona to AGENTS.md, or writes over the one named `previous`
/// (every other line kept, atomically). Rejects invalid input with
/// `invalid_input`, naming the field.
#[tauri::command]
pub async fn save_persona(
    state: State<'_, AppState>,
    input: arena_api::PersonaInputDto,
) -> Result<PersonasDto, Error> {
    let engine = state.engine()?;
    let (previous, persona) = input.into_engine();
    let registry = engine.save_persona(previous, persona).await?;
    Ok(PersonasDto::from(&registry))
}

/// Stores a provider's API key in the OS keychain, or removes it with
/// `key: null`. The key never comes back over IPC.
#[tauri::command]
pub async fn set_api_key(
    state: State<'_, AppState>,
    provider: String,
    key: Option<String>,
) -> Result<SettingsDto, Error> {
    let engine = state.engine()?;
    engine.set_api_key(&provider, key.as_deref()).await?;
    settings_of(engine).await
}

/// Where the settings are saved: `ARENA_CONFIG`, else the OS config folder.
fn config_file() -> Result<std::path::PathBuf, Error> {
    arena_core::config::config_path().0.ok_or_else(|| {
        Error::Engine(arena_core::Error::Config {
            path: "ARENA_CONFIG".into(),
            message: "this system has no config folder; set ARENA_CONFIG to the file to use".into(),
        })
    })
}

async fn settings_of(engine: &Engine) -> Result<SettingsDto, Error> {
    let (config_path, _) = arena_core::config::config_path();
    let probe = config_path.clone();
    let config_exists = blocking(move || Ok(probe.as_deref().is_some_and(|p| p.is_file()))).await?;
    let config = engine.config();
    let sources: BTreeMap<String, _> = engine.key_sources().await.into_iter().collect();
    // The first call builds a trial jail.
    let sandbox = {
        let engine = engine.clone();
        blocking(move || Ok(engine.sandbox_state())).await?
    };
    Ok(SettingsDto {
        config_exists,
        config_path: config_path.map(|p| p.display().to_string()),
        data_dir: engine.data_dir().display().to_string(),
        default_model: config.default_model.clone(),
        providers: config
            .providers
            .iter()
            .map(|p| ProviderSettingsDto::new(p, sources.get(&p.name).copied().flatten()))
            .collect(),
        sandbox,
    })
}

/// Streams a battle's events with `seq > sinceSeq` (the journal first, then
/// live) to `onEvent`, in batches at most every ~25 ms with text deltas
/// coalesced (see `events`). Returns the
/// subscription id for `unsubscribe_battle`. Fails with `not_found` for an
/// unknown battle.
#[tauri::command]
pub async fn subscribe_battle<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, AppState>,
    battle_id: String,
    since_seq: u64,
    on_event: Channel<Vec<BattleEventDto>>,
) -> Result<u64, Error> {
    let engine = state.engine()?.clone();
    let battle = engine.battle(&battle_id).await?;
    let (id, cancel) = state.subscriptions.open(webview.label());
    let app = webview.app_handle().clone();
    tauri::async_runtime::spawn(async move {
        events::follow(engine, battle.id, since_seq, on_event, cancel).await;
        if let Some(state) = app.try_state::<AppState>() {
            state.subscriptions.ended(id);
        }
    });
    Ok(id)
}

/// Stops a subscription of this window. Unknown or finished ids are fine.
#[tauri::command]
pub async fn unsubscribe_battle<R: Runtime>(
    webview: Webview<R>,
    state: State<'_, AppState>,
    subscription_id: u64,
) -> Result<(), Error> {
    state.subscriptions.close(subscription_id, webview.label());
    Ok(())
}

/// A battle an action returned, as its viewer may see it.
fn shown(battle: &arena_core::Battle) -> BattleDto {
    BattleDto::from(&arena_core::blind::BattleView::of(battle))
}
