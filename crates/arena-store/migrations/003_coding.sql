-- Coding battles: the base commit and check command of a battle; each
-- contestant's worktree, diff statistics, check result and changed files.

ALTER TABLE battles ADD COLUMN base_commit TEXT;
ALTER TABLE battles ADD COLUMN check_command TEXT;

ALTER TABLE contestants ADD COLUMN worktree TEXT;
ALTER TABLE contestants ADD COLUMN diff_stats TEXT;
ALTER TABLE contestants ADD COLUMN check_result TEXT;
