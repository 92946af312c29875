//! The project's environment in the jail, attacked (issue 38): an agent (a
//! `[[backend]]` script) and its check see the project's ignored folders
//! (`node_modules`, a virtualenv, …) copy-on-write, a cargo home at your
//! cargo home's place, the toolchains' caches, and links at the project's
//! path into their own tree. Each of those is a new way in; each is tried:
//! writing through every one of them, deleting them, replacing their
//! places by links between rounds, and reading what lies beside them.
//! The user's folders must come out byte for byte as they went in.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arena_core::battle::ContestantStatus;
use arena_core::config::CustomBackend;
use arena_core::Battle;
use arena_testserver::ModelScript;
use common::*;

/// A cargo home of the test's, with a token beside the downloaded crates:
/// `CARGO_HOME` for every test of this file (set once, before any engine
/// of theirs starts).
fn cargo_home() -> &'static Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in [
            (
                "credentials.toml",
                "[registry]\ntoken = \"SECRET-cargo-token\"\n",
            ),
            ("config.toml", "[net]\noffline = true\n"),
            ("registry/index/marker", "the index\n"),
        ] {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        // SAFETY: set once, while every other test of this file waits on
        // this lock before it starts anything.
        unsafe { std::env::set_var("CARGO_HOME", dir.path()) };
        dir
    })
    .path()
}

fn ready() -> bool {
    cargo_home();
    let jail = arena_core::agent::jail::jail_info();
    let cow = arena_core::agent::environment::copy_on_write();
    match (jail, cow) {
        (Ok(_), Ok(_)) => true,
        (jail, cow) => {
            // CI has bubblewrap and a kernel that mounts overlays.
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail or no overlays: {jail:?} {cow:?}"
            );
            eprintln!("skipped: {jail:?} {cow:?}");
            false
        }
    }
}

fn configure(h: &mut Harness, script: &str) {
    let command = vec![
        "bash".into(),
        "-c".into(),
        script.to_string(),
        "agent".into(),
        "{prompt}".into(),
    ];
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command,
        }];
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
}

/// Every file, folder and link under `root`: its path, kind, mode and
/// content (a link's target), to compare before and after.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let mode = meta.permissions().mode();
            let what = if meta.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                stack.push(path);
                format!("dir {mode:o}")
            } else {
                let bytes = std::fs::read(&path).unwrap();
                format!("file {mode:o} {}", String::from_utf8_lossy(&bytes))
            };
            out.insert(rel, what);
        }
    }
    out
}

