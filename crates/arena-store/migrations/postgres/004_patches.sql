-- A Coding contestant's diff per round (SQLite's 018_patches.sql).
CREATE TABLE patches (
    contestant_id TEXT NOT NULL REFERENCES contestants (id) ON DELETE CASCADE,
    round         BIGINT NOT NULL,
    patch         TEXT NOT NULL,
    PRIMARY KEY (contestant_id, round)
);
