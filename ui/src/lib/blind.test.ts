import { describe, expect, it } from 'vitest';
import type { AnalysisDto, WinnerDto } from '../ipc';
import type { AnalysisLive } from './battle.svelte';
import {
  canVoteFor,
  contestantName,
  currentJudge,
  parseTags,
  verdictWords,
  voteKey,
  type Decided,
  type JudgeView,
  type Named,
} from './blind';

const debugger_: Named = { id: 'c1', label: 'B', identity: 'debugger', model: 'm1' };
const explainer: Named = { id: 'c2', label: 'A', identity: 'explainer', model: 'm2' };

describe('contestantName', () => {
  it('names a masked contestant by its label only', () => {
    // While masked, the engine sends the label as the identity and no model.
    const masked: Named = { id: 'c1', label: 'B', identity: 'B', model: '' };
    expect(contestantName({ masked: true }, masked)).toBe('Contestant B');
    expect(contestantName({ masked: true }, { ...masked, label: null })).toBe('Contestant B');
  });

  it('puts the label before the name after the reveal', () => {
    expect(contestantName({ masked: false }, debugger_)).toBe('B · debugger@m1');
  });

  it('names a contestant of an ordinary battle identity@model', () => {
    expect(contestantName({ masked: false }, { ...debugger_, label: null })).toBe('debugger@m1');
  });
});

describe('voting', () => {
  it('votes by the label', () => {
    expect(voteKey({ label: 'C', identity: 'C' })).toBe('C');
    expect(voteKey({ label: null, identity: 'A' })).toBe('A');
  });

  it('allows a vote for a contestant that is answering or has answered', () => {
    expect(canVoteFor({ status: 'running' })).toBe(true);
    expect(canVoteFor({ status: 'done' })).toBe(true);
    expect(canVoteFor({ status: 'queued' })).toBe(false);
    expect(canVoteFor({ status: 'error' })).toBe(false);
    expect(canVoteFor({ status: 'cancelled' })).toBe(false);
  });
});

describe('parseTags', () => {
  it('trims, drops blanks and repeats (ignoring case), keeping the order', () => {
    expect(parseTags(' rust, , math ,Rust,  geo ')).toEqual(['rust', 'math', 'geo']);
    expect(parseTags('')).toEqual([]);
    expect(parseTags(' , ,')).toEqual([]);
    expect(parseTags('two words')).toEqual(['two words']);
  });
});

function battle(over: Partial<Decided> = {}): Decided {
  return {
    masked: false,
    winner: null,
    user_verdict: null,
    contestants: [explainer, debugger_],
    ...over,
  };
}

const mine: WinnerDto = { contestant_id: 'c1', source: 'user' };
const judge = (over: Partial<JudgeView> = {}): JudgeView => ({
  status: 'done',
  outcome: 'winner',
  winner: 'c1',
  ...over,
});

