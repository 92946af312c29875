//! The agent sandbox: what an agent process may touch, enforced by the
//! kernel (Landlock on Linux). A [`Sandbox`] lists the folders it may read
//! (and run programs from), the folders it may change, and the TCP ports
//! it may connect to; everything else on the file system is refused, for
//! the agent and everything it starts. The ruleset is built in this
//! process and applied in the child between `fork` and `exec`
//! ([`Sandbox::ruleset`], then [`Prepared::apply`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What one sandboxed process may do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sandbox {
    /// Read files, list folders and run programs beneath these.
    pub read: Vec<PathBuf>,
    /// Also create, change and remove beneath these.
    pub write: Vec<PathBuf>,
    /// TCP ports it may connect to; `None`: any.
    pub connect: Option<Vec<u16>>,
    /// How the kernel enforces it.
    pub enforcement: Enforcement,
    /// The project's environment in its tree and the toolchains' caches in
    /// its home ([`crate::environment`]): copy-on-write overlays, or
    /// read-only folders; in a jail only.
    pub layers: Vec<crate::environment::Layer>,
    /// Symbolic links in a jail: `(where, what it leads to)`. The user's
    /// project path leads into the contestant's tree, so that paths the
    /// environment holds into the project (a virtualenv's `#!` lines, an
    /// editable install) resolve there; in a jail only.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// `(tree, the project's path)`: a check's tree is seen at the user's
    /// project path as well, and works there (instead of [`Self::links`]),
    /// so that what a build recorded of the project's own path (rustc's
    /// incremental cache) still holds; in a jail only.
    pub tree_at: Option<(PathBuf, PathBuf)>,
}

/// How a [`Sandbox`] is enforced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Enforcement {
    /// A bubblewrap jail ([`crate::jail`]): its own namespaces, file system,
    /// network and seccomp filter.
    #[default]
    Jail,
    /// Landlock alone, applied before the program starts (`sandbox =
    /// "landlock"`: where no jail can be built).
    Landlock,
}

/// A sandbox with the environment that goes with it (its own `HOME` and
/// `TMPDIR`).
#[derive(Debug, Clone, PartialEq)]
pub struct Confinement {
    pub sandbox: Sandbox,
    pub env: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "this system's kernel has no Landlock (Linux 5.13 or later, enabled at boot), so \
         agents cannot run sandboxed; to run them without a sandbox, set `sandbox = \"off\"` \
         under [limits] in arena.toml"
    )]
    Unsupported,
    #[error("setting up the agent sandbox: {0}")]
    Ruleset(String),
}

