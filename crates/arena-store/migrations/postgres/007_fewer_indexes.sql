-- SQLite's 020_fewer_indexes.sql: contestants are found by their unique
-- (battle_id, identity, model) index, and a Q&A answer's end is numbered
-- on its row.
DROP INDEX contestants_battle;
ALTER TABLE contestants
    ADD COLUMN end_seq   BIGINT,
    ADD COLUMN end_kinds BIGINT;
