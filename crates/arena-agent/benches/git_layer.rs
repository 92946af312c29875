//! The git layer of Coding battles against the `git` CLI on the same repo.
//!
//! `cargo bench -p arena-core --bench git_layer`
//!
//! 1. Worktree creation in a repository of 20,000 files:
//!    `worktree::create` (a repository of its own reading the project's
//!    objects through alternates, every file checked out) vs
//!    `git worktree add -b`, median of 5 each, and the disk each uses
//!    (the worktree folder with its git data; for git's, also its entry in
//!    the project's `.git/worktrees`).
//! 2. Diff of a 5,000-line change in a worktree of that repository (40
//!    files with 100 lines rewritten, 15 of them committed in the worktree
//!    and 25 not, plus 10 new untracked files of 100 lines):
//!    `diff::diff_worktree` vs the CLI, median of 5 each. The CLI has no
//!    single command for "base vs working tree including untracked files",
//!    so two equivalents are timed:
//!    - `git diff -M --binary BASE` + `git ls-files -o --exclude-standard`
//!      + `git diff --no-index --binary /dev/null FILE` per untracked file;
//!    - a throwaway index: copy the index, `git add -A` into it, then
//!      `git diff --cached -M --binary BASE` (also finds renames onto
//!      untracked files, as `diff_worktree` does).
//!
//! The repository lives in the system's temporary folder (`TMPDIR`, else
//! `/tmp`). Where creating files is slow (a virtual disk), that cost
//! dominates worktree creation for both sides; `TMPDIR=/dev/shm` measures
//! the tools themselves.
//!
//! Without `--bench` (as under `cargo test --benches`) it runs a quick
//! smoke version: 500 files, one round. `ARENA_BENCH_FILES=N` overrides the
//! repository size.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use arena_agent::{diff, worktree};

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

const BIG_FILES: usize = 50;
const BIG_LINES: usize = 200;

