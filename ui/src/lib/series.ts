// A series in the launcher and on its screen, as pure functions: what is
// wrong with the series fields, what the launcher sends, and how a series'
// figures read. Nothing here touches the DOM or the backend.
import {
  battleTypeInfo,
  type SeriesContestantDto,
  type SeriesDto,
  type StartSeriesRequest,
} from '../ipc';
import { parseTags } from './blind';
import { contestantName, count, usd } from './format';
import { toRequest, type LauncherForm } from './launcher';

/** The most battles one series may have (runs × prompts). */
export const MAX_SERIES_BATTLES = 10_000;
export const MAX_PARALLEL = 16;
export const MAX_TURNS = 25;

/** The launcher's series fields, as typed (numbers are checked on start). */
export interface SeriesFields {
  /** Start a series rather than one battle. */
  enabled: boolean;
  runs: string;
  /** A prompt-set file; when given, the prompt field is not used. */
  promptSet: string;
  goal: string;
  goalModel: string;
  maxTurns: string;
  /** USD; blank for no budget. */
  budget: string;
  parallel: string;
  untilDecided: boolean;
  analysis: boolean;
  /** Comma-separated; added to the launcher's tags. */
  tags: string;
}

export function initialSeriesFields(): SeriesFields {
  return {
    enabled: false,
    runs: '10',
    promptSet: '',
    goal: '',
    goalModel: '',
    maxTurns: '1',
    budget: '',
    parallel: '1',
    untilDecided: false,
    analysis: true,
    tags: '',
  };
}

/** What is wrong with the series fields; `null` where nothing is. */
export interface SeriesErrors {
  runs: string | null;
  parallel: string | null;
  maxTurns: string | null;
  budget: string | null;
}

/** A whole number in `min..=max` from a field, else `null`. */
function whole(text: string, min: number, max: number): number | null {
  if (!/^\s*\d+\s*$/.test(text)) {
    return null;
  }
  const n = Number(text.trim());
  return n >= min && n <= max ? n : null;
}

export function validateSeries(fields: SeriesFields, form: LauncherForm): SeriesErrors {
  const hasGoal =
    fields.goal.trim() !== '' ||
    fields.promptSet.trim() !== '' ||
    (battleTypeInfo(form.battleType).judged_by_check && form.checkCommand.trim() !== '');
  const turns = whole(fields.maxTurns, 1, MAX_TURNS);
  const budget = fields.budget.trim();
  const budgetValue = Number(budget);
  return {
    runs:
      whole(fields.runs, 1, MAX_SERIES_BATTLES) === null
        ? `Runs must be a whole number from 1 to ${MAX_SERIES_BATTLES.toLocaleString('en')}`
        : null,
    parallel:
      whole(fields.parallel, 1, MAX_PARALLEL) === null
        ? `Battles at once must be from 1 to ${String(MAX_PARALLEL)}`
        : null,
    maxTurns:
      turns === null
        ? `Turns must be from 1 to ${String(MAX_TURNS)}`
        : turns > 1 && !hasGoal
          ? 'More than one turn needs a goal to aim at — write a goal (or, for Coding, a check command)'
          : null,
    budget:
      budget === '' || (Number.isFinite(budgetValue) && budgetValue > 0)
        ? null
        : 'The budget is an amount in USD above 0, e.g. 2.50 — or leave it blank',
  };
}

/** How many problems `errors` lists. */
export function seriesProblemCount(errors: SeriesErrors): number {
  return Object.values(errors).filter((e) => e !== null).length;
}

/** Blank is `null`. */
function optional(text: string): string | null {
  const t = text.trim();
  return t === '' ? null : t;
}

/** The request for a valid launcher form with valid series fields. */
export function toSeriesRequest(form: LauncherForm, fields: SeriesFields): StartSeriesRequest {
  const battle = toRequest(form);
  const budget = optional(fields.budget);
  return {
    ...battle,
    prompt_set: optional(fields.promptSet),
    runs: Number(fields.runs.trim()),
    parallel: Number(fields.parallel.trim()),
    goal: optional(fields.goal),
    goal_model: optional(fields.goalModel),
    confirm_model: null,
    max_turns: Number(fields.maxTurns.trim()),
    budget_usd: budget === null ? null : Number(budget),
    until_decided: fields.untilDecided,
    analysis: fields.analysis,
    // The launcher's tags and the series' own, each battle carries them all.
    tags: parseTags(`${form.tags},${fields.tags}`),
    key: null,
  };
}

// Reading a series.

/** A 0–1 rate as a whole percentage, `—` when there is none. */
export function percent(rate: number | null): string {
  return rate === null ? '—' : `${String(Math.round(rate * 100))}%`;
}

/** A 95% interval as `41–77%`. */
export function interval(ci: readonly [number, number]): string {
  const [low, high] = ci;
  return `${String(Math.round(low * 100))}–${String(Math.round(high * 100))}%`;
}

/** What the series is doing, in a few words. */
export function statusLine(s: SeriesDto): string {
  switch (s.status) {
    case 'running':
      return s.running > 0 ? `running (${String(s.running)} under way)` : 'running';
    case 'done':
      return s.decided_after === null
        ? 'done'
        : `decided after ${String(s.decided_after)} of ${String(s.runs_planned)} battles`;
    case 'budget_reached':
      return 'stopped: budget reached';
    case 'cancelled':
      return 'cancelled';
    case 'error':
      return `stopped: ${s.error ?? 'an error'}`;
  }
}

