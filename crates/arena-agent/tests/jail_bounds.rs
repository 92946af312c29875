//! What a jailed run may consume, against the real kernel and the real
//! bubblewrap, through `process::run`: memory across processes, processes,
//! bytes written, the disk's free-space floor, and the OOM killer's
//! choice. Each limit reached stops the run and names its `[limits]` key;
//! a "user's program" started outside the jail lives on.
//!
//! Without bubblewrap, or without a cgroup this machine gives (`arena
//! backends` says which), a test says so and passes.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use arena_agent::bounds::{self, Consumption, Limit, Mechanism};
use arena_agent::process::{run, Bounds, Exit, Launch};
use arena_agent::sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

const MIB: u64 = 1024 * 1024;

fn ready(test: &str) -> bool {
    if arena_agent::jail::find_bwrap().is_none() {
        eprintln!("{test}: skipped: no bubblewrap");
        return false;
    }
    if matches!(bounds::mechanism(), Mechanism::Rlimits) {
        eprintln!(
            "{test}: skipped: no cgroup for jails here ({})",
            bounds::describe()
        );
        return false;
    }
    true
}

/// `script` (sh) jailed in `work`, with `consumption`.
fn jailed(work: &Path, script: &str, consumption: Consumption) -> Launch {
    let sandbox = Sandbox::new(Vec::new(), vec![work.to_path_buf()], Some(Vec::new()));
    Launch {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        cwd: work.to_path_buf(),
        env: vec![
            ("HOME".into(), work.display().to_string()),
            ("TMPDIR".into(), "/tmp".into()),
        ],
        timeout: Duration::from_secs(60),
        sandbox: Some(sandbox),
        bounds: Bounds {
            consumption,
            ..Bounds::default()
        },
        door: None,
        registries: None,
    }
}

async fn run_jailed(launch: &Launch) -> (Exit, Vec<String>, Duration) {
    let started = Instant::now();
    let mut lines = Vec::new();
    let exit = run(launch, &CancellationToken::new(), |line| {
        let (arena_agent::process::Line::Stdout(l) | arena_agent::process::Line::Stderr(l)) = line;
        lines.push(l);
    })
    .await
    .expect("the jail starts");
    (exit, lines, started.elapsed())
}

/// The user's program: a process outside any jail holding 64 MiB.
struct StandIn(Child);