fn main() -> Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let files: usize = match std::env::var("ARENA_BENCH_FILES") {
        Ok(n) => n.parse()?,
        Err(_) if full => 20_000,
        Err(_) => 500,
    };
    let rounds = if full { 5 } else { 1 };

    let dir = tempfile::tempdir()?;
    let project = dir.path().join("project");
    let started = Instant::now();
    let base = make_repo(&project, files)?;
    println!(
        "git layer benchmark: repository of {files} files ({} MiB) in {} made in {:.1} s; \
         median of {rounds} runs each",
        tree_size(&project)? / (1024 * 1024),
        dir.path().display(),
        started.elapsed().as_secs_f64()
    );
    let root = dir.path().join("worktrees");
    fs::create_dir_all(&root)?;

    // 1. Worktree creation, alternating ours and the CLI's; each is removed
    //    (untimed) before the next round.
    let mut ours = Vec::new();
    let mut cli = Vec::new();
    let (mut our_disk, mut cli_disk) = (0, 0);
    for round in 0..rounds {
        let name = format!("lib-{round}");
        let t = Instant::now();
        let wt = worktree::create(&project, &root, &name, &base)?;
        ours.push(t.elapsed());
        check_checkout(&wt.path, files)?;
        our_disk = disk_usage(&wt.path)?;
        worktree::remove(&project, &wt.path, true)?;

        let path = root.join(format!("cli-{round}"));
        let branch = format!("cli/{round}");
        let path_text = path.to_str().ok_or("non-UTF-8 temp path")?;
        let t = Instant::now();
        git(
            &project,
            &["worktree", "add", "-q", "-b", &branch, path_text, &base],
        )?;
        cli.push(t.elapsed());
        check_checkout(&path, files)?;
        cli_disk = disk_usage(&path)?
            + disk_usage(&project.join(".git/worktrees").join(format!("cli-{round}")))?;
        git(&project, &["worktree", "remove", "--force", path_text])?;
        git(&project, &["branch", "-q", "-D", &branch])?;
    }
    report(
        &format!("1. worktree creation ({files} files)"),
        "worktree::create",
        &ours,
        "git worktree add",
        &[&cli],
    );
    println!(
        "   disk: ours {} KiB (git data {} KiB), git worktree add {} KiB",
        our_disk / 1024,
        {
            let wt = worktree::create(&project, &root, "disk", &base)?;
            let git_data = disk_usage(&wt.path.join(".git"))?;
            worktree::remove(&project, &wt.path, true)?;
            git_data / 1024
        },
        cli_disk / 1024
    );

    // 2. Diff of a 5,000-line change.
    let wt = worktree::create(&project, &root, "diff", &base)?;
    // Let the index's timestamps settle, as they have after a contestant's
    // run of minutes, so neither side re-reads every file as "racily clean".
    std::thread::sleep(Duration::from_millis(1100));
    git(&wt.path, &["status", "--porcelain"])?;
    let changed = change_5000_lines(&wt.path)?;

    let mut ours = Vec::new();
    let mut result = None;
    for _ in 0..rounds {
        let t = Instant::now();
        let d = diff::diff_worktree(&wt.path, &base, diff::DiffLimits::default())?;
        ours.push(t.elapsed());
        result = Some(d);
    }
    let d = result.ok_or("no diff")?;

    let mut plain = Vec::new();
    let mut plain_bytes = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        plain_bytes = cli_diff_plus_untracked(&wt.path, &base)?;
        plain.push(t.elapsed());
    }
    let mut temp_index = Vec::new();
    let mut temp_index_bytes = 0;
    for round in 0..rounds {
        let t = Instant::now();
        temp_index_bytes =
            cli_diff_temp_index(&wt.path, &base, &dir.path().join(format!("index-{round}")))?;
        temp_index.push(t.elapsed());
    }
    report(
        &format!(
            "2. diff of a {changed}-line change ({} files, +{} -{}; patch {} KiB) in the {files}-file repository",
            d.stats.files,
            d.stats.insertions,
            d.stats.deletions,
            d.patch.len() / 1024
        ),
        "diff::diff_worktree",
        &ours,
        "git diff BASE + untracked",
        &[&plain, &temp_index],
    );
    println!(
        "   (the second CLI line is the throwaway-index variant; CLI patch sizes {} KiB and {} KiB)",
        plain_bytes / 1024,
        temp_index_bytes / 1024
    );
    if d.stats.insertions != changed || d.stats.files != 50 {
        return Err(format!("unexpected diff: {:?}", d.stats).into());
    }
    Ok(())
}

fn report(title: &str, ours_label: &str, ours: &[Duration], cli_label: &str, clis: &[&[Duration]]) {
    let ours_ms = median_ms(ours);
    println!("\n{title}");
    println!("   {ours_label:<28} {ours_ms:>9.1} ms");
    for (i, cli) in clis.iter().enumerate() {
        let cli_ms = median_ms(cli);
        let label = if i == 0 {
            cli_label
        } else {
            "  (throwaway index)"
        };
        println!(
            "   {label:<28} {cli_ms:>9.1} ms   ratio ours/CLI = {:.2}",
            ours_ms / cli_ms
        );
    }
}

fn median_ms(times: &[Duration]) -> f64 {
    let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    match ms.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ms[n / 2],
        n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
    }
}

/// A repository of `files` files (200 folders; 50 of them `BIG_LINES`
/// lines long, the rest about 1 KiB), in one commit. Returns its id.
fn make_repo(project: &Path, files: usize) -> Result<String> {
    fs::create_dir_all(project)?;
    git(project, &["init", "-q", "-b", "main"])?;
    fs::write(project.join(".gitignore"), "target/\n")?;
    for i in 0..files {
        let path = file_path(project, i);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let lines = if i < BIG_FILES { BIG_LINES } else { 25 };
        let text: String = (0..lines)
            .map(|l| format!("    let value_{l} = compute({i}, {l}); // file {i}\n"))
            .collect();
        fs::write(path, text)?;
    }
    git(project, &["add", "-A"])?;
    git(project, &["commit", "-q", "-m", "generated"])?;
    Ok(git(project, &["rev-parse", "HEAD"])?.trim().to_string())
}

