import { describe, expect, it } from 'vitest';
import { noPickLabel, verdictOf, type AnalysisFacts, type VerdictInput } from './verdict';

const name = (id: string | null | undefined): string => `#${id ?? '?'}`;

function input(over: Partial<VerdictInput> = {}): VerdictInput {
  return {
    battleStatus: 'done',
    masked: false,
    statuses: { c1: 'done', c2: 'done' },
    winner: null,
    userVerdict: null,
    analysis: null,
    judging: null,
    name,
    ...over,
  };
}

function analysis(over: Partial<AnalysisFacts> = {}): AnalysisFacts {
  return {
    status: 'done',
    outcome: 'winner',
    winner: 'c1',
    error: null,
    model: 'judge',
    reasons: { c1: 'names the capital' },
    judgeRuns: [],
    ...over,
  };
}

const DOWN =
  'unknown model `judge-4o`: not served by any configured provider: cloud is unreachable (connection refused); pick one of the models they serve';

describe('verdictOf', () => {
  it('says why a judge that failed gave no verdict, and offers another judge', () => {
    const v = verdictOf(
      input({ analysis: analysis({ status: 'error', outcome: null, winner: null, error: DOWN }) }),
    );
    expect(v.kind).toBe('not_judged');
    expect(v.headline).toBe('Not judged: the judge failed');
    expect(v.detail).toBe(DOWN);
    expect(v.offerJudge).toBe(true);
    expect(v.winnerId).toBeNull();
  });

  it('names the judged winner and why', () => {
    const v = verdictOf(input({ analysis: analysis() }));
    expect(v.kind).toBe('judged');
    expect(v.headline).toBe('Winner: #c1');
    expect(v.detail).toContain('names the capital');
    expect(v.detail).toContain('judge (judge)');
    expect(v.winnerId).toBe('c1');
  });

  it('says what each run chose when the runs disagreed', () => {
    const run = (winner: string) => ({
      order: ['c1', 'c2'],
      raw: '',
      verdict: { winner, ranking: [], reasons: {} },
      error: null,
      repaired: false,
    });
    const v = verdictOf(
      input({
        analysis: analysis({
          outcome: 'no_clear_winner',
          winner: null,
          judgeRuns: [run('c1'), run('c2')],
        }),
      }),
    );
    expect(v.kind).toBe('undecided');
    expect(v.headline).toContain('No clear winner');
    expect(v.detail).toContain('run 1 chose #c1, run 2 chose #c2');
    // The picker is on the right, not below.
    expect(v.detail).not.toContain('below');
  });

  it('puts the user pick first, with the judge beside it', () => {
    const mine = { contestant_id: 'c2', source: 'user' } as const;
    const v = verdictOf(input({ winner: mine, analysis: analysis() }));
    expect(v.kind).toBe('pick');
    expect(v.headline).toBe('You chose #c2.');
    expect(v.detail).toBe('The judge chose #c1.');
    expect(v.winnerId).toBe('c2');
    const agreed = verdictOf(
      input({ winner: { contestant_id: 'c1', source: 'user' }, analysis: analysis() }),
    );
    expect(agreed.detail).toBe('The judge agreed.');
    const failed = verdictOf(
      input({
        winner: mine,
        analysis: analysis({ status: 'error', outcome: null, winner: null, error: DOWN }),
      }),
    );
    expect(failed.detail).toBe('The judge gave no verdict.');
    expect(verdictOf(input({ userVerdict: 'tie' })).headline).toBe('You called it a tie.');
  });

  it('never says "no winner yet" of a cancelled battle', () => {
    const none = verdictOf(
      input({ battleStatus: 'cancelled', statuses: { c1: 'cancelled', c2: 'cancelled' } }),
    );
    expect(none.kind).toBe('cancelled');
    expect(none.headline).toBe('Cancelled: no verdict');
    expect(none.offerJudge).toBe(false);
    const some = verdictOf(
      input({ battleStatus: 'cancelled', statuses: { c1: 'done', c2: 'cancelled' } }),
    );
    expect(some.kind).toBe('cancelled');
    expect(some.offerJudge).toBe(true);
  });

  it('reads running, judging, unjudged, nothing finished and blind', () => {
    expect(verdictOf(input({ battleStatus: 'running' })).kind).toBe('running');
    const judging = verdictOf(input({ judging: 'Judging… (judge)' }));
    expect(judging.kind).toBe('judging');
    expect(judging.headline).toBe('Judging… (judge)');
    const unjudged = verdictOf(input());
    expect(unjudged.kind).toBe('unjudged');
    expect(unjudged.offerJudge).toBe(true);
    expect(
      verdictOf(input({ battleStatus: 'error', statuses: { c1: 'error', c2: 'error' } })).kind,
    ).toBe('nothing');
    expect(verdictOf(input({ masked: true, analysis: analysis() })).kind).toBe('blind');
  });

  it('says a stopped judge was stopped, not that it failed', () => {
    const v = verdictOf(
      input({
        analysis: analysis({
          status: 'error',
          outcome: null,
          winner: null,
          error: 'cancelled by the user',
        }),
      }),
    );
    expect(v.headline).toBe('Not judged: you stopped the judge');
  });
});

describe('noPickLabel', () => {
  it('names the judge’s pick, or plainly none', () => {
    expect(noPickLabel(analysis(), name)).toBe('The judge’s pick (#c1)');
    expect(noPickLabel(analysis({ outcome: 'no_clear_winner', winner: null }), name)).toBe(
      'No pick',
    );
    expect(noPickLabel(null, name)).toBe('No pick');
  });
});
