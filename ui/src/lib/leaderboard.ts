// The leaderboard's filters and its sentences, as pure functions: what the
// screen asks the engine for, how often the user and the judge agreed, and
// what the length-controlled rating means here. Leaderboard.svelte renders
// these; nothing here touches the DOM or the backend.
import type {
  AgreementDto,
  BattleTypeDto,
  LeaderboardQueryDto,
  SourceDto,
  StandingDto,
} from '../ipc';
import type { Load } from './load';
import { interval, percent } from './series';

/** The leaderboard's filters, as the fields hold them (blank: any). */
export interface LeaderboardFilter {
  /**
   * One battle type; `apart` (the default): each type ranked on its own
   * (a Q&A persona and a Coding agent are not rivals); blank: all mixed.
   */
  battleType: BattleTypeDto | '' | typeof APART;
  seriesId: string;
  /** A project folder. */
  project: string;
  tag: string;
  /** The machine the battles ran on (its name). */
  machine: string;
  /** The user who gave the battles' verdicts (an OS user's name). */
  user: string;
  /** Whose verdicts count. */
  source: SourceDto;
}

/** The type filter's value for "each battle type ranked apart". */
export const APART = 'apart';

export function initialLeaderboardFilter(): LeaderboardFilter {
  return {
    battleType: APART,
    seriesId: '',
    project: '',
    tag: '',
    machine: '',
    user: '',
    source: 'both',
  };
}

/** Whose verdicts may count, in the order the select lists them. */
export const SOURCES: readonly { value: SourceDto; label: string }[] = [
  { value: 'both', label: "Mine and the judge's" },
  { value: 'mine', label: 'Mine' },
  { value: 'judge', label: "The judge's" },
  { value: 'packs', label: 'Task packs (their verifiers)' },
];

/** Blank is `null`. */
function optional(text: string): string | null {
  const t = text.trim();
  return t === '' ? null : t;
}

/** The engine's query for `filter`. */
export function toLeaderboardQuery(filter: LeaderboardFilter): LeaderboardQueryDto {
  return {
    battle_type: filter.battleType === '' || filter.battleType === APART ? null : filter.battleType,
    series_id: optional(filter.seriesId),
    project: optional(filter.project),
    tag: optional(filter.tag),
    machine: optional(filter.machine),
    user: optional(filter.user),
    source: filter.source,
  };
}

/**
 * How often the user and the judge agreed, over the battles both judged:
 * "You and the judge agreed in 7 of 9 battles you both judged (78%, 95%
 * interval 45–94%)."
 */
export function agreementLine(a: AgreementDto): string {
  if (a.both_chose === 0) {
    return "No battle has both your verdict and the judge's yet.";
  }
  const rate = a.rate ?? a.agreed / a.both_chose;
  const ci = a.rate_ci ? `, 95% interval ${interval(a.rate_ci)}` : '';
  const battles = a.both_chose === 1 ? 'battle' : 'battles';
  return `You and the judge agreed in ${String(a.agreed)} of ${String(a.both_chose)} ${battles} you both judged (${percent(rate)}${ci}).`;
}

/** Below this (in log-odds per unit of relative length), length hardly mattered. */
const SMALL_LENGTH_EFFECT = 0.05;

/**
 * What the length-controlled rating is, and how much answer length swayed
 * these verdicts (the fit's length coefficient; `null` when not fitted).
 */
export function lengthNote(coefficient: number | null): string {
  const what =
    'Length-controlled: the rating as it would be if answer length did not sway the verdicts (judges, and people, tend to favour longer answers).';
  if (coefficient === null || !Number.isFinite(coefficient)) {
    return `${what} Not fitted for these battles: some answers' lengths are unknown, or there are too few.`;
  }
  const figure = `length coefficient ${coefficient > 0 ? '+' : ''}${coefficient.toFixed(2)}`;
  if (Math.abs(coefficient) < SMALL_LENGTH_EFFECT) {
    return `${what} Here length barely mattered (${figure}).`;
  }
  return coefficient > 0
    ? `${what} Here longer answers won more often (${figure}).`
    : `${what} Here shorter answers won more often (${figure}).`;
}

