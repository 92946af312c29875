//! Arena never reads an agent's files in its own process: what it computes
//! from them (the diff) is computed by a reader process in the
//! contestant's jail, which a deadline or a cancellation kills. Attacked
//! through the real `arena` binary (the reader is that binary): FIFOs where
//! git expects files, objects and index entries that inflate to hundreds of
//! megabytes, a file that takes minutes to read, and 110,000 new files.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arena_testserver::ModelScript;
use common::*;
use serde_json::Value;

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

fn run(dir: &Path, program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "{program} {args:?}");
}

/// A git project with one commit, and `[[backend]] name = "agent"`
/// running `script` with the contestant's model as `$0` (plus `limits`
/// lines under `[limits]`).
fn setup_agent(s: &Setup, script: &str, limits: &str) -> PathBuf {
    let project = s.project();
    std::fs::remove_dir_all(project.join(".git")).unwrap();
    run(&project, "git", &["init", "-q", "-b", "main"]);
    run(
        &project,
        "git",
        &["config", "user.email", "arena@example.invalid"],
    );
    run(&project, "git", &["config", "user.name", "Arena Test"]);
    std::fs::write(project.join("README.md"), "hello\n").unwrap();
    std::fs::create_dir_all(project.join("sub")).unwrap();
    std::fs::write(project.join("sub/keep.txt"), "kept\n").unwrap();
    run(&project, "git", &["add", "."]);
    run(&project, "git", &["commit", "-q", "-m", "initial"]);
    let config = s.dir.path().join("arena.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(limits);
    text.push_str(&format!(
        "\n[[backend]]\nname = \"agent\"\ncommand = [\"bash\", \"-c\", {}, \"{{model}}\", \"{{prompt}}\"]\n",
        serde_json::to_string(script).unwrap()
    ));
    std::fs::write(&config, text).unwrap();
    s.cloud.set_model("m1", ModelScript::tokens(1));
    s.cloud.set_model("m2", ModelScript::tokens(1));
    project
}

fn run_args(project: &Path, contestants: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "battle",
        "run",
        "--type",
        "coding",
        "--no-analysis",
        "--json",
        "--prompt",
        "go",
        "--project",
    ]
    .map(String::from)
    .to_vec();
    args.push(project.to_str().unwrap().to_string());
    for c in contestants {
        args.push("-c".into());
        args.push(c.to_string());
    }
    args
}

/// Runs `arena battle run` to its end; its JSON, how long it took and its
/// peak resident memory (kB, from GNU time).
fn battle(s: &Setup, project: &Path, contestants: &[&str]) -> (Value, Duration, u64) {
    let args = run_args(project, contestants);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, took, peak) = timed(s, &args);
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (json, took, peak)
}

fn contestant<'a>(b: &'a Value, model: &str) -> &'a Value {
    b["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == model)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn fifos_where_git_expects_files_end_the_contestant_not_the_battle() {
    if !jail_ready() {
        return;
    }
    let s = Setup::new().await;
    // m1: FIFOs as `.gitignore` and as the index; m2: as
    // `sub/.gitattributes` and as HEAD. The project's own files are fine.
    let script = r#"
case "$0" in
  m1) mkfifo .gitignore; rm -f .git/index; mkfifo .git/index ;;
  m2) mkfifo sub/.gitattributes; rm -f .git/HEAD; mkfifo .git/HEAD ;;
