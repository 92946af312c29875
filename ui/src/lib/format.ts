// Small display helpers shared by the screens.

/** `1.2 s`, `2 m 05 s`, `—` for unknown. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) {
    return '—';
  }
  // Each unit is chosen by the value as it will be shown, after rounding.
  if (Math.round(ms) < 1000) {
    return `${String(Math.round(ms))} ms`;
  }
  const tenths = Math.round(ms / 100);
  if (tenths < 600) {
    return `${(tenths / 10).toFixed(1)} s`;
  }
  const s = Math.round(ms / 1000);
  const m = Math.floor(s / 60);
  if (m < 60) {
    return `${String(m)} m ${String(s % 60).padStart(2, '0')} s`;
  }
  return `${String(Math.floor(m / 60))} h ${String(m % 60).padStart(2, '0')} m`;
}

/** `1 file`, `2 files`: a count with its noun (plural by `s`). */
export function plural(n: number, noun: string): string {
  return `${n.toLocaleString()} ${noun}${n === 1 ? '' : 's'}`;
}

/** Tokens per second with one decimal, `—` for unknown. */
export function rate(tps: number | null | undefined): string {
  if (tps === null || tps === undefined || !Number.isFinite(tps)) {
    return '—';
  }
  return tps.toFixed(1);
}

/**
 * A cost in US dollars as the engine's reports say it: cents from a dollar
 * up, three significant digits below, "< $0.0001" below that; "—" unknown.
 */
export function usd(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) {
    return '—';
  }
  if (amount === 0) {
    return '$0';
  }
  if (amount < 0.0001) {
    return '< $0.0001';
  }
  return amount >= 1 ? `$${amount.toFixed(2)}` : `$${amount.toPrecision(3)}`;
}

/** A count, `—` for unknown. */
export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : n.toLocaleString();
}

/** A local date and time from an RFC 3339 string. */
export function when(iso: string | null | undefined): string {
  if (!iso) {
    return '—';
  }
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** `identity@model`, as contestants (and leaderboard entries) are named everywhere. */
export function contestantName(c: { identity: string; model: string }): string {
  return `${c.identity}@${c.model}`;
}

/**
 * `#position identity@model`: a contestant within its battle; in a blind
 * battle (after its reveal) `B · identity@model`, by its label.
 */
export function numberedName(c: {
  position: number;
  identity: string;
  model: string;
  label?: string | null;
}): string {
  return c.label
    ? `${c.label} · ${contestantName(c)}`
    : `#${String(c.position)} ${contestantName(c)}`;
}

/** `text` cut to at most `max` characters, ending in `…` when cut. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Milliseconds between two RFC 3339 instants (the second defaults to now). */
export function elapsedMs(from: string | null, to: string | null, now: number): number | null {
  if (!from) {
    return null;
  }
  const start = Date.parse(from);
  const end = to ? Date.parse(to) : now;
  return Number.isNaN(start) || Number.isNaN(end) ? null : Math.max(0, end - start);
}

/** A path's last part (`/p/Arena/2026-…-qa-x` → `2026-…-qa-x`); the path itself when it has one part. */
export function folderName(path: string): string {
  const parts = path.split(/[\\/]+/).filter((p) => p !== '');
  return parts.at(-1) ?? path;
}
