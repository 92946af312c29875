//! Mining into a pack (issue 41), the one path the CLI's `arena pack mine
//! --out PACK` and the app's "Mine my history" share: the history mined
//! and its candidates validated by running ([`Engine::mine_with_progress`]),
//! the validated tasks written as a pack ([`pmine::write_entries`]), then
//! their instructions written by the writer model
//! ([`instruct::write_instructions`], local by default), one task at a
//! time so that progress names it and a stop ends it between two. The
//! yield's "instructions approved" is counted from the pack's review
//! states ([`instruct::count_states`]), after mining as after review.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use arena_domain::instruction::ReviewState;
use arena_domain::mining::MineProgress;

use crate::config::Config;
use crate::error::{Error, Invalid, Result};
use crate::pack::instruct::{self, TaskWritten, WriteOptions, WriteReport, Writer};
use crate::pack::mine::{self as pmine, MineOptions};
use crate::pack::Pack;

use super::mine_validate::{MineRun, ValidateOptions};
use super::Engine;

/// Where a mining run's validated tasks go, and who writes their
/// instructions.
#[derive(Debug, Clone, Default)]
pub struct MinePackOptions {
    /// The pack to write (a folder that does not exist yet); `None`: the
    /// run is only reported.
    pub out: Option<PathBuf>,
    /// The test command the pack records (`None`: the one its tasks were
    /// validated with, when they share one).
    pub test_command: Option<String>,
    /// The model that writes the instructions (`None`: the configuration's
    /// default model when its provider is local).
    pub writer: Option<String>,
}

/// What mining into a pack tells as it goes.
#[derive(Debug)]
pub enum MineEvent<'a> {
    /// Where the run stands: the scan's and validation's stages, then
    /// `write` (the pack, then each task's instruction), then `done` or
    /// `cancelled`.
    Progress(&'a MineProgress),
    /// The writer chosen, before it is sent anything: a cloud one means
    /// the commits' messages, hidden tests and failure output leave the
    /// machine from here on.
    Writer {
        name: &'a str,
        leaves_the_machine: bool,
    },
}

/// How a pack's tasks stand with their instructions
/// ([`instruct::count_states`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct InstructionCounts {
    /// Tasks in the pack.
    pub tasks: usize,
    /// Written and audited, waiting for review.
    pub pending: usize,
    pub approved: usize,
    /// Dropped by the audit or in review.
    pub dropped: usize,
    /// Validated tasks whose instruction Arena has not written yet (no
    /// writer was reachable, the model failed on them, a stop).
    pub unwritten: usize,
}

impl InstructionCounts {
    /// The counts of `pack` as it is on disk.
    pub fn of(pack: &Pack) -> InstructionCounts {
        let states = instruct::count_states(pack);
        let state = |s| states.get(&s).copied().unwrap_or(0);
        InstructionCounts {
            tasks: pack.tasks.len(),
            pending: state(ReviewState::Pending),
            approved: state(ReviewState::Approved),
            dropped: state(ReviewState::Dropped),
            unwritten: pack
                .tasks
                .iter()
                .filter(|t| instruct::review_state(t).is_none() && instruct::writable(t))
                .count(),
        }
    }

    /// The counts of the pack at `dir` (blocking: it reads the pack).
    pub fn load(dir: &Path) -> Result<InstructionCounts> {
        Ok(InstructionCounts::of(&Pack::load(dir)?))
    }

    /// Written with an instruction a run can use (pending or approved).
    pub fn written(&self) -> usize {
        self.pending + self.approved
    }
}

/// What became of the instructions.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Instructions {
    /// No pack was written, so nothing to write them for.
    NotAsked,
    /// No writer could be chosen (no local model, a cloud default, the
    /// model not served): the pack stays, and they can be written later.
    NoWriter { why: String },
    /// The writer's run (a stop may have ended it early: the rest are
    /// unwritten).
    Written(WriteReport),
}

/// A mining run written as a pack.
#[derive(Debug, Clone, Serialize)]
pub struct MinedPack {
    /// Its `instructions_approved` counted from the pack's review states.
    pub run: MineRun,
    /// The pack written (none: no `out`, or nothing was validated).
    pub pack: Option<PathBuf>,
    pub instructions: Instructions,
    /// The pack's instructions as they stand once written.
    pub counts: Option<InstructionCounts>,
}

fn stopped(flag: &Option<Arc<AtomicBool>>) -> bool {
    flag.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
}

