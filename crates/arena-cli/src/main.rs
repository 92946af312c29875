//! `arena`: the Arena engine from a terminal, for people and scripts.
//!
//! Exit status: 0 when the command did its job (a battle that reached any
//! terminal state counts), 2 with a one-line reason for input the user can
//! fix, 1 for anything else.

mod env;
mod pack;
mod pack_folder;
mod pack_mine;
mod pack_review;
mod pack_run;
mod progress;
mod series;
mod team;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use arena_api::{
    ApplyResultDto, BackendDto, BattleDetailDto, BattleDto, CatalogDto, CrossExaminationDto,
    LeaderboardDto, PersonasDto, PruneDto, RoundDto, WorktreeDto,
};
use arena_core::battle::{BattleQuery, BattleRequest, BattleStatus, BattleType, ContestantSpec};
use arena_core::{Battle, Engine, EngineOptions, Error, Invalid, ReportFormat};
use clap::{Args, Parser, Subcommand};

/// "arena 0.1.0 (commit …, built …)" for `--version`.
static VERSION_LINE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(arena_api::version_line);

#[derive(Parser)]
#[command(
    name = "arena",
    version = VERSION_LINE.as_str(),
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
    /// Coding backends (CLI agents) and whether each is installed.
    Backends(JsonFlag),
    /// Run and inspect battles.
    #[command(subcommand)]
    Battle(BattleCommand),
    /// Run one contestant set many times, with goals, budgets and a report.
    #[command(subcommand)]
    Series(series::SeriesCommand),
    /// Task packs: many tasks with hidden tests (import, export, show).
    #[command(subcommand)]
    Pack(pack::PackCommand),
    /// Serve places of running series (team mode: on any machine; Ctrl-C
    /// stops taking places and waits for those under way).
    Worker {
        /// Places (battles) run at once.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
        places: u32,
        /// Only this series' places (its id or short id).
        #[arg(long, value_name = "ID")]
        series: Option<String>,
    },
    /// Arena's git worktrees (one per Coding contestant).
    #[command(subcommand)]
    Worktrees(WorktreesCommand),
    /// Environments prepared for bases whose lockfiles are not the
    /// current tree's (`[coding] prepare`), kept per environment key.
    #[command(subcommand)]
    Env(env::EnvCommand),
    /// Where Arena keeps its data (this machine's SQLite, or a team's
    /// PostgreSQL) and which machine this is.
    Status(JsonFlag),
    /// A team's shared database (PostgreSQL): its password.
    #[command(subcommand)]
    Database(DatabaseCommand),
    /// What a team's series may make this machine do: approve a series'
    /// check commands and remote.
    #[command(subcommand)]
    Team(team::TeamCommand),
    /// Ratings with 95% intervals, wins, win rate, median speed per (identity, model).
    Leaderboard {
        /// Only battles of this type (qa or coding).
        #[arg(long = "type", value_name = "TYPE")]
        battle_type: Option<String>,
        /// Only the battles of this series (its id or short id).
        #[arg(long, value_name = "ID")]
        series: Option<String>,
        /// Only the battles of this project folder.
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Only the battles carrying this tag.
        #[arg(long, value_name = "TAG")]
        tag: Option<String>,
        /// Only the battles run on this machine (its ARENA_MACHINE, else
        /// its host name).
        #[arg(long, value_name = "NAME")]
        machine: Option<String>,
        /// Only the battles whose verdict this user gave (their ARENA_USER,
        /// else their OS user name).
        #[arg(long, value_name = "NAME")]
        user: Option<String>,
        /// Whose verdicts count: mine (your votes and winner choices), judge
        /// (the analysis), both (yours where given, else the judge's), or
        /// packs (the task packs' verifiers: each task of a pack run as
        /// matches between its contestants).
        #[arg(long, default_value = "both", value_parser = ["mine", "judge", "both", "packs"])]
        source: String,
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// Comma-separated values with a header row.
        #[arg(long)]
        csv: bool,
    },
}

/// `… tag ID [TAG…] [--remove]`, for battles and series.
#[derive(Args)]
pub(crate) struct TagArgs {
    pub(crate) id: String,
    /// Tags to add (or with --remove, to remove).
    pub(crate) tags: Vec<String>,
    #[arg(long)]
    pub(crate) remove: bool,
    #[command(flatten)]
    pub(crate) json: JsonFlag,
}

