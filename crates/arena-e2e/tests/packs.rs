//! The Packs screen (issue 40, point 6): the
//! sample pack opened with "Try the sample pack", two scripted agents (one
//! applies each task's gold patch, one changes nothing) picked as
//! contestants, a pack run started with one run of each task; its live
//! matrix fills, the gold agent scores 100 % and the idle one 0 %, each
//! with an interval bar that does not read as certain; a cell links to
//! its battle; the report saves as files. (Mining a history from this
//! screen: mining.rs.)
//!
//! Needs a display, the drivers, bubblewrap and python3 (the sample
//! pack's tests); see the crate docs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use arena_e2e::arena_core::PACK_REPORT_FILES;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{App, Harness};

/// Six sealed battles (three tasks, two contestants), one at a time on
/// the local lane, each with the verifier's tests.
const RUN_TIMEOUT: Duration = Duration::from_secs(420);

/// The sample pack in the repository.
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample")
}

/// The sample pack's tasks: (its instruction's first line, its gold patch).
fn tasks() -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(sample().join("tasks")).context("the sample pack's tasks")? {
        let dir = entry?.path();
        let instruction = std::fs::read_to_string(dir.join("instruction.md"))?;
        let first = instruction
            .lines()
            .find(|l| !l.trim().is_empty())
            .context("an empty instruction")?
            .to_string();
        let gold = std::fs::read_to_string(dir.join("solution/gold.patch"))?;
        out.push((first, gold));
    }
    out.sort();
    Ok(out)
}

/// `[[backend]] name = "agent"`: on model `gold` it applies the gold patch
/// of the task whose instruction it was given; on any other model it
/// changes nothing (as in arena-cli's pack tests).
fn gold_agent_backend() -> Result<String> {
    let mut script =
        String::from("[ \"$0\" = gold ] || { echo 'I looked and changed nothing'; exit 0; }\n");
    for (i, (first, gold)) in tasks()?.iter().enumerate() {
        let words: Vec<&str> = first
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(6)
            .collect();
        script.push_str(&format!(
            "case \"$1\" in *{}*) git apply <<'GOLD_{i}'\n{gold}GOLD_{i}\n;; esac\n",
            words.join("*"),
        ));
    }
    script.push_str("echo done\n");
    Ok(format!(
        "\n[[backend]]\nname = \"agent\"\ncommand = [\"bash\", \"-c\", {}, \"{{model}}\", \"{{prompt}}\"]\n",
        serde_json::to_string(&script)?
    ))
}

/// Whether this machine can run the sample pack's verifiers.
fn can_run_packs() -> bool {
    let jail = arena_e2e::arena_core::agent::jail::jail_info();
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if jail.is_ok() && python {
        return true;
    }
    eprintln!("SKIPPED e2e test packs: no jail or no python3 ({jail:?})");
    false
}

