-- Blind battles, the user's tie or "all bad", and tags.

-- Started blind: viewers see labels until `revealed_at`.
ALTER TABLE battles ADD COLUMN blind INTEGER NOT NULL DEFAULT 0;
ALTER TABLE battles ADD COLUMN revealed_at INTEGER;
-- The user's verdict when it names no winner (a chosen winner is
-- `winner_id` with `winner_source = 'user'`).
ALTER TABLE battles ADD COLUMN user_verdict TEXT CHECK (user_verdict IN ('tie', 'all_bad'));

-- A blind battle's letter for the contestant (A, B, …), shuffled per battle.
ALTER TABLE contestants ADD COLUMN label TEXT;

CREATE TABLE battle_tags (
    battle_id TEXT NOT NULL REFERENCES battles (id) ON DELETE CASCADE,
    tag       TEXT NOT NULL,
    PRIMARY KEY (battle_id, tag)
) WITHOUT ROWID;
CREATE INDEX battle_tags_tag ON battle_tags (tag, battle_id);
