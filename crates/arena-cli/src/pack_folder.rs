//! A pack argument, and the sample pack Arena ships.

use std::path::PathBuf;

/// Where Arena's packages put the sample pack, beside the `arena` binary.
const SHIPPED_SAMPLE: &str = "../share/arena/packs/sample";

/// A pack argument: the folder as given; `sample`, when no such folder is
/// here, the sample pack Arena ships (`$ARENA_SAMPLE_PACK`, else
/// `share/arena/packs/sample` beside the installed binary, else the source
/// tree's `packs/sample` of a build from a clone).
pub(crate) fn pack_folder(arg: &str) -> Result<PathBuf, String> {
    let given = PathBuf::from(arg);
    if arg != "sample" || given.exists() {
        return Ok(given);
    }
    let mut places: Vec<PathBuf> = std::env::var_os("ARENA_SAMPLE_PACK")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Some(bin) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(PathBuf::from))
    {
        places.push(bin.join(SHIPPED_SAMPLE));
    }
    places.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample"));
    Ok(places
        .into_iter()
        .find(|p| p.join("pack.toml").is_file())
        .and_then(|p| p.canonicalize().ok())
        .unwrap_or(given))
}
