//! The project a pack's tasks belong to: its commits (through the `git`
//! command), its fingerprint, the test command its files call for, and the
//! clone of a pack's bundle that a run uses as the project.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use arena_domain::pack::{detect_test_command, DetectedCommand};

use super::{Pack, PackError};

/// The largest bundle a pack may carry.
const MAX_BUNDLE: u64 = 8 << 30;

/// Runs `git ARGS` in `dir` with nothing from the caller's git session
/// (a hook's `GIT_DIR`, a prompt) and returns its output.
pub(crate) fn git(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, PackError> {
    let what = args
        .iter()
        .find(|a| !a.starts_with('-') && !a.contains('='))
        .copied()
        .unwrap_or("")
        .to_string();
    let failed = |detail: String| PackError::Git {
        what: what.clone(),
        dir: dir.to_path_buf(),
        detail,
    };
    let mut command = git_command(dir, "credential.interactive=never", args, input.is_some());
    let mut child = command.spawn().map_err(|e| failed(e.to_string()))?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        let bytes = bytes.to_vec();
        // Written from a thread: git answers while it reads, and a full
        // output pipe would stall both.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }
    let out = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line = err.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(failed(format!("{} ({})", line.trim(), out.status)));
    }
    Ok(out.stdout)
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

/// The root of the git repository at `dir`, or a clear error.
pub fn repository_root(dir: &Path) -> Result<PathBuf, PackError> {
    if !dir.is_dir() {
        return Err(PackError::Usage(format!(
            "there is no folder {}; give --project the repository the tasks belong to",
            dir.display()
        )));
    }
    let out = git(dir, &["rev-parse", "--show-toplevel"], None).map_err(|_| {
        PackError::Usage(format!(
            "{} is not a git repository; give --project the repository the tasks belong to",
            dir.display()
        ))
    })?;
    Ok(PathBuf::from(String::from_utf8_lossy(&out).trim()))
}

/// Which of `commits` are not commits of the repository at `dir`.
pub fn missing_commits(dir: &Path, commits: &BTreeSet<String>) -> Result<Vec<String>, PackError> {
    if commits.is_empty() {
        return Ok(Vec::new());
    }
    let input: String = commits
        .iter()
        .map(|c| format!("{c}^{{commit}}\n"))
        .collect();
    let out = git(dir, &["cat-file", "--batch-check"], Some(input.as_bytes()))?;
    Ok(commits
        .iter()
        .zip(lines(&out))
        .filter(|(_, answer)| answer.ends_with("missing"))
        .map(|(c, _)| c.clone())
        .collect())
}

/// The root commits (no parent) `commits` descend from, sorted: the
/// repository's fingerprint.
pub fn roots_of(dir: &Path, commits: &BTreeSet<String>) -> Result<Vec<String>, PackError> {
    let mut args = vec!["rev-list", "--max-parents=0"];
    args.extend(commits.iter().map(String::as_str));
    let set: BTreeSet<String> = lines(&git(dir, &args, None)?).into_iter().collect();
    Ok(set.into_iter().collect())
}

/// The root commits of everything the repository at `dir` holds.
pub fn all_roots(dir: &Path) -> Result<Vec<String>, PackError> {
    let set: BTreeSet<String> = lines(&git(dir, &["rev-list", "--max-parents=0", "--all"], None)?)
        .into_iter()
        .collect();
    Ok(set.into_iter().collect())
}

/// The test command the files of `commit`'s tree call for.
pub fn detect_at(dir: &Path, commit: &str) -> Result<Option<DetectedCommand>, PackError> {
    let names = lines(&git(dir, &["ls-tree", "--name-only", commit], None)?);
    let read = |name: &str| -> Option<String> {
        let spec = format!("{commit}:{name}");
        let bytes = git(dir, &["cat-file", "blob", &spec], None).ok()?;
        // A manifest, not a data file: the first 256 KiB say enough.
        let cut = &bytes[..bytes.len().min(256 << 10)];
        Some(String::from_utf8_lossy(cut).into_owned())
    };
    Ok(detect_test_command(&names, &read))
}

/// Whether the project's cargo configuration at `commit` sets rustflags
/// (`.cargo/config.toml` or `.cargo/config`, `build` or a target's).
pub fn sets_rustflags_at(dir: &Path, commit: &str) -> bool {
    [".cargo/config.toml", ".cargo/config"].iter().any(|name| {
        git(
            dir,
            &["cat-file", "blob", &format!("{commit}:{name}")],
            None,
        )
        .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains("rustflags"))
    })
}

