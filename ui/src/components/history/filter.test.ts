import { describe, expect, it } from 'vitest';
import { BattleType } from '../../ipc';
import { promptHeadline, toQuery, type HistoryFilter } from './filter';

const all: HistoryFilter = { search: '', battleType: '', status: '' };

describe('toQuery', () => {
  it('asks for a page of every battle without a filter', () => {
    expect(toQuery(all, 0, 100)).toEqual({
      search: null,
      battle_type: null,
      status: null,
      series_id: null,
      limit: 100,
      offset: 0,
    });
  });

  it('passes the search (trimmed) and the filters, and the page', () => {
    expect(
      toQuery({ search: '  rust haiku ', battleType: BattleType.Qa, status: 'error' }, 200, 100),
    ).toMatchObject({
      search: 'rust haiku',
      battle_type: BattleType.Qa,
      status: 'error',
      offset: 200,
    });
    expect(toQuery({ ...all, search: '   ' }, 0, 10).search).toBeNull();
  });
});

describe('promptHeadline', () => {
  it('takes the first line with text, trimmed', () => {
    expect(promptHeadline('\n   \n  Fix the bug  \nin main.rs')).toBe('Fix the bug');
    expect(promptHeadline('')).toBe('');
    expect(promptHeadline(' \n ')).toBe('');
  });

  it('cuts a long line with an ellipsis', () => {
    const headline = promptHeadline('x'.repeat(200));
    expect(headline).toHaveLength(140);
    expect(headline.endsWith('…')).toBe(true);
    expect(promptHeadline('abcdefgh', 5)).toBe('abcd…');
  });
});