/// The Landlock ABI of the running kernel (0: none).
pub fn abi_version() -> i32 {
    #[cfg(target_os = "linux")]
    {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: a null attribute and size 0 with the VERSION flag only
        // asks for the ABI version.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        i32::try_from(v).unwrap_or(0).max(0)
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// Whether agents can be sandboxed here. (`ARENA_TEST_NO_LANDLOCK` set
/// pretends they cannot, so the refusal can be tested on kernels that can.)
pub fn supported() -> bool {
    std::env::var_os("ARENA_TEST_NO_LANDLOCK").is_none() && abi_version() >= 1
}

/// Folders every program needs to read: the system's programs, libraries,
/// configuration and the kernel's views of itself.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/run/systemd/resolve",
];

impl Sandbox {
    /// A sandbox that may read the system folders and `read`, change
    /// `write` (and the usual devices: `/dev/null`, `/dev/shm`, …).
    pub fn new(read: Vec<PathBuf>, write: Vec<PathBuf>, connect: Option<Vec<u16>>) -> Sandbox {
        let mut all_read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        all_read.extend(read);
        let mut all_write = vec![PathBuf::from("/dev")];
        all_write.extend(write);
        Sandbox {
            read: all_read,
            write: all_write,
            connect,
            enforcement: Enforcement::Jail,
            layers: Vec::new(),
            links: Vec::new(),
            tree_at: None,
        }
    }

    /// Builds the kernel ruleset (in this process: it opens the folders).
    /// Folders that do not exist are left out.
    #[cfg(target_os = "linux")]
    pub fn ruleset(&self) -> Result<Prepared, SandboxError> {
        use landlock::{
            Access, AccessFs, AccessNet, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
            RulesetCreatedAttr, Scope, ABI,
        };
        if !supported() {
            return Err(SandboxError::Unsupported);
        }
        let abi = ABI::V5;
        let err = |e: landlock::RulesetError| SandboxError::Ruleset(e.to_string());
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(err)?;
        if self.connect.is_some() {
            ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(err)?;
        }
        // Abstract UNIX sockets (a D-Bus session bus, say) and signals to
        // processes outside the sandbox, where the kernel knows them (ABI 6).
        ruleset = ruleset
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(err)?;
        let mut created = ruleset.create().map_err(err)?;
        let read = AccessFs::from_read(abi);
        let all = AccessFs::from_all(abi);
        for (paths, access) in [(&self.read, read), (&self.write, all)] {
            for path in paths {
                let Ok(fd) = PathFd::new(path) else { continue };
                // A file takes only file rights; a folder takes them all.
                let access = if path.is_dir() {
                    access
                } else {
                    access & AccessFs::from_file(abi)
                };
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(err)?;
            }
        }
        for port in self.connect.iter().flatten() {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(err)?;
        }
        Ok(Prepared(Mutex::new(Some(created))))
    }

    #[cfg(not(target_os = "linux"))]
    pub fn ruleset(&self) -> Result<Prepared, SandboxError> {
        Err(SandboxError::Unsupported)
    }
}

/// `path` with `.` and `name/..` taken out, as written (no link is
/// resolved): the same place for the paths Arena builds by joining.
pub fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Landlock's scoping alone (no file system or network rules, which would
/// keep bwrap from mounting): a jailed process cannot connect to an
/// abstract UNIX socket or signal a process outside its domain. Applied to
/// bwrap before it starts, so the whole jail inherits it; `None` where the
/// kernel has no scoping (Landlock ABI before 6).
#[cfg(target_os = "linux")]
pub fn scope_only() -> Option<Prepared> {
    use landlock::{Ruleset, RulesetAttr, Scope};
    if abi_version() < 6 {
        return None;
    }
    let created = Ruleset::default()
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .ok()?
        .create()
        .ok()?;
    Some(Prepared(Mutex::new(Some(created))))
}

#[cfg(not(target_os = "linux"))]
pub fn scope_only() -> Option<Prepared> {
    None
}

/// A ruleset ready to restrict one child process.
pub struct Prepared(
    #[cfg(target_os = "linux")] Mutex<Option<landlock::RulesetCreated>>,
    #[cfg(not(target_os = "linux"))] Mutex<Option<()>>,
);

impl Prepared {
    /// Restricts the calling process (the child, after `fork`, before
    /// `exec`): no allocation on the way that succeeds.
    pub fn apply(&self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            let ruleset = self.0.lock().ok().and_then(|mut r| r.take());
            match ruleset.map(landlock::RulesetCreated::restrict_self) {
                Some(Ok(status)) if status.ruleset != landlock::RulesetStatus::NotEnforced => {
                    Ok(())
                }
                _ => Err(std::io::Error::from_raw_os_error(libc::EPERM)),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Err(std::io::Error::from_raw_os_error(1))
        }
    }
}

/// The folders a program needs beyond the system's: what it is and what
/// it really loads from, never the whole prefix it is installed in (a
/// `~/.cargo`, `~/.local`, `~/go` or `~/.bun` holds the user's tokens and
/// sign-ins beside its `bin`).
///
/// - The folder it is found in (a `bin` on `PATH`, often a folder of
///   links); in a `node_modules/.bin`, that `node_modules`.
/// - For the file it really is (links followed), and for a script's
///   interpreter: in a `X/bin`, that `X/bin` and the folders beside it a
///   program loads from, `X/lib`, `X/lib64`, `X/libexec` and
///   `X/share/NAME` (its own data, not all of `X/share`: under a home
///   that is `~/.local/share`, with keyrings and agents' sign-ins);
///   elsewhere, its own folder. In a `node_modules` tree, that
///   `node_modules` folder (a package's dependencies may be hoisted
///   beside it).
/// - A virtualenv's `bin/python` links out of the virtualenv, which is
///   found by its `pyvenv.cfg` (and holds its packages): the virtualenv.
/// - A rustup proxy (`cargo`, `rustc`, … beside `rustup` in its `bin`):
///   rustup's `settings.toml` and toolchains (`RUSTUP_HOME`).
pub fn installation(program: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    // The system folders are readable anyway.
    let system = |dir: &Path| SYSTEM_READ.iter().any(|s| dir.starts_with(s));
    let mut add = |dirs: Vec<PathBuf>| {
        for dir in dirs {
            if dir != Path::new("/") && !system(&dir) && !out.contains(&dir) {
                out.push(dir);
            }
        }
    };
    add(node_modules(program)
        .or_else(|| program.parent().map(Path::to_path_buf))
        .into_iter()
        .collect());
    let venv = program
        .parent()
        .filter(|bin| bin.file_name().is_some_and(|n| n == "bin"))
        .and_then(Path::parent)
        .filter(|root| root.join("pyvenv.cfg").is_file());
    add(venv.map(Path::to_path_buf).into_iter().collect());
    if is_rustup_proxy(program) {
        add(rustup_home().map(|h| rustup_reads(&h)).unwrap_or_default());
    }
    add(version_manager_reads(program));
    if let Ok(real) = program.canonicalize() {
        add(loads_from(&real));
        if let Some(interpreter) = shebang(&real) {
            add(loads_from(&interpreter));
            if let Ok(real) = interpreter.canonicalize() {
                add(loads_from(&real));
            }
        }
    }
    out
}

/// What a version manager's shim (`~/.pyenv/shims/python3`, and rbenv's,
/// nodenv's, goenv's alike: a script that runs `ROOT/libexec/NAME exec`)
/// loads: the manager's own programs, plugins and hooks and the versions
/// it installed, found beside its `shims` folder. Not its root as a whole
/// (it holds its sources and tests, and whatever the user put there).
fn version_manager_reads(program: &Path) -> Vec<PathBuf> {
    let Some(root) = program
        .parent()
        .filter(|dir| dir.file_name().is_some_and(|n| n == "shims"))
        .and_then(Path::parent)
    else {
        return Vec::new();
    };
    let Some(name) = root
        .file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.trim_start_matches('.'))
        .filter(|n| n.ends_with("env") && root.join("libexec").join(n).is_file())
    else {
        return Vec::new();
    };
    let hooks = format!("{name}.d");
    [
        "bin",
        "libexec",
        "plugins",
        "shims",
        "versions",
        "version",
        hooks.as_str(),
    ]
    .iter()
    .map(|entry| root.join(entry))
    .filter(|path| path.exists())
    .collect()
}

