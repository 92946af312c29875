//! Coding backends: the CLI agents Arena knows and whether each is installed.
//! (Launching them arrives with Coding battles.)

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use arena_domain::backend::{find, names, Agent, BackendInfo, BACKENDS};

/// Where `program` is: an absolute path that exists, or found on `PATH`.
pub fn locate(program: &str) -> Option<PathBuf> {
    let direct = Path::new(program);
    if direct.is_absolute() {
        return is_executable(direct).then(|| direct.to_path_buf());
    }
    which(program)
}

/// A backend as the user can pick it: built in or from `[[backend]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendStatus {
    pub name: String,
    /// `None` for the built-in agent.
    pub program: Option<String>,
    pub installed: bool,
    pub path: Option<PathBuf>,
    /// Whether it can cross-examine (runs read-only: in the kernel sandbox,
    /// or by a read-only mode of its own).
    pub read_only: bool,
    /// Defined in arena.toml.
    pub custom: bool,
}

/// Every backend, built-in ones first, with where each is installed;
/// `sandboxed`: agents run in the kernel sandbox (so every CLI agent can
/// cross-examine).
pub fn statuses(
    custom: &[arena_domain::config::CustomBackend],
    sandboxed: bool,
) -> Vec<BackendStatus> {
    let known = BACKENDS.iter().map(|b| {
        let path = b.program.and_then(locate);
        BackendStatus {
            name: b.name.to_string(),
            program: b.program.map(str::to_string),
            installed: b.program.is_none() || path.is_some(),
            path,
            read_only: crate::backends::can_examine(b.agent, sandboxed),
            custom: false,
        }
    });
    let custom = custom.iter().map(|b| {
        let program = b.command.first().cloned();
        let path = program.as_deref().and_then(locate);
        BackendStatus {
            name: b.name.clone(),
            installed: path.is_some(),
            path,
            program,
            read_only: false,
            custom: true,
        }
    });
    known.chain(custom).collect()
}

/// Looks `program` up on `PATH` like a shell would.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_backends_and_programs() {
        assert_eq!(find("Claude-Code").unwrap().program, Some("claude"));
        assert!(find("cursor").is_none());
        assert!(which("sh").is_some());
        assert!(which("definitely-not-a-program-arena").is_none());
    }
}
