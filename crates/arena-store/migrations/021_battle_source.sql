-- A Coding battle's sealed source: the repository its git objects come
-- from when it is not the project's (a task pack's base, sealed so that
-- no later commit is in an agent's reach). NULL: the project's own.
ALTER TABLE battles ADD COLUMN source_path TEXT;
