//! A contestant's diff is "the files in its working tree now against the
//! base commit": nothing of the repository it was given is trusted — not
//! its `info/exclude`, index, HEAD or objects — and nothing git would open
//! and block on is opened.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use arena_agent::diff::{self, DiffError, DiffLimits};
use arena_agent::worktree;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A project with one commit and a contestant worktree of it.
fn contestant() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    worktree::Worktree,
    String,
) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    git(&project, &["config", "user.email", "t@example.invalid"]);
    git(&project, &["config", "user.name", "T"]);
    std::fs::write(
        project.join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(project.join("sub/keep.txt"), "kept\n").unwrap();
    git(&project, &["add", "."]);
    git(&project, &["commit", "-q", "-m", "initial"]);
    let base = git(&project, &["rev-parse", "HEAD"]);
    let wt = worktree::create(&project, &dir.path().join("wt"), "one", &base).unwrap();
    (dir, project, wt, base)
}

fn diff_of(project: &Path, wt: &worktree::Worktree, base: &str) -> Result<diff::Diff, DiffError> {
    let objects = worktree::object_dirs(project).unwrap();
    diff::diff_files(&wt.path, base, &objects, DiffLimits::default())
}

#[test]
fn a_path_the_agent_excluded_in_its_own_repository_is_still_in_the_diff() {
    let (_dir, project, wt, base) = contestant();
    std::fs::create_dir_all(wt.path.join("calc")).unwrap();
    std::fs::write(
        wt.path.join("calc/__init__.py"),
        "def add(a, b): return 4\n",
    )
    .unwrap();
    std::fs::write(wt.path.join(".git/info/exclude"), "calc/\n").unwrap();
    let d = diff_of(&project, &wt, &base).unwrap();
    let paths: Vec<&str> = d.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["calc/__init__.py"], "{}", d.patch);
}

#[test]
fn the_agents_index_head_and_objects_play_no_part() {
    let (_dir, project, wt, base) = contestant();
    // An index entry for calc.py pointing at a 64 MiB blob of zeros, one
    // for a `.gitattributes` that is not on disk, and HEAD on a commit of
    // the agent's: none of them is what the files are.
    let bomb = {
        let mut child = Command::new("git")
            .args(["hash-object", "-w", "--stdin"])
            .current_dir(&wt.path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            let zeros = vec![0u8; 1 << 20];
            for _ in 0..64 {
                stdin.write_all(&zeros).unwrap();
            }
        }
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for entry in [
        format!("100644,{bomb},calc.py"),
        format!("100644,{bomb},.gitattributes"),
    ] {
        git(&wt.path, &["update-index", "--add", "--cacheinfo", &entry]);
    }
    std::fs::write(
        wt.path.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let d = diff_of(&project, &wt, &base).unwrap();
    let paths: Vec<&str> = d.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["calc.py"], "{}", d.patch);
    assert!(d.patch.contains("+    return a - b"), "{}", d.patch);
    // Committing the change moves the agent's HEAD; the diff is the same.
    git(
        &wt.path,
        &["-c", "core.hooksPath=/dev/null", "commit", "-qam", "x"],
    );
    assert_eq!(diff_of(&project, &wt, &base).unwrap().patch, d.patch);
}

#[test]
fn a_fifo_where_git_reads_its_rules_is_refused_at_once() {
    for name in [".gitignore", "sub/.gitattributes", ".gitmodules"] {
        let (_dir, project, wt, base) = contestant();
        let path = wt.path.join(name);
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path made here.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let started = Instant::now();
        let error = diff_of(&project, &wt, &base).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        match error {
            DiffError::OddGitFile { file, kind } => {
                assert_eq!(file, name);
                assert_eq!(kind, "a FIFO");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // A link to a file is a project's choice, and read as the file.
    let (_dir, project, wt, base) = contestant();
    std::fs::write(wt.path.join("rules"), "*.log\n").unwrap();
    std::os::unix::fs::symlink("rules", wt.path.join(".gitignore")).unwrap();
    std::fs::write(wt.path.join("x.log"), "noise\n").unwrap();
    let d = diff_of(&project, &wt, &base).unwrap();
    let paths: Vec<&str> = d.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, [".gitignore", "rules"], "{}", d.patch);
}
