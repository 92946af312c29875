-- What a contestant's row kept several times, or grew into, is kept once
-- and written once:
-- * its run settings (its persona's system prompt, temperature, limits)
--   once per distinct settings, in `run_specs`: a persona's prompt is a few
--   hundred bytes, and a series repeats the same few settings thousands of
--   times;
-- * its answer's text in `answers`, written once when it ends, deflated
--   (a BLOB; see src/packed.rs) when that saves. A row that grew from a
--   few hundred bytes to its answer's size split the pages it was on and
--   left them a third empty. `output_chars` is the output's length in
--   characters, for lists that show it without reading it.

CREATE TABLE run_specs (
    id   INTEGER PRIMARY KEY,
    spec TEXT NOT NULL UNIQUE
);

INSERT OR IGNORE INTO run_specs (spec) SELECT run_spec FROM contestants;

ALTER TABLE contestants ADD COLUMN run_spec_id INTEGER REFERENCES run_specs (id);

UPDATE contestants SET run_spec_id = (SELECT id FROM run_specs WHERE spec = contestants.run_spec);

-- (A rowid table: in a WITHOUT ROWID table, a row of a kilobyte or two
-- spills into an overflow page of its own.)
CREATE TABLE answers (
    contestant_id TEXT NOT NULL UNIQUE REFERENCES contestants (id) ON DELETE CASCADE,
    -- TEXT as it is, or a deflated BLOB (declared BLOB: no type affinity,
    -- so a text that looks like a number stays text).
    output        BLOB NOT NULL,
    output_chars  INTEGER NOT NULL,
    reasoning     BLOB
);

INSERT INTO answers (contestant_id, output, output_chars, reasoning)
    SELECT id, output, LENGTH(output), reasoning FROM contestants WHERE output IS NOT NULL;

ALTER TABLE contestants DROP COLUMN run_spec;
ALTER TABLE contestants DROP COLUMN output;
ALTER TABLE contestants DROP COLUMN reasoning;
