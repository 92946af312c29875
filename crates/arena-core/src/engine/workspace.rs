//! A Coding contestant's worktree as Arena knows it: made from the base
//! commit, put back in Arena's hands around every agent and check, read
//! (diffs) with a deadline, and watched for the files an agent touches.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::environment;
use crate::agent::process::{self, Launch};
use crate::agent::reader;
use crate::battle::{Battle, Contestant};
use crate::error::{Error, Result};
use crate::{diff, results, worktree};

use super::journal::Sink;
use super::launch::{self, Env, Reach, Scratch};
use super::Engine;

/// How many files of the environment's folders are counted for its size.
const SIZE_ENTRIES: usize = 200_000;

/// A contestant's worktree as Arena knows it from its records: the folder,
/// the battle's project and base commit, and what the sandbox may read of
/// the project's repository (its object stores). Nothing here comes from a
/// file in the worktree.
pub(super) struct Workspace {
    pub path: PathBuf,
    /// The repository its git objects come from: the battle's sealed
    /// source, else the project ([`Battle::objects_source`]).
    source: PathBuf,
    base: String,
    /// Object stores of the project's repository the sandbox reads.
    pub objects: Vec<PathBuf>,
    /// The project's environment this tree sees ([`environment::find`]).
    pub environment: Vec<environment::Folder>,
    /// Where this tree's own layers of the environment are kept from run
    /// to run (a contestant's worktree; `None`: thrown away after each).
    layers: Option<PathBuf>,
    /// A check's tree that is an overlay of the battle's base tree: that
    /// tree, and the change to apply over it in the jail.
    pub over: Option<(PathBuf, String)>,
    /// Where the environment's folders are (the user's project, or a
    /// prepared environment's tree): inside the jail, its path leads into
    /// this tree.
    env_root: PathBuf,
    /// Where they came from, as the result says it (`current tree`,
    /// `prepared KEY`).
    env_source: String,
    /// Holds a prepared environment in use while the tree works.
    _choice: Option<std::sync::Arc<super::prepare::EnvChoice>>,
}

impl Workspace {
    /// The program and arguments that run `command` (with `sh -c`) in this
    /// workspace: on an overlay of the base, Arena's own binary first
    /// applies the change there, inside the jail (the patch written into
    /// `scratch`'s `tmp/`), then becomes the command.
    pub(super) fn command_line(
        &self,
        scratch: &std::path::Path,
        command: &str,
    ) -> std::io::Result<(PathBuf, Vec<String>)> {
        let shell = vec!["-c".to_string(), command.to_string()];
        match (&self.over, crate::agent::jail::confiner()) {
            (Some((_, patch)), Some(arena)) => {
                let file = scratch.join("tmp").join("change.patch");
                std::fs::write(&file, patch)?;
                let args = crate::agent::apply::apply_first_args(&self.path, &file, "sh", &shell);
                Ok((arena.to_path_buf(), args))
            }
            _ => Ok((PathBuf::from("sh"), shell)),
        }
    }
    /// The worktree at `path`, its repository put back in Arena's hands
    /// (before an agent works in it); a prepare its environment needs is
    /// said in `contestant_id`'s stream before it runs.
    pub async fn of(
        engine: &Engine,
        battle: &Battle,
        (path, contestant_id): (&Path, &str),
        base: &str,
        token: &CancellationToken,
    ) -> Result<Workspace> {
        let project = battle.project.clone();
        let objects_from = battle.objects_source().to_path_buf();
        let objects = confined_read(engine, "the project's object store", {
            let from = objects_from.clone();
            move || worktree::object_dirs(&from).map_err(|e| Error::Git(e.to_string()))
        })
        .await?;
        // Where the environment's folders come from: the user's project
        // when the base's lockfiles are the current tree's (or there are
        // none to tell), else the one prepared for the base's key.
        let choice = super::prepare::environment_for(
            engine,
            &project,
            base,
            token,
            Some((&battle.id, contestant_id)),
        )
        .await?;
        let (root, source) = match &choice {
            super::prepare::EnvChoice::Prepared { key, root, .. } => {
                (root.clone(), format!("prepared {key}"))
            }
            _ => (project.clone(), "current tree".to_string()),
        };
        let listed = engine.config().coding.environment.clone();
        let found = tokio::task::spawn_blocking({
            let root = root.clone();
            move || environment::find(&root, &listed)
        })
        .await?;
        let workspace = Workspace {
            path: path.to_path_buf(),
            source: objects_from,
            base: base.to_string(),
            objects,
            environment: found,
            layers: Some(environment::layers_of(path)),
            over: None,
            env_root: root,
            env_source: source,
            _choice: Some(std::sync::Arc::new(choice)),
        };
        workspace.restore(engine).await?;
        Ok(workspace)
    }

