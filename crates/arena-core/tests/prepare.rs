//! An environment for a base that is not today's (issue 38, point 5): the
//! environment key of real git commits, and the prepare step run for real
//! (in its jail) once per key, reused, waited on, failing cleanly.

mod common;

use std::path::Path;

use arena_core::agent::envkey;
use arena_core::{EnvChoice, EnvState};
use common::*;
use tokio_util::sync::CancellationToken;

fn ready() -> bool {
    match arena_core::agent::jail::jail_info() {
        Ok(_) => true,
        Err(why) => {
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail: {why:?}"
            );
            eprintln!("skipped: no jail here: {why:?}");
            false
        }
    }
}

fn commit_all(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    head_of(dir)
}

fn head_of(dir: &Path) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A real package-lock.json (lockfile version 3) naming `is-odd` at
/// `version`, as npm writes it.
fn package_lock(version: &str) -> String {
    format!(
        r#"{{
  "name": "demo",
  "version": "1.0.0",
  "lockfileVersion": 3,
  "requires": true,
  "packages": {{
    "": {{ "name": "demo", "version": "1.0.0", "dependencies": {{ "is-odd": "^{version}" }} }},
    "node_modules/is-odd": {{ "version": "{version}" }}
  }}
}}
"#
    )
}

/// A Node project: package.json, package-lock.json at `version`,
/// node_modules ignored.
fn node_project(dir: &Path, version: &str) {
    std::fs::write(
        dir.join("package.json"),
        format!(r#"{{ "name": "demo", "version": "1.0.0", "dependencies": {{ "is-odd": "^{version}" }} }}"#),
    )
    .unwrap();
    std::fs::write(dir.join("package-lock.json"), package_lock(version)).unwrap();
    std::fs::write(dir.join(".gitignore"), "node_modules/\n.venv/\n").unwrap();
}

#[test]
fn the_key_follows_the_lockfiles_and_nothing_else() {
    let project = repo();
    let dir = project.path();
    std::fs::create_dir_all(dir.join("web")).unwrap();
    node_project(&dir.join("web"), "3.0.1");
    std::fs::write(dir.join("Cargo.lock"), "version = 3\n").unwrap();
    let one = commit_all(dir, "lockfiles");
    std::fs::write(dir.join("README.md"), "# Demo\n\nChanged.\n").unwrap();
    std::fs::write(dir.join("src/lib.rs"), "pub fn two() {}\n").unwrap();
    let two = commit_all(dir, "code only");
    let at_one = envkey::key_at(dir, &one).unwrap();
    let at_two = envkey::key_at(dir, &two).unwrap();
    assert_eq!(at_one.hex, at_two.hex, "same lockfiles, same key");
    assert_eq!(
        at_one
            .files
            .iter()
            .map(|f| f.0.as_str())
            .collect::<Vec<_>>(),
        ["Cargo.lock", "web/package-lock.json"]
    );
    assert!(at_one
        .ecosystems
        .iter()
        .any(|f| f.ecosystem == envkey::Ecosystem::Npm && f.dir == Path::new("web")));
    // The working files as committed: the same key.
    assert_eq!(envkey::key_of_tree(dir).unwrap().hex, at_two.hex);
    // A lockfile changed but not committed counts.
    std::fs::write(dir.join("web/package-lock.json"), package_lock("3.0.0")).unwrap();
    let now = envkey::key_of_tree(dir).unwrap();
    assert_ne!(now.hex, at_two.hex);
    let three = commit_all(dir, "another is-odd");
    let at_three = envkey::key_at(dir, &three).unwrap();
    assert_ne!(
        at_three.hex, at_two.hex,
        "a changed package-lock.json, another key"
    );
    assert_eq!(at_three.hex, now.hex);
    assert_eq!(at_three.short().len(), 16);
    // A commit with no lockfile has an empty key.
    let bare = repo();
    let head = head_of(bare.path());
    assert!(envkey::key_at(bare.path(), &head).unwrap().is_empty());
}

#[test]
fn the_lockfiles_call_for_their_commands() {
    let project = repo();
    let dir = project.path();
    node_project(dir, "3.0.1");
    std::fs::create_dir_all(dir.join("py")).unwrap();
    std::fs::write(dir.join("py/requirements.txt"), "attrs==23.2.0\n").unwrap();
    std::fs::write(dir.join("py/requirements-dev.txt"), "pytest\n").unwrap();
    std::fs::create_dir_all(dir.join("svc")).unwrap();
    std::fs::write(
        dir.join("svc/go.mod"),
        "module example.com/svc\n\ngo 1.21\n",
    )
    .unwrap();
    std::fs::write(dir.join("svc/go.sum"), "").unwrap();
    let head = commit_all(dir, "three ecosystems");
    let key = envkey::key_at(dir, &head).unwrap();
    assert_eq!(
        key.prepare_command().as_deref(),
        Some(
            "npm ci && (cd py && python3 -m venv .venv && .venv/bin/pip install \
             -r requirements-dev.txt -r requirements.txt) && (cd svc && go mod download)"
        )
    );
}

/// A project whose HEAD (and working files) carry `is-odd` 3.0.1, and an
/// older base commit with 3.0.0: another key.
fn project_with_an_older_base() -> (tempfile::TempDir, String, String) {
    let parent = std::env::current_dir()
        .unwrap()
        .join("target-test-projects");
    let project = repo_in(&parent);
    let dir = project.path();
    node_project(dir, "3.0.0");
    let base = commit_all(dir, "is-odd 3.0.0");
    node_project(dir, "3.0.1");
    let head = commit_all(dir, "is-odd 3.0.1");
    (project, base, head)
}

#[tokio::test]
async fn a_base_with_another_lockfile_is_prepared_once_and_reused() {
    if !ready() {
        return;
    }
    let mut h = Harness::new().await;
    // The marker: one line per run of the prepare command, in what it makes.
    h.reconfigure(|c| {
        c.coding.prepare = Some(
            "mkdir -p node_modules/is-odd && echo ran >> node_modules/.prepared-runs \
             && cat package-lock.json > node_modules/is-odd/lock-seen"
                .into(),
        )
    });
    let (project, base, head) = project_with_an_older_base();
    let dir = project.path();
    let token = CancellationToken::new();

    // Today's base: the user's folders serve.
    let now = h.engine.environment_for(dir, &head, &token).await.unwrap();
    assert!(matches!(now, EnvChoice::Current { .. }), "{now:?}");

    // Two battles at once on the older base: one prepare, both get it.
    let second = h.second_engine();
    let (a, b) = tokio::join!(
        h.engine.environment_for(dir, &base, &token),
        second.environment_for(dir, &base, &token),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let (
        EnvChoice::Prepared {
            key, root, record, ..
        },
        EnvChoice::Prepared { root: root_b, .. },
    ) = (&a, &b)
    else {
        panic!("not prepared: {a:?} {b:?}");
    };
    let (key, root, record) = (key.clone(), root.clone(), record.clone());
    assert_eq!(&root, root_b);
    assert_eq!(
        key.as_str(),
        envkey::key_at(dir, &base).unwrap().short(),
        "kept by the base's key"
    );
    assert!(root.starts_with(h.data.path().join("environments").join(&key)));
    assert!(record.ok);
    assert!(record.command.contains("prepared-runs"), "{record:?}");
    assert_eq!(record.base, base);
    assert!(record.size_bytes > 0);
    // Made in a checkout of the base: the base's lockfile, not today's.
    let seen = std::fs::read_to_string(root.join("node_modules/is-odd/lock-seen")).unwrap();
    assert!(seen.contains("\"version\": \"3.0.0\""), "{seen}");
    // The folders the engine mounts are found there.
    let found = arena_core::agent::environment::find(&root, &[]);
    assert_eq!(
        found.iter().map(|f| f.rel.clone()).collect::<Vec<_>>(),
        [std::path::PathBuf::from("node_modules")]
    );
    // Its files are not writable.
    let marker = root.join("node_modules/.prepared-runs");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&marker).unwrap().permissions().mode();
    assert_eq!(mode & 0o222, 0, "mode {mode:o}");
    drop((a, b));

    // A later battle reuses it: the command does not run again.
    let again = h.engine.environment_for(dir, &base, &token).await.unwrap();
    let EnvChoice::Prepared { record: r2, .. } = &again else {
        panic!("{again:?}");
    };
    assert_eq!(**r2, *record);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");

    // Listed, in use while a battle holds it; pruned once it is let go.
    let listed = h.engine.environments().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, EnvState::InUse);
    let refused = h
        .engine
        .prune_environments(std::slice::from_ref(&key), false)
        .await
        .unwrap();
    assert!(!refused[0].removed && refused[0].kept_because.is_some());
    assert!(root.exists());
    drop(again);
    assert_eq!(
        h.engine.environments().await.unwrap()[0].state,
        EnvState::Ready
    );
    let pruned = h.engine.prune_environments(&[], true).await.unwrap();
    assert!(pruned[0].removed);
    assert!(pruned[0].size_bytes > 0);
    assert!(!root.exists());
    assert!(h.engine.environments().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failing_prepare_names_its_key_command_and_output_and_leaves_nothing() {
    if !ready() {
        return;
    }
    let mut h = Harness::new().await;
    let command = "mkdir -p node_modules/half && echo first-line && \
                   echo the-last-words-of-the-prepare >&2 && exit 3";
    h.reconfigure(|c| c.coding.prepare = Some(command.into()));
    let (project, base, _) = project_with_an_older_base();
    let key = envkey::key_at(project.path(), &base).unwrap();
    let err = h
        .engine
        .environment_for(project.path(), &base, &CancellationToken::new())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains(key.short()), "{text}");
    assert!(text.contains(command), "{text}");
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(text.contains("first-line"), "{text}");
    assert!(text.contains("the-last-words-of-the-prepare"), "{text}");
    // Nothing of it is kept.
    let store = h.data.path().join("environments");
    let left: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != ".locks")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(h.engine.environments().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_base_with_no_lockfile_has_no_environment() {
    let h = Harness::new().await;
    let project = repo();
    let head = head_of(project.path());
    // Today's tree has a lockfile, the base none: still none.
    node_project(project.path(), "3.0.1");
    let choice = h
        .engine
        .environment_for(project.path(), &head, &CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(choice, EnvChoice::None), "{choice:?}");
}

/// package.json and a real package-lock.json for `is-odd@version`, as npm
/// writes them (resolved from the registry npm is configured with, outside
/// any jail); `false` when that registry cannot be reached from here.
fn npm_lock(dir: &Path, version: &str) -> bool {
    let out = std::process::Command::new("npm")
        .current_dir(dir)
        .args([
            "install",
            "--package-lock-only",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            &format!("is-odd@{version}"),
        ])
        .output();
    match out {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            eprintln!(
                "skipped: npm cannot resolve is-odd here: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            false
        }
        Err(e) => {
            eprintln!("skipped: npm is not installed: {e}");
            false
        }
    }
}

/// The registry this machine's npm uses (from its configuration).
fn npm_registry() -> String {
    let out = std::process::Command::new("npm")
        .args(["config", "get", "registry"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A project whose base commit locks is-odd 3.0.1 and whose HEAD 3.0.0.
fn real_node_project() -> Option<(tempfile::TempDir, String)> {
    let project = repo();
    let dir = project.path();
    std::fs::write(dir.join(".gitignore"), "node_modules/\n").unwrap();
    if !npm_lock(dir, "3.0.1") {
        return None;
    }
    let base = commit_all(dir, "is-odd 3.0.1");
    if !npm_lock(dir, "3.0.0") {
        return None;
    }
    commit_all(dir, "is-odd 3.0.0");
    Some((project, base))
}

#[tokio::test]
async fn a_real_npm_ci_prepares_the_base_through_the_registry_door() {
    if !ready() {
        return;
    }
    let Some((project, base)) = real_node_project() else {
        return;
    };
    let mut h = Harness::new().await;
    // npm's cache in the jail's own (empty) temp folder: every package
    // comes through the door, none from a cache of the user's.
    h.reconfigure(|c| {
        c.coding.prepare = Some("npm ci --no-audit --no-fund --cache \"$TMPDIR/npm-cache\"".into())
    });
    let choice = h
        .engine
        .environment_for(project.path(), &base, &CancellationToken::new())
        .await
        .unwrap();
    let EnvChoice::Prepared { root, .. } = &choice else {
        panic!("not prepared: {choice:?}");
    };
    let installed: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("node_modules/is-odd/package.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        installed["version"], "3.0.1",
        "the base's lockfile, not HEAD's"
    );
    assert!(root.join("node_modules/is-number/package.json").is_file());
    // It runs.
    let status = std::process::Command::new("node")
        .current_dir(root)
        .args(["-e", "process.exit(require('is-odd')(3) ? 0 : 1)"])
        .status()
        .unwrap();
    assert!(status.success());
    // And without [coding] prepare, the lockfile's own command is `npm ci`.
    let key = envkey::key_at(project.path(), &base).unwrap();
    assert_eq!(key.prepare_command().as_deref(), Some("npm ci"));
}

#[tokio::test]
async fn the_prepare_jail_reaches_the_registry_and_nothing_else() {
    if !ready() {
        return;
    }
    let registry = npm_registry();
    let mut h = Harness::new().await;
    let provider = format!("{}/models", h.cloud.base_url());
    let attempt = |name: &str, curl: &str| {
        format!(
            "(curl -fsS --max-time 8 -o /dev/null {curl} && echo {name}:reached \
             || echo {name}:refused) >> node_modules/attempts"
        )
    };
    let command = [
        "mkdir -p node_modules".to_string(),
        // The provider's server on this machine's loopback, through the
        // door and around it.
        attempt("provider", &format!("'{provider}'")),
        attempt("provider-direct", &format!("--noproxy '*' '{provider}'")),
        // A LAN address and the link-local metadata address, both ways.
        attempt("lan", "https://10.0.0.1/"),
        attempt("lan-direct", "--noproxy '*' https://192.168.1.1/"),
        attempt("metadata", "http://169.254.169.254/"),
        // Another host on the internet.
        attempt("other", "https://example.com/"),
        // The registry npm is configured with.
        attempt("registry", &format!("'{registry}'")),
    ]
    .join(" ; ");
    h.reconfigure(|c| c.coding.prepare = Some(command));
    let (project, base, _) = project_with_an_older_base();
    let choice = h
        .engine
        .environment_for(project.path(), &base, &CancellationToken::new())
        .await
        .unwrap();
    let EnvChoice::Prepared { root, .. } = &choice else {
        panic!("not prepared: {choice:?}");
    };
    let attempts = std::fs::read_to_string(root.join("node_modules/attempts")).unwrap();
    eprintln!("from inside the prepare jail:\n{attempts}");
    for refused in [
        "provider",
        "provider-direct",
        "lan",
        "lan-direct",
        "metadata",
        "other",
    ] {
        assert!(
            attempts.contains(&format!("{refused}:refused\n")),
            "{refused}: {attempts}"
        );
    }
    // Nothing was ever let through to the provider.
    assert!(h.cloud.requests().is_empty());
    if attempts.contains("registry:refused") {
        // Skipped only when the registry is not reachable from here at all.
        let outside = std::process::Command::new("curl")
            .args(["-fsS", "--max-time", "8", "-o", "/dev/null", &registry])
            .status()
            .unwrap();
        assert!(
            !outside.success(),
            "the registry is reachable outside the jail but not through the door: {attempts}"
        );
        eprintln!("the registry {registry} is not reachable from this machine");
    }
}

/// A Coding battle whose base's lockfile is not the working tree's (the
/// user changed package-lock.json and installed it, uncommitted): both
/// contestants' agents and checks see the environment prepared for the
/// base, not the user's folders, and the user's folders are untouched.
#[tokio::test]
async fn contestants_of_a_base_with_another_lockfile_pass_their_checks_on_the_prepared_environment()
{
    if !ready() || arena_core::agent::environment::copy_on_write().is_err() {
        eprintln!("skipped: no jail or no overlays here");
        return;
    }
    let project = repo();
    let dir = project.path();
    std::fs::write(dir.join(".gitignore"), "node_modules/\n").unwrap();
    if !npm_lock(dir, "3.0.1") {
        return;
    }
    commit_all(dir, "is-odd 3.0.1");
    // The user moved on to 3.0.0 without committing, and installed it.
    if !npm_lock(dir, "3.0.0") {
        return;
    }
    let installed = std::process::Command::new("npm")
        .current_dir(dir)
        .args(["ci", "--no-audit", "--no-fund"])
        .status()
        .unwrap();
    assert!(installed.success());
    let users = std::fs::read(dir.join("node_modules/is-odd/package.json")).unwrap();

    let mut h = Harness::new().await;
    let agent = "node -e \"console.log(require('is-odd/package.json').version)\" > seen.txt";
    h.reconfigure(|config| {
        config.backends = vec![arena_core::config::CustomBackend {
            name: "fake".into(),
            command: vec![
                "bash".into(),
                "-c".into(),
                agent.into(),
                "agent".into(),
                "{prompt}".into(),
            ],
        }];
        config.limits.stall_timeout_secs = 120;
    });
    h.cloud
        .set_model("m1", arena_testserver::ModelScript::tokens(1));
    h.cloud
        .set_model("m2", arena_testserver::ModelScript::tokens(1));
    let check = "node -e \"const v = require('is-odd/package.json').version; \
                 if (v !== '3.0.1') { console.error('saw ' + v); process.exit(1) } \
                 process.exit(require('is-odd')(3) ? 0 : 1)\"";
    let b = run_coding(&h, dir, &["fake@m1", "fake@m2"], Some(check)).await;
    let base = b.base_commit.clone().expect("a base commit");
    let key = envkey::key_at(dir, &base).unwrap();
    for c in &b.contestants {
        assert_eq!(
            c.status,
            arena_core::battle::ContestantStatus::Done,
            "{:?}",
            c.error
        );
        let check = c.check.clone().expect("a check");
        assert!(check.passed, "{check:?}");
        let seen = std::fs::read_to_string(c.worktree.clone().unwrap().join("seen.txt")).unwrap();
        assert_eq!(seen.trim(), "3.0.1", "the agent saw the base's environment");
        let env = c
            .diff
            .as_ref()
            .and_then(|d| d.environment.clone())
            .unwrap_or_default();
        assert!(
            env.starts_with(&format!("prepared {}: node_modules", key.short())),
            "{env}"
        );
    }
    // Prepared once for the two, said in the stream before it ran.
    let kept = h.engine.environments().await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let events = h.engine.store().events_since(&b.id, 0, 10_000).unwrap();
    let said: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            arena_core::EventKind::Tool { name, summary, .. } if name == "prepare" => {
                Some(summary.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(&format!("key {}", key.short())) && said[0].contains("`npm ci"),
        "{said:?}"
    );
    // The user's folder is as the user left it.
    assert_eq!(
        std::fs::read(dir.join("node_modules/is-odd/package.json")).unwrap(),
        users
    );
}

/// A Python base: `requirements.txt` calls for a virtualenv and pip, made
/// in the jail through the registry door, where it stays (its `#!` lines
/// name the place it was made, which is where it is kept).
#[tokio::test]
async fn a_python_base_gets_a_virtualenv_with_its_requirements() {
    if !ready() {
        return;
    }
    let project = repo();
    let dir = project.path();
    std::fs::write(dir.join(".gitignore"), ".venv/\n").unwrap();
    std::fs::write(dir.join("requirements.txt"), "attrs==23.2.0\n").unwrap();
    let base = commit_all(dir, "attrs 23.2.0");
    // The user moved on (not committed).
    std::fs::write(dir.join("requirements.txt"), "attrs==23.1.0\n").unwrap();
    let h = Harness::new().await;
    let choice = match h
        .engine
        .environment_for(dir, &base, &CancellationToken::new())
        .await
    {
        Ok(choice) => choice,
        Err(e) => {
            // Skipped only when the index cannot be reached from here at all.
            let scratch = tempfile::tempdir().unwrap();
            let outside = std::process::Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", "--no-cache-dir", "-d"])
                .arg(scratch.path())
                .arg("attrs==23.2.0")
                .output()
                .unwrap();
            assert!(
                !outside.status.success(),
                "pip reaches the index outside the jail, the prepare failed: {e}"
            );
            eprintln!("skipped: the Python package index is not reachable: {e}");
            return;
        }
    };
    let EnvChoice::Prepared { root, record, .. } = &choice else {
        panic!("not prepared: {choice:?}");
    };
    assert_eq!(
        record.command,
        "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt"
    );
    let out = std::process::Command::new(root.join(".venv/bin/python"))
        .args(["-c", "import attrs; print(attrs.__version__)"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "23.2.0");
    // Its scripts lead to its own interpreter, where it is kept.
    let pip = std::fs::read_to_string(root.join(".venv/bin/pip")).unwrap();
    let shebang = pip.lines().next().unwrap();
    assert_eq!(
        shebang,
        format!("#!{}", root.join(".venv/bin/python3").display())
    );
    let found = arena_core::agent::environment::find(root, &[]);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, "virtualenv");
}

/// A crate at `dir` depending on `dep` (a name and an exact version this
/// machine's cargo has downloaded), with its Cargo.lock written offline;
/// false when cargo cannot (the version is not in the user's cache).
fn cargo_crate(dir: &Path, dep: &str, version: &str) -> bool {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"prepared\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\n{dep} = \"={version}\"\n\n[workspace]\n"
        ),
    )
    .unwrap();
    let _ = std::fs::remove_file(dir.join("Cargo.lock"));
    let made = std::process::Command::new("cargo")
        .current_dir(dir)
        .args(["generate-lockfile", "--offline", "-q"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        assert!(
            std::env::var_os("ARENA_REQUIRE_PEERS").is_none(),
            "cargo could not lock {dep} {version} offline"
        );
        eprintln!("skipped: cargo could not lock {dep} {version} offline");
    }
    made
}

/// A Rust base whose Cargo.lock is not the working tree's: the prepare
/// (`cargo fetch --locked`, through the registry door, into a cargo home of
/// the environment's own) fills a cargo home that then stands where the
/// user's does for the contestants, so an offline check builds the base's
/// dependency from it.
#[tokio::test]
async fn a_rust_base_builds_offline_from_the_prepared_cargo_home() {
    if !ready() || arena_core::agent::environment::copy_on_write().is_err() {
        eprintln!("skipped: no jail or no overlays here");
        return;
    }
    let project = repo();
    let dir = project.path();
    std::fs::write(dir.join(".gitignore"), "target/\n").unwrap();
    // Versions this workspace itself locks, so cargo has them here.
    if !cargo_crate(dir, "itoa", "1.0.18") {
        return;
    }
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn show(n: u32) -> String { itoa::Buffer::new().format(n).to_string() }\n\
         #[test] fn shows() { assert_eq!(show(42), \"42\"); }\n",
    )
    .unwrap();
    commit_all(dir, "a crate on itoa");
    // The user's tree moved on to another dependency (uncommitted).
    if !cargo_crate(dir, "ryu", "1.0.23") {
        return;
    }
    let mut h = Harness::new().await;
    h.reconfigure(|config| {
        config.backends = vec![arena_core::config::CustomBackend {
            name: "fake".into(),
            command: vec![
                "bash".into(),
                "-c".into(),
                "echo '// looked' >> src/lib.rs".into(),
                "agent".into(),
                "{prompt}".into(),
            ],
        }];
        config.limits.stall_timeout_secs = 300;
        config.limits.check_timeout_secs = 600;
    });
    for m in ["m1", "m2"] {
        h.cloud
            .set_model(m, arena_testserver::ModelScript::tokens(1));
    }
    let b = run_coding(
        &h,
        dir,
        &["fake@m1", "fake@m2"],
        Some("cargo test --offline 2>&1; echo \"home=$CARGO_HOME\""),
    )
    .await;
    for c in &b.contestants {
        assert_eq!(
            c.status,
            arena_core::battle::ContestantStatus::Done,
            "{:?}",
            c.error
        );
        let check = c.check.clone().expect("a check");
        assert!(check.passed, "{check:?}");
        assert!(check.output_tail.contains("Compiling itoa"), "{check:?}");
    }
    let check = b.contestants[0].check.clone().expect("a check");
    let kept = h.engine.environments().await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let record = kept[0].record.clone().expect("a finished environment");
    assert_eq!(record.command, "cargo fetch --locked");
    let (_, home) = record
        .caches
        .iter()
        .find(|(what, _)| what == "cargo home")
        .expect("a cargo home");
    assert!(
        check
            .output_tail
            .contains(&format!("home={}", home.display())),
        "{check:?}"
    );
}

/// The version of `name` a Cargo.lock's text locks (the first one).
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let at = lock.find(&format!("name = \"{name}\"\nversion = \""))?;
    let rest = &lock[at + name.len() + 19..];
    Some(rest[..rest.find('"')?].to_string())
}

/// A Rust base with a Cargo.toml and no Cargo.lock (a library that ignores
/// its lockfile, as many do), whose manifest is not the working tree's:
/// the prepare resolves it (`cargo generate-lockfile && cargo fetch`,
/// through the registry door, a real crate from the crate registry) into
/// a cargo home of the environment's own, and the contestants' check —
/// a plain `cargo test`, no `--offline` — builds in a jail with no network
/// from that home, with the very versions the prepare locked; so does a
/// battle on the user's tree at that base, with no lockfile of its own.
#[tokio::test]
async fn a_rust_base_without_a_lockfile_builds_from_the_prepared_cargo_home() {
    if !ready() || arena_core::agent::environment::copy_on_write().is_err() {
        eprintln!("skipped: no jail or no overlays here");
        return;
    }
    let project = repo();
    let dir = project.path();
    std::fs::write(dir.join(".gitignore"), "target/\n/Cargo.lock\n").unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = |deps: &str| {
        format!(
            "[package]\nname = \"unlocked\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\n{deps}\n[workspace]\n"
        )
    };
    std::fs::write(dir.join("Cargo.toml"), manifest("itoa = \"1\"\n")).unwrap();
    // Whether the crate registry answers here at all (outside any jail,
    // with a cargo home of the test's own).
    let probe = tempfile::tempdir().unwrap();
    let reachable = std::process::Command::new("cargo")
        .current_dir(dir)
        .env("CARGO_HOME", probe.path())
        .args(["generate-lockfile", "-q"])
        .status()
        .is_ok_and(|s| s.success());
    let _ = std::fs::remove_file(dir.join("Cargo.lock"));
    if !reachable {
        assert!(
            std::env::var_os("ARENA_REQUIRE_PEERS").is_none(),
            "the crate registry cannot be reached"
        );
        eprintln!("skipped: the crate registry cannot be reached");
        return;
    }
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn show(n: u32) -> String { itoa::Buffer::new().format(n).to_string() }\n\
         #[test] fn shows() { assert_eq!(show(42), \"42\"); }\n",
    )
    .unwrap();
    let base = commit_all(dir, "a crate on itoa, its lockfile ignored");
    let key = envkey::key_at(dir, &base).unwrap();
    assert_eq!(
        key.prepare_command().as_deref(),
        Some("cargo generate-lockfile && cargo fetch")
    );
    // The user's tree moved on to another dependency (uncommitted).
    std::fs::write(
        dir.join("Cargo.toml"),
        manifest("itoa = \"1\"\nryu = \"1\"\n"),
    )
    .unwrap();
    assert_ne!(envkey::key_of_tree(dir).unwrap().hex, key.hex);
    let mut h = Harness::new().await;
    h.reconfigure(|config| {
        config.backends = vec![arena_core::config::CustomBackend {
            name: "fake".into(),
            command: vec![
                "bash".into(),
                "-c".into(),
                "echo '// looked' >> src/lib.rs".into(),
                "agent".into(),
                "{prompt}".into(),
            ],
        }];
        config.limits.stall_timeout_secs = 300;
        config.limits.check_timeout_secs = 600;
    });
    for m in ["m1", "m2"] {
        h.cloud
            .set_model(m, arena_testserver::ModelScript::tokens(1));
    }
    let b = run_coding(
        &h,
        dir,
        &["fake@m1", "fake@m2"],
        Some("cargo test 2>&1 && echo '--- lock' && cat Cargo.lock; echo \"home=$CARGO_HOME\""),
    )
    .await;
    for c in &b.contestants {
        assert_eq!(
            c.status,
            arena_core::battle::ContestantStatus::Done,
            "{:?}",
            c.error
        );
        let check = c.check.clone().expect("a check");
        assert!(check.passed, "{check:?}");
        assert!(check.output_tail.contains("Compiling itoa"), "{check:?}");
    }
    let kept = h.engine.environments().await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let record = kept[0].record.clone().expect("a finished environment");
    assert_eq!(record.command, "cargo generate-lockfile && cargo fetch");
    assert_eq!(record.full_key, key.hex);
    // The lockfile the prepare generated stays in the environment's tree.
    let lock = std::fs::read_to_string(kept[0].path.join("tree/Cargo.lock")).unwrap();
    let locked = locked_version(&lock, "itoa").expect("itoa locked");
    let (_, home) = record
        .caches
        .iter()
        .find(|(what, _)| what == "cargo home")
        .expect("a cargo home");
    let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    assert!(config.contains("offline = true"), "{config}");
    for c in &b.contestants {
        let check = c.check.clone().expect("a check");
        let (_, resolved) = check
            .output_tail
            .split_once("--- lock")
            .expect("the check's lockfile");
        assert_eq!(
            locked_version(resolved, "itoa"),
            Some(locked.clone()),
            "the check resolved offline what the prepare locked: {check:?}"
        );
        assert!(
            check
                .output_tail
                .contains(&format!("home={}", home.display())),
            "{check:?}"
        );
    }
    // Back at the base, the user's tree has the base's key, and no
    // lockfile: never resolved here, so the battle still builds from the
    // prepared home, not from the user's (which may lack what it needs).
    std::fs::write(dir.join("Cargo.toml"), manifest("itoa = \"1\"\n")).unwrap();
    assert_eq!(envkey::key_of_tree(dir).unwrap().hex, key.hex);
    let again = run_coding(
        &h,
        dir,
        &["fake@m1", "fake@m2"],
        Some("cargo test 2>&1 && echo \"home=$CARGO_HOME\""),
    )
    .await;
    for c in &again.contestants {
        let check = c.check.clone().expect("a check");
        assert!(check.passed, "{check:?}");
        assert!(
            check
                .output_tail
                .contains(&format!("home={}", home.display())),
            "{check:?}"
        );
    }
}
