-- A series' tags as edited since it started (a JSON array); NULL: the
-- tags of its request. New battles of the series carry them; editing them
-- changes its battles' tags too.
ALTER TABLE series ADD COLUMN tags TEXT;
