// Where a battle ran and who started and judged it (team mode shares one
// database among machines and people), as pure functions: the history row's
// small line and the battle view's facts. History.svelte, HistoryRow.svelte
// and BattleHeader.svelte render these; nothing here touches the DOM.
import type { BattleDto } from '../ipc';

type Origin = Pick<BattleDto, 'machine' | 'user_name' | 'voted_by'>;

/** Which of a page's origins its rows name: only what tells them apart. */
export interface OriginsShown {
  /** The page holds battles of more than one machine. */
  machines: boolean;
  /** ...of more than one user (who started them, or gave their verdicts). */
  users: boolean;
}

/**
 * What the history's rows say of their origins: the machine only when the
 * page holds battles of more than one machine, the users only when more
 * than one user appears; a single machine's single user sees neither.
 * Battles from before these were recorded (`null`) tell nothing apart.
 */
export function originsShown(battles: readonly Origin[]): OriginsShown {
  const machines = new Set<string>();
  const users = new Set<string>();
  for (const b of battles) {
    if (b.machine !== null) {
      machines.add(b.machine);
    }
    for (const user of [b.user_name, b.voted_by]) {
      if (user !== null) {
        users.add(user);
      }
    }
  }
  return { machines: machines.size > 1, users: users.size > 1 };
}

/**
 * A history row's small line, "on alpha · by alice" (and "· verdict by
 * bob" when another gave it), as `shown` allows; unknown (older) ones say
 * so. `null` when nothing is to be shown.
 */
export function originLine(battle: Origin, shown: OriginsShown): string | null {
  const parts: string[] = [];
  if (shown.machines) {
    parts.push(battle.machine === null ? 'on an unknown machine' : `on ${battle.machine}`);
  }
  if (shown.users) {
    parts.push(battle.user_name === null ? 'by an unknown user' : `by ${battle.user_name}`);
    if (battle.voted_by !== null && battle.voted_by !== battle.user_name) {
      parts.push(`verdict by ${battle.voted_by}`);
    }
  }
  return parts.length === 0 ? null : parts.join(' · ');
}

/** One of the battle view's facts: its label and value. */
export interface Fact {
  label: string;
  value: string;
}

/**
 * The battle view's facts of its origin: the machine it ran on (always;
 * "unknown" for battles from before it was recorded), who started it (when
 * known), and who gave its verdict (once someone has).
 */
export function originFacts(battle: Origin): Fact[] {
  const facts: Fact[] = [{ label: 'Ran on', value: battle.machine ?? 'unknown' }];
  if (battle.user_name !== null) {
    facts.push({ label: 'Started by', value: battle.user_name });
  }
  if (battle.voted_by !== null) {
    facts.push({ label: 'Verdict by', value: battle.voted_by });
  }
  return facts;
}
