//! The check on an overlay of the base (issue 39): where overlays mount and
//! the real `arena` binary can apply a change inside the check's jail, a
//! check's tree is the battle's base tree (checked out once) with a layer
//! of the check's own, the change applied there by Arena's apply rules.
//! Attacked through the real binary: a package hidden from the diff, a
//! change the apply rules refuse, and checks that write into their tree.

mod common;

use std::path::{Path, PathBuf};

use arena_testserver::ModelScript;
use common::*;
use serde_json::Value;

fn ready() -> bool {
    match (
        arena_core::agent::jail::jail_info(),
        arena_core::agent::environment::copy_on_write(),
    ) {
        (Ok(_), Ok(_)) => true,
        (jail, cow) => {
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail or no overlays: {jail:?} {cow:?}"
            );
            eprintln!("skipped: {jail:?} {cow:?}");
            false
        }
    }
}

/// A project with `calc.py` (wrong) and `[[backend]] name = "agent"`
/// running `script` with the contestant's model as `$0`.
fn setup(s: &Setup, script: &str) -> PathBuf {
    let project = s.project();
    std::fs::remove_dir_all(project.join(".git")).unwrap();
    std::fs::write(
        project.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
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
            "calc",
        ],
    );
    let config = s.dir.path().join("arena.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[[backend]]\nname = \"agent\"\ncommand = [\"bash\", \"-c\", {}, \"{{model}}\", \"{{prompt}}\"]\n",
        serde_json::to_string(script).unwrap()
    ));
    std::fs::write(&config, text).unwrap();
    s.cloud.set_model("m1", ModelScript::tokens(1));
    s.cloud.set_model("m2", ModelScript::tokens(1));
    project
}

fn battle(s: &Setup, project: &Path, check: &str) -> Value {
    let project = project.to_str().unwrap();
    let out = s
        .command(&[
            "battle",
            "run",
            "--type",
            "coding",
            "--no-analysis",
            "--json",
            "--prompt",
            "go",
            "--project",
            project,
            "-c",
            "agent@m1",
            "-c",
            "agent@m2",
            "--check",
            check,
        ])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn check<'a>(b: &'a Value, model: &str) -> &'a Value {
    let c = b["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == model)
        .unwrap();
    &c["check"]
}

/// The battle's folder of worktrees in the data directory.
fn trees(s: &Setup, b: &Value) -> PathBuf {
    s.dir
        .path()
        .join("data")
        .join("worktrees")
        .join(b["id"].as_str().unwrap())
}

const CHECK: &str = r#"/usr/bin/python3 -c "from calc import add; assert add(2, 2) == 4""#;
const FIX: &str = r#"printf 'def add(a, b):\n    return a + b\n' > calc.py"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_package_hidden_from_the_diff_fails_the_check_over_the_base() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    let hide = "printf 'def add(a, b):\\n    return a * b + 1\\n' > calc.py; mkdir -p calc; \
        printf 'def add(a, b):\\n    return a + b\\n' > calc/__init__.py; \
        git -C calc init -q; git -C calc add .; \
        git -C calc -c user.email=a@b.invalid -c user.name=a commit -q -m hidden";
    let script = format!("case \"$0\" in m1) {hide} ;; *) {FIX} ;; esac; echo done");
    let project = setup(&s, &script);
    let b = battle(&s, &project, CHECK);
    let hidden = check(&b, "m1");
    assert_eq!(hidden["passed"], false, "{b:#}");
    assert!(
        hidden["not_in_change"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "calc/ (a git repository of its own)"),
        "{hidden:#}"
    );
    assert_eq!(check(&b, "m2")["passed"], true, "{b:#}");
    // The base tree was made once and is kept for the battle; no check
    // tree is left.
    let dir = trees(&s, &b);
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.ends_with("-base")), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with("-check")), "{names:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_the_apply_rules_refuse_fails_the_check_with_the_reason() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    let refused = format!("{FIX}; printf '[submodule \"x\"]\\n\\tpath = x\\n' > .gitmodules");
    let script = format!("case \"$0\" in m1) {refused} ;; *) {FIX} ;; esac; echo done");
    let project = setup(&s, &script);
    let b = battle(&s, &project, CHECK);
    let refused = check(&b, "m1");
    assert_eq!(refused["passed"], false, "{b:#}");
    let tail = refused["output_tail"].as_str().unwrap();
    assert!(
        tail.contains("the change could not be applied to a fresh tree of the base: ")
            && tail.contains(".gitmodules"),
        "{tail}"
    );
    assert_eq!(check(&b, "m2")["passed"], true, "{b:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_check_writes_reaches_neither_the_base_tree_nor_another_check() {
    if !ready() {
        return;
    }
    let s = Setup::new().await;
    let script = format!("{FIX}; echo done");
    let project = setup(&s, &script);
    // Each check finds no file of the other's, then writes over the base's
    // files, deletes one and plants one.
    let check_cmd = format!(
        "test ! -e planted && {CHECK} && echo planted > planted && echo spoiled > calc.py \
         && rm -f .gitignore README.md; true"
    );
    let b = battle(&s, &project, &check_cmd);
    for model in ["m1", "m2"] {
        assert_eq!(check(&b, model)["passed"], true, "{b:#}");
    }
    let dir = trees(&s, &b);
    let base = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("-base"))
        .expect("a base tree");
    assert!(!base.join("planted").exists());
    assert_eq!(
        std::fs::read_to_string(base.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a - b\n"
    );
    // The user's project is as it was.
    assert_eq!(
        std::fs::read_to_string(project.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a - b\n"
    );
}
