import { describe, expect, it } from 'vitest';
import { BASELINE, position, ratingAxis } from './scale';

describe('ratingAxis', () => {
  it('picks a round step that gives about the asked number of ticks', () => {
    expect(ratingAxis(900, 1150)).toEqual({
      min: 900,
      max: 1150,
      ticks: [900, 950, 1000, 1050, 1100, 1150],
    });
    expect(ratingAxis(1013, 1077)).toEqual({
      min: 1000,
      max: 1080,
      ticks: [1000, 1020, 1040, 1060, 1080],
    });
  });

  it('always includes the baseline, however far the ratings are from it', () => {
    const above = ratingAxis(1400, 1600);
    expect(above.min).toBeLessThanOrEqual(BASELINE);
    expect(above.max).toBeGreaterThanOrEqual(1600);
    const below = ratingAxis(700, 800);
    expect(below.min).toBeLessThanOrEqual(700);
    expect(below.max).toBeGreaterThanOrEqual(BASELINE);
  });

  it('rounds outwards to whole steps, with evenly spaced ticks from min to max', () => {
    for (const [low, high] of [
      [987, 1003],
      [612.5, 1388.2],
      [1000, 1000],
      [-300, 2900],
      [995, 1005],
    ] as const) {
      const axis = ratingAxis(low, high);
      expect(axis.min).toBeLessThanOrEqual(Math.min(low, BASELINE));
      expect(axis.max).toBeGreaterThanOrEqual(Math.max(high, BASELINE));
      expect(axis.ticks[0]).toBe(axis.min);
      expect(axis.ticks.at(-1)).toBe(axis.max);
      expect(axis.ticks).toContain(BASELINE);
      const steps = new Set(axis.ticks.slice(1).map((t, i) => t - (axis.ticks[i] ?? 0)));
      expect(steps.size).toBe(1);
      expect(axis.ticks.length).toBeGreaterThanOrEqual(2);
      expect(axis.ticks.length).toBeLessThanOrEqual(7);
    }
  });

  it('spans at least 50 points when every rating is at the baseline', () => {
    const axis = ratingAxis(1000, 1000);
    expect(axis.max).toBeGreaterThan(axis.min);
    expect(axis.ticks).toEqual([1000, 1010]);
  });

  it('takes the smallest step that needs no more than the asked number of intervals', () => {
    expect(ratingAxis(900, 1100, 2).ticks).toEqual([900, 1000, 1100]);
    expect(ratingAxis(900, 1100, 4).ticks).toEqual([900, 950, 1000, 1050, 1100]);
    expect(ratingAxis(900, 1100, 10).ticks).toHaveLength(11);
  });
});

describe('position', () => {
  it('maps the axis linearly onto the width', () => {
    const axis = ratingAxis(900, 1150);
    expect(position(axis, 900, 500)).toBe(0);
    expect(position(axis, 1150, 500)).toBe(500);
    expect(position(axis, 1025, 500)).toBe(250);
    expect(position(axis, 850, 500)).toBe(-100);
  });
});