/** A length-controlled rating, rounded; `—` when unknown. */
export function ratingLc(s: Pick<StandingDto, 'rating_lc'>): string {
  return s.rating_lc === null || !Number.isFinite(s.rating_lc)
    ? '—'
    : String(Math.round(s.rating_lc));
}


/** What the leaderboard screen shows: the board, and a note at the Project field. */
export interface Shown<T> {
  board: Load<T>;
  projectNote: string | null;
}

/**
 * The screen after an answer to a query made while the Project field held
 * `asked`; it holds `inField` now. When the engine refuses the folder (it
 * does not exist, or is not a folder), the last board stays and the reason
 * is said at the field, so typing a path never replaces the board with an
 * error; any other answer is shown as it is. The note belongs to the text
 * it was asked about: once that was typed over, the field keeps the note
 * it has (a relative path's, or none while the next query is on its way).
 */
export function settle<T>(
  shown: Shown<T>,
  answer: Load<T>,
  asked: string,
  inField: string,
): Shown<T> {
  const current = asked.trim() === inField.trim();
  const note = (said: string | null): string | null => (current ? said : shown.projectNote);
  if (answer.state === 'error' && answer.error.code === 'invalid_input' && asked.trim() !== '') {
    return {
      board: shown.board.state === 'ready' ? shown.board : answer,
      projectNote: note(answer.error.message),
    };
  }
  return { board: answer, projectNote: note(null) };
}

/**
 * Below this many decided battles a row is provisional: its rating is
 * shown greyed, as a first guess.
 */
export const PROVISIONAL_DECIDED = 10;

/** Whether a row is provisional (see {@link PROVISIONAL_DECIDED}). */
export function isProvisional(s: Pick<StandingDto, 'decided'>): boolean {
  return s.decided < PROVISIONAL_DECIDED;
}

/**
 * The length-controlled ratings and the length coefficient show only once
 * the board holds at least this many decided battles: fitted from fewer,
 * a coefficient says more about chance than about length.
 */
export const LENGTH_MIN_BATTLES = 30;

/**
 * How many decided battles the board holds, at least: no row can have
 * been decided in more battles than there are (battles with more than two
 * contestants count in several rows, so the sum would overcount).
 */
export function decidedBattles(standings: readonly Pick<StandingDto, 'decided'>[]): number {
  return standings.reduce((most, s) => Math.max(most, s.decided), 0);
}

/** Whether the board says anything about length (see {@link LENGTH_MIN_BATTLES}). */
export function lengthShown(standings: readonly Pick<StandingDto, 'decided'>[]): boolean {
  return decidedBattles(standings) >= LENGTH_MIN_BATTLES;
}

/** Why the board says nothing about length yet. */
export function lengthWithheld(standings: readonly Pick<StandingDto, 'decided'>[]): string {
  return `Whether answer length swayed the verdicts shows from ${String(LENGTH_MIN_BATTLES)} decided battles on; this board holds ${String(decidedBattles(standings))}.`;
}

/**
 * Each row's rank as the intervals allow it: from 1 + the rows whose whole
 * interval lies above its own, to the rows whose interval reaches its own
 * or above. "1" when the rows around it are clearly apart, "1–3" when
 * their intervals overlap.
 */
export function rankRange(
  standings: readonly Pick<StandingDto, 'rating_low' | 'rating_high'>[],
  i: number,
): string {
  const me = standings[i];
  if (!me) {
    return '—';
  }
  let best = 1;
  let worst = 0;
  for (const other of standings) {
    if (other.rating_low > me.rating_high) {
      best += 1;
    }
    if (other.rating_high >= me.rating_low) {
      worst += 1;
    }
  }
  return best >= worst ? String(best) : `${String(best)}–${String(worst)}`;
}
