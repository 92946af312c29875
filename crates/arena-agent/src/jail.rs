//! The agent jail: one process (and everything it starts) inside
//! bubblewrap (`bwrap`), with its own view of the machine. Where the
//! Landlock [`sandbox`](crate::sandbox) limits which files a process may
//! open, the jail decides what exists for it at all:
//!
//! - **Namespaces.** Its own user, mount, PID, IPC, UTS and (where the
//!   kernel has them) cgroup namespaces; with [`Network::None`] also its
//!   own network namespace, which holds only a loopback of its own, so
//!   nothing on the host (not `127.0.0.1`, not `[::1]`, no UDP, no
//!   abstract UNIX socket) is reachable.
//! - **No capabilities** (`--cap-drop ALL`), even when Arena runs as root.
//! - **No terminal.** `--new-session` puts it in a session of its own, so
//!   it has no controlling terminal: `/dev/tty` cannot be opened and
//!   `ioctl(TIOCSTI)` on an inherited terminal is refused (the seccomp
//!   filter refuses it too).
//! - **A file system of its own.** An empty root on which only the system
//!   folders (read-only, [`system_read`]), the [`Jail::read`] folders
//!   (read-only), the [`Jail::write`] folders (writable) and the
//!   [`Jail::protect`] paths (read-only again, on top of the writable
//!   folders) appear; a minimal `/dev` (`null`, `zero`, `full`, `random`,
//!   `urandom`, `tty`, `ptmx` and a private `pts`, with a private `shm`),
//!   read-only, a `/proc` of its own PID namespace (Arena's processes and
//!   their environment are not there), a private `/tmp`. `/tmp` and
//!   `/dev/shm` are memory of a bounded size ([`Jail::tmp_bytes`]). No
//!   `/sys`, no `/run` beyond what is asked (so no `/run/user`, no D-Bus).
//! - **Nothing secret in what it reads.** The host's password hashes and
//!   SSH host keys ([`MASKED`]) and every file and folder of `/etc` that not
//!   everyone may read are hidden (empty); in the read folders beyond the
//!   system's, credentials are hidden too: files named as tokens and
//!   sign-ins are (`credentials.toml`, `.npmrc`, `.git-credentials`,
//!   `auth.json`, …), folders of keys (`.ssh`, `.gnupg`, `keyrings`), and
//!   `*.pem`/`*.key`/`id_*` files that hold a private key, found by a
//!   bounded walk (`WALK_DEPTH`, `WALK_ENTRIES`). A path the jail is
//!   given by name (an agent's own sign-in) is not hidden.
//! - **Nothing survives the run.** The jailed program runs under bwrap's
//!   init, PID 1 of its namespace. When the program exits, bwrap (outside)
//!   exits with its status; the init, tied to bwrap by `--die-with-parent`
//!   (without it, the init would wait for the last process inside), is
//!   killed, and the kernel kills everything left in the namespace, a
//!   `setsid` double-forked daemon included. The same happens when bwrap is
//!   killed or the process that started it dies, however it dies.
//! - **A seccomp filter** ([`seccomp_filter`]) refuses what the namespaces
//!   leave to the kernel: `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`,
//!   `ptrace` and `process_vm_*`, the key-ring calls, new namespaces
//!   (`unshare`, `setns`, `clone` with `CLONE_NEW*`; `clone3`, whose flags
//!   a filter cannot read, answers "not implemented" so the C library falls
//!   back to `clone`), every mount call, `bpf`, `perf_event_open`,
//!   `userfaultfd`, `io_uring`, module loading, `kexec`, `reboot`, swap,
//!   `acct` and `syslog`; `socket` and `socketpair` of a family other than
//!   `AF_UNIX`, `AF_INET`, `AF_INET6` and netlink's route protocol
//!   (`AF_VSOCK`, which no network namespace confines, `AF_PACKET`, …:
//!   EAFNOSUPPORT); system calls of another architecture (32-bit
//!   `int 0x80`) kill the process, and the x32 ABI is refused.
//!
//! **Which user.** With `--unshare-user` bubblewrap maps the invoking user
//! to itself: the jailed process has the same uid and gid inside as Arena
//! outside, and files it creates belong to that user. When Arena runs as
//! root (as CI does) the jailed process is uid 0 in its namespace, mapped
//! to the real root, but holds no capability at all: it cannot remount,
//! mount, override file permissions or signal anything outside. What keeps
//! it from root's files is that they are not in its file system (and, in
//! the system folders, read-only mounts, which no uid can write through);
//! a file of root's that *is* bound (a system file readable only by its
//! owner) would stay readable to it, which is why every file and folder of
//! `/etc` that not everyone may read is hidden (looked for at each jail
//! start; [`JailInfo`] says how many, as root). Running the agent as an
//! unprivileged uid instead was weighed and left: its worktree, scratch
//! folder and Arena's data are root's, and a uid that can write them is
//! root again for them.
//!
//! **Starting it.** [`Jail::command`] returns a [`Prepared`]: the `bwrap`
//! program and its argument list, to run instead of the program, and the
//! seccomp filter as an open file whose descriptor number is in that list.
//! The file is opened close-on-exec; [`Prepared::pre_exec`] gives the
//! closure that lets the child keep it (pass it to `Command::pre_exec`, and
//! keep the `Prepared` alive until `spawn` returns). The environment passes
//! through bubblewrap unchanged: the caller sets it on the `Command` (it
//! must set `HOME` and `TMPDIR` to folders the jail can see).
//!
//! **Wiring notes** (for `process.rs`):
//! - Landlock cannot be applied in `pre_exec` before bwrap: a
//!   Landlock-restricted process may not mount or `pivot_root`, and bwrap
//!   fails ("Failed to make / slave: Operation not permitted"). The second
//!   layer has to be applied inside the jail, by a small program that
//!   restricts itself and then executes the agent.
//! - `--die-with-parent` uses `PR_SET_PDEATHSIG`, which fires when the
//!   *thread* that spawned bwrap exits. Spawn from a thread that lives as
//!   long as the run (a tokio worker, not a `spawn_blocking` thread, which
//!   tokio retires after ten idle seconds).
//! - Signals to bwrap's process group reach bwrap, not the jail (its
//!   session is its own): a SIGTERM to bwrap kills it, and with it the
//!   whole jail by SIGKILL; there is no graceful stop inside yet.

use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Folders every program needs to read, bound read-only: the sandbox's
/// system folders without the kernel's views (the jail has a `/proc` of its
/// own and no `/sys`).
pub fn system_read() -> impl Iterator<Item = &'static str> {
    crate::sandbox::SYSTEM_READ
        .iter()
        .copied()
        .filter(|dir| !matches!(*dir, "/proc" | "/sys"))
}

/// Files in the system folders that the jail hides (readable by their
/// owner only, and a jail of root's is its owner): password hashes. The
/// SSH host keys (`/etc/ssh/ssh_host_*_key`) are hidden as well.
pub const MASKED: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
];

/// Where bubblewrap is looked for first (the distribution's package),
/// before `PATH`.
const SYSTEM_BWRAP: &str = "/usr/bin/bwrap";

/// How long the trial jail of [`probe`] may take.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(20);

/// One jailed process: what it may read, change and reach. Every path is
/// absolute, without `..` and in UTF-8, and none is `/` or under `/proc`
/// or `/dev` (the jail's own); [`Jail::command`] refuses others. Folders
/// under `/tmp` are bound on top of the jail's private `/tmp`.
#[derive(Debug, Clone, PartialEq)]
pub struct Jail {
    /// Folders (or files) it may read and run programs from, besides
    /// [`system_read`]. Those that do not exist are left out.
    pub read: Vec<PathBuf>,
    /// Folders it may also change. Each must exist.
    pub write: Vec<PathBuf>,
    /// Paths inside the write folders that stay read-only (a repository's
    /// `.git/config` and `.git/hooks`): they cannot be changed, removed or
    /// renamed over, and neither can the folders on the way to them from
    /// their write folder be renamed or removed. Each must exist (so the
    /// jailed process cannot create it either) and be reached without a
    /// symbolic link. A write folder inside a protected one is read-only.
    pub protect: Vec<PathBuf>,
    /// Its working directory; must be visible in the jail.
    pub cwd: PathBuf,
    pub network: Network,
    /// The size of each of its own memory file systems, `/tmp` and
    /// `/dev/shm` ([`TMP_BYTES`] unless `[limits]` says otherwise): a
    /// write past it fails with "no space left on device", so files there
    /// cannot pin more of the machine's memory than this.
    pub tmp_bytes: u64,
    /// The project's environment and the toolchains' caches
    /// ([`crate::environment`]): overlays mounted before bwrap starts and
    /// bound at their place, or (where this machine cannot mount them, or
    /// a layer has no state) the lower folder read-only. Each place is in
    /// a write folder, the jail's `/tmp`, or another layer's place.
    pub layers: Vec<crate::environment::Layer>,
    /// Symbolic links made last: `(where, what it leads to)`.
    pub links: Vec<(PathBuf, PathBuf)>,
    /// `(tree, place)`: the tree (a write folder, with the layers inside
    /// it) is seen at `place` too, and a working directory inside the tree
    /// becomes the same folder there. What was bound inside `place` before
    /// (an object store) is bound again over it, and the protected paths
    /// inside the tree are protected there too.
    pub tree_at: Option<(PathBuf, PathBuf)>,
}