impl TagArgs {
    /// `current` with the tags added, or (`--remove`) without them
    /// (ignoring case).
    pub(crate) fn applied_to(&self, current: &[String]) -> Vec<String> {
        let mut now = current.to_vec();
        if self.remove {
            now.retain(|t| !self.tags.iter().any(|r| r.trim().eq_ignore_ascii_case(t)));
        } else {
            now.extend(self.tags.iter().cloned());
        }
        now
    }

    /// The tags now, as JSON or a line (`what` has none, when it has none).
    pub(crate) fn print(&self, what: &str, tags: &[String]) {
        if self.json.json {
            print_json(&tags);
        } else if tags.is_empty() {
            println!("{what} has no tags.");
        } else {
            println!("{}", tags.join(", "));
        }
    }
}

#[derive(Args)]
struct JsonFlag {
    /// Print machine-readable JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand)]
enum DatabaseCommand {
    /// Check the team database's password and keep it in the OS keychain
    /// (asked without echo on a terminal, else read as one line from
    /// standard input). The URL is `database_url` in arena.toml or
    /// ARENA_DATABASE_URL, unless given.
    Login {
        /// postgres://user@host:port/database (no password in it).
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Remove the team database's password from the OS keychain.
    Logout {
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
}

#[derive(Subcommand)]
enum WorktreesCommand {
    /// Every contestant's worktree with its state.
    List(JsonFlag),
    /// Remove the worktrees of finished battles (uncommitted work is kept unless --force),
    /// and working-tree snapshots no battle needs any more.
    Prune {
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
}

#[derive(Subcommand)]
enum BattleCommand {
    /// Start a battle and follow it to the end.
    Run(RunArgs),
    /// Battles, newest first: a page of them, searched and filtered.
    List {
        /// Words that must all appear (ignoring case) in the prompt or in a
        /// contestant's identity, model or provider.
        #[arg(long, value_name = "TEXT")]
        search: Option<String>,
        /// Only battles of this type (qa or coding).
        #[arg(long = "type", value_name = "TYPE")]
        battle_type: Option<String>,
        /// Only battles with this status.
        #[arg(long, value_name = "STATUS", value_parser = ["running", "done", "cancelled", "error"])]
        status: Option<String>,
        /// Only the battles of this series (its id or a unique part of it).
        #[arg(long, value_name = "ID")]
        series: Option<String>,
        /// At most this many battles...
        #[arg(long, default_value_t = BattleQuery::DEFAULT_LIMIT)]
        limit: usize,
        /// ...after skipping this many.
        #[arg(long, default_value_t = 0)]
        offset: usize,
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
    /// A report of the battle to share: one self-contained HTML file (no
    /// script, no remote resource), Markdown, or its JSON.
    Export {
        id: String,
        #[arg(long, default_value = "html", value_parser = ["html", "md", "json"])]
        format: String,
        /// Write it to this file (else to standard output).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Cancel a battle, or one contestant of it.
    Cancel {
        id: String,
        /// Cancel only this contestant (id, id prefix, or 1-based position);
        /// of a finished battle, its running refine round.
        #[arg(long)]
        contestant: Option<String>,
        /// Stop the battle's running analysis.
        #[arg(long, conflicts_with_all = ["contestant", "cross_exam"])]
        analysis: bool,
        /// Stop the battle's running cross-examinations.
        #[arg(long, conflicts_with = "contestant")]
        cross_exam: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Finish battles left running by a process that stopped (all, or one).
    Resume {
        id: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Judge a finished battle again (digest → judge, twice in opposite orders).
    Analyze {
        id: String,
        /// The judge model (default: default_model from arena.toml).
        #[arg(long)]
        model: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Point a persona and model at a finished battle's results to interrogate and compare them.
    #[command(name = "cross-examine")]
    CrossExamine {
        id: String,
        /// The examiner as PERSONA@MODEL.
        #[arg(short = 'c', long = "contestant", value_name = "IDENTITY@MODEL")]
        examiner: String,
        /// What to ask (default: check, compare and pick the best).
        #[arg(long)]
        question: Option<String>,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Continue a contestant with your feedback, as a new round (Coding: in its worktree; Q&A: in the same conversation).
    Refine {
        id: String,
        /// Contestant id, id prefix, or 1-based position.
        contestant: String,
        /// What to change.
        #[arg(long)]
        feedback: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Bring a Coding contestant's diff (default: the winner's) into the project.
    ///
    /// Every file it writes is listed. Files that run without you running
    /// the project (CI workflows, editor tasks and settings, `.envrc`, git
    /// hook managers' configurations, `.gitattributes`, dev containers) are
    /// flagged, and nothing is applied (exit 2) until you pass `--yes`.
    Apply {
        id: String,
        /// Contestant id, id prefix, or 1-based position.
        contestant: Option<String>,
        /// Apply it even with files that run by themselves (after reviewing them).
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Your verdict: the winner (its label in a blind battle, or id or
    /// 1-based position), a tie, or "all bad"; it may come before every
    /// contestant finished. A blind battle is revealed.
    Vote {
        id: String,
        /// The winner: A, B, … in a blind battle; else id, id prefix, or position.
        #[arg(required_unless_present_any = ["tie", "all_bad"], conflicts_with_all = ["tie", "all_bad"])]
        contestant: Option<String>,
        /// Every answer as good.
        #[arg(long, conflicts_with = "all_bad")]
        tie: bool,
        /// None good enough.
        #[arg(long)]
        all_bad: bool,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// Show a blind battle's names without voting.
    Reveal {
        id: String,
        #[command(flatten)]
        json: JsonFlag,
    },
    /// A battle's tags: list them, add some, or remove some.
    Tag(TagArgs),
    /// Set the winner (overrides the analysis), or clear your choice.
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
    /// Coding: a shell command run in each finished worktree (e.g. "cargo test").
    #[arg(long, value_name = "CMD")]
    check: Option<String>,
    /// Coding: start from your working tree as it is (tracked and
    /// untracked-but-not-ignored files, as a snapshot in Arena's own
    /// repository) instead of HEAD.
    #[arg(long)]
    from_working_tree: bool,
    /// Don't judge the results when the battle ends.
    #[arg(long)]
    no_analysis: bool,
    /// The judge model (default: default_model from arena.toml).
    #[arg(long, conflicts_with = "no_analysis")]
    analysis_model: Option<String>,
    /// Show the contestants as A, B, … (shuffled) until you vote
    /// (`arena battle vote`).
    #[arg(long)]
    blind: bool,
    /// A tag to find the battle by (repeat for more).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    #[command(flatten)]
    json: JsonFlag,
}

fn main() -> ExitCode {
    // Started as a jail's inner layer: become the agent, under Landlock.
    if let Some(code) = arena_core::agent::jail::confine_main() {
        return ExitCode::from(code as u8);
    }
    // Started as a reader of an agent's files (in its jail): answer.
    if let Some(code) = arena_core::agent::reader::reader_main() {
        return ExitCode::from(code as u8);
    }
    // Started in a check's jail: apply the change, then become the check.
    if let Some(code) = arena_core::agent::apply::apply_first_main() {
        return ExitCode::from(code as u8);
    }
    if let Ok(exe) = std::env::current_exe() {
        arena_core::agent::jail::set_confiner(exe);
    }
    limit_malloc_arenas();
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    // One thread for the async work: it waits on sockets and timers, and
    // everything that computes or blocks (SQLite, git, files) runs on the
    // blocking threads anyway. With a thread per core, every streamed chunk
    // woke another thread (a futex each; four times the system calls of a
    // series). Blocking work is serialised by the store anyway; a few
    // threads for it keep a long series' memory from spreading over many
    // threads' allocator arenas.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(8)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("arena: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // An error can quote a provider, a model or a check.
            let message = e.to_string().replace('\n', " ");
            eprintln!("arena: {}", view::shown(&message));
            if e.is_user_error() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// `arena database login|logout`.
async fn database(command: DatabaseCommand) -> Result<(), Error> {
    let url_of = |given: Option<String>| -> Result<String, Error> {
        let url = match given {
            Some(url) => url,
            None => arena_core::config::load()?.database_url.ok_or_else(|| {
                Error::Invalid(arena_core::Invalid::Other(
                    "no team database is set: give --url, or set database_url in arena.toml \
                     (or ARENA_DATABASE_URL)"
                        .into(),
                ))
            })?,
        };
        arena_core::config::check_database_url(&url).map_err(|message| Error::Config {
            path: PathBuf::from("--url"),
            message,
        })?;
        Ok(url)
    };
    match command {
        DatabaseCommand::Login { url } => {
            let url = url_of(url)?;
            let password = read_password(&url)?;
            // Kept only once the database took it.
            let (check_url, check) = (url.clone(), password.clone());
            tokio::task::spawn_blocking(move || {
                arena_core::store::Store::check_postgres(&check_url, Some(check.expose()))
            })
            .await??;
            let entry = arena_core::store::keychain_entry(&url);
            tokio::task::spawn_blocking(move || arena_core::keychain::set(&entry, &password))
                .await??;
            println!("The password for {url} is in the OS keychain.");
        }
        DatabaseCommand::Logout { url } => {
            let url = url_of(url)?;
            let entry = arena_core::store::keychain_entry(&url);
            tokio::task::spawn_blocking(move || arena_core::keychain::clear(&entry)).await??;
            println!("No password for {url} is kept any more.");
        }
    }
    Ok(())
}

/// The password, asked without echo on a terminal, else one line of
/// standard input.
fn read_password(url: &str) -> Result<arena_core::keychain::Secret, Error> {
    use std::io::{BufRead, IsTerminal};
    let password = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("Password for {url}: ")).map_err(|source| Error::Io {
            path: "the terminal".into(),
            source,
        })?
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|source| Error::Io {
                path: "standard input".into(),
                source,
            })?;
        line.trim_end_matches(['\r', '\n']).to_string()
    };
    if password.is_empty() {
        return Err(Error::Invalid(arena_core::Invalid::Other(
            "no password given".into(),
        )));
    }
    Ok(arena_core::keychain::Secret::new(password))
}

/// At most two glibc malloc arenas. Each thread that allocates otherwise
/// gets its own arena (up to eight per core), and memory freed in one is
/// kept there: over a long series the blocking threads' arenas each grew
/// to their own high-water mark, so resident memory crept up battle after
/// battle although the heap did not (BENCHMARKS.md, "A long series").
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator; it is called
    // before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Prints one of the wire model's values (`arena-api`), pretty.
/// A path given on the command line, made full against the current
/// folder (the engine takes full paths only).
pub(crate) fn full_path(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `arena battle apply`'s report: what it wrote (or would write), a line
/// per file, those that run by themselves with why. Paths come from an
/// agent: printed escaped, one line each.
fn applied_text(result: &ApplyResultDto) -> String {
    use arena_api::ChangeStatusDto as S;
    let stats = &result.stats;
    let mut text = if result.applied {
        format!(
            "Applied {}'s changes: {} files, +{} -{}\n",
            result.contestant_id, stats.files, stats.insertions, stats.deletions
        )
    } else {
        format!(
            "Nothing applied. {}'s changes would write {} files, +{} -{}:\n",
            result.contestant_id, stats.files, stats.insertions, stats.deletions
        )
    };
    for file in &result.files {
        let (mark, verb) = match file.status {
            S::Added => ("A", "added"),
            S::Modified => ("M", "modified"),
            S::Deleted => ("D", "deleted"),
            S::Renamed => ("R", "renamed"),
        };
        let mut line = format!("  {mark} {}", shown_path(&file.path));
        if let Some(old) = &file.old_path {
            line.push_str(&format!(" (from {})", shown_path(old)));
        }
        if let Some(autorun) = &file.autorun {
            line.push_str(&format!("  ! runs by itself ({verb}): {}", autorun.why));
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// A path from an agent's patch, printable on one line.
fn shown_path(path: &str) -> String {
    view::shown(&path.escape_debug().to_string()).into_owned()
}

/// The refusal of a change with files that run by themselves, each named
/// with why.
fn held_back(result: &ApplyResultDto) -> Error {
    let flagged: Vec<String> = result
        .files
        .iter()
        .filter_map(|file| {
            let autorun = file.autorun.as_ref()?;
            Some(format!("{} ({})", shown_path(&file.path), autorun.why))
        })
        .collect();
    Error::Conflict(format!(
        "nothing was applied: {} of these files run without you running the project: {}. \
         Review them (the contestant's diff.patch in the battle's results folder, or its \
         worktree: `arena worktrees list`), then apply again with --yes",
        flagged.len(),
        flagged.join("; ")
    ))
}

pub(crate) fn print_json(value: &impl serde::Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("arena: could not write JSON: {e}"),
    }
}

async fn run(cli: Cli) -> Result<(), Error> {
    // Logging in comes before opening the database: it is what opening needs.
    if let Command::Database(command) = cli.command {
        return database(command).await;
    }
    // A pack's files need no database; its runs do.
    if let Command::Pack(command) = cli.command {
        if !command.needs_engine() {
            return pack::pack(command).await;
        }
        let mut options = EngineOptions::from_env()?;
        if matches!(command, pack::PackCommand::Check(_)) {
            // The solution and the base play through a backend of Arena's.
            options.config.backends.push(arena_core::solution_backend());
        }
        let engine = Engine::open(options)?;
        return match command {
            pack::PackCommand::Run(args) => pack_run::run(&engine, *args).await,
            pack::PackCommand::Mine(args) => pack_mine::run_validated(&engine, *args).await,
            pack::PackCommand::Check(args) => pack_run::check(&engine, *args).await,
            pack::PackCommand::Report { run, format } => {
                pack_run::report(&engine, &run, &format).await
            }
            _ => unreachable!("needs_engine says which"),
        };
    }
    let engine = Engine::open(EngineOptions::from_env()?)?;
    match cli.command {
        Command::Database(_) | Command::Pack(_) => unreachable!("handled above"),
        Command::Status(flags) => {
            let info = engine.database_info().await?;
            let activity = engine.activity().await?;
            let status = arena_api::StatusDto::new(engine.machine(), &info, &activity);
            if flags.json {
                print_json(&status);
            } else {
                println!("database: {}", status.database_line());
                println!("machine:  {}", view::shown(&status.machine));
                if !status.machines.is_empty() {
                    let machines: Vec<String> = status
                        .machines
                        .iter()
                        .map(|m| view::shown(m).into_owned())
                        .collect();
                    println!("at work:  {}", machines.join(", "));
                }
                for w in &status.workers {
                    println!(
                        "worker:   {} pid {} ({}), {} of {} places, seen {} s ago",
                        view::shown(&w.machine),
                        w.pid,
                        w.role,
                        w.taken,
                        w.places,
                        w.seen_ms_ago / 1000
                    );
                }
                for l in &status.lanes {
                    println!(
                        "lane:     {} on {}: {} running, {} waiting",
                        view::shown(&l.lane),
                        view::shown(&l.machine),
                        l.held,
                        l.waiting
                    );
                }
            }
        }
        Command::Providers(flags) => {
            let catalog = engine.catalog().await;
            if flags.json {
                print_json(&CatalogDto::from(&catalog));
            } else {
                print!("{}", view::catalog_text(&catalog));
            }
        }
        Command::Personas(flags) => {
            let registry = engine.personas()?;
            if flags.json {
                print_json(&PersonasDto::from(&registry));
            } else {
                println!("Personas from {}:", registry.path.display());
                for p in &registry.personas {
                    println!(
                        "  {:<16} {}",
                        p.name,
                        view::shown(p.description.as_deref().unwrap_or(""))
                    );
                }
            }
        }
        Command::Backends(flags) => {
            let rows: Vec<BackendDto> = engine
                .backends()
                .await?
                .into_iter()
                .map(BackendDto::from)
                .collect();
            if flags.json {
                print_json(&rows);
            } else {
                println!(
                    "sandbox: {} · {}",
                    engine.sandbox_state(),
                    arena_core::agent::bounds::describe()
                );
                for r in &rows {
                    let status = match (&r.program, &r.path) {
                        (None, _) => "built in".to_string(),
                        (_, Some(p)) => format!("installed at {p}"),
                        (Some(p), None) => format!("not installed (`{p}` not on PATH)"),
                    };
                    println!("  {:<12} {status}", r.name);
                }
            }
        }
        Command::Battle(command) => battle(&engine, command).await?,
        Command::Series(command) => series::series(&engine, command).await?,
        Command::Worker { places, series } => series::worker(&engine, places, series).await?,
        Command::Team(command) => team::team(&engine, command).await?,
        Command::Env(command) => env::env(&engine, command).await?,
        Command::Worktrees(WorktreesCommand::List(flags)) => {
            let list = engine.worktrees().await?;
            if flags.json {
                print_json(&list.iter().map(WorktreeDto::from).collect::<Vec<_>>());
            } else if list.is_empty() {
                println!("No worktrees.");
            } else {
                for w in &list {
                    let state = match (w.exists, w.dirty) {
                        (false, _) => "missing",
                        (true, true) => "work not kept (its contestant did not finish with a diff)",
                        (true, false) => "diff kept",
                    };
                    println!(
                        "{}  battle {} ({})  {state}",
                        w.path.display(),
                        w.battle_id,
                        w.battle_status
                    );
                }
            }
        }
        Command::Worktrees(WorktreesCommand::Prune { force, json }) => {
            let (removed, kept) = engine.prune_worktrees(force).await?;
            if json.json {
                print_json(&PruneDto::new(&removed, &kept));
            } else {
                for p in &removed {
                    println!("removed {}", p.display());
                }
                for (p, why) in &kept {
                    println!("kept    {}: {}", p.display(), view::shown(why));
                }
                if removed.is_empty() && kept.is_empty() {
                    println!("Nothing to prune.");
                }
            }
        }
        Command::Leaderboard {
            battle_type,
            series,
            project,
            tag,
            machine,
            user,
            source,
            json,
            csv,
        } => {
            let project = project.as_deref().map(full_path);
            let query = arena_core::LeaderboardQuery {
                battle_type: battle_type.map(|t| BattleType::parse_arg(&t)).transpose()?,
                series,
                project,
                tag,
                machine,
                user,
                source: source.parse().map_err(Invalid::Other)?,
            };
            let board = engine.leaderboard(query).await?;
            if json {
                print_json(&LeaderboardDto::from(&board));
            } else if csv {
                print!("{}", arena_core::leaderboard::to_csv(&board.standings));
            } else {
                print!("{}", view::leaderboard_text(&board));
            }
        }
    }
    Ok(())
}

async fn battle(engine: &Engine, command: BattleCommand) -> Result<(), Error> {
    match command {
        BattleCommand::Run(args) => {
            let json = args.json.json;
            let analysis = (!args.no_analysis).then(|| args.analysis_model.clone());
            let from_working_tree = args.from_working_tree;
            let request = run_request(args)?;
            // A check that will not be able to run is said before the
            // battle (a warning: it runs all the same).
            if let (BattleType::Coding, Some(check)) = (request.battle_type, &request.check_command)
            {
                if let Ok(probe) = engine.probe_check(&request.project, check).await {
                    if let Some(warning) = probe.warning {
                        eprintln!("arena: warning: {warning}");
                    }
                }
            }
            let battle = if from_working_tree {
                engine.create_battle_from_working_tree(request).await?
            } else {
                engine.create_battle(request).await?
            };
            let battle = progress::follow(engine, battle, !json).await?;
            if let Some(model) = analysis {
                auto_analyze(engine, &battle, model.as_deref(), !json).await;
            }
            show(engine, &battle.id, json, false).await?;
        }
        BattleCommand::Analyze { id, model, json } => {
            let id = resolve_battle(engine, &id).await?;
            let analysis = progress::analyze(engine, &id, model.as_deref(), !json.json).await?;
            if let Some(error) = &analysis.error {
                eprintln!("arena: the analysis failed: {}", view::shown(error));
            }
            show(engine, &id, json.json, false).await?;
        }
        BattleCommand::Apply {
            id,
            contestant,
            yes,
            json,
        } => {
            use arena_core::agent::apply::Consent;
            let id = resolve_battle(engine, &id).await?;
            let cid = contestant_arg(engine, &id, contestant.as_deref()).await?;
            let consent = if yes { Consent::Given } else { Consent::Ask };
            let (whose, applied) = engine.apply(&id, cid.as_deref(), consent).await?;
            let result = ApplyResultDto::new(id, whose, &applied);
            if json.json {
                print_json(&result);
            } else {
                print!("{}", applied_text(&result));
            }
            if !result.applied {
                return Err(held_back(&result));
            }
        }
        BattleCommand::CrossExamine {
            id,
            examiner,
            question,
            json,
        } => {
            let id = resolve_battle(engine, &id).await?;
            let examiner = ContestantSpec::parse(&examiner)?;
            let x = engine
                .cross_examine(&id, &examiner, question.as_deref())
                .await?;
            if json.json {
                print_json(&CrossExaminationDto::from(&x));
            } else {
                print!("{}", view::cross_exam_text(&x));
            }
        }
        BattleCommand::Refine {
            id,
            contestant,
            feedback,
            json,
        } => {
            let id = resolve_battle(engine, &id).await?;
            let cid = resolve_contestant(&engine.battle(&id).await?, &contestant)?;
            let round = engine.refine(&id, &cid, &feedback).await?;
            if json.json {
                print_json(&RoundDto::from(&round));
            } else {
                print!("{}", view::round_text(&round));
            }
        }
        BattleCommand::List {
            search,
            battle_type,
            status,
            series,
            limit,
            offset,
            json,
        } => {
            let query = BattleQuery {
                search,
                battle_type: battle_type.map(|t| BattleType::parse_arg(&t)).transpose()?,
                status: status
                    .map(|s| s.parse::<BattleStatus>().map_err(Invalid::Other))
                    .transpose()?,
                series_id: match series {
                    Some(key) => Some(engine.resolve_series_id(&key).await?),
                    None => None,
                },
                limit,
                offset,
            };
            let filtered = query
                != BattleQuery {
                    limit,
                    offset,
                    ..BattleQuery::default()
                };
            let (views, total) = engine.view_page(query).await?;
            if json.json {
                print_json(&views.iter().map(BattleDto::from).collect::<Vec<_>>());
            } else {
                let battles: Vec<Battle> = views.into_iter().map(|v| v.battle).collect();
                print!("{}", view::page_text(&battles, offset, total, filtered));
            }
        }
        BattleCommand::Show { id, output, json } => {
            show(
                engine,
                &resolve_battle(engine, &id).await?,
                json.json,
                output,
            )
            .await?;
        }
        BattleCommand::Export { id, format, output } => {
            let id = resolve_battle(engine, &id).await?;
            let json = format == "json";
            let text = match format.as_str() {
                "json" => {
                    let detail = engine.view_detail(&id).await?;
                    serde_json::to_string_pretty(&BattleDetailDto::from(&detail))?
                }
                "md" => engine.battle_report(&id, ReportFormat::Markdown).await?,
                _ => engine.battle_report(&id, ReportFormat::Html).await?,
            };
            match output {
                Some(file) => {
                    std::fs::write(&file, text).map_err(|e| arena_core::Error::Io {
                        path: file.clone(),
                        source: e,
                    })?;
                    eprintln!("arena: wrote {}", file.display());
                }
                // The file keeps the text exact, and so does JSON; a
                // report on the terminal is for reading.
                None if json => print!("{text}"),
                None => print!("{}", view::shown(&text)),
            }
        }
        BattleCommand::Cancel {
            id,
            contestant,
            analysis,
            cross_exam,
            json,
        } => {
            use arena_core::store::Work;
            let id = resolve_battle(engine, &id).await?;
            let b = engine.battle(&id).await?;
            let work = match (&contestant, analysis, cross_exam) {
                (None, true, _) => Some((Work::Analysis, None)),
                (None, _, true) => Some((Work::CrossExamination, None)),
                // A finished battle's contestant can only be refining.
                (Some(c), ..) if b.status.is_terminal() => {
                    Some((Work::Round, Some(resolve_contestant(&b, c)?)))
                }
                _ => None,
            };
            let battle = match (work, contestant) {
                (Some((work, cid)), _) => {
                    let stopped = engine.cancel_work(&id, work, cid.as_deref()).await?;
                    if !json.json {
                        println!("{}", view::cancelled_work_text(work, stopped));
                    }
                    b
                }
                (None, Some(c)) => {
                    let cid = resolve_contestant(&b, &c)?;
                    engine.cancel_contestant(&id, &cid).await?
                }
                (None, None) => engine.cancel_battle(&id).await?,
            };
            show(engine, &battle.id, json.json, false).await?;
        }
        BattleCommand::Resume { id, json } => {
            // Analyses, cross-examinations and refine rounds a stopped
            // process left running: marked failed, analyses judged again.
            let recovered = engine.recover_interrupted().await?;
            for r in &recovered {
                if !json.json {
                    println!("{}", view::recovered_text(r));
                }
            }
            let mut battles = match id {
                Some(id) => {
                    let id = resolve_battle(engine, &id).await?;
                    let battle = engine.battle(&id).await?;
                    let resumed = progress::resume(engine, battle, !json.json).await?;
                    vec![resumed]
                }
                None => engine.resume(None).await?,
            };
            // A battle that finished on resume is judged like any other.
            if engine.config().default_model.is_some() {
                for b in &battles {
                    auto_analyze(engine, b, None, !json.json).await;
                }
            }
            for r in &recovered {
                if !battles.iter().any(|b| b.id == r.battle_id) {
                    battles.push(engine.battle(&r.battle_id).await?);
                }
            }
            if json.json {
                let mut all = Vec::new();
                for b in &battles {
                    all.push(detail(engine, &b.id).await?);
                }
                print_json(&all);
            } else if battles.is_empty() {
                println!("No battles were left running.");
            } else {
                for b in &battles {
                    show(engine, &b.id, false, false).await?;
                }
            }
        }
        BattleCommand::Vote {
            id,
            contestant,
            tie,
            all_bad,
            json,
        } => {
            use arena_core::blind::Vote;
            let id = resolve_battle(engine, &id).await?;
            let vote = match (contestant, tie, all_bad) {
                (Some(key), ..) => {
                    let battle = engine.battle(&id).await?;
                    // A label in a blind battle; else an id, prefix or position.
                    if battle.blind {
                        Vote::Winner(key)
                    } else {
                        Vote::Winner(resolve_contestant(&battle, &key)?)
                    }
                }
                (None, true, _) => Vote::Tie,
                (None, _, _) => Vote::AllBad,
            };
            let battle = engine.vote(&id, vote).await?;
            if !json.json {
                let analysis = engine.analysis(&id).await?;
                if let Some(words) = arena_core::blind::vote_words(&battle, analysis.as_ref()) {
                    println!("{words}");
                }
            }
            show(engine, &battle.id, json.json, false).await?;
        }
        BattleCommand::Reveal { id, json } => {
            let id = resolve_battle(engine, &id).await?;
            let battle = engine.reveal(&id).await?;
            show(engine, &battle.id, json.json, false).await?;
        }
        BattleCommand::Tag(args) => {
            let id = resolve_battle(engine, &args.id).await?;
            let battle = engine.battle(&id).await?;
            let battle = engine.set_tags(&id, &args.applied_to(&battle.tags)).await?;
            args.print(&format!("Battle {}", battle.id), &battle.tags);
        }
        BattleCommand::Winner {
            id,
            contestant,
            clear: _,
            json,
        } => {
            let id = resolve_battle(engine, &id).await?;
            let cid = contestant_arg(engine, &id, contestant.as_deref()).await?;
            let battle = engine.set_winner(&id, cid.as_deref()).await?;
            show(engine, &battle.id, json.json, false).await?;
        }
    }
    Ok(())
}

/// Judges a battle after it ran ([`Engine::judge_ended`]); a missing
/// judge model or a failed analysis is reported but does not fail the
/// command.
async fn auto_analyze(engine: &Engine, battle: &Battle, model: Option<&str>, show_progress: bool) {
    match progress::judge(engine, battle, model, show_progress).await {
        arena_core::Judged::Done(a) => {
            if let Some(error) = &a.error {
                eprintln!("arena: the analysis failed: {}", view::shown(error))
            }
        }
        arena_core::Judged::Failed(e) => eprintln!(
            "arena: the battle was not judged: {}",
            view::shown(&e.to_string())
        ),
        arena_core::Judged::NoModel => {
            eprintln!("arena: no default_model in arena.toml, so the battle was not judged (pass --analysis-model M or --no-analysis)");
        }
        arena_core::Judged::NothingToJudge | arena_core::Judged::AlreadyJudged => {}
    }
}

/// Everything about a battle, as the wire model has it: its outputs, each
/// contestant's rounds, the analysis and the cross-examinations.
async fn detail(engine: &Engine, id: &str) -> Result<BattleDetailDto, Error> {
    Ok(BattleDetailDto::from(&engine.view_detail(id).await?))
}

async fn show(engine: &Engine, id: &str, json: bool, output: bool) -> Result<(), Error> {
    if json {
        print_json(&detail(engine, id).await?);
    } else {
        // A blind battle shows labels only, and no analysis, until the vote.
        print!(
            "{}",
            view::battle_text(&engine.view_detail(id).await?, output)
        );
    }
    Ok(())
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
        project: full_path(&args.project),
        prompt,
        contestants,
        check_command: args.check,
        blind: args.blind,
        tags: arena_core::blind::tags(&args.tags)?,
    })
}

/// A full battle id, or a unique prefix of one.
async fn resolve_battle(engine: &Engine, id: &str) -> Result<String, Error> {
    engine.resolve_battle_id(id).await
}

/// The contestant named on the command line, if any, resolved in its battle.
async fn contestant_arg(
    engine: &Engine,
    battle_id: &str,
    key: Option<&str>,
) -> Result<Option<String>, Error> {
    match key {
        Some(key) => Ok(Some(resolve_contestant(
            &engine.battle(battle_id).await?,
            key,
        )?)),
        None => Ok(None),
    }
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