/// The `node_modules` folder `path` is in (the outermost).
fn node_modules(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .map(Path::to_path_buf)
}

/// What a program file (links followed) loads from: see [`installation`].
fn loads_from(real: &Path) -> Vec<PathBuf> {
    if let Some(tree) = node_modules(real) {
        return vec![tree];
    }
    let Some(dir) = real.parent() else {
        return Vec::new();
    };
    let mut out = vec![dir.to_path_buf()];
    let prefix = dir
        .parent()
        .filter(|_| dir.file_name().is_some_and(|n| n == "bin"));
    if let Some(prefix) = prefix {
        if prefix.join("pyvenv.cfg").is_file() {
            out.push(prefix.to_path_buf());
        }
        for sub in ["lib", "lib64", "libexec"] {
            let lib = prefix.join(sub);
            if lib.is_dir() {
                out.push(lib);
            }
        }
        if let Some(name) = real.file_name() {
            let share = prefix.join("share").join(name);
            if share.is_dir() {
                out.push(share);
            }
        }
    }
    out
}

/// rustup's proxies: the names it installs as links to itself.
const RUSTUP_PROXIES: &[&str] = &[
    "cargo",
    "cargo-clippy",
    "cargo-fmt",
    "cargo-miri",
    "clippy-driver",
    "rls",
    "rust-analyzer",
    "rust-gdb",
    "rust-gdbgui",
    "rust-lldb",
    "rustc",
    "rustdoc",
    "rustfmt",
    "rustup",
];

