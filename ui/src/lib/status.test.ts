import { describe, expect, it } from 'vitest';
import type { DatabaseDto, LaneUseDto, WorkerDto } from '../ipc';
import {
  databaseParts,
  databaseText,
  isIdle,
  isTeamDatabase,
  laneText,
  machineText,
  machinesText,
  placesProblem,
  placesText,
  roleText,
  roundTrip,
  seenText,
  workerText,
} from './status';

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

const worker: WorkerDto = {
  machine: 'gpu-box',
  role: 'worker',
  pid: 4242,
  user: null,
  places: 4,
  taken: 2,
  seen_ms_ago: 3400,
};

const lane: LaneUseDto = { lane: 'llama-swap', machine: 'gpu-box', held: 1, waiting: 2 };

describe('machinesText', () => {
  it('lists the machines at work, or says nothing', () => {
    expect(machinesText(['alice-laptop', 'gpu-box'])).toBe('At work: alice-laptop, gpu-box');
    expect(machinesText([])).toBeNull();
  });
});

describe('workerText', () => {
  it('names the machine, role and pid, the places held and when it was seen', () => {
    expect(workerText(worker)).toBe('gpu-box (worker, pid 4242): 2 of 4 places, seen 3 s ago');
  });

  it("adds the user, and calls a series' own driver so", () => {
    expect(workerText({ ...worker, role: 'series', user: 'alice', places: 1, taken: 0 })).toBe(
      'gpu-box (series driver, pid 4242, alice): 0 of 1 place, seen 3 s ago',
    );
    expect(roleText('worker')).toBe('worker');
  });
});

describe('placesText and seenText', () => {
  it('count places held of the most', () => {
    expect(placesText(2, 4)).toBe('2 of 4 places');
    expect(placesText(1, 1)).toBe('1 of 1 place');
  });

  it('round down to whole seconds, "just now" under one', () => {
    expect(seenText(0)).toBe('seen just now');
    expect(seenText(999)).toBe('seen just now');
    expect(seenText(1000)).toBe('seen 1 s ago');
    expect(seenText(59_999)).toBe('seen 59 s ago');
    expect(seenText(Number.NaN)).toBe('seen just now');
  });
});

describe('laneText', () => {
  it('says how many run and wait on a machine', () => {
    expect(laneText(lane)).toBe('llama-swap on gpu-box: 1 running, 2 waiting');
  });

  it('leaves out waiting when nobody waits', () => {
    expect(laneText({ ...lane, waiting: 0 })).toBe('llama-swap on gpu-box: 1 running');
  });
});

describe('isIdle', () => {
  it('is true only when no machine, worker or lane is in use', () => {
    expect(isIdle({ machines: [], workers: [], lanes: [] })).toBe(true);
    expect(isIdle({ machines: ['gpu-box'], workers: [], lanes: [] })).toBe(false);
    expect(isIdle({ machines: [], workers: [worker], lanes: [] })).toBe(false);
    expect(isIdle({ machines: [], workers: [], lanes: [lane] })).toBe(false);
  });
});

describe('placesProblem', () => {
  it('takes whole numbers from 1 to 16', () => {
    for (const n of [1, 2, 16]) {
      expect(placesProblem(n)).toBeNull();
    }
    for (const n of [0, 17, -1, 2.5, Number.NaN]) {
      expect(placesProblem(n)).toBe('Places: a whole number from 1 to 16.');
    }
  });
});