/**
 * Why a running series' waiting battles run nowhere (team mode: no
 * connected worker can serve it, each machine's reason), as a notice; `null`
 * while some worker can, or once the series has ended.
 */
export function waitingText(s: Pick<SeriesDto, 'status' | 'waiting'>): string | null {
  const why = s.waiting?.trim();
  return s.status === 'running' && why ? `Battles are waiting: ${why}` : null;
}

/**
 * Time left (ms) as the engine estimated it when the series was read
 * (`time_left_ms`: the battles' own pace, the running ones counted from
 * when they started), or `null` before the first battle ends or once the
 * series has.
 */
export function timeLeft(s: SeriesDto): number | null {
  return s.status === 'running' ? s.time_left_ms : null;
}

/**
 * The leader by win rate (then wins), for the headline; `null` without
 * verdicts, and when nobody has won a battle (ties only): a contestant
 * with no win leads nothing.
 */
export function leader(s: SeriesDto): SeriesContestantDto | null {
  const ranked = [...s.contestants]
    .filter((c) => c.win_rate !== null && c.wins > 0)
    .sort((a, b) => (b.win_rate ?? 0) - (a.win_rate ?? 0) || b.wins - a.wins);
  return ranked[0] ?? null;
}

/** A bar of a series chart: a value and its whisker (`null` ends: none). */
export interface IntervalRow {
  name: string;
  value: number | null;
  low: number | null;
  high: number | null;
}

/** The four charts of a series: win rate and pass rate with their 95%
 * intervals, duration p50 to p95, and cost. */
export function seriesCharts(s: SeriesDto): {
  winRate: IntervalRow[];
  passRate: IntervalRow[] | null;
  duration: IntervalRow[];
  cost: IntervalRow[] | null;
} {
  const name = contestantName;
  const hasGoal = s.contestants.some((c) => c.goal_pass_rate !== null);
  const hasCost = s.contestants.some((c) => c.cost_usd !== null && c.cost_usd > 0);
  return {
    winRate: s.contestants.map((c) => ({
      name: name(c),
      value: c.win_rate,
      low: c.win_rate === null ? null : c.win_rate_ci[0],
      high: c.win_rate === null ? null : c.win_rate_ci[1],
    })),
    passRate: hasGoal
      ? s.contestants.map((c) => ({
          name: name(c),
          value: c.goal_pass_rate,
          low: c.goal_pass_rate === null ? null : c.goal_pass_rate_ci[0],
          high: c.goal_pass_rate === null ? null : c.goal_pass_rate_ci[1],
        }))
      : null,
    duration: s.contestants.map((c) => ({
      name: name(c),
      value: c.duration_ms_p50,
      low: c.duration_ms_p50,
      high: c.duration_ms_p95,
    })),
    cost: hasCost
      ? s.contestants.map((c) => ({ name: name(c), value: c.cost_usd, low: null, high: null }))
      : null,
  };
}

/**
 * What a series spent, as its progress line says it: the known costs'
 * sum (kept while other costs are unknown: a cloud model without a price
 * once made the whole amount "—"), and what is missing from it — how many
 * runs ended without a known cost, and the models among them that have no
 * price (for "set a price").
 */
export function spentView(s: Pick<SeriesDto, 'spent_known_usd' | 'unknown_costs' | 'unpriced'>): {
  amount: string;
  missing: string | null;
  unpriced: string[];
} {
  const n = s.unknown_costs;
  if (n === 0) {
    return { amount: usd(s.spent_known_usd), missing: null, unpriced: [] };
  }
  const runs = n === 1 ? '1 run' : `${count(n)} runs`;
  const why =
    s.unpriced.length > 0
      ? `no price for ${s.unpriced.join(', ')}`
      : 'their servers reported no cost';
  return {
    amount: usd(s.spent_known_usd),
    missing: `not counted: ${runs} without a known cost (${why})`,
    unpriced: s.unpriced,
  };
}

/**
 * The headline of an ended series nobody leads (every decided battle a
 * tie): says so with the count, and how little so few battles tell (the
 * widest 95% interval any contestant's win rate still has); `null` while
 * it runs, when someone leads, or when no battle was decided.
 */
export function noLeaderLine(s: SeriesDto): string | null {
  if (s.status === 'running' || leader(s) !== null) {
    return null;
  }
  const decided = Math.max(0, ...s.contestants.map((c) => c.decided));
  if (decided === 0) {
    return null;
  }
  const ties = Math.max(0, ...s.contestants.map((c) => c.ties));
  const high = Math.max(0, ...s.contestants.map((c) => c.win_rate_ci[1]));
  const battles = decided === 1 ? '1 decided battle' : `${count(decided)} decided battles`;
  const tied = ties === 1 ? '1 tie' : `${count(ties)} ties`;
  return `No leader yet: ${tied} in ${battles}, no contestant has won one. So few battles say little: any contestant's win rate could still be ${interval([0, high])} (95% interval).`;
}
