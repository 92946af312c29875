-- Costs, and series: one contestant set run many times, each run an
-- ordinary battle linked to its series.

ALTER TABLE contestants ADD COLUMN cost_usd REAL;
ALTER TABLE analyses ADD COLUMN cost_usd REAL;
ALTER TABLE rounds ADD COLUMN cost_usd REAL;

CREATE TABLE series (
    id               TEXT PRIMARY KEY,
    -- The idempotency key the user gave (`--key`): one series per key.
    idem_key         TEXT UNIQUE,
    -- The request as JSON (arena_domain::series::SeriesRequest).
    request          TEXT NOT NULL,
    status           TEXT NOT NULL
        CHECK (status IN ('running', 'done', 'decided', 'budget_reached', 'cancelled')),
    -- Battles at most: runs x prompts.
    total            INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    -- Battles finished when the leader separated (`--until-decided`).
    decided_after    INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    -- Where its report was last written.
    report_path      TEXT
);
CREATE INDEX series_created_at ON series (created_at);

-- The process driving a series, as `leases` is for a battle.
CREATE TABLE series_leases (
    series_id  TEXT PRIMARY KEY REFERENCES series (id) ON DELETE CASCADE,
    owner      TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

-- A series' battle and its place in the series (the n-th battle: prompt
-- n mod prompts, run n div prompts + 1). One battle per place, so nothing
-- runs twice.
ALTER TABLE battles ADD COLUMN series_id TEXT REFERENCES series (id) ON DELETE SET NULL;
ALTER TABLE battles ADD COLUMN series_slot INTEGER;
CREATE UNIQUE INDEX battles_series_slot ON battles (series_id, series_slot)
    WHERE series_id IS NOT NULL;

-- The goal judge's verdict on a contestant's result, per turn.
CREATE TABLE goal_checks (
    contestant_id TEXT NOT NULL REFERENCES contestants (id) ON DELETE CASCADE,
    turn          INTEGER NOT NULL,
    -- 1 pass, 0 fail, NULL when the judge failed (then `error`).
    passed        INTEGER,
    reason        TEXT,
    error         TEXT,
    -- The check command decided (Coding), not a judge.
    by_check      INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL,
    at            INTEGER NOT NULL,
    PRIMARY KEY (contestant_id, turn)
);