/// The size of a jail's `/tmp` and of its `/dev/shm` unless told otherwise
/// ([`Jail::tmp_bytes`]): 512 MiB each.
pub const TMP_BYTES: u64 = 512 << 20;

/// What network a jailed process has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Network {
    /// A network namespace of its own with nothing in it but a loopback of
    /// its own (`--unshare-net`): no host, no port, no UDP, no DNS.
    #[default]
    None,
    /// The host's network (an agent that talks to its own service). Path
    /// UNIX sockets are still out of reach unless bound in; abstract ones
    /// are not (Landlock ABI 6 scoping covers them where the kernel has
    /// it). A later `Relay` variant will give a loopback-only namespace
    /// with one door to Arena.
    Host,
}

/// A jailed process ready to start: run `program` with `args` (bwrap and
/// its argument list, the real program and its arguments at the end).
#[derive(Debug)]
pub struct Prepared {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The compiled seccomp filter, which bwrap reads from this file's
    /// descriptor (its number is in `args`, after `--seccomp`). It must be
    /// open in the child when bwrap starts: keep this value alive until
    /// the child is spawned, and install [`Prepared::pre_exec`].
    pub seccomp: Option<std::fs::File>,
    /// The overlays the child mounts before it becomes bwrap.
    pub mounts: Option<std::sync::Arc<crate::environment::Mounts>>,
}

impl Prepared {
    /// What the child must do between `fork` and `exec`: keep the seccomp
    /// file open across `exec` (clear its close-on-exec flag, in the child
    /// only) and rewind it, so bwrap reads the whole filter; then mount the
    /// overlays of its layers ([`crate::environment::Mounts::enter`]).
    /// System calls only, no allocation; for
    /// `std::process::Command::pre_exec` or tokio's.
    pub fn pre_exec(&self) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        #[cfg(unix)]
        let fd = {
            use std::os::fd::AsRawFd;
            self.seccomp.as_ref().map(|f| f.as_raw_fd())
        };
        let mounts = self.mounts.clone();
        move || {
            if let Some(mounts) = &mounts {
                mounts.enter()?;
            }
            #[cfg(unix)]
            if let Some(fd) = fd {
                // SAFETY: `fcntl` and `lseek` on a descriptor this process
                // owns (kept open by the `Prepared` the caller holds); both
                // are async-signal-safe and do not allocate.
                unsafe {
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1
                        || libc::lseek(fd, 0, libc::SEEK_SET) == -1
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        }
    }
}

/// What [`probe`] found: a bubblewrap that can build a jail here.
#[derive(Debug, Clone, PartialEq)]
pub struct JailInfo {
    pub bwrap: PathBuf,
    /// bubblewrap's version ("0.8.0").
    pub version: String,
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: i32,
    /// Whether jails get the seccomp filter (it is built for x86-64 and
    /// AArch64).
    pub seccomp: bool,
    /// Arena runs as root, so a jail's uid 0 owns root's files: the files
    /// and folders of `/etc` that not everyone may read are hidden in
    /// every jail (how many, here).
    pub root_masked: Option<usize>,
    /// How the project's environment is given to a jail: copy-on-write
    /// (how the overlays are mounted), or why it is read-only here
    /// ([`crate::environment::copy_on_write`]).
    pub environment: Result<String, String>,
}

impl std::fmt::Display for JailInfo {
    /// One line: `bubblewrap 0.8.0 · Landlock ABI 7 · seccomp` (and, as
    /// root, `· root: 12 root-only files and folders of /etc masked`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bubblewrap {}", self.version)?;
        match self.landlock_abi {
            0 => write!(f, " · no Landlock")?,
            abi => write!(f, " · Landlock ABI {abi}")?,
        }
        if self.seccomp {
            write!(f, " · seccomp")?;
        } else {
            write!(f, " · no seccomp on this architecture")?;
        }
        if let Some(n) = self.root_masked {
            write!(f, " · root: {n} root-only files and folders of /etc masked")?;
        }
        match &self.environment {
            Ok(how) => write!(f, " · project environment copy-on-write ({how})")?,
            Err(why) => write!(f, " · project environment read-only: {why}")?,
        }
        Ok(())
    }
}

const OFF: &str =
    "or, to run agents without a jail, set `sandbox = \"off\"` under [limits] in arena.toml";

