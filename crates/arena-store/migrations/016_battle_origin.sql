-- Where a battle ran and who: the machine that ran it (`ARENA_MACHINE`,
-- else the host name), the OS user who started it (`ARENA_USER`, else the
-- OS user), and the OS user who gave its verdict (a chosen winner, a tie
-- or "all bad"; never the judge). A team database is shared by machines
-- and people; NULL: not recorded (battles from before), shown as unknown.
ALTER TABLE battles ADD COLUMN machine TEXT;
ALTER TABLE battles ADD COLUMN user_name TEXT;
ALTER TABLE battles ADD COLUMN voted_by TEXT;
