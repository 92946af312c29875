-- A Coding series' base commit (every place starts from it) and, on a
-- team, the URL of the project's git remote that holds it: workers on
-- other machines fetch the project from there.
ALTER TABLE series ADD COLUMN base_commit TEXT;
ALTER TABLE series ADD COLUMN remote_url TEXT;
