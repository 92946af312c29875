//! The jail's start-up cost per process: `true` run directly against `true`
//! run in a jail (every namespace, the seccomp filter, the system folders
//! bound), 100 runs each, interleaved; median and p95 of the wall time from
//! spawn to exit.
//!
//! `cargo bench -p arena-agent --bench jail`
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a quick
//! smoke version of 5 runs each. Without bubblewrap it says so and stops.

use std::error::Error;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arena_agent::jail::{self, Jail, Network};

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

const TRUE: &str = "/usr/bin/true";

fn main() -> Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { 100 } else { 5 };
    let info = match jail::probe() {
        Ok(info) => info,
        Err(e) => {
            println!("jail benchmark: skipped: {e}");
            return Ok(());
        }
    };
    let dir = tempfile::tempdir()?;
    let work = dir.path().canonicalize()?;
    let jails = [
        ("jailed, no network", Network::None),
        ("jailed, host network", Network::Host),
    ]
    .map(|(name, network)| {
        (
            name,
            Jail {
                read: Vec::new(),
                write: vec![work.clone()],
                protect: Vec::new(),
                cwd: work.clone(),
                network,
                tmp_bytes: jail::TMP_BYTES,
                layers: Vec::new(),
                links: Vec::new(),
                tree_at: None,
            },
        )
    });
    println!("jail benchmark: {info}; {runs} runs of {TRUE} each, interleaved");

    let mut direct = Vec::new();
    let mut jailed: Vec<Vec<Duration>> = vec![Vec::new(); jails.len()];
    for _ in 0..runs {
        let mut cmd = Command::new(TRUE);
        direct.push(time(&mut cmd)?);
        for (i, (_, jail)) in jails.iter().enumerate() {
            // Preparing the command (argv, seccomp file) counts too.
            let t = Instant::now();
            let prepared = jail.command(Path::new(TRUE), &[])?;
            let mut cmd = Command::new(&prepared.program);
            cmd.args(&prepared.args);
            // SAFETY: two async-signal-safe calls on a descriptor
            // `prepared` keeps open until the child has exited.
            unsafe {
                cmd.pre_exec(prepared.pre_exec());
            }
            time(&mut cmd)?;
            jailed[i].push(t.elapsed());
        }
    }
    report("direct", &mut direct);
    for ((name, _), times) in jails.iter().zip(jailed.iter_mut()) {
        report(name, times);
    }
    Ok(())
}

/// Spawn to exit, with a small environment as agents get.
fn time(cmd: &mut Command) -> Result<Duration> {
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let t = Instant::now();
    let out = cmd.output()?;
    let took = t.elapsed();
    if !out.status.success() {
        return Err(format!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(took)
}

fn report(name: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| {
        let i = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1;
        times[i].as_secs_f64() * 1000.0
    };
    println!(
        "  {name:<22} median {:>7.2} ms   p95 {:>7.2} ms   (min {:.2}, max {:.2})",
        at(0.5),
        at(0.95),
        at(0.0),
        at(1.0)
    );
}