/// Whether `program` is rustup (or one of its proxies): named as one, and
/// the same file as the `rustup` beside it (a symbolic or a hard link).
fn is_rustup_proxy(program: &Path) -> bool {
    let named = program
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| RUSTUP_PROXIES.contains(&n));
    let Some(rustup) = program.parent().map(|bin| bin.join("rustup")) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let same = match (std::fs::metadata(program), std::fs::metadata(&rustup)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        named && same
    }
    #[cfg(not(unix))]
    {
        named && rustup.is_file()
    }
}

/// What rustup's proxies read of its home: which toolchain
/// (`settings.toml`), the toolchains, and the channels' hashes (a proxy
/// stops if it cannot find that folder); not its downloads or its
/// temporary files.
fn rustup_reads(home: &Path) -> Vec<PathBuf> {
    ["settings.toml", "toolchains", "update-hashes"]
        .iter()
        .map(|p| home.join(p))
        .collect()
}

/// rustup's home: `RUSTUP_HOME`, else `~/.rustup`.
fn rustup_home() -> Option<PathBuf> {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))
        .filter(|h| h.is_absolute() && h.is_dir())
}

/// Leaves out of `read` what would open too much: the file system's root,
/// the user's home itself, and any folder holding Arena's data directory
/// (a `PATH` entry or an installation in the wrong place).
pub fn without_private(read: Vec<PathBuf>, data_dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    read.into_iter()
        .filter(|p| p != Path::new("/") && Some(p.as_path()) != home && !data_dir.starts_with(p))
        .collect()
}

/// The interpreter named by a script's `#!` line (not `env`).
fn shebang(script: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = std::str::from_utf8(&head[..n]).ok()?.strip_prefix("#!")?;
    let interpreter = line.lines().next()?.split_whitespace().next()?;
    let path = PathBuf::from(interpreter);
    (path.is_absolute() && !path.ends_with("env")).then_some(path)
}

/// Gives an agent that keeps its own configuration (no Arena provider)
/// its configuration in its scratch `home`: each of `entries` (relative to
/// the user's `real_home`) that exists is linked there, and returned so the
/// sandbox can open it for reading. Folders along the way are real folders
/// of the scratch home, so the agent can still write new files (or replace
/// a linked one by renaming over the link); the user's own files stay as
/// they are.
pub fn link_own_config(
    home: &Path,
    real_home: &Path,
    entries: &[&str],
) -> std::io::Result<Vec<PathBuf>> {
    let mut read = Vec::new();
    for entry in entries {
        let real = real_home.join(entry);
        if std::fs::symlink_metadata(&real).is_err() {
            continue;
        }
        let link = home.join(entry);
        if let Some(dir) = link.parent() {
            std::fs::create_dir_all(dir)?;
        }
        if std::fs::symlink_metadata(&link).is_err() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(&real, &link)?;
        }
        // The sandbox opens what the link leads to.
        read.push(real.canonicalize().unwrap_or(real));
    }
    Ok(read)
}

