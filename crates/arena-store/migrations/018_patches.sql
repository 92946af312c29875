-- A Coding contestant's diff per round (1: its own run; n: refinement
-- round n), in the database as well as in the results folder of the
-- machine that ran it, so any machine of a team can show and apply it.
-- Written in the transaction that records the contestant (or the round)
-- done, so a done contestant always has its diff here.
CREATE TABLE patches (
    contestant_id TEXT NOT NULL REFERENCES contestants (id) ON DELETE CASCADE,
    round         INTEGER NOT NULL,
    patch         TEXT NOT NULL,
    PRIMARY KEY (contestant_id, round)
);