/// Bundles the project's `HEAD` (and its branch) into `file`, after
/// checking every base is in that history.
pub fn bundle(dir: &Path, bases: &BTreeSet<String>, file: &Path) -> Result<(), PackError> {
    let outside: Vec<&String> = bases
        .iter()
        .filter(|b| git(dir, &["merge-base", "--is-ancestor", b, "HEAD"], None).is_err())
        .collect();
    if !outside.is_empty() {
        return Err(PackError::Usage(format!(
            "--bundle carries the project's HEAD, and base {} is not in its history; check out a branch holding every base first",
            outside[0]
        )));
    }
    let branch = git(dir, &["symbolic-ref", "-q", "HEAD"], None)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .filter(|b| !b.is_empty());
    let file_arg = file.to_string_lossy().into_owned();
    // One thread: the same history gives the same bundle.
    let mut args = vec![
        "-c",
        "pack.threads=1",
        "bundle",
        "create",
        "-q",
        file_arg.as_str(),
        "HEAD",
    ];
    if let Some(b) = &branch {
        args.push(b);
    }
    git(dir, &args, None)?;
    Ok(())
}

/// The project of `pack`: its bundle cloned once into `into`, else into
/// Arena's data directory (`packs/<first root>/repo`), and that clone on
/// every later call. The clone is checked to be the pack's repository
/// (its roots) and to hold every task's base.
pub fn materialize_project(pack: &Pack, into: Option<&Path>) -> Result<PathBuf, PackError> {
    let repository = pack.manifest.repository.as_ref();
    let Some((repo, bundle)) = repository.and_then(|r| r.bundle.as_ref().map(|b| (r, b))) else {
        return Err(PackError::Usage(format!(
            "pack {} carries no repository (no [repository] bundle in pack.toml); give the project with --project",
            pack.root.display()
        )));
    };
    let bundle = pack.root.join(bundle);
    // An absolute path: git never takes it for a URL.
    let bundle = std::path::absolute(&bundle).unwrap_or(bundle);
    let name = Path::new(bundle.file_name().unwrap_or_default());
    match super::read::entry(&pack.root, name)? {
        None => {
            return Err(PackError::Refused {
                path: bundle,
                message: "is missing; pack.toml names it as the pack's repository".into(),
            })
        }
        Some(m) if !m.is_file() || m.len() > MAX_BUNDLE => {
            return Err(PackError::Refused {
                path: bundle,
                message: format!(
                    "is not a file of at most {}; a pack's bundle is a git bundle",
                    super::read::size(MAX_BUNDLE)
                ),
            })
        }
        Some(_) => {}
    }
    let dest = match into {
        Some(d) => d.to_path_buf(),
        None => crate::config::data_dir()
            .map_err(|e| PackError::Usage(e.to_string()))?
            .join("packs")
            .join(&repo.roots[0][..16])
            .join("repo"),
    };
    let bases: BTreeSet<String> = pack
        .tasks
        .iter()
        .filter_map(|t| t.meta.base_commit.clone())
        .collect();
    if !dest.exists() {
        let parent = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|source| PackError::Io {
            path: parent.to_path_buf(),
            source,
        })?;
        let tmp = tempfile::Builder::new()
            .prefix(".arena-clone-")
            .tempdir_in(parent)
            .map_err(|source| PackError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        let work = tmp.path().join("repo");
        let (b, w) = (bundle.to_string_lossy(), work.to_string_lossy());
        git(parent, &["clone", "-q", b.as_ref(), w.as_ref()], None)?;
        match std::fs::rename(&work, &dest) {
            Ok(()) => tracing::info!(dest = %dest.display(), "cloned the pack's bundle"),
            // Another run cloned it meanwhile: theirs is checked below.
            Err(_) if dest.exists() => {}
            Err(source) => return Err(PackError::Io { path: dest, source }),
        }
    }
    let roots = all_roots(&dest)?;
    if !repo.matches(&roots) {
        return Err(PackError::Usage(format!(
            "{} is not the pack's repository (its root commits differ); remove it or give another folder",
            dest.display()
        )));
    }
    let missing = missing_commits(&dest, &bases)?;
    if let Some(first) = missing.first() {
        return Err(PackError::Usage(format!(
            "{} lacks base {first} of the pack ({} bases missing); remove it so Arena clones the bundle again",
            dest.display(),
            missing.len()
        )));
    }
    Ok(dest)
}

/// Per base, the environment key of its tree (its lockfiles), when git can
/// tell.
pub fn environment_keys(dir: &Path, bases: &BTreeSet<String>) -> BTreeMap<String, String> {
    bases
        .iter()
        .filter_map(|b| match arena_agent::envkey::key_at(dir, b) {
            Ok(key) => Some((b.clone(), key.hex)),
            Err(e) => {
                tracing::warn!(base = %b, error = %e, "no environment key for a base");
                None
            }
        })
        .collect()
}

/// `git ARGS` in `dir` as Arena runs it on a repository it only reads or
/// packs: no hooks, no prompt, no system configuration, none of the
/// caller's `GIT_*` redirections, and `config` (`name=value`) set; stdin
/// piped when `input`, else closed; stdout and stderr piped.
pub(super) fn git_command(dir: &Path, config: &str, args: &[&str], input: bool) -> Command {
    let mut command = Command::new("git");
    command
        .args(["-c", "core.hooksPath=/dev/null", "-c", config])
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        // A path from the repository is a path, never a pattern.
        .env("GIT_LITERAL_PATHSPECS", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
        .env_remove("GIT_NAMESPACE")
        .stdin(if input { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}
