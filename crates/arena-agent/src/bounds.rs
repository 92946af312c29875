//! What one contestant's processes may consume, besides the size of one
//! file (`RLIMIT_FSIZE`, in [`crate::process`]):
//!
//! - **Memory and processes**, for the whole jail at once: a cgroup of its
//!   own ([`Group`]) with `memory.max`/`pids.max` (cgroup v2: the root of a
//!   writable unified hierarchy that has the controllers) or
//!   `memory.limit_in_bytes`/`pids.max` (cgroup v1, as root), made under
//!   the cgroup Arena itself runs in (so a jail never escapes a limit Arena
//!   is under), and removed when the run ends. The bwrap process joins it
//!   between `fork` and `exec` (it writes `0`, "this process", to the
//!   cgroup's `cgroup.procs`, opened before the fork), so nothing in the
//!   jail ever runs outside it. Where no cgroup can be made, each process
//!   gets `RLIMIT_DATA` (its private memory: unlike `RLIMIT_AS`, address
//!   space a runtime only reserves, as V8 and Go do, does not count) and,
//!   for a user other than root, `RLIMIT_NPROC` ([`Mechanism::Rlimits`]).
//! - **The OOM killer's choice**: every process Arena starts for an agent
//!   or a check has `oom_score_adj` 1000 (raising it needs no privilege;
//!   its children inherit it and cannot lower it), so under memory
//!   pressure the kernel kills a jail first, not the user's program.
//! - **What it writes to disk** ([`Watch`]): the blocks its write folders
//!   (worktree and scratch) hold, over what they held when it started, are
//!   measured every few seconds by a walk (the walk's own time sets the
//!   pace, so a large tree costs at most a tenth of a core); and the free
//!   space of each of their file systems is read every half second
//!   (`statvfs`). Over `limits.contestant_write_bytes`, or under
//!   `limits.min_free_disk_bytes` free, the run is stopped.
//!
//! Each limit reached stops the run and is a [`Limit`] that names its
//! `[limits]` key.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How a jail's memory and processes are bounded on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    /// A cgroup v2 of its own per run, under `parent`.
    CgroupV2 { parent: PathBuf },
    /// cgroup v1: one under each of the memory and pids hierarchies.
    CgroupV1 { memory: PathBuf, pids: PathBuf },
    /// Per-process resource limits (`RLIMIT_DATA`, and `RLIMIT_NPROC`
    /// unless Arena runs as root, whom the kernel does not hold to it).
    Rlimits,
}

impl std::fmt::Display for Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mechanism::CgroupV2 { .. } => write!(f, "cgroup v2"),
            Mechanism::CgroupV1 { .. } => write!(f, "cgroup v1"),
            Mechanism::Rlimits if is_root() => write!(f, "rlimits (memory per process)"),
            Mechanism::Rlimits => write!(f, "rlimits (memory and processes per process)"),
        }
    }
}

/// How jails are bounded here, found once per process (a trial cgroup is
/// made and removed). `ARENA_TEST_NO_CGROUP` forces [`Mechanism::Rlimits`].
pub fn mechanism() -> &'static Mechanism {
    static FOUND: std::sync::OnceLock<Mechanism> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        if std::env::var_os("ARENA_TEST_NO_CGROUP").is_some() {
            return Mechanism::Rlimits;
        }
        let found = probe();
        tracing::debug!(mechanism = %found, "how jails are bounded");
        found
    })
}

