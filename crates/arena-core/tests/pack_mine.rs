//! `arena pack mine`, the static scan (issue 41): a scripted repository
//! (real git, fixed dates) with a commit of every kind; exactly the right
//! ones are candidates, each other one is dropped with its reason, and the
//! split patches apply on the base and give back the commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use arena_core::pack::mine::{mine, write_pack, MineOptions, MineReport};

mod common;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Repo {
    dir: PathBuf,
    day: u32,
}

impl Repo {
    fn new(dir: &Path) -> Repo {
        git(dir, &["init", "-q", "-b", "main"]);
        git(dir, &["config", "user.name", "Ada"]);
        git(dir, &["config", "user.email", "ada@example.org"]);
        git(dir, &["config", "commit.gpgsign", "false"]);
        Repo {
            dir: dir.to_path_buf(),
            day: 0,
        }
    }

    fn write(&self, path: &str, text: &str) {
        let p = self.dir.join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    fn commit_as(&mut self, subject: &str, name: &str, email: &str) -> String {
        self.day += 1;
        let date = format!("2024-01-01T{:02}:00:00+00:00", self.day);
        let date = if self.day >= 24 {
            format!("2024-01-02T{:02}:00:00+00:00", self.day - 24)
        } else {
            date
        };
        git(&self.dir, &["add", "-A"]);
        let out = Command::new("git")
            .args(["commit", "-q", "--allow-empty", "-m", subject])
            .current_dir(&self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", email)
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            .output()
            .expect("git commit");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        git(&self.dir, &["rev-parse", "HEAD"])
    }

    fn commit(&mut self, subject: &str) -> String {
        self.commit_as(subject, "Ada", "ada@example.org")
    }
}

const LIB_RS: &str = "pub fn double(x: i32) -> i32 {\n    x + x\n}\n\npub fn half(x: i32) -> i32 {\n    x / 2\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn doubles() {\n        assert_eq!(double(2), 4);\n    }\n}\n";

/// Builds the scripted history; returns the subjects expected as candidates.
fn scripted(dir: &Path) -> Repo {
    let mut r = Repo::new(dir);
    r.write(
        "pkg/calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    );
    r.write(
        "tests/test_calc.py",
        "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    r.write("src/lib.rs", LIB_RS);
    r.write("README.md", "calc\n");
    r.write("pkg/flaky.py", "READY = False\n");
    r.commit("Start the project");

    // A Python fix with its test.
    r.write("pkg/calc.py", "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    # None is refused.\n    if a is None:\n        raise ValueError('a')\n    return a - b\n");
    r.write("tests/test_calc.py", "from pkg.calc import add, sub\nimport pytest\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_sub_none():\n    with pytest.raises(ValueError):\n        sub(None, 1)\n");
    r.commit("Fix sub on None");

    // A feature with tests.
    r.write(
        "pkg/mul.py",
        "def mul(a, b):\n    out = 0\n    for _ in range(b):\n        out += a\n    return out\n",
    );
    r.write(
        "tests/test_mul.py",
        "from pkg.mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    );
    let feature = r.commit("Add mul");

    // Its revert.
    git(&r.dir, &["revert", "--no-edit", "--no-commit", &feature]);
    r.commit(&format!(
        "Revert \"Add mul\"\n\nThis reverts commit {feature}."
    ));

    // Formatting only (its test is touched too, so only the whitespace rule drops it).
    r.write("pkg/calc.py", "def add(a, b):\n    return a  +  b\n\n\ndef sub(a, b):\n    # None is refused.\n    if a is None:\n        raise ValueError('a')\n    return a   -   b\n");
    r.write("tests/test_calc.py", "from pkg.calc import add, sub\nimport pytest\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n\n\ndef test_sub_none():\n    with pytest.raises(ValueError):\n        sub(None, 1)\n");
    r.commit("Reformat calc");

    // A vendored change.
    r.write("vendor/six/six.py", "X = 1\nY = 2\nZ = 3\n");
    r.write("tests/test_six.py", "def test_six():\n    assert True\n");
    r.commit("Vendor six");

    // CI only.
    r.write(".github/workflows/ci.yml", "on: push\njobs: {}\n");
    r.commit("Add CI");

    // A bot's change.
    r.write("pkg/calc.py", "def add(a, b):\n    return a  +  b\n\n\ndef sub(a, b):\n    # None is refused.\n    if a is None:\n        raise ValueError('a is None')\n    return a   -   b\n\n\nVERSION = 2\n");
    r.write("tests/test_calc.py", "from pkg.calc import add, sub\nimport pytest\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n\n\ndef test_sub_none():\n    with pytest.raises(ValueError):\n        sub(None, 1)\n\n\ndef test_version():\n    pass\n");
    r.commit_as(
        "Bump the version",
        "dependabot[bot]",
        "49699333+dependabot[bot]@users.noreply.github.com",
    );

    // A Rust fix with its #[cfg(test)] hunk in the same file: split.
    r.write("src/lib.rs", &LIB_RS.replace("    x / 2\n", "    if x < 0 {\n        return -((-x) / 2);\n    }\n    x / 2\n").replace("        assert_eq!(double(2), 4);\n", "        assert_eq!(double(2), 4);\n    }\n\n    #[test]\n    fn halves_negatives() {\n        assert_eq!(half(-3), -1);\n"));
    r.commit("Round half toward zero for negatives");

    // A Rust hunk mixing a fix and a test module.
    let now = std::fs::read_to_string(r.dir.join("src/lib.rs")).expect("read");
    r.write("src/lib.rs", &format!("{now}\npub fn triple(x: i32) -> i32 {{\n    x * 3\n}}\n#[cfg(test)]\nmod more {{\n    #[test]\n    fn triples() {{\n        assert_eq!(super::triple(2), 6);\n    }}\n}}\n"));
    r.commit("Add triple");

    // A lockfile changes with the fix: kept, flagged.
    r.write("pkg/calc.py", "def add(a, b):\n    return a  +  b\n\n\ndef sub(a, b):\n    # None is refused, a and b alike.\n    if a is None:\n        raise ValueError('a is None')\n    if b is None:\n        raise ValueError('b is None')\n    return a   -   b\n\n\nVERSION = 2\n");
    r.write("tests/test_calc.py", "from pkg.calc import add, sub\nimport pytest\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n\n\ndef test_sub_none():\n    with pytest.raises(ValueError):\n        sub(None, 1)\n    with pytest.raises(ValueError):\n        sub(1, None)\n\n\ndef test_version():\n    pass\n");
    r.write(
        "poetry.lock",
        "# lock\n[[package]]\nname = \"pytest\"\nversion = \"8.0\"\n",
    );
    r.commit("Check b too, with pytest 8");

    // The lockfile changes again with a fix: its base's environment key
    // (the first lock) is no longer the current tree's, and preparing it
    // needs a tool this machine lacks.
    r.write("pkg/calc.py", "def add(a, b):\n    # A string is refused.\n    if isinstance(a, str):\n        raise TypeError('a is a string')\n    return a  +  b\n\n\ndef sub(a, b):\n    # None is refused, a and b alike.\n    if a is None:\n        raise ValueError('a is None')\n    if b is None:\n        raise ValueError('b is None')\n    return a   -   b\n\n\nVERSION = 2\n");
    r.write("tests/test_calc.py", "from pkg.calc import add, sub\nimport pytest\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n\n\ndef test_add_str():\n    with pytest.raises(TypeError):\n        add('1', 2)\n\n\ndef test_sub_none():\n    with pytest.raises(ValueError):\n        sub(None, 1)\n    with pytest.raises(ValueError):\n        sub(1, None)\n\n\ndef test_version():\n    pass\n");
    r.write(
        "poetry.lock",
        "# lock\n[[package]]\nname = \"pytest\"\nversion = \"8.1\"\n",
    );
    r.commit("Refuse strings in add, with pytest 8.1");

    // A branch merged with a merge commit: the merge is the unit.
    git(&r.dir, &["checkout", "-q", "-b", "feature"]);
    r.write(
        "pkg/div.py",
        "def div(a, b):\n    if b == 0:\n        return None\n    return a / b\n",
    );
    r.commit("div: the code");
    r.write(
        "tests/test_div.py",
        "from pkg.div import div\n\n\ndef test_div_zero():\n    assert div(1, 0) is None\n",
    );
    r.commit("div: the test");
    git(&r.dir, &["checkout", "-q", "main"]);
    r.write("NOTES.md", "notes\n");
    r.commit("Notes");
    git(
        &r.dir,
        &[
            "merge",
            "-q",
            "--no-ff",
            "feature",
            "-m",
            "Merge pull request from feature: div",
        ],
    );
    r.day += 1;

    // Too big.
    let big: String = (0..450).map(|i| format!("V{i} = {i}\n")).collect();
    r.write("pkg/big.py", &big);
    r.write("tests/test_big.py", "def test_big():\n    assert True\n");
    r.commit("Add a big table");

    // Generated, by its marker.
    r.write(
        "pkg/gen.py",
        "# @generated by protoc, DO NOT EDIT\nA = 1\nB = 2\nC = 3\n",
    );
    r.write("tests/test_gen.py", "def test_gen():\n    assert True\n");
    r.commit("Regenerate");

    // A flaky test: without the fix each of its cases passes one time in
    // two; with it, always.
    r.write(
        "pkg/flaky.py",
        "# Ready once the cache is warm.\nREADY = True\n\n\ndef ready():\n    return READY\n",
    );
    let cases: String = (0..8)
        .map(|i| {
            format!(
                "\n\ndef test_ready_{i}():\n    assert flaky.ready() or random.random() < 0.5\n"
            )
        })
        .collect();
    r.write(
        "tests/test_flaky.py",
        &format!("import random\n\nfrom pkg import flaky\n\nflaky.ready = getattr(flaky, 'ready', lambda: False){cases}"),
    );
    r.commit("Warm the cache before ready");

    // A gold that does not fix its test.
    r.write(
        "pkg/neg.py",
        "def neg(x):\n    # Not yet: the sign is kept.\n    return x\n",
    );
    r.write(
        "tests/test_neg.py",
        "from pkg.neg import neg\n\n\ndef test_neg():\n    assert neg(1) == -1\n",
    );
    r.commit("Add neg");
    r
}

/// Every object of the repository, reachable or not.
fn objects(dir: &Path) -> String {
    git(dir, &["cat-file", "--batch-all-objects", "--batch-check"])
}

fn by_subject(report: &MineReport) -> BTreeMap<String, usize> {
    report
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.subject.clone(), i))
        .collect()
}

/// base + test.patch + gold.patch is the commit's tree (checked on a fresh clone).
fn assert_split_reproduces(
    origin: &Path,
    work: &Path,
    base: &str,
    commit: &str,
    test: &str,
    gold: &str,
) {
    if !work.exists() {
        git(
            origin.parent().expect("a parent"),
            &[
                "clone",
                "-q",
                origin.to_str().expect("utf-8"),
                work.to_str().expect("utf-8"),
            ],
        );
    }
    git(work, &["checkout", "-q", "-f", base]);
    git(work, &["clean", "-qfdx"]);
    std::fs::write(work.join("../t.patch"), test).expect("write");
    std::fs::write(work.join("../g.patch"), gold).expect("write");
    git(work, &["apply", "--index", "../t.patch"]);
    git(work, &["apply", "--index", "../g.patch"]);
    let left = git(work, &["diff", "--cached", "--stat", commit]);
    assert_eq!(left, "", "base + test + gold differs from {commit}");
}

#[test]
fn a_scripted_history_yields_exactly_its_candidates() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let origin = tmp.path().join("origin");
    std::fs::create_dir_all(&origin).expect("mkdir");
    scripted(&origin);
    let objects_before = objects(&origin);
    let report = mine(&MineOptions {
        project: origin.clone(),
        ..MineOptions::default()
    })
    .expect("mines");

    // The split writes nothing into the project: its objects are as they were.
    assert_eq!(objects(&origin), objects_before);
    let subjects = by_subject(&report);
    let names: Vec<&str> = report.tasks.iter().map(|t| t.subject.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "Add neg",
            "Warm the cache before ready",
            "Merge pull request from feature: div",
            "Refuse strings in add, with pytest 8.1",
            "Check b too, with pytest 8",
            "Round half toward zero for negatives",
            "Add mul",
            "Fix sub on None",
        ],
        "the candidates, newest first"
    );
    let expected: BTreeMap<String, usize> = [
        ("generated_or_vendored", 2),
        ("too_big", 1),
        ("no_tests", 1), // "Notes"
        ("mixed_test_hunk", 1),
        ("bot", 1),
        ("ci_only", 1),
        ("formatting_only", 1),
        ("revert", 1),
        ("no_parent", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(report.dropped, expected);
    // The branch's own commits are not walked: only the first-parent line.
    assert_eq!(report.scanned, 8 + 10);
    assert_eq!(report.candidates, 8);

    let lock = &report.tasks[subjects["Check b too, with pytest 8"]];
    assert_eq!(lock.environment_changes, vec!["poetry.lock".to_string()]);
    assert_eq!(lock.ecosystem, arena_domain::mining::Ecosystem::Python);
    assert_eq!(lock.files, vec!["pkg/calc.py".to_string()]);
    assert_eq!(lock.lines, 4);
    assert!(
        lock.committed_at.starts_with("2024-01-01T11:00:00"),
        "{}",
        lock.committed_at
    );

    let merge = &report.tasks[subjects["Merge pull request from feature: div"]];
    assert_eq!(merge.files, vec!["pkg/div.py".to_string()]);
    assert_eq!(merge.test_files, vec!["tests/test_div.py".to_string()]);
    assert!(merge.environment_changes.is_empty());

    // The Rust split: the test module's hunk is the test patch, the fix the gold.
    let rust = &report.tasks[subjects["Round half toward zero for negatives"]];
    assert_eq!(rust.ecosystem, arena_domain::mining::Ecosystem::Rust);
    assert_eq!(rust.files, vec!["src/lib.rs".to_string()]);
    assert_eq!(rust.test_files, vec!["src/lib.rs".to_string()]);
    assert_eq!(rust.lines, 3);
    assert!(rust.test_patch.contains("+    fn halves_negatives() {"));
    assert!(!rust.test_patch.contains("return -((-x) / 2);"));
    assert!(rust.gold_patch.contains("+        return -((-x) / 2);"));
    assert!(!rust.gold_patch.contains("halves_negatives"));
    assert_eq!(rust.test_patch_bytes, rust.test_patch.len());

    let py = &report.tasks[subjects["Fix sub on None"]];
    assert!(py.test_patch.contains("tests/test_calc.py") && !py.test_patch.contains("pkg/calc.py"));
    assert!(py.gold_patch.contains("pkg/calc.py") && !py.gold_patch.contains("tests/test_calc.py"));

    // Every split applies on its base and gives back the commit.
    let work = tmp.path().join("work");
    for t in &report.tasks {
        assert_split_reproduces(
            &origin,
            &work,
            &t.base,
            &t.commit,
            &t.test_patch,
            &t.gold_patch,
        );
    }
    assert!(report.seconds_per_stage.contains_key("walk"));
}

/// The agent-side repository of every candidate (its base sealed, as a
/// pack run seals it) holds none of the objects its commit brings: not the
/// gold patch's blobs, not the hidden tests', not the commit itself.
#[test]
fn a_sealed_base_holds_nothing_of_its_commit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let origin = tmp.path().join("origin");
    std::fs::create_dir_all(&origin).expect("mkdir");
    scripted(&origin);
    let report = mine(&MineOptions {
        project: origin.clone(),
        ..MineOptions::default()
    })
    .expect("mines");
    assert!(!report.tasks.is_empty());
    for t in &report.tasks {
        let sealed = arena_core::agent::seal::seal(&origin, &t.base, &tmp.path().join(&t.base))
            .expect("seals");
        let new = git(
            &origin,
            &[
                "rev-list",
                "--objects",
                &format!("{}..{}", t.base, t.commit),
            ],
        );
        let new: Vec<&str> = new
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(new.contains(&t.commit.as_str()), "{new:?}");
        for object in new {
            let found = Command::new("git")
                .args(["cat-file", "-e", object])
                .current_dir(&sealed.path)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env_remove("GIT_DIR")
                .output()
                .expect("git runs");
            assert!(
                !found.status.success(),
                "{}: the sealed base of {} holds {object}",
                t.subject,
                t.commit
            );
        }
        // And it does hold its base.
        let base = Command::new("git")
            .args(["cat-file", "-e", &format!("{}^{{tree}}", t.base)])
            .current_dir(&sealed.path)
            .output()
            .expect("git runs");
        assert!(base.status.success(), "the sealed base lacks its own tree");
    }
}

#[test]
fn limit_and_dates_bound_the_scan() {
    let tmp = tempfile::tempdir().expect("tempdir");
    scripted(tmp.path());
    let two = mine(&MineOptions {
        project: tmp.path().to_path_buf(),
        limit: Some(2),
        ..MineOptions::default()
    })
    .expect("mines");
    assert_eq!(two.candidates, 2);
    assert_eq!(two.tasks[1].subject, "Warm the cache before ready");
    let early = mine(&MineOptions {
        project: tmp.path().to_path_buf(),
        until: Some("2024-01-01T05:30:00+00:00".into()),
        ..MineOptions::default()
    })
    .expect("mines");
    let names: Vec<&str> = early.tasks.iter().map(|t| t.subject.as_str()).collect();
    assert_eq!(names, vec!["Add mul", "Fix sub on None"]);
    assert_eq!(early.scanned, 5);
}

#[test]
fn progress_is_told_and_a_cancel_stops_the_scan() {
    let tmp = tempfile::tempdir().expect("tempdir");
    scripted(tmp.path());
    let mut seen: Vec<arena_core::pack::mine::MineProgress> = Vec::new();
    let report = arena_core::pack::mine::mine_with_progress(
        &MineOptions {
            project: tmp.path().to_path_buf(),
            ..MineOptions::default()
        },
        |p| seen.push(p.clone()),
    )
    .expect("mines");
    let stages: Vec<&str> = seen.iter().map(|p| p.stage.as_str()).collect();
    assert_eq!(stages, vec!["scan", "split", "done"]);
    let last = seen.last().expect("a last report");
    assert_eq!(last.scanned, report.scanned as u64);
    assert_eq!(last.candidates, 8);
    assert_eq!(last.dropped.get("revert"), Some(&1));
    assert!(seen[0].current.is_some(), "the scan names its commit");
    assert!(!report.cancelled);

    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut last_stage = String::new();
    let stopped = arena_core::pack::mine::mine_with_progress(
        &MineOptions {
            project: tmp.path().to_path_buf(),
            cancel: Some(cancel),
            ..MineOptions::default()
        },
        |p| last_stage = p.stage.clone(),
    )
    .expect("a cancelled run still reports");
    assert!(stopped.cancelled);
    assert_eq!(stopped.scanned, 0);
    assert_eq!(last_stage, "cancelled");
}

#[test]
fn a_mined_pack_is_not_validated_yet() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let origin = tmp.path().join("origin");
    std::fs::create_dir_all(&origin).expect("mkdir");
    scripted(&origin);
    let report = mine(&MineOptions {
        project: origin.clone(),
        ..MineOptions::default()
    })
    .expect("mines");
    let out = tmp.path().join("pack");
    let written =
        write_pack(&report, &origin, &out, Some("python -m pytest".into())).expect("writes");
    assert_eq!(written.tasks.len(), 8);
    let pack = arena_core::pack::Pack::load(&out).expect("loads");
    assert_eq!(pack.tasks.len(), 8);
    for task in &pack.tasks {
        let defect = task.defect().expect("a mined task is not runnable yet");
        assert!(defect.contains("FAIL_TO_PASS"), "{defect}");
        let instruction =
            std::fs::read_to_string(task.dir.join("instruction.md")).expect("instruction");
        assert!(instruction.contains("not validated yet"));
    }
}

/// 10,000 commits through `git fast-import`, then the scan timed.
/// `cargo test --release -p arena-core --test pack_mine -- --ignored --nocapture scan_10k`
#[test]
#[ignore = "a benchmark: prints the time of scanning 10,000 commits"]
fn scan_10k() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    git(dir, &["init", "-q", "-b", "main"]);
    let mut stream = String::new();
    let n = 10_000;
    for i in 0..n {
        let msg = format!("Change {i}");
        stream.push_str(&format!(
            "commit refs/heads/main\nmark :{m}\ncommitter Ada <ada@example.org> {t} +0000\ndata {len}\n{msg}\n",
            m = i + 1,
            t = 1_700_000_000 + i * 60,
            len = msg.len(),
        ));
        if i > 0 {
            stream.push_str(&format!("from :{i}\n"));
        }
        let module = i % 50;
        let code = format!(
            "def f{module}(x):\n    return x + {i}\n\n\ndef g{module}(x):\n    return x * {i}\n"
        );
        stream.push_str(&format!(
            "M 100644 inline pkg/m{module}.py\ndata {}\n{code}\n",
            code.len()
        ));
        // One commit in ten changes a test: about the share of real histories.
        if i % 10 == 0 {
            let test = format!("def test_f{module}():\n    assert {i} == {i}\n");
            stream.push_str(&format!(
                "M 100644 inline tests/test_m{module}.py\ndata {}\n{test}\n",
                test.len()
            ));
        }
        if i % 7 == 0 {
            let rs = format!("pub fn v() -> u64 {{\n    {i}\n}}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn v() {{\n        assert_eq!(super::v(), {i});\n    }}\n}}\n");
            stream.push_str(&format!(
                "M 100644 inline src/m{module}.rs\ndata {}\n{rs}\n",
                rs.len()
            ));
        }
    }
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("fast-import");
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stream.as_bytes())
            .expect("feed");
    }
    assert!(child.wait().expect("waits").success());
    git(dir, &["checkout", "-q", "-f", "main"]);
    let started = Instant::now();
    let report = mine(&MineOptions {
        project: dir.to_path_buf(),
        ..MineOptions::default()
    })
    .expect("mines");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "scanned {} commits in {secs:.2} s: {} candidates, dropped {:?}, stages {:?}",
        report.scanned, report.candidates, report.dropped, report.seconds_per_stage
    );
    assert_eq!(report.scanned, n as usize);
    assert!(report.candidates > 0);
    assert!(secs <= 30.0, "{secs} s");
}

