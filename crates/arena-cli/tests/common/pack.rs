//! The sample pack (`packs/sample`) and a scripted agent that knows its
//! answers, for the tests that run packs.

use std::path::{Path, PathBuf};

/// The sample pack's folder.
pub fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample")
}

/// The sample pack's tasks: (id, its instruction's first line, its gold
/// patch).
pub fn tasks() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(sample().join("tasks")).unwrap() {
        let dir = entry.unwrap().path();
        let id = dir.file_name().unwrap().to_string_lossy().into_owned();
        let instruction = std::fs::read_to_string(dir.join("instruction.md")).unwrap();
        let first = instruction
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap()
            .to_string();
        let gold = std::fs::read_to_string(dir.join("solution/gold.patch")).unwrap();
        out.push((id, first, gold));
    }
    out.sort();
    out
}

/// An arena.toml `[[backend]] name = "agent"` for the sample pack: on
/// model `gold` it applies the gold patch of the task whose instruction it
/// was given (a scripted agent that knows the answers; a run resumed after
/// a kill finds them by the instruction too); on any other model it does
/// nothing.
pub fn gold_agent_backend() -> String {
    let mut script =
        String::from("[ \"$0\" = gold ] || { echo 'I looked and changed nothing'; exit 0; }\n");
    for (i, (_, first, gold)) in tasks().iter().enumerate() {
        script.push_str(&format!(
            "case \"$1\" in *{}*) git apply <<'GOLD_{i}'\n{}GOLD_{i}\n;; esac\n",
            shell_words(first),
            gold
        ));
    }
    script.push_str("echo done\n");
    backend(&script)
}

/// A glob pattern matching `line` literally enough: its first few words
/// without shell specials.
fn shell_words(line: &str) -> String {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .collect::<Vec<_>>()
        .join("*")
}

fn backend(script: &str) -> String {
    format!(
        "\n[[backend]]\nname = \"agent\"\ncommand = [\"bash\", \"-c\", {}, \"{{model}}\", \"{{prompt}}\"]\n",
        serde_json::to_string(script).unwrap()
    )
}

/// An arena.toml `[[backend]] name = "agent"`: on model `gold` it applies
/// the gold patch of the task of `pack` whose base its worktree is at (for
/// packs whose instructions do not tell the tasks apart, as a mined pack's
/// placeholders); on any other model it does nothing.
pub fn gold_agent_backend_for(pack: &Path) -> String {
    let mut script =
        String::from("[ \"$0\" = gold ] || { echo 'I looked and changed nothing'; exit 0; }\n");
    script.push_str("case \"$(git rev-parse HEAD)\" in\n");
    for entry in std::fs::read_dir(pack.join("tasks")).unwrap() {
        let dir = entry.unwrap().path();
        let toml = std::fs::read_to_string(dir.join("task.toml")).unwrap();
        let base = toml
            .lines()
            .find_map(|l| l.trim().strip_prefix("base_commit = "))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_else(|| panic!("no base_commit in {toml}"));
        let gold = std::fs::read_to_string(dir.join("solution/gold.patch")).unwrap();
        script.push_str(&format!("{base}) git apply <<'GOLD'\n{gold}GOLD\n;;\n"));
    }
    script.push_str("esac\necho done\n");
    backend(&script)
}