/// For the jail's state line: `limits: cgroup v1`.
pub fn describe() -> String {
    format!("limits: {}", mechanism())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// One mounted cgroup hierarchy: where it is mounted, the cgroup at its
/// mount point, and its options.
struct Mount {
    point: PathBuf,
    root: String,
    v2: bool,
    options: String,
}

fn mounts() -> Vec<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let left: Vec<&str> = left.split(' ').collect();
            let right: Vec<&str> = right.split(' ').collect();
            let fstype = *right.first()?;
            if fstype != "cgroup" && fstype != "cgroup2" {
                return None;
            }
            Some(Mount {
                point: PathBuf::from(unescape(left.get(4)?)),
                root: unescape(left.get(3)?),
                v2: fstype == "cgroup2",
                options: right.get(2).copied().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// mountinfo writes a space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The folder of this process's cgroup in `mount`, from `/proc/self/cgroup`.
fn own_dir(mount: &Mount, cgroups: &str, controller: Option<&str>) -> Option<PathBuf> {
    let path = cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let ours = match controller {
            None => controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        ours.then_some(path)
    })?;
    let relative = path.strip_prefix(mount.root.as_str()).unwrap_or(path);
    let relative = relative.trim_start_matches('/');
    if relative.split('/').any(|p| p == "..") {
        return None;
    }
    Some(mount.point.join(relative))
}

fn probe() -> Mechanism {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = mounts();
    // cgroup v2: where this process's cgroup is its hierarchy's root (a
    // root's hierarchy, a container's), children may have the memory and
    // pids controllers.
    if let Some(dir) = mounts
        .iter()
        .filter(|m| m.v2)
        .find_map(|m| own_dir(m, &cgroups, None).filter(|d| *d == m.point))
    {
        let controllers =
            std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
        let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
        if has("memory") && has("pids") {
            let _ = std::fs::write(dir.join("cgroup.subtree_control"), "+memory +pids");
            let enabled =
                std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
            let on = |c: &str| enabled.split_whitespace().any(|x| x == c);
            if on("memory") && on("pids") && trial(&[&dir]) {
                return Mechanism::CgroupV2 { parent: dir };
            }
        }
    }
    let v1 = |controller: &str| {
        mounts
            .iter()
            .filter(|m| !m.v2 && m.options.split(',').any(|o| o == controller))
            .find_map(|m| own_dir(m, &cgroups, Some(controller)))
    };
    if let (Some(memory), Some(pids)) = (v1("memory"), v1("pids")) {
        if trial(&[&memory, &pids]) {
            return Mechanism::CgroupV1 { memory, pids };
        }
    }
    Mechanism::Rlimits
}

/// Whether a cgroup can be made (and removed) under each of `parents`.
fn trial(parents: &[&Path]) -> bool {
    let name = format!("arena-trial-{}", std::process::id());
    parents.iter().all(|parent| {
        let dir = parent.join(&name);
        let made = std::fs::create_dir(&dir).is_ok() && dir.join("cgroup.procs").exists();
        let _ = std::fs::remove_dir(&dir);
        made
    })
}

/// What a run may consume (from `[limits]`; `None`: no bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Consumption {
    /// Memory of all its processes together (tmpfs files included).
    pub memory_bytes: Option<u64>,
    /// Processes and threads at once.
    pub processes: Option<u64>,
    /// Bytes its write folders may grow by.
    pub write_bytes: Option<u64>,
    /// Free space below which it is stopped, on each of its write
    /// folders' file systems.
    pub min_free_disk_bytes: Option<u64>,
    /// The size of each of a jail's `/tmp` and `/dev/shm` (`None`: the
    /// jail's own default, [`crate::jail::TMP_BYTES`]).
    pub tmp_bytes: Option<u64>,
}

/// A limit a run reached; each names its `[limits]` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit {
    Memory { limit: u64 },
    Processes { limit: u64 },
    Writes { limit: u64, written: u64 },
    DiskFloor { floor: u64, free: u64 },
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Memory { limit } => write!(
                f,
                "used more memory than its jail may (limits.jail_memory_bytes = {}) and was stopped",
                bytes(*limit)
            ),
            Limit::Processes { limit } => write!(
                f,
                "tried to run more processes than its jail may (limits.jail_max_processes = \
                 {limit}, threads included) and was stopped"
            ),
            Limit::Writes { limit, written } => write!(
                f,
                "wrote {} to its worktree and scratch folder, over its budget \
                 (limits.contestant_write_bytes = {}), and was stopped",
                bytes(*written),
                bytes(*limit)
            ),
            Limit::DiskFloor { floor, free } => write!(
                f,
                "was stopped because the disk it writes to has only {} free \
                 (limits.min_free_disk_bytes = {})",
                bytes(*free),
                bytes(*floor)
            ),
        }
    }
}

