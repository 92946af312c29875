-- A series can end in `error` (a mistake that would stop every battle: a
-- model or persona gone since it started), with what went wrong. SQLite
-- cannot change a CHECK in place, so the table is rebuilt as its manual
-- says ("Making Other Kinds Of Table Schema Changes"): a new table, the
-- rows copied, the old one dropped, the new one renamed. Foreign keys are
-- off while migrations run (`Store::open`), so dropping the old table
-- leaves the battles and leases that point at `series` alone; they point
-- at the new table once it has the name, and the foreign keys are checked
-- after the migration.

CREATE TABLE series_011 (
    id               TEXT PRIMARY KEY,
    idem_key         TEXT UNIQUE,
    request          TEXT NOT NULL,
    status           TEXT NOT NULL
        CHECK (status IN ('running', 'done', 'decided', 'budget_reached', 'cancelled', 'error')),
    total            INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    decided_after    INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    report_path      TEXT,
    -- Why it ended in `error`.
    error            TEXT
);
INSERT INTO series_011 (id, idem_key, request, status, total, created_at, finished_at,
                        decided_after, cancel_requested, report_path)
    SELECT id, idem_key, request, status, total, created_at, finished_at,
           decided_after, cancel_requested, report_path
    FROM series;
DROP TABLE series;
ALTER TABLE series_011 RENAME TO series;
CREATE INDEX series_created_at ON series (created_at);