impl StandIn {
    fn start() -> StandIn {
        let child = Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import time; b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(120)",
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

fn workdir() -> tempfile::TempDir {
    // Bound into the jail on top of its own /tmp.
    tempfile::tempdir().unwrap()
}

#[tokio::test]
async fn every_jailed_process_is_the_oom_killers_first_choice() {
    if arena_agent::jail::find_bwrap().is_none() {
        eprintln!("skipped: no bubblewrap");
        return;
    }
    let work = workdir();
    let launch = jailed(
        work.path(),
        "cat /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'",
        Consumption::default(),
    );
    let (exit, lines, _) = run_jailed(&launch).await;
    assert!(exit.success(), "{exit:?}");
    assert_eq!(lines, ["1000", "1000"]);
    // Arena's own score is untouched.
    let own = std::fs::read_to_string("/proc/self/oom_score_adj").unwrap();
    assert_eq!(own.trim(), "0");
}

#[tokio::test]
async fn memory_across_processes_is_bounded_and_named() {
    if !ready("memory_across_processes_is_bounded_and_named") {
        return;
    }
    let mut user = StandIn::start();
    let work = workdir();
    // Six processes of 100 MB each under a 256 MiB jail: each alone fits.
    let script = r#"
for i in 1 2 3 4 5 6; do
  /usr/bin/python3 -c 'import time; b = bytearray(100 << 20); b[::4096] = b"x" * len(b[::4096]); time.sleep(60)' &
done
wait
"#;
    let launch = jailed(
        work.path(),
        script,
        Consumption {
            memory_bytes: Some(256 * MIB),
            ..Consumption::default()
        },
    );
    let (exit, _, took) = run_jailed(&launch).await;
    assert_eq!(
        exit.limit,
        Some(Limit::Memory { limit: 256 * MIB }),
        "{exit:?}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
    let reason = exit.describe("agent");
    assert!(
        reason.contains("limits.jail_memory_bytes = 256 MiB"),
        "{reason}"
    );
    assert!(user.alive(), "the user's program was killed");
}

#[tokio::test]
async fn a_fork_bomb_is_bounded_and_named() {
    if !ready("a_fork_bomb_is_bounded_and_named") {
        return;
    }
    let mut user = StandIn::start();
    let work = workdir();
    // A real fork bomb: only a pids limit holds it.
    let launch = jailed(
        work.path(),
        "bomb() { bomb | bomb & }; bomb; sleep 60",
        Consumption {
            processes: Some(64),
            ..Consumption::default()
        },
    );
    let (exit, _, took) = run_jailed(&launch).await;
    assert_eq!(exit.limit, Some(Limit::Processes { limit: 64 }), "{exit:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert!(exit
        .describe("agent")
        .contains("limits.jail_max_processes = 64"));
    assert!(user.alive());
}

#[tokio::test]
async fn writing_past_the_budget_stops_the_run() {
    if arena_agent::jail::find_bwrap().is_none() {
        eprintln!("skipped: no bubblewrap");
        return;
    }
    let work = workdir();
    // Many files, each small: no one of them is over a file-size limit.
    let script = "for i in $(seq 1 48); do head -c 1048576 /dev/urandom > f$i; done; sleep 60";
    let launch = jailed(
        work.path(),
        script,
        Consumption {
            write_bytes: Some(16 * MIB),
            ..Consumption::default()
        },
    );
    let (exit, _, took) = run_jailed(&launch).await;
    match &exit.limit {
        Some(Limit::Writes { limit, written }) => {
            assert_eq!(*limit, 16 * MIB);
            assert!(*written > 16 * MIB, "{written}");
        }
        other => panic!("{other:?}: {exit:?}"),
    }
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(exit
        .describe("agent")
        .contains("limits.contestant_write_bytes = 16 MiB"));
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
        let dir = workdir();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=32m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("{test}: skipped: could not mount a tmpfs");
            return None;
        }
        Some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[tokio::test]
async fn a_disk_below_its_floor_stops_the_run_and_a_start_below_it_is_refused() {
    if arena_agent::jail::find_bwrap().is_none() {
        eprintln!("skipped: no bubblewrap");
        return;
    }
    let Some(disk) = SmallDisk::mount("a_disk_below_its_floor_stops_the_run") else {
        return;
    };
    let work = disk.0.path();
    let floor = Consumption {
        min_free_disk_bytes: Some(16 * MIB),
        ..Consumption::default()
    };
    let script =
        "for i in $(seq 1 30); do head -c 1048576 /dev/zero > f$i || break; done; sleep 60";
    let (exit, _, took) = run_jailed(&jailed(work, script, floor)).await;
    match &exit.limit {
        Some(Limit::DiskFloor { floor, free }) => {
            assert_eq!(*floor, 16 * MIB);
            assert!(*free < 16 * MIB, "{free}");
        }
        other => panic!("{other:?}: {exit:?}"),
    }
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(exit
        .describe("agent")
        .contains("limits.min_free_disk_bytes = 16 MiB"));
    // The disk is still under its floor: the next run does not start.
    let e = run(
        &jailed(work, "true", floor),
        &CancellationToken::new(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("limits.min_free_disk_bytes"), "{e}");
}

#[tokio::test]
async fn the_jails_tmp_and_shm_are_as_big_as_limits_say() {
    if arena_agent::jail::find_bwrap().is_none() {
        eprintln!("skipped: no bubblewrap");
        return;
    }
    let work = workdir();
    let script = "for d in /tmp /dev/shm; do head -c 67108864 /dev/zero > $d/balloon 2>/dev/null \
                  || echo full; wc -c < $d/balloon; rm $d/balloon; done";
    let launch = jailed(
        work.path(),
        script,
        Consumption {
            tmp_bytes: Some(8 * MIB),
            ..Consumption::default()
        },
    );
    let (exit, lines, _) = run_jailed(&launch).await;
    assert!(exit.success(), "{exit:?} {lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
    for pair in lines.chunks(2) {
        assert_eq!(pair[0], "full", "{lines:?}");
        let size: u64 = pair[1].trim().parse().unwrap();
        assert!(size <= 8 * MIB, "{size}");
    }
}
