import { describe, expect, it } from 'vitest';
import {
  clip,
  contestantName,
  count,
  duration,
  elapsedMs,
  folderName,
  numberedName,
  plural,
  rate,
  usd,
  when,
} from './format';

describe('duration', () => {
  it('shows — for an unknown duration', () => {
    expect(duration(null)).toBe('—');
    expect(duration(undefined)).toBe('—');
    expect(duration(Number.NaN)).toBe('—');
    expect(duration(Number.POSITIVE_INFINITY)).toBe('—');
  });

  it('uses ms, seconds with one decimal, minutes and hours as it grows', () => {
    expect(duration(0)).toBe('0 ms');
    expect(duration(999)).toBe('999 ms');
    expect(duration(1000)).toBe('1.0 s');
    expect(duration(1234)).toBe('1.2 s');
    // The unit follows the value as shown, after rounding.
    expect(duration(999.6)).toBe('1.0 s');
    expect(duration(59_960)).toBe('1 m 00 s');
    expect(duration(59_900)).toBe('59.9 s');
    expect(duration(60_000)).toBe('1 m 00 s');
    expect(duration(125_400)).toBe('2 m 05 s');
    expect(duration(3_599_000)).toBe('59 m 59 s');
    expect(duration(3_600_000)).toBe('1 h 00 m');
    expect(duration(7_260_000)).toBe('2 h 01 m');
  });
});

describe('usd', () => {
  it('shows cents for dollars, two digits for fractions, and a dash for unknown', () => {
    expect(usd(12.345)).toBe('$12.35');
    expect(usd(0.0123)).toBe('$0.0123');
    expect(usd(0.00004)).toBe('< $0.0001');
    expect(usd(0.000123)).toBe('$0.000123');
    expect(usd(0)).toBe('$0');
    expect(usd(null)).toBe('—');
  });
});

describe('rate and count', () => {
  it('shows tokens per second with one decimal', () => {
    expect(rate(42)).toBe('42.0');
    expect(rate(12.345)).toBe('12.3');
    expect(rate(null)).toBe('—');
    expect(rate(Number.NaN)).toBe('—');
  });

  it('shows a count in the local format, — when unknown, and 0 as 0', () => {
    expect(count(0)).toBe('0');
    expect(count(12_345)).toBe((12_345).toLocaleString());
    expect(count(null)).toBe('—');
    expect(count(undefined)).toBe('—');
  });

  it('pluralises by adding s except for one', () => {
    expect(plural(0, 'file')).toBe('0 files');
    expect(plural(1, 'file')).toBe('1 file');
    expect(plural(2, 'file')).toBe('2 files');
  });
});

describe('when', () => {
  it('shows a valid instant in local time and leaves anything else as it is', () => {
    const iso = '2025-03-01T10:00:00Z';
    expect(when(iso)).toBe(new Date(iso).toLocaleString());
    expect(when('yesterday-ish')).toBe('yesterday-ish');
    expect(when(null)).toBe('—');
    expect(when('')).toBe('—');
  });
});

describe('names', () => {
  it('names a contestant identity@model, with its place in the battle', () => {
    const c = { position: 3, identity: 'critic', model: 'llama-swap/qwen3' };
    expect(contestantName(c)).toBe('critic@llama-swap/qwen3');
    expect(numberedName(c)).toBe('#3 critic@llama-swap/qwen3');
  });

  it('names a blind battle\'s contestant by its label instead of its place', () => {
    const c = { position: 1, identity: 'debugger', model: 'm1', label: 'B' };
    expect(numberedName(c)).toBe('B · debugger@m1');
    expect(numberedName({ ...c, label: null })).toBe('#1 debugger@m1');
  });
});

describe('clip', () => {
  it('cuts to at most max characters, ending in … only when cut', () => {
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(clip('abcdef', 4)).toHaveLength(4);
    expect(clip('abcd', 4)).toBe('abcd');
    expect(clip('', 4)).toBe('');
  });
});

describe('elapsedMs', () => {
  const now = Date.parse('2025-03-01T10:01:00Z');

  it('measures to the end, or to now while it runs', () => {
    expect(elapsedMs('2025-03-01T10:00:00Z', '2025-03-01T10:00:02.500Z', now)).toBe(2500);
    expect(elapsedMs('2025-03-01T10:00:00Z', null, now)).toBe(60_000);
  });

  it('is null before the start and for unreadable instants, and never negative', () => {
    expect(elapsedMs(null, null, now)).toBeNull();
    expect(elapsedMs('soon', null, now)).toBeNull();
    expect(elapsedMs('2025-03-01T10:00:00Z', 'later', now)).toBeNull();
    expect(elapsedMs('2025-03-01T10:05:00Z', null, now)).toBe(0);
  });
});

describe('folderName', () => {
  it('keeps the last part of a path', () => {
    expect(folderName('/p/Arena/2026-11-27-qa-x')).toBe('2026-11-27-qa-x');
    expect(folderName('/p/Arena/2026-11-27-qa-x/')).toBe('2026-11-27-qa-x');
    expect(folderName('C:\\p\\Arena\\run')).toBe('run');
    expect(folderName('run')).toBe('run');
  });
});
