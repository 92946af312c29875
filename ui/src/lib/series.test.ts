import { describe, expect, it } from 'vitest';
import { BattleType, type SeriesContestantDto, type SeriesDto } from '../ipc';
import { newRow, type LauncherForm } from './launcher';
import {
  initialSeriesFields,
  interval,
  leader,
  noLeaderLine,
  percent,
  seriesProblemCount,
  spentView,
  statusLine,
  timeLeft,
  toSeriesRequest,
  validateSeries,
  waitingText,
  type SeriesFields,
} from './series';

function form(over: Partial<LauncherForm> = {}): LauncherForm {
  return {
    battleType: BattleType.Qa,
    project: '/home/me/project',
    prompt: 'Explain monads',
    contestants: {
      [BattleType.Qa]: [newRow('critic', 'qwen3'), newRow('poet', 'qwen3')],
      [BattleType.Coding]: [newRow(), newRow()],
    },
    checkCommand: '',
    blind: false,
    tags: '',
    base: 'head',
    ...over,
  };
}

function fields(over: Partial<SeriesFields> = {}): SeriesFields {
  return { ...initialSeriesFields(), enabled: true, ...over };
}

function contestant(over: Partial<SeriesContestantDto> = {}): SeriesContestantDto {
  return {
    identity: 'critic',
    model: 'qwen3',
    runs: 10,
    wins: 5,
    ties: 0,
    decided: 10,
    win_rate: 0.5,
    win_rate_ci: [0.24, 0.76],
    goal_checked: 0,
    goal_passes: 0,
    goal_pass_rate: null,
    goal_pass_rate_ci: [0, 0],
    goal_errors: 0,
    mean_turns: null,
    errors: 0,
    duration_ms_p50: 1000,
    duration_ms_p95: 2000,
    ttft_ms_p50: 100,
    tokens_per_sec_mean: null,
    tokens_per_sec_sd: null,
    prompt_tokens: 100,
    completion_tokens: 200,
    cost_usd: null,
    cost_per_pass_usd: null,
    judging_cost_usd: null,
    ...over,
  };
}

function series(over: Partial<SeriesDto> = {}): SeriesDto {
  return {
    id: 'id',
    short_id: 'short',
    key: null,
    status: 'running',
    battle_type: BattleType.Qa,
    project: '/p',
    prompt: 'Why?',
    prompts: 1,
    runs: 10,
    parallel: 1,
    goal: null,
    max_turns: 1,
    budget_usd: null,
    until_decided: false,
    tags: [],
    runs_planned: 10,
    runs_done: 0,
    running: 0,
    spent_usd: null,
    spent_known_usd: 0,
    unknown_costs: 0,
    unpriced: [],
    time_left_ms: null,
    decided_after: null,
    created_at: '2026-01-01T00:00:00Z',
    finished_at: null,
    report_path: null,
    error: null,
    machine: null,
    waiting: null,
    awaiting_votes: 0,
    battles: [],
    contestants: [],
    ...over,
  };
}

describe('series fields', () => {
  it('accept the defaults', () => {
    expect(seriesProblemCount(validateSeries(fields(), form()))).toBe(0);
  });

  it('refuse runs, parallel and turns out of range, and a bad budget', () => {
    const errors = validateSeries(
      fields({ runs: '0', parallel: '17', maxTurns: '26', budget: '-1' }),
      form(),
    );
    expect(errors.runs).toMatch(/1 to 10,000/);
    expect(errors.parallel).toMatch(/1 to 16/);
    expect(errors.maxTurns).toMatch(/1 to 25/);
    expect(errors.budget).toMatch(/USD above 0/);
    expect(validateSeries(fields({ runs: '2.5' }), form()).runs).not.toBeNull();
  });

  it('want a goal for more than one turn, which a Coding check command is', () => {
    expect(validateSeries(fields({ maxTurns: '3' }), form()).maxTurns).toMatch(/needs a goal/);
    expect(validateSeries(fields({ maxTurns: '3', goal: 'names Paris' }), form()).maxTurns).toBe(
      null,
    );
    const coding = form({ battleType: BattleType.Coding, checkCommand: 'cargo test' });
    expect(validateSeries(fields({ maxTurns: '3' }), coding).maxTurns).toBe(null);
  });

  it('make the request the engine takes', () => {
    const request = toSeriesRequest(
      form(),
      fields({
        runs: ' 20 ',
        parallel: '2',
        goal: ' names Paris ',
        maxTurns: '3',
        budget: '1.5',
        untilDecided: true,
        tags: 'nightly, , geo',
      }),
    );
    expect(request).toMatchObject({
      battle_type: BattleType.Qa,
      prompt: 'Explain monads',
      contestants: ['critic@qwen3', 'poet@qwen3'],
      prompt_set: null,
      runs: 20,
      parallel: 2,
      goal: 'names Paris',
      goal_model: null,
      max_turns: 3,
      budget_usd: 1.5,
      until_decided: true,
      analysis: true,
      tags: ['nightly', 'geo'],
    });
    expect(toSeriesRequest(form(), fields()).budget_usd).toBeNull();
    expect(toSeriesRequest(form(), fields()).blind).toBe(false);
  });

  it('take the blind switch and the launcher tags with the series tags', () => {
    const request = toSeriesRequest(
      form({ blind: true, tags: 'rust, math' }),
      fields({ tags: 'nightly, Rust' }),
    );
    expect(request.blind).toBe(true);
    expect(request.tags).toEqual(['rust', 'math', 'nightly']);
  });
});

