//! What the event journal writes: battles of six contestants streaming 200
//! tokens each at 200 tokens/s (cloud lane, the scripted server), run one
//! after another in this process. Reports the bytes this process wrote
//! (`/proc/self/io` `write_bytes`: the database, its WAL and the results
//! folders) against the bytes kept at the end (the database file and the
//! results folders), per battle, and their ratio; and the journal's
//! transactions. It runs with a memory-backed `XDG_RUNTIME_DIR`, as in a
//! desktop session, where the live journal goes.
//!
//! ```sh
//! cargo bench -p arena-cli --bench journal      # ARENA_BENCH_RUNS=N (default 20)
//! ```

mod common;

use std::path::Path;
use std::time::Instant;

use arena_core::battle::ContestantSpec;
use arena_testserver::ModelScript;
use common::Bench;

const CONTESTANTS: usize = 6;
const TOKENS: usize = 200;

/// Bytes this process has caused to be written to storage.
fn written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("write_bytes:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Bytes under `dir`, all the way down: the files' lengths, and the disk
/// blocks the files and folders take (as `du` counts them).
fn tree_bytes(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let own = std::fs::metadata(dir)
        .map(|m| m.blocks() * 512)
        .unwrap_or(0);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, own);
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => tree_bytes(&e.path()),
            _ => e
                .metadata()
                .map(|m| (m.len(), m.blocks() * 512))
                .unwrap_or((0, 0)),
        })
        .fold((0, own), |(l, b), (l2, b2)| (l + l2, b + b2))
}

#[tokio::main]
async fn main() {
    let runs: usize = common::setting("ARENA_BENCH_RUNS", 20);
    // A desktop session's runtime folder (memory-backed), where the live
    // journal goes; CI machines have none.
    let runtime = tempfile::Builder::new()
        .prefix("arena-runtime-")
        .tempdir_in(if Path::new("/dev/shm").is_dir() {
            "/dev/shm"
        } else {
            "/tmp"
        })
        .expect("a runtime folder");
    std::env::set_var("XDG_RUNTIME_DIR", runtime.path());
    let bench = Bench::new().await;
    let models: Vec<String> = (1..=CONTESTANTS).map(|i| format!("m{i}")).collect();
    // Each answer is prose (200 words of this project's architecture
    // notes, a different passage each), not a run of `tok<n>`: what the
    // database keeps of it is then what it would keep of a real answer.
    let words: Vec<&str> = include_str!("../../../docs/ARCHITECTURE.md")
        .split_inclusive(char::is_whitespace)
        .collect();
    for (i, m) in models.iter().enumerate() {
        let passage: String = words
            .iter()
            .cycle()
            .skip(i * 997)
            .take(TOKENS)
            .copied()
            .collect();
        bench
            .cloud
            .set_model(m, ModelScript::text(&passage).rate(200.0));
    }
    let engine = bench.engine();
    // The empty database (its schema: a page per table and index), which
    // the battles' share is measured from.
    let db_path = bench.data().join("arena.db");
    let empty = {
        let db = rusqlite::Connection::open(&db_path).expect("the database");
        db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("a checkpoint");
        std::fs::metadata(&db_path).map(|m| m.len()).unwrap_or(0)
    };
    // The seeded personas, each on two models.
    let personas = ["debugger", "explainer", "architect", "code reviewer"];
    let before = written();
    let started = Instant::now();
    for _ in 0..runs {
        let request = bench.qa(
            "Say hi.",
            personas
                .iter()
                .cycle()
                .zip(&models)
                .map(|(p, m)| ContestantSpec::parse(&format!("{p}@{m}")).expect("a spec"))
                .collect(),
        );
        let battle = engine.create_battle(request).await.expect("created");
        engine.run_battle(&battle.id).await.expect("ran");
    }
    let wall = started.elapsed();
    let commits = engine.journal_commits();
    // What the database keeps, once its write-ahead log is folded in (the
    // checkpoint's writes are counted: they happen anyway).
    let db = rusqlite::Connection::open(&db_path).expect("the database");
    db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("a checkpoint");
    let wrote = written().saturating_sub(before);
    let database = std::fs::metadata(&db_path).map(|m| m.len()).unwrap_or(0);
    // (Characters: the passages are ASCII but for a few arrows.)
    let text: i64 = db
        .query_row(
            "SELECT (SELECT COALESCE(SUM(output_chars), 0) FROM answers)
                  + (SELECT COALESCE(SUM(LENGTH(reasons) + LENGTH(digests)), 0) FROM analyses)",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    let tables: Vec<(String, i64)> = db
        .prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 8")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap_or_default();
    let (results, results_blocks) = tree_bytes(&bench.project().join("Arena"));
    let kept = database + results;
    let database_blocks = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&db_path)
            .map(|m| m.blocks() * 512)
            .unwrap_or(0)
    };
    let kept_blocks = database_blocks + results_blocks;
    let per = |bytes: u64| bytes as f64 / runs as f64 / 1024.0;
    println!(
        "{runs} battles × {CONTESTANTS} contestants × {TOKENS} tokens at 200 tok/s, {:.1} s",
        wall.as_secs_f64()
    );
    println!(
        "  written: {:.0} KiB per battle; kept: {:.0} KiB per battle (database {:.0}, results {:.0}); written ÷ kept: {:.2}",
        per(wrote),
        per(kept),
        per(database),
        per(results),
        wrote as f64 / kept.max(1) as f64
    );
    println!(
        "  kept as disk blocks: {:.0} KiB per battle (database {:.0}, results {:.0}); written ÷ kept: {:.2}",
        per(kept_blocks),
        per(database_blocks),
        per(results_blocks),
        wrote as f64 / kept_blocks.max(1) as f64
    );
    println!(
        "  streamed events journaled in {:.1} transactions per battle",
        commits as f64 / runs as f64
    );
    println!(
        "  database: {:.1} KiB per battle for {:.1} KiB of text (outputs, reasoning, analyses): {:.2}×; \
         past the empty database's {:.0} KiB: {:.1} KiB per battle, {:.2}×",
        per(database),
        per(text as u64),
        database as f64 / text.max(1) as f64,
        empty as f64 / 1024.0,
        per(database.saturating_sub(empty)),
        database.saturating_sub(empty) as f64 / text.max(1) as f64
    );
    let tables: Vec<String> = tables
        .iter()
        .map(|(name, bytes)| format!("{name} {:.1}", per(*bytes as u64)))
        .collect();
    println!(
        "  largest tables and indexes, KiB per battle: {}",
        tables.join(", ")
    );
}
