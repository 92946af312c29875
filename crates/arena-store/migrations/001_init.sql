-- Battles, their contestants, the event journal and the driving lease.
-- Timestamps are milliseconds since the Unix epoch (UTC).

CREATE TABLE battles (
    id               TEXT PRIMARY KEY,
    battle_type      TEXT NOT NULL CHECK (battle_type IN ('qa', 'coding')),
    status           TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled', 'error')),
    prompt           TEXT NOT NULL,
    project_path     TEXT NOT NULL,
    results_path     TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    winner_id        TEXT,
    winner_source    TEXT CHECK (winner_source IN ('analysis', 'user')),
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX battles_created_at ON battles (created_at);
CREATE INDEX battles_status ON battles (status);

CREATE TABLE contestants (
    id                TEXT PRIMARY KEY,
    battle_id         TEXT NOT NULL REFERENCES battles (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL,
    identity          TEXT NOT NULL,
    model             TEXT NOT NULL,
    provider          TEXT NOT NULL,
    lane              TEXT NOT NULL CHECK (lane IN ('local', 'cloud')),
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'error', 'cancelled')),
    error             TEXT,
    attempts          INTEGER NOT NULL DEFAULT 0,
    run_spec          TEXT NOT NULL,
    started_at        INTEGER,
    finished_at       INTEGER,
    duration_ms       INTEGER,
    ttft_ms           INTEGER,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    cached_tokens     INTEGER,
    tokens_per_sec    REAL,
    rate_source       TEXT,
    output            TEXT,
    reasoning         TEXT,
    truncated         INTEGER NOT NULL DEFAULT 0,
    result_path       TEXT,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (battle_id, identity, model)
);
CREATE INDEX contestants_battle ON contestants (battle_id, position);

CREATE TABLE events (
    battle_id     TEXT NOT NULL REFERENCES battles (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    contestant_id TEXT,
    at            INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    PRIMARY KEY (battle_id, seq)
) WITHOUT ROWID;

CREATE TABLE leases (
    battle_id  TEXT PRIMARY KEY REFERENCES battles (id) ON DELETE CASCADE,
    owner      TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
