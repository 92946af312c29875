//! Issue 42 through the real `arena` binary: `arena battle run
//! --from-working-tree` starts a Coding battle from a snapshot of the
//! uncommitted work; a check whose program is missing is warned of before
//! the battle, and after it the battle carries one warning and every
//! contestant's check reads `could_not_run`, none `failed`.

mod common;

use std::path::{Path, PathBuf};

use arena_testserver::ModelScript;
use common::*;
use serde_json::Value;

/// A project with one commit, an uncommitted `calc.py`, and a
/// `[[backend]] name = "agent"` that copies `calc.py` (when it sees it)
/// to `seen.py`.
fn setup(s: &Setup) -> PathBuf {
    let project = s.project();
    std::fs::remove_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join("README.md"), "demo\n").unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    git(&project, &["add", "."]);
    git(
        &project,
        &[
            "-c",
            "user.email=a@b.invalid",
            "-c",
            "user.name=a",
            "commit",
            "-q",
            "-m",
            "first",
        ],
    );
    std::fs::write(project.join("calc.py"), "UNCOMMITTED = 1\n").unwrap();
    let config = s.dir.path().join("arena.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(
        "\n[[backend]]\nname = \"agent\"\ncommand = [\"bash\", \"-c\", \"cp calc.py seen.py 2>/dev/null; echo done\", \"{model}\", \"{prompt}\"]\n",
    );
    std::fs::write(&config, text).unwrap();
    s.cloud.set_model("m1", ModelScript::tokens(1));
    s.cloud.set_model("m2", ModelScript::tokens(1));
    project
}

fn run(s: &Setup, project: &Path, extra: &[&str]) -> (Value, String) {
    let mut args = vec![
        "battle",
        "run",
        "--type",
        "coding",
        "--no-analysis",
        "--json",
        "--prompt",
        "go",
        "--project",
        project.to_str().unwrap(),
        "-c",
        "agent@m1",
        "-c",
        "agent@m2",
    ];
    args.extend_from_slice(extra);
    let out = s.command(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (json, stderr)
}

#[tokio::test]
async fn from_the_working_tree_with_a_check_that_cannot_run() {
    let s = Setup::new().await;
    let project = setup(&s);
    let (b, stderr) = run(
        &s,
        &project,
        &["--from-working-tree", "--check", "pytest -q"],
    );
    assert!(
        stderr.contains("warning: `pytest` is not found"),
        "{stderr}"
    );
    assert_eq!(b["base"], "working_tree", "{b}");
    let warning = b["check_warning"].as_str().expect("a battle warning");
    assert!(warning.contains("could not run"), "{warning}");
    for c in b["contestants"].as_array().unwrap() {
        assert_eq!(c["check_outcome"], "could_not_run", "{c}");
        assert!(c["check"]["could_not_run"].is_string(), "{c}");
        assert_eq!(c["apply_advice"], Value::Null, "{c}");
        // The agent saw the uncommitted file.
        let wt = PathBuf::from(c["worktree"].as_str().unwrap());
        assert_eq!(
            std::fs::read_to_string(wt.join("seen.py")).unwrap(),
            "UNCOMMITTED = 1\n"
        );
    }

    // The battle's text says the base and the warning.
    let out = s
        .command(&["battle", "show", b["id"].as_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Base: a snapshot of the working tree"),
        "{text}"
    );
    assert!(
        text.contains("Warning: The check `pytest -q` could not run"),
        "{text}"
    );
    assert!(text.contains("check could not run"), "{text}");
    assert!(!text.contains("check failed"), "{text}");
}

#[tokio::test]
async fn from_head_leaves_uncommitted_work_out_and_a_failed_check_advises_against_apply() {
    let s = Setup::new().await;
    let project = setup(&s);
    let (b, stderr) = run(&s, &project, &["--check", "test -f seen.py"]);
    assert!(!stderr.contains("warning:"), "{stderr}");
    assert_eq!(b["base"], "head", "{b}");
    assert_eq!(b["check_warning"], Value::Null);
    for c in b["contestants"].as_array().unwrap() {
        // From HEAD, calc.py is not there: the agent copies nothing and
        // its check fails.
        assert_eq!(c["check_outcome"], "failed", "{c}");
        assert!(
            c["apply_advice"].as_str().unwrap().contains("check failed"),
            "{c}"
        );
    }
}