/// The peers' virtualenv's Python, when it has pytest (scripts/peers.sh
/// installs it from the Python package index).
fn pytest_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("ARENA_REQUIRE_PYTEST").is_none(),
            "no pytest in {} (scripts/peers.sh installs it)",
            python.display()
        );
        eprintln!("skipped: no pytest in {}", python.display());
        return None;
    }
    // Named without `..`: the jail binds the path itself.
    Some(arena_core::agent::sandbox::lexical(&python))
}

/// The jail's inner layer and the apply-first step are Arena's own binary,
/// as in the app and the CLI (the workspace's `arena` when it is built).
fn jail_ready() -> bool {
    let arena = std::env::var_os("ARENA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/arena"));
    let arena = arena_core::agent::sandbox::lexical(&arena);
    if arena.is_file() {
        arena_core::agent::jail::set_confiner(arena);
    }
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

/// Validation by running, on the scripted history with real pytest in the
/// real jail: exactly the tasks that should be are validated (with their
/// FAIL_TO_PASS and PASS_TO_PASS), and every other candidate is dropped
/// with its reason — the flaky test, the gold that does not fix its test,
/// the lockfile whose environment cannot be prepared, the Rust change
/// whose tests the Python runner does not run. The written pack keeps
/// the RED output and the commit message beside each task's tests.
#[tokio::test]
async fn validation_by_running_keeps_exactly_the_tasks_it_should() {
    let Some(python) = pytest_python() else {
        return;
    };
    if !jail_ready() {
        return;
    }
    let h = common::Harness::new().await;
    // Outside /tmp, as a user's project is.
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mine");
    std::fs::create_dir_all(&parent).expect("mkdir");
    let tmp = tempfile::tempdir_in(&parent).expect("tempdir");
    let origin = tmp.path().join("origin");
    std::fs::create_dir_all(&origin).expect("mkdir");
    scripted(&origin);
    let mut progress = Vec::new();
    let started = Instant::now();
    let run = h
        .engine
        .mine_with_progress(
            &MineOptions {
                project: origin.clone(),
                ..MineOptions::default()
            },
            &arena_core::ValidateOptions {
                test_command: Some(format!(
                    "{} -m pytest -p no:cacheprovider",
                    python.display()
                )),
                ..arena_core::ValidateOptions::default()
            },
            |p| progress.push(p.clone()),
        )
        .await
        .expect("mines");
    eprintln!("{}", run.yield_table());
    eprintln!("{:#?}", run.dropped_candidates);
    let validated: Vec<&str> = run.tasks.iter().map(|t| t.task.subject.as_str()).collect();
    assert_eq!(
        validated,
        vec![
            "Merge pull request from feature: div",
            "Check b too, with pytest 8",
            "Add mul",
            "Fix sub on None",
        ],
        "the validated tasks, newest first"
    );
    let reasons: BTreeMap<&str, &str> = run
        .dropped_candidates
        .iter()
        .map(|d| (d.subject.as_str(), d.reason.as_str()))
        .collect();
    let expected: BTreeMap<&str, &str> = [
        ("Add neg", "gold_fails"),
        ("Warm the cache before ready", "flaky_fail_to_pass"),
        (
            "Refuse strings in add, with pytest 8.1",
            "environment_not_prepared",
        ),
        ("Round half toward zero for negatives", "no_fail_to_pass"),
    ]
    .into_iter()
    .collect();
    assert_eq!(reasons, expected);
    assert_eq!(run.validated, 4);
    assert_eq!(run.tried, 8);
    assert_eq!(run.dropped.get("gold_fails"), Some(&1));
    assert_eq!(run.dropped.get("revert"), Some(&1), "the scan's drops stay");
    assert_eq!(run.instructions_approved, 0);

    let by = |subject: &str| {
        run.tasks
            .iter()
            .find(|t| t.task.subject == subject)
            .expect("validated")
    };
    let check_b = by("Check b too, with pytest 8");
    let names = |v: &[String]| {
        v.iter()
            .map(|n| n.rsplit(['.', ':']).next().unwrap_or(n).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&check_b.fail_to_pass), vec!["test_sub_none"]);
    assert_eq!(
        names(&check_b.pass_to_pass),
        vec!["test_add", "test_version"]
    );
    assert_eq!(check_b.runs.get("gold"), Some(&3));
    assert_eq!(check_b.runs.get("base"), Some(&3));
    assert!(
        check_b.red_output.contains("test_sub_none"),
        "{}",
        check_b.red_output
    );
    // A new test file: nothing of it on the base, so nothing to keep passing.
    let div = by("Merge pull request from feature: div");
    assert_eq!(names(&div.fail_to_pass), vec!["test_div_zero"]);
    assert!(div.pass_to_pass.is_empty());
    let flaky = run
        .dropped_candidates
        .iter()
        .find(|d| d.reason == "flaky_fail_to_pass")
        .expect("the flaky one");
    assert!(
        flaky.detail.iter().all(|t| t.contains("test_ready_")),
        "{:?}",
        flaky.detail
    );

    // Progress: the scan, each candidate named, the end.
    assert_eq!(progress.first().map(|p| p.stage.as_str()), Some("scan"));
    assert!(progress
        .iter()
        .any(|p| p.stage == "validate"
            && p.current.as_deref().is_some_and(|c| c.contains("Add neg"))));
    let last = progress.last().expect("a last report");
    assert_eq!((last.stage.as_str(), last.validated), ("done", 4));
    eprintln!(
        "validated the scripted history in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The pack: tests.json filled, and what the instruction's writer reads.
    let entries: Vec<arena_core::pack::mine::PackEntry> = run
        .tasks
        .iter()
        .map(arena_core::ValidatedTask::entry)
        .collect();
    let out = tmp.path().join("pack");
    arena_core::pack::mine::write_entries(&entries, &origin, &out, None).expect("writes");
    let pack = arena_core::pack::Pack::load(&out).expect("loads");
    assert_eq!(pack.tasks.len(), 4);
    for task in &pack.tasks {
        assert_eq!(task.defect(), None, "a validated task runs as written");
        let red = std::fs::read_to_string(task.dir.join(arena_core::pack::mine::RED_OUTPUT_FILE))
            .expect("the RED output");
        assert!(red.contains("failed") || red.contains("error"), "{red}");
        let message =
            std::fs::read_to_string(task.dir.join(arena_core::pack::mine::COMMIT_MESSAGE_FILE))
                .expect("the commit message");
        assert!(!message.trim().is_empty());
    }
}

/// A Rust crate's history for validation: its code denies warnings and
/// holds one (as old code meets a lint a newer compiler added), a fix of
/// `triple` in a module only the `extra` feature compiles, a fix of `add`
/// with a new integration test, and a new `double` with a test in the
/// library's own test module.
fn rust_history(dir: &Path) -> Repo {
    let mut repo = Repo::new(dir);
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[features]\nextra = []\n",
    );
    repo.write(
        "Cargo.lock",
        "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"calc\"\nversion = \"0.1.0\"\n",
    );
    let lib = |add: &str, double: &str, tests: &str| {
        format!(
            "#![deny(warnings)]\n\n#[cfg(feature = \"extra\")]\npub mod extra;\n\nfn helper_nobody_calls() {{}}\n\npub fn add(a: i32, b: i32) -> i32 {{\n    {add}\n}}\n{double}\n\n\n\n\n\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    #[test]\n    fn adds_nothing() {{\n        assert_eq!(add(0, 0), 0);\n    }}\n{tests}}}\n"
        )
    };
    repo.write(
        "src/lib.rs",
        &lib("let difference = a - b;\n    difference", "", ""),
    );
    repo.write(
        "tests/add.rs",
        "#[test]\nfn adds_zero() {\n    assert_eq!(calc::add(1, 0), 1);\n}\n",
    );
    let extra = |body: &str, tests: &str| {
        format!(
            "pub fn triple(x: i32) -> i32 {{\n    {body}\n}}\n\n\n\n\n\n\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    #[test]\n    fn triples_zero() {{\n        assert_eq!(triple(0), 0);\n    }}\n{tests}}}\n"
        )
    };
    repo.write(
        "src/extra.rs",
        &extra("let factor = 2;\n    x * factor", ""),
    );
    repo.write(".gitignore", "target/\n");
    repo.commit("Start");
    repo.write(
        "src/extra.rs",
        &extra(
            "let factor = 3;\n    let tripled = x * factor;\n    tripled",
            "\n    #[test]\n    fn triples_two() {\n        assert_eq!(triple(2), 6);\n    }\n",
        ),
    );
    repo.commit("Fix triple, behind the extra feature");
    repo.write("src/lib.rs", &lib("let sum = a + b;\n    sum", "", ""));
    repo.write(
        "tests/add.rs",
        "#[test]\nfn adds_zero() {\n    assert_eq!(calc::add(1, 0), 1);\n}\n\n#[test]\nfn adds_two() {\n    assert_eq!(calc::add(2, 2), 4);\n}\n",
    );
    repo.commit("Fix add: it subtracted");
    repo.write(
        "src/lib.rs",
        &lib(
            "let sum = a + b;\n    sum",
            "\npub fn double(x: i32) -> i32 {\n    x * 2\n}\n",
            "\n    #[test]\n    fn doubles() {\n        assert_eq!(double(3), 6);\n    }\n",
        ),
    );
    repo.commit("Add double");
    repo
}