describe('verdictWords', () => {
  it('says nothing while masked or before the user decided', () => {
    expect(verdictWords(battle({ masked: true, winner: mine }), judge())).toBeNull();
    expect(verdictWords(battle(), judge())).toBeNull();
    // The analysis's winner is not the user's verdict.
    const analysis: WinnerDto = { contestant_id: 'c1', source: 'analysis' };
    expect(verdictWords(battle({ winner: analysis }), judge())).toBeNull();
  });

  it("names the user's winner, and the judge agreeing or not", () => {
    expect(verdictWords(battle({ winner: mine }), judge())).toEqual({
      mine: 'You chose B · debugger@m1.',
      judge: 'The judge agreed.',
    });
    expect(verdictWords(battle({ winner: mine }), judge({ winner: 'c2' }))?.judge).toBe(
      'The judge chose A · explainer@m2.',
    );
    expect(
      verdictWords(battle({ winner: mine }), judge({ outcome: 'walkover', winner: 'c1' }))?.judge,
    ).toBe('The judge agreed.');
  });

  it('words a tie and "all bad", which agree with a judge that saw no clear winner', () => {
    const noClear = judge({ outcome: 'no_clear_winner', winner: null });
    expect(verdictWords(battle({ user_verdict: 'tie' }), noClear)).toEqual({
      mine: 'You called it a tie.',
      judge: 'The judge agreed.',
    });
    expect(verdictWords(battle({ user_verdict: 'all_bad' }), noClear)).toEqual({
      mine: 'You found them all bad.',
      judge: 'The judge agreed.',
    });
    expect(verdictWords(battle({ user_verdict: 'tie' }), judge())?.judge).toBe(
      'The judge chose B · debugger@m1.',
    );
  });

  it('says when the judge saw no clear winner the user did', () => {
    const noClear = judge({ outcome: 'no_clear_winner', winner: null });
    expect(verdictWords(battle({ winner: mine }), noClear)?.judge).toBe(
      'The judge saw no clear winner.',
    );
  });

  it('says when the judge is still at work or gave no verdict', () => {
    const running = judge({ status: 'running', outcome: null, winner: null });
    expect(verdictWords(battle({ winner: mine }), running)?.judge).toBe(
      'The judge is still at work.',
    );
    const failed = judge({ status: 'error', outcome: 'judge_error', winner: null });
    expect(verdictWords(battle({ winner: mine }), failed)?.judge).toBe(
      'The judge gave no verdict.',
    );
    expect(verdictWords(battle({ user_verdict: 'tie' }), null)?.judge).toBe(
      'The judge gave no verdict.',
    );
  });

  it('prefers a chosen winner over a tie, and keeps an unknown id as it is', () => {
    expect(verdictWords(battle({ winner: mine, user_verdict: 'tie' }), null)?.mine).toBe(
      'You chose B · debugger@m1.',
    );
    const gone: WinnerDto = { contestant_id: 'zz', source: 'user' };
    expect(verdictWords(battle({ winner: gone }), null)?.mine).toBe('You chose zz.');
  });

  it('names contestants of an ordinary battle without labels', () => {
    const plain = battle({
      winner: mine,
      contestants: [
        { ...explainer, label: null },
        { ...debugger_, label: null },
      ],
    });
    expect(verdictWords(plain, judge({ winner: 'c2' }))).toEqual({
      mine: 'You chose debugger@m1.',
      judge: 'The judge chose explainer@m2.',
    });
  });
});

function analysis(over: Partial<AnalysisDto> = {}): AnalysisDto {
  return {
    id: '0001',
    battle_id: 'b1',
    status: 'done',
    model: 'judge',
    provider: 'p',
    outcome: 'winner',
    winner: 'c1',
    no_clear_winner: false,
    ranking: [],
    reasons: {},
    digests: [],
    judge_runs: [],
    error: null,
    created_at: '2025-03-01T10:00:00Z',
    finished_at: null,
    cost_usd: null,
    ...over,
  };
}

function progress(over: Partial<AnalysisLive> = {}): AnalysisLive {
  return { status: 'running', outcome: null, winner: null, error: null, stages: {}, ...over };
}

describe('currentJudge', () => {
  it('is null without an analysis', () => {
    expect(currentJudge(null, {})).toBeNull();
  });

  it('takes the stored analysis', () => {
    expect(currentJudge(analysis(), {})).toEqual({
      status: 'done',
      outcome: 'winner',
      winner: 'c1',
    });
  });

  it('takes a newer analysis seen only in events', () => {
    expect(currentJudge(analysis(), { '0002': progress() })).toEqual({
      status: 'running',
      outcome: null,
      winner: null,
    });
  });

  it('takes a finished status from the events over a stored running one', () => {
    const stored = analysis({ status: 'running', outcome: null, winner: null });
    const live = { '0001': progress({ status: 'done', outcome: 'winner', winner: 'c2' }) };
    expect(currentJudge(stored, live)).toEqual({ status: 'done', outcome: 'winner', winner: 'c2' });
  });
});
