//! Issue 37's consumption attacks through the engine, each a real Coding
//! battle whose agent (a `[[backend]]` script) is jailed: a tmpfs balloon,
//! a memory balloon across processes, a fork bomb, files filling a small
//! disk, and a disk so full that Arena's own database write fails. Each
//! ends the battle with a contestant error that names its `[limits]` key,
//! and a "user's program" started outside the jail lives on. The limits
//! are small (256 MiB, 64 processes, a 32 MiB disk), so a 2-core CI
//! machine never comes near a machine-wide OOM.
//!
//! A test that needs what this machine lacks (bubblewrap, a cgroup for
//! jails, root for mounting a small disk) says so and passes. (Kept apart
//! from `agent_bounds.rs`, whose one test measures the process's peak RSS.)

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use arena_core::agent::bounds::{self, Mechanism};
use arena_core::battle::{BattleStatus, ContestantStatus};
use arena_core::config::{Config, CustomBackend, Limits};
use arena_core::Battle;
use arena_core::Engine;
use arena_testserver::ModelScript;
use common::*;

const MIB: u64 = 1024 * 1024;

/// Whether agents can be jailed here, and (with `cgroup`) bounded by a
/// cgroup; says why a test does nothing if not.
fn ready(test: &str, cgroup: bool) -> bool {
    if let Err(why) = arena_core::agent::jail::jail_info() {
        eprintln!("{test}: skipped: no jail here: {why}");
        return false;
    }
    if cgroup && matches!(bounds::mechanism(), Mechanism::Rlimits) {
        eprintln!("{test}: skipped: {}", bounds::describe());
        return false;
    }
    true
}

/// The user's program: a process outside any jail holding 64 MiB.
struct StandIn(Child);

impl StandIn {
    fn start() -> StandIn {
        let child = Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import time; b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(300)",
            ])
            .stdin(Stdio::null())
            .spawn()
            .expect("python3 starts");
        StandIn(child)
    }

    fn alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs two Coding contestants whose agent is `script` (bash) under
/// `limits` changed by `change`, with the engine's data folder on `disk`
/// when one is given.
async fn battle(
    h: &mut Harness,
    project: &Path,
    disk: Option<&SmallDisk>,
    script: &str,
    change: impl FnOnce(&mut Limits),
) -> Battle {
    checked_battle(h, project, disk, script, None, change).await
}

/// [`battle`] with the check command `check`.
async fn checked_battle(
    h: &mut Harness,
    project: &Path,
    disk: Option<&SmallDisk>,
    script: &str,
    check: Option<&str>,
    change: impl FnOnce(&mut Limits),
) -> Battle {
    let mut config = Config::clone(&h.engine.config());
    config.backends = vec![CustomBackend {
        name: "fake".into(),
        command: vec!["bash".into(), "-c".into(), format!("exec 2>&1; {script}")],
    }];
    change(&mut config.limits);
    h.engine = match disk {
        Some(disk) => Engine::open(options(
            disk.0.path().join("data"),
            config,
            h.database_password.as_deref(),
        )),
        None => Engine::open(h.options(config)),
    }
    .expect("engine");
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    run_coding(h, project, &["fake@m1", "fake@m2"], check).await
}

