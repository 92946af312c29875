// Battle types and agents are named in one place: the generated modules in
// ./bindings/ (from the engine's `BattleType` and `Agent`). Everywhere else
// asks a battle type what it answers (`battleTypeInfo(t).has_worktrees`) or
// uses the named constants (`BattleType.Coding`, `Agent.Native`), so a new
// battle type or agent cannot be silently treated as an old one.
import { describe, expect, it } from 'vitest';
import { AGENTS } from './bindings/agents';
import { BATTLE_TYPES } from './bindings/battleTypes';

/** Every source file of the UI outside ./bindings/, as text, by path. */
const sources = import.meta.glob<string>(['../**/*.ts', '../**/*.svelte', '!./bindings/**'], {
  query: '?raw',
  import: 'default',
  eager: true,
});

/** The string literals of `text` ('…', "…" and `…` without placeholders). */
function literals(text: string): string[] {
  return [...text.matchAll(/'([^'\n]*)'|"([^"\n]*)"|`([^`$]*)`/g)].map(
    (m) => m[1] ?? m[2] ?? m[3] ?? '',
  );
}

describe('names of battle types and agents', () => {
  const names = new Set<string>([...BATTLE_TYPES.map((t) => t.id), ...AGENTS]);

  it('are read from the generated bindings', () => {
    expect(Object.keys(sources).length).toBeGreaterThan(20);
    expect(Object.keys(sources).some((path) => path.includes('/bindings/'))).toBe(false);
    expect(names.size).toBe(BATTLE_TYPES.length + AGENTS.length);
  });

  it('are never spelled as string literals outside them', () => {
    const spelled = Object.entries(sources).flatMap(([path, text]) =>
      literals(text)
        .filter((literal) => names.has(literal))
        .map((literal) => `${path}: '${literal}'`),
    );
    expect(spelled).toEqual([]);
  });

  it('would be caught if they were', () => {
    expect(literals(`if (t === 'x') { f("y", \`z\`) }`)).toEqual(['x', 'y', 'z']);
  });
});