#[derive(Debug, thiserror::Error)]
pub enum JailError {
    #[error(
        "bubblewrap is not installed (no `bwrap` at /usr/bin/bwrap or on PATH), so agents \
         cannot run in a jail; install it (`apt install bubblewrap` on Debian and Ubuntu, \
         `dnf install bubblewrap` on Fedora), {OFF}"
    )]
    NotInstalled,
    #[error(
        "cannot run {}: {source}; check that it is bubblewrap and executable (`apt install \
         --reinstall bubblewrap`)",
        program.display()
    )]
    Run {
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} --version answered {answer:?}, not \"bubblewrap <version>\"; check that it is \
         bubblewrap (`apt install bubblewrap`)",
        program.display()
    )]
    Version { program: PathBuf, answer: String },
    #[error(
        "user namespaces are turned off on this system ({setting} = {value}), and bubblewrap \
         needs them to build a jail; turn them on with `sysctl -w {setting}={on}` (and a file \
         in /etc/sysctl.d/ to keep it after a reboot), {OFF}"
    )]
    UserNamespacesOff {
        setting: &'static str,
        value: String,
        on: &'static str,
    },
    #[error(
        "AppArmor keeps unprivileged programs from using user namespaces \
         (kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 24.04), so \
         bubblewrap cannot build a jail; allow it for bwrap with a profile (write \
         `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap \
         flags=(unconfined) {{ userns, }}` to /etc/apparmor.d/bwrap and run `apparmor_parser \
         -r /etc/apparmor.d/bwrap`), or lift the restriction with `sysctl -w \
         kernel.apparmor_restrict_unprivileged_userns=0`, {OFF}; bubblewrap said: {said}"
    )]
    AppArmor { said: String },
    #[error(
        "bubblewrap could not build a trial jail ({status}): {said}; check that user \
         namespaces are allowed here (`unshare --user --map-root-user true` must work), {OFF}"
    )]
    Trial { status: String, said: String },
    #[error("the jail's {what} `{}` is relative; give it as an absolute path", path.display())]
    Relative { what: &'static str, path: PathBuf },
    #[error(
        "the jail's {what} `{}` contains `..`; give the path it means (resolve it first)",
        path.display()
    )]
    ParentDir { what: &'static str, path: PathBuf },
    #[error("the jail's {what} `{}` is not valid UTF-8; rename it", path.display())]
    NotUtf8 { what: &'static str, path: PathBuf },
    #[error(
        "the jail's {what} `{}` would bind the host's own `/`, `/proc` or `/dev` into the jail, \
         which makes fresh ones of its own; leave it out",
        path.display()
    )]
    Reserved { what: &'static str, path: PathBuf },
    #[error(
        "the jail's write folder `{}` does not exist; create it before the jail starts",
        path.display()
    )]
    MissingWrite { path: PathBuf },
    #[error(
        "the protected path `{}` is in none of the jail's write folders, where it would be \
         read-only or invisible anyway; leave it out (binding it would make it visible)",
        path.display()
    )]
    ProtectOutside { path: PathBuf },
    #[error(
        "the protected path `{}` does not exist; create it (an empty file or folder) before \
         the jail starts so the jailed process cannot create it either, or leave it out",
        path.display()
    )]
    ProtectMissing { path: PathBuf },
    #[error(
        "`{}`, on the way to the protected path `{}`, is a symbolic link, which the jailed \
         process could change; protect what it leads to, or replace the link by what it \
         leads to",
        link.display(),
        path.display()
    )]
    ProtectLink { link: PathBuf, path: PathBuf },
    #[error(
        "the jail's {what} `{}` would not be visible inside it (it is in no system, read or \
         write folder); add its folder to the jail's read or write folders",
        path.display()
    )]
    NotVisible { what: &'static str, path: PathBuf },
    #[error("preparing the jail's seccomp filter: {0}")]
    Seccomp(#[source] std::io::Error),
    #[error("preparing the layers of the project's environment: {0}")]
    Layer(#[source] std::io::Error),
}

impl Jail {
    /// The `bwrap` command that runs `program` with `args` in this jail.
    /// `program` is an absolute path visible in the jail, or a bare name
    /// looked up on the `PATH` the child is given.
    pub fn command(&self, program: &Path, args: &[String]) -> Result<Prepared, JailError> {
        let bwrap = find_bwrap().ok_or(JailError::NotInstalled)?;
        let seccomp = seccomp_file()?;
        let fd = {
            #[cfg(unix)]
            {
                use std::os::fd::AsRawFd;
                seccomp.as_ref().map(|f| f.as_raw_fd())
            }
            #[cfg(not(unix))]
            {
                None
            }
        };
        let mounts = crate::environment::Mounts::prepare(&self.layers)
            .map_err(JailError::Layer)?
            .map(std::sync::Arc::new);
        let args = self.argv(Path::new("/"), program, args, fd, mounts.is_some())?;
        Ok(Prepared {
            program: bwrap,
            args,
            seccomp,
            mounts,
        })
    }

    /// bwrap's argument list. `host` is where the host's file system is
    /// looked at (`/`; a fake root in tests of the system folders).
    fn argv(
        &self,
        host: &Path,
        program: &Path,
        args: &[String],
        seccomp_fd: Option<i32>,
        overlays: bool,
    ) -> Result<Vec<String>, JailError> {
        let on_host = |p: &Path| host.join(p.strip_prefix("/").unwrap_or(p));
        let read = checked_all("read folder", &self.read)?;
        let write = checked_all("write folder", &self.write)?;
        let protect = checked_all("protected path", &self.protect)?;
        let cwd = checked("working directory", &self.cwd, true)?;
        let program_text = checked_program(program)?;

        let mut argv: Vec<String> = [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        .map(String::from)
        .to_vec();
        if self.network == Network::None {
            argv.push("--unshare-net".into());
        }
        for flag in ["--cap-drop", "ALL", "--new-session", "--die-with-parent"] {
            argv.push(flag.into());
        }
        if let Some(fd) = seccomp_fd {
            argv.push("--seccomp".into());
            argv.push(fd.to_string());
        }

        // The system folders; a top-level link (`/bin` -> `usr/bin`) stays
        // a link.
        let mut system: Vec<PathBuf> = Vec::new();
        // What a program or working directory may be under: the bound
        // folders and the links among the system folders.
        let mut linked: Vec<PathBuf> = Vec::new();
        for dir in system_read() {
            let path = Path::new(dir);
            let Ok(meta) = std::fs::symlink_metadata(on_host(path)) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                let Some(target) = std::fs::read_link(on_host(path))
                    .ok()
                    .and_then(|t| t.to_str().map(String::from))
                else {
                    continue;
                };
                push(&mut argv, "--symlink", &target, dir);
                linked.push(path.to_path_buf());
            } else {
                push(&mut argv, "--ro-bind", dir, dir);
                system.push(path.to_path_buf());
            }
        }
        if system.iter().any(|s| s == Path::new("/etc")) {
            let mut hidden: Vec<Mask> = masked(&on_host(Path::new("/etc")))
                .into_iter()
                .filter(|m| std::fs::symlink_metadata(on_host(m)).is_ok())
                .map(Mask::File)
                .collect();
            if host == Path::new("/") {
                hidden.extend(etc_masks());
            } else {
                hidden.extend(secret_stores(
                    &on_host(Path::new("/etc")),
                    Path::new("/etc"),
                ));
            }
            for mask in disjoint(hidden) {
                mask.push_to(&mut argv)?;
            }
        }
        // A minimal /dev, read-only (nothing can be stored in it), with a
        // /dev/shm and a /tmp of a bounded size.
        let size = self.tmp_bytes.max(4096).to_string();
        for op in [
            &["--dev", "/dev"][..],
            &["--size", &size, "--tmpfs", "/dev/shm"],
            &["--remount-ro", "/dev"],
            &["--proc", "/proc"],
            &["--size", &size, "--tmpfs", "/tmp"],
        ] {
            argv.extend(op.iter().map(|a| a.to_string()));
        }

        // Layers at a place of their own outside the write folders (a cargo
        // home at its usual place), outermost first, before the read
        // folders that may hang inside them (its `bin`).
        let write_roots: Vec<PathBuf> = write.iter().map(|p| p.to_path_buf()).collect();
        let in_write = |at: &Path| covered(&write_roots, at);
        let mut early: Vec<&crate::environment::Layer> =
            self.layers.iter().filter(|l| !in_write(&l.at)).collect();
        early.sort_by_key(|l| depth(&l.at));
        let late: Vec<&crate::environment::Layer> =
            self.layers.iter().filter(|l| in_write(&l.at)).collect();
        let mut bound = system.clone();
        for layer in &early {
            if covered(&system, &layer.at) {
                return Err(JailError::Reserved {
                    what: "layer's place",
                    path: layer.at.clone(),
                });
            }
            push_layer(&mut argv, layer, overlays)?;
        }
        // Read, then write folders: parents before what is inside them, and
        // nothing already inside one of its own kind.
        let mut bound_read: Vec<&Path> = Vec::new();
        for path in outermost(read.clone()) {
            if std::fs::symlink_metadata(on_host(path)).is_err() || covered(&bound, path) {
                continue;
            }
            let text = utf8("read folder", path)?;
            push(&mut argv, "--ro-bind", text, text);
            bound.push(path.to_path_buf());
            bound_read.push(path);
        }
        // Credentials and keys inside the read folders (beyond the system
        // folders), hidden; not in a write folder (the jail's own), and not
        // a path the jail was given by name (an agent's own sign-in).
        let write = outermost(write);
        let walked: Vec<&Path> = bound_read
            .into_iter()
            .filter(|p| !write.iter().any(|w| p.starts_with(w)))
            .collect();
        let found = credentials(&walked, &on_host, host == Path::new("/"))
            .into_iter()
            .filter(|m| {
                let path = m.path();
                !read.contains(&path) && !write.iter().any(|w| path.starts_with(w))
            })
            .collect();
        for mask in disjoint(found) {
            mask.push_to(&mut argv)?;
        }
        for path in &write {
            if !on_host(path).exists() {
                return Err(JailError::MissingWrite {
                    path: path.to_path_buf(),
                });
            }
            let text = utf8("write folder", path)?;
            push(&mut argv, "--bind", text, text);
            bound.push(path.to_path_buf());
        }
        // The environment's layers in the write folders, each at its place.
        for layer in late {
            push_layer(&mut argv, layer, overlays)?;
        }
        bound.extend(self.layers.iter().map(|l| l.at.clone()));

        // Protected paths: the folders on the way to each become mount
        // points of themselves (writable still), which cannot be renamed or
        // removed; then the path itself, read-only.
        let mut on_the_way: Vec<&Path> = Vec::new();
        for path in &protect {
            let Some(root) = write
                .iter()
                .filter(|w| path.starts_with(w))
                .max_by_key(|w| depth(w))
            else {
                return Err(JailError::ProtectOutside {
                    path: path.to_path_buf(),
                });
            };
            if path != root {
                for step in path.ancestors().skip(1).take_while(|a| a != root) {
                    if !on_the_way.contains(&step) {
                        on_the_way.push(step);
                    }
                }
            }
            for step in path.ancestors().take_while(|a| a != root) {
                match std::fs::symlink_metadata(on_host(step)) {
                    Err(_) => {
                        return Err(JailError::ProtectMissing {
                            path: path.to_path_buf(),
                        })
                    }
                    Ok(m) if m.file_type().is_symlink() => {
                        return Err(JailError::ProtectLink {
                            link: step.to_path_buf(),
                            path: path.to_path_buf(),
                        })
                    }
                    Ok(_) => {}
                }
            }
        }
        on_the_way.sort_by_key(|p| depth(p));
        for step in on_the_way {
            if protect.contains(&step) {
                continue;
            }
            let text = utf8("protected path", step)?;
            push(&mut argv, "--bind", text, text);
        }
        let mut protected = protect;
        protected.sort_by_key(|p| depth(p));
        protected.dedup();
        for path in protected.iter().copied() {
            let text = utf8("protected path", path)?;
            push(&mut argv, "--ro-bind", text, text);
        }

        // The tree at a second place (a check's tree at the project's own
        // path): its layers again there, then what hung inside that place.
        let mut cwd = cwd.to_path_buf();
        if let Some((tree, place)) = &self.tree_at {
            let tree = checked("tree", tree, false)?;
            let place = checked("tree's second place", place, false)?;
            if !write.iter().any(|w| tree.starts_with(w)) || covered(&system, place) {
                return Err(JailError::Reserved {
                    what: "tree's second place",
                    path: place.to_path_buf(),
                });
            }
            let moved = |p: &Path| place.join(p.strip_prefix(tree).unwrap_or(p));
            let mut inside: Vec<&crate::environment::Layer> = self
                .layers
                .iter()
                .filter(|l| l.at.starts_with(tree))
                .collect();
            inside.sort_by_key(|l| depth(&l.at));
            if inside.first().is_none_or(|l| l.at != tree) {
                let text = utf8("tree", tree)?;
                push(
                    &mut argv,
                    "--bind",
                    text,
                    utf8("tree's second place", place)?,
                );
            }
            for layer in inside {
                let at = moved(&layer.at);
                push_layer(
                    &mut argv,
                    &crate::environment::Layer {
                        at,
                        ..layer.clone()
                    },
                    overlays,
                )?;
            }
            // Its repository there is read-only: what is found at your
            // project's `.git` is never written, not even the tree's copy.
            let git = tree.join(".git");
            if std::fs::symlink_metadata(on_host(&git)).is_ok_and(|m| m.is_dir()) {
                let text = utf8("tree", &git)?;
                push(
                    &mut argv,
                    "--ro-bind",
                    text,
                    utf8("tree's second place", &moved(&git))?,
                );
            }
            for path in outermost(read.clone()) {
                if path.starts_with(place) && std::fs::symlink_metadata(on_host(path)).is_ok() {
                    let text = utf8("read folder", path)?;
                    push(&mut argv, "--ro-bind", text, text);
                }
            }
            for path in protected.iter().filter(|p| p.starts_with(tree)) {
                let text = utf8("protected path", path)?;
                push(
                    &mut argv,
                    "--ro-bind",
                    text,
                    utf8("protected path", &moved(path))?,
                );
            }
            bound.push(place.to_path_buf());
            if cwd.starts_with(tree) {
                cwd = moved(&cwd);
            }
        }
        let cwd = cwd.as_path();

        let visible = |p: &Path| covered(&bound, p) || covered(&linked, p);
        if !(cwd == Path::new("/") || cwd == Path::new("/tmp") || visible(cwd)) {
            return Err(JailError::NotVisible {
                what: "working directory",
                path: cwd.to_path_buf(),
            });
        }
        if program.is_absolute() && !visible(program) {
            return Err(JailError::NotVisible {
                what: "program",
                path: program.to_path_buf(),
            });
        }
        for (link, target) in &self.links {
            let link = checked("link", link, false)?;
            let target = checked("link's target", target, false)?;
            push(
                &mut argv,
                "--symlink",
                utf8("link's target", target)?,
                utf8("link", link)?,
            );
            linked.push(link.to_path_buf());
        }
        // The jail's own root (where the bound folders hang) is read-only:
        // a write anywhere else fails, instead of landing in a scratch
        // file system that looks like the host's.
        argv.push("--remount-ro".into());
        argv.push("/".into());
        argv.push("--chdir".into());
        argv.push(utf8("working directory", cwd)?.into());
        argv.push("--".into());
        argv.push(program_text.into());
        argv.extend(args.iter().cloned());
        Ok(argv)
    }
}

/// Binds a layer at its place: its overlay's mount point (`overlays`: the
/// child mounts them), else its folder read-only.
fn push_layer(
    argv: &mut Vec<String>,
    layer: &crate::environment::Layer,
    overlays: bool,
) -> Result<(), JailError> {
    let at = utf8("layer's place", checked("layer's place", &layer.at, false)?)?;
    let lower = checked("layer's folder", &layer.lower, false)?;
    match layer.merged().filter(|_| overlays) {
        Some(merged) => {
            let merged = utf8("layer's folder", &merged)?.to_string();
            push(argv, "--bind", &merged, at);
        }
        None => push(argv, "--ro-bind", utf8("layer's folder", lower)?, at),
    }
    Ok(())
}

fn push(argv: &mut Vec<String>, flag: &str, a: &str, b: &str) {
    argv.push(flag.into());
    argv.push(a.into());
    argv.push(b.into());
}

fn depth(path: &Path) -> usize {
    path.components().count()
}

/// Whether `path` is inside (or is) one of `roots`.
fn covered(roots: &[PathBuf], path: &Path) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}

/// Distinct paths, shallowest first, leaving out those inside another.
fn outermost(mut paths: Vec<&Path>) -> Vec<&Path> {
    paths.sort_by_key(|p| depth(p));
    let mut out: Vec<&Path> = Vec::new();
    for p in paths {
        if !out.iter().any(|o| p.starts_with(o)) {
            out.push(p);
        }
    }
    out
}

fn utf8<'a>(what: &'static str, path: &'a Path) -> Result<&'a str, JailError> {
    path.to_str().ok_or_else(|| JailError::NotUtf8 {
        what,
        path: path.to_path_buf(),
    })
}

fn checked_all<'a>(what: &'static str, paths: &'a [PathBuf]) -> Result<Vec<&'a Path>, JailError> {
    paths.iter().map(|p| checked(what, p, false)).collect()
}

/// Refuses a relative path, one with `..`, and one that would bring in the
/// host's `/`, `/proc` or `/dev` (`/` is a fine working directory).
fn checked<'a>(what: &'static str, path: &'a Path, root_ok: bool) -> Result<&'a Path, JailError> {
    let path_buf = || path.to_path_buf();
    if !path.is_absolute() {
        return Err(JailError::Relative {
            what,
            path: path_buf(),
        });
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(JailError::ParentDir {
            what,
            path: path_buf(),
        });
    }
    let root = path == Path::new("/");
    if (root && !root_ok) || path.starts_with("/proc") || path.starts_with("/dev") {
        return Err(JailError::Reserved {
            what,
            path: path_buf(),
        });
    }
    utf8(what, path)?;
    Ok(path)
}

/// The program: an absolute path without `..`, or a bare name.
fn checked_program(program: &Path) -> Result<&str, JailError> {
    let what = "program";
    let bare = program.components().count() == 1
        && matches!(program.components().next(), Some(Component::Normal(_)));
    if !bare {
        if !program.is_absolute() {
            return Err(JailError::Relative {
                what,
                path: program.to_path_buf(),
            });
        }
        if program.components().any(|c| c == Component::ParentDir) {
            return Err(JailError::ParentDir {
                what,
                path: program.to_path_buf(),
            });
        }
    }
    utf8(what, program)
}

/// [`MASKED`] and the SSH host keys in `etc` (the host's `/etc`), as paths
/// in the jail.
fn masked(etc: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = MASKED.iter().map(PathBuf::from).collect();
    if let Ok(entries) = std::fs::read_dir(etc.join("ssh")) {
        let mut keys: Vec<PathBuf> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .filter(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
            .map(|n| Path::new("/etc/ssh").join(n))
            .collect();
        keys.sort();
        out.extend(keys);
    }
    out
}

/// What the jail hides at a path of a bound folder.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mask {
    /// A file, replaced by an empty one (`/dev/null`, read-only).
    File(PathBuf),
    /// A folder, replaced by an empty read-only one.
    Folder(PathBuf),
}

impl Mask {
    fn path(&self) -> &Path {
        match self {
            Mask::File(p) | Mask::Folder(p) => p,
        }
    }

    fn push_to(&self, argv: &mut Vec<String>) -> Result<(), JailError> {
        match self {
            Mask::File(path) => {
                let text = utf8("hidden file", path)?;
                push(argv, "--ro-bind", "/dev/null", text);
            }
            Mask::Folder(path) => {
                let text = utf8("hidden folder", path)?;
                for flag in ["--tmpfs", "--remount-ro"] {
                    argv.push(flag.into());
                    argv.push(text.into());
                }
            }
        }
        Ok(())
    }
}

/// `masks` once each, shallowest first, leaving out what is inside a
/// hidden folder (it is gone with the folder).
fn disjoint(mut masks: Vec<Mask>) -> Vec<Mask> {
    masks.sort_by(|a, b| {
        depth(a.path())
            .cmp(&depth(b.path()))
            .then_with(|| a.path().cmp(b.path()))
    });
    masks.dedup_by(|a, b| a.path() == b.path());
    let mut out: Vec<Mask> = Vec::new();
    for mask in masks {
        let inside = out
            .iter()
            .any(|o| matches!(o, Mask::Folder(f) if mask.path().starts_with(f)));
        if !inside {
            out.push(mask);
        }
    }
    out
}

/// How deep, and through how many entries in all, the walk of one read
/// folder for credentials goes, breadth first: a huge tree (a
/// `node_modules`, cargo's registry, a toolchain) costs at most this much
/// at a jail start, and what lies deeper or further is not looked at.
/// Credentials sit near the top of a prefix (`~/.cargo/credentials.toml`,
/// a `.npmrc` beside a package). Measured on a 100,000-file
/// `node_modules`, cargo's registry (29,000 entries) and a `target` (debug
/// build, a busy 2-core machine): a walk that reaches the bound takes
/// 15-60 ms (the most for a tree not in the page cache), a reused one
/// nothing; a bound of 20,000 entries took 140 ms.
const WALK_DEPTH: usize = 5;
const WALK_ENTRIES: usize = 5_000;

/// How long a walk's findings are reused for another jail of the same
/// folder (a battle starts its contestants' jails, then their checks, at
/// about the same time).
const WALK_REUSE: Duration = Duration::from_secs(10);

/// Files that hold a credential, by name: registry and git tokens, netrc,
/// sign-ins.
const CREDENTIAL_FILES: &[&str] = &[
    "credentials",
    "credentials.toml",
    "credentials.json",
    ".credentials.json",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    "auth.json",
];

/// Folders that hold keys and sign-ins, hidden whole.
const CREDENTIAL_FOLDERS: &[&str] = &[".ssh", ".gnupg", "keyrings", ".password-store"];

/// Whether a file of this name may hold a private key (then its first
/// bytes decide): `*.pem`, `*.key`, an SSH key `id_*` (not its `.pub`).
fn may_be_key(name: &str) -> bool {
    name.ends_with(".pem")
        || name.ends_with(".key")
        || (name.starts_with("id_") && !name.ends_with(".pub"))
}

/// Whether a file at `rel` (a relative path) whose first bytes are `head`
/// holds a credential as the jail tells them: a name of
/// [`CREDENTIAL_FILES`], a place under one of [`CREDENTIAL_FOLDERS`], or a
/// private key. (What Arena copies out of a user's tree, such as a
/// working-tree snapshot, leaves these out as the jail hides them.)
pub fn is_credential_file(rel: &Path, head: &[u8]) -> bool {
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    CREDENTIAL_FILES.contains(&name.as_str())
        || rel.components().any(|c| {
            CREDENTIAL_FOLDERS
                .iter()
                .any(|f| c.as_os_str() == std::ffi::OsStr::new(f))
        })
        || (may_be_key(&name) && head.windows(11).any(|w| w == b"PRIVATE KEY"))
}

/// Whether the file holds a private key (`-----BEGIN … PRIVATE KEY-----`
/// in its first 8 KiB): a certificate bundle (`cacert.pem`) does not.
fn holds_private_key(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(8192);
    let read = std::fs::File::open(path).and_then(|f| f.take(8192).read_to_end(&mut head));
    read.is_ok() && head.windows(11).any(|w| w == b"PRIVATE KEY")
}

/// The credentials in `roots` (paths in the jail; `on_host` says where
/// each is on the host): files named in [`CREDENTIAL_FILES`], folders named
/// in [`CREDENTIAL_FOLDERS`] and files that hold a private key, found by a
/// walk that follows no link and stops at [`WALK_DEPTH`] and
/// [`WALK_ENTRIES`] per root.
fn credentials(roots: &[&Path], on_host: &dyn Fn(&Path) -> PathBuf, reuse: bool) -> Vec<Mask> {
    type Found = std::collections::HashMap<PathBuf, (Instant, Vec<Mask>)>;
    static FOUND: std::sync::Mutex<Option<Found>> = std::sync::Mutex::new(None);
    let mut out = Vec::new();
    for root in roots {
        if reuse {
            let found = FOUND.lock().unwrap_or_else(|p| p.into_inner());
            let recent = found
                .as_ref()
                .and_then(|f| f.get(*root))
                .filter(|(at, _)| at.elapsed() < WALK_REUSE);
            if let Some((_, masks)) = recent {
                out.extend(masks.iter().cloned());
                continue;
            }
        }
        let masks = walk(root, on_host);
        if reuse {
            let mut found = FOUND.lock().unwrap_or_else(|p| p.into_inner());
            let found = found.get_or_insert_with(Found::new);
            found.retain(|_, (at, _)| at.elapsed() < WALK_REUSE);
            found.insert(root.to_path_buf(), (Instant::now(), masks.clone()));
        }
        out.extend(masks);
    }
    out
}

/// One root's walk for [`credentials`].
fn walk(root: &Path, on_host: &dyn Fn(&Path) -> PathBuf) -> Vec<Mask> {
    let mut out = Vec::new();
    if !std::fs::symlink_metadata(on_host(root)).is_ok_and(|m| m.is_dir()) {
        return out;
    }
    let mut seen = 0usize;
    let mut queue = std::collections::VecDeque::from([(root.to_path_buf(), 0usize)]);
    while let Some((dir, level)) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(on_host(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > WALK_ENTRIES {
                tracing::debug!(root = %root.display(), "credential walk stopped at its entry bound");
                return out;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if kind.is_dir() {
                if CREDENTIAL_FOLDERS.contains(&name) {
                    out.push(Mask::Folder(dir.join(name)));
                } else if level + 1 < WALK_DEPTH {
                    queue.push_back((dir.join(name), level + 1));
                }
            } else if kind.is_file()
                && (CREDENTIAL_FILES.contains(&name)
                    || (may_be_key(name) && holds_private_key(&entry.path())))
            {
                out.push(Mask::File(dir.join(name)));
            }
        }
    }
    out
}

/// The files and folders of `etc` (the host's `/etc`, seen at `jail_etc`
/// in the jail) that not everyone may read: a file without the "others may
/// read" bit, a folder without "others may list and enter". A jail of
/// root's is their owner, so they are hidden ([`etc_masks`]): TLS and VPN
/// keys, Kerberos keytabs, saved Wi-Fi and VPN connections, sudoers.
fn secret_stores(etc: &Path, jail_etc: &Path) -> Vec<Mask> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut seen = 0usize;
    let mut stack = vec![(etc.to_path_buf(), jail_etc.to_path_buf())];
    while let Some((dir, inside)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > 10 * WALK_ENTRIES {
                tracing::warn!(
                    "/etc has more entries than the jail looks through; the rest is not checked"
                );
                return out;
            }
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            let mode = meta.permissions().mode();
            let path = inside.join(entry.file_name());
            if meta.file_type().is_symlink() {
                continue;
            } else if meta.is_dir() {
                if mode & 0o005 != 0o005 {
                    out.push(Mask::Folder(path));
                } else {
                    stack.push((entry.path(), path));
                }
            } else if mode & 0o004 == 0 {
                out.push(Mask::File(path));
            }
        }
    }
    out
}

