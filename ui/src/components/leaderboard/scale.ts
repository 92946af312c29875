// The rating axis of the leaderboard chart: a domain that holds every
// interval and the 1000 baseline, with round tick values.

/** The average player's rating; the chart marks it. */
export const BASELINE = 1000;

export interface Axis {
  min: number;
  max: number;
  ticks: number[];
}

const STEPS = [5, 10, 20, 25, 50, 100, 200, 250, 500, 1000];

/** An axis from `low` to `high` (both widened to include the baseline), about `count` ticks. */
export function ratingAxis(low: number, high: number, count = 6): Axis {
  const lo = Math.min(low, BASELINE);
  const hi = Math.max(high, BASELINE);
  const span = Math.max(hi - lo, 50);
  const step = STEPS.find((s) => span / s <= count) ?? STEPS[STEPS.length - 1] ?? 1000;
  const min = Math.floor(lo / step) * step;
  const max = Math.max(Math.ceil(hi / step) * step, min + step);
  const ticks: number[] = [];
  for (let t = min; t <= max; t += step) {
    ticks.push(t);
  }
  return { min, max, ticks };
}

/** Where `value` falls on a `width`-wide axis. */
export function position(axis: Axis, value: number, width: number): number {
  return ((value - axis.min) / (axis.max - axis.min)) * width;
}
