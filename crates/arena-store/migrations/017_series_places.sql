-- Series places, for workers (team mode's `arena worker`; on one machine
-- the series' own driver is its only worker). The series' driver (who holds
-- its lease) opens places; a worker claims one, runs its battle and marks
-- it done. A claim is a lease like a battle's: a worker that stops renewing
-- it loses the place to another. A battle's place in `battles` stays
-- unique, so nothing runs twice whatever happens here.
CREATE TABLE series_places (
    series_id  TEXT NOT NULL REFERENCES series (id) ON DELETE CASCADE,
    slot       INTEGER NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('open', 'taken', 'done', 'dropped')),
    owner      TEXT,
    host       TEXT,
    pid        INTEGER,
    expires_at INTEGER,
    -- Claims so far (a place taken over counts each claim).
    attempts   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (series_id, slot)
);
CREATE INDEX series_places_state ON series_places (state, series_id, slot);

-- Why a machine's workers left a series' places (a provider, model or
-- agent it lacks): the series screen says so when no worker can serve it.
CREATE TABLE series_refusals (
    series_id TEXT NOT NULL REFERENCES series (id) ON DELETE CASCADE,
    machine   TEXT NOT NULL,
    reason    TEXT NOT NULL,
    at        INTEGER NOT NULL,
    PRIMARY KEY (series_id, machine)
);

-- The machine that started the series (a Coding series' project is
-- there), and why no worker takes its open places, when none can.
ALTER TABLE series ADD COLUMN machine TEXT;
ALTER TABLE series ADD COLUMN waiting TEXT;