/// [`secret_stores`] of the host's `/etc`, looked for at each jail start
/// (not once per process: a file put in `/etc` while Arena runs, a VPN
/// connection saved, is hidden too). A walk of a desktop's `/etc` (a few
/// thousand entries) takes a few milliseconds, next to bwrap's own start.
fn etc_masks() -> Vec<Mask> {
    secret_stores(Path::new("/etc"), Path::new("/etc"))
}

/// The first argument that makes an Arena binary the jail's inner layer
/// ([`confine_main`]).
pub const CONFINE: &str = "__arena_confine";

static CONFINER: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Names the program that applies Landlock inside a jail: an Arena binary
/// whose `main` starts with [`confine_main`] (the `arena` CLI and the app
/// do, with their own path). Without one, a jail has no inner layer.
pub fn set_confiner(program: PathBuf) {
    let _ = CONFINER.set(program);
}

/// The program [`set_confiner`] named.
pub fn confiner() -> Option<&'static Path> {
    CONFINER.get().map(PathBuf::as_path)
}

/// The inner layer's command line: `CONFINER __arena_confine --read P …
/// --write P … [--connect PORT …] -- PROGRAM ARGS…` (no `--connect`
/// at all: any port).
pub fn confined_args(
    sandbox: &crate::sandbox::Sandbox,
    program: &Path,
    args: &[String],
) -> Vec<String> {
    let mut out = vec![CONFINE.to_string()];
    for (flag, paths) in [("--read", &sandbox.read), ("--write", &sandbox.write)] {
        for path in paths {
            out.push(flag.into());
            out.push(path.to_string_lossy().into_owned());
        }
    }
    // A layer's place: writable where it has a layer of its own.
    for layer in &sandbox.layers {
        let flag = if layer.state.is_some() {
            "--write"
        } else {
            "--read"
        };
        out.push(flag.into());
        out.push(layer.at.to_string_lossy().into_owned());
    }
    match &sandbox.connect {
        Some(ports) if ports.is_empty() => out.push("--connect-none".into()),
        Some(ports) => {
            for port in ports {
                out.push("--connect".into());
                out.push(port.to_string());
            }
        }
        None => {}
    }
    out.push("--".into());
    out.push(program.to_string_lossy().into_owned());
    out.extend(args.iter().cloned());
    out
}