/// `268435456` as `256 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The cgroup of one run: made before it starts, removed (its processes
/// killed first) when the [`Group`] is dropped.
#[derive(Debug)]
pub struct Group {
    v2: bool,
    /// Its folders (one for v2; memory and pids for v1).
    dirs: Vec<PathBuf>,
    /// Their `cgroup.procs`, open for writing, for the child to join.
    procs: Vec<std::fs::File>,
    limits: Consumption,
}

static NEXT: AtomicU64 = AtomicU64::new(0);

impl Group {
    /// A new cgroup with `limits`' memory and process bounds, or `None`
    /// where this machine has none to give ([`Mechanism::Rlimits`]) or
    /// there is nothing to bound.
    pub fn create(limits: Consumption) -> std::io::Result<Option<Group>> {
        if limits.memory_bytes.is_none() && limits.processes.is_none() {
            return Ok(None);
        }
        let name = format!(
            "arena-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let (v2, parents) = match mechanism() {
            Mechanism::CgroupV2 { parent } => (true, vec![parent.clone()]),
            Mechanism::CgroupV1 { memory, pids } => (false, vec![memory.clone(), pids.clone()]),
            Mechanism::Rlimits => return Ok(None),
        };
        let mut group = Group {
            v2,
            dirs: Vec::new(),
            procs: Vec::new(),
            limits,
        };
        for parent in parents {
            let dir = parent.join(&name);
            std::fs::create_dir(&dir)?;
            group.dirs.push(dir);
        }
        let memory = limits.memory_bytes.map(|b| b.to_string());
        let pids = limits.processes.map(|p| p.to_string());
        if v2 {
            let dir = group.dirs[0].clone();
            if let Some(memory) = &memory {
                set(&dir, "memory.max", memory)?;
                // Its memory stays in memory (no swapping the user's out
                // for it), and an OOM kill ends the whole jail.
                let _ = set(&dir, "memory.swap.max", "0");
                let _ = set(&dir, "memory.oom.group", "1");
            }
            if let Some(pids) = &pids {
                set(&dir, "pids.max", pids)?;
            }
        } else {
            if let Some(memory) = &memory {
                set(&group.dirs[0], "memory.limit_in_bytes", memory)?;
                let _ = set(&group.dirs[0], "memory.memsw.limit_in_bytes", memory);
            }
            if let Some(pids) = &pids {
                set(&group.dirs[1], "pids.max", pids)?;
            }
        }
        for dir in &group.dirs {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?;
            group.procs.push(file);
        }
        Ok(Some(group))
    }

    /// The `cgroup.procs` descriptors the child writes `0` to, joining
    /// the cgroup before it runs anything (they are close-on-exec).
    pub fn procs_fds(&self) -> Vec<i32> {
        use std::os::fd::AsRawFd;
        self.procs.iter().map(|f| f.as_raw_fd()).collect()
    }

    /// The limit its processes reached, if one was: an OOM kill in it, or
    /// a fork refused at `pids.max`.
    pub fn reached(&self) -> Option<Limit> {
        let (memory_dir, pids_dir) = if self.v2 {
            (&self.dirs[0], &self.dirs[0])
        } else {
            (&self.dirs[0], &self.dirs[1])
        };
        let memory_file = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        if let Some(limit) = self.limits.memory_bytes {
            if count(&memory_dir.join(memory_file), "oom_kill") > 0 {
                return Some(Limit::Memory { limit });
            }
        }
        if let Some(limit) = self.limits.processes {
            if count(&pids_dir.join("pids.events"), "max") > 0 {
                return Some(Limit::Processes { limit });
            }
        }
        None
    }

