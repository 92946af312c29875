// The Packs screen's decisions, kept pure: the run form and its checks,
// the live matrix of tasks × contestants from a run's report, the scores'
// bars and words, and the verifier's dropped edits (mining: ./mining.ts).
import type {
  PackDto,
  PackRunReportDto,
  PackRunRowDto,
  PackScoreDto,
  PackTaskDto,
  StartPackRunRequest,
} from '../ipc';
import type { ContestantRow } from './launcher';
import type { IntervalRow } from './series';

/** The most runs of each task the form asks for. */
export const MAX_RUNS = 100;
/** The most battles at once. */
export const MAX_PACK_PARALLEL = 16;
/** The most contestants of a pack run. */
export const MAX_PACK_CONTESTANTS = 8;

/** The run form's fields, as typed. */
export interface PackRunForm {
  /** The project the tasks' bases are in; blank: the pack's bundle. */
  project: string;
  contestants: ContestantRow[];
  /** Blank: the pack's default. */
  runs: string;
  parallel: string;
  /** Blank: no budget. */
  budget: string;
  /** Task ids to leave out (all run by default). */
  leftOut: string[];
}

/** What is wrong with the run form; `null` where nothing is. */
export interface PackRunErrors {
  contestants: string | null;
  rows: (string | null)[];
  runs: string | null;
  parallel: string | null;
  budget: string | null;
  tasks: string | null;
}

function wholeIn(text: string, low: number, high: number): boolean {
  const t = text.trim();
  if (!/^\d+$/.test(t)) {
    return false;
  }
  const n = Number(t);
  return n >= low && n <= high;
}

/** Checks the run form against the pack (its runnable tasks). */
export function validateRun(form: PackRunForm, pack: PackDto): PackRunErrors {
  const seen = new Map<string, number>();
  const rows = form.contestants.map((row, i) => {
    const identity = row.identity.trim();
    const model = row.model.trim();
    if (!identity || !model) {
      return identity ? 'Pick a model' : 'Pick a backend and a model';
    }
    const key = `${identity.toLowerCase()}@${model}`;
    const first = seen.get(key);
    if (first !== undefined) {
      return `${identity}@${model} is already row ${String(first + 1)}`;
    }
    seen.set(key, i);
    return null;
  });
  const n = form.contestants.length;
  const runnable = runnableTasks(pack).filter((t) => !form.leftOut.includes(t.id));
  return {
    contestants:
      n < 1
        ? 'Add a contestant'
        : n > MAX_PACK_CONTESTANTS
          ? `At most ${String(MAX_PACK_CONTESTANTS)} contestants in one run`
          : null,
    rows,
    runs:
      form.runs.trim() === '' || wholeIn(form.runs, 1, MAX_RUNS)
        ? null
        : `Runs of each task: a whole number from 1 to ${String(MAX_RUNS)}`,
    parallel: wholeIn(form.parallel, 1, MAX_PACK_PARALLEL)
      ? null
      : `Battles at once: a whole number from 1 to ${String(MAX_PACK_PARALLEL)}`,
    budget:
      form.budget.trim() === '' ||
      (Number.isFinite(Number(form.budget)) && Number(form.budget) > 0)
        ? null
        : 'The budget is an amount in US dollars above 0, or blank for none',
    tasks: runnable.length === 0 ? 'No task of this pack can run here' : null,
  };
}

/** How many problems `errors` lists. */
export function runProblemCount(errors: PackRunErrors): number {
  return [
    errors.contestants,
    errors.runs,
    errors.parallel,
    errors.budget,
    errors.tasks,
    ...errors.rows,
  ].filter((e) => e !== null).length;
}

/** The tasks that can run here. */
export function runnableTasks(pack: PackDto): PackTaskDto[] {
  return pack.tasks.filter((t) => t.runnable);
}

/** The engine's request for the form (valid: see `validateRun`). */
export function toRunRequest(pack: PackDto, form: PackRunForm): StartPackRunRequest {
  const project = form.project.trim();
  const left = new Set(form.leftOut);
  const chosen = runnableTasks(pack)
    .map((t) => t.id)
    .filter((id) => !left.has(id));
  return {
    pack: pack.path,
    project: project === '' ? null : project,
    contestants: form.contestants.map((r) => `${r.identity.trim()}@${r.model.trim()}`),
    runs: form.runs.trim() === '' ? null : Number(form.runs),
    parallel: Number(form.parallel),
    // Every runnable task is the default: name them only when some are left out.
    tasks: left.size === 0 ? [] : chosen,
    budget_usd: form.budget.trim() === '' ? null : Number(form.budget),
    key: null,
  };
}

/** A task's state in words for the task list. */
export function taskState(t: PackTaskDto): { word: string; tone: 'ok' | 'warn' | 'bad' } {
  if (t.runnable) {
    return { word: 'ready', tone: 'ok' };
  }
  const why = (t.why_not ?? '').toLowerCase();
  if (why.includes('broken')) {
    return { word: 'broken', tone: 'bad' };
  }
  if (why.includes('not validated')) {
    return { word: 'not validated yet', tone: 'warn' };
  }
  if (why.includes('docker') || why.includes('podman') || why.includes('container')) {
    return { word: 'needs Docker', tone: 'warn' };
  }
  return { word: 'cannot run here', tone: 'bad' };
}

// ---------------------------------------------------------------- matrix

/** One run in a cell: its battle and how it came out (so far). */
export interface CellRun {
  run: number;
  battleId: string;
  outcome: PackRunRowDto['outcome'];
  done: boolean;
  reason: string | null;
}

