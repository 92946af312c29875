//! Answers first (issue 42, items 10 and 11): at 1280×800 the first lines
//! of every answer show without scrolling for six contestants; any pane
//! can be expanded; Markdown renders while it streams, and the end of the
//! stream does not move what was shown; a blind battle's vote buttons sit
//! below the answers.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, BattleForm, Harness, ProviderEntry};
use serde::Deserialize;

/// How long a whole battle may take in the window.
const BATTLE_TIMEOUT: Duration = Duration::from_secs(120);

const SIX: [(&str, &str); 6] = [
    ("Debugger", "m-1"),
    ("Explainer", "m-2"),
    ("Architect", "m-3"),
    ("Code Reviewer", "m-4"),
    ("Debugger", "m-5"),
    ("Explainer", "m-6"),
];

/// A Markdown answer: a heading, bold words, a list, then long prose.
fn markdown_answer(n: usize) -> String {
    let prose: Vec<String> = (1..=260).map(|i| format!("word{n}x{i}")).collect();
    format!(
        "# Heading {n}\n\nFirst line of answer {n} with **bold {n}** words.\n\n- item one\n- item two\n\n{}\n",
        prose.join(" ")
    )
}

/// Where each answer's first line is, and what its body holds.
#[derive(Debug, Deserialize)]
struct Pane {
    status: String,
    /// The top of the body's first rendered line, in the viewport.
    first_line_top: f64,
    /// The heading's offset inside the body (`null`: no heading element).
    heading_offset: Option<f64>,
    strong: bool,
    text_start: String,
}