/// The cells' `(done, resolved, errors)` per `(task, contestant)`.
async fn cells(app: &App) -> Result<Vec<(String, String, u64, u64, u64)>> {
    app.js(
        "return [...document.querySelectorAll('[data-testid=pack-cell]')].map(c => [
           c.dataset.task, c.dataset.contestant,
           Number(c.dataset.done), Number(c.dataset.resolved), Number(c.dataset.errors)]);",
        vec![],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pack_run_from_the_packs_screen_scores_a_gold_agent_and_an_idle_one() -> Result<()> {
    if !can_run_packs() {
        return Ok(());
    }
    let Some(h) = Harness::start("packs").await? else {
        return Ok(());
    };
    h.server().set_model("gold", ModelScript::tokens(1));
    h.server().set_model("none", ModelScript::tokens(1));
    let config = h.default_config().replace(
        "stall_timeout_secs = 5",
        "stall_timeout_secs = 120\ncheck_timeout_secs = 300",
    ) + &gold_agent_backend()?;
    h.write_config(&config)?;
    let n = tasks()?.len();

    let app = h.launch().await?;
    app.goto("#/packs").await?;
    app.click("[data-testid=pack-try-sample]").await?;
    app.wait_for("[data-testid=pack-info]").await?;
    ensure!(
        app.text_of("[data-testid=pack-name]")
            .await?
            .contains("sample"),
        "the sample pack's name"
    );
    let runnable: Vec<String> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=pack-task]')].map(t => t.dataset.runnable);",
            vec![],
        )
        .await?;
    ensure!(
        runnable.len() == n && runnable.iter().all(|r| r == "true"),
        "every sample task runs here: {runnable:?}"
    );

    // The two scripted agents as contestants, one run of each task.
    let identities = app
        .find_all("[data-testid=pack-run-form] select[data-testid=contestant-identity]")
        .await?;
    ensure!(identities.len() == 2, "two contestant rows");
    for (i, model) in ["gold", "none"].iter().enumerate() {
        let identities = app
            .find_all("[data-testid=pack-run-form] select[data-testid=contestant-identity]")
            .await?;
        app.choose(&identities[i], "agent").await?;
        let models = app
            .find_all("[data-testid=pack-run-form] select[data-testid=contestant-model]")
            .await?;
        let select = models.get(i).context("a model select per row")?;
        app.choose(select, model).await?;
    }
    let runs = app.wait_for("input[data-testid=pack-runs]").await?;
    app.fill(&runs, "1").await?;
    app.click("[data-testid=pack-start]").await?;

    let hash = app
        .wait_until("the pack run's screen", Duration::from_secs(30), || async {
            let hash = app.hash().await?;
            Ok(hash.strip_prefix("#/packs/").map(str::to_string))
        })
        .await?;
    let run_id = hash;
    app.wait_for("[data-testid=pack-matrix]").await?;
    let first = cells(&app).await?;
    ensure!(
        first.len() == 2 * n,
        "a cell per task and contestant: {first:?}"
    );

    // The matrix fills while the run goes on.
    app.wait_until("every cell done", RUN_TIMEOUT, || async {
        let all = cells(&app).await?;
        Ok((all.len() == 2 * n && all.iter().all(|c| c.2 == 1)).then_some(()))
    })
    .await?;
    app.wait_attr(
        "[data-testid=pack-run-status]",
        "data-status",
        "done",
        Duration::from_secs(60),
    )
    .await?;
    for (task, contestant, done, resolved, errors) in cells(&app).await? {
        let want = u64::from(contestant == "agent@gold");
        ensure!(
            done == 1 && resolved == want && errors == 0,
            "{task} by {contestant}: {done} done, {resolved} resolved, {errors} errors"
        );
    }
    app.screenshot("packs-matrix").await?;

    // The scores: 100 % and 0 %, each with its interval, never certain.
    let rows: Vec<(String, String, f64, f64, String)> = app
        .js(
            "return [...document.querySelectorAll('[data-testid=pack-score-row]')].map(r => [
               r.dataset.contestant, r.dataset.pass, Number(r.dataset.low), Number(r.dataset.high),
               r.querySelector('[data-testid=pack-pass]').textContent.trim()]);",
            vec![],
        )
        .await?;
    ensure!(rows.len() == 2, "a score row per contestant: {rows:?}");
    for (contestant, pass, low, high, words) in &rows {
        if contestant == "agent@gold" {
            ensure!(
                pass == "1" && words.starts_with("100 %"),
                "gold: {pass} {words}"
            );
            ensure!(
                *low > 0.0 && *low < 1.0 && *high == 1.0,
                "gold's interval {low}–{high}"
            );
        } else {
            ensure!(
                pass == "0" && words.starts_with("0 %"),
                "idle: {pass} {words}"
            );
            ensure!(*low == 0.0 && *high > 0.0, "idle's interval {low}–{high}");
        }
    }
    let whiskers = app
        .count("[data-testid=pack-pass-chart] line.whisker")
        .await?;
    ensure!(
        whiskers >= 2 * 3,
        "an interval bar per contestant: {whiskers} whisker lines"
    );
    let scores = app.wait_for("[data-testid=pack-scores]").await?;
    app.scroll_to(&scores).await?;
    app.screenshot("packs-scores").await?;

    // The report, saved from the app.
    app.click("[data-testid=pack-save-report]").await?;
    app.wait_for("[data-testid=pack-saved]").await?;
    let folder = h.data_dir().join("packs/reports").join(&run_id);
    for name in PACK_REPORT_FILES {
        let file = folder.join(name);
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("the saved {}", file.display()))?;
        ensure!(text.contains("agent@gold"), "{name} names the contestants");
    }
    let html = std::fs::read_to_string(folder.join("report.html"))?;
    ensure!(
        !html.contains("<script") && !html.contains("src=\"http"),
        "the HTML report is self-contained"
    );

    // A cell links to its battle.
    let link = app
        .wait_for(
            "[data-testid=pack-cell][data-contestant='agent@gold'] a[data-testid=pack-cell-battle]",
        )
        .await?;
    app.click_element(&link).await?;
    app.wait_until("the battle view", Duration::from_secs(20), || async {
        Ok(app.hash().await?.starts_with("#/battle/").then_some(()))
    })
    .await?;
    app.wait_for("[data-testid=battle-view]").await?;

    app.close().await?;

    // The engine agrees with what the screen showed.
    let engine = h.engine()?;
    let report = engine.pack_run_report(&run_id).await?;
    let gold = report
        .scores
        .contestants
        .iter()
        .find(|c| c.contestant == "agent@gold");
    match gold {
        Some(g) if g.resolved == n => Ok(()),
        other => bail!("the engine's gold contestant: {other:?}"),
    }
}

