import { describe, expect, it } from 'vitest';
import { BattleType, type BattleDto, type BattleEventDto } from '../ipc';
import { changesOnItsOwn, changesTheRow, outcomeLine } from './history';

function battle(over: Partial<BattleDto> = {}): BattleDto {
  return {
    base: null,
    check_warning: null,
    id: 'b1',
    battle_type: BattleType.Qa,
    status: 'done',
    prompt: 'Explain monads',
    project: '/tmp/project',
    results_path: '/tmp/project/Arena/b1',
    created_at: '2026-11-27T10:00:00Z',
    finished_at: '2026-11-27T10:00:05Z',
    winner: null,
    contestants: [],
    base_commit: null,
    check_command: null,
    series_id: null,
    blind: false,
    masked: false,
    user_verdict: null,
    tags: [],
    judging: null,
    machine: null,
    user_name: null,
    voted_by: null,
    ...over,
  };
}

function contestantsOf(statuses: BattleDto['contestants'][number]['status'][]): BattleDto['contestants'] {
  return statuses.map((status, i) => ({ ...contestant(i + 1), status }));
}

function contestant(position: number): BattleDto['contestants'][number] {
  return {
    id: `c${String(position)}`,
    position,
    identity: 'debugger',
    model: 'm',
    provider: 'p',
    lane: 'cloud',
    status: 'done',
  } as unknown as BattleDto['contestants'][number];
}

describe('outcomeLine', () => {
  it('shows nothing when a winner is shown', () => {
    const won = battle({ winner: { contestant_id: 'c1', source: 'analysis' } });
    expect(outcomeLine(won)).toBeNull();
  });

  it('says the judge found no clear winner, not "no winner yet"', () => {
    const line = outcomeLine(
      battle({ judging: { status: 'done', outcome: 'no_clear_winner' } }),
    );
    expect(line?.text).toContain('No clear winner');
    expect(line?.muted).toBe(false);
  });

  it('says when the judge is at work, failed, or gave nothing usable', () => {
    expect(outcomeLine(battle({ judging: { status: 'running', outcome: null } }))?.text).toBe(
      'Judging…',
    );
    expect(outcomeLine(battle({ judging: { status: 'error', outcome: null } }))?.text).toContain(
      'Not judged: the judge failed',
    );
    expect(
      outcomeLine(battle({ judging: { status: 'done', outcome: 'judge_error' } }))?.text,
    ).toContain('no usable verdict');
  });

  it('puts the vote and the user verdict before the judge', () => {
    const judged = { status: 'done', outcome: 'no_clear_winner' } as const;
    expect(outcomeLine(battle({ masked: true, blind: true, judging: judged }))?.text).toBe(
      'Blind: waiting for your vote',
    );
    expect(outcomeLine(battle({ user_verdict: 'tie', judging: judged }))?.text).toBe(
      'You called it a tie',
    );
  });

  it('reads running, cancelled and unjudged battles in words', () => {
    const finished = contestantsOf(['done', 'done']);
    expect(outcomeLine(battle({ status: 'running' }))?.text).toBe('Answers are coming in');
    expect(outcomeLine(battle({ status: 'cancelled' }))?.text).toBe('Cancelled: no verdict');
    expect(outcomeLine(battle({ status: 'cancelled', contestants: finished }))?.text).toBe(
      'Cancelled: no verdict',
    );
    expect(outcomeLine(battle({ contestants: finished }))?.text).toBe('Not judged yet');
    expect(outcomeLine(battle({ status: 'error' }))?.text).toBe(
      'No verdict: no contestant finished',
    );
  });
});

describe('following rows', () => {
  it('follows running battles and battles being judged', () => {
    expect(changesOnItsOwn(battle({ status: 'running' }))).toBe(true);
    expect(changesOnItsOwn(battle({ judging: { status: 'running', outcome: null } }))).toBe(true);
    expect(changesOnItsOwn(battle())).toBe(false);
  });

  it('refetches a row on status, winner and judge events, not on streamed text', () => {
    const at = '2026-11-27T10:00:00Z';
    const base = { battle_id: 'b1', seq: 1, contestant_id: null, at };
    const done: BattleEventDto = { ...base, type: 'battle_status', status: 'done' };
    const text: BattleEventDto = { ...base, contestant_id: 'c1', type: 'output', text: 'hi' };
    const judged: BattleEventDto = {
      ...base,
      type: 'analysis_status',
      analysis_id: 'a1',
      status: 'done',
      outcome: 'no_clear_winner',
      winner: null,
      error: null,
    };
    expect(changesTheRow(done)).toBe(true);
    expect(changesTheRow(judged)).toBe(true);
    expect(changesTheRow(text)).toBe(false);
  });
});
