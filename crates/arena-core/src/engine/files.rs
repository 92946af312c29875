//! The engine's writes to a battle's results folder, off the async
//! threads: a contestant's `result.md`, the manifest, a round's or an
//! analysis' file. What goes in them is rendered by `crate::results`.

use std::path::PathBuf;

use crate::battle::{Battle, Contestant, Round};
use crate::error::Result;
use crate::results;

use super::Engine;

/// Writes `result.md` for a terminal contestant and records where. The
/// manifest is not refreshed: it is written when the battle starts and
/// when it ends (a file rewritten per answer cost more writes than the
/// answers themselves).
pub(super) async fn write_result(engine: &Engine, battle: &Battle, c: &Contestant) -> Result<()> {
    let (b, c2) = (battle.clone(), c.clone());
    let path = tokio::task::spawn_blocking(move || results::write_result(&b, &c2)).await??;
    let (c2, at) = (c.clone(), engine.now());
    engine
        .grouped(move |tx| tx.set_result_path(&c2, &path, at))
        .await
}

/// Writes `result.md` for `c` as given (its end not recorded yet); the
/// file's path.
pub(super) async fn write_result_file(battle: &Battle, c: &Contestant) -> Result<PathBuf> {
    let (b, c) = (battle.clone(), c.clone());
    tokio::task::spawn_blocking(move || results::write_result(&b, &c)).await?
}

/// Writes the battle's `manifest.json` as it stands.
pub(super) async fn write_manifest(battle: &Battle) -> Result<()> {
    let battle = battle.clone();
    tokio::task::spawn_blocking(move || results::write_manifest(&battle)).await?
}

/// Writes `files` (path, content) atomically, in order.
pub(super) async fn write_all(files: Vec<(PathBuf, String)>) -> Result<()> {
    tokio::task::spawn_blocking(move || {
        files
            .iter()
            .try_for_each(|(path, text)| results::write_atomic(path, text.as_bytes()))
    })
    .await?
}

/// Writes a finished round's files into `round-<n>/` (its `diff.patch`
/// when it made one, then `result.md`) and records the round.
pub(super) async fn finish_round(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    mut round: Round,
    patch: Option<String>,
) -> Result<Round> {
    let dir = results::confined(
        &battle.results_path,
        &[
            &results::contestant_dir(c),
            &format!("round-{}", round.number),
        ],
    )?;
    let mut written: Vec<_> = patch
        .iter()
        .map(|p| (dir.join(results::DIFF_FILE), p.clone()))
        .collect();
    let file = dir.join(results::RESULT_FILE);
    written.push((file.clone(), results::render_round(battle, c, &round)));
    write_all(written).await?;
    round.result_path = Some(file);
    // One moment for the round and its record, so they agree.
    let at = engine.now();
    round.finished_at = Some(at);
    let (bid, cid, r) = (battle.id.clone(), c.id.clone(), round.clone());
    engine
        .db(move |s| {
            s.transact(|tx| {
                if let Some(patch) = &patch {
                    tx.put_patch(&cid, r.number, patch)?;
                }
                tx.finish_round(&bid, &r, at)
            })
        })
        .await?;
    Ok(round)
}