/// What a check command needs of your toolchains besides `PATH`, given
/// your home and the environment: folders to read, layers, and the
/// variables that point the tools at them (its `HOME` is a scratch
/// folder). Rust: the rustup toolchains, and a cargo home of its own at
/// your cargo home's place with your downloaded crates as overlays (where
/// overlays cannot be mounted: a cargo home in `scratch` linking to them);
/// Go: the module cache.
pub fn toolchains(
    real_home: Option<&Path>,
    var: impl Fn(&str) -> Option<PathBuf>,
    scratch: &Path,
) -> std::io::Result<Toolchains> {
    let mut read = Vec::new();
    let mut env = Vec::new();
    let under_home = |name: &str, rel: &str| var(name).or_else(|| real_home.map(|h| h.join(rel)));
    if let Some(rustup) = under_home("RUSTUP_HOME", ".rustup").filter(|d| d.is_dir()) {
        env.push(("RUSTUP_HOME".into(), rustup.to_string_lossy().into_owned()));
        read.extend(rustup_reads(&rustup));
    }
    let mut layers = Vec::new();
    if let Some(cargo) = under_home("CARGO_HOME", ".cargo").filter(|d| d.is_dir()) {
        let own = scratch.join("cargo-home");
        std::fs::create_dir_all(&own)?;
        if crate::environment::copy_on_write().is_ok() {
            // Cargo's home at its own place, so the paths a warm `target`
            // recorded for downloaded crates stay the same (else every
            // dependency is built again): a folder of its own (its locks
            // and caches) with your configuration copied in, and the
            // downloaded crates and git checkouts as overlays. Never your
            // `credentials.toml`.
            for file in ["config.toml", "config"] {
                let from = cargo.join(file);
                if from.is_file() {
                    std::fs::copy(&from, own.join(file))?;
                }
            }
            let layer = |lower: PathBuf, at: PathBuf, name: &str| crate::environment::Layer {
                lower,
                at,
                state: Some(scratch.join("cargo-layers").join(name)),
            };
            layers.push(layer(own, cargo.clone(), "home"));
            for sub in ["registry", "git"] {
                if cargo.join(sub).is_dir() {
                    layers.push(layer(cargo.join(sub), cargo.join(sub), sub));
                }
            }
            if cargo.join("bin").is_dir() {
                read.push(cargo.join("bin"));
            }
            env.push(("CARGO_HOME".into(), cargo.to_string_lossy().into_owned()));
        } else {
            // No overlays here: linked into a home of its own.
            let entries = ["bin", "registry", "git", "config.toml", "config"];
            read.extend(link_own_config(&own, &cargo, &entries)?);
            env.push(("CARGO_HOME".into(), own.to_string_lossy().into_owned()));
        }
    }
    let go_mods = var("GOMODCACHE").or_else(|| {
        var("GOPATH")
            .or_else(|| real_home.map(|h| h.join("go")))
            .map(|g| g.join("pkg/mod"))
    });
    if let Some(mods) = go_mods.filter(|d| d.is_dir()) {
        env.push(("GOMODCACHE".into(), mods.to_string_lossy().into_owned()));
        read.push(mods);
    }
    Ok(Toolchains { read, env, layers })
}

/// What [`toolchains`] found.
pub struct Toolchains {
    pub read: Vec<PathBuf>,
    pub env: Vec<(String, String)>,
    /// Places of its own at the toolchains' places (cargo's home).
    pub layers: Vec<crate::environment::Layer>,
}

