//! The user's repository is out of every agent's reach: agents (a
//! `[[backend]]` script), the check command they write and refine rounds,
//! played as attackers against a real repository, on the real kernel
//! sandbox. After each attack the user's `.git` is byte-identical, nothing
//! outside the contestant's folder changed, and no secret reached a result.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use arena_core::battle::ContestantStatus;
use arena_core::config::CustomBackend;
use arena_core::Battle;
use arena_testserver::ModelScript;
use common::*;

/// Every file, link and folder under `dir` with its content (a link: its
/// target), for a byte-for-byte comparison.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if kind.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                folders.push(path);
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, target.to_string_lossy().as_bytes().to_vec());
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn git_out(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The user's repository: a `side` branch and a tag besides `main`.
fn users_repo() -> tempfile::TempDir {
    let project = repo_in(Path::new(env!("CARGO_TARGET_TMPDIR")));
    git(project.path(), &["branch", "side"]);
    git(project.path(), &["tag", "v1"]);
    project
}

/// Checks the user's repository is as it was: its `.git` byte-identical
/// and `git fsck` clean — but for the one change Arena itself makes when a
/// battle starts, `/Arena/` added to `info/exclude` (results kept out of
/// `git status`), and nothing else in that file.
fn assert_untouched(project: &Path, before: &BTreeMap<PathBuf, Vec<u8>>) {
    let after = snapshot(&project.join(".git"));
    let exclude = Path::new("info/exclude");
    let arenas_own = |k: &PathBuf| {
        let was = before
            .get(k)
            .map(|b| String::from_utf8_lossy(b).into_owned());
        let now = after
            .get(k)
            .map(|b| String::from_utf8_lossy(b).into_owned());
        match (was, now) {
            (Some(was), Some(now)) => {
                let mut want = was.clone();
                if !want.is_empty() && !want.ends_with('\n') {
                    want.push('\n');
                }
                want.push_str("# Arena battle results\n/Arena/\n");
                now == want
            }
            _ => false,
        }
    };
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .filter(|k| !(k.as_path() == exclude && arenas_own(k)))
        .collect();
    assert!(changed.is_empty(), "the user's .git changed: {changed:?}");
    let (ok, fsck) = git_out(project, &["fsck", "--no-dangling"]);
    assert!(ok, "{fsck}");
}

/// The harness with a `fake` backend running the bash `script` (`$1` is
/// the model name).
fn attacker(h: &mut Harness, script: &str) {
    let command = vec![
        "bash".into(),
        "-c".into(),
        script.to_string(),
        "agent".into(),
        "{model}".into(),
    ];
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command,
        }]
    });
    for model in ["m1", "m2"] {
        h.cloud.set_model(model, ModelScript::tokens(1));
    }
}

async fn battle(h: &Harness, project: &Path, check: Option<&str>) -> Battle {
    run_coding(h, project, &["fake@m1", "fake@m2"], check).await
}

trait Judge {
    async fn analyze_with_judge(&mut self, battle_id: &str);
}

