import { describe, expect, it } from 'vitest';
import { BattleType, toIpcError } from '../ipc';
import type { Load } from './load';
import {
  agreementLine,
  APART,
  initialLeaderboardFilter,
  isProvisional,
  LENGTH_MIN_BATTLES,
  lengthNote,
  lengthShown,
  lengthWithheld,
  PROVISIONAL_DECIDED,
  rankRange,
  ratingLc,
  settle,
  type Shown,
  SOURCES,
  toLeaderboardQuery,
} from './leaderboard';

describe('toLeaderboardQuery', () => {
  it('asks for everything, both sources, by default', () => {
    expect(toLeaderboardQuery(initialLeaderboardFilter())).toEqual({
      battle_type: null,
      series_id: null,
      project: null,
      tag: null,
      machine: null,
      user: null,
      source: 'both',
    });
  });

  it('sends the filters trimmed, blanks as none', () => {
    expect(
      toLeaderboardQuery({
        battleType: BattleType.Coding,
        seriesId: 'abcd1234',
        project: ' /srv/repo ',
        tag: ' rust ',
        machine: ' alpha ',
        user: 'alice',
        source: 'mine',
      }),
    ).toEqual({
      battle_type: BattleType.Coding,
      series_id: 'abcd1234',
      project: '/srv/repo',
      tag: 'rust',
      machine: 'alpha',
      user: 'alice',
      source: 'mine',
    });
    expect(toLeaderboardQuery({ ...initialLeaderboardFilter(), tag: '   ' }).tag).toBeNull();
    expect(toLeaderboardQuery({ ...initialLeaderboardFilter(), machine: ' ' }).machine).toBeNull();
    expect(toLeaderboardQuery({ ...initialLeaderboardFilter(), user: '' }).user).toBeNull();
  });

  it('lists both, mine, the judge and the task packs', () => {
    expect(SOURCES.map((s) => [s.value, s.label])).toEqual([
      ['both', "Mine and the judge's"],
      ['mine', 'Mine'],
      ['judge', "The judge's"],
      ['packs', 'Task packs (their verifiers)'],
    ]);
  });
});

describe('agreementLine', () => {
  it('says how often the user and the judge agreed, with the interval', () => {
    expect(agreementLine({ both_chose: 9, agreed: 7, rate: 7 / 9, rate_ci: [0.453, 0.937] })).toBe(
      'You and the judge agreed in 7 of 9 battles you both judged (78%, 95% interval 45–94%).',
    );
    expect(agreementLine({ both_chose: 1, agreed: 0, rate: 0, rate_ci: null })).toBe(
      'You and the judge agreed in 0 of 1 battle you both judged (0%).',
    );
  });

  it('says when no battle has both verdicts', () => {
    expect(agreementLine({ both_chose: 0, agreed: 0, rate: null, rate_ci: null })).toBe(
      "No battle has both your verdict and the judge's yet.",
    );
  });
});

describe('length control', () => {
  it('rounds the length-controlled rating, — when unknown', () => {
    expect(ratingLc({ rating_lc: 1012.6 })).toBe('1013');
    expect(ratingLc({ rating_lc: null })).toBe('—');
  });

  it('explains it, and which way length swayed the verdicts', () => {
    expect(lengthNote(0.42)).toMatch(/^Length-controlled: .*longer answers won more often/);
    expect(lengthNote(0.42)).toMatch(/\(length coefficient \+0\.42\)\.$/);
    expect(lengthNote(-0.31)).toMatch(/shorter answers won more often/);
    expect(lengthNote(-0.31)).toMatch(/\(length coefficient -0\.31\)\.$/);
    expect(lengthNote(0.01)).toMatch(/length barely mattered/);
    expect(lengthNote(null)).toMatch(/^Length-controlled: .*Not fitted/);
  });
});

