//! Hidden means hidden (issue 40): a Coding battle whose git objects come
//! from a sealed repository of the task's base commit. The project has a
//! history beyond the base — the fix and its hidden tests in a later
//! commit, another branch, an annotated tag, a stash, reflog entries, a
//! dangling blob, packed and loose objects — and an agent (a `[[backend]]`
//! script in the real jail) and its check hunt for them every way they can:
//! `git log --all`, `rev-list --all --objects`, `cat-file
//! --batch-all-objects`, `fsck` for unreachable and dangling objects, the
//! reflog, the stash, every ref, every object folder on the alternates chain
//! or anywhere on disk (read with git, loose objects inflated by hand, every
//! pack indexed again from its bytes), the project's folder and Arena's
//! data folder by their paths, names and texts under every mount point of
//! the jail and every folder above its tree (the jail's `/` itself cannot
//! be listed), `/proc/*/cmdline` and `environ`. They find the base and nothing
//! of the future. The same hunt, run on the project outside any jail, finds
//! every secret: the hunt can see them when they are there.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use arena_core::battle::{BattleRequest, BattleType, ContestantSpec, ContestantStatus};
use arena_core::config::CustomBackend;
use arena_testserver::ModelScript;
use common::*;

/// What is in the project's history beyond the base, each a word the hunt
/// greps for.
const SECRETS: &[&str] = &[
    "FIX-7731",          // the fix's text
    "HIDDEN-TEST-9931",  // the hidden test's text
    "test_hidden_zq81",  // the hidden test's file name
    "FUTURE-MSG-2207",   // the future commit's message
    "OTHER-BRANCH-4410", // a file on another branch
    "TAG-MSG-5521",      // an annotated tag's message
    "STASH-TEXT-6612",   // a stash's content
    "DANGLING-8812",     // a blob nothing refers to
    "LOOSE-AFTER-3390",  // a loose object written after the pack
];

/// The base commit's message: the hunt must see it.
const BASE_SEEN: &str = "BASE-MSG-1180";

fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.email=a@b.invalid", "-c", "user.name=a"])
        .args(["-c", "gc.auto=0", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The project: an old commit, the base, then the future (returns the
/// project and the base's id).
fn project_with_a_future(parent: &Path) -> (tempfile::TempDir, String) {
    std::fs::create_dir_all(parent).unwrap();
    let dir = tempfile::tempdir_in(parent).unwrap();
    let p = dir.path();
    let write = |rel: &str, text: &str| {
        let path = p.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    git_in(p, &["init", "-q", "-b", "main"]);
    write("README.md", "# Calculator\n");
    git_in(p, &["add", "-A"]);
    git_in(p, &["commit", "-qm", "start"]);
    write("src/calc.py", "def add(a, b):\n    return a - b\n");
    write(
        "tests/test_calc.py",
        "from src.calc import add\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
    );
    git_in(p, &["add", "-A"]);
    git_in(
        p,
        &["commit", "-qm", &format!("{BASE_SEEN}: the calculator")],
    );
    let base = git_in(p, &["rev-parse", "HEAD"]);
    // Another branch, then everything so far packed.
    git_in(p, &["checkout", "-qb", "other"]);
    write("other.txt", "OTHER-BRANCH-4410\n");
    git_in(p, &["add", "-A"]);
    git_in(p, &["commit", "-qm", "another branch"]);
    git_in(p, &["checkout", "-q", "main"]);
    // The future: the fix and its hidden tests, tagged.
    write(
        "src/calc.py",
        "def add(a, b):\n    return a + b  # FIX-7731\n",
    );
    write(
        "tests/test_hidden_zq81.py",
        "# HIDDEN-TEST-9931\nfrom src.calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
    );
    git_in(p, &["add", "-A"]);
    git_in(p, &["commit", "-qm", "FUTURE-MSG-2207: fix add"]);
    git_in(p, &["tag", "-a", "v2", "-m", "TAG-MSG-5521"]);
    git_in(p, &["gc", "-q"]);
    // Loose objects after the pack, a stash, a dangling blob.
    write("NOTES.md", "LOOSE-AFTER-3390\n");
    git_in(p, &["add", "-A"]);
    git_in(p, &["commit", "-qm", "notes"]);
    write("src/calc.py", "STASH-TEXT-6612\n");
    git_in(p, &["stash", "-q"]);
    let dangling = Command::new("git")
        .args(["hash-object", "-w", "--stdin"])
        .current_dir(p)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        dangling
            .stdin
            .as_ref()
            .unwrap()
            .write_all(b"DANGLING-8812\n")
            .unwrap();
    }
    assert!(dangling.wait_with_output().unwrap().status.success());
    // The reflog has them all.
    assert!(git_in(p, &["reflog"]).contains("FUTURE-MSG-2207"));
    (dir, base)
}

/// The hunt's pattern, each word cut in two by quotes (`FIX-''7731`…),
/// so the script holds none of them whole and never finds itself.
fn pattern() -> String {
    let words: Vec<String> = SECRETS
        .iter()
        .chain(std::iter::once(&BASE_SEEN))
        .map(|w| {
            let (a, b) = w.split_at(w.len() / 2);
            format!("{a}''{b}")
        })
        .collect();
    format!("'{}'", words.join("|"))
}

/// The hunt: writes every secret it finds (`FOUND <where>: <secret>`) to
/// `$1`, with what it saw on the way. `HUNT_FS=0` leaves out the walk of the
/// whole file system (the control run outside the jail).
const HUNT: &str = r#"#!/bin/bash
out="$1"
scratch=$(mktemp -d)
# The pattern in a file: no process's command line carries it.
printf '%s\n' __PATTERN__ | tr '|' '\n' > "$scratch/pattern"
hits() { grep -aoF -f "$scratch/pattern" | sort -u | sed "s|^|FOUND $1: |"; }
{
echo "hunt started in $(pwd)"
git log --all --format='%H %s%n%b' 2>&1 | hits log-all
echo "rev-list-all $(git rev-list --all 2>/dev/null | wc -l)"
git rev-list --all --objects 2>&1 | hits rev-list-objects
git rev-list --all --objects 2>/dev/null | awk '{print $1}' | git cat-file --batch 2>/dev/null | hits rev-list-contents
echo "objects-seen $(git cat-file --batch-all-objects --batch-check 2>/dev/null | wc -l)"
git cat-file --batch-all-objects --batch 2>&1 | hits batch-all-objects
git fsck --lost-found 2>&1 | hits fsck
for id in $(git fsck --unreachable --dangling --no-reflogs 2>/dev/null | awk '{print $3}'); do git cat-file -p "$id"; done 2>&1 | hits unreachable
git reflog --all 2>&1 | hits reflog
git stash list 2>&1 | hits stash
git stash show -p 2>&1 | hits stash-show
git for-each-ref --format='%(refname) %(objectname) %(contents)' 2>&1 | hits refs
git tag -l -n9 2>&1 | hits tags
git branch -a 2>&1 | hits branches
git config -l 2>&1 | hits config
# Every object folder: the alternates chain, and any on disk.
dirs=$( { cat .git/objects/info/alternates 2>/dev/null; echo "$(pwd)/.git/objects";
  d=.git/objects; for i in 1 2 3 4 5 6; do a="$d/info/alternates"; [ -f "$a" ] || break; d=$(head -1 "$a"); echo "$d"; done;
  find / \( -path /proc -o -path /sys \) -prune -o -type d -name objects -print 2>/dev/null; } | sort -u)
for d in $dirs; do
  [ -d "$d" ] || continue
  echo "objects-dir $d"
  t="$scratch/alt$RANDOM$RANDOM"; git init -q --bare "$t"; echo "$d" > "$t/objects/info/alternates"
  git --git-dir="$t" cat-file --batch-all-objects --batch 2>/dev/null | hits "store $d"
  find "$d" -type f -path '*/[0-9a-f][0-9a-f]/*' 2>/dev/null | python3 -c '
import sys, zlib
for p in sys.stdin:
    try: sys.stdout.buffer.write(zlib.decompress(open(p.strip(), "rb").read()))
    except Exception: pass' | hits "loose $d"
  for pack in $(find "$d" -name '*.pack' 2>/dev/null); do
    echo "pack $pack"
    r="$scratch/pack$RANDOM$RANDOM"; git init -q --bare "$r"
    git --git-dir="$r" index-pack --stdin < "$pack" >/dev/null 2>&1
    git --git-dir="$r" cat-file --batch-all-objects --batch 2>/dev/null | hits "pack $pack"
  done
  ls -la "$d/.." 2>&1 | hits "beside $d"
  cat "$d/../packed-refs" "$d/../HEAD" "$d/../config" 2>&1 | hits "repo of $d"
  find "$d/../logs" "$d/../refs" -type f 2>/dev/null | xargs cat 2>/dev/null | hits "refs and logs of $d"
done
if [ "${HUNT_FS:-1}" = 1 ]; then
  prune='( -path /proc -o -path /sys -o -path /dev -o -path '"$scratch"' )'
  # Where to walk: every mount point of the jail, /, the home, the project
  # and Arena's data folder (as an agent that knows them would), and every
  # folder above the tree.
  roots=$( { awk '{print $5}' /proc/self/mountinfo; echo /; echo "$HOME"; echo __PROJECT__; echo __DATA__;
    dirname __PROJECT__; d=$(pwd); while [ "$d" != / ]; do echo "$d"; d=$(dirname "$d"); done; } | sort -u)
  echo "roots: $(echo $roots)"
  echo "project: $(ls -a __PROJECT__ 2>&1 | tr '\n' ' ')"
  echo "project-git: $(ls -a __PROJECT__/.git 2>&1 | tr '\n' ' ')"
  echo "data: $(ls -a __DATA__ 2>&1 | tr '\n' ' ')"
  for r in $roots; do find "$r" $prune -prune -o -print 2>/dev/null; done | sort -u > "$scratch/names"
  echo "names: $(wc -l < "$scratch/names")"
  hits names < "$scratch/names"
  # Texts: every file under 4 MB but the system's and the toolchains'.
  # (A toolchain's folder may itself be a root: its own path is matched too.)
  skip='( -path /usr -o -path /lib -o -path /lib64 -o -path /bin -o -path /sbin'
  for t in .rustup .cargo .pyenv .nvm .npm .peers node_modules go/pkg; do skip="$skip -o -path */$t -o -path */$t/*"; done
  skip="$skip )"
  for r in $roots; do find "$r" $prune -prune -o $skip -prune -o -type f -size -4M -print 2>/dev/null; done | sort -u > "$scratch/files"
  tr '\n' '\0' < "$scratch/files" | timeout 400 xargs -0 cat 2>/dev/null | hits texts
  echo "texts-walked $(wc -l < "$scratch/files") files"
  cat /proc/*/cmdline /proc/*/environ 2>/dev/null | tr '\0' '\n' | hits proc
  ls -la /proc/*/cwd /proc/*/root /proc/*/fd 2>&1 | hits proc-links
fi
echo "hunt ended"
} > "$out" 2>&1
rm -rf "$scratch"
"#;

fn found(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("FOUND ") && !l.ends_with(BASE_SEEN))
        .map(str::to_string)
        .collect()
}

/// Arena's own binary as the jail's inner layer, the reader and the
/// apply-first step, as in the app and the CLI (the workspace's `arena`
/// when it is built, or `ARENA_BIN`): the check's tree is then an overlay
/// of the sealed base's shared tree.
fn use_arena_binary() {
    let arena = std::env::var_os("ARENA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/arena"));
    let arena = arena_core::agent::sandbox::lexical(&arena);
    if arena.is_file() {
        arena_core::agent::jail::set_confiner(arena);
    }
}

#[tokio::test]
async fn an_agent_hunting_for_the_future_finds_only_the_base() {
    use_arena_binary();
    if let Err(why) = arena_core::agent::jail::jail_info() {
        assert!(
            std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
            "no jail: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    // Outside /tmp, as a user's project would be (a jail's /tmp is its own).
    let (project, base) =
        project_with_a_future(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("hidden"));
    let p = project.path();

    let mut h = Harness::new().await;
    let hunt_script = HUNT
        .replace("__PATTERN__", &pattern())
        .replace("__PROJECT__", &p.to_string_lossy())
        .replace("__DATA__", &h.data.path().to_string_lossy());
    // The control: the hunt finds every secret in the project itself.
    let outside = tempfile::tempdir().unwrap();
    let hunt = outside.path().join("hunt.sh");
    std::fs::write(&hunt, &hunt_script).unwrap();
    let control = outside.path().join("control.txt");
    let ran = Command::new("bash")
        .arg(&hunt)
        .arg(&control)
        .current_dir(p)
        .env("HUNT_FS", "0")
        .status()
        .unwrap();
    assert!(ran.success());
    let text = std::fs::read_to_string(&control).unwrap();
    for secret in SECRETS {
        assert!(
            text.contains(&format!(": {secret}")),
            "the hunt cannot see {secret} even in the project:\n{text}"
        );
    }

    let script = format!(
        "cat > hunt.sh <<'HUNT_EOF'\n{hunt_script}HUNT_EOF\nbash hunt.sh found.txt\necho agent done\n"
    );
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "hunter".into(),
            command: vec!["bash".into(), "-c".into(), script],
        }];
        config.limits.max_duration_secs = 900;
        config.limits.check_timeout_secs = 600;
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    let request = BattleRequest {
        battle_type: BattleType::Coding,
        project: p.to_path_buf(),
        prompt: "Fix add.".into(),
        contestants: ["hunter@m1", "hunter@m2"]
            .iter()
            .map(|c| ContestantSpec::parse(c).unwrap())
            .collect(),
        check_command: Some(
            "bash hunt.sh /tmp/check.txt; grep -E '^(FOUND|hunt|objects-seen|rev-list-all|names|texts)' /tmp/check.txt"
                .into(),
        ),
        blind: false,
        tags: Vec::new(),
    };
    let battle = h
        .engine
        .create_sealed_battle(request, &base)
        .await
        .expect("create a sealed battle");
    let sealed: PathBuf = h.data.path().join("sealed").join(&base);
    assert_eq!(battle.source.as_deref(), Some(sealed.as_path()));
    assert_eq!(battle.base_commit.as_deref(), Some(base.as_str()));
    // Recorded: another engine (a resume) reads it back.
    let again = h.second_engine().battle(&battle.id).await.unwrap();
    assert_eq!(again.source.as_deref(), Some(sealed.as_path()));

    let battle = tokio::time::timeout(Duration::from_secs(1200), h.engine.run_battle(&battle.id))
        .await
        .expect("the battle ends")
        .expect("run");
    for c in &battle.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let tree = c.worktree.clone().expect("a worktree");
        let text = std::fs::read_to_string(tree.join("found.txt")).expect("the hunt wrote");
        assert!(
            text.contains("hunt started") && text.contains("hunt ended"),
            "{text}"
        );
        // It really looked: the base is there, through git and on disk.
        assert!(
            text.contains(&format!("FOUND log-all: {BASE_SEEN}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("FOUND batch-all-objects: {BASE_SEEN}")),
            "{text}"
        );
        assert!(text.contains("objects-dir "), "{text}");
        assert!(text.contains("pack "), "{text}");
        let count = |what: &str| -> usize {
            text.lines()
                .find_map(|l| l.strip_prefix(what))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        assert!(count("names: ") > 1000, "the walk saw little:\n{text}");
        assert!(
            count("texts-walked ") > 100,
            "the walk read little:\n{text}"
        );
        eprintln!("{}: {text}", c.id);
        assert_eq!(
            found(&text),
            Vec::<String>::new(),
            "the agent found the future:\n{text}"
        );
        let check = c.check.as_ref().expect("the check ran");
        let tail = &check.output_tail;
        assert!(tail.contains("hunt started"), "{tail}");
        assert!(
            tail.contains(&format!("FOUND log-all: {BASE_SEEN}")),
            "{tail}"
        );
        assert_eq!(
            found(tail),
            Vec::<String>::new(),
            "the check found the future:\n{tail}"
        );
    }
}
