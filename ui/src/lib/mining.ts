// "Mine my history", kept pure: the form and its checks, where a run is
// (drop reasons come in words from the engine), the yield table after it,
// and whether the picked writer sends the code off the machine.
import type {
  DropCountDto,
  InstructionCountsDto,
  MineProgressDto,
  MineRequest,
  MineRunDto,
} from '../ipc';
import { projectProblem } from './folder';
import type { ModelGroup } from './launcher';

/** The most runs of each tree the form asks for (arena-api's bound). */
export const MAX_RUNS_TO_VALIDATE = 9;

/** The commonest drop reasons with their counts. */
export function dropsLine(dropped: readonly DropCountDto[], most = 6): string {
  return dropped
    .slice(0, most)
    .map((d) => `${d.words} ${d.count.toLocaleString()}`)
    .join(' · ');
}

/** What a run is doing, in words. */
export function stageWords(stage: string): string {
  switch (stage) {
    case 'scan':
      return 'Scanning the history';
    case 'split':
      return 'Splitting the candidates into tests and fix';
    case 'validate':
      return 'Validating by running the tests';
    case 'write':
      return 'Writing';
    case 'cancelled':
      return 'Stopped';
    default:
      return 'Done';
  }
}

/** Where a mining run is: counts so far. */
export function progressLine(p: MineProgressDto): string {
  const dropped = p.dropped.reduce((n, d) => n + d.count, 0);
  return `${p.scanned.toLocaleString()} commits scanned · ${p.candidates.toLocaleString()} candidates · ${p.validated.toLocaleString()} validated · ${dropped.toLocaleString()} dropped`;
}

/** The mining form as typed. */
export interface MineForm {
  project: string;
  out: string;
  limit: string;
  since: string;
  until: string;
  testCommand: string;
  runs: string;
  /** '' for the default writer. */
  writer: string;
}

export function newMineForm(): MineForm {
  return {
    project: '',
    out: '',
    limit: '',
    since: '',
    until: '',
    testCommand: '',
    runs: '3',
    writer: '',
  };
}

/** What is wrong with the form, field by field; null where nothing is. */
export interface MineFormErrors {
  project: string | null;
  out: string | null;
  limit: string | null;
  dates: string | null;
  runs: string | null;
}

const WHOLE = /^[1-9]\d*$/;

export function validateMine(form: MineForm): MineFormErrors {
  const limit = form.limit.trim();
  const runs = form.runs.trim();
  const since = form.since.trim();
  const until = form.until.trim();
  return {
    project:
      form.project.trim() === '' ? 'Choose the project to mine' : projectProblem(form.project),
    out: projectProblem(form.out),
    limit:
      limit === '' || WHOLE.test(limit)
        ? null
        : 'Stop after a whole number of validated tasks above 0, or leave it blank',
    dates:
      since !== '' && until !== '' && since > until
        ? 'The since date is after the until date'
        : null,
    runs:
      runs === '' || (WHOLE.test(runs) && Number(runs) <= MAX_RUNS_TO_VALIDATE)
        ? null
        : `Runs to validate is a whole number from 1 to ${String(MAX_RUNS_TO_VALIDATE)}`,
  };
}

export function mineProblemCount(e: MineFormErrors): number {
  return Object.values(e).filter((v) => v !== null).length;
}

function blank(s: string): string | null {
  const t = s.trim();
  return t === '' ? null : t;
}

/** The request the form sends (call once it validates). */
export function toMineRequest(form: MineForm): MineRequest {
  const limit = blank(form.limit);
  const runs = blank(form.runs);
  return {
    project: form.project.trim(),
    out: blank(form.out),
    limit: limit === null ? null : Number(limit),
    since: blank(form.since),
    until: blank(form.until),
    test_command: blank(form.testCommand),
    runs_to_validate: runs === null ? null : Number(runs),
    writer: blank(form.writer),
  };
}

/**
 * Where the picked writer runs: `local`, `cloud`, or `unknown` for a typed
 * model no listed provider serves; `default` for none picked (the default
 * is used only when it is local).
 */
export function writerLane(
  groups: readonly ModelGroup[],
  writer: string,
): 'default' | 'local' | 'cloud' | 'unknown' {
  if (writer.trim() === '') {
    return 'default';
  }
  const group = groups.find((g) => g.options.some((o) => o.value === writer));
  if (!group) {
    return 'unknown';
  }
  return group.lane === 'local' ? 'local' : 'cloud';
}

/** A row of the yield table. */
export interface YieldRow {
  key: string;
  label: string;
  value: string;
  /** A drop's stage (`scan`, `run`) and reason, for the tests and styles. */
  stage?: 'scan' | 'run';
  reason?: string;
  indent?: boolean;
}

function n(v: number): string {
  return v.toLocaleString();
}

/** The yield table (issue 41, point 7): commits scanned, candidates, drops
 * by reason, validated, instructions written and approved, time per stage. */
export function yieldRows(run: MineRunDto, counts: InstructionCountsDto | null): YieldRow[] {
  const rows: YieldRow[] = [
    { key: 'scanned', label: 'Commits scanned', value: n(run.scanned) },
  ];
  for (const d of run.scan_dropped) {
    rows.push({
      key: `scan:${d.reason}`,
      label: `dropped: ${d.words}`,
      value: n(d.count),
      stage: 'scan',
      reason: d.reason,
      indent: true,
    });
  }
  rows.push({ key: 'candidates', label: 'Candidates', value: n(run.candidates) });
  rows.push({
    key: 'tried',
    label: 'Candidates run',
    value:
      run.tried < run.candidates
        ? `${n(run.tried)} (${n(run.candidates - run.tried)} not reached)`
        : n(run.tried),
  });
  for (const d of run.run_dropped) {
    rows.push({
      key: `run:${d.reason}`,
      label: `dropped: ${d.words}`,
      value: n(d.count),
      stage: 'run',
      reason: d.reason,
      indent: true,
    });
  }
  const share = run.tried > 0 ? ` (${String(Math.round((100 * run.validated) / run.tried))} % of those run)` : '';
  rows.push({ key: 'validated', label: 'Validated', value: `${n(run.validated)}${share}` });
  if (counts) {
    rows.push({ key: 'written', label: 'Instructions written', value: n(counts.written) });
    rows.push({ key: 'approved', label: 'Instructions approved', value: n(counts.approved) });
    if (counts.dropped > 0) {
      rows.push({ key: 'instructions-dropped', label: 'Instructions dropped', value: n(counts.dropped) });
    }
    if (counts.unwritten > 0) {
      rows.push({ key: 'unwritten', label: 'Tasks without an instruction yet', value: n(counts.unwritten) });
    }
  }
  for (const t of run.stages) {
    rows.push({
      key: `time:${t.stage}`,
      label: `time: ${stageTimeWords(t.stage)}`,
      value: `${t.seconds.toFixed(1)} s`,
    });
  }
  return rows;
}

function stageTimeWords(stage: string): string {
  switch (stage) {
    case 'walk':
      return 'reading the history';
    case 'classify':
      return 'classifying commits';
    case 'split':
      return 'splitting';
    case 'validate':
      return 'validating by running';
    case 'write':
      return 'writing the pack and instructions';
    default:
      return stage;
  }
}