    /// Kills what is left in it and removes it, trying for up to two
    /// seconds while its last processes exit.
    fn remove(&mut self) {
        if self.v2 {
            if let Some(dir) = self.dirs.first() {
                let _ = set(dir, "cgroup.kill", "1");
            }
        }
        self.procs.clear();
        let deadline = Instant::now() + Duration::from_secs(2);
        for dir in std::mem::take(&mut self.dirs) {
            loop {
                if !self.v2 {
                    kill_all(&dir);
                }
                match std::fs::remove_dir(&dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e) if Instant::now() >= deadline => {
                        tracing::warn!(cgroup = %dir.display(), error = %e, "could not remove a jail's cgroup");
                        break;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.remove();
    }
}

fn set(dir: &Path, file: &str, value: &str) -> std::io::Result<()> {
    let path = dir.join(file);
    let mut f = std::fs::OpenOptions::new().write(true).open(&path)?;
    f.write_all(value.as_bytes())
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// The number after `key` in a flat-keyed cgroup file (`oom_kill 1`).
fn count(path: &Path, key: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == key).then(|| v.trim().parse().ok()).flatten()
        })
        .unwrap_or(0)
}

/// SIGKILL to every process in a v1 cgroup.
fn kill_all(dir: &Path) {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        if pid > 0 {
            // SAFETY: a signal to a process in the run's own cgroup.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// The resource limits a process gets where no cgroup bounds its jail
/// ([`Mechanism::Rlimits`]): `(RLIMIT_DATA, RLIMIT_NPROC)`. The kernel
/// counts `RLIMIT_NPROC` against every process of the real user (those
/// outside the jail's user namespace too, kernel 5.14 on), and not at all
/// for root: the user's own processes are added to the bound, and root
/// gets none.
pub fn rlimits(limits: Consumption) -> (Option<u64>, Option<u64>) {
    if !matches!(mechanism(), Mechanism::Rlimits) {
        return (None, None);
    }
    let processes = limits
        .processes
        .filter(|_| !is_root())
        .map(|p| p + processes_of_this_user());
    (limits.memory_bytes, processes)
}

fn processes_of_this_user() -> u64 {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                .filter(|e| e.metadata().map(|m| m.uid() == uid).unwrap_or(false))
                .count() as u64
        })
        .unwrap_or(0)
}

/// Watches one run: its cgroup's events, the free space of its write
/// folders' file systems, and what those folders hold.
pub struct Watch {
    group: Option<std::sync::Arc<Group>>,
    folders: Vec<PathBuf>,
    limits: Consumption,
    /// What the folders held when the run started.
    baseline: u64,
    next_walk: Instant,
}

/// How often the cgroup's events and the free space are read.
const TICK: Duration = Duration::from_millis(500);
/// The shortest time between two walks of the write folders.
const MIN_WALK_EVERY: Duration = Duration::from_secs(2);

impl Watch {
    /// Starts watching; measures the write folders now (in a blocking
    /// task) when there is a write budget.
    pub async fn start(
        group: Option<std::sync::Arc<Group>>,
        folders: Vec<PathBuf>,
        limits: Consumption,
    ) -> Watch {
        let folders = outermost(folders);
        let baseline = match limits.write_bytes {
            Some(_) => walk_blocking(folders.clone()).await.0,
            None => 0,
        };
        Watch {
            group,
            folders,
            limits,
            baseline,
            next_walk: Instant::now() + MIN_WALK_EVERY,
        }
    }

    /// Whether nothing is watched (no cgroup, no budget, no floor).
    pub fn idle(&self) -> bool {
        self.group.is_none()
            && self.limits.write_bytes.is_none()
            && self.limits.min_free_disk_bytes.is_none()
    }

    /// The limit reached now, if one is, without waiting.
    pub fn check_now(&self) -> Option<Limit> {
        if let Some(limit) = self.group.as_ref().and_then(|g| g.reached()) {
            return Some(limit);
        }
        self.floor()
    }

    fn floor(&self) -> Option<Limit> {
        let floor = self.limits.min_free_disk_bytes?;
        self.folders.iter().find_map(|dir| {
            let free = free_bytes(dir)?;
            (free < floor).then_some(Limit::DiskFloor { floor, free })
        })
    }

