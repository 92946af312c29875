//! `arena env list` and `arena env prune` through the real binary, over an
//! environment the engine really prepared (in its jail) for an older base
//! of a real git repository.

mod common;

use std::os::fd::AsRawFd;
use std::path::Path;

use arena_core::{Engine, EngineOptions, EnvChoice};
use common::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn jail_ready() -> bool {
    match arena_core::agent::jail::jail_info() {
        Ok(_) => true,
        Err(why) => {
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail: {why}"
            );
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// A repository whose first commit has one package-lock.json and whose
/// HEAD another; the first commit's id.
fn project_with_an_older_base(dir: &Path) -> String {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.email", "arena@example.invalid"]);
    git(dir, &["config", "user.name", "Arena Test"]);
    std::fs::write(dir.join(".gitignore"), "node_modules/\n").unwrap();
    std::fs::write(dir.join("package.json"), r#"{ "name": "demo" }"#).unwrap();
    std::fs::write(dir.join("package-lock.json"), r#"{ "lockfileVersion": 3 }"#).unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "one"]);
    let base = git(dir, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(
        dir.join("package-lock.json"),
        r#"{ "lockfileVersion": 3, "requires": true }"#,
    )
    .unwrap();
    git(dir, &["commit", "-q", "-am", "two"]);
    base
}

#[tokio::test]
async fn env_list_shows_a_prepared_environment_and_prune_removes_it_unless_in_use() {
    if !jail_ready() {
        return;
    }
    let setup = Setup::new().await;
    let project = setup.project();
    std::fs::remove_dir_all(project.join(".git")).unwrap();
    let base = project_with_an_older_base(&project);

    // Nothing kept yet.
    let out = setup.arena(&["env", "list"]).await;
    assert_eq!(stdout(&out).trim(), "No prepared environments.");
    assert_eq!(
        setup.json(&["env", "list", "--json"]).await,
        Value::Array(vec![])
    );

    // The engine prepares the base's environment (a real run in its jail).
    let mut config = arena_core::config::Config::default();
    config.coding.prepare = Some(
        "mkdir -p node_modules/demo && head -c 50000 /dev/zero > node_modules/demo/blob".into(),
    );
    let engine = Engine::open(EngineOptions::local(setup.dir.path().join("data"), config)).unwrap();
    let choice = engine
        .environment_for(&project, &base, &CancellationToken::new())
        .await
        .unwrap();
    let EnvChoice::Prepared { key, root, .. } = &choice else {
        panic!("not prepared: {choice:?}");
    };
    let (key, root) = (key.clone(), root.clone());
    assert!(root.join("node_modules/demo/blob").is_file());

    // Listed, with its project, base, command, size and state; in use
    // while the engine's choice holds it.
    let list = setup.json(&["env", "list", "--json"]).await;
    let row = &list[0];
    assert_eq!(row["key"], key.as_str());
    assert_eq!(row["state"], "in use");
    assert_eq!(row["base"], base.as_str());
    assert_eq!(row["project"], project.display().to_string().as_str());
    assert!(row["command"]
        .as_str()
        .unwrap()
        .contains("node_modules/demo"));
    assert!(row["size_bytes"].as_u64().unwrap() >= 50_000, "{row}");
    assert!(row["created"].as_str().is_some());
    let text = stdout(&setup.arena(&["env", "list"]).await);
    assert!(
        text.contains(key.as_str()) && text.contains("in use"),
        "{text}"
    );
    assert!(text.contains("KiB"), "{text}");

    // In use: prune keeps it and says why.
    let out = setup.arena(&["env", "prune", &key[..6]]).await;
    let text = stdout(&out);
    assert!(
        text.contains("kept") && text.contains("a battle is using it"),
        "{text}"
    );
    assert!(root.exists());
    drop(choice);

    // Held by another process's lock (a battle there): kept as well.
    let lock_path = setup
        .dir
        .path()
        .join("data/environments/.locks")
        .join(format!("{key}.lock"));
    let lock = std::fs::File::open(&lock_path).unwrap();
    // SAFETY: flock on a file this test owns.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_SH) }, 0);
    let pruned = setup.json(&["env", "prune", "--all", "--json"]).await;
    assert_eq!(pruned[0]["removed"], false, "{pruned}");
    assert!(root.exists());
    drop(lock);

    // Let go: removed, with its size.
    let text = stdout(&setup.arena(&["env", "prune", &key]).await);
    assert!(text.contains(&format!("removed {key}")), "{text}");
    assert!(text.contains("KiB") && text.contains("freed"), "{text}");
    assert!(!root.exists());
    let out = setup.arena(&["env", "list"]).await;
    assert_eq!(stdout(&out).trim(), "No prepared environments.");

    // Unknown keys and a prune with nothing named are the user's to fix.
    let out = setup.arena(&["env", "prune", "0123456789abcdef"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = setup.arena(&["env", "prune"]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
