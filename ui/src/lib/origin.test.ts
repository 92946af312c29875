import { describe, expect, it } from 'vitest';
import { originFacts, originLine, originsShown } from './origin';

type Origin = Parameters<typeof originLine>[0];

function origin(
  machine: string | null,
  user: string | null = null,
  voter: string | null = null,
): Origin {
  return { machine, user_name: user, voted_by: voter };
}

describe('originsShown', () => {
  it('names nothing for one machine and one user', () => {
    const page = [origin('alpha', 'alice'), origin('alpha', 'alice', 'alice')];
    expect(originsShown(page)).toEqual({ machines: false, users: false });
    expect(originsShown([])).toEqual({ machines: false, users: false });
  });

  it('names the machine once the page holds two', () => {
    const page = [origin('alpha', 'alice'), origin('beta', 'alice')];
    expect(originsShown(page)).toEqual({ machines: true, users: false });
  });

  it('names the users once two appear, starting or judging', () => {
    expect(originsShown([origin('alpha', 'alice'), origin('alpha', 'bob')]).users).toBe(true);
    expect(originsShown([origin('alpha', 'alice', 'bob')]).users).toBe(true);
  });

  it('does not count battles from before machines were recorded', () => {
    const page = [origin(null), origin('alpha', 'alice'), origin(null, null, null)];
    expect(originsShown(page)).toEqual({ machines: false, users: false });
  });
});

describe('originLine', () => {
  const both = { machines: true, users: true };

  it('says where and by whom', () => {
    expect(originLine(origin('alpha', 'alice'), both)).toBe('on alpha · by alice');
    expect(originLine(origin('alpha', 'alice', 'alice'), both)).toBe('on alpha · by alice');
  });

  it('names another voter', () => {
    expect(originLine(origin('beta', 'bob', 'alice'), both)).toBe(
      'on beta · by bob · verdict by alice',
    );
  });

  it('shows only what tells the rows apart', () => {
    expect(originLine(origin('beta', 'bob'), { machines: true, users: false })).toBe('on beta');
    expect(originLine(origin('beta', 'bob', 'carol'), { machines: false, users: true })).toBe(
      'by bob · verdict by carol',
    );
    expect(originLine(origin('beta', 'bob'), { machines: false, users: false })).toBeNull();
  });

  it('says an older battle is of unknown origin', () => {
    expect(originLine(origin(null), both)).toBe('on an unknown machine · by an unknown user');
  });
});

describe('originFacts', () => {
  it('always says where it ran', () => {
    expect(originFacts(origin('alpha'))).toEqual([{ label: 'Ran on', value: 'alpha' }]);
    expect(originFacts(origin(null))).toEqual([{ label: 'Ran on', value: 'unknown' }]);
  });

  it('adds who started it and who gave the verdict', () => {
    expect(originFacts(origin('alpha', 'alice', 'bob'))).toEqual([
      { label: 'Ran on', value: 'alpha' },
      { label: 'Started by', value: 'alice' },
      { label: 'Verdict by', value: 'bob' },
    ]);
  });
});
