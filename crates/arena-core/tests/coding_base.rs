//! A Coding battle from "my working tree as it is" (issue 42, item 3): a
//! snapshot of the tracked and untracked-but-not-ignored files made as a
//! commit in Arena's own repository. The user's `.git` is hashed before
//! and after: no object, ref or index is written there. A link pointing
//! out of the project is kept as a link, an ignored file and a nested
//! `.git` pointer stay out, a file past the jail's file bound refuses the
//! snapshot. Applying its result works while the tree is still the
//! snapshot and is refused once it changed. The launcher's query lists
//! HEAD and the uncommitted files, bounded.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use arena_core::agent::apply::Consent;
use arena_core::battle::{BattleRequest, BattleType, ContestantSpec};
use arena_core::check_outcome::CheckOutcome;
use arena_core::coding_base::{base_of, BaseChoice, UncommittedKind};
use arena_core::config::CustomBackend;
use arena_testserver::ModelScript;
use common::*;

/// The agent writes what it saw into `seen.txt` (part of its change).
const SCRIPT: &str = "set -e\n{ cat README.md; echo ---; ls -a | sort; echo ---; \
     if [ -L out ]; then echo \"link to $(readlink out)\"; fi; } > seen.txt\necho done\n";

/// The check: the snapshot's files are there, the deleted one is not.
const CHECK: &str = "test -f new.txt && ! test -e src/lib.rs && grep -q edited README.md";

fn configure(h: &mut Harness) {
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command: vec![
                "bash".into(),
                "-c".into(),
                SCRIPT.into(),
                "agent".into(),
                "{prompt}".into(),
            ],
        }];
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
}