describe('the Project filter while typing', () => {
  const ready: Load<string> = { state: 'ready', value: 'last board' };
  const shown: Shown<string> = { board: ready, projectNote: null };
  const failed = (code: string, message: string): Load<string> => ({
    state: 'error',
    error: toIpcError({ code, message }),
  });
  const refused = failed('invalid_input', 'project folder /srv/re does not exist');

  it('keeps the last board when the folder is refused, and says why at the field', () => {
    expect(settle(shown, refused, '/srv/re', '/srv/re')).toEqual({
      board: ready,
      projectNote: 'project folder /srv/re does not exist',
    });
  });

  it('shows the refusal when there is no board yet', () => {
    const loading: Shown<string> = { board: { state: 'loading' }, projectNote: null };
    expect(settle(loading, refused, '/srv/re', '/srv/re').board).toBe(refused);
  });

  it('shows a new board and clears the note once the folder is good', () => {
    const next: Load<string> = { state: 'ready', value: 'filtered board' };
    const noted: Shown<string> = { board: ready, projectNote: 'project folder /srv/re does not exist' };
    expect(settle(noted, next, '/srv/repo', '/srv/repo')).toEqual({ board: next, projectNote: null });
  });

  it('shows other failures as they are', () => {
    const broken = failed('store', 'database is locked');
    expect(settle(shown, broken, '/srv/repo', '/srv/repo')).toEqual({
      board: broken,
      projectNote: null,
    });
    // Without a Project filter, invalid input is not the field's.
    expect(settle(shown, refused, '', '')).toEqual({ board: refused, projectNote: null });
  });

  it('leaves the note of text typed since the query alone', () => {
    // Asked with the field blank; a relative path was typed before the answer.
    const relative: Shown<string> = { board: ready, projectNote: 'Give the folder’s full path.' };
    const next: Load<string> = { state: 'ready', value: 'unfiltered board' };
    expect(settle(relative, next, '', 'projects/arena')).toEqual({
      board: next,
      projectNote: 'Give the folder’s full path.',
    });
    // A refusal of a folder since typed over does not show either.
    expect(settle(shown, refused, '/srv/re', '/srv/repo')).toEqual({ board: ready, projectNote: null });
  });
});

describe('honest ranks', () => {
  const row = (low: number, high: number, decided = 20) => ({
    rating_low: low,
    rating_high: high,
    decided,
  });

  it('gives a range where intervals overlap, one number where they are apart', () => {
    const board = [row(1100, 1300), row(1000, 1150), row(700, 900)];
    expect(rankRange(board, 0)).toBe('1–2');
    expect(rankRange(board, 1)).toBe('1–2');
    expect(rankRange(board, 2)).toBe('3');
    const apart = [row(1200, 1300), row(1000, 1100)];
    expect(rankRange(apart, 0)).toBe('1');
    expect(rankRange(apart, 1)).toBe('2');
    // Every interval overlaps: nobody is firmly first.
    const all = [row(900, 1200), row(850, 1150), row(800, 1100)];
    expect(all.map((_, i) => rankRange(all, i))).toEqual(['1–3', '1–3', '1–3']);
  });

  it('greys rows with few decided battles and withholds length until the data supports it', () => {
    expect(isProvisional({ decided: PROVISIONAL_DECIDED - 1 })).toBe(true);
    expect(isProvisional({ decided: PROVISIONAL_DECIDED })).toBe(false);
    const five = [row(0, 1, 5), row(0, 1, 5)];
    expect(lengthShown(five)).toBe(false);
    expect(lengthWithheld(five)).toBe(
      `Whether answer length swayed the verdicts shows from ${String(LENGTH_MIN_BATTLES)} decided battles on; this board holds 5.`,
    );
    expect(lengthShown([row(0, 1, LENGTH_MIN_BATTLES), row(0, 1, 3)])).toBe(true);
  });

  it('ranks Q&A and Coding apart by default', () => {
    expect(initialLeaderboardFilter().battleType).toBe(APART);
    expect(toLeaderboardQuery(initialLeaderboardFilter()).battle_type).toBeNull();
  });
});
