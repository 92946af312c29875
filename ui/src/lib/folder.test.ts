import { describe, expect, it } from 'vitest';
import { projectProblem } from './folder';

describe('projectProblem', () => {
  it('says a relative path at once, and accepts blank or a full path', () => {
    expect(projectProblem('')).toBeNull();
    expect(projectProblem('  ')).toBeNull();
    expect(projectProblem('/srv/repo')).toBeNull();
    expect(projectProblem('srv/repo')).toMatch(/full path/);
    expect(projectProblem('./repo')).toMatch(/full path/);
  });
});