    /// Waits until a limit is reached (forever, when none is).
    pub async fn reached(&mut self) -> Limit {
        if self.idle() {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep(TICK).await;
            if let Some(limit) = self.check_now() {
                return limit;
            }
            let Some(budget) = self.limits.write_bytes else {
                continue;
            };
            if Instant::now() < self.next_walk {
                continue;
            }
            let (held, took) = walk_blocking(self.folders.clone()).await;
            // A walk costs at most a tenth of the time between walks.
            self.next_walk = Instant::now() + (took * 10).max(MIN_WALK_EVERY);
            let written = held.saturating_sub(self.baseline);
            if written > budget {
                return Limit::Writes {
                    limit: budget,
                    written,
                };
            }
        }
    }
}

/// `folders` without those inside another of them (each counted once).
fn outermost(mut folders: Vec<PathBuf>) -> Vec<PathBuf> {
    folders.sort();
    folders.dedup();
    let all = folders.clone();
    folders.retain(|f| !all.iter().any(|o| o != f && f.starts_with(o)));
    folders
}

/// Free bytes for an unprivileged user on `dir`'s file system.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statvfs to fill.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

async fn walk_blocking(folders: Vec<PathBuf>) -> (u64, Duration) {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let held = folders.iter().map(|f| disk_usage(f)).sum();
        (held, started.elapsed())
    })
    .await
    .unwrap_or((0, Duration::ZERO))
}

/// The bytes of disk the files under `dir` hold (their blocks; a file
/// with several links counted once; symbolic links not followed; other
/// file systems mounted inside not entered).
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(top) = std::fs::symlink_metadata(dir) else {
        return 0;
    };
    let device = top.dev();
    let mut seen = std::collections::HashSet::new();
    let mut total = top.blocks() * 512;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.dev() != device {
                continue;
            }
            if meta.nlink() > 1 && !meta.is_dir() && !seen.insert(meta.ino()) {
                continue;
            }
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(256 * 1024 * 1024), "256 MiB");
        assert_eq!(bytes(1536 * 1024 * 1024), "1.5 GiB");
        assert_eq!(bytes(100), "100 bytes");
    }

    #[test]
    fn nested_folders_are_counted_once() {
        let folders = outermost(vec![
            PathBuf::from("/a/b"),
            PathBuf::from("/a"),
            PathBuf::from("/c"),
            PathBuf::from("/a/b/c"),
        ]);
        assert_eq!(folders, [PathBuf::from("/a"), PathBuf::from("/c")]);
    }

    #[test]
    fn a_folder_holds_its_files_blocks_and_a_hard_link_counts_once() {
        let dir = tempfile::tempdir().unwrap();
        let before = disk_usage(dir.path());
        std::fs::write(dir.path().join("a"), vec![1u8; 1 << 20]).unwrap();
        std::fs::hard_link(dir.path().join("a"), dir.path().join("b")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/c"), vec![1u8; 1 << 20]).unwrap();
        let after = disk_usage(dir.path());
        let grew = after - before;
        assert!((2 << 20..3 << 20).contains(&grew), "{grew}");
    }

    /// What one walk costs: `ARENA_WALK_DIR=<a large tree> cargo test -p
    /// arena-agent --lib walk_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn walk_cost() {
        let Some(dir) = std::env::var_os("ARENA_WALK_DIR") else {
            return;
        };
        for _ in 0..3 {
            let started = Instant::now();
            let held = disk_usage(Path::new(&dir));
            eprintln!("{} in {:?}", bytes(held), started.elapsed());
        }
    }

    #[test]
    fn cgroup_files_are_read_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("memory.events");
        std::fs::write(&file, "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n").unwrap();
        assert_eq!(count(&file, "oom_kill"), 1);
        assert_eq!(count(&file, "max"), 12);
        assert_eq!(count(&file, "nothing"), 0);
    }
}
