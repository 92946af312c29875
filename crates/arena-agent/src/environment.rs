//! The project's own environment inside a Coding battle's jails: the
//! dependency and build folders the user installed and git ignores
//! (`node_modules`, a virtualenv, Cargo's `target`, …), and the caches the
//! toolchains keep. A jail sees each at its usual place, copy-on-write:
//!
//! - **Found** ([`find`]): `node_modules` beside a `package.json`, a
//!   virtualenv (a folder with a `pyvenv.cfg`), `target` beside a
//!   `Cargo.toml`, `vendor` beside a `go.mod`, `composer.json` or
//!   `Gemfile`, `.gradle` and `build` beside a Gradle build file, and what
//!   the user lists (`[coding] environment`, the project's
//!   `.arena/environment`); only folders git ignores (a tracked folder
//!   comes with the checkout), reached without a link.
//! - **Mounted** ([`Layer`]): an overlay whose lower layer is the user's
//!   folder (never written) and whose upper layer is the contestant's own
//!   (what it installs or rebuilds lands there). bubblewrap 0.8 cannot make
//!   overlays, so the child that becomes bwrap makes them itself
//!   ([`Mounts::enter`], between `fork` and `exec`): in a mount namespace
//!   of its own (and, unless Arena runs as root, a user namespace of its
//!   own, where the kernel lets anyone mount an overlay, Linux 5.11 and
//!   later), so the mounts exist for that jail only and end with it,
//!   however it ends. bwrap then binds them into the tree.
//! - **Where overlays cannot be mounted** ([`copy_on_write`] says why),
//!   each folder is bound read-only: programs run, a build that writes
//!   into `target` fails.

use std::ffi::CString;
use std::path::{Component, Path, PathBuf};

/// One folder of the environment: `rel` in the tree, the user's `lower`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    pub rel: PathBuf,
    pub lower: PathBuf,
    /// What it is: `node_modules`, `virtualenv`, `cargo target`, `vendor`,
    /// `gradle`, `listed`.
    pub kind: &'static str,
}

/// How deep [`find`] looks for project files below the root.
pub const WALK_DEPTH: usize = 6;
/// How many folders [`find`] looks at, at most.
pub const WALK_FOLDERS: usize = 5_000;

/// Folders never walked into while looking (they hold no project of
/// their own worth mounting, or too much).
const NOT_WALKED: &[&str] = &[".git", "node_modules", "__pycache__", ".hg", ".svn"];