/// The detected Rust command caps lints at warnings, unless the project's
/// cargo configuration sets its own rustflags (which the variable would
/// override).
#[test]
fn a_rust_base_is_tested_with_its_lints_capped_unless_it_sets_rustflags() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut repo = rust_history(tmp.path());
    let (command, because) = arena_core::pack::mine::test_command_at(tmp.path(), "HEAD")
        .expect("reads")
        .expect("a command");
    assert_eq!(command, "RUSTFLAGS=--cap-lints=warn cargo test");
    assert!(
        because.contains("Cargo.toml") && because.contains("lints capped"),
        "{because}"
    );
    repo.write(
        ".cargo/config.toml",
        "[build]\nrustflags = [\"--cfg\", \"calc_fast\"]\n",
    );
    repo.commit("Build with calc_fast");
    let (command, _) = arena_core::pack::mine::test_command_at(tmp.path(), "HEAD")
        .expect("reads")
        .expect("a command");
    assert_eq!(command, "cargo test");
}

/// Validation of a Rust history with real cargo in the real jail, the test
/// command detected: every candidate validates with the right lists (the
/// feature-gated one run with `--features extra`). RED
/// builds apart from GOLD: with one target folder for both, RED would take
/// the library GOLD built (its fixed `add` from files the base left older)
/// and pass, and the fix would be dropped with no FAIL_TO_PASS. The build
/// folders go when the run ends.
#[tokio::test]
async fn a_rust_history_validates_with_each_stage_built_apart() {
    if !jail_ready() {
        return;
    }
    let h = common::Harness::new().await;
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mine");
    std::fs::create_dir_all(&parent).expect("mkdir");
    let tmp = tempfile::tempdir_in(&parent).expect("tempdir");
    rust_history(tmp.path());
    // The user has built it: with a `target` of the project's, each tree
    // works at the project's own path, as it is tested where it is.
    std::fs::create_dir_all(tmp.path().join("target/debug")).expect("mkdir");
    let run = h
        .engine
        .mine_with_progress(
            &MineOptions {
                project: tmp.path().to_path_buf(),
                ..MineOptions::default()
            },
            &arena_core::ValidateOptions::default(),
            |_| {},
        )
        .await
        .expect("mines");
    eprintln!("{}", run.yield_table());
    assert!(
        run.dropped_candidates.is_empty(),
        "{:#?}",
        run.dropped_candidates
    );
    let lists: Vec<(&str, Vec<String>, Vec<String>)> = run
        .tasks
        .iter()
        .map(|t| {
            let last = |v: &[String]| {
                v.iter()
                    .map(|n| n.rsplit("::").next().unwrap_or(n).to_string())
                    .collect::<Vec<_>>()
            };
            (
                t.task.subject.as_str(),
                last(&t.fail_to_pass),
                last(&t.pass_to_pass),
            )
        })
        .collect();
    assert_eq!(
        lists,
        vec![
            // RED's library tests do not build without `double`: each
            // fails there, as SWE-bench counts a test that cannot run.
            (
                "Add double",
                vec!["adds_nothing".to_string(), "doubles".to_string()],
                Vec::new()
            ),
            (
                "Fix add: it subtracted",
                vec!["adds_two".to_string()],
                vec!["adds_zero".to_string()]
            ),
            // Its tests run only with the feature that gates its module.
            (
                "Fix triple, behind the extra feature",
                vec!["triples_two".to_string()],
                vec!["triples_zero".to_string(), "adds_nothing".to_string()]
            ),
        ]
    );
    // Each task's own command: the detected one, with the features its
    // tests need (a pack run's verifier runs it as it is).
    let commands: Vec<&str> = run.tasks.iter().map(|t| t.test_command.as_str()).collect();
    assert_eq!(
        commands,
        vec![
            "RUSTFLAGS=--cap-lints=warn cargo test",
            "RUSTFLAGS=--cap-lints=warn cargo test",
            "RUSTFLAGS=--cap-lints=warn cargo test --features extra",
        ]
    );
    // The pack keeps each task's command.
    let entries: Vec<arena_core::pack::mine::PackEntry> = run
        .tasks
        .iter()
        .map(arena_core::ValidatedTask::entry)
        .collect();
    let out = tmp.path().join("pack");
    arena_core::pack::mine::write_entries(&entries, tmp.path(), &out, None).expect("writes");
    let pack = arena_core::pack::Pack::load(&out).expect("loads");
    let mut kept: Vec<String> = pack
        .tasks
        .iter()
        .filter_map(|t| t.meta.test_command.clone())
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        vec![
            "RUSTFLAGS=--cap-lints=warn cargo test",
            "RUSTFLAGS=--cap-lints=warn cargo test",
            "RUSTFLAGS=--cap-lints=warn cargo test --features extra",
        ]
    );
    let mining = h.data.path().join("mining");
    let left: Vec<_> = std::fs::read_dir(&mining)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "build folders left: {left:?}");
}
