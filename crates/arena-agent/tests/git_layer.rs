//! The git layer of Coding battles (`worktree`, `diff`) against real
//! repositories in temporary folders, cross-checked with the `git` CLI.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use arena_agent::apply;
use arena_agent::diff::{self, ChangeStatus, DiffError, DiffStats};
use arena_agent::worktree::{self, WorktreeError};

/// Runs `git` in `dir` with no user or system config, panicking on failure.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = git_command(dir, args)
        .output()
        .expect("run git (is it installed?)");
    assert!(
        output.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `git`, returning whether it succeeded and its stderr.
fn git_try(dir: &Path, args: &[&str]) -> (bool, String) {
    let output = git_command(dir, args).output().expect("run git");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Arena Test")
        .env("GIT_AUTHOR_EMAIL", "test@arena.invalid")
        .env("GIT_COMMITTER_NAME", "Arena Test")
        .env("GIT_COMMITTER_EMAIL", "test@arena.invalid");
    command
}

fn write(path: &Path, contents: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, contents).unwrap();
}

fn numbered(prefix: &str, lines: usize) -> String {
    (1..=lines)
        .map(|i| format!("{prefix} line {i}\n"))
        .collect()
}

fn binary_blob(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 7) as u8)
        .collect()
}

/// A project with a few files in one commit; returns (temp dir, project).
fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    fs::create_dir(&project).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    write(&project.join("src/lib.rs"), numbered("lib", 30));
    write(&project.join("src/util.rs"), numbered("util", 20));
    write(&project.join("README.md"), "# Project\n\nHello.\n");
    write(&project.join("old_name.txt"), numbered("moving", 25));
    write(&project.join("doomed.txt"), "delete me\n");
    write(&project.join("image.bin"), binary_blob(1, 3000));
    write(&project.join("latin1.txt"), b"caf\xe9\nna\xefve\nend\n");
    write(&project.join(".gitignore"), "target/\n*.log\n");
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "base"]);
    (dir, project)
}