/// The environment folders of the project at `root`, in walk order: those
/// found by the files beside them, then `listed` (paths relative to
/// `root`: `[coding] environment`, then the lines of `.arena/environment`
/// in `root`). Each is a real folder (no link on the way), ignored by git
/// where `root` is a repository, and its path fits an overlay's options
/// (UTF-8, no `,`, `:` or `\`); none is inside another.
pub fn find(root: &Path, listed: &[String]) -> Vec<Folder> {
    let ignored = Ignored::open(root);
    let mut found: Vec<Folder> = Vec::new();
    let mut queue: std::collections::VecDeque<(PathBuf, usize)> =
        std::collections::VecDeque::from([(PathBuf::new(), 0)]);
    let mut seen = 0usize;
    while let Some((rel, depth)) = queue.pop_front() {
        seen += 1;
        if seen > WALK_FOLDERS {
            tracing::debug!(root = %root.display(), "environment walk stopped at its bound");
            break;
        }
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        let mut files: Vec<String> = Vec::new();
        let mut dirs: Vec<String> = Vec::new();
        for entry in entries.flatten().take(WALK_FOLDERS) {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let Some(name) = entry.file_name().to_str().map(String::from) else {
                continue;
            };
            if kind.is_dir() {
                dirs.push(name);
            } else if kind.is_file() {
                files.push(name);
            }
        }
        dirs.sort();
        let has = |name: &str| files.iter().any(|f| f == name);
        let has_dir = |name: &str| dirs.iter().any(|d| d == name);
        let mut claimed: Vec<(String, &'static str)> = Vec::new();
        if has("package.json") && has_dir("node_modules") {
            claimed.push(("node_modules".into(), "node_modules"));
        }
        if has("Cargo.toml") && has_dir("target") {
            claimed.push(("target".into(), "cargo target"));
        }
        if (has("go.mod") || has("composer.json") || has("Gemfile")) && has_dir("vendor") {
            claimed.push(("vendor".into(), "vendor"));
        }
        let gradle = [
            "build.gradle",
            "build.gradle.kts",
            "settings.gradle",
            "settings.gradle.kts",
        ];
        if gradle.iter().any(|f| has(f)) {
            for dir in [".gradle", "build"] {
                if has_dir(dir) {
                    claimed.push((dir.into(), "gradle"));
                }
            }
        }
        for dir in &dirs {
            if root.join(&rel).join(dir).join("pyvenv.cfg").is_file() {
                claimed.push((dir.clone(), "virtualenv"));
            }
        }
        for (name, kind) in &claimed {
            let path = rel.join(name);
            if ignored.is_ignored(&path) && fits_overlay(&root.join(&path)) {
                found.push(Folder {
                    lower: root.join(&path),
                    rel: path,
                    kind,
                });
            }
        }
        if depth < WALK_DEPTH {
            for dir in dirs {
                if NOT_WALKED.contains(&dir.as_str()) || claimed.iter().any(|(c, _)| *c == dir) {
                    continue;
                }
                queue.push_back((rel.join(dir), depth + 1));
            }
        }
    }
    let file = std::fs::read_to_string(root.join(".arena").join("environment")).unwrap_or_default();
    let listed = listed
        .iter()
        .map(String::as_str)
        .chain(file.lines().map(str::trim))
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    for line in listed {
        let Some(rel) = relative(line) else {
            tracing::warn!(
                path = line,
                "an environment folder that is not a plain relative path is left out"
            );
            continue;
        };
        if found
            .iter()
            .any(|f| rel.starts_with(&f.rel) || f.rel.starts_with(&rel))
        {
            continue;
        }
        let lower = root.join(&rel);
        if real_folder(root, &rel) && ignored.is_ignored(&rel) && fits_overlay(&lower) {
            found.push(Folder {
                rel,
                lower,
                kind: "listed",
            });
        } else {
            tracing::warn!(path = line, "a listed environment folder is missing, reached through a link, or tracked by git: left out");
        }
    }
    found
}

/// `line` as a path relative to a root, with no `..`, no root and no `.`
/// parts left (`None` otherwise).
fn relative(line: &str) -> Option<PathBuf> {
    let path = Path::new(line.trim_end_matches('/'));
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Whether every step from `root` to `root/rel` is a real folder (no link).
fn real_folder(root: &Path, rel: &Path) -> bool {
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_dir() => {}
            _ => return false,
        }
    }
    true
}

/// Whether `path` can be named in an overlay's options (which `,` and `:`
/// separate).
fn fits_overlay(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|p| !p.contains([',', ':', '\\']) && !p.is_empty())
}

/// What git ignores in a repository (everything, where it is none).
struct Ignored(Option<git2::Repository>);

impl Ignored {
    fn open(root: &Path) -> Ignored {
        let repo = git2::Repository::open(root)
            .ok()
            .filter(|r| r.workdir().is_some());
        Ignored(repo)
    }

    fn is_ignored(&self, rel: &Path) -> bool {
        match &self.0 {
            None => true,
            Some(repo) => {
                // Asked as a folder (the trailing `/` matters to `dir/`).
                let text = format!("{}/", rel.to_string_lossy());
                repo.is_path_ignored(Path::new(&text)).unwrap_or(false)
                    || repo.is_path_ignored(rel).unwrap_or(false)
            }
        }
    }
}

/// One overlay (or read-only folder) in a jail: `lower` seen at `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The folder it shows (never written).
    pub lower: PathBuf,
    /// Where the jail sees it (in its tree, or its home).
    pub at: PathBuf,
    /// The folder of its own layer (`upper`, `work` and the mount point
    /// `merged` inside), which Arena owns; `None`: `lower` read-only.
    pub state: Option<PathBuf>,
}

impl Layer {
    /// The mount point the jail binds at `at`.
    pub fn merged(&self) -> Option<PathBuf> {
        self.state.as_ref().map(|s| s.join("merged"))
    }
}