impl Engine {
    /// Mines `options.project`'s history, validates its candidates by
    /// running them, writes the validated ones as a pack at
    /// `pack.out`, and writes their instructions with `pack.writer`
    /// (local by default), telling `on_event` where it stands. A stop
    /// (`validate.cancel`) still writes what was validated until then,
    /// and leaves the instructions for later.
    pub async fn mine_pack(
        &self,
        options: &MineOptions,
        validate: &ValidateOptions,
        pack: &MinePackOptions,
        mut on_event: impl FnMut(MineEvent<'_>) + Send,
    ) -> Result<MinedPack> {
        if let Some(out) = &pack.out {
            // Said now, not after the validation's minutes.
            if std::fs::symlink_metadata(out).is_ok() {
                return Err(Error::Invalid(Invalid::Other(format!(
                    "{} exists already: a mined pack is written to a new folder",
                    out.display()
                ))));
            }
        }
        let mut run = self
            .mine_with_progress(options, validate, |p| {
                // `done` comes at the very end, after the writing.
                if p.stage != "done" {
                    on_event(MineEvent::Progress(p));
                }
            })
            .await?;
        let out = match (&pack.out, run.tasks.is_empty()) {
            (Some(out), false) => out.clone(),
            _ => {
                let end = if run.cancelled { "cancelled" } else { "done" };
                on_event(MineEvent::Progress(&run.progress(end, None, Some(0))));
                return Ok(MinedPack {
                    run,
                    pack: None,
                    instructions: Instructions::NotAsked,
                    counts: None,
                });
            }
        };
        on_event(MineEvent::Progress(&run.progress(
            "write",
            Some(format!("the pack: {} task(s)", run.tasks.len())),
            None,
        )));
        let started = Instant::now();
        let written =
            write_validated(&run, &options.project, &out, pack.test_command.clone()).await?;
        let stop = options.cancel.clone().or_else(|| validate.cancel.clone());
        let instructions = if run.cancelled {
            Instructions::NotAsked
        } else {
            let config = self.config();
            write_instructions(
                &config,
                &written,
                pack.writer.as_deref(),
                &stop,
                |e| match e {
                    WriteEvent::Writer(w) => on_event(MineEvent::Writer {
                        name: &w.name(),
                        leaves_the_machine: w.leaves_the_machine(),
                    }),
                    WriteEvent::Task { id, at, of } => {
                        on_event(MineEvent::Progress(&run.progress(
                            "write",
                            Some(format!("the instruction of {id} ({at} of {of})")),
                            None,
                        )))
                    }
                },
            )
            .await?
        };
        run.seconds_per_stage
            .insert("write".into(), started.elapsed().as_secs_f64());
        let counts = counts_of(&written).await?;
        run.instructions_approved = counts.approved;
        run.cancelled = run.cancelled || stopped(&stop);
        let end = if run.cancelled { "cancelled" } else { "done" };
        on_event(MineEvent::Progress(&run.progress(end, None, Some(0))));
        Ok(MinedPack {
            run,
            pack: Some(written),
            instructions,
            counts: Some(counts),
        })
    }

    /// Writes the instructions of the pack at `pack`'s validated tasks
    /// that have none yet (the app's "Write instructions", for a pack
    /// mined when no writer was reachable), with `writer` (local by
    /// default); a stop ends it between two tasks.
    pub async fn write_mined_instructions(
        &self,
        pack: &Path,
        writer: Option<&str>,
        stop: &Option<Arc<AtomicBool>>,
        on_event: impl FnMut(WriteEvent<'_>) + Send,
    ) -> Result<(Instructions, InstructionCounts)> {
        let config = self.config();
        let instructions = write_instructions(&config, pack, writer, stop, on_event).await?;
        Ok((instructions, counts_of(pack).await?))
    }
}

/// The instructions of the pack at `pack` as they stand.
async fn counts_of(pack: &Path) -> Result<InstructionCounts> {
    let dir = pack.to_path_buf();
    tokio::task::spawn_blocking(move || InstructionCounts::load(&dir)).await?
}

/// Writes `run`'s validated tasks as a pack at `out` (off the async
/// threads: files and git); the pack's folder.
async fn write_validated(
    run: &MineRun,
    project: &Path,
    out: &Path,
    test_command: Option<String>,
) -> Result<PathBuf> {
    let (tasks, project, out) = (run.tasks.clone(), project.to_path_buf(), out.to_path_buf());
    let written = tokio::task::spawn_blocking(move || {
        let entries: Vec<pmine::PackEntry> = tasks
            .iter()
            .map(super::mine_validate::ValidatedTask::entry)
            .collect();
        pmine::write_entries(&entries, &project, &out, test_command).map(|w| w.pack)
    })
    .await??;
    Ok(written)
}

/// What writing instructions tells as it goes.
#[derive(Debug)]
pub enum WriteEvent<'a> {
    /// The writer chosen, before it is sent anything.
    Writer(&'a Writer),
    /// Task `id`, the `at`-th of `of`, is being written.
    Task { id: &'a str, at: usize, of: usize },
}

/// Chooses the writer (`requested`, else the local default) and writes
/// the instructions of `pack`'s validated tasks that have none, one task
/// at a time. No writer is said, not fatal.
async fn write_instructions(
    config: &Config,
    pack: &Path,
    requested: Option<&str>,
    stop: &Option<Arc<AtomicBool>>,
    mut on_event: impl FnMut(WriteEvent<'_>) + Send,
) -> Result<Instructions> {
    let writer = match Writer::choose(config, requested).await {
        Ok(w) => w,
        Err(e) => {
            tracing::info!(error = %e, "no instruction writer: the mined pack's instructions are left for later");
            return Ok(Instructions::NoWriter { why: e.to_string() });
        }
    };
    on_event(WriteEvent::Writer(&writer));
    let dir = pack.to_path_buf();
    let loaded = tokio::task::spawn_blocking(move || Pack::load(&dir)).await??;
    let todo: Vec<String> = loaded
        .tasks
        .iter()
        .filter(|t| instruct::review_state(t).is_none() && instruct::writable(t))
        .map(|t| t.id.as_str().to_string())
        .collect();
    let mut report = WriteReport {
        pack: loaded.root.clone(),
        writer: writer.name(),
        left_the_machine: writer.leaves_the_machine(),
        tasks: Vec::<TaskWritten>::new(),
        skipped: Vec::new(),
    };
    for (i, id) in todo.iter().enumerate() {
        if stopped(stop) {
            break;
        }
        on_event(WriteEvent::Task {
            id,
            at: i + 1,
            of: todo.len(),
        });
        let one = instruct::write_instructions(
            pack,
            &writer,
            &WriteOptions {
                tasks: Some(vec![id.clone()]),
            },
        )
        .await?;
        report.tasks.extend(one.tasks);
        report.skipped.extend(one.skipped);
    }
    Ok(Instructions::Written(report))
}
