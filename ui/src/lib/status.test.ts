import { describe, expect, it } from 'vitest';
import type { DatabaseDto } from '../ipc';
import { databaseParts, databaseText, isTeamDatabase, machineText, roundTrip } from './status';

const sqlite: DatabaseDto = {
  backend: 'sqlite',
  location: '/home/me/.local/share/arena/arena.db',
  schema: 7,
  server_version: '3.46.0',
  round_trip_ms: 0.02,
};

const postgres: DatabaseDto = {
  backend: 'postgresql',
  location: 'postgres://arena@db.example:5432/arena',
  schema: 3,
  server_version: '16.4',
  round_trip_ms: 3.6,
};

describe('databaseText', () => {
  it("names this machine's own SQLite file", () => {
    expect(databaseText(sqlite)).toBe(
      "This machine's own database (SQLite 3.46.0) at /home/me/.local/share/arena/arena.db",
    );
    expect(isTeamDatabase(sqlite)).toBe(false);
  });

  it("names a team's PostgreSQL database with its schema and round trip", () => {
    expect(databaseText(postgres)).toBe(
      'Team database: PostgreSQL 16.4 at postgres://arena@db.example:5432/arena' +
        ' · schema 3 · answered in 4 ms',
    );
    expect(isTeamDatabase(postgres)).toBe(true);
  });

  it('keeps the location apart, to be shown as code', () => {
    expect(databaseParts(postgres)).toEqual({
      lead: 'Team database: PostgreSQL 16.4',
      location: 'postgres://arena@db.example:5432/arena',
      details: ' · schema 3 · answered in 4 ms',
    });
    expect(databaseParts(sqlite).details).toBe('');
  });

  it('treats an unknown backend as a local file', () => {
    expect(databaseText({ ...sqlite, backend: 'other' })).toContain("This machine's own");
  });
});

describe('roundTrip', () => {
  it('rounds to whole milliseconds, with "< 1 ms" below half of one', () => {
    expect(roundTrip(0)).toBe('< 1 ms');
    expect(roundTrip(0.49)).toBe('< 1 ms');
    expect(roundTrip(0.5)).toBe('1 ms');
    expect(roundTrip(12.4)).toBe('12 ms');
    expect(roundTrip(1520)).toBe('1,520 ms');
  });

  it('shows — for a nonsense value', () => {
    expect(roundTrip(Number.NaN)).toBe('— ms');
    expect(roundTrip(-1)).toBe('— ms');
  });
});

describe('machineText', () => {
  it('names the machine', () => {
    expect(machineText('e2e-box')).toBe('This machine: e2e-box');
  });
});