    /// [`worktree::restore`]: after every agent or check, before Arena or
    /// the next process uses the repository.
    pub async fn restore(&self, engine: &Engine) -> Result<()> {
        let (path, source, base) = (self.path.clone(), self.source.clone(), self.base.clone());
        let restored = confined_read(engine, "the worktree's repository", move || {
            worktree::restore(&path, &source, &base).map_err(|e| Error::Git(e.to_string()))
        })
        .await?;
        if restored == worktree::Restored::Rebuilt {
            tracing::warn!(worktree = %self.path.display(), "the worktree's repository was missing or replaced; made anew at the base commit");
        }
        Ok(())
    }

    /// What an agent or check working here reaches: it changes the
    /// worktree, reads the project's object stores, and connects nowhere
    /// (set `connect` and `door` for one that talks to a provider).
    pub fn offline(&self) -> Reach<'_> {
        Reach {
            programs: &[],
            workspace: &self.path,
            writable: true,
            objects: &self.objects,
            connect: Some(Vec::new()),
            door: None,
            own_config: &[],
            // It may build and test with your toolchains.
            toolchains: true,
            environment: Some(Env {
                folders: &self.environment,
                project: &self.env_root,
                layers: self.layers.as_deref(),
                over: self.over.as_ref().map(|(base, _)| base.as_path()),
                // A check's tree (its layers thrown away) works at the
                // project's own path; an agent's keeps its repository.
                at_project: self.layers.is_none(),
                caches: match self._choice.as_deref() {
                    Some(super::prepare::EnvChoice::Prepared { record, .. }) => &record.caches,
                    _ => &[],
                },
            }),
        }
    }

    /// The project's environment this tree saw, in a line for the result
    /// ([`crate::battle::DiffSummary::environment`]); `None`: it had none.
    pub async fn environment_line(&self) -> Option<String> {
        if self.environment.is_empty() {
            return None;
        }
        let folders = self.environment.clone();
        let source = self.env_source.clone();
        tokio::task::spawn_blocking(move || {
            let names: Vec<String> = folders
                .iter()
                .map(|f| f.rel.display().to_string())
                .collect();
            let size: Option<u64> = folders
                .iter()
                .map(|f| environment::size(&f.lower, SIZE_ENTRIES))
                .sum();
            let size = match size {
                Some(bytes) => crate::agent::bounds::bytes(bytes),
                None => format!("over {SIZE_ENTRIES} files"),
            };
            let how = match environment::copy_on_write() {
                Ok(_) => "copy-on-write".to_string(),
                Err(why) => format!("read-only ({why})"),
            };
            format!("{source}: {} ({size}), {how}", names.join(", "))
        })
        .await
        .ok()
    }

    /// The same project, base, object stores and environment around
    /// another tree (the fresh tree a check runs in, [`super::fresh`]),
    /// whose layers are thrown away after each run.
    pub fn at(&self, path: &Path) -> Workspace {
        Workspace {
            path: path.to_path_buf(),
            source: self.source.clone(),
            base: self.base.clone(),
            objects: self.objects.clone(),
            environment: self.environment.clone(),
            layers: None,
            over: None,
            env_root: self.env_root.clone(),
            env_source: self.env_source.clone(),
            _choice: self._choice.clone(),
        }
    }

    /// [`Workspace::at`] a place where the check's jail mounts the base
    /// tree `base` (with a layer of its own) and applies `patch` first.
    pub fn over(&self, path: &Path, base: &Path, patch: &str) -> Workspace {
        Workspace {
            over: Some((base.to_path_buf(), patch.to_string())),
            ..self.at(path)
        }
    }

    /// The changes against the base commit, within `[limits]`, read by a
    /// reader process ([`read`]) that `token` stops.
    pub async fn diff(&self, engine: &Engine, token: &CancellationToken) -> Result<diff::Diff> {
        let limits = &engine.config().limits;
        let request = reader::Request::Diff {
            worktree: self.path.clone(),
            base: self.base.clone(),
            objects: self.objects.clone(),
            file_bytes: limits.diff_file_bytes,
            total_bytes: limits.diff_total_bytes,
        };
        let what = "the agent's changes";
        match read(engine, (&self.path, &self.objects), what, request, token).await? {
            reader::Answer::Diff { diff } => Ok(diff),
            reader::Answer::Failed { reason } => Err(Error::Git(format!(
                "diff of {}: {reason}",
                self.path.display()
            ))),
            reader::Answer::LeftOut { .. } => Err(Error::Task(
                "the reader answered another question than it was asked".into(),
            )),
        }
    }
}

