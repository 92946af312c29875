-- SQLite's 021_battle_source.sql: a Coding battle's sealed source.
ALTER TABLE battles ADD COLUMN source_path TEXT;
