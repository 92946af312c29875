// The only module that talks to the Tauri backend: everything else imports
// the typed wrappers from here (enforced by ESLint).
//
// The types come from ./bindings/, generated from the one wire model (the
// `arena-api` crate, snake_case like the CLI's JSON) by ts-rs (regenerate:
// `cargo test -p arena-api -- --ignored export_bindings`).
// Every wrapper rejects with an IpcError `{ code, message }`; `code` is the
// engine's stable code (`invalid_input`, `not_found`, `conflict`, `config`,
// `provider`, …), `engine_unavailable` when the engine could not open, or
// `not_in_tauri` outside the desktop app.
import { Channel, invoke, isTauri } from '@tauri-apps/api/core';
import type {
  AnalysisDto,
  AppInfo,
  ApplyResultDto,
  BackendDto,
  BattleDetailDto,
  BattleDto,
  BattleEventDto,
  BattlePageDto,
  BattleQueryDto,
  BattleTypeDto,
  CrossExaminationDto,
  DiffViewDto,
  LeaderboardDto,
  LeaderboardQueryDto,
  PersonasDto,
  ProviderModelsDto,
  RoundDto,
  SeriesDto,
  SettingsDto,
  SettingsUpdateDto,
  StartBattleRequest,
  StartSeriesRequest,
  StatusDto,
  VoteDto,
  WorkDto,
  WorkerStateDto,
} from './bindings';
import { CLIENT_ERROR_CODES, IpcError, toIpcError } from './errors';

export type * from './bindings';
// Generated values: ask a battle type what it answers, name agents and
// battle types by these constants rather than spelling them.
export { BATTLE_TYPES, BattleType, battleTypeInfo } from './bindings/battleTypes';
export { AGENTS, Agent, type AgentName } from './bindings/agents';
export { IpcError, isIpcErrorPayload, toIpcError, type IpcErrorPayload } from './errors';

/** Calls a backend command; rejects with an {@link IpcError}. (Also for
 * the feature modules of this folder, e.g. packs.ts.) */
export async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  if (!isTauri()) {
    throw new IpcError(CLIENT_ERROR_CODES.notInTauri, 'Not running inside the Arena desktop app.');
  }
  try {
    return await invoke<T>(command, args);
  } catch (e: unknown) {
    throw toIpcError(e);
  }
}

/** The app version, the shared data directory, and whether the engine opened. */
export function appInfo(): Promise<AppInfo> {
  return call<AppInfo>('app_info');
}

/**
 * Where Arena keeps its data (this machine's SQLite file or a team's
 * PostgreSQL database, asked now) and which machine this is.
 */
export function status(): Promise<StatusDto> {
  return call<StatusDto>('status');
}

/** Whether this app serves places of running series, and how many at once. */
export function workerState(): Promise<WorkerStateDto> {
  return call<WorkerStateDto>('worker_state');
}

/**
 * Turns this app's worker on (serving places of running series, `places`
 * at once: 1 to 16; another number starts it again) or off. Off resolves at
 * once; the places under way finish in the background. Rejects with
 * `invalid_input` for a number of places out of range. Off at every start.
 */
export function setWorker(enabled: boolean, places: number): Promise<WorkerStateDto> {
  return call<WorkerStateDto>('set_worker', { enabled, places });
}

/** Battles, newest first (default 100), without contestants' outputs. */
export function listBattles(limit?: number): Promise<BattleDto[]> {
  return call<BattleDto[]>('list_battles', { limit: limit ?? null });
}

/**
 * A page of battles matching a search and filters, newest first, with how
 * many match in all (the search runs in the engine's database).
 */
export function searchBattles(query: BattleQueryDto): Promise<BattlePageDto> {
  return call<BattlePageDto>('search_battles', { query });
}

/** A battle with its outputs, newest analysis, cross-examinations and rounds. */
export function getBattle(id: string): Promise<BattleDetailDto> {
  return call<BattleDetailDto>('get_battle', { id });
}

/**
 * Validates and creates a battle, then runs it (and judges it when a default
 * model is configured) in the background. Resolves with the battle as
 * created; follow it with {@link subscribeBattle}.
 */
export function startBattle(request: StartBattleRequest): Promise<BattleDto> {
  return call<BattleDto>('start_battle', { request });
}

/**
 * Validates and creates a series (or, for a key used before, returns the
 * series it started), then runs it in the background. Follow it with
 * {@link getSeries}.
 */
export function startSeries(request: StartSeriesRequest): Promise<SeriesDto> {
  return call<SeriesDto>('start_series', { request });
}

