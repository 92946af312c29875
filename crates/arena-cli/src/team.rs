//! `arena team`: what a team database's series may make this machine do.
//! A worker runs a series' check command and fetches its remote only as
//! this machine's user allowed; `arena team approve SERIES` shows exactly
//! what the series asks (every text from the shared database made safe to
//! print) and, once confirmed, remembers it on this machine.

use std::io::{BufRead, IsTerminal, Write};

use arena_core::{Engine, Error, Invalid};
use clap::Subcommand;

use crate::view::shown;

#[derive(Subcommand)]
pub enum TeamCommand {
    /// Show what a series asks of this machine (its check commands, its
    /// git remote) and approve it: a worker here then runs those checks
    /// for its project and fetches that remote with this machine's git
    /// credentials.
    Approve {
        /// The series (its id or short id).
        id: String,
        /// Approve without asking (needed when standard input is not a
        /// terminal).
        #[arg(long)]
        yes: bool,
        /// Print what was approved as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub async fn team(engine: &Engine, command: TeamCommand) -> Result<(), Error> {
    match command {
        TeamCommand::Approve { id, yes, json } => approve(engine, &id, yes, json).await,
    }
}

async fn approve(engine: &Engine, id: &str, yes: bool, json: bool) -> Result<(), Error> {
    let asked = engine.team_asks(id).await?;
    let short = arena_core::battle::short_id(&asked.series);
    if asked.checks.is_empty() && asked.remote.is_none() {
        if json {
            crate::print_json(&serde_json::json!({ "series": asked.series, "approved": false }));
        } else {
            println!("Series {short} asks this machine for nothing to approve.");
        }
        return Ok(());
    }
    // To stderr with --json, so that standard output stays JSON.
    let mut lines = vec![format!(
        "Series {short}, started on {}, project {}:",
        shown(asked.origin.as_deref().unwrap_or("an unknown machine")),
        shown(&asked.project)
    )];
    for check in &asked.checks {
        lines.push(format!("  run check command: {}", shown(check)));
    }
    if let Some(remote) = &asked.remote {
        lines.push(format!(
            "  fetch its remote with this machine's git credentials: {}",
            shown(remote)
        ));
    }
    let text = lines.join("\n");
    if json {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
    if !yes && !confirmed()? {
        return Err(Invalid::Other("nothing approved".into()).into());
    }
    let now = engine.approve_series(id).await?;
    if json {
        crate::print_json(&serde_json::json!({
            "series": now.series,
            "project": now.project,
            "origin": now.origin,
            "checks": now.checks,
            "remote": now.remote,
            "approved": true,
        }));
    } else {
        println!("Approved on this machine; a worker here takes the series up within seconds.");
    }
    Ok(())
}

/// Asks on the terminal; without one, `--yes` is needed.
fn confirmed() -> Result<bool, Error> {
    if !std::io::stdin().is_terminal() {
        return Err(Invalid::Other(
            "standard input is not a terminal: pass --yes to approve without being asked".into(),
        )
        .into());
    }
    print!("Approve? [y/N] ");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| Error::Task(format!("could not read the answer: {e}")))?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}
