//! A Coding battle from the launcher: the built-in agent, scripted with
//! tool calls, really edits a temp git repository; the battle view shows
//! each contestant's diff with a file list and coloured lines.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::arena_testserver::{ModelScript, ToolCall, Turn};
use arena_e2e::{
    config_toml, contestant_with_model, App, BattleForm, Beacon, Harness, ProviderEntry,
};
use serde::Deserialize;
use serde_json::json;

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

const NOTES: &str = "keep one\nchange me\nkeep two\nremove me\nkeep three\n";
/// One line changed, one removed, one added (and a new file besides).
const NOTES_A: &str = "keep one\nchanged by a\nkeep two\nkeep three\nadded by a\n";
const NOTES_B: &str = "keep one\nchanged by b\nkeep two\nremove me\nkeep three\n";

/// An agent that writes `files` in one turn, then says `summary`.
fn agent(files: &[(&str, &str)], summary: &str) -> ModelScript {
    let calls = files
        .iter()
        .map(|(path, content)| {
            ToolCall::new("write_file", json!({"path": path, "content": content}))
        })
        .collect();
    ModelScript::turns(vec![
        Turn::ToolCalls { text: None, calls },
        Turn::text(summary),
    ])
}

/// What the diff view of one contestant shows.
#[derive(Debug, Deserialize)]
struct DiffShown {
    files: Vec<FileShown>,
    lines: Vec<LineShown>,
}

#[derive(Debug, Deserialize)]
struct FileShown {
    path: Option<String>,
    status: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct LineShown {
    /// `add`, `del`, `ctx` or `hunk` (from the class list), else `""`.
    kind: String,
    text: String,
    background: String,
    color: String,
}

const READ_DIFF: &str = r#"
const view = document.querySelector(`[data-testid=diff-view][data-contestant-id="${arguments[0]}"]`);
if (!view) return null;
const kinds = ['add', 'del', 'ctx', 'hunk'];
return {
  files: [...view.querySelectorAll('[data-testid=diff-file]')].map(f => ({
    path: f.getAttribute('data-path'),
    status: f.getAttribute('data-status'),
  })),
  lines: [...view.querySelectorAll('[data-testid=diff-line]')].map(l => {
    const style = getComputedStyle(l);
    return {
      kind: kinds.find(k => l.classList.contains(k)) ?? '',
      text: l.textContent,
      background: style.backgroundColor,
      color: style.color,
    };
  }),
};
"#;

async fn diff_shown(app: &App, contestant: &str, want_files: usize) -> Result<DiffShown> {
    app.wait_until(
        &format!("the diff view of {contestant} to list {want_files} files"),
        Duration::from_secs(30),
        || async {
            let shown: Option<DiffShown> = app.js(READ_DIFF, vec![contestant.into()]).await?;
            Ok(shown.filter(|d| d.files.len() == want_files && !d.lines.is_empty()))
        },
    )
    .await
}

/// `(r, g, b, a)` of a CSS colour as computed (`rgb(…)` / `rgba(…)`).
fn rgba(css: &str) -> Option<(f64, f64, f64, f64)> {
    let inner = css.split_once('(')?.1.strip_suffix(')')?;
    let parts: Vec<f64> = inner
        .split(',')
        .map(|p| p.trim().parse().ok())
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [r, g, b] => Some((*r, *g, *b, 1.0)),
        [r, g, b, a] => Some((*r, *g, *b, *a)),
        _ => None,
    }
}

/// The colours of `line` that differ from those of a context line, each
/// checked with `hue` (e.g. green over red); at least one must differ.
fn check_colours(
    line: &LineShown,
    ctx: &LineShown,
    name: &str,
    hue: fn(f64, f64, f64) -> bool,
) -> Result<()> {
    let mut differing = Vec::new();
    if line.background != ctx.background {
        differing.push(("background", &line.background));
    }
    if line.color != ctx.color {
        differing.push(("text colour", &line.color));
    }
    ensure!(
        !differing.is_empty(),
        "{name} lines look like context lines: background {} and text {}",
        line.background,
        line.color
    );
    for (what, css) in differing {
        let (r, g, b, a) = rgba(css).with_context(|| format!("unreadable colour {css:?}"))?;
        ensure!(
            a > 0.0 && hue(r, g, b),
            "the {what} of {name} lines is {css}, which is not {name}-coloured"
        );
    }
    Ok(())
}