impl Judge for Harness {
    /// Judges the battle with a `judge` model on the cloud server.
    async fn analyze_with_judge(&mut self, battle_id: &str) {
        self.cloud.set_model(
            "judge",
            ModelScript::respond_with(|_| r#"{"winner": "A"}"#.into()),
        );
        self.reconfigure(|config| config.default_model = Some("judge".into()));
        self.engine.analyze(battle_id, None).await.unwrap();
    }
}

fn sandboxed() -> bool {
    let ok = arena_core::agent::sandbox::supported();
    if !ok {
        eprintln!("skipped: this kernel has no Landlock");
    }
    ok
}

/// Prints `blocked NAME` or `ESCAPED NAME` for each attempt; `$P` is the
/// user's `.git`, found the way an attacker would (the alternates file).
const TRY: &str = r#"try() { if sh -c "$2" >/dev/null 2>&1; then echo "ESCAPED $1"; else echo "blocked $1"; fi; }
P=$(dirname "$(head -n1 .git/objects/info/alternates)")
"#;

fn output(c: &arena_core::Contestant) -> String {
    c.output.clone().unwrap_or_default()
}

#[tokio::test]
async fn the_users_history_refs_objects_hooks_and_config_are_out_of_reach() {
    if !sandboxed() {
        return;
    }
    let mut h = Harness::new().await;
    let project = users_repo();
    let before = snapshot(&project.path().join(".git"));
    let script = format!(
        r#"{TRY}
echo '#!/bin/sh' > backdoor.sh && git add backdoor.sh && git commit -qm backdoor && echo "committed"
try move-branch "git --git-dir=$P update-ref refs/heads/main HEAD"
try write-ref "echo $(git rev-parse HEAD) > $P/refs/heads/main"
try tag "git --git-dir=$P tag planted HEAD"
try delete-branch "git --git-dir=$P branch -D side"
try delete-ref "rm $P/refs/heads/side"
try replace "mkdir -p $P/refs/replace && git rev-parse HEAD > $P/refs/replace/$(git rev-parse HEAD:README.md)"
try delete-objects "rm -rf $P/objects/pack $P/objects/[0-9a-f][0-9a-f]"
try push-objects "cp -r .git/objects/[0-9a-f][0-9a-f] $P/objects/"
try read-refs "cat $P/refs/heads/main"
try list-refs "ls $P/refs"
try read-head "cat $P/HEAD"
try config "echo '[core] fsmonitor = touch /tmp/pwned' >> $P/config"
try hook "echo 'touch /tmp/pwned' > $P/hooks/post-checkout"
"#
    );
    attacker(&mut h, &script);
    let b = battle(&h, project.path(), None).await;
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let out = output(c);
        assert!(out.contains("committed"), "{out}");
        assert!(!out.contains("ESCAPED"), "{out}");
        for what in [
            "move-branch",
            "write-ref",
            "tag",
            "delete-branch",
            "delete-ref",
            "replace",
            "delete-objects",
            "push-objects",
            "read-refs",
            "list-refs",
            "read-head",
            "config",
            "hook",
        ] {
            assert!(out.contains(&format!("blocked {what}")), "{what}: {out}");
        }
    }
    assert_untouched(project.path(), &before);
    // Its commit is its own (and in its diff).
    let patch = std::fs::read_to_string(
        b.contestants[0]
            .result_path
            .as_ref()
            .unwrap()
            .with_file_name("diff.patch"),
    )
    .unwrap();
    assert!(patch.contains("b/backdoor.sh"), "{patch}");
}