/** Series, newest first (default 50), each with its report so far. */
export function listSeries(limit?: number): Promise<SeriesDto[]> {
  return call<SeriesDto[]>('list_series', { limit: limit ?? null });
}

/** A series: its progress, its battles and its report per contestant. */
export function getSeries(id: string): Promise<SeriesDto> {
  return call<SeriesDto>('get_series', { id });
}

/** Stops a series: no new battle starts, running ones are cancelled. */
export function cancelSeries(id: string): Promise<SeriesDto> {
  return call<SeriesDto>('cancel_series', { id });
}

/** Writes the series' report files; resolves with the path of report.html. */
export function exportSeriesReport(id: string): Promise<string> {
  return call<string>('export_series_report', { id });
}

/** Shows a series' report folder in the OS file manager. */
export function openSeriesFolder(id: string): Promise<void> {
  return call<null>('open_series_folder', { id }).then(() => undefined);
}

/** Cancels a whole battle; resolves once the cancellation took effect. */
export function cancelBattle(id: string): Promise<BattleDto> {
  return call<BattleDto>('cancel_battle', { id });
}

/** Cancels one contestant; the rest of the battle goes on. */
export function cancelContestant(battleId: string, contestantId: string): Promise<BattleDto> {
  return call<BattleDto>('cancel_contestant', { battleId, contestantId });
}

/**
 * Stops a battle's running analysis or cross-examinations, or (with a
 * contestant) its running refine round; resolves to how many were running.
 */
export function cancelWork(
  battleId: string,
  work: WorkDto,
  contestantId: string | null = null,
): Promise<number> {
  return call<number>('cancel_work', { battleId, work, contestantId });
}

/** Sets the user's winner, or clears that choice with `null` (the analysis's applies). */
export function setWinner(battleId: string, contestantId: string | null): Promise<BattleDto> {
  return call<BattleDto>('set_winner', { battleId, contestantId });
}

/**
 * The user's vote: a winner (by label, `B`, or contestant id; one that is
 * running or done), a tie or "all bad". Also while contestants still run;
 * a blind battle is revealed.
 */
export function vote(battleId: string, vote: VoteDto): Promise<BattleDto> {
  return call<BattleDto>('vote', { battleId, vote });
}

/** Shows a blind battle's names, speeds and analysis without a vote. */
export function reveal(battleId: string): Promise<BattleDto> {
  return call<BattleDto>('reveal', { battleId });
}

/**
 * Replaces a battle's tags (trimmed, blanks and duplicates dropped by the
 * engine; `invalid_input` for a tag with a comma, too long, or too many).
 */
export function setTags(battleId: string, tags: string[]): Promise<BattleDto> {
  return call<BattleDto>('set_tags', { battleId, tags });
}

/** Replaces a series' tags; its battles trade the old ones for the new. */
export function setSeriesTags(seriesId: string, tags: string[]): Promise<SeriesDto> {
  return call<SeriesDto>('set_series_tags', { seriesId, tags });
}

/** Judges a finished battle with `model`, else the default model. Resolves when done. */
export function analyze(battleId: string, model?: string | null): Promise<AnalysisDto> {
  return call<AnalysisDto>('analyze', { battleId, model: model ?? null });
}

/**
 * Cross-examines a finished battle's results with `examiner`
 * (`IDENTITY@MODEL`). Resolves when the report is done.
 */
export function crossExamine(
  battleId: string,
  examiner: string,
  question?: string | null,
): Promise<CrossExaminationDto> {
  return call<CrossExaminationDto>('cross_examine', {
    battleId,
    examiner,
    question: question ?? null,
  });
}

/**
 * Applies a Coding contestant's diff (by default the winner's) to the
 * project, listing every file it writes. With files that run by themselves
 * it writes nothing (`applied: false`, those files flagged) unless
 * `confirmed` (the user's second click, "Apply anyway").
 */
export function applyDiff(
  battleId: string,
  contestantId?: string | null,
  confirmed = false,
): Promise<ApplyResultDto> {
  return call<ApplyResultDto>('apply_diff', {
    battleId,
    contestantId: contestantId ?? null,
    confirmed,
  });
}

/**
 * A finished Coding contestant's latest diff (its last finished refinement
 * round's, else its own run's), file by file and line by line. Rejects with
 * `invalid_input` for a Q&A battle, `conflict` while the contestant runs and
 * `not_found` when it left no diff.
 */
export function contestantDiff(battleId: string, contestantId: string): Promise<DiffViewDto> {
  return call<DiffViewDto>('contestant_diff', { battleId, contestantId });
}

