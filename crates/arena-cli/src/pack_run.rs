//! `arena pack run` and `arena pack report`: a pack's tasks run as a
//! series (each task × contestant, N times, through the lanes, resumable),
//! each result decided by the task's verifier, and the scores with their
//! intervals.

use std::path::PathBuf;

use arena_core::battle::ContestantSpec;
use arena_core::{Engine, Error, Invalid, PackRunReport, PackRunRequest, SeriesStart};
use clap::Args;

use crate::print_json;
use crate::view::shown;

#[derive(Args)]
pub struct PackRunArgs {
    /// The pack's folder (`sample`: the sample pack Arena ships).
    #[arg(value_parser = crate::pack_folder::pack_folder)]
    pack: PathBuf,
    /// The project the tasks' bases are in (default: the pack's own bundle).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// A contestant as IDENTITY@MODEL; 2 to 6 of them.
    #[arg(short = 'c', long = "contestant", value_name = "IDENTITY@MODEL")]
    contestants: Vec<String>,
    /// Runs of each task per contestant (default: the pack's, else 5).
    #[arg(long)]
    runs: Option<u32>,
    /// Battles at once (always within the lanes).
    #[arg(long, default_value_t = 1)]
    parallel: u32,
    /// Only these tasks (ids, comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "ID,…")]
    tasks: Vec<String>,
    /// Spend at most this much (USD); needs a [[price]] for every model.
    #[arg(long, value_name = "USD")]
    budget_usd: Option<f64>,
    /// An idempotency key: the same key again returns the run it started
    /// (and, when it was stopped, `arena series resume` finishes it).
    #[arg(long)]
    key: Option<String>,
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

/// `arena pack run`.
pub async fn run(engine: &Engine, args: PackRunArgs) -> Result<(), Error> {
    let contestants = args
        .contestants
        .iter()
        .map(|c| ContestantSpec::parse(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Invalid::Other(format!("--contestant: {e}")))?;
    let started = engine
        .start_pack_run(PackRunRequest {
            pack: args.pack.clone(),
            project: args.project.clone(),
            contestants,
            runs: args.runs,
            parallel: args.parallel,
            tasks: args.tasks.clone(),
            budget_usd: args.budget_usd,
            key: args.key.clone(),
        })
        .await?;
    for s in &started.skipped {
        eprintln!(
            "arena: task {} is left out: {}",
            shown(&s.id),
            shown(&s.reason)
        );
    }
    let series = started.start.series().clone();
    if let SeriesStart::Existing(s) = &started.start {
        if !args.json {
            eprintln!(
                "arena: the key `{}` already started pack run {} ({})",
                args.key.as_deref().unwrap_or(""),
                arena_core::battle::short_id(&s.id),
                s.status
            );
        }
    }
    if !args.json {
        eprintln!(
            "arena: pack run {} — {} task(s) × {} contestant(s) × {} run(s), project {}",
            arena_core::battle::short_id(&series.id),
            series.request.prompts.len(),
            series.request.contestants.len(),
            series.request.runs,
            started.project.display()
        );
    }
    let resumable =
        matches!(started.start, SeriesStart::Existing(_)) && !series.status.is_terminal();
    if matches!(started.start, SeriesStart::Created(_)) || resumable {
        crate::series::follow(engine, &series.id, !args.json).await?;
    }
    let report = engine.pack_run_report(&series.id).await?;
    print_report(&report, args.json);
    Ok(())
}

#[derive(Args)]
pub struct PackCheckArgs {
    /// The pack's folder (`sample`: the sample pack Arena ships).
    #[arg(value_parser = crate::pack_folder::pack_folder)]
    pack: PathBuf,
    /// The project the tasks' bases are in (default: the pack's own bundle).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Only these tasks (ids, comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "ID,…")]
    tasks: Vec<String>,
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

/// `arena pack check`: exit status 1 when a task is broken.
pub async fn check(engine: &Engine, args: PackCheckArgs) -> Result<(), Error> {
    let started = engine
        .start_pack_check(&args.pack, args.project.as_deref(), &args.tasks)
        .await?;
    let id = started.start.series().id.clone();
    crate::series::follow(engine, &id, !args.json).await?;
    let check = engine.pack_check_report(&id, started.skipped).await?;
    let broken = check.tasks.iter().filter(|t| t.broken.is_some()).count();
    if args.json {
        print_json(&check);
    } else {
        for t in &check.tasks {
            match &t.broken {
                None => println!("ok      {}", shown(&t.id)),
                Some(why) => println!("broken  {}: {}", shown(&t.id), shown(why)),
            }
        }
        for s in &check.skipped {
            println!("skipped {}: {}", shown(&s.id), shown(&s.reason));
        }
        println!(
            "{} of {} task(s) sound; broken ones are left out of later runs",
            check.tasks.len() - broken,
            check.tasks.len()
        );
    }
    if broken > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// `arena pack report RUN --format md|html|json|csv`.
pub async fn report(engine: &Engine, id: &str, format: &str) -> Result<(), Error> {
    let report = engine.pack_run_report(id).await?;
    match format {
        "json" => print_json(&report),
        "csv" => print!("{}", arena_core::pack_report_csv(&report)),
        "html" => print!("{}", arena_core::pack_report_html(&report)),
        _ => print!("{}", shown(&arena_core::pack_report_markdown(&report))),
    }
    Ok(())
}

fn print_report(report: &PackRunReport, json: bool) {
    if json {
        print_json(report);
    } else {
        print!("{}", shown(&arena_core::pack_report_markdown(report)));
    }
}