/// Every file under `dir` (links as their targets), by path: what the
/// user's `.git` holds. `info/exclude` is left out: creating any battle
/// adds `/Arena/` there (checked apart).
fn hash_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            let t = e.file_type().expect("type");
            if t.is_dir() {
                stack.push(p);
            } else if t.is_symlink() {
                out.insert(
                    rel,
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                );
            } else if rel != "info/exclude" {
                out.insert(rel, std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// A project with uncommitted work of every kind.
fn dirty_project() -> tempfile::TempDir {
    let project = repo();
    let root = project.path();
    std::fs::write(root.join("README.md"), "# Demo\n\nedited, not committed\n").unwrap();
    std::fs::write(root.join("new.txt"), "untracked\n").unwrap();
    std::fs::remove_file(root.join("src/lib.rs")).unwrap();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(root.join("secret.log"), "ignored\n").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("out")).unwrap();
    std::fs::create_dir(root.join("nested")).unwrap();
    std::fs::write(root.join("nested/.git"), "gitdir: /nowhere/.git\n").unwrap();
    std::fs::write(root.join("nested/x.txt"), "x\n").unwrap();
    // New files that hold secrets, never ignored by the user.
    std::fs::write(root.join(".env"), "API_KEY=sk-the-users-own\n").unwrap();
    std::fs::write(root.join("config/.npmrc"), "//registry/:_authToken=t0k3n\n")
        .or_else(|_| {
            std::fs::create_dir(root.join("config"))?;
            std::fs::write(root.join("config/.npmrc"), "//registry/:_authToken=t0k3n\n")
        })
        .unwrap();
    std::fs::write(
        root.join("deploy.pem"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    std::fs::write(root.join("cacert.pem"), "-----BEGIN CERTIFICATE-----\n").unwrap();
    project
}

fn request(project: &Path) -> BattleRequest {
    BattleRequest {
        battle_type: BattleType::Coding,
        project: project.to_path_buf(),
        prompt: "Say what you see.".into(),
        contestants: ["fake@m1", "fake@m2"]
            .iter()
            .map(|c| ContestantSpec::parse(c).unwrap())
            .collect(),
        check_command: Some(CHECK.into()),
        blind: false,
        tags: Vec::new(),
    }
}

async fn run_from_working_tree(h: &Harness, project: &Path) -> arena_core::Battle {
    let battle = h
        .engine
        .create_battle_from_working_tree(request(project))
        .await
        .expect("create from the working tree");
    tokio::time::timeout(
        std::time::Duration::from_secs(120),
        h.engine.run_battle(&battle.id),
    )
    .await
    .expect("the battle ends")
    .expect("run")
}

fn seen(b: &arena_core::Battle, i: usize) -> String {
    let wt = b.contestants[i].worktree.clone().expect("a worktree");
    std::fs::read_to_string(wt.join("seen.txt")).expect("seen.txt")
}

#[tokio::test]
async fn a_battle_from_the_working_tree_takes_uncommitted_work_and_leaves_the_repository_untouched()
{
    let mut h = Harness::new().await;
    configure(&mut h);
    let project = dirty_project();
    let root = project.path();
    let head = git2::Repository::open(root)
        .unwrap()
        .head()
        .unwrap()
        .peel_to_commit()
        .unwrap()
        .id();
    let before = hash_tree(&root.join(".git"));

    let b = run_from_working_tree(&h, root).await;
    assert_eq!(base_of(&b), Some(BaseChoice::WorkingTree));
    assert_eq!(
        hash_tree(&root.join(".git")),
        before,
        "the user's .git changed"
    );
    let exclude = std::fs::read_to_string(root.join(".git/info/exclude")).unwrap_or_default();
    assert!(
        exclude
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .all(|l| l == "/Arena/"),
        "{exclude}"
    );

    // The snapshot: its parent is HEAD, it lives in Arena's data folder.
    let source = b.source.clone().expect("a snapshot repository");
    assert!(source.starts_with(h.data.path()), "{}", source.display());
    let snap = git2::Repository::open_bare(&source).expect("the snapshot");
    let commit = snap
        .find_commit(git2::Oid::from_str(b.base_commit.as_deref().unwrap()).unwrap())
        .expect("the snapshot commit");
    assert_eq!(commit.parent_id(0).unwrap(), head);
    let tree = commit.tree().unwrap();
    let link = tree.get_name("out").expect("the link is kept");
    assert_eq!(link.filemode(), 0o120000, "stored as a link");
    assert_eq!(snap.find_blob(link.id()).unwrap().content(), b"/etc/passwd");
    assert!(
        tree.get_name("secret.log").is_none(),
        "an ignored file was taken"
    );
    assert!(tree.get_name(".gitignore").is_some());
    assert!(
        tree.get_path(Path::new("nested/.git")).is_err(),
        "a .git pointer was taken"
    );
    assert!(
        tree.get_path(Path::new("src/lib.rs")).is_err(),
        "a deleted file came back"
    );
    // Secrets stay out of every agent's tree; a certificate is no secret.
    for secret in [".env", "config/.npmrc", "deploy.pem"] {
        assert!(
            tree.get_path(Path::new(secret)).is_err(),
            "{secret} was taken into the snapshot"
        );
    }
    assert!(tree.get_name("cacert.pem").is_some());

    // What the agent saw and what the check found.
    let saw = seen(&b, 0);
    assert!(saw.contains("edited, not committed"), "{saw}");
    assert!(
        saw.contains("new.txt") && !saw.contains("secret.log"),
        "{saw}"
    );
    assert!(saw.contains("link to /etc/passwd"), "{saw}");
    for c in &b.contestants {
        assert_eq!(
            CheckOutcome::of(c.check.as_ref()),
            CheckOutcome::Passed,
            "{:?}",
            c.check
        );
    }

    // Its change applies over the uncommitted work, which is still there.
    let (_, applied) = h
        .engine
        .apply(&b.id, Some(&b.contestants[0].id), Consent::Given)
        .await
        .expect("apply over the snapshot");
    assert!(applied.is_written());
    assert!(root.join("seen.txt").is_file());
    assert_eq!(
        std::fs::read_to_string(root.join("README.md")).unwrap(),
        "# Demo\n\nedited, not committed\n"
    );
    assert_eq!(
        std::fs::read_link(root.join("out")).unwrap(),
        Path::new("/etc/passwd")
    );
}

#[tokio::test]
async fn apply_is_refused_once_the_tree_changed_since_the_snapshot() {
    let mut h = Harness::new().await;
    configure(&mut h);
    let project = dirty_project();
    let root = project.path();
    let b = run_from_working_tree(&h, root).await;
    std::fs::write(root.join("new.txt"), "changed after the snapshot\n").unwrap();
    let err = h
        .engine
        .apply(&b.id, Some(&b.contestants[0].id), Consent::Given)
        .await
        .expect_err("apply over a changed tree");
    let text = err.to_string();
    assert!(text.contains("working tree has changed since"), "{text}");
    assert!(!root.join("seen.txt").exists(), "something was written");
}

#[tokio::test]
async fn a_file_past_the_jails_bound_refuses_the_snapshot_naming_it() {
    let mut h = Harness::new().await;
    configure(&mut h);
    h.reconfigure(|config| config.limits.max_file_bytes = 4096);
    let project = repo();
    std::fs::write(project.path().join("huge.bin"), vec![7u8; 10_000]).unwrap();
    let err = h
        .engine
        .create_battle_from_working_tree(request(project.path()))
        .await
        .expect_err("a file past the bound");
    let text = err.to_string();
    assert!(
        text.contains("huge.bin") && text.contains("max_file_bytes"),
        "{text}"
    );
}

#[tokio::test]
async fn the_launchers_base_lists_head_and_the_uncommitted_files_bounded() {
    let h = Harness::new().await;
    let project = dirty_project();
    let root = project.path();
    let before = hash_tree(&root.join(".git"));
    let base = h.engine.coding_base(root).await.expect("the base");
    assert_eq!(base.subject, "initial");
    assert_eq!(base.branch.as_deref(), Some("main"));
    assert_eq!(base.short_commit, base.commit[..8]);
    let kind = |p: &str| {
        base.uncommitted
            .iter()
            .find(|f| f.path == p)
            .map(|f| f.kind)
    };
    assert_eq!(kind("README.md"), Some(UncommittedKind::Modified));
    assert_eq!(kind("new.txt"), Some(UncommittedKind::Untracked));
    assert_eq!(kind("src/lib.rs"), Some(UncommittedKind::Deleted));
    assert_eq!(kind("out"), Some(UncommittedKind::Untracked));
    assert_eq!(kind("secret.log"), None);

    for i in 0..250 {
        std::fs::write(root.join(format!("many-{i:03}.txt")), "x").unwrap();
    }
    let base = h.engine.coding_base(root).await.expect("the base");
    assert_eq!(base.uncommitted.len(), 200);
    assert!(base.uncommitted_count > 250, "{}", base.uncommitted_count);
    assert_eq!(
        hash_tree(&root.join(".git")),
        before,
        "the query wrote into .git"
    );
}

/// Attack: a tracked folder replaced by a link out of the project. The
/// snapshot keeps the link as a link and reads nothing through it.
#[tokio::test]
async fn a_folder_turned_into_a_link_out_of_the_project_is_kept_as_a_link() {
    let mut h = Harness::new().await;
    configure(&mut h);
    let project = repo();
    let root = project.path();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("lib.rs"), "stolen\n").unwrap();
    std::fs::write(outside.path().join("secret.txt"), "stolen\n").unwrap();
    std::fs::remove_dir_all(root.join("src")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("src")).unwrap();
    let before = hash_tree(&root.join(".git"));

    let b = h
        .engine
        .create_battle_from_working_tree(request(root))
        .await
        .expect("create from the working tree");
    let snap = git2::Repository::open_bare(b.source.as_ref().unwrap()).unwrap();
    let tree = snap
        .find_commit(git2::Oid::from_str(b.base_commit.as_deref().unwrap()).unwrap())
        .unwrap()
        .tree()
        .unwrap();
    let src = tree.get_name("src").expect("src");
    assert_eq!(
        src.filemode(),
        0o120000,
        "src is not a link in the snapshot"
    );
    assert_eq!(
        snap.find_blob(src.id()).unwrap().content(),
        outside.path().as_os_str().as_encoded_bytes()
    );
    let mut all = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
        all.push(format!("{dir}{}", e.name().unwrap_or("")));
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    assert!(!all.iter().any(|p| p.contains("secret.txt")), "{all:?}");
    for e in tree.iter() {
        if let Ok(blob) = snap.find_blob(e.id()) {
            assert_ne!(blob.content(), b"stolen\n", "{:?}", e.name());
        }
    }
    assert_eq!(hash_tree(&root.join(".git")), before);
}

/// A project that is a linked worktree (its `.git` a file pointing into
/// the main repository's `.git/worktrees/`): the snapshot reads its
/// objects through the common folder and writes nothing there.
#[tokio::test]
async fn a_linked_worktree_project_snapshots_without_writing_into_the_main_repository() {
    let mut h = Harness::new().await;
    configure(&mut h);
    let main = repo();
    let parent = tempfile::tempdir().unwrap();
    let linked = parent.path().join("linked");
    git(
        main.path(),
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ],
    );
    assert!(linked.join(".git").is_file());
    std::fs::write(linked.join("new.txt"), "in the linked worktree\n").unwrap();
    let before = hash_tree(&main.path().join(".git"));

    let b = h
        .engine
        .create_battle_from_working_tree(request(&linked))
        .await
        .expect("create from a linked worktree");
    let snap = git2::Repository::open_bare(b.source.as_ref().unwrap()).unwrap();
    let tree = snap
        .find_commit(git2::Oid::from_str(b.base_commit.as_deref().unwrap()).unwrap())
        .unwrap()
        .tree()
        .unwrap();
    let new = tree.get_name("new.txt").expect("the untracked file");
    assert_eq!(
        snap.find_blob(new.id()).unwrap().content(),
        b"in the linked worktree\n"
    );
    assert!(tree.get_name("README.md").is_some());
    assert_eq!(hash_tree(&main.path().join(".git")), before);

    // The same tree again is the same snapshot, its repository reused.
    let again = h
        .engine
        .create_battle_from_working_tree(request(&linked))
        .await
        .expect("again");
    assert_eq!(again.base_commit, b.base_commit);
    assert_eq!(again.source, b.source);
}

/// Snapshots do not pile up: `worktrees prune` removes a snapshot once
/// every battle started from it is over and has no worktree left, keeps one
/// a battle still has worktrees of (or one just made), and applying a
/// change whose snapshot was pruned is refused saying why.
#[tokio::test]
async fn a_snapshot_is_pruned_with_the_last_worktree_that_needs_it() {
    let mut h = Harness::new().await;
    configure(&mut h);
    let project = dirty_project();
    let b = run_from_working_tree(&h, project.path()).await;
    let snapshot = b
        .source
        .clone()
        .expect("the snapshot is the battle's source");
    assert!(snapshot.is_dir());
    // Made long ago, as far as the prune can tell.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::open(&snapshot)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // Its worktrees are still there (one with work not kept): kept.
    let first = b.contestants[0].worktree.clone().unwrap();
    std::fs::write(first.join("unkept.txt"), "edited after the battle\n").unwrap();
    let (removed, _) = h.engine.prune_worktrees(false).await.unwrap();
    assert!(!removed.contains(&snapshot), "{removed:?}");
    assert!(snapshot.is_dir(), "a worktree still borrows its objects");
    // Every worktree gone: the snapshot goes too.
    let (removed, kept) = h.engine.prune_worktrees(true).await.unwrap();
    assert!(removed.contains(&snapshot), "{removed:?} {kept:?}");
    assert!(!snapshot.exists());
    let err = h
        .engine
        .apply(&b.id, Some(&b.contestants[1].id), Consent::Given)
        .await
        .expect_err("apply without its snapshot");
    assert!(err.to_string().contains("was pruned"), "{err}");
    assert!(
        !project.path().join("seen.txt").exists(),
        "something was written"
    );

    // A snapshot made moments ago is left alone even with nothing using it.
    let fresh = run_from_working_tree(&h, project.path()).await;
    let (_, _) = h.engine.prune_worktrees(true).await.unwrap();
    assert!(fresh.source.clone().unwrap().is_dir());
}