/// Answers `request` about agent-made files in a reader process
/// ([`reader`]): Arena's own binary, in the contestant's jail (`worktree`
/// and the project's object stores `objects` read-only, its own scratch folder, no
/// network), within the jail's memory and process bounds, stopped at
/// `limits.diff_timeout_secs` or when `token` is cancelled. Where no reader
/// can be started (an embedder that registered no Arena binary, or
/// `sandbox = "off"`), the read runs here, on a thread with the same
/// deadline ([`confined_read`]).
pub(super) async fn read(
    engine: &Engine,
    (worktree, objects): (&Path, &[PathBuf]),
    what: &str,
    request: reader::Request,
    token: &CancellationToken,
) -> Result<reader::Answer> {
    let program = match (crate::agent::jail::confiner(), engine.sandbox_ready()) {
        (Some(program), Ok(Some(_))) => program.to_path_buf(),
        _ => return confined_read(engine, what, move || Ok(request.answer())).await,
    };
    static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = Scratch::create(
        &engine
            .data_dir()
            .join("agents")
            .join(format!("read-{}-{n}", std::process::id())),
    )?;
    let reach = Reach {
        programs: std::slice::from_ref(&program),
        workspace: worktree,
        writable: false,
        objects,
        connect: Some(Vec::new()),
        door: None,
        own_config: &[],
        toolchains: false,
        environment: None,
    };
    let (env, sandbox) = match launch::agent_sandbox(engine, scratch.path(), reach)? {
        Some(c) => (c.env, Some(c.sandbox)),
        None => (Vec::new(), None),
    };
    let answer = scratch.path().join("tmp").join("answer.json");
    let limit = request.answer_limit();
    let seconds = engine.config().limits.diff_timeout_secs;
    let mut bounds = launch::bounds(engine);
    bounds.output_bytes = 64 * 1024;
    bounds.file_bytes = Some(limit);
    let run = Launch {
        args: request.args(&answer),
        program,
        cwd: worktree.to_path_buf(),
        env,
        timeout: Duration::from_secs(seconds),
        sandbox,
        bounds,
        door: None,
        registries: None,
    };
    let exit = process::run(&run, token, |_| {})
        .await
        .map_err(|e| Error::Task(format!("reading {what}: {e}")))?;
    if exit.cancelled {
        return Err(Error::Cancelled);
    }
    if exit.timed_out {
        return Err(Error::Task(format!(
            "reading {what} took longer than {seconds} s (limits.diff_timeout_secs); \
             something in the worktree does not let go"
        )));
    }
    if !exit.success() {
        return Err(Error::Task(format!(
            "reading {what}: {}",
            exit.describe("Arena's reader")
        )));
    }
    tokio::task::spawn_blocking(move || {
        let read = reader::read_answer(&answer, limit);
        drop(scratch);
        read
    })
    .await?
    .map_err(|e| Error::Task(format!("reading {what}: {e}")))
}

/// Runs `read` (blocking work on agent-made files) with the deadline
/// `limits.diff_timeout_secs`, holding no lane and no transaction: a read
/// that hangs fails this contestant only (its thread is left behind).
pub(super) async fn confined_read<T: Send + 'static>(
    engine: &Engine,
    what: &str,
    read: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let seconds = engine.config().limits.diff_timeout_secs;
    match tokio::time::timeout(
        Duration::from_secs(seconds),
        tokio::task::spawn_blocking(read),
    )
    .await
    {
        Ok(done) => done?,
        Err(_) => Err(Error::Task(format!(
            "reading {what} took longer than {seconds} s (limits.diff_timeout_secs); \
             something in the worktree does not let go"
        ))),
    }
}

