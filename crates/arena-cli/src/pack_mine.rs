//! `arena pack mine`: the static scan of a project's history for tasks
//! (issue 41): the candidates, every drop by reason, the time per stage;
//! with `--out`, the candidates as a pack that is not validated yet.

use std::path::PathBuf;

use arena_core::pack::mine::{self, MineOptions};
use arena_core::Error;
use clap::Args;

#[derive(Args)]
pub struct MineArgs {
    /// The project's repository.
    #[arg(long, value_name = "DIR")]
    pub project: PathBuf,
    /// Stop after this many candidates (the scan goes newest first).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only commits committed since this date (as git reads it).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only commits committed until this date (as git reads it).
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// Write the candidates as a pack (a folder that does not exist yet);
    /// its tasks are not validated yet.
    #[arg(long, value_name = "PACK")]
    pub out: Option<PathBuf>,
    /// The tests' command of the written pack (detected from the project's
    /// files at each base when not given).
    #[arg(long, value_name = "CMD")]
    pub test_command: Option<String>,
    /// Print machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: MineArgs) -> Result<(), Error> {
    let report = mine::mine(&MineOptions {
        project: args.project.clone(),
        limit: args.limit,
        since: args.since.clone(),
        until: args.until.clone(),
        cancel: None,
    })?;
    let written = match &args.out {
        Some(out) => Some(mine::write_pack(
            &report,
            &args.project,
            out,
            args.test_command.clone(),
        )?),
        None => None,
    };
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let (Some(w), Some(map)) = (&written, value.as_object_mut()) {
            map.insert(
                "pack".into(),
                serde_json::Value::String(w.pack.display().to_string()),
            );
        }
        println!("{value}");
        return Ok(());
    }
    for t in &report.tasks {
        let flag = if t.environment_changes.is_empty() {
            String::new()
        } else {
            format!(
                "  (environment changes: {})",
                t.environment_changes.join(", ")
            )
        };
        println!(
            "{}  {}  {:<10} {:>3} file(s) {:>4} line(s)  {}{flag}",
            &t.commit[..t.commit.len().min(12)],
            t.committed_at.get(..10).unwrap_or(&t.committed_at),
            format!("{:?}", t.ecosystem).to_lowercase(),
            t.files.len(),
            t.lines,
            t.subject,
        );
    }
    if !report.tasks.is_empty() {
        println!();
    }
    print!("{}", mine::yield_table(&report));
    if let Some(w) = written {
        println!(
            "\nWrote {} task(s) to {}: not validated yet (no instruction, no FAIL_TO_PASS test).",
            w.tasks.len(),
            w.pack.display()
        );
    }
    Ok(())
}