describe('reading a series', () => {
  it('formats rates and intervals', () => {
    expect(percent(0.666)).toBe('67%');
    expect(percent(null)).toBe('—');
    expect(interval([0.411, 0.768])).toBe('41–77%');
  });

  it('says how it ended', () => {
    expect(statusLine(series({ running: 2 }))).toBe('running (2 under way)');
    expect(statusLine(series({ status: 'done', decided_after: 7 }))).toBe(
      'decided after 7 of 10 battles',
    );
    expect(statusLine(series({ status: 'budget_reached' }))).toMatch(/budget/);
    expect(statusLine(series({ status: 'error', error: 'unknown model `m1`' }))).toBe(
      'stopped: unknown model `m1`',
    );
  });

  it("says the engine's time left while the series runs", () => {
    expect(timeLeft(series())).toBeNull();
    expect(timeLeft(series({ runs_done: 2, time_left_ms: 80_000 }))).toBe(80_000);
    expect(timeLeft(series({ status: 'cancelled', time_left_ms: 80_000 }))).toBeNull();
  });

  it('names the leader by win rate', () => {
    const a = contestant({ identity: 'a', win_rate: 0.3 });
    const b = contestant({ identity: 'b', win_rate: 0.7 });
    expect(leader(series({ contestants: [a, b] }))?.identity).toBe('b');
    expect(leader(series({ contestants: [contestant({ win_rate: null })] }))).toBeNull();
    // Three ties: nobody won, so nobody leads (not "0% of decided battles").
    const tied = contestant({ win_rate: 0, wins: 0, ties: 3 });
    expect(leader(series({ contestants: [tied, { ...tied, identity: 'other' }] }))).toBeNull();
  });
});

describe('waitingText', () => {
  const why = 'no connected worker can serve it (beta: no provider serves model m)';

  it('says why a running series waits', () => {
    expect(waitingText(series({ waiting: why }))).toBe(`Battles are waiting: ${why}`);
  });

  it('says nothing while some worker can serve it, or once it ended', () => {
    expect(waitingText(series())).toBeNull();
    expect(waitingText(series({ waiting: '  ' }))).toBeNull();
    expect(waitingText(series({ status: 'cancelled', waiting: why }))).toBeNull();
  });
});

describe('what a series spent', () => {
  it('is the amount when every cost is known', () => {
    expect(spentView(series({ spent_known_usd: 0.0042 }))).toEqual({
      amount: '$0.00420',
      missing: null,
      unpriced: [],
    });
  });

  it('keeps the known part and names the models without a price', () => {
    const s = spentView(
      series({ spent_known_usd: 0.75, unknown_costs: 6, unpriced: ['gpt-4.1 at cloud'] }),
    );
    expect(s.amount).toBe('$0.750');
    expect(s.missing).toBe(
      'not counted: 6 runs without a known cost (no price for gpt-4.1 at cloud)',
    );
    expect(s.unpriced).toEqual(['gpt-4.1 at cloud']);
    expect(spentView(series({ unknown_costs: 1 })).missing).toBe(
      'not counted: 1 run without a known cost (their servers reported no cost)',
    );
  });
});

describe('a series nobody leads', () => {
  const tied = contestant({ wins: 0, ties: 3, decided: 3, win_rate: 0, win_rate_ci: [0, 0.56] });

  it('says there is no leader yet after ties only, with how little they tell', () => {
    const s = series({ status: 'done', contestants: [tied, { ...tied, identity: 'poet' }] });
    expect(leader(s)).toBeNull();
    expect(noLeaderLine(s)).toBe(
      "No leader yet: 3 ties in 3 decided battles, no contestant has won one. So few battles say little: any contestant's win rate could still be 0–56% (95% interval).",
    );
  });

  it('says nothing while running, with a leader, or without a decided battle', () => {
    expect(noLeaderLine(series({ status: 'running', contestants: [tied] }))).toBeNull();
    expect(noLeaderLine(series({ status: 'done', contestants: [contestant()] }))).toBeNull();
    const undecided = contestant({ wins: 0, decided: 0, win_rate: null });
    expect(noLeaderLine(series({ status: 'done', contestants: [undecided] }))).toBeNull();
  });
});
