// How the Settings screen says where Arena keeps its data and who is at
// work on it (`arena status`), and the worker switch's number of places.
import type { DatabaseDto, LaneUseDto, StatusDto, WorkerDto } from '../ipc';

/** The engine's name for a team's database (`DatabaseDto.backend`). */
const POSTGRESQL = 'postgresql';

/** `3 ms`, `< 1 ms` for a round trip under half a millisecond. */
export function roundTrip(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) {
    return '— ms';
  }
  if (ms < 0.5) {
    return '< 1 ms';
  }
  return `${Math.round(ms).toLocaleString('en-US')} ms`;
}

/** Whether the data lives in a team's database rather than this machine's own. */
export function isTeamDatabase(db: DatabaseDto): boolean {
  return db.backend === POSTGRESQL;
}

/**
 * The database in one sentence, in three parts so the location can be shown
 * as code: `lead` + " at " + `location` + `details`.
 */
export interface DatabaseParts {
  lead: string;
  location: string;
  details: string;
}

/** {@link databaseText} in parts. */
export function databaseParts(db: DatabaseDto): DatabaseParts {
  if (isTeamDatabase(db)) {
    return {
      lead: `Team database: PostgreSQL ${db.server_version}`,
      location: db.location,
      details: ` · schema ${String(db.schema)} · answered in ${roundTrip(db.round_trip_ms)}`,
    };
  }
  return {
    lead: `This machine's own database (SQLite ${db.server_version})`,
    location: db.location,
    details: '',
  };
}

/**
 * The database in one sentence: "This machine's own database (SQLite 3.46.0)
 * at /home/me/.local/share/arena/arena.db", or "Team database: PostgreSQL 16.4
 * at postgres://arena@db/arena · schema 3 · answered in 4 ms".
 */
export function databaseText(db: DatabaseDto): string {
  const { lead, location, details } = databaseParts(db);
  return `${lead} at ${location}${details}`;
}

/** "This machine: NAME". */
export function machineText(machine: string): string {
  return `This machine: ${machine}`;
}

/** `1 place`, `3 places`. */
function places(n: number): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? 'place' : 'places'}`;
}

/** "At work: alice-laptop, gpu-box", or `null` when no machine is. */
export function machinesText(machines: readonly string[]): string | null {
  return machines.length > 0 ? `At work: ${machines.join(', ')}` : null;
}

/** "2 of 4 places" a worker holds of those it runs at once at most. */
export function placesText(taken: number, most: number): string {
  return `${taken.toLocaleString('en-US')} of ${places(most)}`;
}

/** "seen 3 s ago" (whole seconds, as `arena status`), "seen just now" under one. */
export function seenText(ms: number): string {
  if (!Number.isFinite(ms) || ms < 1000) {
    return 'seen just now';
  }
  return `seen ${Math.floor(ms / 1000).toLocaleString('en-US')} s ago`;
}

/** A worker's role as a person reads it: `worker`, or `series driver`. */
export function roleText(role: string): string {
  return role === 'series' ? 'series driver' : role;
}

/** "gpu-box (worker, pid 4242): 2 of 4 places, seen 3 s ago". */
export function workerText(w: WorkerDto): string {
  const who = w.user ? `, ${w.user}` : '';
  return (
    `${w.machine} (${roleText(w.role)}, pid ${String(w.pid)}${who}): ` +
    `${placesText(w.taken, w.places)}, ${seenText(w.seen_ms_ago)}`
  );
}

/** "llama-swap on gpu-box: 1 running, 2 waiting" (no waiting part when none wait). */
export function laneText(l: LaneUseDto): string {
  const waiting = l.waiting > 0 ? `, ${l.waiting.toLocaleString('en-US')} waiting` : '';
  return `${l.lane} on ${l.machine}: ${l.held.toLocaleString('en-US')} running${waiting}`;
}

/** Whether nobody is at work on the database: no machine, worker or lane in use. */
export function isIdle(s: Pick<StatusDto, 'machines' | 'workers' | 'lanes'>): boolean {
  return s.machines.length === 0 && s.workers.length === 0 && s.lanes.length === 0;
}

/** The places the worker switch allows at once (the app refuses others). */
export const WORKER_PLACES = { min: 1, max: 16, default: 2 } as const;

/**
 * What is wrong with a number of places for the worker switch (a whole
 * number from 1 to 16), or `null` when it will do.
 */
export function placesProblem(n: number): string | null {
  if (!Number.isInteger(n) || n < WORKER_PLACES.min || n > WORKER_PLACES.max) {
    return `Places: a whole number from ${String(WORKER_PLACES.min)} to ${String(WORKER_PLACES.max)}.`;
  }
  return null;
}