async fn panes(app: &App) -> Result<Vec<Pane>> {
    app.js(
        "return [...document.querySelectorAll('[data-testid=output-pane]')].map((p) => {
           const body = p.querySelector('[data-testid=output-body]');
           const scroll = p.querySelector('[data-testid=output-scroll]');
           const first = body.firstElementChild || body;
           const h = body.querySelector('h1');
           return {
             status: p.dataset.status,
             first_line_top: first.getBoundingClientRect().top,
             heading_offset: h ? h.getBoundingClientRect().top - scroll.getBoundingClientRect().top + scroll.scrollTop : null,
             strong: body.querySelector('strong') !== null,
             text_start: (body.textContent || '').trim().slice(0, 40),
           };
         });",
        vec![],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_answers_show_their_first_lines_at_1280x800_rendered_as_they_stream() -> Result<()> {
    let Some(h) =
        Harness::start("six_answers_show_their_first_lines_at_1280x800_rendered_as_they_stream")
            .await?
    else {
        return Ok(());
    };
    let cloud = h.server();
    for (i, (_, model)) in SIX.iter().enumerate() {
        cloud.set_model(model, ModelScript::text(&markdown_answer(i + 1)).rate(90.0));
    }
    h.write_config(&config_toml(&[ProviderEntry::cloud("cloud", cloud)], None))?;
    let app = h.launch().await?;
    app.resize(1280, 800).await?;
    let project = h.project_dir();
    app.start_battle(&BattleForm::qa(
        &project,
        "Explain your answer with a heading and a list.",
        &SIX,
    ))
    .await?;

    // While they stream: Markdown already (a heading, bold), not raw text.
    let streaming = app
        .wait_until(
            "every answer to show its heading, rendered, while streaming",
            BATTLE_TIMEOUT,
            || async {
                let p = panes(&app).await?;
                let rendered = p.len() == SIX.len()
                    && p.iter()
                        .all(|p| p.status == "running" && p.heading_offset.is_some() && p.strong);
                Ok(rendered.then_some(p))
            },
        )
        .await
        .context("the answers were not rendered as Markdown while they streamed")?;
    ensure!(
        streaming.iter().all(|p| !p.text_start.starts_with('#')),
        "raw Markdown on screen while streaming: {streaming:?}"
    );

    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let done = panes(&app).await?;
    // No jump at the end: each heading sits where it sat while streaming.
    for (before, after) in streaming.iter().zip(&done) {
        ensure!(
            matches!((before.heading_offset, after.heading_offset), (Some(b), Some(a)) if (a - b).abs() < 1.0),
            "the answer moved when its stream ended: {before:?} → {after:?}"
        );
    }

    // Answers first: every answer's first line is on screen, unscrolled.
    let (width, height, scroll_y) = app.viewport().await?;
    ensure!(
        (width - 1280.0).abs() <= 2.0 && (height - 800.0).abs() <= 2.0,
        "the window is {width}×{height}"
    );
    ensure!(scroll_y == 0.0, "the page is scrolled by {scroll_y}");
    let below: Vec<_> = done
        .iter()
        .filter(|p| p.first_line_top + 20.0 > height)
        .collect();
    ensure!(
        below.is_empty(),
        "answers whose first line is below the fold of {height} px: {below:?}"
    );
    app.screenshot("battle-six-1280x800").await?;

    // Any pane can be expanded: wide and taller, then back.
    let before = app.rects("[data-testid=output-pane]").await?;
    let third = app
        .find_all("[data-testid=output-pane] [data-testid=pane-expand]")
        .await?;
    let button = third.get(2).context("no expand button on the third pane")?;
    app.click_element(button).await?;
    let outputs = app.rects("section.outputs").await?;
    let expanded = app.rects("[data-testid=output-pane]").await?;
    let (Some(wide), Some(was), Some(all)) = (expanded.get(2), before.get(2), outputs.first())
    else {
        anyhow::bail!("lost the panes: {expanded:?}");
    };
    ensure!(
        wide.width() > all.width() - 2.0 && wide.height() > was.height() + 50.0,
        "the expanded pane is {wide:?} (was {was:?}, the answers {all:?})"
    );
    let expanded_state = app
        .rects("[data-testid=output-pane] [data-testid=pane-expand][aria-expanded=true]")
        .await?;
    ensure!(expanded_state.len() == 1, "one pane is marked expanded");
    let buttons = app
        .find_all("[data-testid=output-pane] [data-testid=pane-expand]")
        .await?;
    app.click_element(buttons.get(2).context("no third expand button")?)
        .await?;
    let back = app.rects("[data-testid=output-pane]").await?;
    ensure!(
        back.get(2).map(|r| r.width().round()) == Some(was.width().round()),
        "collapsing did not bring the pane back: {back:?}"
    );
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blind_vote_buttons_sit_below_the_answers() -> Result<()> {
    let Some(h) = Harness::start("blind_vote_buttons_sit_below_the_answers").await? else {
        return Ok(());
    };
    let cloud = h.server();
    cloud.set_model("m-a", ModelScript::text(&markdown_answer(1)).rate(200.0));
    cloud.set_model("m-b", ModelScript::text(&markdown_answer(2)).rate(200.0));
    h.write_config(&config_toml(&[ProviderEntry::cloud("cloud", cloud)], None))?;
    let app = h.launch().await?;
    app.resize(1280, 800).await?;
    let project = h.project_dir();
    app.open_launcher().await?;
    app.fill_launcher(&BattleForm::qa(
        &project,
        "Which is better?",
        &[("Debugger", "m-a"), ("Explainer", "m-b")],
    ))
    .await?;
    app.click("[data-testid=launcher-blind]").await?;
    app.press_start().await?;
    app.wait_for("[data-testid=blind-badge]").await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    let vote = app.wait_for("[data-testid=vote-tie]").await?;
    let answers = app.rects("[data-testid=output-pane]").await?;
    let buttons = app.rects("[data-testid=vote-tie]").await?;
    let lowest = answers.iter().map(|r| r.bottom).fold(0.0_f64, f64::max);
    ensure!(
        buttons.first().is_some_and(|b| b.top >= lowest),
        "the vote buttons {buttons:?} are not below the answers (which end at {lowest})"
    );
    // And the verdict card, in its usual place, says where the vote is.
    let headline = app.text_content("[data-testid=verdict-headline]").await?;
    ensure!(
        headline.contains("vote below the answers"),
        "the blind card reads {headline:?}"
    );
    app.scroll_to(&vote).await?;
    app.screenshot("blind-vote-below").await?;
    app.close().await
}

/// The built-in agent, scripted: it writes `notes.txt` and a scratch file,
/// removes the scratch file with a command, then ends with a line-by-line
/// log.
fn logging_agent() -> ModelScript {
    use arena_e2e::arena_testserver::{ToolCall, Turn};
    use serde_json::json;
    ModelScript::turns(vec![
        Turn::ToolCalls {
            text: None,
            calls: vec![
                ToolCall::new(
                    "write_file",
                    json!({"path": "notes.txt", "content": "keep\nchanged\n"}),
                ),
                ToolCall::new(
                    "write_file",
                    json!({"path": "scratch.tmp", "content": "for a moment\n"}),
                ),
            ],
        },
        Turn::ToolCalls {
            text: None,
            calls: vec![ToolCall::new(
                "run_command",
                json!({"command": "rm scratch.tmp"}),
            )],
        },
        Turn::text(LOG),
    ])
}

/// What the agent ends with: one step a line, as agents log.
const LOG: &str = "step 1: wrote notes.txt\nstep 2: removed scratch.tmp\nstep 3: done";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_agents_log_stays_lines_and_its_changed_files_are_the_diffs() -> Result<()> {
    let Some(h) =
        Harness::start("a_finished_agents_log_stays_lines_and_its_changed_files_are_the_diffs")
            .await?
    else {
        return Ok(());
    };
    let project = h.git_project(&[("notes.txt", "keep\nold\n")])?;
    h.server().set_model("coder-a", logging_agent());
    h.server().set_model("coder-b", logging_agent());
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", h.server())],
        None,
    ))?;
    let app = h.launch().await?;
    let id = app
        .start_battle(&BattleForm::coding(
            &project,
            "Change the second line of notes.txt.",
            &[("native", "coder-a"), ("native", "coder-b")],
        ))
        .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    let battle = h.engine()?.battle(&id).await?;
    let diff_files: Vec<u64> = battle
        .contestants
        .iter()
        .map(|c| c.diff.as_ref().map_or(0, |d| d.files as u64))
        .collect();
    ensure!(
        diff_files.iter().all(|&n| n == 1),
        "the engine's diffs change {diff_files:?} files; the scratch file should be gone"
    );

    // The log: preformatted, one step a line (not one Markdown paragraph).
    let bodies: Vec<(String, String)> = app
        .wait_until(
            "every agent's log shown",
            Duration::from_secs(10),
            || async {
                let b: Vec<(String, String)> = app
                    .js(
                        "return [...document.querySelectorAll('[data-testid=output-pane] [data-testid=output-body]')]
                           .map(b => [b.tagName, b.innerText]);",
                        vec![],
                    )
                    .await?;
                Ok((b.len() == 2 && b.iter().all(|(_, t)| t.contains("step 3"))).then_some(b))
            },
        )
        .await?;
    for (tag, text) in &bodies {
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        ensure!(
            tag == "PRE" && lines == LOG.lines().collect::<Vec<_>>(),
            "an agent's log shows as <{tag}> with lines {lines:?}"
        );
    }
    // "Changed files" agrees with the diff: one file, not the scratch file.
    // (The diff's summary comes with the stored battle, a moment after the
    // last event.)
    let seen = std::sync::Mutex::new(Vec::new());
    app.wait_until(
        "each pane's changed files to be the diff's",
        Duration::from_secs(10),
        || async {
            let summaries: Vec<String> = app
                .js(
                    "return [...document.querySelectorAll('[data-testid=changed-files-summary]')].map(s => s.textContent.replace(/\\s+/g, ' ').trim());",
                    vec![],
                )
                .await?;
            let ok = summaries.len() == 2
                && summaries.iter().all(|s| s.starts_with("Changed files (1)"));
            if let Ok(mut last) = seen.lock() {
                *last = summaries;
            }
            Ok(ok.then_some(()))
        },
    )
    .await
    .with_context(|| format!("the panes' changed files read {:?}", seen.lock().map(|s| s.clone())))?;
    let shown = app
        .count("[data-testid=output-pane] [data-testid=changed-files]")
        .await?;
    ensure!(
        shown == 0,
        "{shown} panes still list the files touched on the way"
    );
    app.screenshot("battle-agent-log").await?;
    app.close().await
}
