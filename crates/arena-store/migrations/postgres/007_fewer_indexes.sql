-- SQLite's 020_fewer_indexes.sql: fewer indexes (contestants are found
-- by their unique (battle_id, identity, model) index); a Q&A answer's end,
-- and a battle's first and last status, are numbered on their rows.
DROP INDEX contestants_battle;
DROP INDEX battles_status_newest;
DROP INDEX battles_series_newest;
DROP INDEX series_places_state;
ALTER TABLE contestants
    ADD COLUMN end_seq   BIGINT,
    ADD COLUMN end_kinds BIGINT;
ALTER TABLE battles
    ADD COLUMN start_seq BIGINT,
    ADD COLUMN end_seq   BIGINT;
