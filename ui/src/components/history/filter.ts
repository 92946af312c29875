// Which battles the history shows: a text search over the prompt and the
// contestants, and filters by type and status, as the engine's query (it
// searches the database). Pure, so the screen stays thin.
import type { BattleQueryDto, BattleStatusDto, BattleTypeDto } from '../../ipc';
import { clip } from '../../lib/format';

export interface HistoryFilter {
  /** Words that must all appear in the prompt or a contestant's identity, model or provider. */
  search: string;
  battleType: BattleTypeDto | '';
  status: BattleStatusDto | '';
}

export const BATTLE_STATUSES: readonly BattleStatusDto[] = [
  'running',
  'done',
  'error',
  'cancelled',
];

/**
 * The engine's query for `filter`: the search and filters run in the
 * database, a page at a time.
 */
export function toQuery(filter: HistoryFilter, offset: number, limit: number): BattleQueryDto {
  const search = filter.search.trim();
  return {
    search: search === '' ? null : search,
    battle_type: filter.battleType === '' ? null : filter.battleType,
    status: filter.status === '' ? null : filter.status,
    series_id: null,
    limit,
    offset,
  };
}

/** The first non-empty line of a prompt, cut to `max` characters. */
export function promptHeadline(prompt: string, max = 140): string {
  const line =
    prompt
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? '';
  return clip(line, max);
}