/** One task × contestant: its runs so far. */
export interface MatrixCell {
  task: string;
  contestant: string;
  /** Runs asked for. */
  planned: number;
  /** Runs with a verdict (or an error of the run). */
  done: number;
  resolved: number;
  unresolved: number;
  errors: number;
  runs: CellRun[];
}

/** The live matrix: tasks down, contestants across. */
export interface Matrix {
  contestants: string[];
  rows: { task: string; cells: MatrixCell[] }[];
}

/** The matrix of a run's report. Contestants as the run asked for them,
 * then any that only appear in the scores or the runs; tasks in the
 * report's order. */
export function matrix(report: PackRunReportDto): Matrix {
  const contestants = [...report.lineup];
  for (const c of report.contestants) {
    if (!contestants.includes(c.contestant)) {
      contestants.push(c.contestant);
    }
  }
  for (const t of report.tasks) {
    for (const r of t.runs) {
      if (!contestants.includes(r.contestant)) {
        contestants.push(r.contestant);
      }
    }
  }
  const rows = report.tasks.map((t) => ({
    task: t.id,
    cells: contestants.map((c) => {
      const runs = t.runs
        .filter((r) => r.contestant === c)
        .sort((a, b) => a.run - b.run)
        .map((r) => ({
          run: r.run,
          battleId: r.battle_id,
          outcome: r.outcome,
          done: r.done,
          reason: r.reason,
        }));
      const done = runs.filter((r) => r.done);
      return {
        task: t.id,
        contestant: c,
        planned: report.runs_per_task,
        done: done.length,
        resolved: done.filter((r) => r.outcome === 'resolved').length,
        unresolved: done.filter((r) => r.outcome === 'unresolved').length,
        errors: done.filter((r) => r.outcome === 'error').length,
        runs,
      };
    }),
  }));
  return { contestants, rows };
}

/** A cell's tone: all resolved, none, some, errors only, or not done. */
export function cellTone(c: MatrixCell): 'all' | 'none' | 'some' | 'error' | 'pending' {
  if (c.done === 0) {
    return 'pending';
  }
  const scored = c.resolved + c.unresolved;
  if (scored === 0) {
    return 'error';
  }
  if (c.resolved === scored) {
    return 'all';
  }
  return c.resolved === 0 ? 'none' : 'some';
}

/** A cell in words, for its title and for screen readers. */
export function cellWords(c: MatrixCell): string {
  const parts = [`${String(c.done)} of ${String(c.planned)} runs done`];
  if (c.done > 0) {
    parts.push(`${String(c.resolved)} resolved`);
  }
  if (c.errors > 0) {
    parts.push(`${String(c.errors)} ${c.errors === 1 ? 'error' : 'errors'} of the run`);
  }
  return `${c.task} by ${c.contestant}: ${parts.join(', ')}`;
}

/** Whether the run is still going (the report should be read again). */
export function running(report: PackRunReportDto): boolean {
  return report.status === 'running' || report.status === 'queued';
}

/** "4 of 12 runs done" and the status. */
export function progressLine(report: PackRunReportDto): string {
  return `${String(report.done)} of ${String(report.planned)} runs done · ${report.status}`;
}

// ---------------------------------------------------------------- scores

/** A share as a whole percentage, `—` when unknown. */
export function pct(x: number | null | undefined): string {
  return x === null || x === undefined || !Number.isFinite(x)
    ? '—'
    : `${String(Math.round(x * 100))} %`;
}

/** pass@1 with its interval in words: "50 % (95 % 12–88 %)". */
export function passWords(c: PackScoreDto): string {
  if (c.pass_at_1 === null) {
    return 'no scored run yet';
  }
  const i = c.pass_at_1_interval;
  return `${pct(c.pass_at_1)} (95 % ${String(Math.round(i.low * 100))}–${pct(i.high)})`;
}

/** The bars of the pass@1 chart: each contestant's value and interval. */
export function passBars(report: PackRunReportDto): IntervalRow[] {
  return report.contestants.map((c) => ({
    name: c.contestant,
    value: c.pass_at_1,
    low: c.pass_at_1 === null ? null : c.pass_at_1_interval.low,
    high: c.pass_at_1 === null ? null : c.pass_at_1_interval.high,
  }));
}

/** "pass@2 80 %, pass@3 90 %" (k > 1; pass@1 is said with its interval). */
export function atK(values: PackScoreDto['pass_at'], name: string, from = 2): string {
  const shown = values.filter((v) => v.k >= from);
  return shown.length === 0
    ? '—'
    : shown.map((v) => `${name}${String(v.k)} ${pct(v.value)}`).join(', ');
}

/** How the interval was made, in words. */
export function methodWords(method: string): string {
  switch (method) {
    case 'cluster_bootstrap':
      return 'a bootstrap over tasks (their runs kept together)';
    case 'wilson':
      return 'a Wilson interval over tasks (too few tasks for a bootstrap)';
    case 'wilson_difference':
      return 'a difference of Wilson intervals';
    default:
      return 'not computed: no task is scored yet';
  }
}

/** One contestant's edits to tests that the verifier dropped, per run. */
export interface DroppedEdits {
  contestant: string;
  task: string;
  run: number;
  battleId: string;
  files: string[];
}

/** Every run whose edits to tests or test infrastructure were dropped. */
export function droppedEdits(report: PackRunReportDto): DroppedEdits[] {
  return report.tasks.flatMap((t) =>
    t.runs
      .filter((r) => r.dropped.length > 0)
      .map((r) => ({
        contestant: r.contestant,
        task: t.id,
        run: r.run,
        battleId: r.battle_id,
        files: r.dropped,
      })),
  );
}
