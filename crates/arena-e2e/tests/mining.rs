//! "Mine my history" on the Packs screen (issue 41): a scripted Python
//! history (real git, real pytest in the real jail) mined from the app.
//! The form shows the detected test command and says plainly when a cloud
//! writer would take the code off the machine; the progress shows the
//! stage, the counts and the commit being run; the yield shows the two
//! validated tasks, the drops by reason — a revert, a commit with no test
//! and the first commit dropped by the scan, a fix that does not pass its
//! own tests dropped by running — the instructions written by the
//! scripted local writer (its first answer fails, so one task is left
//! for "Write instructions", which writes it), and the review opens, where
//! an approval is counted back into the yield.
//!
//! Needs a display, the drivers, bubblewrap, and pytest in the peers'
//! virtualenv (`scripts/peers.sh` installs it); see the crate docs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_core::InstructionCounts;
use arena_e2e::arena_testserver::{Fault, ModelScript, TestServer};
use arena_e2e::{config_toml, App, Harness, ProviderEntry, MODEL, PROVIDER};

/// Three candidates, each run up to nine times in the jail.
const MINE_TIMEOUT: Duration = Duration::from_secs(600);

/// What the scripted writer answers: the behaviour, in words that name
/// no fix, test or command (the audit passes it).
const BEHAVIOUR: &str = "The project does not behave as its new checks expect.\n\n\
                         Make it give the results those checks describe.";

/// The peers' virtualenv's Python, when it has pytest and a jail runs
/// here (named without `..`: the jail binds the path itself).
fn pytest_python() -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let pytest = std::process::Command::new(&python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    let jail = arena_e2e::arena_core::agent::jail::jail_info();
    if pytest && jail.is_ok() {
        return Some(arena_e2e::arena_core::agent::sandbox::lexical(&python));
    }
    eprintln!(
        "SKIPPED e2e test mining: no jail or no pytest in {} ({jail:?})",
        python.display()
    );
    None
}

