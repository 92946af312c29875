//! What issue 39's confinement costs a Coding check, on a 10,000-file
//! repository (100 folders of 100 files; `ARENA_BENCH_FILES` resizes it),
//! each pair of figures taken in turn in the same run:
//!
//! - **the reader**: the diff of a worktree (100 files changed, 100 added)
//!   taken by the Arena binary as a reader process in a jail, against the
//!   same diff taken in this process (target: ≤ 1.3×);
//! - **the check's tree**: what a check costs beyond running in a jail —
//!   a fresh checkout of the base with the change applied (and removed
//!   after), against an overlay of a base tree kept per battle with the
//!   change applied inside the jail by the Arena binary (target: ≤ 200 ms
//!   per check).
//!
//! Run: cargo bench -p arena-cli --bench check_tree     # ARENA_BENCH_RUNS=N (default 5)
//! (Without `--bench`, as under `cargo test --benches`: 1 run of 300
//! files, a smoke test.)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use arena_core::agent::{apply, environment, jail, process, reader, sandbox};
use tokio_util::sync::CancellationToken;

type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(["-c", "user.email=a@b.invalid", "-c", "user.name=a"])
        .args(args)
        .current_dir(dir)
        .output()?;
    if !out.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A jailed run of `program args` in `cwd`, reading `read`, writing
/// `write`, with `layers`; how long it took.
async fn jailed(
    program: &Path,
    args: Vec<String>,
    cwd: &Path,
    (read, write): (Vec<PathBuf>, Vec<PathBuf>),
    layers: Vec<environment::Layer>,
    scratch: &Path,
) -> Result<Duration> {
    let mut sandbox = sandbox::Sandbox::new(read, write, Some(Vec::new()));
    sandbox.layers = layers;
    let tmp = scratch.join("tmp");
    std::fs::create_dir_all(&tmp)?;
    let launch = process::Launch {
        program: program.to_path_buf(),
        args,
        cwd: cwd.to_path_buf(),
        env: vec![
            ("HOME".into(), scratch.to_string_lossy().into_owned()),
            ("TMPDIR".into(), tmp.to_string_lossy().into_owned()),
        ],
        timeout: Duration::from_secs(300),
        sandbox: Some(sandbox),
        bounds: process::Bounds::default(),
        door: None,
        registries: None,
    };
    let started = Instant::now();
    let exit = process::run(&launch, &CancellationToken::new(), |_| {}).await?;
    if !exit.success() {
        return Err(format!("{}: {}", exit.describe("the run"), exit.stderr_tail).into());
    }
    Ok(started.elapsed())
}

