//! An answer's text (and a Coding diff) as the database keeps it:
//! deflated when that saves a worthwhile share (a `BLOB`), else as it is
//! (a `TEXT`); both read the same way. An older database's answers are
//! deflated once, on upgrade ([`repack_answers`]).
//!
//! Deflate (RFC 1951, raw) through `flate2`: the answers are read whole,
//! rarely, and far outnumber everything else the database keeps; a few
//! kilobytes of prose or code deflate to a third or half.

use std::io::{Read, Write};

use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use rusqlite::{params, Connection};

use crate::error::{Error, Result};
use crate::sql::TextOrBytes;

/// Texts shorter than this are kept as they are: deflate's own overhead
/// eats what it would save.
const SMALLEST: usize = 128;

/// `text` as database `db` keeps it: deflated on SQLite when that pays;
/// as it is on PostgreSQL, whose answer columns are `TEXT` (it compresses
/// long values itself).
pub(crate) fn pack_for(db: crate::sql::Conn<'_>, text: &str) -> TextOrBytes {
    match db {
        crate::sql::Conn::Sqlite(_) => pack(text),
        crate::sql::Conn::Postgres(_) => TextOrBytes::Text(text.to_string()),
    }
}

/// `text` as SQLite keeps it.
pub fn pack(text: &str) -> TextOrBytes {
    if text.len() >= SMALLEST {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        // Writing into a Vec cannot fail.
        if encoder.write_all(text.as_bytes()).is_ok() {
            if let Ok(packed) = encoder.finish() {
                // Worth it only when it saves at least an eighth.
                if packed.len() <= text.len() - text.len() / 8 {
                    return TextOrBytes::Bytes(packed);
                }
            }
        }
    }
    TextOrBytes::Text(text.to_string())
}

/// The text the database keeps as `value` (see [`pack`]).
pub fn unpack(value: Option<TextOrBytes>) -> Result<Option<String>> {
    match value {
        None => Ok(None),
        Some(TextOrBytes::Text(t)) => Ok(Some(t)),
        Some(TextOrBytes::Bytes(b)) => {
            let mut text = String::new();
            DeflateDecoder::new(b.as_slice())
                .read_to_string(&mut text)
                .map_err(|e| Error::Inconsistent(format!("a kept answer does not inflate: {e}")))?;
            Ok(Some(text))
        }
    }
}

/// Once, after a database from before migration 014 is brought up to
/// date: deflates the answers it moved (SQL cannot), then rewrites the
/// file, whose pages the moves left a third empty. A 10,000-battle
/// history: 150 MB before the upgrade, 226 MB after the migration alone,
/// 108 MB after this; 6.3 s in all, on the first start after the upgrade.
pub fn repack_answers(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction()?;
    {
        let mut read = tx.prepare(
            "SELECT rowid, output, reasoning FROM answers WHERE typeof(output) = 'text'",
        )?;
        let mut write =
            tx.prepare("UPDATE answers SET output = ?2, reasoning = ?3 WHERE rowid = ?1")?;
        let mut rows = read.query([])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let output = unpack(TextOrBytes::from_sqlite(1, row.get_ref(1)?)?)?.unwrap_or_default();
            let reasoning = unpack(TextOrBytes::from_sqlite(2, row.get_ref(2)?)?)?;
            write.execute(params![id, pack(&output), reasoning.as_deref().map(pack)])?;
        }
    }
    tx.commit()?;
    conn.execute_batch("VACUUM")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> (TextOrBytes, String) {
        let packed = pack(text);
        let back = unpack(Some(packed.clone())).unwrap().unwrap();
        (packed, back)
    }

    #[test]
    fn prose_is_deflated_and_comes_back_whole() {
        let text = "A lane keeps a local model server to one request at a time. ".repeat(40)
            + "Unicode too: ünïcødé — 漢字 🙂";
        let (packed, back) = round_trip(&text);
        assert_eq!(back, text);
        match packed {
            TextOrBytes::Bytes(b) => assert!(b.len() < text.len() / 4, "{} bytes", b.len()),
            other => panic!("not deflated: {other:?}"),
        }
    }

    #[test]
    fn short_or_incompressible_text_is_kept_as_it_is() {
        for text in ["", "ok", &"x".repeat(SMALLEST - 1)] {
            assert_eq!(
                round_trip(text),
                (TextOrBytes::Text(text.into()), text.into())
            );
        }
        // Already-dense text (every byte different from the last) gains
        // nothing: it stays text.
        let dense: String = (0..2000u32)
            .map(|i| char::from_u32(0x4e00 + (i * 7919) % 20000).unwrap())
            .collect();
        assert_eq!(round_trip(&dense).1, dense);
    }

    #[test]
    fn a_damaged_blob_is_an_error_not_a_panic() {
        let err = unpack(Some(TextOrBytes::Bytes(vec![0xff, 0x00, 0x13, 0x37]))).unwrap_err();
        assert!(err.to_string().contains("does not inflate"), "{err}");
        let number = rusqlite::types::ValueRef::Integer(3);
        assert!(TextOrBytes::from_sqlite(1, number).is_err());
    }
}
