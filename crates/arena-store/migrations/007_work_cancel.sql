-- Cancelling an analysis, a cross-examination or a refine round from any
-- process: the request is recorded here; the process running it sees it.

ALTER TABLE analyses ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cross_examinations ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rounds ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