/**
 * Writes the battle's report (one self-contained HTML file: no script, no
 * remote resource) into its results folder; resolves with its path.
 */
export function exportBattleReport(battleId: string): Promise<string> {
  return call<string>('export_battle_report', { battleId });
}

/** Shows a battle's results folder in the OS file manager (`not_found` if it is gone). */
export function openResultsFolder(battleId: string): Promise<void> {
  return call<null>('open_results_folder', { battleId }).then(() => undefined);
}

/** Shows a Coding contestant's worktree in the OS file manager (`not_found` if it is gone). */
export function openWorktree(battleId: string, contestantId: string): Promise<void> {
  return call<null>('open_worktree', { battleId, contestantId }).then(() => undefined);
}

/** Asks for a folder with the OS dialog; resolves with `null` when the user cancels. */
export function pickFolder(title?: string): Promise<string | null> {
  return call<string | null>('pick_folder', { title: title ?? null });
}

/** Continues a finished Coding contestant with feedback, as a new round. Resolves when it ends. */
export function refine(battleId: string, contestantId: string, feedback: string): Promise<RoundDto> {
  return call<RoundDto>('refine', { battleId, contestantId, feedback });
}

/**
 * Whether `project` can hold a battle of `battleType` (a full path to a
 * folder that exists; a git repository for Coding): the folder made
 * canonical, or an `invalid_input` error saying what to do.
 */
export function checkProject(project: string, battleType: BattleTypeDto): Promise<string> {
  return call<string>('check_project', { project, battleType });
}

/**
 * Ratings per (identity, model) over the battles the filters keep (type,
 * series, project, tag; all optional), counting the user's verdicts, the
 * judge's or both; with how often the user and the judge agreed and the
 * length coefficient of the length-controlled fit.
 */
export function leaderboard(query: LeaderboardQueryDto): Promise<LeaderboardDto> {
  return call<LeaderboardDto>('leaderboard', { query });
}

/** Every provider and the models it serves (asked live). */
export function providers(): Promise<ProviderModelsDto[]> {
  return call<ProviderModelsDto[]>('providers');
}

/** The persona registry (`AGENTS.md`). */
export function personas(): Promise<PersonasDto> {
  return call<PersonasDto>('personas');
}

/** Coding backends, whether each is installed and which can cross-examine. */
export function backends(): Promise<BackendDto[]> {
  return call<BackendDto[]>('backends');
}

/** Config file, data directory, default model and providers (never keys). */
export function settings(): Promise<SettingsDto> {
  return call<SettingsDto>('settings');
}

/**
 * Writes the default model and the provider list into arena.toml (comments
 * and other sections are kept); what starts from now on uses them. Rejects
 * with `invalid_input` (the message names the field) or `config`.
 */
export function saveSettings(update: SettingsUpdateDto): Promise<SettingsDto> {
  return call<SettingsDto>('save_settings', { update });
}

/**
 * Stores a provider's API key in the OS keychain, or removes it with `null`.
 * The key is never sent back; `key_source` in the result says where each
 * provider's key now comes from. Rejects with `keychain` when no keychain is
 * available (the message suggests `apiKeyEnv` instead).
 */
export function setApiKey(provider: string, key: string | null): Promise<SettingsDto> {
  return call<SettingsDto>('set_api_key', { provider, key });
}

/**
 * Streams a battle's events with `seq > sinceSeq`: the journal first, then
 * live. Text deltas (`output`, `reasoning`) arrive coalesced: append them.
 * `seq` increases strictly, so after a reconnect pass the highest `seq` seen.
 * Resolves with a function that stops the stream (no events are delivered
 * after it is called); rejects with `not_found` for an unknown battle.
 */
export async function subscribeBattle(
  battleId: string,
  sinceSeq: number,
  onEvent: (event: BattleEventDto) => void,
): Promise<() => void> {
  let active = true;
  // The backend sends batches (at most one every ~25 ms); they are handed
  // on one by one, within one task, so the view updates once per batch.
  const channel = new Channel<BattleEventDto[]>((batch) => {
    for (const event of batch) {
      if (!active) {
        return;
      }
      onEvent(event);
    }
  });
  const subscriptionId = await call<number>('subscribe_battle', {
    battleId,
    sinceSeq,
    onEvent: channel,
  });
  return () => {
    if (!active) {
      return;
    }
    active = false;
    call<null>('unsubscribe_battle', { subscriptionId }).catch(() => {
      // The stream is already gone (the backend ended it); nothing to stop.
    });
  };
}
