//! `arena series`: the same battle many times, with goals, budgets and a
//! report. A running series shows one progress line on stderr (battles
//! done of N, time left, spend); Ctrl-C cancels it.

use std::path::PathBuf;
use std::time::Duration;

use arena_api::{BattleTypeDto, SeriesDto, StartSeriesRequest};
use arena_core::battle::BattleType;
use arena_core::series::SeriesRequest;
use arena_core::{Engine, Error, Invalid, SeriesStart};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::{print_json, JsonFlag};

#[derive(Subcommand)]
pub enum SeriesCommand {
    /// Run one contestant set many times (over a prompt or a prompt set) and report.
    Run(Box<SeriesArgs>),
    /// Series, newest first.
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// One series: its progress and its report per contestant.
    Show {
        id: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Stop a series (from any process): no new battle starts, running ones are cancelled.
    Cancel {
        id: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Finish series left running by a process that stopped (all, or one).
    Resume {
        id: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// A series' tags: list them, add some, or remove some (its battles
    /// follow).
    Tag(crate::TagArgs),
    /// Write the series' report files again (report.md, report.json, runs.csv,
    /// report.html) and print the folder, or with --format one file's text.
    Report {
        id: String,
        /// Print this report instead of the folder: md, json, csv or html.
        #[arg(long, value_parser = ["md", "json", "csv", "html"])]
        format: Option<String>,
    },
}

#[derive(Args)]
pub struct SeriesArgs {
    /// Battle type: qa or coding.
    #[arg(long = "type", value_name = "TYPE")]
    battle_type: String,
    /// The project folder; results go to PROJECT/Arena/.
    #[arg(long)]
    project: PathBuf,
    /// The prompt of every run.
    #[arg(long, conflicts_with = "prompts", required_unless_present = "prompts")]
    prompt: Option<String>,
    /// A prompt set: one prompt per line, or JSONL with `prompt` and optional `goal`, `check`, `tags`.
    #[arg(long, value_name = "FILE")]
    prompts: Option<PathBuf>,
    /// A contestant as IDENTITY@MODEL; 2 to 6 of them.
    #[arg(short = 'c', long = "contestant", value_name = "IDENTITY@MODEL")]
    contestants: Vec<String>,
    /// Runs of each prompt (with --until-decided, the most).
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// Battles at once (always within the lanes).
    #[arg(long, default_value_t = 1)]
    parallel: u32,
    /// What a result must achieve; a judge model checks every result.
    #[arg(long)]
    goal: Option<String>,
    /// The goal judge (default: default_model from arena.toml).
    #[arg(long, value_name = "MODEL")]
    goal_model: Option<String>,
    /// A second judge: a pass counts only if it agrees.
    #[arg(long, value_name = "MODEL")]
    confirm_model: Option<String>,
    /// Turns a contestant gets to reach the goal (1–25; Coding: refine rounds with the check's output).
    #[arg(long, default_value_t = 1)]
    max_turns: u32,
    /// Spend at most this much (USD); needs a [[price]] for every model.
    #[arg(long, value_name = "USD")]
    budget: Option<f64>,
    /// Stop once the leader's win-rate interval separates from every other's.
    #[arg(long)]
    until_decided: bool,
    /// An idempotency key: the same key again returns the series it started.
    #[arg(long)]
    key: Option<String>,
    /// Don't judge a winner of each battle.
    #[arg(long)]
    no_analysis: bool,
    /// Coding: a shell command run in each finished worktree; exit 0 is the goal.
    #[arg(long, value_name = "CMD")]
    check: Option<String>,
    /// A tag for the series' battles (repeat for more).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Every battle blind: its contestants show as A, B, … until you vote
    /// on it (`arena battle vote`).
    #[arg(long)]
    blind: bool,
    #[command(flatten)]
    json: JsonFlag,
}

pub async fn series(engine: &Engine, command: SeriesCommand) -> Result<(), Error> {
    match command {
        SeriesCommand::Run(args) => run(engine, *args).await,
        SeriesCommand::List { limit, json } => {
            // Progress only: a report reads every battle (`series show` has it).
            let list = engine.series_list(limit).await?;
            let mut all = Vec::new();
            for s in &list {
                all.push(engine.series_overview(&s.id).await?);
            }
            if json.json {
                print_json(&all.iter().map(SeriesDto::from).collect::<Vec<_>>());
            } else if all.is_empty() {
                println!("No series yet.");
            } else {
                for summary in &all {
                    let s = &summary.series;
                    println!(
                        "{}  {:<14} {:>5}/{:<5} {:<6}  {}",
                        arena_core::battle::short_id(&s.id),
                        s.status,
                        summary.progress.done,
                        s.total,
                        s.request.battle_type,
                        crate::view::shown(
                            s.request.prompts[0].prompt.lines().next().unwrap_or("")
                        )
                    );
                }
            }
            Ok(())
        }
        SeriesCommand::Show { id, json } => show(engine, &id, json.json).await,
        SeriesCommand::Cancel { id, json } => {
            let s = engine.cancel_series(&id).await?;
            if json.json {
                print_json(&SeriesDto::from(&engine.series_summary(&s.id).await?));
            } else {
                println!(
                    "Series {}: cancel requested ({}).",
                    arena_core::battle::short_id(&s.id),
                    s.status
                );
            }
            Ok(())
        }
        SeriesCommand::Resume { id, json } => {
            let resumed = engine.resume_series(id.as_deref()).await?;
            if json.json {
                let mut all = Vec::new();
                for s in &resumed {
                    all.push(SeriesDto::from(&engine.series_summary(&s.id).await?));
                }
                print_json(&all);
            } else if resumed.is_empty() {
                println!("No series were left running.");
            } else {
                for s in &resumed {
                    show(engine, &s.id, false).await?;
                }
            }
            Ok(())
        }
        SeriesCommand::Tag(args) => {
            let series = engine.series(&args.id).await?;
            let series = engine
                .set_series_tags(&series.id, &args.applied_to(&series.tags))
                .await?;
            args.print(
                &format!("Series {}", arena_core::battle::short_id(&series.id)),
                &series.tags,
            );
            Ok(())
        }
        SeriesCommand::Report { id, format } => {
            let Some(format) = format else {
                let dir = engine.write_series_report(&id).await?;
                println!("{}", dir.display());
                return Ok(());
            };
            // Made from the database: no folder needed on this machine.
            let file = match format.as_str() {
                "csv" => "runs.csv".to_string(),
                other => format!("report.{other}"),
            };
            let text = engine.series_report_text(&id, &file).await?;
            // JSON exact; a report on the terminal is for reading.
            match format.as_str() {
                "json" => print!("{text}"),
                _ => print!("{}", crate::view::shown(&text)),
            }
            Ok(())
        }
    }
}

/// The request as the app sends it, so the CLI and the app check and read
/// it the same way.
fn request(args: &SeriesArgs) -> Result<(SeriesRequest, Option<String>), Error> {
    let battle_type = BattleTypeDto::from(BattleType::parse_arg(&args.battle_type)?);
    let prompt_set = args
        .prompts
        .as_ref()
        .map(|file| {
            std::fs::read_to_string(file).map_err(|e| {
                Invalid::Other(format!(
                    "cannot read the prompt set {}: {e}",
                    file.display()
                ))
            })
        })
        .transpose()?;
    let request = StartSeriesRequest {
        battle_type,
        project: crate::full_path(&args.project).display().to_string(),
        prompt: args.prompt.clone().unwrap_or_default(),
        prompt_set: None,
        contestants: args.contestants.clone(),
        check_command: args.check.clone(),
        runs: args.runs,
        parallel: args.parallel,
        goal: args.goal.clone(),
        goal_model: args.goal_model.clone(),
        confirm_model: args.confirm_model.clone(),
        max_turns: args.max_turns,
        budget_usd: args.budget,
        until_decided: args.until_decided,
        analysis: !args.no_analysis,
        tags: args.tags.clone(),
        blind: args.blind,
        key: args.key.clone(),
    };
    Ok(request.into_engine(prompt_set.as_deref())?)
}

async fn run(engine: &Engine, args: SeriesArgs) -> Result<(), Error> {
    let (request, key) = request(&args)?;
    let started = engine.create_series(request, key).await?;
    let id = started.series().id.clone();
    if let SeriesStart::Existing(s) = &started {
        if !args.json.json {
            eprintln!(
                "arena: the key `{}` already started series {} ({}); nothing new was started",
                args.key.as_deref().unwrap_or(""),
                arena_core::battle::short_id(&s.id),
                s.status
            );
        }
    }
    if started.series().status.is_terminal() || matches!(started, SeriesStart::Existing(_)) {
        return show(engine, &id, args.json.json).await;
    }
    follow(engine, &id, !args.json.json).await?;
    show(engine, &id, args.json.json).await
}

/// Runs the series with a progress line; Ctrl-C cancels it.
pub(crate) async fn follow(engine: &Engine, id: &str, show: bool) -> Result<(), Error> {
    let bar = if show {
        ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} series {prefix}: {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(arena_core::battle::short_id(id));
    bar.enable_steady_tick(Duration::from_millis(200));
    let run = engine.run_series(id);
    tokio::pin!(run);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut interrupted = false;
    // Nothing to show (not a terminal): the progress is not read either.
    let shown = !bar.is_hidden();
    let result = loop {
        tokio::select! {
            done = &mut run => break done,
            _ = tick.tick(), if shown => {
                if let Ok(p) = engine.series_progress(id).await {
                    let eta = p
                        .time_left_ms
                        .map(|ms| format!(", about {} left", human(ms as f64 / 1000.0)));
                    let spent = format!(", spent {}", arena_core::series::spent_line(&p));
                    let waiting = match engine.series(id).await {
                        Ok(s) => s.waiting.map(|w| format!("; {}", crate::view::shown(&w))),
                        Err(_) => None,
                    };
                    bar.set_message(format!(
                        "{} of {} battles done, {} running{}{}{}",
                        p.done,
                        p.total,
                        p.running,
                        eta.unwrap_or_default(),
                        spent,
                        waiting.unwrap_or_default()
                    ));
                }
            }
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                bar.println(format!("arena: cancelling series {} (Ctrl-C again to quit at once)…", arena_core::battle::short_id(id)));
                let (e, i) = (engine.clone(), id.to_string());
                tokio::spawn(async move {
                    if let Err(err) = e.cancel_series(&i).await {
                        eprintln!("arena: cancel failed: {}", crate::view::shown(&err.to_string()));
                    }
                });
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
                    }
                });
            }
        }
    };
    bar.finish_and_clear();
    result.map(|_| ())
}

