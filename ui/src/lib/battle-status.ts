// A battle's status in words, as its header and its History row say it:
// a finished battle that lost contestants on the way says how many
// ("done, 1 failed"), not just "done".
import type { BattleStatusDto, ContestantStatusDto } from '../ipc';

/**
 * `done, 1 failed`, `done, 2 failed, 1 cancelled`, or the status alone
 * (`running`, `cancelled`, `error`, and `done` when every contestant finished).
 */
export function statusWords(
  status: BattleStatusDto,
  contestants: readonly ContestantStatusDto[],
): string {
  if (status !== 'done') {
    return status;
  }
  const failed = contestants.filter((s) => s === 'error').length;
  const cancelled = contestants.filter((s) => s === 'cancelled').length;
  const words: string[] = ['done'];
  if (failed > 0) {
    words.push(`${String(failed)} failed`);
  }
  if (cancelled > 0) {
    words.push(`${String(cancelled)} cancelled`);
  }
  return words.join(', ');
}

/** Whether Run again and Edit & rerun are offered: it is over, and not a run of a series. */
export function canRunAgain(battle: { status: BattleStatusDto; series_id: string | null }): boolean {
  return battle.status !== 'running' && battle.series_id === null;
}
