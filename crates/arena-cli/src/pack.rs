//! `arena pack`: task packs (see docs/packs.md): import Harbor task
//! folders and SWE-bench instances, export them back, show what a pack
//! holds and what can run here.

use std::path::PathBuf;

use arena_core::pack::{self, ExportFormat, ImportOptions, Pack, PackSummary};
use arena_core::Error;
use clap::Subcommand;

use crate::view::shown;

#[derive(Subcommand)]
pub enum PackCommand {
    /// Make a pack from a Harbor/Terminal-Bench task folder (or a folder of
    /// them), or from SWE-bench instances (JSON or JSONL) of a project.
    Import {
        /// The task folder, the folder of task folders, or the JSON/JSONL file.
        #[arg(value_name = "FILE|DIR")]
        source: PathBuf,
        /// The repository the SWE-bench instances belong to.
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// The pack to make (a folder that does not exist yet).
        #[arg(long, value_name = "PACK")]
        out: PathBuf,
        /// The tests' command, run from the tree's root (detected from the
        /// project's files at each base when not given).
        #[arg(long, value_name = "CMD")]
        test_command: Option<String>,
        /// Carry the project in the pack as repo.bundle (its HEAD's history).
        #[arg(long)]
        bundle: bool,
        /// The pack's name (default: the --out folder's name).
        #[arg(long)]
        name: Option<String>,
        /// The pack's description.
        #[arg(long)]
        description: Option<String>,
        /// A run's time limit in seconds, the pack's default.
        #[arg(long, value_name = "SECS")]
        time_limit_secs: Option<u64>,
        /// Print machine-readable JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a pack's tasks as Harbor task folders or SWE-bench JSONL.
    Export {
        /// The pack's folder (`sample`: the sample pack Arena ships).
        #[arg(value_parser = crate::pack_folder::pack_folder)]
        pack: PathBuf,
        /// harbor (a folder of task folders) or swebench (a JSONL file).
        #[arg(long, value_parser = ["harbor", "swebench"])]
        format: String,
        /// Where to write (must not exist).
        #[arg(long, value_name = "PATH")]
        out: PathBuf,
        /// Print machine-readable JSON.
        #[arg(long)]
        json: bool,
    },
    /// A pack's tasks: kind, base, test command, tests, and whether each
    /// can run here (and why not).
    Show {
        /// The pack's folder (`sample`: the sample pack Arena ships).
        #[arg(value_parser = crate::pack_folder::pack_folder)]
        pack: PathBuf,
        /// Check the repo-native tasks against this project.
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        /// Print machine-readable JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run every task × contestant N times as Coding battles (a series:
    /// through the lanes, resumable), each result decided by the task's
    /// verifier; then the scores with their intervals.
    Run(Box<crate::pack_run::PackRunArgs>),
    /// Check a pack: each task's solution must resolve it and its base
    /// must not (through the same sealed battles and verifier as a run). A
    /// task that fails is broken: later runs leave it out, saying why.
    Check(Box<crate::pack_run::PackCheckArgs>),
    /// Mine a project's history for tasks: the commits that change both
    /// tests and code, split into a hidden test patch and a gold patch on
    /// the parent, each validated by running its tests (BASE, RED, GOLD);
    /// every other commit and candidate counted by why it is dropped.
    Mine(Box<crate::pack_mine::MineArgs>),
    /// Write the instructions of a mined pack's validated tasks with a
    /// model (local by default), audited so they do not give the fix away.
    Write(Box<crate::pack_review::WriteArgs>),
    /// Review written instructions one task a screen (a approve, e edit,
    /// d drop, n/p next/previous, q quit), or with --approve/--drop.
    Review(Box<crate::pack_review::ReviewArgs>),
    /// A pack run's report: md (default), html, json or csv.
    Report {
        /// The pack run (its series id or a unique prefix).
        run: String,
        #[arg(long, default_value = "md", value_parser = ["md", "html", "json", "csv"])]
        format: String,
    },
}

impl PackCommand {
    /// Whether it runs battles (and so needs the engine and its database).
    pub fn needs_engine(&self) -> bool {
        matches!(
            self,
            PackCommand::Run(_) | PackCommand::Check(_) | PackCommand::Report { .. }
        ) || matches!(self, PackCommand::Mine(args) if !args.static_only)
    }
}

pub async fn pack(command: PackCommand) -> Result<(), Error> {
    if let PackCommand::Write(args) = command {
        return crate::pack_review::write(*args).await;
    }
    // All of it is files and git: off the async thread.
    tokio::task::spawn_blocking(move || run(command)).await?
}

fn run(command: PackCommand) -> Result<(), Error> {
    match command {
        PackCommand::Run(_) | PackCommand::Check(_) | PackCommand::Report { .. } => {
            unreachable!("runs need the engine: main dispatches them to pack_run")
        }
        PackCommand::Mine(args) => crate::pack_mine::run(*args)?,
        PackCommand::Write(_) => unreachable!("the writer is async: pack() runs it"),
        PackCommand::Review(args) => crate::pack_review::review(*args)?,
        PackCommand::Import {
            source,
            project,
            out,
            test_command,
            bundle,
            name,
            description,
            time_limit_secs,
            json,
        } => {
            let options = ImportOptions {
                out,
                project,
                test_command,
                name,
                description,
                bundle,
                time_limit_secs,
                commands_by_base: Default::default(),
            };
            let report = pack::import(&source, &options)?;
            if json {
                crate::print_json(&report);
            } else {
                println!(
                    "Imported {} task(s) into {}",
                    report.tasks.len(),
                    report.pack.display()
                );
                for t in &report.tasks {
                    let command = match (&t.test_command, &t.test_command_from) {
                        (Some(c), Some(from)) => {
                            format!("  test command: {} (from {})", shown(c), shown(from))
                        }
                        _ => String::new(),
                    };
                    let docker = if t.needs_docker { "  needs Docker" } else { "" };
                    let original = if t.original_id != t.id {
                        format!(" (from {})", shown(&t.original_id))
                    } else {
                        String::new()
                    };
                    println!(
                        "  {} [{}]{original}{command}{docker}",
                        t.id,
                        t.kind.as_str()
                    );
                }
            }
        }
        PackCommand::Export {
            pack: dir,
            format,
            out,
            json,
        } => {
            let format: ExportFormat = format.parse().map_err(Error::from)?;
            let loaded = Pack::load(&dir)?;
            let report = pack::export(&loaded, format, &out)?;
            if json {
                crate::print_json(&report);
            } else {
                println!(
                    "Exported {} task(s) to {}",
                    report.exported.len(),
                    report.out.display()
                );
                for (id, why) in &report.skipped {
                    println!("  skipped {id}: {}", shown(why));
                }
            }
        }
        PackCommand::Show {
            pack: dir,
            project,
            json,
        } => {
            let loaded = Pack::load(&dir)?;
            let project = match project {
                Some(p) => Some(pack::repository_root(&p)?),
                None => None,
            };
            let summary = pack::summarize(&loaded, project.as_deref());
            if json {
                crate::print_json(&summary);
            } else {
                print!("{}", summary_text(&summary));
            }
        }
    }
    Ok(())
}

/// `arena pack show` for people.
fn summary_text(s: &PackSummary) -> String {
    let mut out = format!("{} {}", shown(&s.name), shown(&s.version));
    if !s.description.is_empty() {
        out.push_str(&format!(" — {}", shown(&s.description)));
    }
    out.push('\n');
    out.push_str(&format!("runs: {}", s.runs));
    if let Some(t) = s.time_limit_secs {
        out.push_str(&format!(", time limit: {t} s"));
    }
    out.push('\n');
    if !s.roots.is_empty() {
        let carried = match &s.bundle {
            Some(b) => format!(", carried as {}", shown(b)),
            None => String::new(),
        };
        out.push_str(&format!(
            "repository: root {}{carried}\n",
            s.roots.join(", ")
        ));
    }
    if !s.unknown_keys.is_empty() {
        out.push_str(&format!(
            "pack.toml keys Arena does not use (kept): {}\n",
            shown(&s.unknown_keys.join(", "))
        ));
    }
    let runnable = s.tasks.iter().filter(|t| t.runnable).count();
    out.push_str(&format!(
        "{} task(s), {runnable} runnable here\n",
        s.tasks.len()
    ));
    for t in &s.tasks {
        out.push_str(&format!("  {} [{}]", t.id, t.kind.as_str()));
        if let Some(b) = &t.base_commit {
            out.push_str(&format!(" base {}", &b[..b.len().min(12)]));
        }
        if let Some(c) = &t.test_command {
            out.push_str(&format!(" · {}", shown(c)));
        }
        if t.fail_to_pass + t.pass_to_pass > 0 {
            out.push_str(&format!(
                " · {} FAIL_TO_PASS, {} PASS_TO_PASS",
                t.fail_to_pass, t.pass_to_pass
            ));
        }
        if t.needs_docker {
            out.push_str(" · needs Docker");
        }
        match &t.why_not {
            None => out.push_str(" · runnable\n"),
            Some(why) => out.push_str(&format!(" · not runnable: {}\n", shown(why))),
        }
    }
    out
}