/// The jail's inner layer, first thing in an Arena binary's `main`: when
/// this process was started as `ARENA __arena_confine …` (see
/// [`confined_args`]), it restricts itself with Landlock to the same
/// folders and ports as its jail and becomes the program (it does not
/// return then; `Some(code)` if that fails). Otherwise `None`: carry on.
pub fn confine_main() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_none_or(|a| a != CONFINE) {
        return None;
    }
    let fail = |what: String| {
        eprintln!("arena (jail's inner layer): {what}");
        Some(126)
    };
    let (mut read, mut write, mut connect) = (Vec::new(), Vec::new(), None::<Vec<u16>>);
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--read") => read.extend(args.next().map(PathBuf::from)),
            Some("--write") => write.extend(args.next().map(PathBuf::from)),
            Some("--connect-none") => connect = Some(Vec::new()),
            Some("--connect") => {
                let port = args.next().and_then(|p| p.to_str()?.parse::<u16>().ok());
                match port {
                    Some(port) => connect.get_or_insert_with(Vec::new).push(port),
                    None => return fail("--connect needs a port".into()),
                }
            }
            Some("--") => {
                rest.extend(args.by_ref());
                break;
            }
            _ => return fail(format!("unexpected argument {arg:?}")),
        }
    }
    let Some((program, program_args)) = rest.split_first() else {
        return fail("no program after --".into());
    };
    // The jail's own /tmp is private; programs that ignore TMPDIR use it.
    write.push(PathBuf::from("/tmp"));
    let sandbox = crate::sandbox::Sandbox {
        read,
        write,
        connect,
        enforcement: crate::sandbox::Enforcement::Landlock,
        layers: Vec::new(),
        links: Vec::new(),
        tree_at: None,
    };
    let applied = sandbox
        .ruleset()
        .map_err(|e| e.to_string())
        .and_then(|ruleset| ruleset.apply().map_err(|e| e.to_string()));
    if let Err(why) = applied {
        return fail(format!("cannot apply Landlock: {why}"));
    }
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(program)
        .args(program_args)
        .exec();
    fail(format!(
        "cannot start {}: {error}",
        program.to_string_lossy()
    ))
}

