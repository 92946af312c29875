//! `arena`: the Arena engine from a terminal, for people and scripts.
//!
//! Exit status: 0 when the command did its job (a battle that reached any
//! terminal state counts), 2 with a one-line reason for input the user can
//! fix, 1 for anything else.

mod progress;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use arena_core::battle::{BattleRequest, BattleType, ContestantSpec};
use arena_core::{Battle, Engine, EngineOptions, Error, Invalid};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "arena",
    version,
    about = "Run one prompt against 2–6 AI contestants and compare them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Providers, their lanes, and the models they serve.
    Providers(JsonFlag),
    /// Personas from the AGENTS.md registry.
    Personas(JsonFlag),
    /// Run and inspect battles.
    #[command(subcommand)]
    Battle(BattleCommand),
}

#[derive(Args)]
struct JsonFlag {
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum BattleCommand {
    /// Start a battle and follow it to the end.
    Run(RunArgs),
    /// Battles, newest first.
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// One battle with its contestants and benchmarks.
    Show {
        id: String,
        /// Also print each contestant's output.
        #[arg(long)]
        output: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Cancel a battle, or one contestant of it.
    Cancel {
        id: String,
        /// Cancel only this contestant (id, id prefix, or 1-based position).
        #[arg(long)]
        contestant: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Finish battles left running by a process that stopped (all, or one).
    Resume {
        id: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Set the winner (overrides the analysis), or clear it.
    Winner {
        id: String,
        /// Contestant id, id prefix, or 1-based position.
        #[arg(required_unless_present = "clear", conflicts_with = "clear")]
        contestant: Option<String>,
        #[arg(long)]
        clear: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
}

#[derive(Args)]
struct RunArgs {
    /// Battle type: qa or coding.
    #[arg(long = "type", value_name = "TYPE")]
    battle_type: String,
    /// The project folder; results go to PROJECT/Arena/.
    #[arg(long)]
    project: PathBuf,
    /// The prompt every contestant gets.
    #[arg(
        long,
        conflicts_with = "prompt_file",
        required_unless_present = "prompt_file"
    )]
    prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long, value_name = "FILE")]
    prompt_file: Option<PathBuf>,
    /// A contestant as IDENTITY@MODEL (persona for Q&A, backend for Coding); 2 to 6 of them.
    #[arg(short = 'c', long = "contestant", value_name = "IDENTITY@MODEL")]
    contestants: Vec<String>,
    #[command(flatten)]
    json: JsonFlag,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("arena: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = e.to_string().replace('\n', " ");
            eprintln!("arena: {message}");
            if e.is_user_error() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn print_json(value: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

async fn run(cli: Cli) -> Result<(), Error> {
    let engine = Engine::open(EngineOptions::from_env()?)?;
    match cli.command {
        Command::Providers(flags) => {
            let catalog = engine.catalog().await;
            if flags.json {
                print_json(&view::catalog_json(&catalog));
            } else {
                print!("{}", view::catalog_text(&catalog));
            }
        }
        Command::Personas(flags) => {
            let registry = engine.personas()?;
            if flags.json {
                print_json(&serde_json::json!({
                    "registry": registry.path,
                    "personas": registry.personas,
                }));
            } else {
                println!("Personas from {}:", registry.path.display());
                for p in &registry.personas {
                    println!(
                        "  {:<16} {}",
                        p.name,
                        p.description.as_deref().unwrap_or("")
                    );
                }
            }
        }
        Command::Battle(command) => battle(&engine, command).await?,
    }
    Ok(())
}

async fn battle(engine: &Engine, command: BattleCommand) -> Result<(), Error> {
    match command {
        BattleCommand::Run(args) => {
            let json = args.json.json;
            let request = run_request(args)?;
            let battle = engine.create_battle(request).await?;
            let battle = progress::follow(engine, battle, !json).await?;
            show(&battle, json, false);
        }
        BattleCommand::List { limit, json } => {
            let battles = engine.battles(limit).await?;
            if json.json {
                print_json(&serde_json::Value::Array(
                    battles.iter().map(view::battle_summary_json).collect(),
                ));
            } else {
                print!("{}", view::list_text(&battles));
            }
        }
        BattleCommand::Show { id, output, json } => {
            let battle = engine.battle(&resolve_battle(engine, &id)?).await?;
            show(&battle, json.json, output);
        }
        BattleCommand::Cancel {
            id,
            contestant,
            json,
        } => {
            let id = resolve_battle(engine, &id)?;
            let battle = match contestant {
                Some(c) => {
                    let b = engine.battle(&id).await?;
                    let cid = resolve_contestant(&b, &c)?;
                    engine.cancel_contestant(&id, &cid).await?
                }
                None => engine.cancel_battle(&id).await?,
            };
            show(&battle, json.json, false);
        }
        BattleCommand::Resume { id, json } => {
            let battles = match id {
                Some(id) => {
                    let id = resolve_battle(engine, &id)?;
                    let battle = engine.battle(&id).await?;
                    let resumed = progress::resume(engine, battle, !json.json).await?;
                    vec![resumed]
                }
                None => engine.resume(None).await?,
            };
            if json.json {
                print_json(&serde_json::Value::Array(
                    battles.iter().map(view::battle_json).collect(),
                ));
            } else if battles.is_empty() {
                println!("No battles were left running.");
            } else {
                for b in &battles {
                    print!("{}", view::battle_text(b, false));
                }
            }
        }
        BattleCommand::Winner {
            id,
            contestant,
            clear: _,
            json,
        } => {
            let id = resolve_battle(engine, &id)?;
            let cid = match contestant {
                Some(c) => Some(resolve_contestant(&engine.battle(&id).await?, &c)?),
                None => None,
            };
            let battle = engine.set_winner(&id, cid.as_deref()).await?;
            show(&battle, json.json, false);
        }
    }
    Ok(())
}

fn show(battle: &Battle, json: bool, output: bool) {
    if json {
        print_json(&view::battle_json(battle));
    } else {
        print!("{}", view::battle_text(battle, output));
    }
}

fn run_request(args: RunArgs) -> Result<BattleRequest, Error> {
    let battle_type = BattleType::parse_arg(&args.battle_type)?;
    let prompt = match (args.prompt, args.prompt_file) {
        (Some(p), _) => p,
        (None, Some(file)) => std::fs::read_to_string(&file).map_err(|e| {
            Invalid::Other(format!(
                "cannot read the prompt file {}: {e}",
                file.display()
            ))
        })?,
        (None, None) => String::new(),
    };
    let contestants = args
        .contestants
        .iter()
        .map(|c| ContestantSpec::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(BattleRequest {
        battle_type,
        project: args.project,
        prompt,
        contestants,
    })
}

/// A full battle id, or a unique prefix of one.
fn resolve_battle(engine: &Engine, id: &str) -> Result<String, Error> {
    engine.store().resolve_battle_id(id)
}

/// A contestant id, a unique id prefix, or a 1-based position.
fn resolve_contestant(battle: &Battle, key: &str) -> Result<String, Error> {
    if let Ok(n) = key.parse::<usize>() {
        if (1..=battle.contestants.len()).contains(&n) && key.len() <= 2 {
            return Ok(battle.contestants[n - 1].id.clone());
        }
    }
    let matches: Vec<_> = battle
        .contestants
        .iter()
        .filter(|c| c.id.starts_with(key))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err(Error::NotFound {
            what: "contestant",
            id: format!("{key} in battle {}", battle.id),
        }),
        _ => Err(Invalid::Other(format!(
            "contestant `{key}` is ambiguous; give more of its id"
        ))
        .into()),
    }
}
