// How the Settings screen says where Arena keeps its data (`arena status`).
import type { DatabaseDto } from '../ipc';

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
