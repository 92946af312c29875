//! Where no cgroup can be made for a jail, its processes get per-process
//! limits: `RLIMIT_DATA` for memory (one process over it cannot allocate;
//! six under it together are not held), and `RLIMIT_NPROC` only for a
//! user other than root, whom the kernel does not hold to it. This binary
//! forces that path (`ARENA_TEST_NO_CGROUP`), so it has one test.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::time::Duration;

use arena_agent::bounds::{self, Consumption, Mechanism};
use arena_agent::process::{run, Bounds, Launch, Line};
use arena_agent::sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

const MIB: u64 = 1024 * 1024;

#[tokio::test]
async fn without_a_cgroup_each_process_is_bounded_by_rlimits() {
    std::env::set_var("ARENA_TEST_NO_CGROUP", "1");
    assert_eq!(bounds::mechanism(), &Mechanism::Rlimits);
    assert!(bounds::describe().starts_with("limits: rlimits"));
    if arena_agent::jail::find_bwrap().is_none() {
        eprintln!("skipped: no bubblewrap");
        return;
    }
    let limits = Consumption {
        memory_bytes: Some(256 * MIB),
        processes: Some(64),
        ..Consumption::default()
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (data, processes) = bounds::rlimits(limits);
    assert_eq!(data, Some(256 * MIB));
    // The kernel exempts root from RLIMIT_NPROC: none is set for it.
    assert_eq!(processes.is_none(), root);
    let work = tempfile::tempdir().unwrap();
    let script = "/usr/bin/python3 -c 'b = bytearray(100 << 20); print(\"small ok\")'; \
                  /usr/bin/python3 -c 'b = bytearray(400 << 20); print(\"big ok\")' 2>&1 | tail -1";
    let launch = Launch {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        cwd: work.path().to_path_buf(),
        env: vec![("HOME".into(), work.path().display().to_string())],
        timeout: Duration::from_secs(60),
        sandbox: Some(Sandbox::new(
            Vec::new(),
            vec![work.path().to_path_buf()],
            Some(Vec::new()),
        )),
        bounds: Bounds {
            consumption: limits,
            ..Bounds::default()
        },
        door: None,
        registries: None,
    };
    let mut lines = Vec::new();
    let exit = run(&launch, &CancellationToken::new(), |line| {
        let (Line::Stdout(l) | Line::Stderr(l)) = line;
        lines.push(l);
    })
    .await
    .expect("the jail starts");
    assert!(exit.success(), "{exit:?}");
    assert_eq!(lines, ["small ok", "MemoryError"], "{lines:?}");
}