fn head(dir: &Path) -> String {
    git(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The user's repository as Arena must leave it: no worktree besides the
/// main one, no `arena/*` branch.
fn untouched(project: &Path) {
    let listed = git(project, &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 1, "{listed}");
    assert_eq!(git(project, &["branch", "--list", "arena/*"]), "");
}

/// `diff_worktree` with the default limits.
fn diff_of(worktree: &Path, base: &str) -> Result<diff::Diff, DiffError> {
    diff::diff_worktree(worktree, base, diff::DiffLimits::default())
}

/// A fresh clone of `project` checked out at `commit`.
fn fresh_checkout(project: &Path, commit: &str, into: &Path) -> PathBuf {
    fs::create_dir_all(into).unwrap();
    let target = into.join(format!("fresh-{}", &commit[..8]));
    let parent = target.parent().unwrap();
    git(
        parent,
        &[
            "clone",
            "-q",
            "--no-checkout",
            project.to_str().unwrap(),
            target.to_str().unwrap(),
        ],
    );
    git(&target, &["checkout", "-q", "--detach", commit]);
    target
}

/// `git apply --check` of `patch` in `checkout`; then, if `really`, applies it.
fn git_apply(checkout: &Path, patch: &str, really: bool) -> (bool, String) {
    let file = checkout.join("..").join(format!(
        "patch-{}.diff",
        checkout.file_name().unwrap().to_string_lossy()
    ));
    fs::write(&file, patch).unwrap();
    let file = file.to_str().unwrap().to_string();
    let (ok, err) = git_try(checkout, &["apply", "--check", &file]);
    if !ok || !really {
        return (ok, err);
    }
    git_try(checkout, &["apply", &file])
}

#[test]
fn check_project_accepts_only_a_repository_with_commits() {
    let dir = tempfile::tempdir().unwrap();

    let missing = dir.path().join("missing");
    assert!(matches!(
        worktree::check_project(&missing),
        Err(WorktreeError::Missing(_))
    ));

    let plain = dir.path().join("plain");
    fs::create_dir(&plain).unwrap();
    let error = worktree::check_project(&plain).unwrap_err();
    assert!(
        matches!(error, WorktreeError::NotARepository(_)),
        "{error:?}"
    );
    assert!(error.to_string().contains("git init"), "{error}");

    let bare = dir.path().join("bare.git");
    fs::create_dir(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare"]);
    let error = worktree::check_project(&bare).unwrap_err();
    assert!(matches!(error, WorktreeError::Bare(_)), "{error:?}");

    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    git(&empty, &["init", "-q", "-b", "main"]);
    write(&empty.join("a.txt"), "not committed\n");
    let error = worktree::check_project(&empty).unwrap_err();
    assert!(matches!(error, WorktreeError::NoCommits(_)), "{error:?}");
    assert!(error.to_string().contains("first commit"), "{error}");

    let (_keep, good) = project();
    assert_eq!(worktree::check_project(&good).unwrap(), head(&good));

    let error = worktree::check_project(&good.join("src")).unwrap_err();
    assert!(
        matches!(error, WorktreeError::NotTopLevel { .. }),
        "{error:?}"
    );
}

#[test]
fn create_makes_a_repository_of_its_own_git_agrees_with() {
    let (dir, project) = project();
    let base = head(&project);
    // A later commit on main: the worktree must start at `base`, not HEAD.
    write(
        &project.join("README.md"),
        "# Project\n\nChanged on main.\n",
    );
    git(&project, &["commit", "-q", "-am", "later"]);

    let root = dir.path().join("worktrees");
    let wt = worktree::create(&project, &root, "01-alice", &base).unwrap();
    assert_eq!(wt.name, "01-alice");
    assert_eq!(wt.branch, "arena/01-alice");
    assert_eq!(wt.base_commit, base);
    assert_eq!(wt.path, root.canonicalize().unwrap().join("01-alice"));

    assert_eq!(head(&wt.path), base);
    assert_eq!(
        git(&wt.path, &["branch", "--show-current"]).trim(),
        "arena/01-alice"
    );
    // The CLI sees a clean checkout of every file (libgit2 wrote a good index).
    assert_eq!(git(&wt.path, &["status", "--porcelain"]), "");
    assert_eq!(
        fs::read(wt.path.join("image.bin")).unwrap(),
        binary_blob(1, 3000)
    );
    assert!(!worktree::is_dirty(&wt.path).unwrap());
    // Ignored files (even in a new folder) do not make it dirty; others do.
    write(&wt.path.join("logs/run.log"), "ignored\n");
    assert!(!worktree::is_dirty(&wt.path).unwrap());
    write(&wt.path.join("logs/notes.txt"), "not ignored\n");
    assert!(worktree::is_dirty(&wt.path).unwrap());
    fs::remove_dir_all(wt.path.join("logs")).unwrap();
    write(&wt.path.join("README.md"), "edited\n");
    assert!(worktree::is_dirty(&wt.path).unwrap());
    git(&wt.path, &["checkout", "--", "README.md"]);
    assert!(!worktree::is_dirty(&wt.path).unwrap());

    // A repository of its own: its git data is in its folder, it reads the
    // project's objects, and the project gained no worktree or branch.
    assert!(wt.path.join(".git").is_dir());
    assert_eq!(
        fs::read_to_string(wt.path.join(".git/objects/info/alternates")).unwrap(),
        format!(
            "{}\n",
            project
                .join(".git/objects")
                .canonicalize()
                .unwrap()
                .display()
        )
    );
    assert_eq!(
        git(&wt.path, &["config", "core.hooksPath"]).trim(),
        "/dev/null"
    );
    assert!(fs::read_dir(wt.path.join(".git/hooks"))
        .unwrap()
        .next()
        .is_none());
    assert_eq!(git(&wt.path, &["fsck", "--no-dangling"]), "");
    untouched(&project);

    // Refusals: the same path, a bad name, an unknown commit.
    let error = worktree::create(&project, &root, "01-alice", &base).unwrap_err();
    assert!(matches!(error, WorktreeError::PathExists(_)), "{error:?}");
    let error = worktree::create(&project, &root, "../escape", &base).unwrap_err();
    assert!(matches!(error, WorktreeError::InvalidName(_)), "{error:?}");
    let error = worktree::create(&project, &root, "x", "0123456789abcdef").unwrap_err();
    assert!(
        matches!(error, WorktreeError::UnknownCommit { .. }),
        "{error:?}"
    );
    assert!(!root.join("x").exists());
    untouched(&project);
}

#[test]
fn worktrees_can_be_created_and_removed_in_parallel() {
    let (dir, project) = project();
    let base = head(&project);
    let root = dir.path().join("wt");
    let names: Vec<String> = (1..=6).map(|i| format!("{i:02}-contestant")).collect();
    std::thread::scope(|scope| {
        for name in &names {
            let (project, root, base) = (&project, &root, &base);
            scope.spawn(move || worktree::create(project, root, name, base).unwrap());
        }
    });
    let root = root.canonicalize().unwrap();
    for name in &names {
        let path = root.join(name);
        assert_eq!(head(&path), base);
        assert_eq!(git(&path, &["status", "--porcelain"]), "");
    }
    untouched(&project);
    std::thread::scope(|scope| {
        for name in &names {
            let (project, path) = (&project, root.join(name));
            scope.spawn(move || worktree::remove(project, &path, false).unwrap());
        }
    });
    assert_eq!(fs::read_dir(&root).unwrap().count(), 0);
    untouched(&project);
}

#[test]
fn two_worktrees_from_one_base_do_not_see_each_other() {
    let (dir, project) = project();
    let base = head(&project);
    let root = dir.path().join("wt");
    let a = worktree::create(&project, &root, "a", &base).unwrap();
    let b = worktree::create(&project, &root, "b", &base).unwrap();

    let mut lib_a = numbered("lib", 30);
    lib_a = lib_a.replace("lib line 10\n", "lib line 10, as A sees it\n");
    write(&a.path.join("src/lib.rs"), &lib_a);
    write(&a.path.join("src/only_a.rs"), "pub fn a() {}\n");

    let lib_b = numbered("lib", 30).replace("lib line 10\n", "lib line ten (B)\n");
    write(&b.path.join("src/lib.rs"), &lib_b);
    git(&b.path, &["commit", "-q", "-am", "B's change"]);

    assert!(!b.path.join("src/only_a.rs").exists());
    assert!(!a.path.join("src/only_b.rs").exists());

    let diff_a = diff_of(&a.path, &base).unwrap();
    let diff_b = diff_of(&b.path, &base).unwrap();

    assert!(diff_a.patch.contains("+lib line 10, as A sees it"));
    assert!(!diff_a.patch.contains("ten (B)"));
    assert!(diff_a.patch.contains("b/src/only_a.rs"));
    assert_eq!(
        diff_a.stats,
        DiffStats {
            files: 2,
            insertions: 2,
            deletions: 1
        }
    );

    assert!(diff_b.patch.contains("+lib line ten (B)"));
    assert!(!diff_b.patch.contains("as A sees it"));
    assert!(!diff_b.patch.contains("only_a"));
    assert_eq!(
        diff_b.stats,
        DiffStats {
            files: 1,
            insertions: 1,
            deletions: 1
        }
    );
    assert_eq!(diff_b.files[0].path, "src/lib.rs");
    assert_eq!(diff_b.files[0].status, ChangeStatus::Modified);

    // The project itself saw nothing, and B's commit is B's alone.
    assert_eq!(git(&project, &["status", "--porcelain"]), "");
    untouched(&project);
    let b_commit = head(&b.path);
    assert!(!git_try(&project, &["cat-file", "-e", &b_commit]).0);
    assert!(!git_try(&a.path, &["cat-file", "-e", &b_commit]).0);

    // Both patches apply to the base (each alone).
    for (i, patch) in [&diff_a.patch, &diff_b.patch].into_iter().enumerate() {
        let fresh = fresh_checkout(&project, &base, &dir.path().join(format!("check{i}")));
        let (ok, err) = git_apply(&fresh, patch, false);
        assert!(ok, "git apply --check refused patch {i}: {err}\n{patch}");
    }
}

#[test]
fn diff_shows_commits_edits_new_deleted_renamed_and_binary_files() {
    let (dir, project) = project();
    let base = head(&project);
    let wt = worktree::create(&project, &dir.path().join("wt"), "c", &base).unwrap();
    let w = &wt.path;

    // Committed inside the worktree: an edit and a new binary file.
    let util = numbered("util", 20).replace("util line 5\n", "util line five\n");
    write(&w.join("src/util.rs"), &util);
    write(&w.join("assets/logo.png"), binary_blob(7, 2000));
    git(w, &["add", "-A"]);
    git(w, &["commit", "-q", "-m", "contestant commit"]);

    // Uncommitted: an edit, a staged new file, an untracked new file.
    let lib = numbered("lib", 30).replace("lib line 3\n", "lib line 3 changed\nlib line 3b\n");
    write(&w.join("src/lib.rs"), &lib);
    write(&w.join("src/staged.rs"), "pub const STAGED: u8 = 1;\n");
    git(w, &["add", "src/staged.rs"]);
    write(&w.join("notes/new.md"), "one\ntwo\nthree\n");
    // Deleted, renamed (plain mv plus a small edit: untracked rename target),
    // a modified binary and a modified non-UTF-8 text file.
    fs::remove_file(w.join("doomed.txt")).unwrap();
    let moved = numbered("moving", 25).replace("moving line 25\n", "moving line 25!\n");
    fs::remove_file(w.join("old_name.txt")).unwrap();
    write(&w.join("docs/new_name.txt"), moved);
    let mut image = binary_blob(1, 3000);
    image[100..140].fill(0xAB);
    write(&w.join("image.bin"), &image);
    write(&w.join("latin1.txt"), b"caf\xe9\nna\xefve!\nend\n");
    // Ignored files never show.
    write(&w.join("target/debug/out"), "build output\n");
    write(&w.join("run.log"), "log\n");

    assert!(worktree::is_dirty(w).unwrap());
    let d = diff_of(w, &base).unwrap();
    let patch = &d.patch;

    let by_path = |p: &str| {
        d.files
            .iter()
            .find(|f| f.path == p)
            .unwrap_or_else(|| panic!("{p} missing from {:#?}", d.files))
            .clone()
    };
    assert_eq!(
        d.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
        [
            "assets/logo.png",
            "docs/new_name.txt",
            "doomed.txt",
            "image.bin",
            "latin1.txt",
            "notes/new.md",
            "src/lib.rs",
            "src/staged.rs",
            "src/util.rs",
        ]
    );
    let logo = by_path("assets/logo.png");
    assert_eq!((logo.status, logo.binary), (ChangeStatus::Added, true));
    let renamed = by_path("docs/new_name.txt");
    assert_eq!(renamed.status, ChangeStatus::Renamed);
    assert_eq!(renamed.old_path.as_deref(), Some("old_name.txt"));
    assert_eq!((renamed.insertions, renamed.deletions), (1, 1));
    assert_eq!(by_path("doomed.txt").status, ChangeStatus::Deleted);
    let image_change = by_path("image.bin");
    assert_eq!(
        (image_change.status, image_change.binary),
        (ChangeStatus::Modified, true)
    );
    assert!(
        by_path("latin1.txt").binary,
        "non-UTF-8 text goes as binary"
    );
    assert_eq!(by_path("notes/new.md").status, ChangeStatus::Added);
    assert_eq!(by_path("notes/new.md").insertions, 3);
    let lib_change = by_path("src/lib.rs");
    assert_eq!((lib_change.insertions, lib_change.deletions), (2, 1));
    assert_eq!(by_path("src/staged.rs").status, ChangeStatus::Added);
    assert_eq!(by_path("src/util.rs").status, ChangeStatus::Modified);

    // Stats: text lines only; binary files count as files.
    // new_name 1/1, doomed 0/1, latin1 (lines counted) 1/1, new.md 3/0,
    // lib 2/1, staged 1/0, util 1/1.
    assert_eq!(
        d.stats,
        DiffStats {
            files: 9,
            insertions: 9,
            deletions: 5
        }
    );

    for needle in [
        "diff --git a/assets/logo.png b/assets/logo.png",
        "GIT binary patch",
        "rename from old_name.txt",
        "rename to docs/new_name.txt",
        "deleted file mode 100644",
        "new file mode 100644",
        "+util line five",
        "+lib line 3 changed",
        "+pub const STAGED",
        "+three",
        "--- a/src/lib.rs",
        "+++ b/src/lib.rs",
    ] {
        assert!(patch.contains(needle), "{needle:?} missing from\n{patch}");
    }
    for absent in ["target/debug", "run.log", "build output"] {
        assert!(!patch.contains(absent), "{absent:?} in\n{patch}");
    }

    // git accepts it against the base, and applying it gives the worktree's files.
    let fresh = fresh_checkout(&project, &base, dir.path());
    let (ok, err) = git_apply(&fresh, patch, true);
    assert!(ok, "git apply refused the patch: {err}\n{patch}");
    for f in &d.files {
        let ours = fs::read(w.join(&f.path)).ok();
        let theirs = fs::read(fresh.join(&f.path)).ok();
        assert_eq!(ours, theirs, "{} differs after git apply", f.path);
    }
    assert!(!fresh.join("old_name.txt").exists());

    // And our own apply does the same on the project.
    let stats = written_stats(apply::apply(&project, patch, apply::Consent::Ask));
    assert_eq!(stats.files, 9);
    for f in &d.files {
        assert_eq!(
            fs::read(w.join(&f.path)).ok(),
            fs::read(project.join(&f.path)).ok(),
            "{} differs after diff::apply",
            f.path
        );
    }
}

#[test]
fn no_changes_is_an_empty_diff() {
    let (dir, project) = project();
    let base = head(&project);
    let wt = worktree::create(&project, &dir.path().join("wt"), "idle", &base).unwrap();
    write(&wt.path.join("target/x"), "ignored\n");
    let d = diff_of(&wt.path, &base).unwrap();
    assert_eq!(d.patch, "");
    assert!(d.files.is_empty());
    assert_eq!(d.stats, DiffStats::default());
    assert_eq!(
        written_stats(apply::apply(&project, &d.patch, apply::Consent::Ask)),
        DiffStats::default()
    );

    let error = diff_of(&wt.path, "no-such-commit").unwrap_err();
    assert!(
        matches!(error, DiffError::UnknownCommit { .. }),
        "{error:?}"
    );
    let error = diff_of(&dir.path().join("nowhere"), &base).unwrap_err();
    assert!(matches!(error, DiffError::NotARepository(_)), "{error:?}");
}

/// What an apply that wrote its patch counted.
fn written_stats(applied: Result<apply::Applied, DiffError>) -> DiffStats {
    match applied.unwrap() {
        apply::Applied::Written(changes) => changes.stats,
        held => panic!("held back: {held:?}"),
    }
}

/// A worktree's patch touching `src/lib.rs` and `src/util.rs`, and adding
/// `src/new.rs`.
fn contestant_patch(dir: &Path, project: &Path, base: &str) -> String {
    let wt = worktree::create(project, &dir.join("wt"), "p", base).unwrap();
    write(
        &wt.path.join("src/lib.rs"),
        numbered("lib", 30).replace("lib line 2\n", "lib line 2 (contestant)\n"),
    );
    write(
        &wt.path.join("src/util.rs"),
        numbered("util", 20).replace("util line 18\n", "util line 18 (contestant)\n"),
    );
    write(&wt.path.join("src/new.rs"), "pub fn new() {}\n");
    diff_of(&wt.path, base).unwrap().patch
}

fn snapshot(project: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    ["src/lib.rs", "src/util.rs", "src/new.rs", "README.md"]
        .into_iter()
        .map(|p| (p.to_string(), fs::read(project.join(p)).ok()))
        .collect()
}

#[test]
fn apply_refuses_a_dirty_project_and_changes_nothing() {
    let (dir, project) = project();
    let base = head(&project);
    let patch = contestant_patch(dir.path(), &project, &base);

    write(
        &project.join("README.md"),
        "# Project\n\nEdited by the user.\n",
    );
    write(&project.join("src/util.rs"), numbered("util", 21));
    let before = snapshot(&project);
    let error = apply::apply(&project, &patch, apply::Consent::Ask).unwrap_err();
    match &error {
        DiffError::Dirty { files, .. } => {
            assert!(
                files.contains("README.md") && files.contains("src/util.rs"),
                "{files}"
            )
        }
        other => panic!("expected Dirty, got {other:?}"),
    }
    assert!(error.to_string().contains("commit or stash"), "{error}");
    assert_eq!(snapshot(&project), before);

    // Staged-only changes count too.
    git(&project, &["checkout", "--", "src/util.rs", "README.md"]);
    write(&project.join("staged.txt"), "x\n");
    git(&project, &["add", "staged.txt"]);
    assert!(matches!(
        apply::apply(&project, &patch, apply::Consent::Ask),
        Err(DiffError::Dirty { .. })
    ));
    git(&project, &["rm", "-q", "--cached", "staged.txt"]);

    // An untracked file elsewhere (say, Arena's results folder) does not.
    assert!(project.join("staged.txt").exists());
    written_stats(apply::apply(&project, &patch, apply::Consent::Ask));
}

#[test]
fn apply_refuses_a_conflicting_patch_and_changes_nothing() {
    let (dir, project) = project();
    let base = head(&project);
    let patch = contestant_patch(dir.path(), &project, &base);

    // The user moved on: the same line of util.rs changed and was committed.
    write(
        &project.join("src/util.rs"),
        numbered("util", 20).replace("util line 18\n", "util line 18 (user)\n"),
    );
    git(&project, &["commit", "-q", "-am", "user change"]);
    let before = snapshot(&project);

    let error = apply::apply(&project, &patch, apply::Consent::Ask).unwrap_err();
    match &error {
        DiffError::Conflict { file, others, .. } => {
            assert_eq!(file, "src/util.rs");
            assert_eq!(others, "");
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("src/util.rs") && message.contains("Nothing was changed"),
        "{message}"
    );
    // lib.rs's part would have applied, but nothing was written.
    assert_eq!(snapshot(&project), before);
    assert_eq!(git(&project, &["status", "--porcelain"]), "");

    // A patch that creates a file that is already there is refused too.
    git(&project, &["reset", "-q", "--hard", &base]);
    write(&project.join("src/new.rs"), "mine\n");
    let before = snapshot(&project);
    let error = apply::apply(&project, &patch, apply::Consent::Ask).unwrap_err();
    assert!(matches!(error, DiffError::Exists { .. }), "{error:?}");
    assert_eq!(snapshot(&project), before);
}

#[test]
fn apply_applies_a_clean_patch() {
    let (dir, project) = project();
    let base = head(&project);
    let patch = contestant_patch(dir.path(), &project, &base);
    // An unrelated later commit does not get in the way.
    write(&project.join("README.md"), "# Project\n\nNewer readme.\n");
    git(&project, &["commit", "-q", "-am", "unrelated"]);

    let stats = written_stats(apply::apply(&project, &patch, apply::Consent::Ask));
    assert_eq!(
        stats,
        DiffStats {
            files: 3,
            insertions: 3,
            deletions: 2
        }
    );
    let lib = fs::read_to_string(project.join("src/lib.rs")).unwrap();
    assert!(lib.contains("lib line 2 (contestant)\n"));
    assert_eq!(
        fs::read_to_string(project.join("src/new.rs")).unwrap(),
        "pub fn new() {}\n"
    );
    // Working tree only, like `git apply`: the index is untouched.
    let status = git(&project, &["status", "--porcelain"]);
    assert!(status.contains(" M src/lib.rs"), "{status}");
    assert!(status.contains("?? src/new.rs"), "{status}");
}

#[test]
fn remove_keeps_uncommitted_work_unless_forced() {
    let (dir, project) = project();
    let base = head(&project);
    let root = dir.path().join("wt");
    let dirty = worktree::create(&project, &root, "dirty", &base).unwrap();
    let gone = worktree::create(&project, &root, "gone", &base).unwrap();
    let clean = worktree::create(&project, &root, "clean", &base).unwrap();
    write(&dirty.path.join("scratch.txt"), "untracked\n");
    fs::remove_dir_all(&gone.path).unwrap();

    let error = worktree::remove(&project, &dirty.path, false).unwrap_err();
    assert!(matches!(error, WorktreeError::Dirty { .. }), "{error:?}");
    assert!(error.to_string().contains("--force"), "{error}");
    assert!(dirty.path.join("scratch.txt").exists());
    worktree::remove(&project, &dirty.path, true).unwrap();
    assert!(!dirty.path.exists());
    // Gone already: fine.
    worktree::remove(&project, &gone.path, false).unwrap();
    worktree::remove(&project, &clean.path, false).unwrap();
    assert!(!clean.path.exists());

    // A repository that is not as Arena left it cannot tell what is
    // uncommitted: kept without force.
    let odd = worktree::create(&project, &root, "odd", &base).unwrap();
    fs::remove_dir_all(odd.path.join(".git")).unwrap();
    fs::write(odd.path.join(".git"), "gitdir: /somewhere/else\n").unwrap();
    assert!(worktree::is_dirty(&odd.path).unwrap());
    let error = worktree::remove(&project, &odd.path, false).unwrap_err();
    assert!(matches!(error, WorktreeError::Unknown(_)), "{error:?}");
    worktree::remove(&project, &odd.path, true).unwrap();
    assert!(!odd.path.exists());

    // The name can be used again.
    let again = worktree::create(&project, &root, "clean", &base).unwrap();
    assert_eq!(git(&again.path, &["status", "--porcelain"]), "");
    untouched(&project);
}

#[test]
fn a_worktree_of_the_old_layout_is_turned_into_a_repository_of_its_own() {
    let (dir, project) = project();
    let base = head(&project);
    // As Arena made them before: a linked worktree on an arena/ branch.
    let root = dir.path().join("wt");
    fs::create_dir_all(&root).unwrap();
    let old = root.canonicalize().unwrap().join("old");
    git(
        &project,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "arena/old",
            old.to_str().unwrap(),
        ],
    );
    write(&old.join("src/lib.rs"), "committed\n");
    git(&old, &["commit", "-q", "-am", "the agent's commit"]);
    write(&old.join("new.txt"), "uncommitted\n");

    assert_eq!(
        worktree::restore(&old, &project, &base).unwrap(),
        worktree::Restored::Rebuilt
    );
    // Its work is all there, as changes against the base.
    let d = diff_of(&old, &base).unwrap();
    let paths: Vec<_> = d.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["new.txt", "src/lib.rs"], "{}", d.patch);
    // And the project forgot it.
    untouched(&project);
    assert_eq!(
        git(&old, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "arena/old"
    );
    assert_eq!(
        worktree::restore(&old, &project, &base).unwrap(),
        worktree::Restored::Kept
    );
}

#[test]
fn odd_files_make_patches_git_accepts() {
    let (dir, project) = project();
    write(&project.join("run.sh"), "#!/bin/sh\necho hi\n");
    write(&project.join("empty_then_full.txt"), "");
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "more"]);
    let base = head(&project);
    let wt = worktree::create(&project, &dir.path().join("wt"), "odd", &base).unwrap();
    let w = &wt.path;

    write(&w.join("empty.txt"), "");
    write(&w.join("dir with spaces/file name.txt"), "spaced\n");
    write(&w.join("empty_then_full.txt"), "now full\n");
    write(&w.join("no_newline.txt"), "no newline at the end");
    write(&w.join("ünï cödé.txt"), "non-ASCII name\n");
    fs::remove_file(w.join("README.md")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(w.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", w.join("link.rs")).unwrap();
    }

    let d = diff_of(w, &base).unwrap();
    let paths: Vec<_> = d.files.iter().map(|f| f.path.as_str()).collect();
    for expected in [
        "README.md",
        "dir with spaces/file name.txt",
        "empty.txt",
        "empty_then_full.txt",
        "no_newline.txt",
        "ünï cödé.txt",
    ] {
        assert!(paths.contains(&expected), "{expected} missing: {paths:?}");
    }
    #[cfg(unix)]
    {
        assert!(
            paths.contains(&"run.sh") && paths.contains(&"link.rs"),
            "{paths:?}"
        );
        assert!(d.patch.contains("new mode 100755"), "{}", d.patch);
        assert!(d.patch.contains("new file mode 120000"), "{}", d.patch);
    }
    assert!(d.patch.contains("\\ No newline at end of file"));

    let fresh = fresh_checkout(&project, &base, dir.path());
    let (ok, err) = git_apply(&fresh, &d.patch, true);
    assert!(ok, "git apply refused: {err}\n{}", d.patch);
    for f in &d.files {
        let ours = fs::symlink_metadata(w.join(&f.path))
            .ok()
            .map(|m| m.file_type());
        let theirs = fs::symlink_metadata(fresh.join(&f.path))
            .ok()
            .map(|m| m.file_type());
        assert_eq!(ours, theirs, "{}", f.path);
        if ours.is_some_and(|t| t.is_file()) {
            assert_eq!(
                fs::read(w.join(&f.path)).unwrap(),
                fs::read(fresh.join(&f.path)).unwrap(),
                "{}",
                f.path
            );
        }
    }

    // Our own apply gives the same result in the project.
    written_stats(apply::apply(&project, &d.patch, apply::Consent::Ask));
    let (ok, err) = git_try(&project, &["diff", "--quiet", "--exit-code"]);
    assert!(!ok, "the project should now differ from HEAD: {err}");
    for f in &d.files {
        assert_eq!(
            fs::symlink_metadata(w.join(&f.path))
                .ok()
                .map(|m| m.file_type()),
            fs::symlink_metadata(project.join(&f.path))
                .ok()
                .map(|m| m.file_type()),
            "{}",
            f.path
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(project.join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "run.sh should be executable");
    }
}

/// `git diff --numstat -z` as path → (insertions, deletions); `None` for
/// a binary file.
fn numstat(
    project: &Path,
    args: &[&str],
) -> std::collections::BTreeMap<String, Option<(usize, usize)>> {
    let mut all = vec!["diff", "--numstat", "-z"];
    all.extend_from_slice(args);
    let out = git(project, &all);
    let mut fields = out.split('\0');
    let mut stats = std::collections::BTreeMap::new();
    while let Some(record) = fields.next().filter(|r| !r.is_empty()) {
        let mut parts = record.splitn(3, '\t');
        let (ins, del) = (parts.next().unwrap(), parts.next().unwrap());
        let path = match parts.next().unwrap() {
            // A rename: the old and new paths follow as fields of their own.
            "" => {
                fields.next();
                fields.next().unwrap().to_string()
            }
            path => path.to_string(),
        };
        let counts = ins.parse().ok().zip(del.parse().ok());
        stats.insert(path, counts);
    }
    stats
}

/// Every parsed line agrees with the files: context and deleted lines are
/// the old file's lines at their numbers, context and added lines the new
/// file's.
fn check_lines(patch: &arena_domain::patch::FilePatch, old: &str, new: &str) {
    use arena_domain::patch::LineKind;
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    for line in &patch.lines {
        if line.kind == LineKind::Hunk || line.text.starts_with('\\') {
            continue;
        }
        if let Some(n) = line.old_line {
            assert_eq!(
                old[n as usize - 1],
                line.text,
                "{}: old line {n}",
                patch.file.path
            );
        }
        if let Some(n) = line.new_line {
            assert_eq!(
                new[n as usize - 1],
                line.text,
                "{}: new line {n}",
                patch.file.path
            );
        }
    }
}

#[test]
fn the_patch_parser_reads_what_git_and_the_diff_layer_write() {
    use arena_domain::patch;

    let (_dir, project) = project();
    let base = head(&project);
    let old_lib = fs::read_to_string(project.join("src/lib.rs")).unwrap();
    let new_lib = old_lib
        .replace("lib line 2\n", "lib line two\n")
        .replace("lib line 20\n", "")
        + "lib line 31";
    write(&project.join("src/lib.rs"), &new_lib);
    write(&project.join("src/new file é.rs"), "fn main() {}\n");
    fs::remove_file(project.join("doomed.txt")).unwrap();
    let moved = numbered("moving", 25).replace("moving line 3\n", "moving line III\n");
    fs::remove_file(project.join("old_name.txt")).unwrap();
    write(&project.join("docs/new_name.txt"), &moved);
    write(&project.join("image.bin"), binary_blob(2, 3000));
    write(&project.join("logo.png"), binary_blob(3, 500));

    // The diff layer's patch (what a contestant's diff.patch holds).
    let ours = diff_of(&project, &base).unwrap();
    // git's own, from the index.
    git(&project, &["add", "-A"]);
    let theirs = git(&project, &["diff", "--cached", "--binary", "-M", &base]);
    let expected = numstat(&project, &["--cached", "-M", &base]);

    for (source, text) in [("diff layer", &ours.patch), ("git", &theirs)] {
        let files = patch::parse(text);
        let got: std::collections::BTreeMap<String, Option<(usize, usize)>> = files
            .iter()
            .map(|f| {
                let counts = (!f.file.binary).then_some((f.file.insertions, f.file.deletions));
                (f.file.path.clone(), counts)
            })
            .collect();
        assert_eq!(
            got, expected,
            "{source}: files and counts as git counts them"
        );

        let by_path = |p: &str| files.iter().find(|f| f.file.path == p).unwrap();
        let lib = by_path("src/lib.rs");
        assert_eq!(lib.file.status, ChangeStatus::Modified);
        check_lines(lib, &old_lib, &new_lib);
        assert!(
            lib.lines
                .iter()
                .any(|l| l.text == "\\ No newline at end of file"),
            "{source}: the last line has no newline"
        );
        assert_eq!(
            by_path("src/new file é.rs").file.status,
            ChangeStatus::Added
        );
        assert_eq!(by_path("doomed.txt").file.status, ChangeStatus::Deleted);
        let renamed = by_path("docs/new_name.txt");
        assert_eq!(renamed.file.status, ChangeStatus::Renamed, "{source}");
        assert_eq!(renamed.file.old_path.as_deref(), Some("old_name.txt"));
        check_lines(renamed, &numbered("moving", 25), &moved);
        for binary in ["image.bin", "logo.png"] {
            let f = by_path(binary);
            assert!(f.file.binary && f.lines.is_empty(), "{source}: {binary}");
        }
        assert_eq!(by_path("logo.png").file.status, ChangeStatus::Added);
    }
}
