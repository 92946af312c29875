import { describe, expect, it } from 'vitest';
import type { AppliedFileDto, ApplyResultDto, ChangeStatusDto } from '../ipc';
import { READY, answered, autorunFiles, buttonLabel, confirms, statusMark } from './apply';

const file = (path: string, autorun: AppliedFileDto['autorun'] = null): AppliedFileDto => ({
  path,
  old_path: null,
  status: 'added',
  autorun,
});

const result = (applied: boolean): ApplyResultDto => ({
  battle_id: 'b1',
  contestant_id: 'c1',
  applied,
  stats: { files: 2, insertions: 3, deletions: 0, environment: null },
  files: [
    file('src/lib.rs'),
    file('.github/workflows/x.yml', { kind: 'ci', why: 'a CI pipeline: it runs on push' }),
  ],
});

describe('the Apply button', () => {
  it('asks first, and only a second click on a held result says yes', () => {
    // First click: no yes.
    expect(confirms(READY)).toBe(false);
    expect(buttonLabel(READY, false)).toBe('Apply to project');
    // Held back: the flagged files are shown and the button changes.
    const held = answered(result(false));
    expect(held.step).toBe('held');
    expect(buttonLabel(held, false)).toBe('Apply anyway');
    expect(confirms(held)).toBe(true);
    // The second click's answer: written.
    const applied = answered(result(true));
    expect(applied.step).toBe('applied');
    expect(confirms(applied)).toBe(false);
    expect(buttonLabel(applied, false)).toBe('Apply to project');
    expect(buttonLabel(held, true)).toBe('Applying…');
  });

  it('names the files that run by themselves and marks every file', () => {
    expect(autorunFiles(result(false)).map((f) => f.path)).toEqual(['.github/workflows/x.yml']);
    expect(autorunFiles({ ...result(true), files: [file('a')] })).toEqual([]);
    const statuses: ChangeStatusDto[] = ['added', 'modified', 'deleted', 'renamed'];
    expect(statuses.map(statusMark)).toEqual(['A', 'M', 'D', 'R']);
  });
});