fn git(dir: &Path, args: &[&str], date: &str) -> Result<()> {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .with_context(|| format!("git {args:?}"))?;
    ensure!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// A calculator's history, newest last: the start; a fix with its test;
/// a feature with its tests; the feature's revert; a fix that does not
/// fix its test; a README change.
fn history(dir: &Path) -> Result<()> {
    let write = |path: &str, text: &str| -> Result<()> {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().context("a parent")?)?;
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
    };
    let mut day = 0;
    let mut commit = |subject: &str| -> Result<()> {
        day += 1;
        let date = format!("2025-06-{day:02}T10:00:00+00:00");
        git(dir, &["add", "-A"], &date)?;
        git(dir, &["commit", "-q", "-m", subject], &date)
    };
    git(
        dir,
        &["init", "-q", "-b", "main"],
        "2025-06-01T09:00:00+00:00",
    )?;
    write(
        "pyproject.toml",
        "[project]\nname = \"calc\"\nversion = \"0.1\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
    )?;
    write(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n",
    )?;
    write(
        "tests/test_calc.py",
        "from calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    )?;
    commit("Start the calculator")?;

    write(
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    # Nothing divides by zero here.\n    if b == 0:\n        return None\n    return a / b\n",
    )?;
    write(
        "tests/test_calc.py",
        "from calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_div_zero():\n    assert div(1, 0) is None\n",
    )?;
    commit("Divide by zero gives None")?;

    write(
        "mul.py",
        "def mul(a, b):\n    out = 0\n    for _ in range(b):\n        out += a\n    return out\n",
    )?;
    write(
        "tests/test_mul.py",
        "from mul import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\ndef test_mul_zero():\n    assert mul(2, 0) == 0\n",
    )?;
    commit("Add mul")?;

    std::fs::remove_file(dir.join("mul.py"))?;
    std::fs::remove_file(dir.join("tests/test_mul.py"))?;
    commit("Revert \"Add mul\"\n\nIt was not ready.")?;

    write(
        "neg.py",
        "def neg(x):\n    # Not yet: the sign is kept.\n    return x\n",
    )?;
    write(
        "tests/test_neg.py",
        "from neg import neg\n\n\ndef test_neg():\n    assert neg(1) == -1\n",
    )?;
    commit("Add neg")?;

    write("README.md", "A calculator.\n")?;
    commit("Say what it is")
}

/// The yield table's value in the row `key` (`yield-row` or `mine-drop`).
async fn yield_value(app: &App, key: &str) -> Result<Option<String>> {
    app.js(
        "const row = document.querySelector(`[data-testid=mine-yield] tr[data-key='${arguments[0]}']`);
         return row ? row.querySelector('td').textContent.trim() : null;",
        vec![key.into()],
    )
    .await
}

/// Waits until the yield's row `key` reads `want`.
async fn wait_yield(app: &App, key: &str, want: &str) -> Result<()> {
    app.wait_until(
        &format!("the yield's {key} to read {want}"),
        Duration::from_secs(30),
        || async {
            let now = yield_value(app, key).await?;
            Ok((now.as_deref() == Some(want)).then_some(()))
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_mined_from_the_packs_screen_is_validated_written_and_reviewed() -> Result<()> {
    let Some(python) = pytest_python() else {
        return Ok(());
    };
    let Some(h) = Harness::start("mining").await? else {
        return Ok(());
    };
    // The writer: the local default model; its first answer fails (a
    // server error), every later one is the behaviour.
    h.server().set_model(
        MODEL,
        ModelScript::respond_with(|_| BEHAVIOUR.to_string()).with_faults(vec![Fault::Status(500)]),
    );
    // A cloud provider with a model of its own, to pick and unpick.
    let cloud = TestServer::start()
        .await
        .context("starting the cloud server")?;
    cloud.set_model("cloud-writer", ModelScript::tokens(4));
    h.write_config(&config_toml(
        &[
            ProviderEntry::local(PROVIDER, h.server()),
            ProviderEntry::cloud("cloud", &cloud),
        ],
        Some(MODEL),
    ))?;
    let project = h.project_dir().join("calc");
    std::fs::create_dir_all(&project)?;
    history(&project)?;
    let out = h.project_dir().join("calc-pack");

    let app = h.launch().await?;
    app.goto("#/packs").await?;
    let field = app.wait_for("input[data-testid=mine-project]").await?;
    app.fill(&field, project.to_str().context("a UTF-8 path")?)
        .await?;
    // The test command the project's files call for, shown while the
    // field is blank.
    app.wait_until(
        "the detected test command",
        Duration::from_secs(20),
        || async {
            let text = app.text_of("[data-testid=mine-detected]").await?;
            Ok(text.contains("detected: python3 -m pytest").then_some(text))
        },
    )
    .await?;
    let out_field = app.wait_for("input[data-testid=mine-out]").await?;
    app.fill(&out_field, out.to_str().context("a UTF-8 path")?)
        .await?;
    let command = app.wait_for("input[data-testid=mine-test-command]").await?;
    app.fill(
        &command,
        &format!("{} -m pytest -p no:cacheprovider", python.display()),
    )
    .await?;
    ensure!(
        app.count("[data-testid=mine-detected]").await? == 0,
        "a given command hides the detected one"
    );

    // A cloud writer says the code leaves the machine; the local default
    // says nothing leaves it.
    let writer = app.wait_for("select[data-testid=mine-writer]").await?;
    app.choose(&writer, "cloud-writer").await?;
    let warning = app.text_of("[data-testid=mine-writer-cloud]").await?;
    ensure!(
        warning.contains("cloud model") && warning.contains("leave this machine"),
        "{warning}"
    );
    let writer = app.wait_for("select[data-testid=mine-writer]").await?;
    app.choose(&writer, "").await?;
    ensure!(
        app.count("[data-testid=mine-writer-cloud]").await? == 0,
        "no warning for the local default"
    );
    let default_label: String = app
        .js(
            "const s = document.querySelector('select[data-testid=mine-writer]'); return s.options[0].label;",
            vec![],
        )
        .await?;
    ensure!(
        default_label.contains(&format!("{PROVIDER}/{MODEL}")) && default_label.contains("local"),
        "the default writer is named: {default_label}"
    );

    // Mine: the progress shows the stage, the counts, the commit at hand.
    app.click("[data-testid=mine-start]").await?;
    app.wait_for("[data-testid=mine-progress]").await?;
    let running = app
        .wait_until("a candidate being run", MINE_TIMEOUT, || async {
            let stage = app
                .js::<Option<String>>(
                    "const p = document.querySelector('[data-testid=mine-progress]'); return p ? p.dataset.stage : null;",
                    vec![],
                )
                .await?;
            let current = app.text_now("[data-testid=mine-current]").await?;
            Ok(match (stage.as_deref(), current) {
                (Some("validate"), Some(c)) if c.starts_with("running") => Some(c),
                _ => None,
            })
        })
        .await?;
    let line = app.text_of("[data-testid=mine-progress-line]").await?;
    ensure!(
        line.contains("6 commits scanned") && line.contains("3 candidates"),
        "progress while {running}: {line}"
    );
    ensure!(
        app.count("[data-testid=mine-stop]").await? == 1,
        "Stop is offered while it runs"
    );
    let panel = app.wait_for("[data-testid=pack-mine]").await?;
    app.scroll_to(&panel).await?;
    app.screenshot("packs-mining-progress").await?;

    // The yield.
    app.wait_until("the mining run's end", MINE_TIMEOUT, || async {
        Ok((app.count("[data-testid=mine-yield]").await? == 1).then_some(()))
    })
    .await?;
    for (key, want) in [
        ("scanned", "6"),
        ("candidates", "3"),
        ("tried", "3"),
        ("scan:revert", "1"),
        ("scan:no_tests", "1"),
        ("scan:no_parent", "1"),
        ("run:gold_fails", "1"),
        ("validated", "2 (67 % of those run)"),
        ("written", "1"),
        ("approved", "0"),
        ("unwritten", "1"),
    ] {
        let got = yield_value(&app, key).await?;
        ensure!(
            got.as_deref() == Some(want),
            "yield {key}: {got:?}, not {want}"
        );
    }
    let stages: Vec<String> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=yield-row]')].map(r => r.dataset.key).filter(k => k.startsWith('time:'));",
            vec![],
        )
        .await?;
    ensure!(
        stages.iter().any(|s| s == "time:validate") && stages.iter().any(|s| s == "time:write"),
        "time per stage: {stages:?}"
    );
    let tasks: Vec<String> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=mine-task]')].map(r => r.children[2].textContent.trim());",
            vec![],
        )
        .await?;
    ensure!(
        tasks == ["Add mul", "Divide by zero gives None"],
        "the validated tasks, newest first: {tasks:?}"
    );
    let dropped: Vec<(String, String)> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=mine-dropped]')].map(r => [r.dataset.reason, r.children[1].textContent.trim()]);",
            vec![],
        )
        .await?;
    ensure!(
        dropped == [("gold_fails".to_string(), "Add neg".to_string())],
        "dropped by running: {dropped:?}"
    );
    // Why, in the engine's words.
    let why = app
        .text_of("[data-testid=mine-dropped] td:nth-child(3)")
        .await?;
    ensure!(
        why.starts_with("the fix does not pass its tests"),
        "why: {why}"
    );
    let written = app.text_of("[data-testid=mine-pack-path]").await?;
    ensure!(Path::new(&written) == out, "the pack: {written}");
    // Its heading just below the app's bar.
    app.js::<serde_json::Value>(
        "document.querySelector('[data-testid=mine-yield]').scrollIntoView({block: 'start', behavior: 'instant'});
         window.scrollBy(0, -64); return null;",
        vec![],
    )
    .await?;
    app.screenshot("packs-mining").await?;

    // The task the writer failed on is written with "Write instructions".
    app.click("[data-testid=mine-write]").await?;
    wait_yield(&app, "written", "2").await?;
    ensure!(
        yield_value(&app, "unwritten").await?.is_none(),
        "every task has its instruction"
    );

    // The review opens on the written pack; an approval is counted in the yield.
    app.click("[data-testid=mine-review]").await?;
    app.wait_for("[data-testid=pack-review]").await?;
    ensure!(
        app.text_of("[data-testid=review-state]").await? == "pending",
        "the first task waits for review"
    );
    let instruction = app.text_of("[data-testid=review-instruction]").await?;
    ensure!(
        instruction.starts_with("The project does not behave"),
        "the writer's instruction: {instruction}"
    );
    app.js::<serde_json::Value>(
        "document.activeElement.blur();
         window.dispatchEvent(new KeyboardEvent('keydown', { key: 'a', bubbles: true })); return null;",
        vec![],
    )
    .await?;
    app.wait_until("the approval", Duration::from_secs(10), || async {
        let counts = app.text_of("[data-testid=review-counts]").await?;
        Ok(counts.starts_with("1 approved").then_some(()))
    })
    .await?;
    wait_yield(&app, "approved", "1").await?;
    app.close().await?;

    // The pack on disk says the same.
    let counts = InstructionCounts::load(&out)?;
    ensure!(
        (
            counts.tasks,
            counts.written(),
            counts.approved,
            counts.unwritten
        ) == (2, 2, 1, 0),
        "{counts:?}"
    );
    // The writer was never shown the fix.
    for request in h.server().requests_for(MODEL) {
        let body = request.body.to_string();
        ensure!(
            !body.contains("for _ in range(b)") && !body.contains("if b == 0"),
            "a gold line reached the writer: {body}"
        );
    }
    Ok(())
}