/// `arena worker`: serves places of running series until Ctrl-C, which
/// stops taking places and waits for those under way (Ctrl-C again quits
/// at once; another worker takes them over).
pub async fn worker(engine: &Engine, places: u32, series: Option<String>) -> Result<(), Error> {
    let stop = tokio_util::sync::CancellationToken::new();
    let options = arena_core::WorkerOptions { places, series };
    eprintln!(
        "arena: worker on {} serving places of running series, {places} at a time (Ctrl-C to stop)",
        crate::view::shown(engine.machine())
    );
    let work = engine.work(options, stop.clone());
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tokio::signal::ctrl_c(), if !stop.is_cancelled() => {
                eprintln!("arena: finishing the places under way (Ctrl-C again to quit at once)…");
                stop.cancel();
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
                    }
                });
            }
        }
    }
}

fn human(secs: f64) -> String {
    match secs {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 5400.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    }
}

async fn show(engine: &Engine, id: &str, json: bool) -> Result<(), Error> {
    let summary = engine.series_summary(id).await?;
    // Why machines left it (a team's workers), each one's latest reason.
    let refusals = engine.series_refusals(&summary.series.id).await?;
    if json {
        let mut value = serde_json::to_value(SeriesDto::from(&summary))?;
        if let Some(object) = value.as_object_mut() {
            let rows: Vec<serde_json::Value> = refusals
                .iter()
                .map(|r| {
                    serde_json::json!({ "machine": r.machine, "reason": r.reason, "at_ms": r.at_ms })
                })
                .collect();
            object.insert("refusals".into(), rows.into());
        }
        print_json(&value);
    } else {
        let report = arena_core::series::report_markdown(&summary);
        print!("{}", crate::view::shown(&report));
        if let Some(why) = &summary.series.waiting {
            println!("\nWaiting: {}", crate::view::shown(why));
        }
        for r in &refusals {
            println!(
                "\nLeft by {}: {}",
                crate::view::shown(&r.machine),
                crate::view::shown(&r.reason)
            );
        }
        if let Some(dir) = &summary.series.report_path {
            println!("\nReport: {}", dir.display());
        }
    }
    Ok(())
}
