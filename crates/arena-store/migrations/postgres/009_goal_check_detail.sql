-- SQLite's 022_goal_check_detail.sql: a verifier's findings beside its verdict.
ALTER TABLE goal_checks ADD COLUMN detail TEXT;
