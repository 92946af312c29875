//! What an agent's worktree holds that the tree its check runs on does
//! not (a nested git repository, an ignored or excluded path, a FIFO), so
//! that the result can name what the check ran without. Computed by a
//! reader process ([`crate::reader`]) in the contestant's jail: the walk
//! reads names and kinds of files an agent made.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use arena_domain::battle::NOT_IN_CHANGE_LISTED;

/// The tree a check runs on, as [`left_out`] compares an agent's tree with
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tree", rename_all = "snake_case")]
pub enum There {
    /// A tree on disk, the change applied.
    Tree { path: PathBuf },
    /// A base tree, and the paths a change leaves there (`files`, the
    /// folders on their way `dirs`) and takes away (`gone`).
    Base {
        path: PathBuf,
        files: Vec<PathBuf>,
        dirs: Vec<PathBuf>,
        gone: Vec<PathBuf>,
    },
}

impl There {
    /// Whether the tree holds `rel` (`Some`), and whether as a folder.
    fn holds(&self) -> impl Fn(&Path) -> Option<bool> + '_ {
        let sets = match self {
            There::Base {
                files, dirs, gone, ..
            } => Some((
                files
                    .iter()
                    .map(PathBuf::as_path)
                    .collect::<HashSet<&Path>>(),
                dirs.iter()
                    .map(PathBuf::as_path)
                    .collect::<HashSet<&Path>>(),
                gone.iter()
                    .map(PathBuf::as_path)
                    .collect::<HashSet<&Path>>(),
            )),
            There::Tree { .. } => None,
        };
        move |rel: &Path| {
            let (root, found) = match (self, &sets) {
                (There::Tree { path }, _) => (path, None),
                (There::Base { path, .. }, Some((files, dirs, gone))) => {
                    if files.contains(rel) {
                        (path, Some(Some(false)))
                    } else if dirs.contains(rel) {
                        (path, Some(Some(true)))
                    } else if gone.contains(rel) {
                        (path, Some(None))
                    } else {
                        (path, None)
                    }
                }
                (There::Base { path, .. }, None) => (path, None),
            };
            found.unwrap_or_else(|| root.join(rel).symlink_metadata().ok().map(|m| m.is_dir()))
        }
    }
}

/// What the agent's worktree holds that the check's tree does not: the
/// first [`NOT_IN_CHANGE_LISTED`], and how many.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub listed: Vec<String>,
    pub count: usize,
}

/// Folders of build output and caches: listed by their name once, however
/// many there are and wherever they are.
const NOISE: &[&str] = &[
    "target",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    ".venv",
    "venv",
    "dist",
    "build",
    ".next",
    ".cache",
    ".gradle",
    ".eggs",
];

/// The walk stops after this many entries of the agent's tree.
const MOST_ENTRIES: usize = 200_000;

/// [`LeftOut`] of the agent's worktree `agent` against the check's tree
/// `there`. Only names and kinds are read (`lstat`): no link is followed,
/// no file opened, so a FIFO or a device is only named. A folder the fresh
/// tree lacks is named once, not walked; so is a git repository of its own
/// (a folder with a `.git`), whose files no diff carries.
pub fn left_out(agent: &Path, there: &There) -> LeftOut {
    left_out_by(agent, &there.holds())
}

/// [`left_out`] against a tree `there` describes: for a path relative to
/// it, whether it holds it (`Some`), and whether as a folder.
fn left_out_by(agent: &Path, there: &dyn Fn(&Path) -> Option<bool>) -> LeftOut {
    let mut found: Vec<String> = Vec::new();
    let mut noise: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen = 0usize;
    let mut folders: Vec<PathBuf> = vec![PathBuf::new()];
    'walk: while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(agent.join(&folder)) else {
            continue;
        };
        // A folder of millions of entries is not read past the bound.
        let room = MOST_ENTRIES.saturating_sub(seen) + 1;
        let mut entries: Vec<_> = entries.flatten().take(room).collect();
        entries.sort_by_key(|e| e.file_name());
        let mut below = Vec::new();
        for entry in entries {
            seen += 1;
            if seen > MOST_ENTRIES {
                found.push(format!(
                    "(the rest: the worktree has over {MOST_ENTRIES} entries)"
                ));
                break 'walk;
            }
            let name = entry.file_name();
            if folder.as_os_str().is_empty() && name == ".git" {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let relative = folder.join(&name);
            let shown = shown(&relative);
            let there = there(&relative);
            if kind.is_dir() {
                if agent
                    .join(&relative)
                    .join(".git")
                    .symlink_metadata()
                    .is_ok()
                {
                    found.push(format!("{shown}/ (a git repository of its own)"));
                } else if there == Some(true) {
                    below.push(relative);
                } else if NOISE.iter().any(|n| name == *n) {
                    *noise
                        .entry(format!("{}/", name.to_string_lossy()))
                        .or_default() += 1;
                } else {
                    found.push(format!("{shown}/"));
                }
                continue;
            }
            if there.is_some() {
                continue;
            }
            found.push(match odd_kind(&kind) {
                Some(what) => format!("{shown} ({what})"),
                None => shown,
            });
        }
        // A folder's own entries first, then its folders', in name order.
        folders.extend(below.into_iter().rev());
    }
    let noise = noise.into_iter().map(|(name, n)| match n {
        1 => format!("{name} (build output or a cache)"),
        n => format!("{name} (build output or a cache, {n} folders)"),
    });
    let mut all: Vec<String> = found.into_iter().chain(noise).collect();
    let count = all.len();
    all.truncate(NOT_IN_CHANGE_LISTED);
    LeftOut { listed: all, count }
}

