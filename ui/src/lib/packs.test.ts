import { describe, expect, it } from 'vitest';
import type { PackDto, PackRunReportDto, PackRunRowDto, PackScoreDto, PackTaskDto } from '../ipc';
import { newRow } from './launcher';
import {
  atK,
  cellTone,
  cellWords,
  droppedEdits,
  matrix,
  passBars,
  passWords,
  pct,
  runProblemCount,
  taskState,
  toRunRequest,
  validateRun,
  type Matrix,
  type MatrixCell,
  type PackRunForm,
} from './packs';

function task(id: string, why: string | null = null): PackTaskDto {
  return {
    id,
    kind: 'repo',
    base_commit: 'a'.repeat(40),
    test_command: 'python -m pytest',
    fail_to_pass: 1,
    pass_to_pass: 3,
    needs_docker: false,
    solution: 'gold.patch',
    runnable: why === null,
    why_not: why,
  };
}

function pack(tasks: PackTaskDto[]): PackDto {
  return {
    path: '/packs/sample',
    name: 'sample',
    version: '1',
    description: '',
    runs: 5,
    time_limit_secs: 600,
    project: null,
    bundle: 'repo.bundle',
    tasks,
  };
}

function form(patch: Partial<PackRunForm> = {}): PackRunForm {
  return {
    project: '',
    contestants: [newRow('agent', 'gold'), newRow('agent', 'idle')],
    runs: '',
    parallel: '2',
    budget: '',
    leftOut: [],
    ...patch,
  };
}

function row(
  task: string,
  contestant: string,
  run: number,
  outcome: PackRunRowDto['outcome'],
  done = true,
  dropped: string[] = [],
): PackRunRowDto {
  return {
    task,
    contestant,
    run,
    battle_id: `${task}-${contestant}-${String(run)}`,
    outcome,
    done,
    reason: done ? 'the tests said so' : null,
    fail_to_pass_fraction: null,
    dropped,
    cost_usd: null,
    seconds: 1,
  };
}

function score(contestant: string, p: number | null, low: number, high: number): PackScoreDto {
  return {
    contestant,
    identity: contestant.split('@')[0] ?? '',
    model: contestant.split('@')[1] ?? '',
    tasks: 2,
    tasks_all_errors: 0,
    runs: 4,
    resolved: 0,
    errors: 0,
    pass_at_1: p,
    pass_at_1_interval: { low, high, method: 'wilson' },
    pass_at: [
      { k: 1, value: p ?? 0, tasks: 2 },
      { k: 2, value: 0.75, tasks: 2 },
    ],
    pass_hat_k: [
      { k: 1, value: p ?? 0, tasks: 2 },
      { k: 2, value: 0.25, tasks: 2 },
    ],
    fail_to_pass_fraction: null,
    cost_usd: null,
    cost_per_solve_usd: null,
    seconds_per_solve: null,
  };
}

function report(): PackRunReportDto {
  return {
    series_id: 's1',
    pack: 'sample',
    version: '1',
    status: 'running',
    runs_per_task: 2,
    done: 5,
    planned: 8,
    lineup: ['agent@gold', 'agent@idle'],
    contestants: [score('agent@gold', 1, 0.34, 1), score('agent@idle', 0, 0, 0.66)],
    pairs: [],
    notes: [],
    tasks: [
      {
        id: 't1',
        runs: [
          row('t1', 'agent@gold', 2, 'resolved'),
          row('t1', 'agent@gold', 1, 'resolved'),
          row('t1', 'agent@idle', 1, 'unresolved', true, ['tests/test_x.py', 'conftest.py']),
          row('t1', 'agent@idle', 2, 'error', false),
        ],
      },
      {
        id: 't2',
        runs: [row('t2', 'agent@gold', 1, 'error'), row('t2', 'agent@idle', 1, 'unresolved')],
      },
    ],
  };
}

