-- Fewer pages written per battle (issue 22).
--
-- A battle's contestants are found by the unique (battle_id, identity,
-- model) index and sorted by position (a battle has at most six): the
-- separate (battle_id, position) index cost a page written with every
-- battle's creation and kept nothing else.
DROP INDEX contestants_battle;

-- Each index a battle's row is in is a page written when it is created,
-- and one more when it ends if the index holds its status. The history
-- pages newest first by `battles_newest` and filters on the way (by status:
-- most battles are done, and the rarer statuses are a scan of the
-- battles' rows; by series: its battles by `battles_series_slot`, then
-- sorted). A series' places are found by their series (the primary key).
DROP INDEX battles_status_newest;
DROP INDEX battles_series_newest;
DROP INDEX series_places_state;

-- A Q&A answer's end (its benchmark, last status, folded text and result
-- file, journaled together) is numbered on its contestant's row instead
-- of by a marker row in `events`: `end_seq` is the last of the group's
-- sequence numbers, `end_kinds` how many events it stands for (4, or 3
-- when its file could not be written). Ends recorded before keep their
-- marker rows, which are read as before.
ALTER TABLE contestants ADD COLUMN end_seq INTEGER;
ALTER TABLE contestants ADD COLUMN end_kinds INTEGER;

-- A battle's first and last status events (`running` when it is created,
-- its final status when it ends) are numbered on its row the same way:
-- `start_seq` and `end_seq`, filled from `created_at`, `finished_at` and
-- `status` on reading. Battles from before keep their journal rows.
ALTER TABLE battles ADD COLUMN start_seq INTEGER;
ALTER TABLE battles ADD COLUMN end_seq INTEGER;
