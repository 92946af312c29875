-- Analyses (digest → judge) and cross-examinations of finished battles.

CREATE TABLE analyses (
    id          TEXT PRIMARY KEY,
    battle_id   TEXT NOT NULL REFERENCES battles (id) ON DELETE CASCADE,
    status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'error')),
    model       TEXT NOT NULL,
    provider    TEXT NOT NULL,
    outcome     TEXT CHECK (outcome IN ('winner', 'no_clear_winner', 'judge_error', 'walkover')),
    winner_id   TEXT,
    ranking     TEXT NOT NULL DEFAULT '[]',
    reasons     TEXT NOT NULL DEFAULT '{}',
    digests     TEXT NOT NULL DEFAULT '[]',
    judge_runs  TEXT NOT NULL DEFAULT '[]',
    error       TEXT,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX analyses_battle ON analyses (battle_id, created_at);

CREATE TABLE cross_examinations (
    id          TEXT PRIMARY KEY,
    battle_id   TEXT NOT NULL REFERENCES battles (id) ON DELETE CASCADE,
    number      INTEGER NOT NULL,
    identity    TEXT NOT NULL,
    model       TEXT NOT NULL,
    provider    TEXT NOT NULL,
    question    TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'error')),
    output      TEXT NOT NULL DEFAULT '',
    verdict     TEXT,
    error       TEXT,
    path        TEXT,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER,
    UNIQUE (battle_id, number)
);