describe('the run form', () => {
  it('takes two distinct contestants and the pack default runs', () => {
    const errors = validateRun(form(), pack([task('t1')]));
    expect(runProblemCount(errors)).toBe(0);
    const request = toRunRequest(pack([task('t1'), task('t2')]), form());
    expect(request).toEqual({
      pack: '/packs/sample',
      project: null,
      contestants: ['agent@gold', 'agent@idle'],
      runs: null,
      parallel: 2,
      tasks: [],
      budget_usd: null,
      key: null,
    });
  });

  it('names the tasks only when some are left out, never a task that cannot run', () => {
    const p = pack([task('t1'), task('t2'), task('t3', 'not validated yet')]);
    const request = toRunRequest(p, form({ leftOut: ['t2'], runs: '3', budget: '1.5' }));
    expect(request.tasks).toEqual(['t1']);
    expect(request.runs).toBe(3);
    expect(request.budget_usd).toBe(1.5);
  });

  it('says what is wrong: a repeated contestant, runs, parallel, budget, no runnable task', () => {
    const errors = validateRun(
      form({
        contestants: [newRow('agent', 'gold'), newRow('agent', 'gold'), newRow('', '')],
        runs: '0',
        parallel: '99',
        budget: '-1',
      }),
      pack([task('t1', 'broken: its solution does not resolve it')]),
    );
    expect(errors.rows).toEqual([
      null,
      'agent@gold is already row 1',
      'Pick a backend and a model',
    ]);
    expect(errors.runs).toMatch(/1 to 100/);
    expect(errors.parallel).toMatch(/1 to 16/);
    expect(errors.budget).toMatch(/above 0/);
    expect(errors.tasks).toBe('No task of this pack can run here');
    expect(validateRun(form({ contestants: [] }), pack([task('t1')])).contestants).toBe(
      'Add a contestant',
    );
  });

  it('tells a task’s defect in a word', () => {
    expect(taskState(task('a'))).toEqual({ word: 'ready', tone: 'ok' });
    expect(taskState(task('a', 'it is not validated yet (mined)')).word).toBe('not validated yet');
    expect(taskState(task('a', '`arena pack check` found it broken: x')).word).toBe('broken');
    expect(taskState(task('a', 'it needs Docker or Podman')).word).toBe('needs Docker');
    expect(taskState(task('a', 'its base abc is not in the project')).tone).toBe('bad');
  });
});

function cellAt(m: Matrix, row: number, column: number): MatrixCell {
  const cell = m.rows[row]?.cells[column];
  if (cell === undefined) {
    throw new Error(`no cell at ${String(row)}, ${String(column)}`);
  }
  return cell;
}

describe('the matrix', () => {
  it('has a cell per task and contestant with its runs done, resolved and errors', () => {
    const m = matrix(report());
    expect(m.contestants).toEqual(['agent@gold', 'agent@idle']);
    expect(m.rows.map((r) => r.task)).toEqual(['t1', 't2']);
    const gold = cellAt(m, 0, 0);
    const idle = cellAt(m, 0, 1);
    expect(gold).toMatchObject({ planned: 2, done: 2, resolved: 2, errors: 0 });
    expect(gold.runs.map((r) => r.run)).toEqual([1, 2]);
    expect(gold.runs[0]?.battleId).toBe('t1-agent@gold-1');
    expect(idle).toMatchObject({ done: 1, resolved: 0, unresolved: 1, errors: 0 });
    expect(cellTone(gold)).toBe('all');
    expect(cellTone(idle)).toBe('none');
    const t2gold = cellAt(m, 1, 0);
    expect(t2gold).toMatchObject({ done: 1, errors: 1 });
    expect(cellTone(t2gold)).toBe('error');
    expect(cellWords(t2gold)).toBe('t2 by agent@gold: 1 of 2 runs done, 0 resolved, 1 error of the run');
  });

  it('shows a cell with no run yet as pending', () => {
    const r = report();
    r.tasks.push({ id: 't3', runs: [] });
    const cell = cellAt(matrix(r), 2, 1);
    // Before any score, the columns are the contestants asked for.
    expect(matrix({ ...r, contestants: [], tasks: [{ id: 't1', runs: [] }] })).toEqual({
      contestants: ['agent@gold', 'agent@idle'],
      rows: [
        {
          task: 't1',
          cells: ['agent@gold', 'agent@idle'].map((contestant) => ({
            task: 't1',
            contestant,
            planned: 2,
            done: 0,
            resolved: 0,
            unresolved: 0,
            errors: 0,
            runs: [],
          })),
        },
      ],
    });
    expect(cell).toMatchObject({ done: 0, planned: 2 });
    expect(cellTone(cell)).toBe('pending');
  });
});

describe('the scores', () => {
  it('give pass@1 with its interval as a bar and in words, never a bare point', () => {
    const bars = passBars(report());
    expect(bars).toEqual([
      { name: 'agent@gold', value: 1, low: 0.34, high: 1 },
      { name: 'agent@idle', value: 0, low: 0, high: 0.66 },
    ]);
    expect(passWords(score('a@b', 1, 0.34, 1))).toBe('100 % (95 % 34–100 %)');
    expect(passWords(score('a@b', null, 0, 1))).toBe('no scored run yet');
    expect(pct(null)).toBe('—');
  });

  it('list pass@k beyond 1 and pass^k', () => {
    const s = score('a@b', 0.5, 0.1, 0.9);
    expect(atK(s.pass_at, 'pass@')).toBe('pass@2 75 %');
    expect(atK(s.pass_hat_k, 'pass^')).toBe('pass^2 25 %');
    expect(atK([], 'pass@')).toBe('—');
  });

  it('list what the verifier dropped, per run', () => {
    expect(droppedEdits(report())).toEqual([
      {
        contestant: 'agent@idle',
        task: 't1',
        run: 1,
        battleId: 't1-agent@idle-1',
        files: ['tests/test_x.py', 'conftest.py'],
      },
    ]);
  });
});
