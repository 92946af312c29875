-- A Coding series' base commit and its project's git remote (SQLite's
-- 019_series_remote.sql).
ALTER TABLE series
    ADD COLUMN base_commit TEXT,
    ADD COLUMN remote_url  TEXT;