#[tokio::main]
async fn main() -> Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let runs: usize = std::env::var("ARENA_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 5 } else { 1 });
    let files: usize = std::env::var("ARENA_BENCH_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 10_000 } else { 300 });
    if let Err(why) = jail::jail_info() {
        println!("check_tree: skipped, no jail here: {why}");
        return Ok(());
    }
    let arena = PathBuf::from(env!("CARGO_BIN_EXE_arena"));
    jail::set_confiner(arena.clone());
    let dir = tempfile::tempdir()?;
    let root = dir.path().canonicalize()?;
    let project = root.join("project");
    let per = 100usize;
    for d in 0..files.div_ceil(per) {
        let folder = project.join(format!("d{d:03}"));
        std::fs::create_dir_all(&folder)?;
        for f in 0..per.min(files - d * per) {
            std::fs::write(folder.join(format!("f{f:03}.txt")), format!("{d} {f}\n"))?;
        }
    }
    git(&project, &["init", "-q"])?;
    git(&project, &["add", "."])?;
    git(&project, &["commit", "-q", "-m", "files"])?;
    let base = git(&project, &["rev-parse", "HEAD"])?;
    let objects = arena_core::worktree::object_dirs(&project)?;
    let trees = root.join("trees");
    let agent = arena_core::worktree::create(&project, &trees, "agent", &base)?.path;
    for n in 0..100usize.min(files) {
        let d = n % files.div_ceil(per);
        std::fs::write(
            agent.join(format!("d{d:03}/f{:03}.txt", n / 100)),
            "changed\n",
        )?;
        std::fs::write(agent.join(format!("d{d:03}/new{n:03}.txt")), "new\n")?;
    }
    let request = reader::Request::Diff {
        worktree: agent.clone(),
        base: base.clone(),
        objects: objects.clone(),
        file_bytes: 1 << 20,
        total_bytes: 64 << 20,
    };
    let patch = match request.answer() {
        reader::Answer::Diff { diff } => diff.patch,
        other => return Err(format!("no diff: {other:?}").into()),
    };
    println!(
        "check_tree: {files} files, a change of {} bytes, {runs} runs each, in turn",
        patch.len()
    );

    // The reader: in this process, then as a jailed reader process.
    let (mut inside, mut reader_runs) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let started = Instant::now();
        let answer = request.answer();
        inside.push(started.elapsed());
        assert!(matches!(answer, reader::Answer::Diff { .. }));
        let scratch = root.join(format!("reader-{run}"));
        std::fs::create_dir_all(&scratch)?;
        let answer_file = scratch.join("answer.json");
        let mut read = vec![agent.clone(), arena.clone()];
        read.extend(objects.iter().cloned());
        reader_runs.push(
            jailed(
                &arena,
                request.args(&answer_file),
                &agent,
                (read, vec![scratch.clone()]),
                Vec::new(),
                &scratch,
            )
            .await?,
        );
        let answer = reader::read_answer(&answer_file, request.answer_limit())?;
        assert!(matches!(answer, reader::Answer::Diff { .. }));
    }
    let (a, b) = (median(inside), median(reader_runs));
    println!(
        "reader: in this process {:.1} ms, a jailed reader process {:.1} ms: {:.2}x",
        a.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        b.as_secs_f64() / a.as_secs_f64()
    );

    // The check's tree. The base tree is made once, as per battle.
    let made = Instant::now();
    let base_tree = arena_core::worktree::create(&project, &trees, "base", &base)?.path;
    println!(
        "check's tree: the base tree made once in {:.0} ms",
        made.elapsed().as_secs_f64() * 1e3
    );
    let plain_read = |p: &Path| {
        let mut read = vec![p.to_path_buf()];
        read.extend(objects.iter().cloned());
        read.push(arena.clone());
        read
    };
    let (mut fresh, mut over, mut plain) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        // A fresh checkout with the change applied, then a plain check.
        let name = format!("fresh-{run}");
        let started = Instant::now();
        let tree = arena_core::worktree::create(&project, &trees, &name, &base)?.path;
        let _ = apply::apply(&tree, &patch, apply::Consent::Given)?;
        let made = started.elapsed();
        let scratch = root.join(format!("plain-{run}"));
        std::fs::create_dir_all(&scratch)?;
        let check = jailed(
            Path::new("/bin/sh"),
            vec!["-c".into(), "true".into()],
            &tree,
            (plain_read(&tree), vec![tree.clone(), scratch.clone()]),
            Vec::new(),
            &scratch,
        )
        .await?;
        let started = Instant::now();
        arena_core::worktree::remove(&project, &tree, true)?;
        fresh.push(made + started.elapsed());
        plain.push(check);

        // An overlay of the base tree, the change applied in the jail.
        let place = trees.join(format!("over-{run}"));
        std::fs::create_dir_all(&place)?;
        let scratch = root.join(format!("over-scratch-{run}"));
        std::fs::create_dir_all(scratch.join("tmp"))?;
        let patch_file = scratch.join("tmp/change.patch");
        std::fs::write(&patch_file, &patch)?;
        let layer = environment::Layer {
            lower: base_tree.clone(),
            at: place.clone(),
            state: Some(scratch.join("tree")),
        };
        let args =
            apply::apply_first_args(&place, &patch_file, "sh", &["-c".into(), "true".into()]);
        let check = jailed(
            &arena,
            args,
            &place,
            (plain_read(&base_tree), vec![place.clone(), scratch.clone()]),
            vec![layer],
            &scratch,
        )
        .await?;
        let started = Instant::now();
        environment::remove(&scratch);
        environment::remove(&place);
        over.push(check + started.elapsed());
    }
    let (f, o, p) = (median(fresh), median(over), median(plain));
    println!(
        "check's tree: a plain jailed check {:.1} ms; a fresh checkout with the change applied \
         and removed {:.1} ms beyond it; an overlay of the base with the change applied in the \
         jail {:.1} ms in all, {:.1} ms beyond a plain check",
        p.as_secs_f64() * 1e3,
        f.as_secs_f64() * 1e3,
        o.as_secs_f64() * 1e3,
        o.saturating_sub(p).as_secs_f64() * 1e3
    );
    Ok(())
}
