-- Refinement rounds of Coding contestants: round 1 is the contestant's own
-- run; each refinement with the user's feedback adds a row here.

CREATE TABLE rounds (
    id            TEXT PRIMARY KEY,
    contestant_id TEXT NOT NULL REFERENCES contestants (id) ON DELETE CASCADE,
    number        INTEGER NOT NULL,
    feedback      TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('running', 'done', 'error', 'cancelled')),
    output        TEXT NOT NULL DEFAULT '',
    error         TEXT,
    diff_stats    TEXT,
    check_result  TEXT,
    duration_ms   INTEGER,
    result_path   TEXT,
    created_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    UNIQUE (contestant_id, number)
);