/// A project whose ignored `node_modules` holds a package and whose
/// `.venv` (found by its `pyvenv.cfg`) holds a module, both ignored.
fn project() -> tempfile::TempDir {
    let dir = repo();
    let root = dir.path();
    for (rel, text) in [
        ("package.json", "{\"name\": \"p\"}\n"),
        ("node_modules/dep/index.js", "module.exports = 41;\n"),
        (".venv/pyvenv.cfg", "home = /usr/bin\n"),
        (".venv/lib/site.py", "VALUE = 1\n"),
        (".gitignore", "node_modules/\n.venv/\nArena/\n"),
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(root, &["add", "package.json", ".gitignore"]);
    git(
        root,
        &["commit", "-q", "-m", "a project with its environment"],
    );
    dir
}

fn check_output(b: &Battle, i: usize) -> String {
    let c = &b.contestants[i];
    assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
    let check = c.check.clone().expect("a check");
    assert!(check.passed, "{check:?}");
    check.output_tail
}

/// One contestant writes, deletes and corrupts through the environment
/// (and through the project's own path); the other only reads. The
/// writer's agent sees its own writes; its check, the other contestant and
/// the user see the environment as the user left it.
#[tokio::test]
async fn writes_through_the_environment_land_in_the_contestants_own_layer() {
    if !ready() {
        return;
    }
    let mut h = Harness::new().await;
    let project = project();
    let root = project.path().to_path_buf();
    let before = snapshot(&root);
    let p = root.display();
    let attack = format!(
        "echo 'module.exports = 0;' > node_modules/dep/index.js; \
         echo planted > node_modules/planted.js; \
         rm -rf .venv/lib; echo garbage > .venv/pyvenv.cfg; \
         echo through-the-path > {p}/node_modules/dep/extra.js; \
         echo rewritten > {p}/package.json; \
         echo new > {p}/new-top-level-file 2>/dev/null; \
         rm -rf node_modules 2>/dev/null; \
         ls node_modules > seen.txt 2>&1; cat package.json >> seen.txt"
    );
    let script = format!(
        "case \"$PWD\" in *m1*) {attack} ;; *) cat node_modules/dep/index.js > seen.txt ;; esac; echo done"
    );
    configure(&mut h, &script);
    let check = "cat node_modules/dep/index.js .venv/pyvenv.cfg .venv/lib/site.py; \
                 test ! -e node_modules/planted.js && echo pristine";
    let b = run_coding(&h, &root, &["fake@m1", "fake@m2"], Some(check)).await;

    // The user's folders and files: as they were, nothing new beside them.
    assert_eq!(
        snapshot(&root)
            .into_iter()
            .filter(|(p, _)| !p.starts_with("Arena"))
            .collect::<BTreeMap<_, _>>(),
        before
    );
    // The writer saw its own layer, and its writes through the project's
    // path landed in its own tree.
    let wt = b.contestants[0].worktree.clone().expect("a worktree");
    let seen = std::fs::read_to_string(wt.join("seen.txt")).unwrap();
    assert!(seen.contains("rewritten"), "{seen}");
    assert!(!wt.join("new-top-level-file").exists());
    // Its check ran on the environment as the user left it.
    for i in 0..2 {
        let out = check_output(&b, i);
        assert!(out.contains("module.exports = 41;"), "{out}");
        assert!(
            out.contains("home = /usr/bin") && out.contains("VALUE = 1"),
            "{out}"
        );
        assert!(out.contains("pristine"), "{out}");
    }
    // The other contestant's agent saw the user's package, not the writer's.
    let other = b.contestants[1].worktree.clone().expect("a worktree");
    let seen = std::fs::read_to_string(other.join("seen.txt")).unwrap();
    assert_eq!(seen.trim(), "module.exports = 41;");
    // Each names the environment it had.
    for c in &b.contestants {
        let env = c
            .diff
            .as_ref()
            .and_then(|d| d.environment.clone())
            .unwrap_or_default();
        assert!(
            env.starts_with("current tree: node_modules, .venv (")
                && env.ends_with("copy-on-write"),
            "{env}"
        );
    }
}

/// A check works at the project's own path (what a build recorded there,
/// such as rustc's incremental cache, holds): it sees its own tree there,
/// git finds the base there, and what it writes or removes there lands in
/// its own throw-away layer, never in your project or another's check.
#[tokio::test]
async fn a_check_at_the_projects_own_path_writes_only_its_own_tree() {
    if !ready() {
        return;
    }
    let mut h = Harness::new().await;
    let project = project();
    let root = project.path().to_path_buf();
    let head = String::from_utf8(
        std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&root)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let before = snapshot(&root);
    configure(&mut h, "echo changed >> package.json; echo done");
    let check = "echo \"at $PWD\"; git rev-parse HEAD; cat package.json; \
                 test -e mark && echo 'another check was here'; \
                 echo x > mark; echo overwritten > package.json; rm -rf node_modules .venv; \
                 echo 'module.exports = 0;' > .gitignore; echo checked";
    let b = run_coding(&h, &root, &["fake@m1", "fake@m2"], Some(check)).await;
    assert_eq!(
        snapshot(&root)
            .into_iter()
            .filter(|(p, _)| !p.starts_with("Arena"))
            .collect::<BTreeMap<_, _>>(),
        before
    );
    for i in 0..2 {
        let out = check_output(&b, i);
        assert!(out.contains(&format!("at {}", root.display())), "{out}");
        assert!(out.contains(head.trim()), "{out}");
        assert!(out.contains("changed"), "the change was applied: {out}");
        assert!(!out.contains("another check was here"), "{out}");
        assert!(out.contains("checked"), "{out}");
    }
}

/// Between rounds, the agent's tree is Arena's to read and mount into: a
/// place of the environment the agent made a link (to a folder of the
/// user's) is left out of the next round, never mounted through.
#[tokio::test]
async fn a_place_turned_into_a_link_between_rounds_is_left_out() {
    if !ready() {
        return;
    }
    let mut h = Harness::new().await;
    let project = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep.txt"), "the user's\n").unwrap();
    let before = snapshot(outside.path());
    // Round 1 cannot make the link (the place is a mount point in its
    // jail); what it leaves is the empty place. Replace it from outside,
    // as a daemon would have, and run round 2 over it.
    configure(&mut h, "ls node_modules > round.txt; echo done");
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], None).await;
    let wt = b.contestants[0].worktree.clone().expect("a worktree");
    assert_eq!(
        std::fs::read_to_string(wt.join("round.txt"))
            .unwrap()
            .trim(),
        "dep"
    );
    std::fs::remove_dir(wt.join("node_modules")).unwrap();
    std::os::unix::fs::symlink(outside.path(), wt.join("node_modules")).unwrap();
    configure(
        &mut h,
        "ls node_modules/ > round.txt 2>&1; echo planted > node_modules/planted 2>/dev/null; echo done",
    );
    h.engine
        .refine(&b.id, &b.contestants[0].id, "again")
        .await
        .expect("refine");
    let seen = std::fs::read_to_string(wt.join("round.txt")).unwrap();
    assert!(
        !seen.contains("dep"),
        "the environment was mounted through a link: {seen}"
    );
    assert_eq!(snapshot(outside.path()), before);
}

/// The cargo home a jail sees at your cargo home's place holds your
/// downloaded crates and configuration, never `credentials.toml`; what a
/// build writes there stays in the jail's own layer.
#[tokio::test]
async fn the_cargo_home_at_its_place_has_no_token_and_keeps_nothing() {
    if !ready() {
        return;
    }
    let cargo = cargo_home().to_path_buf();
    let mut h = Harness::new().await;
    let project = project();
    let before: Vec<String> = std::fs::read_dir(&cargo)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let c = cargo.display();
    configure(
        &mut h,
        &format!(
            "ls -a {c} > cargo.txt; cat {c}/credentials.toml {c}/credentials >> cargo.txt 2>&1; \
             echo planted > {c}/planted-by-agent 2>>cargo.txt; echo planted > {c}/registry/planted-by-agent 2>>cargo.txt; echo done"
        ),
    );
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], Some("true")).await;
    let wt = b.contestants[0].worktree.clone().expect("a worktree");
    let seen = std::fs::read_to_string(wt.join("cargo.txt")).unwrap();
    assert!(
        seen.contains("config.toml") && seen.contains("registry"),
        "{seen}"
    );
    assert!(
        !seen.lines().any(|l| l == "credentials.toml") && !seen.contains("SECRET"),
        "{seen}"
    );
    let after: Vec<String> = std::fs::read_dir(&cargo)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(after, before);
    assert!(!cargo.join("registry/planted-by-agent").exists());
}