/// The folders on `PATH` (the programs an agent may start).
pub fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_private_is_opened_for_reading() {
        let read = vec![
            PathBuf::from("/"),
            PathBuf::from("/home/u"),
            PathBuf::from("/home/u/.local"),
            PathBuf::from("/home/u/.local/bin"),
            PathBuf::from("/opt/tools"),
        ];
        let kept = without_private(
            read,
            Path::new("/home/u/.local/share/dev.arena.desktop"),
            Some(Path::new("/home/u")),
        );
        assert_eq!(
            kept,
            vec![
                PathBuf::from("/home/u/.local/bin"),
                PathBuf::from("/opt/tools")
            ]
        );
    }

    #[test]
    fn a_program_gives_its_folder_and_what_its_links_lead_to() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let venv = root.join("share/venvs/tool");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::write(venv.join("bin/tool"), "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(venv.join("bin/tool"), root.join("bin/tool")).unwrap();
        let found = installation(&root.join("bin/tool"));
        // The folder of links and the virtualenv, not their common parent.
        assert!(found.contains(&root.join("bin")), "{found:?}");
        assert!(found.contains(&venv), "{found:?}");
        assert!(!found.contains(&root), "{found:?}");
        let npm = root.join("npm/node_modules/.bin");
        std::fs::create_dir_all(&npm).unwrap();
        assert_eq!(
            installation(&npm.join("agent"))[0],
            root.join("npm/node_modules")
        );
    }

    #[test]
    fn a_version_managers_shim_gives_its_programs_and_versions_not_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".pyenv");
        for sub in [
            "shims",
            "libexec",
            "versions/3.11.7/bin",
            "plugins",
            "src",
            "test",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("libexec/pyenv"), "#!/bin/sh\n").unwrap();
        std::fs::write(root.join("version"), "3.11.7\n").unwrap();
        std::fs::write(root.join("shims/python3"), "#!/usr/bin/env bash\n").unwrap();
        let read = installation(&root.join("shims/python3"));
        for wanted in ["shims", "libexec", "versions", "plugins", "version"] {
            assert!(read.contains(&root.join(wanted)), "{wanted}: {read:?}");
        }
        assert!(!read.contains(&root), "{read:?}");
        assert!(!read
            .iter()
            .any(|p| p.ends_with("src") || p.ends_with("test")));
        // A folder named shims beside no manager gives nothing more.
        let plain = dir.path().join("tools");
        std::fs::create_dir_all(plain.join("shims")).unwrap();
        std::fs::write(plain.join("shims/x"), "").unwrap();
        assert_eq!(
            installation(&plain.join("shims/x")),
            vec![plain.join("shims")]
        );
    }

    #[test]
    fn a_prefix_gives_its_bin_and_lib_never_itself_or_its_share() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().canonicalize().unwrap().join(".local");
        for sub in ["bin", "lib/python3", "share/keyrings", "share/tool"] {
            std::fs::create_dir_all(local.join(sub)).unwrap();
        }
        std::fs::write(local.join("bin/tool"), "#!/bin/sh\n").unwrap();
        let found = installation(&local.join("bin/tool"));
        assert_eq!(
            found,
            vec![
                local.join("bin"),
                local.join("lib"),
                local.join("share/tool")
            ]
        );
        // A program elsewhere than in a `bin`: its own folder only.
        let versions = local.join("share/claude/versions");
        std::fs::create_dir_all(&versions).unwrap();
        std::fs::write(versions.join("2.0.1"), "").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(versions.join("2.0.1"), local.join("bin/claude")).unwrap();
        let found = installation(&local.join("bin/claude"));
        assert_eq!(found, vec![local.join("bin"), versions.clone()]);
    }

    #[cfg(unix)]
    #[test]
    fn a_rustup_proxy_gives_rustups_toolchains_not_the_cargo_home() {
        let dir = tempfile::tempdir().unwrap();
        let cargo = dir.path().canonicalize().unwrap().join(".cargo");
        std::fs::create_dir_all(cargo.join("bin")).unwrap();
        std::fs::write(cargo.join("credentials.toml"), "token").unwrap();
        std::fs::write(cargo.join("bin/rustup"), "").unwrap();
        std::fs::hard_link(cargo.join("bin/rustup"), cargo.join("bin/cargo")).unwrap();
        std::fs::write(cargo.join("bin/other"), "").unwrap();
        assert!(is_rustup_proxy(&cargo.join("bin/cargo")));
        assert!(!is_rustup_proxy(&cargo.join("bin/other")));
        let found = installation(&cargo.join("bin/cargo"));
        assert_eq!(found[0], cargo.join("bin"));
        assert!(!found.contains(&cargo), "{found:?}");
        if let Some(home) = rustup_home() {
            assert!(found.contains(&home.join("toolchains")), "{found:?}");
        }
    }
}
