// Blind battles, as pure functions: how a contestant is named (a label while
// the battle is masked, the label beside its name after the reveal), whom
// the user may vote for, the user's verdict in words with the judge's beside
// it, and tags as typed. The battle view and the history render these.
import type {
  AnalysisDto,
  AnalysisStatusDto,
  ContestantStatusDto,
  OutcomeDto,
  UserVerdictDto,
  WinnerDto,
} from '../ipc';
import { newestStatus, type AnalysisLive } from './battle.svelte';

/** What naming a contestant needs of it. */
export interface Named {
  id: string;
  /** A blind battle's letter (A, B, …), kept after the reveal. */
  label: string | null;
  /** The label itself while the battle is masked. */
  identity: string;
  /** Empty while the battle is masked. */
  model: string;
}

/**
 * A contestant's name in its battle: `Contestant A` while the battle is
 * masked (nothing else is known then), `B · debugger@qwen3` after a blind
 * battle's reveal, `debugger@qwen3` in a battle that was never blind.
 */
export function contestantName(battle: { masked: boolean }, c: Named): string {
  if (battle.masked) {
    return `Contestant ${voteKey(c)}`;
  }
  const name = `${c.identity}@${c.model}`;
  return c.label ? `${c.label} · ${name}` : name;
}

/** What a vote names a contestant by: its label (the masked identity is the label too). */
export function voteKey(c: { label: string | null; identity: string }): string {
  return c.label ?? c.identity;
}

/**
 * Whether the user may vote for a contestant: it has answered something,
 * so it is running or done (a vote may come before all have finished).
 */
export function canVoteFor(c: { status: ContestantStatusDto }): boolean {
  return c.status === 'running' || c.status === 'done';
}

/**
 * Tags as typed, comma-separated: trimmed, blanks dropped, and a tag given
 * again (ignoring case) dropped, in the order given — as the engine stores them.
 */
export function parseTags(text: string): string[] {
  const tags: string[] = [];
  const seen = new Set<string>();
  for (const part of text.split(',')) {
    const tag = part.trim();
    const key = tag.toLowerCase();
    if (tag !== '' && !seen.has(key)) {
      seen.add(key);
      tags.push(tag);
    }
  }
  return tags;
}

/** What the verdict banner needs of the judge's newest analysis. */
export interface JudgeView {
  status: AnalysisStatusDto;
  outcome: OutcomeDto | null;
  /** The contestant id it named, if any. */
  winner: string | null;
}

/**
 * The judge's newest analysis from the snapshot and the events together
 * (the events may be ahead: a finished status seen in them wins); `null`
 * when there is none.
 */
export function currentJudge(
  stored: AnalysisDto | null,
  live: Record<string, AnalysisLive>,
): JudgeView | null {
  // Analysis ids are time-ordered (UUID v7): the greatest is the newest.
  const currentId = [...Object.keys(live), ...(stored ? [stored.id] : [])].sort().at(-1);
  if (currentId === undefined) {
    return null;
  }
  const record = stored && stored.id === currentId ? stored : undefined;
  const progress = live[currentId];
  const status = newestStatus(record?.status, progress?.status);
  const latest = record?.status === status ? record : (progress ?? record);
  if (status === undefined || latest === undefined) {
    return null;
  }
  return { status, outcome: latest.outcome, winner: latest.winner };
}

/** The user's verdict and the judge's, each as a sentence. */
export interface VerdictWords {
  mine: string;
  judge: string;
}

/** What the verdict words need of a battle. */
export interface Decided {
  masked: boolean;
  /** The winner shown (a user's choice has `source: "user"`). */
  winner: WinnerDto | null;
  user_verdict: UserVerdictDto | null;
  contestants: readonly Named[];
}

/**
 * The user's verdict in words, with the judge's beside it: "You chose
 * B · debugger@m1." and "The judge agreed." `null` while the battle is
 * masked or the user has not decided.
 */
export function verdictWords(battle: Decided, judge: JudgeView | null): VerdictWords | null {
  if (battle.masked) {
    return null;
  }
  const name = (id: string): string => {
    const c = battle.contestants.find((x) => x.id === id);
    return c ? contestantName(battle, c) : id;
  };
  const chosen = battle.winner?.source === 'user' ? battle.winner.contestant_id : null;
  let mine: string;
  if (chosen !== null) {
    mine = `You chose ${name(chosen)}.`;
  } else if (battle.user_verdict === 'tie') {
    mine = 'You called it a tie.';
  } else if (battle.user_verdict === 'all_bad') {
    mine = 'You found them all bad.';
  } else {
    return null;
  }
  return { mine, judge: judgeWords(chosen, judge, name) };
}

function judgeWords(
  chosen: string | null,
  judge: JudgeView | null,
  name: (id: string) => string,
): string {
  if (judge === null) {
    return 'The judge gave no verdict.';
  }
  const { outcome, winner } = judge;
  if ((outcome === 'winner' || outcome === 'walkover') && winner !== null) {
    return chosen === winner ? 'The judge agreed.' : `The judge chose ${name(winner)}.`;
  }
  if (outcome === 'no_clear_winner') {
    // A tie or "all bad" names no winner either.
    return chosen === null ? 'The judge agreed.' : 'The judge saw no clear winner.';
  }
  if (judge.status === 'running') {
    return 'The judge is still at work.';
  }
  return 'The judge gave no verdict.';
}