/// Where a contestant's worktree keeps its own layers of the environment
/// from run to run: beside it, `<name>.env` (removed with it).
pub fn layers_of(worktree: &Path) -> PathBuf {
    let mut name = worktree.file_name().unwrap_or_default().to_os_string();
    name.push(".env");
    worktree.with_file_name(name)
}

/// Whether this machine can mount a jail's overlays, and how: `Ok` with
/// the way (as root, in a mount namespace; else in a user namespace), or
/// why not. Tried once per process, with a real overlay in a child.
pub fn copy_on_write() -> Result<Mode, String> {
    static TRIED: std::sync::OnceLock<Result<Mode, String>> = std::sync::OnceLock::new();
    TRIED
        .get_or_init(|| {
            if std::env::var_os("ARENA_TEST_NO_OVERLAY").is_some() {
                return Err("turned off for this test (ARENA_TEST_NO_OVERLAY)".into());
            }
            let first = if is_root() { Mode::Root } else { Mode::User };
            let mut why = String::new();
            for mode in [first, Mode::User] {
                match trial(mode) {
                    Ok(()) => return Ok(mode),
                    Err(e) => why = e,
                }
            }
            Err(why)
        })
        .clone()
}

/// How a jail's overlays are mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Arena is root: a mount namespace of the child's own.
    Root,
    /// A user namespace (the child's uid mapped to itself) with a mount
    /// namespace: the overlay keeps its bookkeeping in `user.` attributes.
    User,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Root => write!(f, "overlays in a mount namespace, as root"),
            Mode::User => write!(f, "overlays in a user namespace"),
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no failure mode and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Mounts one overlay over a temporary folder in a child, the way a jail's
/// are mounted.
fn trial(mode: Mode) -> Result<(), String> {
    let dir = tempfile::Builder::new()
        .prefix("arena-overlay-trial")
        .tempdir()
        .map_err(|e| format!("a temporary folder for the trial: {e}"))?;
    let lower = dir.path().join("lower");
    std::fs::create_dir_all(&lower).map_err(|e| e.to_string())?;
    std::fs::write(lower.join("file"), "lower").map_err(|e| e.to_string())?;
    let layer = Layer {
        lower,
        at: dir.path().join("at"),
        state: Some(dir.path().join("state")),
    };
    let mounts = Mounts::prepare_with(std::slice::from_ref(&layer), mode)
        .map_err(|e| e.to_string())?
        .ok_or("nothing to mount")?;
    let merged = layer.merged().ok_or("no mount point")?;
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("echo upper > \"$1/new\" && cat \"$1/file\"")
        .arg("sh")
        .arg(&merged)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    use std::os::unix::process::CommandExt;
    // SAFETY: `enter` makes only system calls on prepared strings.
    unsafe {
        cmd.pre_exec(move || mounts.enter());
    }
    let out = cmd.output().map_err(|e| format!("the trial: {e}"))?;
    let written = layer
        .state
        .as_ref()
        .map(|s| s.join("upper").join("new").is_file())
        .unwrap_or(false);
    let result = if out.status.success()
        && String::from_utf8_lossy(&out.stdout).trim() == "lower"
        && written
    {
        Ok(())
    } else {
        Err(format!(
            "the kernel refused an overlay {} ({}): {}",
            match mode {
                Mode::Root => "in a mount namespace",
                Mode::User => "in a user namespace (Linux 5.11 or later lets anyone mount one)",
            },
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    };
    remove(dir.path());
    result
}

/// A jail's overlays, ready to be mounted in the child between `fork` and
/// `exec` ([`Mounts::enter`]): every string made beforehand.
#[derive(Debug)]
pub struct Mounts {
    /// The maps of the user namespace (`None` as root).
    user: Option<(CString, CString)>,
    /// Each overlay's mount point and options.
    overlays: Vec<(CString, CString)>,
}

impl Mounts {
    /// The mounts of `layers` that have a layer of their own, their
    /// folders made; `None` when there is none (or where overlays cannot
    /// be mounted: those layers are bound read-only instead).
    pub fn prepare(layers: &[Layer]) -> std::io::Result<Option<Mounts>> {
        match copy_on_write() {
            Ok(mode) => Mounts::prepare_with(layers, mode),
            Err(_) => Ok(None),
        }
    }

    fn prepare_with(layers: &[Layer], mode: Mode) -> std::io::Result<Option<Mounts>> {
        let mut overlays = Vec::new();
        for layer in layers {
            let Some(state) = &layer.state else { continue };
            let (upper, work, merged) = (
                state.join("upper"),
                state.join("work"),
                state.join("merged"),
            );
            for dir in [&upper, &work, &merged] {
                std::fs::create_dir_all(dir)?;
            }
            let text = |p: &Path| {
                p.to_str()
                    .filter(|_| fits_overlay(p))
                    .map(String::from)
                    .ok_or_else(|| {
                        std::io::Error::other(format!(
                            "`{}` cannot be named in an overlay's options (not UTF-8, or a `,`, `:` or `\\` in it)",
                            p.display()
                        ))
                    })
            };
            let mut options = format!(
                "lowerdir={},upperdir={},workdir={}",
                text(&layer.lower)?,
                text(&upper)?,
                text(&work)?
            );
            if mode == Mode::User {
                options.push_str(",userxattr");
            }
            overlays.push((cstring(&text(&merged)?)?, cstring(&options)?));
        }
        if overlays.is_empty() {
            return Ok(None);
        }
        let user = match mode {
            Mode::Root => None,
            Mode::User => {
                // SAFETY: getuid/getgid have no failure mode.
                let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
                Some((
                    cstring(&format!("{uid} {uid} 1"))?,
                    cstring(&format!("{gid} {gid} 1"))?,
                ))
            }
        };
        Ok(Some(Mounts { user, overlays }))
    }

    /// In the child, before it becomes bwrap: a mount namespace of its own
    /// (with a user namespace unless root), nothing of it shared back, and
    /// the overlays mounted. Only system calls on strings made before the
    /// fork; no allocation.
    pub fn enter(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        // SAFETY: system calls on NUL-terminated strings this value owns.
        unsafe {
            match &self.user {
                Some((uid_map, gid_map)) => {
                    if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                        return fail();
                    }
                    for (file, text) in [
                        (c"/proc/self/setgroups", c"deny"),
                        (c"/proc/self/uid_map", uid_map.as_c_str()),
                        (c"/proc/self/gid_map", gid_map.as_c_str()),
                    ] {
                        let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                        if fd < 0 {
                            return fail();
                        }
                        let len = text.to_bytes().len();
                        let written = libc::write(fd, text.as_ptr().cast(), len);
                        libc::close(fd);
                        if written != len as isize {
                            return fail();
                        }
                    }
                }
                None => {
                    if libc::unshare(libc::CLONE_NEWNS) != 0 {
                        return fail();
                    }
                }
            }
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return fail();
            }
            for (target, options) in &self.overlays {
                if libc::mount(
                    c"overlay".as_ptr(),
                    target.as_ptr(),
                    c"overlay".as_ptr(),
                    0,
                    options.as_ptr().cast(),
                ) != 0
                {
                    return fail();
                }
            }
        }
        Ok(())
    }
}