/// The HSL hue of a colour in degrees; `None` for a grey.
fn hue(r: f64, g: f64, b: f64) -> Option<f64> {
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let d = max - min;
    if d < 4.0 {
        return None;
    }
    let h = if max == r {
        ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        (b - r) / d + 2.0
    } else {
        (r - g) / d + 4.0
    };
    Some(h * 60.0)
}

/// Green: a hue between yellow-green and teal (pale tints included).
fn greenish(r: f64, g: f64, b: f64) -> bool {
    hue(r, g, b).is_some_and(|h| (75.0..=170.0).contains(&h))
}

/// Red: a hue between rose and orange-red.
fn reddish(r: f64, g: f64, b: f64) -> bool {
    hue(r, g, b).is_some_and(|h| !(25.0..330.0).contains(&h))
}

#[cfg(test)]
mod colour_tests {
    use super::*;

    #[test]
    fn hues() {
        assert!(greenish(230.0, 246.0, 234.0)); // a pale green tint
        assert!(greenish(22.0, 101.0, 52.0));
        assert!(reddish(255.0, 235.0, 233.0)); // a pale red tint
        assert!(reddish(153.0, 27.0, 27.0));
        assert!(!greenish(240.0, 240.0, 240.0) && !reddish(240.0, 240.0, 240.0));
        assert!(!greenish(153.0, 27.0, 27.0) && !reddish(22.0, 101.0, 52.0));
        assert_eq!(rgba("rgba(1, 2, 3, 0.5)"), Some((1.0, 2.0, 3.0, 0.5)));
        assert_eq!(rgba("rgb(1, 2, 3)"), Some((1.0, 2.0, 3.0, 1.0)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coding_battle_shows_a_coloured_diff() -> Result<()> {
    let Some(h) = Harness::start("coding_battle_shows_a_coloured_diff").await? else {
        return Ok(());
    };
    let project = h.git_project(&[("notes.txt", NOTES), ("README.md", "# Notes\n")])?;
    let server = h.server();
    // Its summary carries markup that must stay inert in the report.
    let beacon = Beacon::start().await?;
    beacon.self_test().await?;
    let summary = format!(
        "Tidied notes.txt and added new.txt.\n\n<script>window.__arenaPwned=1</script>\n\n\
         <img src=x onerror=\"window.__arenaPwned2=1\">\n\n![remote]({}/diff.png)\n",
        beacon.url
    );
    server.set_model(
        "coder-a",
        agent(
            &[("notes.txt", NOTES_A), ("new.txt", "brand new file\n")],
            &summary,
        ),
    );
    server.set_model(
        "coder-b",
        agent(&[("notes.txt", NOTES_B)], "Changed one line."),
    );
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", server)],
        None,
    ))?;
    let app = h.launch().await?;
    let mut form = BattleForm::coding(
        &project,
        "Tidy up notes.txt.",
        &[("native", "coder-a"), ("native", "coder-b")],
    );
    form.check = Some("test -f new.txt");
    let id = app.start_battle(&form).await?;
    app.wait_for("[data-testid=battle-view][data-battle-type=coding]")
        .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;

    let battle = h.engine()?.battle(&id).await?;
    let id_of = |model: &str| contestant_with_model(&battle, model);
    let (a, b) = (id_of("coder-a")?, id_of("coder-b")?);

    let shown = diff_shown(&app, &a, 2).await?;
    let mut files: Vec<(String, String)> = shown
        .files
        .iter()
        .map(|f| {
            (
                f.path.clone().unwrap_or_default(),
                f.status.clone().unwrap_or_default(),
            )
        })
        .collect();
    files.sort();
    ensure!(
        files
            == [
                ("new.txt".to_string(), "added".to_string()),
                ("notes.txt".to_string(), "modified".to_string())
            ],
        "coder-a's file list shows {files:?}"
    );
    let with = |kind: &str, text: &str| {
        shown
            .lines
            .iter()
            .find(|l| l.kind == kind && l.text.contains(text))
            .cloned()
            .with_context(|| {
                let lines: Vec<String> = shown
                    .lines
                    .iter()
                    .map(|l| format!("{}:{}", l.kind, l.text.trim()))
                    .collect();
                format!("no {kind} line with {text:?} in coder-a's diff: {lines:?}")
            })
    };
    let changed = with("add", "changed by a")?;
    with("add", "added by a")?;
    with("add", "brand new file")?;
    let removed = with("del", "change me")?;
    with("del", "remove me")?;
    let context = with("ctx", "keep two")?;
    with("hunk", "@@")?;
    check_colours(&changed, &context, "green", greenish)?;
    check_colours(&removed, &context, "red", reddish)?;
    ensure!(
        changed.background != removed.background || changed.color != removed.color,
        "added and removed lines have the same colours"
    );

    // The other contestant's diff is its own.
    let other = diff_shown(&app, &b, 1).await?;
    ensure!(
        other
            .lines
            .iter()
            .any(|l| l.kind == "add" && l.text.contains("changed by b")),
        "coder-b's diff lacks its change: {other:?}"
    );
    ensure!(
        !other.lines.iter().any(|l| l.text.contains("by a")),
        "coder-b's diff shows coder-a's work"
    );

    // The check ran in each worktree; the actions are offered.
    let passed = app
        .wait_until(
            "a check result for each contestant",
            Duration::from_secs(30),
            || async {
                let passed: Vec<Option<String>> = app
                    .js(
                        "return [...document.querySelectorAll('[data-testid=check-result]')]\
                         .map(c => c.getAttribute('data-passed'));",
                        Vec::new(),
                    )
                    .await?;
                let mut passed: Vec<String> = passed.into_iter().flatten().collect();
                passed.sort();
                Ok((passed.len() == 2).then_some(passed))
            },
        )
        .await?;
    ensure!(
        passed == ["false", "true"],
        "check results shown: {passed:?} (coder-a creates new.txt, coder-b does not)"
    );
    for action in [
        "button[data-testid=open-worktree]",
        "button[data-testid=apply-diff]",
        "textarea[data-testid=refine-feedback]",
        "button[data-testid=refine-submit]",
    ] {
        app.wait_for(action).await?;
    }

    let view = app
        .wait_for(&format!(
            "[data-testid=diff-view][data-contestant-id=\"{a}\"]"
        ))
        .await?;
    app.scroll_to(&view).await?;
    app.screenshot("battle-coding").await?;
    exported_report_is_inert_and_coloured(&app, &beacon).await?;
    app.close().await
}

/// What the opened battle report holds: script flags, active markup, and
/// the computed colours of its diff lines.
#[derive(Debug, Deserialize)]
struct ReportShown {
    flags: Vec<String>,
    markup: Vec<String>,
    add: Option<LineShown>,
    del: Option<LineShown>,
    ctx: Option<LineShown>,
}

const INSPECT_REPORT: &str = r#"
const flags = ['__arenaPwned', '__arenaPwned2'].filter(n => typeof window[n] !== 'undefined');
const markup = [];
for (const el of document.querySelectorAll('*')) {
  const tag = el.tagName.toLowerCase();
  if (['script', 'iframe', 'object', 'embed', 'link', 'img'].includes(tag)) markup.push(`<${tag}>`);
  for (const attr of el.attributes) {
    if (attr.name.toLowerCase().startsWith('on')) markup.push(`${tag} ${attr.name}`);
  }
}
const line = (sel, kind) => {
  const l = document.querySelector(sel);
  if (!l) return null;
  const s = getComputedStyle(l);
  return { kind, text: l.textContent, background: s.backgroundColor, color: s.color };
};
return {
  flags, markup,
  add: line('.diff .add', 'add'),
  del: line('.diff .del', 'del'),
  ctx: line('.diff span:not(.add):not(.del):not(.hunk)', 'ctx'),
};
"#;

/// "Export report" writes the battle's report.html; opened in this very
/// webview it runs nothing, loads nothing, and colours the diffs.
async fn exported_report_is_inert_and_coloured(app: &App, beacon: &Beacon) -> Result<()> {
    app.click("[data-testid=export-battle]").await?;
    let written = app.text_of("[data-testid=battle-report-file]").await?;
    let file = written
        .split_whitespace()
        .find(|w| w.ends_with("report.html"))
        .with_context(|| format!("no report path in {written:?}"))?
        .to_string();
    app.client()
        .goto(&format!("file://{file}"))
        .await
        .context("opening the battle report in the webview")?;
    let shown: ReportShown = app
        .wait_until("the report's diff", Duration::from_secs(10), || async {
            let shown: ReportShown = app.js(INSPECT_REPORT, vec![]).await?;
            Ok(shown.add.is_some().then_some(shown))
        })
        .await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after: ReportShown = app.js(INSPECT_REPORT, vec![]).await?;
    ensure!(
        shown.flags.is_empty() && after.flags.is_empty() && after.markup.is_empty(),
        "the opened report ran or holds {:?} {:?}",
        after.flags,
        after.markup
    );
    ensure!(
        beacon.hits().is_empty(),
        "the opened report loaded {:?}",
        beacon.hits()
    );
    let (add, del, ctx) = (
        after.add.context("no added line")?,
        after.del.context("no removed line")?,
        after.ctx.context("no context line")?,
    );
    check_colours(&add, &ctx, "green", greenish)?;
    check_colours(&del, &ctx, "red", reddish)?;
    app.screenshot("battle-coding-report-html").await?;
    Ok(())
}

/// A CLI agent may run a model from its own configuration: the launcher
/// lets the user type it, and the agent gets it as given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_agent_runs_a_model_typed_in_the_launcher() -> Result<()> {
    let Some(h) = Harness::start("a_cli_agent_runs_a_model_typed_in_the_launcher").await? else {
        return Ok(());
    };
    let project = h.git_project(&[("README.md", "# Models\n")])?;
    h.server().set_model(
        "coder-a",
        agent(&[("a.txt", "from native\n")], "Wrote a.txt."),
    );
    // A command backend that writes down the model it was given.
    let mut config = config_toml(&[ProviderEntry::cloud("scripted", h.server())], None);
    config.push_str(
        "\n[[backend]]\nname = \"recorder\"\n\
         command = [\"sh\", \"-c\", \"printf '%s\\\\n' \\\"$1\\\" > model.txt\", \"sh\", \"{model}\", \"{prompt}\"]\n",
    );
    h.write_config(&config)?;
    let app = h.launch().await?;
    let form = BattleForm::coding(
        &project,
        "Say which model you are.",
        &[("native", "coder-a")],
    );
    app.open_launcher().await?;
    app.fill_launcher(&form).await?;

    // A second row: the recorder with a model no provider serves, typed in.
    app.set_contestant_rows(2).await?;
    let rows = app.find_all("[data-testid=contestant-row]").await?;
    let row = rows.get(1).context("the second contestant row")?;
    let identity = row
        .find(arena_e2e::Locator::Css(
            "select[data-testid=contestant-identity]",
        ))
        .await?;
    app.choose(&identity, "recorder").await?;
    let model = row
        .find(arena_e2e::Locator::Css(
            "select[data-testid=contestant-model]",
        ))
        .await?;
    // Picking this option swaps the select for a text field (so `choose`,
    // which reads the select back, does not apply).
    let type_it = model
        .find(arena_e2e::Locator::Css("option[value=__type_model__]"))
        .await
        .context("the select's \"Type a model id\" option")?;
    type_it
        .click()
        .await
        .context("picking \"Type a model id\"")?;
    let typed = app
        .wait_for("[data-testid=contestant-row] input[data-testid=contestant-model-typed]")
        .await?;
    app.fill(&typed, "my-own-model").await?;
    app.press_start().await?;
    let id = app
        .wait_until(
            "the battle view to open",
            Duration::from_secs(30),
            || async {
                Ok(app
                    .hash()
                    .await?
                    .strip_prefix("#/battle/")
                    .map(str::to_string))
            },
        )
        .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;

    let battle = h.engine()?.battle(&id).await?;
    let recorder = battle
        .contestants
        .iter()
        .find(|c| c.identity == "recorder")
        .context("the recorder contestant")?;
    ensure!(
        recorder.model == "my-own-model",
        "model {:?}",
        recorder.model
    );
    ensure!(
        recorder.status == arena_e2e::arena_core::ContestantStatus::Done,
        "recorder ended {:?}: {:?}",
        recorder.status,
        recorder.error
    );
    let worktree = recorder.worktree.as_ref().context("a worktree")?;
    let written = std::fs::read_to_string(worktree.join("model.txt"))
        .with_context(|| format!("reading model.txt in {}", worktree.display()))?;
    ensure!(
        written.trim() == "my-own-model",
        "the agent got {written:?}"
    );
    Ok(())
}
