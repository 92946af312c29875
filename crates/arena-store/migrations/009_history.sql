-- The history at scale: a page of battles newest first (`created_at`, then
-- `id`, descending), filtered by status or not, is read straight off an
-- index and stops after the page; these replace the one-column indices.

CREATE INDEX battles_newest ON battles (created_at, id);
DROP INDEX battles_created_at;

CREATE INDEX battles_status_newest ON battles (status, created_at, id);
DROP INDEX battles_status;

-- A series' battles, newest first (`battle list --series`).
CREATE INDEX battles_series_newest ON battles (series_id, created_at, id)
    WHERE series_id IS NOT NULL;