/// `path` as the result shows it: `/`-separated, with no control character
/// or backtick of the agent's.
fn shown(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|ch| {
            if ch.is_control() || ch == '`' {
                '?'
            } else {
                ch
            }
        })
        .collect()
}

fn odd_kind(kind: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else if kind.is_symlink() {
        Some("a symbolic link")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo");
        assert!(made.success());
    }

    /// What the agent's tree holds beyond the fresh tree is named by lstat
    /// alone: a FIFO is named, not opened (opening it would block); a link
    /// to a folder is not followed; a nested repository and a missing
    /// folder are named once, not walked; build output is named by its
    /// folder's name once; the list is bounded, the count is not.
    #[test]
    fn what_the_change_does_not_carry_is_named_without_opening_it() {
        let (agent, fresh) = (
            tempfile::tempdir().expect("agent"),
            tempfile::tempdir().expect("fresh"),
        );
        let (a, f) = (agent.path(), fresh.path());
        for dir in [a, f] {
            std::fs::create_dir_all(dir.join("src")).expect("src");
            std::fs::write(dir.join("src/lib.rs"), "x").expect("lib.rs");
        }
        std::fs::create_dir_all(a.join(".git/objects")).expect(".git");
        std::fs::create_dir_all(a.join("calc/.git")).expect("nested");
        std::fs::write(a.join("calc/__init__.py"), "x").expect("calc");
        mkfifo(&a.join("src/pipe"));
        std::os::unix::fs::symlink("/", a.join("src/root")).expect("link");
        for place in ["target", "src/target", "web/node_modules"] {
            std::fs::create_dir_all(a.join(place).join("deep")).expect("noise");
        }
        std::fs::create_dir_all(a.join("secret/inner")).expect("secret");
        std::fs::write(a.join("secret/inner/key"), "x").expect("key");
        std::fs::create_dir_all(a.join("web")).expect("web");

        let left = left_out(
            a,
            &There::Tree {
                path: f.to_path_buf(),
            },
        );
        assert_eq!(
            left.listed,
            vec![
                "calc/ (a git repository of its own)".to_string(),
                "secret/".to_string(),
                "web/".to_string(),
                "src/pipe (a FIFO)".to_string(),
                "src/root (a symbolic link)".to_string(),
                "target/ (build output or a cache, 2 folders)".to_string(),
            ],
            "{left:?}"
        );
        assert_eq!(left.count, 6);

        for n in 0..(NOT_IN_CHANGE_LISTED + 5) {
            std::fs::write(f.join(format!("only-in-agent-{n:02}")), "x").expect("file");
            std::fs::write(a.join(format!("only-in-agent-{n:02}")), "x").expect("file");
            std::fs::write(a.join(format!("left-{n:02}")), "x").expect("file");
        }
        let left = left_out(
            a,
            &There::Tree {
                path: f.to_path_buf(),
            },
        );
        assert_eq!(left.listed.len(), NOT_IN_CHANGE_LISTED);
        assert_eq!(left.count, 6 + NOT_IN_CHANGE_LISTED + 5);
    }

    /// Against a base tree and a change: what the change adds is there,
    /// what it deletes is not, the rest is the base's.
    #[test]
    fn against_a_base_tree_the_changes_paths_count() {
        let (agent, base) = (
            tempfile::tempdir().expect("agent"),
            tempfile::tempdir().expect("base"),
        );
        let (a, b) = (agent.path(), base.path());
        std::fs::write(b.join("kept.txt"), "x").expect("kept");
        std::fs::write(b.join("deleted.txt"), "x").expect("deleted");
        for f in ["kept.txt", "deleted.txt", "new/added.txt", "stray.txt"] {
            std::fs::create_dir_all(a.join(f).parent().expect("parent")).expect("dir");
            std::fs::write(a.join(f), "x").expect("file");
        }
        let there = There::Base {
            path: b.to_path_buf(),
            files: vec![PathBuf::from("new/added.txt")],
            dirs: vec![PathBuf::from("new")],
            gone: vec![PathBuf::from("deleted.txt")],
        };
        let left = left_out(a, &there);
        assert_eq!(
            left.listed,
            vec!["deleted.txt".to_string(), "stray.txt".to_string()]
        );
    }
}