esac
echo changed >> README.md
echo finished
"#;
    let project = setup_agent(&s, script, "");
    let (b, took, _) = battle(&s, &project, &["agent@m1", "agent@m2"]);
    assert!(took < Duration::from_secs(30), "took {took:?}");
    // Every contestant failed, so the battle ends as an error.
    assert_eq!(b["status"], "error", "{b:#}");
    for (model, file) in [("m1", ".gitignore"), ("m2", "sub/.gitattributes")] {
        let c = contestant(&b, model);
        assert_eq!(c["status"], "error", "{c:#}");
        let error = c["error"].as_str().unwrap();
        assert!(
            error.contains(&format!("`{file}`")) && error.contains("FIFO"),
            "{error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_and_index_entries_that_inflate_are_never_read_by_arena() {
    if !jail_ready() {
        return;
    }
    let s = Setup::new().await;
    // A loose blob of 256 MiB of zeros (a quarter MiB on disk) staged as
    // `.gitattributes` with no such file, and an index entry for
    // `README.md` pointing at it; the change itself is one line.
    let script = r#"
oid=$(head -c 268435456 /dev/zero | git hash-object -w --stdin)
git update-index --add --cacheinfo "100644,$oid,.gitattributes"
git update-index --cacheinfo "100644,$oid,README.md"
echo changed >> README.md
echo finished
"#;
    let project = setup_agent(&s, script, "");
    let (b, took, peak_kb) = battle(&s, &project, &["agent@m1", "agent@m2"]);
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let c = contestant(&b, "m1");
    assert_eq!(c["status"], "done", "{c:#}");
    let result = PathBuf::from(c["result_path"].as_str().unwrap());
    let diff = std::fs::read_to_string(result.with_file_name("diff.patch")).unwrap();
    assert!(diff.contains("+changed"), "{c:#}");
    assert!(!diff.contains(".gitattributes"), "{diff}");
    assert!(peak_kb < 200 * 1024, "Arena's peak RSS {peak_kb} kB");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_that_takes_too_long_is_killed_and_cancel_does_not_wait_for_it() {
    if !jail_ready() {
        return;
    }
    let s = Setup::new().await;
    // A sparse 60 GB file takes minutes to hash, and nothing on disk.
    let script = r#"
truncate -s 60G huge.bin
echo finished
"#;
    let limits = "max_file_bytes = 100000000000\ndiff_timeout_secs = 3\n";
    let project = setup_agent(&s, script, limits);
    let (b, took, _) = battle(&s, &project, &["agent@m1", "agent@m2"]);
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let c = contestant(&b, "m1");
    assert_eq!(c["status"], "error", "{c:#}");
    assert!(
        c["error"]
            .as_str()
            .unwrap()
            .contains("limits.diff_timeout_secs"),
        "{c:#}"
    );

    // With a long deadline, `arena battle cancel` from another process
    // ends the read at once.
    let config = s.dir.path().join("arena.toml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("diff_timeout_secs = 3", "diff_timeout_secs = 600");
    std::fs::write(&config, text).unwrap();
    let args = run_args(&project, &["agent@m1", "agent@m2"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut running = s
        .command(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = s
        .wait_for_latest("the second battle", |b| {
            b["status"] == "running" && b["id"] != Value::Null
        })
        .await;
    // The agent is done in a moment; then the read goes on.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let started = Instant::now();
    let cancel = s.arena(&["battle", "cancel", &id]).await;
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "cancel took {:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = running.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "the battle did not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let shown = s.json(&["battle", "show", &id, "--json"]).await;
    assert_eq!(shown["status"], "cancelled", "{shown:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_and_ten_thousand_new_files_keep_the_database_small() {
    if !jail_ready() {
        return;
    }
    let s = Setup::new().await;
    let script = r#"
mkdir -p many && cd many
seq -f 'file-%06g' 1 110000 | xargs touch
cd .. && echo changed >> README.md
echo finished
"#;
    let project = setup_agent(&s, script, "");
    let (b, took, _) = battle(&s, &project, &["agent@m1", "agent@m2"]);
    assert!(took < Duration::from_secs(120), "took {took:?}");
    let c = contestant(&b, "m1");
    assert_eq!(c["status"], "done", "{c:#}");
    let db = s.dir.path().join("data/arena.db");
    let size = std::fs::metadata(&db).unwrap().len()
        + std::fs::metadata(db.with_extension("db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    assert!(size < 20 << 20, "the database is {size} bytes");
}

/// `arena ARGS` under GNU time: its output, how long it took and its peak
/// resident memory (kB).
fn timed(s: &Setup, args: &[&str]) -> (std::process::Output, Duration, u64) {
    let plain = s.command(&[]);
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f").arg("peak-rss-kb %M").arg(plain.get_program());
    cmd.args(args);
    for (key, value) in plain.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let peak = stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak-rss-kb "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in: {stderr}"));
    (out, took, peak)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tree_bomb_behind_head_costs_worktrees_list_and_prune_nothing() {
    if !jail_ready() {
        return;
    }
    let s = Setup::new().await;
    // A few KiB of trees naming 144^3 = 2,985,984 paths, committed and
    // made the agent's HEAD; its working files change by one line.
    let script = r#"
blob=$(echo x | git hash-object -w --stdin)
t1=$(for i in $(seq 1 144); do printf '100644 blob %s\tf%d\n' "$blob" "$i"; done | git mktree)
t2=$(for i in $(seq 1 144); do printf '040000 tree %s\td%d\n' "$t1" "$i"; done | git mktree)
t3=$(for i in $(seq 1 144); do printf '040000 tree %s\te%d\n' "$t2" "$i"; done | git mktree)
c=$(git commit-tree "$t3" -m bomb)
git update-ref HEAD "$c"
echo changed >> README.md
echo finished
"#;
    let project = setup_agent(&s, script, "");
    let (b, _, _) = battle(&s, &project, &["agent@m1", "agent@m2"]);
    for model in ["m1", "m2"] {
        assert_eq!(contestant(&b, model)["status"], "done", "{b:#}");
    }
    let (out, took, peak_kb) = timed(&s, &["worktrees", "list", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2, "{list:#}");
    assert!(list.as_array().unwrap().iter().all(|w| w["dirty"] == false));
    assert!(took < Duration::from_secs(10), "list took {took:?}");
    assert!(peak_kb < 200 * 1024, "list's peak RSS {peak_kb} kB");

    // Hand-edited since its diff was kept: prune keeps it (the reader
    // says so); the other goes.
    let edited = PathBuf::from(contestant(&b, "m1")["worktree"].as_str().unwrap());
    std::fs::write(edited.join("README.md"), "edited by hand\n").unwrap();
    let (out, took, peak_kb) = timed(&s, &["worktrees", "prune", "--json"]);
    assert!(out.status.success(), "{out:?}");
    assert!(took < Duration::from_secs(10), "prune took {took:?}");
    assert!(peak_kb < 200 * 1024, "prune's peak RSS {peak_kb} kB");
    let pruned: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = pruned.to_string();
    assert!(
        text.contains("changed since Arena took its diff"),
        "{pruned:#}"
    );
    assert!(edited.exists());
    let other = PathBuf::from(contestant(&b, "m2")["worktree"].as_str().unwrap());
    assert!(!other.exists(), "{pruned:#}");
}
