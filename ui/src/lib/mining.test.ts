import { describe, expect, it } from 'vitest';
import type { MineRunDto } from '../ipc';
import {
  dropsLine,
  mineProblemCount,
  newMineForm,
  progressLine,
  toMineRequest,
  validateMine,
  writerLane,
  yieldRows,
} from './mining';
import type { ModelGroup } from './launcher';

describe('the mining form', () => {
  it('asks for a project and says what else is wrong, field by field', () => {
    const form = newMineForm();
    expect(validateMine(form).project).toBe('Choose the project to mine');
    form.project = 'relative/path';
    expect(validateMine(form).project).toContain('full path');
    form.project = '/home/ada/calc';
    form.limit = '0';
    form.runs = '10';
    form.since = '2024-05-01';
    form.until = '2024-04-01';
    const e = validateMine(form);
    expect(e.limit).toContain('above 0');
    expect(e.runs).toContain('1 to 9');
    expect(e.dates).toContain('after the until date');
    expect(mineProblemCount(e)).toBe(3);
  });

  it('sends blanks as nulls and numbers as numbers', () => {
    const form = {
      ...newMineForm(),
      project: ' /p ',
      out: '/packs/mine',
      limit: '5',
      since: '2024-01-01',
      testCommand: '  ',
      writer: 'writer-model',
    };
    expect(mineProblemCount(validateMine(form))).toBe(0);
    expect(toMineRequest(form)).toEqual({
      project: '/p',
      out: '/packs/mine',
      limit: 5,
      since: '2024-01-01',
      until: null,
      test_command: null,
      runs_to_validate: 3,
      writer: 'writer-model',
    });
  });
});

describe('the writer', () => {
  const groups: ModelGroup[] = [
    {
      provider: 'ollama',
      lane: 'local',
      reachable: true,
      error: null,
      options: [{ value: 'qwen3-8b', label: 'qwen3-8b', disabled: false, title: null }],
    },
    {
      provider: 'openai',
      lane: 'cloud',
      reachable: true,
      error: null,
      options: [{ value: 'gpt-5', label: 'gpt-5', disabled: false, title: null }],
    },
  ];

  it('says when the code would leave the machine', () => {
    expect(writerLane(groups, '')).toBe('default');
    expect(writerLane(groups, 'qwen3-8b')).toBe('local');
    expect(writerLane(groups, 'gpt-5')).toBe('cloud');
    expect(writerLane(groups, 'typed-in')).toBe('unknown');
  });
});

describe('a mining run', () => {
  it('says where it is as it goes', () => {
    const p = {
      stage: 'validate',
      scanned: 10000,
      candidates: 40,
      validated: 3,
      dropped: [
        { reason: 'no_tests', words: 'no test changed', count: 9000 },
        { reason: 'flaky_fail_to_pass', words: 'a flaky test', count: 2 },
      ],
      eta_secs: 90,
      current: 'abc123 fix the parser',
    };
    expect(progressLine(p)).toBe(
      '10,000 commits scanned · 40 candidates · 3 validated · 9,002 dropped',
    );
    expect(dropsLine(p.dropped)).toBe('no test changed 9,000 · a flaky test 2');
  });

  it('ends with its yield: drops by stage, validated, instructions, time', () => {
    const run: MineRunDto = {
      project: '/p',
      pack: '/packs/p',
      scanned: 6,
      candidates: 4,
      tried: 3,
      validated: 2,
      scan_dropped: [
        { reason: 'no_parent', words: 'the first commit (no parent to start from)', count: 1 },
        { reason: 'revert', words: 'a revert', count: 1 },
      ],
      run_dropped: [{ reason: 'gold_fails', words: 'the fix does not pass its tests', count: 1 }],
      tasks: [],
      dropped_candidates: [],
      stages: [
        { stage: 'walk', seconds: 0.01 },
        { stage: 'validate', seconds: 31.26 },
      ],
      instructions: {
        outcome: 'written',
        writer: 'local/w',
        left_the_machine: false,
        why_not: null,
        audit_dropped: [],
        skipped: [],
        counts: null,
      },
      cancelled: true,
    };
    const counts = { tasks: 2, written: 2, pending: 1, approved: 1, dropped: 0, unwritten: 0 };
    const rows = yieldRows(run, counts).map((r) => [r.key, r.value]);
    expect(rows).toEqual([
      ['scanned', '6'],
      ['scan:no_parent', '1'],
      ['scan:revert', '1'],
      ['candidates', '4'],
      ['tried', '3 (1 not reached)'],
      ['run:gold_fails', '1'],
      ['validated', '2 (67 % of those run)'],
      ['written', '2'],
      ['approved', '1'],
      ['time:walk', '0.0 s'],
      ['time:validate', '31.3 s'],
    ]);
    const unwritten = yieldRows(run, { ...counts, written: 0, pending: 0, approved: 0, unwritten: 2 });
    expect(unwritten.find((r) => r.key === 'unwritten')?.value).toBe('2');
    expect(yieldRows(run, null).some((r) => r.key === 'approved')).toBe(false);
  });
});
