import { describe, expect, it } from 'vitest';
import { folderFailure, projectProblem } from './folder';

describe('projectProblem', () => {
  it('says a relative path at once, and accepts blank or a full path', () => {
    expect(projectProblem('')).toBeNull();
    expect(projectProblem('  ')).toBeNull();
    expect(projectProblem('/srv/repo')).toBeNull();
    expect(projectProblem('srv/repo')).toMatch(/full path/);
    expect(projectProblem('./repo')).toMatch(/full path/);
  });
});

describe('a folder the OS could not show', () => {
  it('gives the path to open by hand, without the launcher’s words', () => {
    const f = folderFailure({
      code: 'open_failed',
      message:
        'no file manager could show the folder on this system. Open it yourself; its path: /p/Arena/b 1',
    });
    expect(f.path).toBe('/p/Arena/b 1');
  });

  it('keeps any other error as it is', () => {
    const f = folderFailure({ code: 'not_found', message: 'no battle b1' });
    expect(f).toEqual({ path: null, message: 'no battle b1' });
  });
});
