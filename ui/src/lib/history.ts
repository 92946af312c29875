// The history's rows, as pure functions: how a battle's outcome reads in
// words, and which rows change on their own (so the screen follows their
// events instead of waiting for Refresh).
import type { BattleDto, BattleEventDto } from '../ipc';

/** A row's outcome line when no winner is shown: what it says, and whether it is quiet (muted). */
export interface OutcomeLine {
  text: string;
  muted: boolean;
}

/**
 * What a battle's row says when it has no winner to show: waiting for the
 * user's vote, running, judging, the judge's outcome in words, the user's
 * tie, or that no winner was chosen. `null` when a winner is shown.
 */
export function outcomeLine(battle: BattleDto): OutcomeLine | null {
  if (battle.masked) {
    return { text: 'Waiting for your vote', muted: true };
  }
  if (battle.winner) {
    return null;
  }
  if (battle.user_verdict === 'tie') {
    return { text: 'A tie, you said', muted: false };
  }
  if (battle.user_verdict === 'all_bad') {
    return { text: 'All bad, you said', muted: false };
  }
  if (battle.status === 'running') {
    return { text: 'Running…', muted: true };
  }
  const judging = battle.judging;
  if (judging?.status === 'running') {
    return { text: 'Judging…', muted: true };
  }
  if (judging?.status === 'error') {
    return { text: 'The judge failed; open the battle to judge it again', muted: false };
  }
  switch (judging?.outcome) {
    case 'no_clear_winner':
      return { text: 'No clear winner: the judge’s two runs disagreed', muted: false };
    case 'judge_error':
      return { text: 'The judge gave no usable verdict', muted: false };
    case 'walkover':
      return { text: 'Nothing finished to judge', muted: false };
    default:
      break;
  }
  if (battle.status === 'cancelled') {
    return { text: 'Cancelled before a winner was chosen', muted: true };
  }
  if (battle.status === 'error') {
    return { text: 'Ended in an error, no winner', muted: true };
  }
  return { text: 'No winner chosen yet', muted: true };
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
