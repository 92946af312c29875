-- Fewer pages written per battle (issue 22).
--
-- A battle's contestants are found by the unique (battle_id, identity,
-- model) index and sorted by position (a battle has at most six): the
-- separate (battle_id, position) index cost a page written with every
-- battle's creation and kept nothing else.
DROP INDEX contestants_battle;

-- A Q&A answer's end (its benchmark, last status, folded text and result
-- file, journaled together) is numbered on its contestant's row instead
-- of by a marker row in `events`: `end_seq` is the last of the group's
-- sequence numbers, `end_kinds` how many events it stands for (4, or 3
-- when its file could not be written). Ends recorded before keep their
-- marker rows, which are read as before.
ALTER TABLE contestants ADD COLUMN end_seq INTEGER;
ALTER TABLE contestants ADD COLUMN end_kinds INTEGER;
