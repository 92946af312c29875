import { describe, expect, it } from 'vitest';
import { canRunAgain, statusWords } from './battle-status';

describe('statusWords', () => {
  it('says how many contestants of a finished battle failed or were cancelled', () => {
    expect(statusWords('done', ['done', 'error'])).toBe('done, 1 failed');
    expect(statusWords('done', ['error', 'done', 'error', 'cancelled'])).toBe(
      'done, 2 failed, 1 cancelled',
    );
  });

  it('is the status alone otherwise', () => {
    expect(statusWords('done', ['done', 'done'])).toBe('done');
    expect(statusWords('running', ['error', 'running'])).toBe('running');
    expect(statusWords('cancelled', ['cancelled', 'done'])).toBe('cancelled');
    expect(statusWords('error', ['error', 'error'])).toBe('error');
  });
});

describe('canRunAgain', () => {
  it('offers a battle that is over and was started on its own', () => {
    expect(canRunAgain({ status: 'done', series_id: null })).toBe(true);
    expect(canRunAgain({ status: 'cancelled', series_id: null })).toBe(true);
    expect(canRunAgain({ status: 'error', series_id: null })).toBe(true);
  });

  it('does not offer a running battle or a run of a series', () => {
    expect(canRunAgain({ status: 'running', series_id: null })).toBe(false);
    expect(canRunAgain({ status: 'done', series_id: 'series-1' })).toBe(false);
  });
});