#[tokio::test]
async fn contestants_never_see_each_others_commits_or_index() {
    if !sandboxed() {
        return;
    }
    let mut h = Harness::new().await;
    let project = users_repo();
    let before = snapshot(&project.path().join(".git"));
    // m1 commits a secret and stages another, then waits; m2 looks for them
    // everywhere it can for a few seconds.
    let script = format!(
        r#"{TRY}
if [ "$1" = m1 ]; then
  echo SECRET-A-COMMITTED > a.txt && git add a.txt && git commit -qm a
  echo SECRET-A-STAGED > staged.txt && git add staged.txt
  echo "m1 ready"; sleep 4
else
  for i in $(seq 1 16); do
    git cat-file --batch-all-objects --batch 2>/dev/null | grep -a -o 'SECRET-A-[A-Z]*'
    git --git-dir=$P cat-file --batch-all-objects --batch 2>/dev/null | grep -a -o 'SECRET-A-[A-Z]*'
    git --git-dir=$P log --all -p 2>/dev/null | grep -a -o 'SECRET-A-[A-Z]*'
    cat $P/worktrees/*/index 2>/dev/null | grep -a -o 'SECRET-A-[A-Z]*'
    grep -r -a -o 'SECRET-A-[A-Z]*' .. 2>/dev/null
    sleep 0.25
  done
  echo "m2 looked"
fi
"#
    );
    attacker(&mut h, &script);
    let b = battle(&h, project.path(), None).await;
    let (a, seeker) = (&b.contestants[0], &b.contestants[1]);
    assert!(output(a).contains("m1 ready"), "{}", output(a));
    let found = output(seeker);
    assert!(found.contains("m2 looked"), "{found}");
    assert!(!found.contains("SECRET-A"), "m2 saw m1's work: {found}");
    assert_untouched(project.path(), &before);
}

#[tokio::test]
async fn arena_follows_no_pointer_an_agent_wrote_in_its_repository() {
    if !sandboxed() {
        return;
    }
    let mut h = Harness::new().await;
    let project = users_repo();
    let before = snapshot(&project.path().join(".git"));
    // A stand-in for the user's home: a private key and a repository.
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().canonicalize().unwrap();
    std::fs::create_dir(home_path.join(".ssh")).unwrap();
    std::fs::write(home_path.join(".ssh/id_rsa"), "PRIVATE-KEY-9F3A\n").unwrap();
    let marks = tempfile::tempdir().unwrap();
    let (home_dir, mark) = (home_path.display(), marks.path().display());
    // m1 tampers with its repository in place; m2 replaces it with a
    // pointer to one planted elsewhere. Both leave a FIFO and a check
    // script that tries to write the "home".
    let script = format!(
        r#"{TRY}
mkfifo trap.fifo
printf 'echo x > {home_dir}/pwned-by-check; cat {home_dir}/.ssh/id_rsa\n' > attack-check.sh
echo "round $(ls .. 2>/dev/null | wc -l)" > /dev/null
try write-home "echo x > {home_dir}/pwned-by-agent"
if [ "$1" = m1 ]; then
  git config core.fsmonitor "touch {mark}/fsmonitor-ran; echo"
  git config core.worktree {home_dir}
  git config core.hooksPath .git/evil-hooks
  mkdir -p .git/evil-hooks && printf '#!/bin/sh\ntouch {mark}/hook-ran\n' > .git/evil-hooks/post-checkout
  cp .git/evil-hooks/post-checkout .git/hooks/post-checkout && chmod +x .git/evil-hooks/* .git/hooks/*
  echo {home_dir}/.ssh > .git/commondir
  echo {home_dir} > .git/objects/info/alternates
  mkdir -p .git/info && echo "$(git rev-parse HEAD)" > .git/info/grafts
  git replace -f "$(git rev-parse HEAD:README.md)" "$(echo REPLACED-TEXT | git hash-object -w --stdin)"
  mkfifo .git/packed-refs.fifo && ln -s ../trap.fifo .git/FETCH_HEAD
  ln -s {home_dir}/.ssh/id_rsa leak
  mkdir sub && echo "gitdir: {home_dir}" > sub/.git
  echo "m1 tampered"
else
  mkdir -p /tmp/planted-$$ && git init -q /tmp/planted-$$ 2>/dev/null
  rm -rf .git && echo "gitdir: {home_dir}" > .git
  echo "m2 replaced its repository"
fi
"#
    );
    attacker(&mut h, &script);
    let b = battle(&h, project.path(), Some("sh attack-check.sh")).await;
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        assert!(output(c).contains("blocked write-home"), "{}", output(c));
        let check = c.check.as_ref().expect("the check ran");
        assert!(!check.passed, "the check got out: {check:?}");
    }
    assert!(output(&b.contestants[0]).contains("m1 tampered"));
    assert!(output(&b.contestants[1]).contains("m2 replaced its repository"));

    // A refine round in each tampered worktree: the sandbox is built from
    // Arena's records, not from what the agent left.
    for c in &b.contestants {
        let round = tokio::time::timeout(
            Duration::from_secs(60),
            h.engine.refine(&b.id, &c.id, "Again."),
        )
        .await
        .expect("the round ends")
        .unwrap();
        assert!(
            round.output.contains("blocked write-home"),
            "{}",
            round.output
        );
    }
    for name in ["pwned-by-check", "pwned-by-agent"] {
        assert!(!home_path.join(name).exists(), "{name}");
    }

    // No secret in any result, and the battle's JSON has none either.
    let results = b.results_path.clone();
    for (path, bytes) in snapshot(&results) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("PRIVATE-KEY"), "{}: {text}", path.display());
        assert!(
            !text.contains("REPLACED-TEXT"),
            "{}: {text}",
            path.display()
        );
    }
    let shown = format!("{:?}", h.engine.battle(&b.id).await.unwrap());
    assert!(!shown.contains("PRIVATE-KEY"), "{shown}");
    // Nor in what the judge is sent (which includes the diffs).
    h.analyze_with_judge(&b.id).await;
    let asked: Vec<String> = h
        .cloud
        .requests_for("judge")
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        asked.iter().any(|t| t.contains("b/attack-check.sh")),
        "{asked:?}"
    );
    assert!(
        asked.iter().all(|t| !t.contains("PRIVATE-KEY")),
        "{asked:?}"
    );

    // The user opens each worktree: no fsmonitor, no hook runs, and git
    // sees Arena's repository (not the home, not a planted one).
    for c in &b.contestants {
        let wt = c.worktree.clone().unwrap();
        let (ok, status) = git_out(&wt, &["status", "--porcelain"]);
        assert!(ok, "{status}");
        assert!(!status.contains("id_rsa"), "{status}");
        let (ok, out) = git_out(&wt, &["checkout", "-q", "-b", "looked"]);
        assert!(ok, "{out}");
        let (_, top) = git_out(&wt, &["rev-parse", "--show-toplevel"]);
        assert_eq!(PathBuf::from(top.trim()), wt.canonicalize().unwrap());
        let (_, readme) = git_out(&wt, &["show", "HEAD:README.md"]);
        assert!(!readme.contains("REPLACED"), "{readme}");
    }
    for name in ["fsmonitor-ran", "hook-ran"] {
        assert!(!marks.path().join(name).exists(), "{name}");
    }
    assert_untouched(project.path(), &before);
}
