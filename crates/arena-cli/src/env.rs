//! `arena env`: the environments Arena prepared for bases whose lockfiles
//! are not the current tree's (kept per environment key under the data
//! directory's `environments/`), listed and removed.

use arena_core::agent::bounds::bytes;
use arena_core::{Engine, EnvEntry, EnvState, Error, PrunedEnv};
use clap::Subcommand;

use crate::view::shown;

#[derive(Subcommand)]
pub enum EnvCommand {
    /// Every prepared environment: its key, project, base, the command
    /// that made it, its size, when it was made and its state.
    List {
        /// Print machine-readable JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove prepared environments (by key, or a unique start of one),
    /// or all of them; one a battle is using is kept.
    Prune {
        /// The keys to remove (from `arena env list`).
        #[arg(value_name = "KEY", required_unless_present = "all")]
        keys: Vec<String>,
        /// Every environment not in use.
        #[arg(long, conflicts_with = "keys")]
        all: bool,
        /// Print machine-readable JSON.
        #[arg(long)]
        json: bool,
    },
}

pub async fn env(engine: &Engine, command: EnvCommand) -> Result<(), Error> {
    match command {
        EnvCommand::List { json } => {
            let list = engine.environments().await?;
            if json {
                crate::print_json(&list.iter().map(EnvRow::from).collect::<Vec<_>>());
            } else if list.is_empty() {
                println!("No prepared environments.");
            } else {
                for e in &list {
                    print!("{}", entry_text(e));
                }
            }
        }
        EnvCommand::Prune { keys, all, json } => {
            let pruned = engine.prune_environments(&keys, all).await?;
            if json {
                crate::print_json(&pruned);
            } else {
                print!("{}", pruned_text(&pruned));
            }
        }
    }
    Ok(())
}

/// One environment as `arena env list --json` prints it.
#[derive(serde::Serialize)]
struct EnvRow {
    key: String,
    state: &'static str,
    path: String,
    project: Option<String>,
    base: Option<String>,
    command: Option<String>,
    size_bytes: Option<u64>,
    created: Option<String>,
}

impl From<&EnvEntry> for EnvRow {
    fn from(e: &EnvEntry) -> Self {
        let r = e.record.as_ref();
        EnvRow {
            key: e.key.clone(),
            state: e.state.as_str(),
            path: e.path.display().to_string(),
            project: r.map(|r| r.project.display().to_string()),
            base: r.map(|r| r.base.clone()),
            command: r.map(|r| r.command.clone()),
            size_bytes: r.map(|r| r.size_bytes),
            created: r.map(|r| r.created.to_rfc3339()),
        }
    }
}

/// A few lines per environment, every text from its record made safe to
/// print.
fn entry_text(e: &EnvEntry) -> String {
    let Some(r) = &e.record else {
        let what = match e.state {
            EnvState::Preparing => "being prepared now",
            _ => "unfinished (left by a prepare that stopped; `arena env prune` removes it)",
        };
        return format!("{}  {what}\n", e.key);
    };
    let base: String = r.base.chars().take(12).collect();
    format!(
        "{}  {}  {}  made {}\n  project {} at {base}\n  command {}\n",
        e.key,
        e.state.as_str(),
        bytes(r.size_bytes),
        r.created.format("%Y-%m-%d %H:%M UTC"),
        shown(&r.project.display().to_string()),
        shown(&r.command),
    )
}

fn pruned_text(pruned: &[PrunedEnv]) -> String {
    if pruned.is_empty() {
        return "Nothing to prune.\n".into();
    }
    let mut text = String::new();
    let mut freed = 0u64;
    for p in pruned {
        if p.removed {
            freed += p.size_bytes;
            text.push_str(&format!("removed {} ({})\n", p.key, bytes(p.size_bytes)));
        } else {
            text.push_str(&format!(
                "kept    {}: {}\n",
                p.key,
                p.kept_because.as_deref().unwrap_or("in use")
            ));
        }
    }
    text.push_str(&format!("{} freed.\n", bytes(freed)));
    text
}
