// Which battles the history shows: a text search over the prompt and the
// contestants, and filters by type and status. Pure, so the screen stays thin.
import type { BattleDto, BattleStatusDto, BattleTypeDto } from '../../ipc';
import { clip, contestantName } from '../../lib/format';

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

function haystack(battle: BattleDto): string {
  const contestants = battle.contestants.map((c) => `${contestantName(c)} ${c.provider}`);
  return [battle.prompt, ...contestants].join('\n').toLowerCase();
}

/** The battles matching `filter`, newest first. */
export function filterBattles(battles: readonly BattleDto[], filter: HistoryFilter): BattleDto[] {
  const words = filter.search.toLowerCase().split(/\s+/).filter(Boolean);
  const matches = (b: BattleDto): boolean => {
    if (words.length === 0) {
      return true;
    }
    const text = haystack(b);
    return words.every((w) => text.includes(w));
  };
  return battles
    .filter(
      (b) =>
        (filter.battleType === '' || b.battle_type === filter.battleType) &&
        (filter.status === '' || b.status === filter.status) &&
        matches(b),
    )
    .sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at));
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
