-- Where a battle ran and who (SQLite's 016_battle_origin.sql): the machine
-- that ran it, the OS user who started it, and the OS user who gave its
-- verdict (never the judge). NULL: not recorded (battles from before).
ALTER TABLE battles
    ADD COLUMN machine   TEXT,
    ADD COLUMN user_name TEXT,
    ADD COLUMN voted_by  TEXT;
