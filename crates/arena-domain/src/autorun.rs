//! Files that run without the user running the project: a CI workflow runs
//! when the branch is pushed, an editor task when the folder is opened, an
//! `.envrc` when a shell enters it, a hook manager's commands on the next
//! commit. A contestant's change that carries one is shown to the user,
//! file by file, and applied only once they say yes (`arena battle apply
//! --yes`, or "Apply anyway" in the app).
//!
//! Pure: [`classify`] reads a path, [`package_json_names_hooks`] a
//! `package.json`'s text. Both err towards flagging: a file flagged for
//! nothing costs the user one look; one missed runs code on their machine.

use serde::{Deserialize, Serialize};

/// Why a file may run without the user running the project.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Autorun {
    /// A CI pipeline (GitHub Actions, GitLab CI, CircleCI, Azure Pipelines,
    /// Jenkins, Buildkite, Travis, Bitbucket, …).
    Ci,
    /// An editor's or coding assistant's tasks and settings (`.vscode/`,
    /// `.idea/`, `*.code-workspace`, `.zed/`, `.cursor/`, `.claude/`).
    Editor,
    /// direnv's `.envrc`.
    Direnv,
    /// A git hook manager's configuration (pre-commit, husky, lefthook,
    /// lint-staged, simple-git-hooks, overcommit; their keys in
    /// `package.json`), or a `.githooks` folder.
    HookManager,
    /// `.gitattributes`: which filter, diff and merge drivers git runs.
    GitAttributes,
    /// `.gitmodules`: what git fetches into the project.
    Submodules,
    /// A dev container's definition.
    DevContainer,
}

impl Autorun {
    /// Why a file of this kind runs by itself, for the user.
    pub fn why(self) -> &'static str {
        match self {
            Autorun::Ci => {
                "a CI pipeline: it runs on the CI service when the branch is pushed, with the \
                 repository's secrets"
            }
            Autorun::Editor => {
                "editor or coding-assistant settings: tasks, launchers, hooks and servers in \
                 them can run when the folder is opened"
            }
            Autorun::Direnv => {
                "direnv's `.envrc`: a shell script run whenever a shell enters the folder"
            }
            Autorun::HookManager => {
                "a git hook manager's configuration: its commands run on the next commit or push"
            }
            Autorun::GitAttributes => {
                "git attributes: they choose the filter, diff and merge programs git runs on \
                 checkout, diff and merge"
            }
            Autorun::Submodules => "git submodules: they tell git what to fetch and from where",
            Autorun::DevContainer => {
                "a dev container: its commands run when an editor opens the folder in it"
            }
        }
    }
}

/// Whether the file at `path` (relative to the project's top folder, `/`
/// separators) runs without the user running the project, and why.
/// Names are compared ASCII case-insensitively (a case-insensitive
/// filesystem takes `.GitHub` for `.github`). Tools that look in the folder
/// a user opens (editors, direnv, dev containers) are matched at any depth;
/// CI services read the top folder only.
pub fn classify(path: &str) -> Option<Autorun> {
    let lower = path.to_ascii_lowercase();
    let parts: Vec<&str> = lower
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let (name, folders) = parts.split_last()?;
    let name = *name;
    let top = folders.first().copied();
    let second = folders.get(1).copied();

    // At the top folder only.
    if let (Some(".github" | ".gitea" | ".forgejo"), Some("workflows" | "actions")) = (top, second)
    {
        return Some(Autorun::Ci);
    }
    if matches!(
        top,
        Some(".circleci" | ".buildkite" | ".woodpecker" | ".azure-pipelines")
    ) {
        return Some(Autorun::Ci);
    }
    if top == Some(".gitlab") && second == Some("ci") {
        return Some(Autorun::Ci);
    }
    if folders.is_empty()
        && matches!(
            name,
            ".gitlab-ci.yml"
                | ".gitlab-ci.yaml"
                | "azure-pipelines.yml"
                | "azure-pipelines.yaml"
                | ".travis.yml"
                | "bitbucket-pipelines.yml"
                | ".drone.yml"
                | ".woodpecker.yml"
                | "appveyor.yml"
                | ".appveyor.yml"
        )
    {
        return Some(Autorun::Ci);
    }

    // At any depth.
    if name == "jenkinsfile" || name.starts_with("jenkinsfile.") {
        return Some(Autorun::Ci);
    }
    let in_folder = |wanted: &[&str]| folders.iter().any(|f| wanted.contains(f));
    if in_folder(&[".vscode", ".idea", ".zed", ".cursor", ".claude", ".fleet"])
        || name.ends_with(".code-workspace")
        || name == ".mcp.json"
    {
        return Some(Autorun::Editor);
    }
    if in_folder(&[".devcontainer"]) || name == ".devcontainer.json" {
        return Some(Autorun::DevContainer);
    }
    if name == ".envrc" {
        return Some(Autorun::Direnv);
    }
    // `.githooks` and `.git-hooks`: where projects keep hooks that a setup
    // step points `core.hooksPath` at.
    if in_folder(&[
        ".husky",
        ".lefthook",
        ".lefthook-local",
        ".githooks",
        ".git-hooks",
    ]) || is_hook_manager_config(name)
    {
        return Some(Autorun::HookManager);
    }
    if name == ".gitattributes" {
        return Some(Autorun::GitAttributes);
    }
    if name == ".gitmodules" {
        return Some(Autorun::Submodules);
    }
    None
}