fn file_path(root: &Path, i: usize) -> PathBuf {
    root.join(format!("src/mod_{:03}/file_{i:05}.rs", i % 200))
}

/// Rewrites 100 lines in each of 40 big files (committing 15 of them) and
/// adds 10 untracked files of 100 lines: 5,000 changed lines. Returns the
/// number of inserted lines.
fn change_5000_lines(wt: &Path) -> Result<usize> {
    let mut inserted = 0;
    for i in 0..40 {
        let path = file_path(wt, i);
        let text = fs::read_to_string(&path)?;
        let changed: String = text
            .lines()
            .enumerate()
            .map(|(l, line)| {
                if l % 2 == 0 {
                    format!("{line} // rewritten by the contestant\n")
                } else {
                    format!("{line}\n")
                }
            })
            .collect();
        fs::write(&path, changed)?;
        inserted += BIG_LINES / 2;
        if i == 14 {
            git(wt, &["commit", "-q", "-am", "contestant: first 15 files"])?;
        }
    }
    for i in 0..10 {
        let text: String = (0..100)
            .map(|l| format!("pub fn new_{i}_{l}() -> u32 {{ {l} }}\n"))
            .collect();
        fs::write(wt.join(format!("src/new_{i}.rs")), text)?;
        inserted += 100;
    }
    Ok(inserted)
}

/// `git diff -M --binary BASE`, then each untracked file against /dev/null.
/// Returns the output size.
fn cli_diff_plus_untracked(wt: &Path, base: &str) -> Result<usize> {
    let mut bytes = git(wt, &["diff", "-M", "--binary", base])?.len();
    let untracked = git(wt, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    for file in untracked.split('\0').filter(|f| !f.is_empty()) {
        // Exit status 1 means "differs", which it does.
        let out =
            git_command(wt, &["diff", "--no-index", "--binary", "/dev/null", file]).output()?;
        bytes += out.stdout.len();
    }
    Ok(bytes)
}

/// The same through a throwaway copy of the index. Returns the output size.
fn cli_diff_temp_index(wt: &Path, base: &str, index: &Path) -> Result<usize> {
    let real = git(
        wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    )?;
    fs::copy(real.trim(), index)?;
    let run = |args: &[&str]| -> Result<String> {
        let out = git_command(wt, args)
            .env("GIT_INDEX_FILE", index)
            .output()?;
        if !out.status.success() {
            return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    run(&["add", "-A"])?;
    Ok(run(&["diff", "--cached", "-M", "--binary", base])?.len())
}

/// A spot check that a worktree really has the files.
fn check_checkout(path: &Path, files: usize) -> Result<()> {
    for i in [0, files / 2, files - 1] {
        if !file_path(path, i).is_file() {
            return Err(format!("{} lacks file {i}", path.display()).into());
        }
    }
    Ok(())
}

fn tree_size(path: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(path)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            if entry.file_name() != ".git" {
                total += tree_size(&entry.path())?;
            }
        } else {
            total += meta.len();
        }
    }
    Ok(total)
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git_command(dir, args).output()?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Arena Bench")
        .env("GIT_AUTHOR_EMAIL", "bench@arena.invalid")
        .env("GIT_COMMITTER_NAME", "Arena Bench")
        .env("GIT_COMMITTER_EMAIL", "bench@arena.invalid");
    command
}

/// Bytes of disk the files under `path` take (allocated blocks, as `du`).
fn disk_usage(path: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut folders = vec![path.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder)? {
            let entry = entry?;
            let meta = entry.path().symlink_metadata()?;
            total += meta.blocks() * 512;
            if meta.is_dir() {
                folders.push(entry.path());
            }
        }
    }
    Ok(total)
}
