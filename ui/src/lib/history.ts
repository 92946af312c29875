// The history's rows, as pure functions: how a battle's outcome reads in
// words, and which rows change on their own (so the screen follows their
// events instead of waiting for Refresh).
import type { BattleDto, BattleEventDto } from '../ipc';
import { verdictHeadline } from './verdict';

/** A row's outcome line when no winner is shown: what it says, and whether it is quiet (muted). */
export interface OutcomeLine {
  text: string;
  muted: boolean;
}

/**
 * What a battle's row says when it has no winner to show, worded as the
 * battle's verdict card words the same state (`verdictHeadline`): waiting
 * for the user's vote, running, judging, the judge's outcome, the user's
 * tie, not judged and why. `null` when a winner is shown.
 */
export function outcomeLine(battle: BattleDto): OutcomeLine | null {
  if (battle.winner && !battle.masked) {
    return null;
  }
  return verdictHeadline({
    status: battle.status,
    masked: battle.masked,
    winner: null,
    userVerdict: battle.user_verdict,
    judging: battle.judging,
    finished: battle.contestants.filter((c) => c.status === 'done').length,
  });
}

/** Whether a row can still change by itself: its battle runs, or the judge is at work on it. */
export function changesOnItsOwn(battle: BattleDto): boolean {
  return battle.status === 'running' || battle.judging?.status === 'running';
}

/**
 * Whether an event of a followed battle changes what its row shows
 * (status, winner, judge, reveal; not the streamed text).
 */
export function changesTheRow(event: BattleEventDto): boolean {
  switch (event.type) {
    case 'battle_status':
    case 'contestant_status':
    case 'winner':
    case 'revealed':
    case 'analysis_status':
      return true;
    default:
      return false;
  }
}