fn cstring(text: &str) -> std::io::Result<CString> {
    CString::new(text).map_err(|_| std::io::Error::other(format!("a NUL in {text:?}")))
}

/// Removes `path` and everything in it, making folders enterable first
/// where needed (an overlay leaves a `work/work` folder no one may enter
/// when it is not root's). Errors are logged, not returned.
pub fn remove(path: &Path) {
    match std::fs::remove_dir_all(path) {
        Ok(()) => return,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(_) => {}
    }
    open_up(path, 0);
    if let Err(e) = std::fs::remove_dir_all(path) {
        tracing::warn!(path = %path.display(), error = %e, "could not remove a layer of the environment");
    }
}

fn open_up(path: &Path, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_dir() || depth > 64 {
        return;
    }
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            open_up(&entry.path(), depth + 1);
        }
    }
}

/// The caches the toolchains keep in the user's home, by the variable
/// that moves each and its usual place: (where it is, where it goes in
/// the jail's `home`). Only content stores, never the tools' configuration
/// (which holds tokens): npm's `_cacache`, pip's and uv's caches, Gradle's
/// `caches` and `wrapper`, Maven's `repository`. Cargo's downloads and
/// Go's modules come with the toolchains ([`crate::sandbox::toolchains`]).
pub fn caches(
    real_home: &Path,
    var: impl Fn(&str) -> Option<PathBuf>,
    home: &Path,
) -> Vec<(PathBuf, PathBuf)> {
    let cache_home = var("XDG_CACHE_HOME").unwrap_or_else(|| real_home.join(".cache"));
    let npm = var("npm_config_cache").unwrap_or_else(|| real_home.join(".npm"));
    let gradle = var("GRADLE_USER_HOME").unwrap_or_else(|| real_home.join(".gradle"));
    let candidates = [
        (npm.join("_cacache"), home.join(".npm/_cacache")),
        (
            var("PIP_CACHE_DIR").unwrap_or_else(|| cache_home.join("pip")),
            home.join(".cache/pip"),
        ),
        (
            var("UV_CACHE_DIR").unwrap_or_else(|| cache_home.join("uv")),
            home.join(".cache/uv"),
        ),
        (gradle.join("caches"), home.join(".gradle/caches")),
        (gradle.join("wrapper"), home.join(".gradle/wrapper")),
        (
            real_home.join(".m2/repository"),
            home.join(".m2/repository"),
        ),
    ];
    candidates
        .into_iter()
        .filter(|(from, _)| {
            std::fs::symlink_metadata(from).is_ok_and(|m| m.is_dir()) && fits_overlay(from)
        })
        .collect()
}

