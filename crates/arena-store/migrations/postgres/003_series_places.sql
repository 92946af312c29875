-- Series places and the workers that take them (SQLite's
-- 017_series_places.sql; `live.workers` is in SQLite's live journal).
CREATE TABLE series_places (
    series_id  TEXT NOT NULL REFERENCES series (id) ON DELETE CASCADE,
    slot       BIGINT NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('open', 'taken', 'done', 'dropped')),
    owner      TEXT,
    host       TEXT,
    pid        BIGINT,
    expires_at BIGINT,
    attempts   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (series_id, slot)
);
CREATE INDEX series_places_state ON series_places (state, series_id, slot);

CREATE TABLE series_refusals (
    series_id TEXT NOT NULL REFERENCES series (id) ON DELETE CASCADE,
    machine   TEXT NOT NULL,
    reason    TEXT NOT NULL,
    at        BIGINT NOT NULL,
    PRIMARY KEY (series_id, machine)
);

ALTER TABLE series
    ADD COLUMN machine TEXT,
    ADD COLUMN waiting TEXT;

-- Every running Arena process (app, CLI, worker), beaten every few
-- seconds: `arena status` lists those seen in the last minute.
CREATE TABLE live.workers (
    owner      TEXT PRIMARY KEY,
    machine    TEXT NOT NULL,
    pid        BIGINT NOT NULL,
    role       TEXT NOT NULL,
    user_name  TEXT,
    places     BIGINT NOT NULL,
    taken      BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL
);