/// Copies `from` into `to` (files only, as the sample pack holds).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_written_instruction_is_reviewed_from_the_keyboard() -> Result<()> {
    let Some(h) = Harness::start("packs_review").await? else {
        return Ok(());
    };
    // A copy of the sample pack whose first task's instruction waits for
    // review, as the instruction writer leaves it.
    let pack = h.project_dir().join("mined");
    copy_tree(&sample(), &pack)?;
    let mut ids: Vec<String> = std::fs::read_dir(pack.join("tasks"))?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_>>()?;
    ids.sort();
    let first = ids.first().context("a task")?;
    let toml = pack.join("tasks").join(first).join("task.toml");
    let text = std::fs::read_to_string(&toml)?;
    ensure!(text.contains("[metadata.arena]\n"), "{text}");
    std::fs::write(
        &toml,
        text.replacen(
            "[metadata.arena]\n",
            "[metadata.arena]\nreview = \"pending\"\n",
            1,
        ),
    )?;

    let app = h.launch().await?;
    app.goto("#/packs").await?;
    let field = app.wait_for("input[data-testid=pack-path]").await?;
    app.fill(&field, pack.to_str().context("a UTF-8 path")?)
        .await?;
    app.click("[data-testid=pack-open-button]").await?;
    app.wait_for("[data-testid=pack-review]").await?;
    ensure!(
        app.text_of("[data-testid=review-state]").await? == "pending",
        "the task waits for review"
    );
    let panel = app.wait_for("[data-testid=pack-review]").await?;
    app.scroll_to(&panel).await?;
    app.screenshot("packs-review").await?;
    // `a` approves, from the keyboard.
    app.js::<serde_json::Value>(
        "document.activeElement.blur();
         window.dispatchEvent(new KeyboardEvent('keydown', { key: 'a', bubbles: true })); return null;",
        vec![],
    )
    .await?;
    app.wait_until("the approval", Duration::from_secs(10), || async {
        let now = app.text_of("[data-testid=review-state]").await?;
        Ok((now == "approved").then_some(()))
    })
    .await?;
    let after = std::fs::read_to_string(&toml)?;
    ensure!(after.contains("review = \"approved\""), "{after}");
    app.close().await
}