/// The contestant's worktree: created from the base commit on first run,
/// reused by a resumed or refined run.
pub(super) async fn ensure_worktree(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    base: &str,
) -> Result<PathBuf> {
    if let Some(existing) = c.worktree.as_ref().filter(|p| p.exists()) {
        return Ok(existing.clone());
    }
    let root = worktrees_root(engine, battle);
    // Git names worktrees by their folder: make it unique across battles.
    let short = crate::battle::short_id(&battle.id);
    let name = format!("{short}-{}", results::contestant_dir(c));
    let (project, base, root2) = (
        battle.objects_source().to_path_buf(),
        base.to_string(),
        root.clone(),
    );
    let wt = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&root2).map_err(|e| e.to_string())?;
        // Another process creating a worktree of the same project at the
        // same moment can trip libgit2 ("already checked out"): try again.
        let mut attempt = 0;
        loop {
            match worktree::create(&project, &root2, &name, &base) {
                Err(e) if attempt < 3 && e.to_string().contains("already checked out") => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(100 * attempt));
                }
                other => return other.map_err(|e| e.to_string()),
            }
        }
    })
    .await?
    .map_err(|e| Error::Git(format!("creating the worktree: {e}")))?;
    let (c2, path) = (c.clone(), wt.path.clone());
    engine
        .db(move |s| s.transact(|tx| tx.set_worktree(&c2, &path)))
        .await?;
    Ok(wt.path)
}

/// A live list of the files an agent touches, from filesystem events.
pub(super) struct Watch {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
    stop: CancellationToken,
}

impl Watch {
    /// Stops watching after reporting what is pending.
    pub async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// How long the list settles before it is reported.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// Watches `root` (not `.git`) and emits `changed_files` events, debounced.
/// Without a watcher (e.g. inotify limits) the battle goes on without a live list.
pub(super) fn watch_changes(engine: &Engine, c: &Contestant, root: &Path) -> Option<Watch> {
    use notify::Watcher;
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let base = root.to_path_buf();
    // Links in the worktree are the agent's: watching never follows them.
    let config = notify::Config::default().with_follow_symlinks(false);
    let mut watcher = match notify::RecommendedWatcher::new(
        move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            for p in event.paths {
                let Ok(rel) = p.strip_prefix(&base) else {
                    continue;
                };
                let folder = p.symlink_metadata().is_ok_and(|m| m.is_dir());
                if rel.as_os_str().is_empty() || rel.starts_with(".git") || folder {
                    continue;
                }
                let _ = tx.send(rel.to_string_lossy().into_owned());
            }
        },
        config,
    ) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the worktree; no live changed-files list");
            return None;
        }
    };
    if let Err(e) = watcher.watch(root, notify::RecursiveMode::Recursive) {
        tracing::warn!(error = %e, "cannot watch the worktree; no live changed-files list");
        return None;
    }
    let stop = CancellationToken::new();
    let (engine, sink, stop2) = (
        engine.clone(),
        Sink::answer(&c.battle_id, &c.id),
        stop.clone(),
    );
    let task = tokio::spawn(async move {
        let mut tally = crate::event::ChangedFilesTally::default();
        loop {
            let stopping = tokio::select! {
                f = rx.recv() => match f {
                    Some(first) => {
                        tally.touch(first);
                        tokio::time::sleep(DEBOUNCE).await;
                        false
                    }
                    None => true,
                },
                _ = stop2.cancelled() => true,
            };
            while let Ok(more) = rx.try_recv() {
                tally.touch(more);
            }
            if let Some(event) = tally.event() {
                let _ = sink.write(&engine, vec![event]).await;
            }
            if stopping {
                break;
            }
        }
    });
    Some(Watch {
        _watcher: watcher,
        task,
        stop,
    })
}

/// `<data dir>/worktrees/<battle id>/`
fn worktrees_root(engine: &Engine, battle: &Battle) -> PathBuf {
    engine.data_dir().join("worktrees").join(&battle.id)
}
