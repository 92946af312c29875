// The Packs screen's commands (src-tauri/packs.rs): task packs, pack runs
// and their reports, review of mined tasks' instructions (mining is
// ./mining.ts). Types from ./bindings/ (arena-api's packs module).
import type {
  ImportPackRequest,
  PackDto,
  PackRunListDto,
  PackRunReportDto,
  PackRunStartDto,
  ReviewDecisionDto,
  ReviewItemDto,
  SavedReportDto,
  StartPackRunRequest,
} from './bindings';
import { call } from './index';

/** Reads the pack at `path`: its tasks, each with whether it can run here
 * (against `project` when given, else the pack's own bundle) and why not. */
export function openPack(path: string, project: string | null): Promise<PackDto> {
  return call<PackDto>('open_pack', { path, project });
}

/** Imports a SWE-bench JSON/JSONL file or a Harbor task folder into a new pack. */
export function importPack(request: ImportPackRequest): Promise<PackDto> {
  return call<PackDto>('import_pack', { request });
}

/** The folder of the sample pack that ships with Arena, or null. */
export function samplePack(): Promise<string | null> {
  return call<string | null>('sample_pack');
}

/** Starts a pack run (a series of the pack's tasks) in the background. */
export function startPackRun(request: StartPackRunRequest): Promise<PackRunStartDto> {
  return call<PackRunStartDto>('start_pack_run', { request });
}

/** A pack run's report so far: every run's verdict and the scores. */
export function packRunReport(id: string): Promise<PackRunReportDto> {
  return call<PackRunReportDto>('pack_run_report', { id });
}

/** Pack runs, newest first. */
export function listPackRuns(limit?: number): Promise<PackRunListDto[]> {
  return call<PackRunListDto[]>('list_pack_runs', { limit: limit ?? null });
}

/** Writes a run's report (md, html, json, csv) into `folder`, by default
 * the run's folder in the data directory. */
export function savePackReport(id: string, folder: string | null): Promise<SavedReportDto> {
  return call<SavedReportDto>('save_pack_report', { id, folder });
}

/** The pack's tasks whose instruction Arena wrote, pending ones first. */
export function reviewList(pack: string): Promise<ReviewItemDto[]> {
  return call<ReviewItemDto[]>('review_list', { pack });
}

/** Approves, drops or edits a task's instruction; the task as it is now. */
export function reviewTask(
  pack: string,
  id: string,
  decision: ReviewDecisionDto,
): Promise<ReviewItemDto> {
  return call<ReviewItemDto>('review_task', { pack, id, decision });
}
