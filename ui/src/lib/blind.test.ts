import { describe, expect, it } from 'vitest';
import { canVoteFor, contestantName, parseTags, voteKey, type Named } from './blind';

const debugger_: Named = { id: 'c1', label: 'B', identity: 'debugger', model: 'm1' };

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
