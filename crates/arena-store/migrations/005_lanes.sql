-- Machine-wide lanes. Every model server (a local server by its address, a
-- cloud provider by its name) is a lane with a number of slots; whoever
-- wants to call it takes a ticket and waits its turn, first come, first
-- served. A ticket is a lease: its process renews it, and a ticket whose
-- process is gone (or whose lease expired) is dropped by the next waiter.

CREATE TABLE lane_tickets (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    lane          TEXT NOT NULL,
    -- Order: when the work became ready, then its place in its battle.
    ready_at      INTEGER NOT NULL,
    position      INTEGER NOT NULL,
    -- Who holds or waits, for the waiting reason ("battle 1a2b3c4d, contestant 2").
    holder        TEXT NOT NULL,
    battle_id     TEXT,
    contestant_id TEXT,
    model         TEXT NOT NULL,
    owner         TEXT NOT NULL,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    -- Set when the ticket holds one of the lane's slots.
    granted_at    INTEGER
);
CREATE INDEX lane_tickets_lane ON lane_tickets (lane, ready_at, position, id);
CREATE INDEX lane_tickets_owner ON lane_tickets (owner);

-- What a lane served last (a local server that changes model loads it
-- first), and when slots were granted (for requests_per_minute).
CREATE TABLE lanes (
    lane       TEXT PRIMARY KEY,
    last_model TEXT
);
CREATE TABLE lane_grants (
    lane TEXT NOT NULL,
    at   INTEGER NOT NULL
);
CREATE INDEX lane_grants_lane ON lane_grants (lane, at);

-- Why a queued contestant is waiting (NULL when it is not), and the
-- benchmark figures kept apart for local servers.
ALTER TABLE contestants ADD COLUMN waiting TEXT;
ALTER TABLE contestants ADD COLUMN prompt_per_sec REAL;
ALTER TABLE contestants ADD COLUMN model_switched INTEGER NOT NULL DEFAULT 0;