/// The battle ended, each contestant with an error that says `says`.
fn ended_naming(b: &Battle, says: &str) {
    assert_eq!(b.status, BattleStatus::Error, "{b:#?}");
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Error, "{:?}", c.error);
        let error = c.error.clone().unwrap_or_default();
        assert!(error.contains(says), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tmpfs_balloon_is_stopped_by_the_jails_memory_limit() {
    if !ready("a_tmpfs_balloon", true) {
        return;
    }
    let mut user = StandIn::start();
    let mut h = Harness::new().await;
    let project = repo();
    // 2 GB into the jail's own /tmp, by a process of 2 MB: the tmpfs is
    // charged to the jail's memory.
    let b = battle(
        &mut h,
        project.path(),
        None,
        "head -c 2000000000 /dev/zero > /tmp/balloon; sleep 60",
        |l| {
            l.jail_memory_bytes = 256 * MIB;
            l.jail_tmp_bytes = 4096 * MIB;
        },
    )
    .await;
    ended_naming(&b, "limits.jail_memory_bytes = 256 MiB");
    assert!(user.alive(), "the user's program was killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_balloon_across_processes_is_a_named_error() {
    if !ready("a_memory_balloon_across_processes", true) {
        return;
    }
    let mut user = StandIn::start();
    let mut h = Harness::new().await;
    let project = repo();
    // Six processes of 100 MB: each alone is small.
    let script = r#"
for i in 1 2 3 4 5 6; do
  /usr/bin/python3 -c 'import time; b = bytearray(100 << 20); b[::4096] = b"x" * len(b[::4096]); time.sleep(60)' &
done
wait
"#;
    let b = battle(&mut h, project.path(), None, script, |l| {
        l.jail_memory_bytes = 256 * MIB;
    })
    .await;
    ended_naming(&b, "limits.jail_memory_bytes = 256 MiB");
    assert!(user.alive(), "the user's program was killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_bomb_is_a_named_error() {
    // Never without a cgroup: a real fork bomb.
    if !ready("a_fork_bomb", true) {
        return;
    }
    let mut user = StandIn::start();
    let mut h = Harness::new().await;
    let project = repo();
    let b = battle(
        &mut h,
        project.path(),
        None,
        "bomb() { bomb | bomb & }; bomb; sleep 60",
        |l| l.jail_max_processes = 64,
    )
    .await;
    ended_naming(&b, "limits.jail_max_processes = 64");
    assert!(user.alive());
}

/// A 32 MiB tmpfs mounted for the test (root only), unmounted on drop.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount(test: &str) -> Option<SmallDisk> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("{test}: skipped: mounting a small disk needs root");
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=32m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("{test}: skipped: could not mount a tmpfs");
            return None;
        }
        Some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// The contestants worked on the small disk.
fn on_the_disk(b: &Battle, disk: &SmallDisk) {
    for c in &b.contestants {
        let worktree = c.worktree.clone().unwrap_or_default();
        assert!(
            worktree.starts_with(disk.0.path()),
            "{}",
            worktree.display()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_filling_a_small_disk_stop_at_its_floor() {
    if !ready("files_filling_a_small_disk", false) {
        return;
    }
    let Some(disk) = SmallDisk::mount("files_filling_a_small_disk") else {
        return;
    };
    let mut h = Harness::new().await;
    let project = repo();
    // Files of 1 MiB each, far under the limit for one file.
    let script =
        "for i in $(seq 1 40); do head -c 1048576 /dev/zero > f$i || break; sleep 0.1; done; sleep 60";
    let b = battle(&mut h, project.path(), Some(&disk), script, |l| {
        l.min_free_disk_bytes = 12 * MIB;
    })
    .await;
    on_the_disk(&b, &disk);
    ended_naming(&b, "limits.min_free_disk_bytes = 12 MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_ends_the_battle_with_the_reason_and_keeps_what_was_kept() {
    if !ready("a_full_disk", false) {
        return;
    }
    let Some(disk) = SmallDisk::mount("a_full_disk") else {
        return;
    };
    let mut h = Harness::new().await;
    if h.database_password.is_some() {
        // A team database is not on the small disk: what is tested here is
        // Arena's own database filling the disk it shares with the work.
        eprintln!("skipped in team mode: the database is PostgreSQL's, elsewhere");
        return;
    }
    let project = repo();
    // No floor and no budget: the agent fills the disk to its last block
    // with small files, says so, and exits cleanly.
    // (At most 64 MiB, whatever disk it is on.) It waits a second after its
    // first line: the journal writes streamed output every 25-100 ms, and
    // what is asserted kept is what was written before the disk filled,
    // not a line still in flight when it did.
    let script = "echo 'filling the disk'; sleep 1; \
                  for i in $(seq 1 256); do head -c 262144 /dev/zero > f$i 2>/dev/null || break; done; \
                  head -c 4096 /dev/zero > g 2>/dev/null; echo 'the disk is full'";
    let b = battle(&mut h, project.path(), Some(&disk), script, |l| {
        l.min_free_disk_bytes = 0;
        l.contestant_write_bytes = 0;
    })
    .await;
    on_the_disk(&b, &disk);
    // The battle ended (`done` if a contestant's work was recorded before
    // the disk filled, else `error`); so did each contestant, and one whose
    // end could not be written says why.
    assert!(b.status.is_terminal(), "{b:#?}");
    assert!(b.contestants.iter().all(|c| c.status.is_terminal()));
    let c = b
        .contestants
        .iter()
        .find(|c| {
            c.error
                .as_deref()
                .is_some_and(|e| e.contains("disk is full"))
        })
        .unwrap_or_else(|| panic!("no contestant names the full disk: {b:#?}"));
    assert_eq!(c.status, ContestantStatus::Error);
    // What was kept before the disk filled is still there.
    assert_eq!(b.prompt, "Make the change.");
    assert!(b.base_commit.is_some());
    // What was written before the disk filled is kept: the battle, and
    // its contestants' output (streamed into the database as it came).
    let output: String = b
        .contestants
        .iter()
        .filter_map(|c| c.output.clone())
        .collect();
    assert!(output.contains("filling the disk"), "{output}");
    let stored = h.engine.battle(&b.id).await.expect("the battle reads back");
    assert_eq!(stored.status, b.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_reaches_a_limit_fails_and_names_it() {
    if !ready("a_check_that_reaches_a_limit", true) {
        return;
    }
    let mut h = Harness::new().await;
    let project = repo();
    let b = checked_battle(
        &mut h,
        project.path(),
        None,
        "echo hello > hello.txt",
        Some("bomb() { bomb | bomb & }; bomb; sleep 60"),
        |l| l.jail_max_processes = 64,
    )
    .await;
    assert!(b.status.is_terminal());
    for c in &b.contestants {
        let check = c.check.as_ref().expect("the check ran");
        assert!(!check.passed);
        assert!(
            check.output_tail.contains("limits.jail_max_processes = 64"),
            "{}",
            check.output_tail
        );
    }
}
