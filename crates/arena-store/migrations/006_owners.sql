-- Which process runs an analysis, a cross-examination or a refine round
-- (host and PID), so that a process starting later can tell work whose
-- process died (left "running" for ever) from work still going.

ALTER TABLE analyses ADD COLUMN owner_host TEXT;
ALTER TABLE analyses ADD COLUMN owner_pid INTEGER;
ALTER TABLE cross_examinations ADD COLUMN owner_host TEXT;
ALTER TABLE cross_examinations ADD COLUMN owner_pid INTEGER;
ALTER TABLE rounds ADD COLUMN owner_host TEXT;
ALTER TABLE rounds ADD COLUMN owner_pid INTEGER;