/// The interpreters the environment's folders run on, which a jail must
/// be able to read: a virtualenv's `python` (it links out of it, to the
/// installation that made it).
pub fn interpreters(folders: &[Folder]) -> Vec<PathBuf> {
    folders
        .iter()
        .filter(|f| f.kind == "virtualenv")
        .filter_map(|f| std::fs::canonicalize(f.lower.join("bin").join("python")).ok())
        .collect()
}

/// The size of a folder's files in bytes, not following links, within a
/// bound of entries (`None` past it).
pub fn size(path: &Path, max_entries: usize) -> Option<u64> {
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > max_entries {
                return None;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    }

    #[test]
    fn the_ignored_folders_beside_their_project_files_are_found_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [
            "node_modules/x",
            "web/node_modules/y",
            "web/node_modules/z/node_modules",
            ".venv/bin",
            "crate/target/debug",
            "vendor/a",
            "lonely/node_modules",
            "app/.gradle",
            "app/build",
            "tracked/vendor",
            "data/cache",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "package.json",
            "web/package.json",
            ".venv/pyvenv.cfg",
            "crate/Cargo.toml",
            "go.mod",
            "app/build.gradle.kts",
            "tracked/go.mod",
            "tracked/vendor/keep.go",
        ] {
            std::fs::write(root.join(f), "").unwrap();
        }
        std::fs::write(
            root.join(".gitignore"),
            "node_modules/\n.venv/\ntarget/\n/vendor/\n.gradle/\nbuild/\ndata/\nlonely/\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".arena")).unwrap();
        std::fs::write(
            root.join(".arena/environment"),
            "# more\ndata/cache\n../up\n/abs\n",
        )
        .unwrap();
        git(root, &["init", "-q"]);
        git(root, &["add", "-A"]);
        let found = find(root, &["missing".into()]);
        let rels: Vec<String> = found.iter().map(|f| f.rel.display().to_string()).collect();
        assert_eq!(
            rels,
            [
                "node_modules",
                "vendor",
                ".venv",
                "app/.gradle",
                "app/build",
                "crate/target",
                "web/node_modules",
                "data/cache",
            ],
            "{found:?}"
        );
        assert_eq!(found[2].kind, "virtualenv");
        assert_eq!(found[2].lower, root.join(".venv"));
    }

    #[cfg(unix)]
    #[test]
    fn a_listed_folder_through_a_link_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("p");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
        std::fs::create_dir_all(dir.path().join("secret")).unwrap();
        let found = find(&root, &["link/secret".into(), "real".into()]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rel, PathBuf::from("real"));
    }

    #[test]
    fn an_overlay_is_mounted_where_the_machine_can_and_the_lower_folder_is_never_written() {
        let Ok(mode) = copy_on_write() else {
            eprintln!("skipped: no overlays here: {:?}", copy_on_write());
            return;
        };
        trial(mode).unwrap();
    }
}
