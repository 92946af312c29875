-- Machine names in use: a machine (one boot of one computer) claims its
-- name when an Arena process starts there and renews it while any runs;
-- another computer under the same name is refused while the claim is
-- fresh (two machines under one name would each take the other's live
-- processes for dead ones of its own).
CREATE TABLE live.machines (
    name    TEXT PRIMARY KEY,
    boot_id TEXT NOT NULL,
    seen_at BIGINT NOT NULL
);
