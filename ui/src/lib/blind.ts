// Blind battles, as pure functions: how a contestant is named (a label while
// the battle is masked, the label beside its name after the reveal), whom
// the user may vote for, and tags as typed. The battle view and the history
// render these; the verdict in words comes from the engine (`vote`).
import type { ContestantStatusDto } from '../ipc';

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
