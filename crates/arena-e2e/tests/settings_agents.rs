//! Settings adds and edits agents and personas (issue 42, item 12): a form
//! that writes the `[[backend]]` into the config file the app uses, keeping
//! the file's comments and other tables, and a persona into `AGENTS.md`;
//! a known agent that is not installed says the command that installs it.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_e2e::Harness;

/// A comment of the user's that every write must keep.
const MY_COMMENT: &str = "# my own note about this file";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_add_an_agent_and_a_persona_into_the_files() -> Result<()> {
    let Some(h) = Harness::start("settings_add_an_agent_and_a_persona_into_the_files").await?
    else {
        return Ok(());
    };
    let config = format!("{MY_COMMENT}\n{}", h.default_config());
    h.write_config(&config)?;
    // No agent program on PATH but the system's: the known CLI agents are
    // missing here, and each says how to install it.
    let app = h.launch_with_env(&[("PATH", "/usr/bin:/bin")]).await?;
    app.goto("#/settings").await?;
    app.wait_for("[data-testid=backend-row][data-name=native]")
        .await?;

    // A missing known agent names the command that installs it.
    let hint = app
        .text_of("[data-testid=backend-row][data-name=claude-code] [data-testid=install-hint]")
        .await?;
    ensure!(
        hint.contains("npm install -g @anthropic-ai/claude-code"),
        "claude-code's install hint reads {hint:?}"
    );
    let aider = app
        .text_of("[data-testid=backend-row][data-name=aider] [data-testid=install-hint]")
        .await?;
    ensure!(
        aider.contains("pipx install aider-chat"),
        "aider's hint: {aider:?}"
    );

    // Add an agent: first with a command that does not pass the task.
    app.click("[data-testid=add-agent]").await?;
    let form = "[data-testid=agent-editor]";
    let name = app
        .wait_for(&format!("{form} input[name=agent-name]"))
        .await?;
    app.fill(&name, "my-agent").await?;
    let command = format!("{form} textarea[name=agent-command]");
    type_lines(&app, &command, "my-agent\n--message").await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    let problem = app.text_of(&format!("{form} .field-error")).await?;
    ensure!(
        problem.contains("{prompt}"),
        "the form says {problem:?} for a command without {{prompt}}"
    );
    let unchanged = std::fs::read_to_string(h.config_path())?;
    ensure!(unchanged == config, "an invalid agent changed the file");

    type_lines(&app, &command, "my-agent\n--message\n{prompt}").await?;
    app.scroll_to(&app.wait_for(form).await?).await?;
    app.screenshot("settings-add-agent").await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    app.wait_for("[data-testid=backend-row][data-name=my-agent]")
        .await?;
    let written = std::fs::read_to_string(h.config_path())?;
    let parsed = arena_e2e::arena_core::config::Config::parse(&written)
        .map_err(anyhow::Error::msg)
        .context("the written config reads")?;
    ensure!(
        parsed.backends.len() == 1
            && parsed.backends[0].name == "my-agent"
            && parsed.backends[0].command == ["my-agent", "--message", "{prompt}"],
        "the config file's agents: {:?}",
        parsed.backends
    );
    ensure!(
        written.contains(MY_COMMENT),
        "the user's comment is gone:\n{written}"
    );
    ensure!(
        parsed.providers.len() == 1,
        "the providers changed: {:?}",
        parsed.providers
    );
    // Its program is not installed: the row says to install it or fix it.
    let note = app
        .text_of("[data-testid=backend-row][data-name=my-agent] [data-testid=install-hint]")
        .await?;
    ensure!(note.contains("my-agent"), "the new agent's note: {note:?}");

    // Edit it in place: renamed, one more argument.
    app.click("[data-testid=backend-row][data-name=my-agent] [data-testid=edit-agent]")
        .await?;
    let name = app
        .wait_for(&format!("{form} input[name=agent-name]"))
        .await?;
    app.fill(&name, "our-agent").await?;
    type_lines(&app, &command, "our-agent\n--model\n{model}\n{prompt}").await?;
    app.click(&format!("{form} button[type=submit]")).await?;
    app.wait_for("[data-testid=backend-row][data-name=our-agent]")
        .await?;
    let written = std::fs::read_to_string(h.config_path())?;
    let parsed =
        arena_e2e::arena_core::config::Config::parse(&written).map_err(anyhow::Error::msg)?;
    ensure!(
        parsed.backends.len() == 1
            && parsed.backends[0].name == "our-agent"
            && parsed.backends[0].command == ["our-agent", "--model", "{model}", "{prompt}"],
        "after the edit: {:?}",
        parsed.backends
    );

    // A persona: added through its form, written into AGENTS.md.
    let before = app.count("[data-testid=persona-row]").await?;
    app.click("[data-testid=add-persona]").await?;
    let pform = "[data-testid=persona-editor]";
    let pname = app
        .wait_for(&format!("{pform} input[name=persona-name]"))
        .await?;
    app.fill(&pname, "Terse Tutor").await?;
    let prompt = app
        .wait_for(&format!("{pform} textarea[name=persona-prompt]"))
        .await?;
    app.fill(&prompt, "Answer in two sentences at most.")
        .await?;
    let temp = app
        .wait_for(&format!("{pform} input[name=persona-temperature]"))
        .await?;
    app.fill(&temp, "0.3").await?;
    app.click(&format!("{pform} button[type=submit]")).await?;
    app.wait_until(
        "the new persona in the list",
        Duration::from_secs(10),
        || async {
            let n = app.count("[data-testid=persona-row]").await?;
            Ok((n == before + 1).then_some(()))
        },
    )
    .await?;
    app.wait_for("[data-testid=persona-row][data-name='Terse Tutor']")
        .await?;
    let registry = std::fs::read_to_string(h.data_dir().join("AGENTS.md"))?;
    ensure!(
        registry.contains("## Terse Tutor\n- temperature: 0.3\n\nAnswer in two sentences at most."),
        "AGENTS.md holds:\n{registry}"
    );
    ensure!(
        registry.starts_with("# Arena personas"),
        "the registry's preamble is gone"
    );
    app.close().await
}

/// Types `text` into the textarea at `css`, each line break as the Enter
/// key (WebDriver's typing drops a bare newline).
async fn type_lines(app: &arena_e2e::App, css: &str, text: &str) -> Result<()> {
    let field = app.wait_for(css).await?;
    app.fill(&field, &text.replace('\n', "\u{E007}")).await?;
    let typed: String = app
        .js(
            "return document.querySelector(arguments[0]).value;",
            vec![css.into()],
        )
        .await?;
    ensure!(typed == text, "the field holds {typed:?}, not {text:?}");
    Ok(())
}