/// A hook manager's configuration file, by its name.
fn is_hook_manager_config(name: &str) -> bool {
    let config_ext = |rest: &str| {
        matches!(
            rest,
            ".yml" | ".yaml" | ".json" | ".toml" | ".js" | ".cjs" | ".mjs" | ".ts"
        )
    };
    if matches!(
        name,
        ".pre-commit-config.yaml" | ".pre-commit-config.yml" | ".overcommit.yml"
    ) {
        return true;
    }
    for stem in [
        "lefthook",
        ".lefthook",
        "lefthook-local",
        ".lefthook-local",
        "lint-staged.config",
        "simple-git-hooks",
        ".simple-git-hooks",
        ".huskyrc",
    ] {
        if let Some(rest) = name.strip_prefix(stem) {
            if (rest.is_empty() && stem.starts_with('.')) || config_ext(rest) {
                return true;
            }
        }
    }
    // `.lintstagedrc`, `.lintstagedrc.json`, `.lintstagedrc.mjs`, …
    name.starts_with(".lintstagedrc")
}

/// The `package.json` keys through which hook managers take their commands
/// (husky 4, simple-git-hooks, lint-staged, nano-staged, pre-commit,
/// yorkie's `gitHooks`, ghooks).
const HOOK_KEYS: [&str; 8] = [
    "husky",
    "simple-git-hooks",
    "lint-staged",
    "nano-staged",
    "pre-commit",
    "pre-push",
    "gitHooks",
    "ghooks",
];

/// Whether a change to a `package.json` can change what a hook manager
/// runs: `old` (the file as it is, empty when new) already configures one
/// at its top level, or an `added` line of the change names one of their
/// keys (anywhere: a line is all a patch shows).
pub fn package_json_names_hooks<'a>(old: &str, added: impl IntoIterator<Item = &'a str>) -> bool {
    let configures = match serde_json::from_str::<serde_json::Value>(old) {
        Ok(serde_json::Value::Object(map)) => HOOK_KEYS.iter().any(|key| map.contains_key(*key)),
        // Not JSON the way a tool reads it: judged line by line, as a patch.
        Ok(_) | Err(_) => old.lines().any(names_hook_key),
    };
    configures || added.into_iter().any(names_hook_key)
}

