-- What the database knows about itself: the Arena version that last
-- opened it (`last_version`), so an older Arena that finds a schema newer
-- than it knows can say which version wrote it.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
