//! `arena pack mine`: a project's history mined for tasks (issue 41): the
//! static scan (candidates, every drop by reason), then each candidate
//! validated by running (BASE, RED, GOLD in the check's jail), and the
//! yield table; with `--out`, the validated tasks as a pack. With
//! `--static-only`, the scan alone, and `--out` writes its candidates as a
//! pack that is not validated yet.

use std::path::PathBuf;

use arena_core::pack::mine::{self, MineOptions};
use arena_core::{Error, MineEvent};
use clap::Args;

#[derive(Args)]
pub struct MineArgs {
    /// The project's repository.
    #[arg(long, value_name = "DIR")]
    pub project: PathBuf,
    /// Stop after this many validated tasks (with --static-only: this many
    /// candidates); the scan goes newest first.
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
    /// Runs of each tree (BASE, RED, GOLD) per candidate; 5 when they
    /// disagree.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub runs_to_validate: u32,
    /// The model that writes the validated tasks' instructions (default:
    /// the config's default model when its provider is local; a cloud
    /// model only when named here).
    #[arg(long, value_name = "MODEL")]
    pub writer: Option<String>,
    /// The static scan only: no test is run.
    #[arg(long)]
    pub static_only: bool,
    /// Print machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

/// `arena pack mine` with validation by running: arena-core's one path
/// for mining into a pack ([`arena_core::Engine::mine_pack`]), told here
/// as it goes.
pub async fn run_validated(engine: &arena_core::Engine, args: MineArgs) -> Result<(), Error> {
    let options = MineOptions {
        project: args.project.clone(),
        limit: None,
        since: args.since.clone(),
        until: args.until.clone(),
        cancel: None,
    };
    let validate = arena_core::ValidateOptions {
        runs: args.runs_to_validate.max(1),
        test_command: args.test_command.clone(),
        limit: args.limit,
        cancel: None,
    };
    let pack = arena_core::MinePackOptions {
        out: args.out.clone(),
        test_command: args.test_command.clone(),
        writer: args.writer.clone(),
    };
    let quiet = args.json;
    let mut last_validated = 0;
    let mined = engine
        .mine_pack(&options, &validate, &pack, |event| match event {
            MineEvent::Progress(p) => {
                if quiet {
                    return;
                }
                if let Some(current) = &p.current {
                    if p.stage == "validate" {
                        eprintln!("arena: running {}", crate::view::shown(current));
                    }
                } else if p.stage == "validate" && p.validated > last_validated {
                    last_validated = p.validated;
                    if let Some(eta) = p.eta_secs {
                        eprintln!("arena: {} validated, about {eta} s left", p.validated);
                    }
                }
            }
            MineEvent::Writer {
                name,
                leaves_the_machine: true,
            } => eprintln!(
                "arena: the writer {name} is a cloud model: each task's commit message, hidden \
                 tests and failure output leave this machine for it."
            ),
            MineEvent::Writer { .. } => {}
        })
        .await?;
    if args.out.is_some() && mined.pack.is_none() {
        eprintln!("arena: no task was validated: no pack is written");
    }
    if let Some(pack) = &mined.pack {
        crate::pack_review::said_after_mining(&mined.instructions, pack, quiet);
    }
    print_run(&mined.run, mined.pack.as_deref(), args.json)
}

fn print_run(
    run: &arena_core::MineRun,
    pack: Option<&std::path::Path>,
    json: bool,
) -> Result<(), Error> {
    if json {
        let mut value = serde_json::to_value(run)?;
        if let (Some(p), Some(map)) = (pack, value.as_object_mut()) {
            map.insert(
                "pack".into(),
                serde_json::Value::String(p.display().to_string()),
            );
        }
        println!("{value}");
        return Ok(());
    }
    for v in &run.tasks {
        let t = &v.task;
        println!(
            "{}  {}  validated: {} FAIL_TO_PASS, {} PASS_TO_PASS  {}",
            &t.commit[..t.commit.len().min(12)],
            t.committed_at.get(..10).unwrap_or(&t.committed_at),
            v.fail_to_pass.len(),
            v.pass_to_pass.len(),
            crate::view::shown(&t.subject),
        );
    }
    for d in &run.dropped_candidates {
        println!(
            "{}  dropped: {}  {}",
            &d.commit[..d.commit.len().min(12)],
            arena_core::pack::mine::drop_words(&d.reason),
            crate::view::shown(&d.subject),
        );
    }
    println!();
    print!("{}", run.yield_table());
    if let Some(p) = pack {
        println!(
            "\nWrote {} validated task(s) to {} (instructions not written yet).",
            run.validated,
            p.display()
        );
    }
    Ok(())
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