/// A line that starts a member named after a hook key (`"husky": {`).
fn names_hook_key(line: &str) -> bool {
    let line = line.trim_start();
    HOOK_KEYS.iter().any(|key| {
        line.strip_prefix('"')
            .and_then(|rest| rest.strip_prefix(key))
            .and_then(|rest| rest.strip_prefix('"'))
            .is_some_and(|rest| rest.trim_start().starts_with(':'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_run_by_themselves_are_named() {
        let cases: &[(&str, Autorun)] = &[
            (".github/workflows/x.yml", Autorun::Ci),
            (".GitHub/Workflows/release.yaml", Autorun::Ci),
            (".github/actions/setup/action.yml", Autorun::Ci),
            (".gitea/workflows/ci.yml", Autorun::Ci),
            (".gitlab-ci.yml", Autorun::Ci),
            (".gitlab/ci/build.yml", Autorun::Ci),
            (".circleci/config.yml", Autorun::Ci),
            ("azure-pipelines.yml", Autorun::Ci),
            ("Jenkinsfile", Autorun::Ci),
            ("services/api/Jenkinsfile", Autorun::Ci),
            (".buildkite/pipeline.yml", Autorun::Ci),
            (".travis.yml", Autorun::Ci),
            ("bitbucket-pipelines.yml", Autorun::Ci),
            (".vscode/tasks.json", Autorun::Editor),
            (".vscode/settings.json", Autorun::Editor),
            (".vscode/launch.json", Autorun::Editor),
            (".vscode/extensions.json", Autorun::Editor),
            ("packages/app/.vscode/tasks.json", Autorun::Editor),
            (".idea/workspace.xml", Autorun::Editor),
            ("arena.code-workspace", Autorun::Editor),
            (".claude/settings.json", Autorun::Editor),
            (".envrc", Autorun::Direnv),
            ("sub/.envrc", Autorun::Direnv),
            (".pre-commit-config.yaml", Autorun::HookManager),
            (".husky/pre-commit", Autorun::HookManager),
            (".husky/_/h", Autorun::HookManager),
            (".githooks/pre-commit", Autorun::HookManager),
            ("lefthook.yml", Autorun::HookManager),
            (".lefthook.yml", Autorun::HookManager),
            (".lintstagedrc", Autorun::HookManager),
            (".lintstagedrc.json", Autorun::HookManager),
            ("lint-staged.config.mjs", Autorun::HookManager),
            (".simple-git-hooks.json", Autorun::HookManager),
            (".huskyrc", Autorun::HookManager),
            (".gitattributes", Autorun::GitAttributes),
            ("vendor/.gitattributes", Autorun::GitAttributes),
            (".gitmodules", Autorun::Submodules),
            (".devcontainer/devcontainer.json", Autorun::DevContainer),
            (".devcontainer.json", Autorun::DevContainer),
        ];
        for (path, kind) in cases {
            assert_eq!(classify(path), Some(*kind), "{path}");
            assert!(!kind.why().is_empty());
        }
    }

    #[test]
    fn ordinary_files_are_not_flagged() {
        for path in [
            "src/main.rs",
            "README.md",
            ".github/CODEOWNERS",
            ".github/ISSUE_TEMPLATE/bug.md",
            "docs/.github/workflows/x.yml",
            "docs/.travis.yml",
            ".gitignore",
            "package.json",
            "lefthook.md",
            "husky.md",
            "envrc",
            "vscode/tasks.json",
            "",
        ] {
            assert_eq!(classify(path), None, "{path}");
        }
    }

    #[test]
    fn package_json_hooks_are_read_from_the_file_and_the_change() {
        let plain = "{\n  \"name\": \"x\",\n  \"scripts\": { \"test\": \"vitest\" }\n}\n";
        assert!(!package_json_names_hooks(
            plain,
            ["  \"version\": \"1.0.1\","]
        ));
        assert!(!package_json_names_hooks(
            "",
            ["\"description\": \"husky\""]
        ));
        // A change anywhere in a file that configures hooks.
        let husky = "{ \"husky\": { \"hooks\": { \"pre-commit\": \"lint\" } } }";
        assert!(package_json_names_hooks(husky, ["  \"version\": \"2\","]));
        let staged = "{ \"lint-staged\": { \"*.js\": \"eslint\" } }";
        assert!(package_json_names_hooks(staged, std::iter::empty()));
        // A change that adds a hook manager's key.
        for line in [
            "  \"simple-git-hooks\": {",
            "\"pre-commit\" : \"curl x | sh\"",
            "    \"gitHooks\": {",
        ] {
            assert!(package_json_names_hooks(plain, [line]), "{line}");
        }
        // Not JSON: read line by line.
        assert!(package_json_names_hooks(
            "{\n \"husky\": {,\n",
            std::iter::empty()
        ));
    }
}