/// bubblewrap: the distribution's (`/usr/bin/bwrap`), else the first on
/// `PATH`.
pub fn find_bwrap() -> Option<PathBuf> {
    let system = PathBuf::from(SYSTEM_BWRAP);
    if is_executable(&system) {
        return Some(system);
    }
    crate::sandbox::path_dirs()
        .into_iter()
        .map(|d| d.join("bwrap"))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Whether jails can be built here: finds bubblewrap, reads its version,
/// and builds a real trial jail (every namespace, the seccomp filter) that
/// runs `true`. A system that keeps unprivileged programs from user
/// namespaces fails here, with what to turn on.
pub fn probe() -> Result<JailInfo, JailError> {
    let bwrap = find_bwrap().ok_or(JailError::NotInstalled)?;
    let version = version(&bwrap)?;
    trial()?;
    Ok(JailInfo {
        bwrap,
        version,
        landlock_abi: crate::sandbox::abi_version(),
        seccomp: seccomp_filter().is_some(),
        root_masked: is_root().then(|| etc_masks().len()),
        environment: crate::environment::copy_on_write().map(|mode| mode.to_string()),
    })
}

fn version(bwrap: &Path) -> Result<String, JailError> {
    let run = |source| JailError::Run {
        program: bwrap.to_path_buf(),
        source,
    };
    let out = Command::new(bwrap)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(run)?;
    let answer = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match answer.strip_prefix("bubblewrap ") {
        Some(v) if out.status.success() && !v.is_empty() => Ok(v.to_string()),
        _ => Err(JailError::Version {
            program: bwrap.to_path_buf(),
            answer,
        }),
    }
}

/// Runs `true` in a jail with nothing of its own.
fn trial() -> Result<(), JailError> {
    let jail = Jail {
        read: Vec::new(),
        write: Vec::new(),
        protect: Vec::new(),
        cwd: PathBuf::from("/"),
        network: Network::None,
        tmp_bytes: TMP_BYTES,
        layers: Vec::new(),
        links: Vec::new(),
        tree_at: None,
    };
    let prepared = jail.command(Path::new("true"), &[])?;
    let run = |source| JailError::Run {
        program: prepared.program.clone(),
        source,
    };
    let mut cmd = Command::new(&prepared.program);
    cmd.args(&prepared.args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure makes two async-signal-safe system calls on a
        // descriptor `prepared` keeps open; it does not allocate.
        unsafe {
            cmd.pre_exec(prepared.pre_exec());
        }
    }
    let mut child = cmd.spawn().map_err(run)?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(run)? {
            break status;
        }
        if started.elapsed() > TRIAL_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(JailError::Trial {
                status: format!("no answer within {} s", TRIAL_TIMEOUT.as_secs()),
                said: String::new(),
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    if status.success() {
        return Ok(());
    }
    let mut said = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        use std::io::Read;
        let _ = stderr.read_to_string(&mut said);
    }
    let sysctl = |name: &str| {
        let path = format!("/proc/sys/{}", name.replace('.', "/"));
        std::fs::read_to_string(path)
            .ok()
            .map(|v| v.trim().to_string())
    };
    Err(diagnose(
        sysctl,
        is_root(),
        status.to_string(),
        said.trim().to_string(),
    ))
}

fn is_root() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Why a trial jail failed, from the kernel's settings (`sysctl` reads one
/// by its dotted name).
fn diagnose(
    sysctl: impl Fn(&str) -> Option<String>,
    root: bool,
    status: String,
    said: String,
) -> JailError {
    let off = |setting: &'static str, on: &'static str| {
        sysctl(setting)
            .filter(|v| v == "0")
            .map(|value| JailError::UserNamespacesOff { setting, value, on })
    };
    if let Some(e) = off("user.max_user_namespaces", "15000") {
        return e;
    }
    if !root {
        // Debian's own switch for unprivileged user namespaces.
        if let Some(e) = off("kernel.unprivileged_userns_clone", "1") {
            return e;
        }
        if sysctl("kernel.apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
            return JailError::AppArmor { said };
        }
    }
    JailError::Trial { status, said }
}

// The seccomp filter, as classic BPF over `struct seccomp_data`, written
// out by hand. Weighed against Firecracker's `seccompiler` (which has
// argument conditions) when the filter began to check `socket`'s family:
// the rules are still few (one architecture check, the x32 range, three
// calls judged by one argument, a deny list), each a handful of
// instructions that the unit tests below walk; `seccompiler` would add a
// dependency and its JSON/rule model for the same checks, and still
// leave the x32 rule (numbers with bit 30 set, on x86-64) to be written
// beside it by hand, so the filter would be split over two mechanisms.
// Staying by hand keeps it one readable program. Reconsider if the rules
// grow to many argument conditions.

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// The jail's seccomp filter for this architecture (`None` where there is
/// none: other than x86-64 and AArch64 Linux).
pub fn seccomp_filter() -> Option<Vec<Insn>> {
    filter::program()
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod filter {
    use super::Insn;

    /// `BPF_LD | BPF_W | BPF_ABS`: load 32 bits of `seccomp_data`.
    pub(super) const LOAD: u16 = 0x20;
    /// `BPF_JMP | BPF_JEQ | BPF_K` and the like.
    const JEQ: u16 = 0x15;
    const JGE: u16 = 0x35;
    const JSET: u16 = 0x45;
    /// `BPF_RET | BPF_K`.
    const RET: u16 = 0x06;

    pub(super) const KILL_PROCESS: u32 = 0x8000_0000;
    const ERRNO: u32 = 0x0005_0000;
    pub(super) const ALLOW: u32 = 0x7fff_0000;

    /// Offsets in `struct seccomp_data`: the call's number, the
    /// architecture, and the low 32 bits of argument `i` (little-endian).
    const NR: u32 = 0;
    pub(super) const ARCH: u32 = 4;
    const fn arg_low(i: u32) -> u32 {
        16 + 8 * i
    }

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

    /// `clone` flags that make a namespace: NEWNS, NEWCGROUP, NEWUTS,
    /// NEWIPC, NEWUSER, NEWPID, NEWNET.
    const CLONE_NEW: u32 = 0x0002_0000
        | 0x0200_0000
        | 0x0400_0000
        | 0x0800_0000
        | 0x1000_0000
        | 0x2000_0000
        | 0x4000_0000;

    const EPERM: u32 = libc::EPERM as u32;
    const ENOSYS: u32 = libc::ENOSYS as u32;
    const EAFNOSUPPORT: u32 = libc::EAFNOSUPPORT as u32;

    /// Socket families a jailed process may open: local sockets and IP
    /// (in the jail's own network namespace, or the host's for an agent
    /// with its own service). Everything else — `AF_VSOCK`, which no
    /// network namespace confines (in a VM it reaches the hypervisor's
    /// host), `AF_PACKET`, `AF_ALG`, `AF_BLUETOOTH`, … — is refused with
    /// EAFNOSUPPORT, as if the kernel had no such family.
    const FAMILIES: [u32; 3] = [
        libc::AF_UNIX as u32,
        libc::AF_INET as u32,
        libc::AF_INET6 as u32,
    ];
    /// Netlink only for `NETLINK_ROUTE` (the network namespace's own
    /// interfaces and addresses): the C library's `getaddrinfo`
    /// (`AI_ADDRCONFIG`), `getifaddrs` and `if_nameindex`, Node's
    /// `os.networkInterfaces()` and Python's `socket.if_nameindex()` read
    /// them; other netlink protocols (audit, uevents, …) are refused.
    const AF_NETLINK: u32 = libc::AF_NETLINK as u32;
    const NETLINK_ROUTE: u32 = libc::NETLINK_ROUTE as u32;

    /// System calls refused outright (EPERM).
    const DENIED: &[libc::c_long] = &[
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_acct,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_syslog,
    ];

    fn load(k: u32) -> Insn {
        Insn {
            code: LOAD,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn { code, jt, jf, k }
    }

    fn ret(k: u32) -> Insn {
        Insn {
            code: RET,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn nr(call: libc::c_long) -> u32 {
        // System call numbers are small and positive.
        u32::try_from(call).unwrap_or(u32::MAX)
    }

    pub(super) fn program() -> Option<Vec<Insn>> {
        let mut p = vec![
            load(ARCH),
            jump(JEQ, AUDIT_ARCH, 1, 0),
            ret(KILL_PROCESS),
            load(NR),
        ];
        // The x32 ABI: the same architecture, numbers with bit 30 set.
        #[cfg(target_arch = "x86_64")]
        p.extend([jump(JGE, 0x4000_0000, 0, 1), ret(ERRNO | EPERM)]);
        #[cfg(not(target_arch = "x86_64"))]
        let _ = JGE;
        // ioctl: not TIOCSTI or TIOCLINUX (the kernel reads the request as
        // 32 bits, so the low half decides).
        p.extend([
            jump(JEQ, nr(libc::SYS_ioctl), 0, 5),
            load(arg_low(1)),
            jump(JEQ, libc::TIOCSTI as u32, 2, 0),
            jump(JEQ, libc::TIOCLINUX as u32, 1, 0),
            ret(ALLOW),
            ret(ERRNO | EPERM),
        ]);
        // socket and socketpair: only FAMILIES, and netlink's route
        // protocol (the kernel reads the family and protocol as 32-bit
        // ints).
        p.extend([
            jump(JEQ, nr(libc::SYS_socket), 1, 0),
            jump(JEQ, nr(libc::SYS_socketpair), 0, 9),
            load(arg_low(0)),
            jump(JEQ, FAMILIES[0], 6, 0),
            jump(JEQ, FAMILIES[1], 5, 0),
            jump(JEQ, FAMILIES[2], 4, 0),
            jump(JEQ, AF_NETLINK, 0, 2),
            load(arg_low(2)),
            jump(JEQ, NETLINK_ROUTE, 1, 0),
            ret(ERRNO | EAFNOSUPPORT),
            ret(ALLOW),
        ]);
        // clone: not into a new namespace.
        p.extend([
            jump(JEQ, nr(libc::SYS_clone), 0, 4),
            load(arg_low(0)),
            jump(JSET, CLONE_NEW, 1, 0),
            ret(ALLOW),
            ret(ERRNO | EPERM),
        ]);
        // clone3 keeps its flags in memory a filter cannot read: "not
        // implemented" makes the C library fall back to clone.
        p.extend([jump(JEQ, nr(libc::SYS_clone3), 0, 1), ret(ERRNO | ENOSYS)]);
        for &call in DENIED {
            p.extend([jump(JEQ, nr(call), 0, 1), ret(ERRNO | EPERM)]);
        }
        p.push(ret(ALLOW));
        Some(p)
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod filter {
    pub(super) fn program() -> Option<Vec<super::Insn>> {
        None
    }
}

/// The filter in an anonymous in-memory file (close-on-exec), ready for
/// bwrap to read.
fn seccomp_file() -> Result<Option<std::fs::File>, JailError> {
    let Some(filter) = seccomp_filter() else {
        return Ok(None);
    };
    #[cfg(target_os = "linux")]
    {
        use std::io::{Seek, Write};
        use std::os::fd::FromRawFd;
        let bytes: Vec<u8> = filter
            .iter()
            .flat_map(|i| {
                let mut b = [0u8; 8];
                b[0..2].copy_from_slice(&i.code.to_ne_bytes());
                b[2] = i.jt;
                b[3] = i.jf;
                b[4..8].copy_from_slice(&i.k.to_ne_bytes());
                b
            })
            .collect();
        // SAFETY: a NUL-terminated name and valid flags; the descriptor
        // returned is new and owned by the `File` alone.
        let fd = unsafe { libc::memfd_create(c"arena-jail-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(JailError::Seccomp(std::io::Error::last_os_error()));
        }
        // SAFETY: see above.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        file.write_all(&bytes).map_err(JailError::Seccomp)?;
        file.rewind().map_err(JailError::Seccomp)?;
        Ok(Some(file))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = filter;
        Ok(None)
    }
}

/// Whether agents can be jailed here ([`probe`], tried once per
/// process): what the jail is, or why not (with how to fix it).
pub fn jail_info() -> Result<JailInfo, String> {
    static PROBED: std::sync::OnceLock<Result<JailInfo, String>> = std::sync::OnceLock::new();
    PROBED
        .get_or_init(|| {
            if std::env::var_os("ARENA_TEST_NO_JAIL").is_some() {
                return Err(JailError::NotInstalled.to_string());
            }
            probe().map_err(|e| e.to_string())
        })
        .clone()
}

impl crate::sandbox::Sandbox {
    /// The same promises as a bubblewrap jail working in `cwd`: the
    /// system folders and `read` read-only, `write` writable (the jail
    /// has its own `/dev`, `/proc`, `/tmp`), and its network: none when
    /// it may connect nowhere (or only through a relay, `relayed`), the
    /// host's when it may connect anywhere.
    pub fn jail(&self, cwd: &Path, relayed: bool) -> Jail {
        let own = |p: &PathBuf| {
            crate::sandbox::SYSTEM_READ
                .iter()
                .any(|s| Path::new(s) == p)
                || p == Path::new("/dev")
        };
        let network = match (&self.connect, relayed) {
            (None, false) => Network::Host,
            _ => Network::None,
        };
        Jail {
            read: self
                .read
                .iter()
                .filter(|p| !own(p))
                .map(|p| crate::sandbox::lexical(p))
                .collect(),
            write: self
                .write
                .iter()
                .filter(|p| !own(p))
                .map(|p| crate::sandbox::lexical(p))
                .collect(),
            protect: Vec::new(),
            cwd: crate::sandbox::lexical(cwd),
            network,
            tmp_bytes: TMP_BYTES,
            layers: self.layers.clone(),
            links: self.links.clone(),
            tree_at: self.tree_at.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jail(read: &[&Path], write: &[&Path], protect: &[&Path], cwd: &Path) -> Jail {
        let v = |s: &[&Path]| s.iter().map(|p| p.to_path_buf()).collect();
        Jail {
            read: v(read),
            write: v(write),
            protect: v(protect),
            cwd: cwd.to_path_buf(),
            network: Network::None,
            tmp_bytes: TMP_BYTES,
            layers: Vec::new(),
            links: Vec::new(),
            tree_at: None,
        }
    }

    fn at(argv: &[String], flag: &str, path: &Path) -> Option<usize> {
        let p = path.to_str()?;
        argv.windows(3)
            .position(|w| w[0] == flag && w[1] == p && w[2] == p)
    }

    #[test]
    fn binds_come_before_protects_and_the_way_to_each_is_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w");
        std::fs::create_dir_all(w.join(".git/hooks")).unwrap();
        std::fs::write(w.join(".git/config"), "").unwrap();
        let (config, hooks) = (w.join(".git/config"), w.join(".git/hooks"));
        let j = jail(&[], &[&w], &[&hooks, &config], &w);
        let argv = j
            .argv(Path::new("/"), Path::new("sh"), &[], None, false)
            .unwrap();
        let bind = at(&argv, "--bind", &w).unwrap();
        let git = at(&argv, "--bind", &w.join(".git")).unwrap();
        let c = at(&argv, "--ro-bind", &config).unwrap();
        let h = at(&argv, "--ro-bind", &hooks).unwrap();
        assert!(bind < git && git < c && git < h, "{argv:?}");
        // The program and its arguments come last, after `--`.
        let dash = argv.iter().position(|a| a == "--").unwrap();
        assert!(h < dash && c < dash);
        assert_eq!(&argv[dash + 1..], ["sh"]);
        assert_eq!(
            argv[dash - 2..dash],
            ["--chdir".to_string(), w.to_str().unwrap().into()]
        );
    }

    /// A tree seen at the project's path: bound there after the write
    /// folders, the object store inside that place bound again over it,
    /// protected paths protected there too, and the working directory
    /// moved there.
    #[test]
    fn a_tree_at_a_second_place_keeps_what_hung_there_and_works_there() {
        let dir = tempfile::tempdir().unwrap();
        let (tree, project) = (dir.path().join("tree"), dir.path().join("project"));
        let objects = project.join(".git/objects");
        std::fs::create_dir_all(tree.join("src")).unwrap();
        std::fs::create_dir_all(tree.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(&objects).unwrap();
        let mut j = jail(
            &[&objects],
            &[&tree],
            &[&tree.join(".git/hooks")],
            &tree.join("src"),
        );
        j.tree_at = Some((tree.clone(), project.clone()));
        let argv = j
            .argv(Path::new("/"), Path::new("true"), &[], None, false)
            .unwrap();
        let pos = |flag: &str, a: &Path, b: &Path| {
            let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
            argv.windows(3)
                .rposition(|w| w[0] == flag && w[1] == a && w[2] == b)
                .unwrap_or_else(|| panic!("{flag} {a} {b}: {argv:?}"))
        };
        let written = pos("--bind", &tree, &tree);
        let second = pos("--bind", &tree, &project);
        assert!(written < second);
        let git = pos("--ro-bind", &tree.join(".git"), &project.join(".git"));
        assert!(second < git && git < pos("--ro-bind", &objects, &objects));
        let hooks = tree.join(".git/hooks");
        assert!(second < pos("--ro-bind", &hooks, &project.join(".git/hooks")));
        let dash = argv.iter().position(|a| a == "--").unwrap();
        assert_eq!(
            argv[dash - 2..dash],
            [
                "--chdir".to_string(),
                project.join("src").to_str().unwrap().into()
            ]
        );
        // A second place among the system folders is refused.
        j.tree_at = Some((tree.clone(), PathBuf::from("/usr/lib")));
        assert!(j
            .argv(Path::new("/"), Path::new("true"), &[], None, false)
            .is_err());
    }

    #[test]
    fn missing_read_folders_are_left_out_and_nested_ones_are_bound_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, missing) = (dir.path().join("a"), dir.path().join("missing"));
        std::fs::create_dir_all(a.join("b")).unwrap();
        let j = jail(&[&a.join("b"), &missing, &a], &[], &[], Path::new("/"));
        let argv = j
            .argv(Path::new("/"), Path::new("true"), &[], None, false)
            .unwrap();
        assert!(at(&argv, "--ro-bind", &a).is_some(), "{argv:?}");
        assert!(!argv.iter().any(|x| x.contains("missing")), "{argv:?}");
        assert!(at(&argv, "--ro-bind", &a.join("b")).is_none(), "{argv:?}");
    }

    #[test]
    fn system_folders_that_are_links_stay_links_and_fresh_views_follow_them() {
        // A fake host root: /bin a link to usr/bin, /usr and /etc folders.
        let host = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(host.path().join("usr/bin")).unwrap();
        std::fs::create_dir_all(host.path().join("etc/ssh")).unwrap();
        std::fs::write(host.path().join("etc/shadow"), "").unwrap();
        std::fs::write(host.path().join("etc/ssh/ssh_host_ed25519_key"), "").unwrap();
        std::fs::write(host.path().join("etc/ssh/ssh_host_ed25519_key.pub"), "").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::os::unix::fs::symlink("usr/bin", host.path().join("bin")).unwrap();
            // What only its owner may read: a folder of keys, a VPN key.
            let mode = |p: &str, m: u32| {
                let perms = std::fs::Permissions::from_mode(m);
                std::fs::set_permissions(host.path().join(p), perms).unwrap();
            };
            std::fs::create_dir_all(host.path().join("etc/ssl/private")).unwrap();
            std::fs::write(host.path().join("etc/ssl/private/a.key"), "").unwrap();
            mode("etc/ssl/private/a.key", 0o600);
            mode("etc/ssl/private", 0o700);
            std::fs::create_dir_all(host.path().join("etc/wireguard")).unwrap();
            std::fs::write(host.path().join("etc/wireguard/wg0.conf"), "").unwrap();
            mode("etc/wireguard/wg0.conf", 0o600);
        }
        let j = jail(&[], &[], &[], Path::new("/"));
        let argv = j
            .argv(host.path(), Path::new("true"), &[], None, false)
            .unwrap();
        let text = argv.join(" ");
        assert!(text.contains("--symlink usr/bin /bin"), "{text}");
        assert!(text.contains("--ro-bind /usr /usr"), "{text}");
        assert!(!text.contains("/lib32"), "{text}");
        let etc = text.find("--ro-bind /etc /etc").unwrap();
        let shadow = text.find("--ro-bind /dev/null /etc/shadow").unwrap();
        assert!(etc < shadow, "{text}");
        assert!(text.contains("/dev/null /etc/ssh/ssh_host_ed25519_key "));
        assert!(!text.contains(".pub"), "{text}");
        #[cfg(unix)]
        {
            let private = "--tmpfs /etc/ssl/private --remount-ro /etc/ssl/private";
            assert!(text.contains(private), "{text}");
            assert!(!text.contains("a.key"), "inside a hidden folder: {text}");
            let wg = text
                .find("--ro-bind /dev/null /etc/wireguard/wg0.conf")
                .unwrap();
            assert!(etc < wg && wg < text.find("--dev /dev").unwrap(), "{text}");
        }
        assert!(
            !text.contains("/etc/gshadow"),
            "only what exists is masked: {text}"
        );
        let size = TMP_BYTES.to_string();
        assert!(
            text.contains(&format!(
                "--dev /dev --size {size} --tmpfs /dev/shm --remount-ro /dev --proc /proc \
                 --size {size} --tmpfs /tmp"
            )),
            "{text}"
        );
        assert!(
            !text.contains("/run/user") && !text.contains("/sys"),
            "{text}"
        );
    }

    #[test]
    fn the_network_and_the_filter_show_in_the_flags() {
        let mut j = jail(&[], &[], &[], Path::new("/"));
        let argv = j
            .argv(Path::new("/"), Path::new("true"), &[], Some(7), false)
            .unwrap();
        for flag in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--unshare-net",
            "--new-session",
            "--die-with-parent",
        ] {
            assert!(argv.iter().any(|a| a == flag), "{flag}: {argv:?}");
        }
        assert!(argv.windows(2).any(|w| w == ["--cap-drop", "ALL"]));
        assert!(argv.windows(2).any(|w| w == ["--seccomp", "7"]));
        j.network = Network::Host;
        let argv = j
            .argv(Path::new("/"), Path::new("true"), &[], None, false)
            .unwrap();
        assert!(!argv
            .iter()
            .any(|a| a == "--unshare-net" || a == "--seccomp"));
    }

    #[test]
    fn relative_and_dotted_and_reserved_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().to_path_buf();
        let cases: Vec<(Jail, &str)> = vec![
            (jail(&[Path::new("rel/dir")], &[], &[], &ok), "is relative"),
            (jail(&[], &[&ok.join("../x")], &[], &ok), "contains `..`"),
            (jail(&[], &[], &[], Path::new("work")), "is relative"),
            (jail(&[Path::new("/proc")], &[], &[], &ok), "`/proc`"),
            (jail(&[], &[Path::new("/dev/shm")], &[], &ok), "`/dev`"),
            (jail(&[], &[Path::new("/")], &[], &ok), "`/`"),
        ];
        for (j, says) in cases {
            let e = j
                .argv(Path::new("/"), Path::new("true"), &[], None, false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
        let j = jail(&[], &[&ok], &[], &ok);
        for program in ["./agent", "bin/agent", "/usr/../bin/sh"] {
            let e = j.argv(Path::new("/"), Path::new(program), &[], None, false);
            assert!(e.is_err(), "{program}");
        }
    }

    #[test]
    fn protected_paths_must_exist_in_a_write_folder_without_links() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w");
        std::fs::create_dir_all(w.join("real")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(w.join("real"), w.join("link")).unwrap();
        let cases = [
            (w.join("nothing"), "does not exist"),
            (
                dir.path().join("elsewhere"),
                "in none of the jail's write folders",
            ),
            (w.join("link"), "symbolic link"),
        ];
        for (path, says) in cases {
            let j = jail(&[], &[&w], &[&path], &w);
            let e = j
                .argv(Path::new("/"), Path::new("true"), &[], None, false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
        let j = jail(&[], &[&w.join("missing")], &[], &w);
        let e = j
            .argv(Path::new("/"), Path::new("true"), &[], None, false)
            .unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn what_is_not_in_the_jail_cannot_be_its_program_or_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        // A folder on the host that no read or write folder brings in.
        let j = jail(&[], &[], &[], dir.path());
        let e = j
            .argv(Path::new("/"), Path::new("true"), &[], None, false)
            .unwrap_err();
        assert!(e.to_string().contains("not be visible"), "{e}");
        let j = jail(&[], &[], &[], Path::new("/"));
        assert!(j
            .argv(Path::new("/"), Path::new("/usr/bin/true"), &[], None, false)
            .is_ok());
        let e = j
            .argv(
                Path::new("/"),
                Path::new("/nowhere/agent"),
                &[],
                None,
                false,
            )
            .unwrap_err();
        assert!(e.to_string().contains("program"), "{e}");
    }

    #[test]
    fn credentials_are_found_by_name_and_content_within_the_walks_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let deep = "a/b/c/d/e/f";
        for (rel, text) in [
            ("credentials.toml", ""),
            ("a/.npmrc", ""),
            ("a/b/key.pem", "-----BEGIN EC PRIVATE KEY-----"),
            ("a/b/cacert.pem", "-----BEGIN CERTIFICATE-----"),
            ("a/id_ed25519.pub", "ssh-ed25519 AAAA"),
            ("a/b/c/.ssh/id_rsa", ""),
            (&format!("{deep}/.netrc"), ""),
        ] {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let found = credentials(&[root.as_path()], &|p: &Path| p.to_path_buf(), false);
        let mut paths: Vec<String> = found
            .iter()
            .map(|m| {
                let rel = m.path().strip_prefix(&root).unwrap().display();
                match m {
                    Mask::File(_) => format!("file {rel}"),
                    Mask::Folder(_) => format!("folder {rel}"),
                }
            })
            .collect();
        paths.sort();
        // Deeper than WALK_DEPTH is not looked at.
        assert_eq!(
            paths,
            [
                "file a/.npmrc",
                "file a/b/key.pem",
                "file credentials.toml",
                "folder a/b/c/.ssh"
            ]
        );
    }

    #[test]
    fn a_blocked_trial_is_explained_by_the_setting_that_blocks_it() {
        let settings = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let said = || "bwrap: setting up uid map: Permission denied".to_string();
        let e = diagnose(
            settings(&[("kernel.apparmor_restrict_unprivileged_userns", "1")]),
            false,
            "exit status: 1".into(),
            said(),
        );
        let text = e.to_string();
        assert!(matches!(e, JailError::AppArmor { .. }), "{text}");
        assert!(text.contains("/etc/apparmor.d/bwrap") && text.contains("uid map"));
        let e = diagnose(
            settings(&[("kernel.unprivileged_userns_clone", "0")]),
            false,
            String::new(),
            said(),
        );
        assert!(e
            .to_string()
            .contains("sysctl -w kernel.unprivileged_userns_clone=1"));
        let e = diagnose(
            settings(&[("user.max_user_namespaces", "0")]),
            true,
            String::new(),
            said(),
        );
        assert!(e
            .to_string()
            .contains("sysctl -w user.max_user_namespaces="));
        // Root is not held back by AppArmor's rule or Debian's switch.
        let e = diagnose(
            settings(&[("kernel.unprivileged_userns_clone", "0")]),
            true,
            "exit status: 1".into(),
            said(),
        );
        assert!(matches!(e, JailError::Trial { .. }), "{e}");
    }

    #[test]
    fn the_line_names_bubblewrap_landlock_and_seccomp() {
        let info = JailInfo {
            bwrap: PathBuf::from("/usr/bin/bwrap"),
            version: "0.8.0".into(),
            landlock_abi: 7,
            seccomp: true,
            root_masked: None,
            environment: Ok("overlays in a user namespace".into()),
        };
        assert_eq!(
            info.to_string(),
            "bubblewrap 0.8.0 · Landlock ABI 7 · seccomp · project environment copy-on-write \
             (overlays in a user namespace)"
        );
        let root = JailInfo {
            root_masked: Some(12),
            environment: Err("the kernel refused an overlay".into()),
            ..info
        };
        assert_eq!(
            root.to_string(),
            "bubblewrap 0.8.0 · Landlock ABI 7 · seccomp · root: 12 root-only files and \
             folders of /etc masked · project environment read-only: the kernel refused an \
             overlay"
        );
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_filter_checks_the_architecture_first_and_allows_by_default() {
        let p = seccomp_filter().unwrap();
        let load_arch = Insn {
            code: filter::LOAD,
            jt: 0,
            jf: 0,
            k: filter::ARCH,
        };
        assert_eq!(p[0], load_arch);
        assert_eq!(p[2].k, filter::KILL_PROCESS);
        assert_eq!(p.last().unwrap().k, filter::ALLOW);
        // Every jump lands inside the program.
        for (i, insn) in p.iter().enumerate() {
            if insn.code & 0x07 == 0x05 {
                assert!(i + 1 + usize::from(insn.jt.max(insn.jf)) < p.len(), "{i}");
            }
        }
    }
}
