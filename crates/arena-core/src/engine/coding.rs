//! Running one Coding contestant: its own git worktree, the agent (the
//! built-in `native` one or a CLI agent in its own process group), then the
//! diff against the base commit, the optional check command, and the result
//! files (`result.md`, `diff.patch`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::agent::backends;
use crate::agent::native::{self, NativeAgent};
use crate::agent::process::{self, Launch, Line};
use crate::battle::{
    Battle, Benchmark, CheckResult, Contestant, ContestantStatus, DiffSummary, Lane,
};
use crate::error::{Error, Invalid, Result};
use crate::event::EventKind;
use crate::provider::Usage;
use crate::{diff, results, worktree};

use super::lane::{self, LaneSlot};
use super::Engine;
use crate::agent::relay;
use crate::agent::sandbox::{self, Confinement, Sandbox};

/// What an agent run produced.
struct AgentRun {
    explanation: String,
    usage: Option<Usage>,
    /// Why it failed, if it did.
    error: Option<String>,
    cancelled: bool,
}

/// Whether Arena can run this backend (for validation).
pub fn runnable(engine: &Engine, name: &str) -> bool {
    name == "native"
        || crate::backend::Agent::parse(name).is_some()
        || engine.config().backends.iter().any(|b| b.name == name)
}

/// Runs a Coding contestant the scheduler moved to `running`; `slot` is its
/// lane, held while the agent works (not during the diff and the check).
pub(super) async fn run(
    engine: &Engine,
    battle: &Battle,
    c: Contestant,
    token: CancellationToken,
    slot: LaneSlot,
) {
    let span = tracing::info_span!("coding", battle = %battle.id, contestant = %c.id, backend = %c.identity);
    if let Err(e) = run_inner(engine, battle, &c, &token, slot)
        .instrument(span)
        .await
    {
        tracing::error!(contestant = %c.id, error = %e, "coding contestant failed");
        let message = e.to_string();
        let _ = record(
            engine,
            battle,
            &c,
            Outcome {
                status: ContestantStatus::Error,
                error: Some(message),
                explanation: String::new(),
                bench: Benchmark::default(),
                diff: None,
                check: None,
            },
        )
        .await;
    }
}

struct Outcome {
    status: ContestantStatus,
    error: Option<String>,
    explanation: String,
    bench: Benchmark,
    diff: Option<diff::Diff>,
    check: Option<CheckResult>,
}

async fn run_inner(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    token: &CancellationToken,
    slot: LaneSlot,
) -> Result<()> {
    let started = Instant::now();
    let model_switched = slot.model_switched;
    let base = battle
        .base_commit
        .clone()
        .ok_or_else(|| Error::Task(format!("battle {} has no base commit", battle.id)))?;
    let path = ensure_worktree(engine, battle, c, &base).await?;
    let Work { run, diff, check } =
        work(engine, battle, c, &path, &battle.prompt, &base, token, slot).await?;
    let mut bench = Benchmark {
        duration_ms: Some(started.elapsed().as_millis() as u64),
        prompt_tokens: run.usage.and_then(|u| u.prompt_tokens),
        completion_tokens: run.usage.and_then(|u| u.completion_tokens),
        model_switched,
        ..Default::default()
    };
    let price = engine.config().price(&c.provider, &c.model);
    bench.cost_usd = crate::benchmark::call_cost(run.usage.as_ref(), &bench, price.as_ref());
    let status = if run.cancelled {
        ContestantStatus::Cancelled
    } else if run.error.is_some() {
        ContestantStatus::Error
    } else {
        ContestantStatus::Done
    };
    record(
        engine,
        battle,
        c,
        Outcome {
            status,
            error: run.error,
            explanation: run.explanation,
            bench,
            diff: Some(diff),
            check,
        },
    )
    .await
}

/// What one agent run in a worktree produced.
struct Work {
    run: AgentRun,
    diff: diff::Diff,
    check: Option<CheckResult>,
}

/// Runs the agent on `prompt` in `path` while watching the files it
/// touches, then gives the lane back, takes the diff against `base` and
/// runs the check.
#[allow(clippy::too_many_arguments)]
async fn work(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    path: &Path,
    prompt: &str,
    base: &str,
    token: &CancellationToken,
    slot: LaneSlot,
) -> Result<Work> {
    let workspace = Workspace::of(engine, battle, path, base).await?;
    let watch = watch_changes(engine, c, path);
    let run = match c.identity.as_str() {
        "native" => run_native(engine, c, &workspace, prompt, token).await,
        _ => run_cli(engine, c, &workspace, prompt, token).await,
    };
    drop(slot);
    if let Some(watch) = watch {
        watch.finish().await;
    }
    let run = run?;
    workspace.restore(engine).await?;
    let diff = workspace.diff(engine).await?;
    let check = match (&battle.check_command, run.error.is_none() && !run.cancelled) {
        (Some(command), true) => {
            let check = run_check(engine, c, command, &workspace, token).await;
            workspace.restore(engine).await?;
            Some(check)
        }
        _ => None,
    };
    Ok(Work { run, diff, check })
}

/// A contestant's worktree as Arena knows it from its records: the folder,
/// the battle's project and base commit, and what the sandbox may read of
/// the project's repository (its object stores). Nothing here comes from a
/// file in the worktree.
pub(super) struct Workspace {
    path: PathBuf,
    project: PathBuf,
    base: String,
    objects: Vec<PathBuf>,
}

impl Workspace {
    /// The worktree at `path`, its repository put back in Arena's hands
    /// (before an agent works in it).
    async fn of(engine: &Engine, battle: &Battle, path: &Path, base: &str) -> Result<Workspace> {
        let project = battle.project.clone();
        let objects = confined_read(engine, "the project's object store", {
            let project = project.clone();
            move || worktree::object_dirs(&project).map_err(|e| Error::Git(e.to_string()))
        })
        .await?;
        let workspace = Workspace {
            path: path.to_path_buf(),
            project,
            base: base.to_string(),
            objects,
        };
        workspace.restore(engine).await?;
        Ok(workspace)
    }

    /// [`worktree::restore`]: after every agent or check, before Arena or
    /// the next process uses the repository.
    async fn restore(&self, engine: &Engine) -> Result<()> {
        let (path, project, base) = (self.path.clone(), self.project.clone(), self.base.clone());
        let restored = confined_read(engine, "the worktree's repository", move || {
            worktree::restore(&path, &project, &base).map_err(|e| Error::Git(e.to_string()))
        })
        .await?;
        if restored == worktree::Restored::Rebuilt {
            tracing::warn!(worktree = %self.path.display(), "the worktree's repository was missing or replaced; made anew at the base commit");
        }
        Ok(())
    }

    /// The changes against the base commit, within `[limits]`.
    async fn diff(&self, engine: &Engine) -> Result<diff::Diff> {
        let limits = &engine.config().limits;
        let bounds = diff::DiffLimits {
            file_bytes: limits.diff_file_bytes,
            total_bytes: limits.diff_total_bytes,
        };
        let (path, base) = (self.path.clone(), self.base.clone());
        confined_read(engine, "the agent's changes", move || {
            diff::diff_worktree(&path, &base, bounds)
                .map_err(|e| Error::Git(format!("diff of {}: {e}", path.display())))
        })
        .await
    }
}

/// Runs `read` (blocking work on agent-made files) with the deadline
/// `limits.diff_timeout_secs`, holding no lane and no transaction: a read
/// that hangs fails this contestant only (its thread is left behind).
async fn confined_read<T: Send + 'static>(
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
async fn ensure_worktree(
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
    let (project, base, root2) = (battle.project.clone(), base.to_string(), root.clone());
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
    let (id, path) = (c.id.clone(), wt.path.clone());
    engine
        .db(move |s| {
            s.transact(|tx| {
                tx.conn().execute(
                    "UPDATE contestants SET worktree = ?1 WHERE id = ?2",
                    rusqlite::params![path.to_string_lossy(), id],
                )?;
                Ok(())
            })
        })
        .await?;
    Ok(wt.path)
}

/// A live list of the files an agent touches, from filesystem events.
struct Watch {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
    stop: CancellationToken,
}

impl Watch {
    /// Stops watching after reporting what is pending.
    async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// How long the list settles before it is reported.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// Watches `root` (not `.git`) and emits `changed_files` events, debounced.
/// Without a watcher (e.g. inotify limits) the battle goes on without a live list.
fn watch_changes(engine: &Engine, c: &Contestant, root: &Path) -> Option<Watch> {
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
    let (engine, battle_id, id, stop2) = (
        engine.clone(),
        c.battle_id.clone(),
        c.id.clone(),
        stop.clone(),
    );
    let task = tokio::spawn(async move {
        let mut files = std::collections::BTreeSet::new();
        let mut reported = 0usize;
        loop {
            let stopping = tokio::select! {
                f = rx.recv() => match f {
                    Some(first) => {
                        files.insert(first);
                        tokio::time::sleep(DEBOUNCE).await;
                        false
                    }
                    None => true,
                },
                _ = stop2.cancelled() => true,
            };
            while let Ok(more) = rx.try_recv() {
                files.insert(more);
            }
            if files.len() != reported {
                reported = files.len();
                let (bid, cid, at, list) = (
                    battle_id.clone(),
                    id.clone(),
                    engine.now(),
                    files.iter().cloned().collect(),
                );
                let _ = engine
                    .db(move |s| {
                        s.transact(|tx| {
                            tx.require_lease(&bid)?;
                            tx.emit(
                                &bid,
                                Some(&cid),
                                at,
                                EventKind::ChangedFiles { files: list },
                            )
                            .map(|_| ())
                        })
                    })
                    .await;
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
pub fn worktrees_root(engine: &Engine, battle: &Battle) -> PathBuf {
    engine.data_dir().join("worktrees").join(&battle.id)
}

/// Sends text to the battle's event stream in batches, as `output` events.
fn output_forwarder(
    engine: &Engine,
    c: &Contestant,
) -> (
    mpsc::UnboundedSender<EventKind>,
    tokio::task::JoinHandle<String>,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<EventKind>();
    let coalesce = Duration::from_millis(engine.config().limits.coalesce_ms.max(1));
    let (engine, battle_id, id) = (engine.clone(), c.battle_id.clone(), c.id.clone());
    let task = tokio::spawn(async move {
        let mut all = String::new();
        while let Some(first) = rx.recv().await {
            tokio::time::sleep(coalesce).await;
            let mut batch = vec![first];
            while let Ok(more) = rx.try_recv() {
                batch.push(more);
            }
            // Merge neighbouring output texts into one event.
            let mut merged: Vec<EventKind> = Vec::new();
            for kind in batch {
                match (merged.last_mut(), kind) {
                    (Some(EventKind::Output { text }), EventKind::Output { text: more }) => {
                        text.push_str(&more)
                    }
                    (_, kind) => merged.push(kind),
                }
            }
            for kind in &merged {
                if let EventKind::Output { text } = kind {
                    all.push_str(text);
                }
            }
            let (bid, cid, at) = (battle_id.clone(), id.clone(), engine.now());
            let write = engine
                .db(move |s| {
                    s.transact(|tx| {
                        tx.require_lease(&bid)?;
                        for kind in merged {
                            tx.emit(&bid, Some(&cid), at, kind)?;
                        }
                        Ok(())
                    })
                })
                .await;
            if let Err(e) = write {
                tracing::warn!(error = %e, "could not record agent output");
            }
        }
        all
    });
    (tx, task)
}

async fn run_native(
    engine: &Engine,
    c: &Contestant,
    workspace: &Workspace,
    prompt: &str,
    token: &CancellationToken,
) -> Result<AgentRun> {
    let path = workspace.path.as_path();
    let provider = engine
        .provider(&c.provider)
        .ok_or_else(|| Invalid::Other(format!("provider `{}` is not configured", c.provider)))?;
    let limits = engine.config().limits.clone();
    // Its commands run sandboxed, with no network at all.
    let scratch = Scratch::create(&engine.data_dir().join("agents").join(&c.id))?;
    let reach = Reach {
        programs: &[],
        workspace: path,
        writable: true,
        objects: &workspace.objects,
        connect: Some(Vec::new()),
        door: None,
        own_config: &[],
        toolchains: false,
    };
    let sandbox = agent_sandbox(engine, &scratch.0, reach)?;
    let agent = NativeAgent {
        provider: &provider,
        model: c.model.clone(),
        worktree: path.to_path_buf(),
        max_steps: limits.native_max_steps,
        command_timeout: Duration::from_secs(limits.native_command_timeout_secs),
        stall: limits.stall_timeout(),
        local: c.lane == Lane::Local,
        sandbox,
        max_file_bytes: Some(limits.max_file_bytes),
    };
    let (tx, forward) = output_forwarder(engine, c);
    let result = agent
        .run(prompt, token, |event| {
            let kind = match event {
                native::Event::Text(text) => EventKind::Output { text },
                native::Event::Tool { name, summary, ok } => EventKind::Tool { name, summary, ok },
            };
            let _ = tx.send(kind);
        })
        .await;
    drop(tx);
    let _ = forward.await;
    Ok(match result {
        Ok(outcome) => AgentRun {
            explanation: outcome.explanation,
            usage: Some(outcome.usage),
            error: None,
            cancelled: false,
        },
        Err(native::NativeError::Cancelled) => AgentRun {
            explanation: String::new(),
            usage: None,
            error: None,
            cancelled: true,
        },
        Err(native::NativeError::Provider(e)) => AgentRun {
            explanation: String::new(),
            usage: None,
            error: Some(e.to_string()),
            cancelled: false,
        },
    })
}

/// How to launch a CLI backend for one task; writes its private config
/// files into its scratch folder (removed when the returned guard drops).
fn launch(
    engine: &Engine,
    endpoint: Option<backends::Endpoint>,
    c: &Contestant,
    workspace: &Workspace,
    prompt: &str,
) -> Result<(Launch, Scratch, backends::OutputFormat)> {
    let path = workspace.path.as_path();
    let config = engine.config();
    let custom = config.backends.iter().find(|b| b.name == c.identity);
    let scratch = engine.data_dir().join("agents").join(&c.id);
    let (endpoint, door) = through_door(engine, endpoint);
    let plan = backends::Backend::of(&c.identity, custom)
        .and_then(|backend| {
            backends::plan(backend, &c.model, prompt, path, &scratch, endpoint.as_ref())
        })
        .map_err(Invalid::Other)?;
    let output = plan.output;
    let connect = reachable(&plan, endpoint.as_ref());
    let work = Reach {
        programs: &[],
        workspace: path,
        writable: true,
        objects: &workspace.objects,
        connect,
        door,
        own_config: &[],
        toolchains: false,
    };
    let (launch, scratch) = prepare(engine, &c.identity, plan, work, &scratch)?;
    Ok((launch, scratch, output))
}

/// Where an agent pointed at one of your providers is told to connect: in
/// a jail, the relay's door inside it (with a placeholder key; the relay
/// puts the real one on outside) and the door to open; else the provider.
pub(super) fn through_door(
    engine: &Engine,
    endpoint: Option<backends::Endpoint>,
) -> (Option<backends::Endpoint>, Option<relay::Upstream>) {
    let Some(endpoint) = endpoint else {
        return (None, None);
    };
    if !matches!(engine.sandbox_ready(), Ok(Some(sandbox::Enforcement::Jail))) {
        return (Some(endpoint), None);
    }
    let upstream = relay::Upstream {
        kind: endpoint.kind,
        base_url: endpoint.base_url.clone(),
        api_key: endpoint.api_key.clone(),
    };
    match relay::inside_url(&upstream, relay::PORT) {
        Ok(base_url) => (
            Some(backends::Endpoint {
                kind: endpoint.kind,
                base_url,
                api_key: crate::keychain::Secret::new(relay::PLACEHOLDER_KEY.into()),
            }),
            Some(upstream),
        ),
        Err(_) => (Some(endpoint), None),
    }
}

/// The TCP ports an agent may connect to: where Arena points it at one of
/// its providers, that provider's port only; with its own configuration,
/// any (`None`).
pub(super) fn reachable(
    plan: &backends::Plan,
    endpoint: Option<&backends::Endpoint>,
) -> Option<Vec<u16>> {
    match endpoint {
        Some(e) if plan.own_config.is_empty() => {
            Some(endpoint_port(&e.base_url).into_iter().collect())
        }
        _ => None,
    }
}

/// The TCP port of a provider's `base_url`.
fn endpoint_port(base_url: &str) -> Option<u16> {
    reqwest::Url::parse(base_url).ok()?.port_or_known_default()
}

/// What one sandboxed process works on, beyond its scratch folder.
pub(super) struct Reach<'a> {
    /// The programs it starts (their installations are readable).
    pub programs: &'a [PathBuf],
    /// Its working folder: changed when `writable`, else only read.
    pub workspace: &'a Path,
    pub writable: bool,
    /// Object stores of the project's repository it reads (a worktree's
    /// alternates, from [`worktree::object_dirs`]).
    pub objects: &'a [PathBuf],
    /// The TCP ports it may reach (`None`: any).
    pub connect: Option<Vec<u16>>,
    /// Its one network door to a provider, in a jail ([`through_door`]).
    pub door: Option<relay::Upstream>,
    /// Files and folders of the user's home it reads as its own
    /// configuration ([`backends::own_config`]).
    pub own_config: &'static [&'static str],
    /// It builds and tests (a check command): your toolchains are readable
    /// ([`sandbox::toolchains`]).
    pub toolchains: bool,
}

/// The sandbox of an agent process with `scratch` as its home and temp
/// folder, and the environment that goes with it (`HOME`, `TMPDIR`, …);
/// `None` with `[limits] sandbox = "off"`. Refused when the kernel cannot
/// sandbox.
pub(super) fn agent_sandbox(
    engine: &Engine,
    scratch: &Path,
    reach: Reach<'_>,
) -> Result<Option<Confinement>> {
    let enforcement = match engine.sandbox_ready() {
        Ok(Some(enforcement)) => enforcement,
        Ok(None) => return Ok(None),
        Err(why) => return Err(Invalid::Other(why).into()),
    };
    // Tests give agents a prepared home (their own configuration).
    let test_home = std::env::var_os("ARENA_AGENT_HOME").map(PathBuf::from);
    let home = test_home.clone().unwrap_or_else(|| scratch.join("home"));
    let tmp = scratch.join("tmp");
    for dir in [&home, &tmp] {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    // A git identity of its own, so that an agent that commits (aider)
    // does not try to write one into the project's `.git/config`, which
    // the sandbox refuses.
    let gitconfig = home.join(".gitconfig");
    if !gitconfig.exists() {
        std::fs::write(
            &gitconfig,
            "[user]\n\tname = Arena agent\n\temail = agent@arena.invalid\n",
        )
        .map_err(|e| Error::io(&gitconfig, e))?;
    }
    let real_home = std::env::var_os("HOME").map(PathBuf::from);
    let mut read = sandbox::path_dirs();
    read.extend(reach.programs.iter().flat_map(|p| sandbox::installation(p)));
    let mut env = vec![
        ("HOME".to_string(), home.to_string_lossy().into_owned()),
        ("TMPDIR".to_string(), tmp.to_string_lossy().into_owned()),
    ];
    if let (Some(real), None) = (&real_home, &test_home) {
        read.extend(
            sandbox::link_own_config(&home, real, reach.own_config)
                .map_err(|e| Error::io(&home, e))?,
        );
    }
    if reach.toolchains {
        let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
        let tools = sandbox::toolchains(real_home.as_deref(), var, scratch)
            .map_err(|e| Error::io(scratch, e))?;
        read.extend(tools.read);
        env.extend(tools.env);
    }
    let mut read = sandbox::without_private(read, engine.data_dir(), real_home.as_deref());
    let mut write = vec![scratch.to_path_buf(), home.clone()];
    read.extend(reach.objects.iter().cloned());
    if reach.writable {
        write.push(reach.workspace.to_path_buf());
    } else {
        read.push(reach.workspace.to_path_buf());
    }
    let mut sandbox = Sandbox::new(read, write, reach.connect);
    sandbox.enforcement = enforcement;
    Ok(Some(Confinement { sandbox, env }))
}

/// An agent's private folder for its configuration files: only this user
/// may enter it (0700), and it is removed when the run ends.
pub(super) struct Scratch(PathBuf);

impl Scratch {
    fn create(path: &Path) -> Result<Scratch> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
            builder.mode(0o700);
            builder.create(path).map_err(|e| Error::io(path, e))?;
            // It may be left over from a run that crashed.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| Error::io(path, e))?;
        }
        #[cfg(not(unix))]
        builder.create(path).map_err(|e| Error::io(path, e))?;
        Ok(Scratch(path.to_path_buf()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        match std::fs::remove_dir_all(&self.0) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(path = %self.0.display(), error = %e, "could not remove an agent's scratch folder")
            }
        }
    }
}

/// Turns a launch plan into a process to start in `work.workspace`: writes
/// its config files into `scratch` (created private), finds the program,
/// and puts it in its sandbox (`work` as in [`agent_sandbox`]; its
/// `program` and `own_config` come from the plan) with `[limits]`'s bounds.
pub(super) fn prepare(
    engine: &Engine,
    backend: &str,
    plan: backends::Plan,
    work: Reach<'_>,
    scratch: &Path,
) -> Result<(Launch, Scratch)> {
    let cwd = work.workspace;
    let folder = Scratch::create(scratch)?;
    for (file, content) in &plan.files {
        if !file.starts_with(scratch) {
            return Err(Error::Task(format!(
                "{backend}: a config file outside its scratch folder: {}",
                file.display()
            )));
        }
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::write(file, content).map_err(|e| Error::io(file, e))?;
    }
    let mut env = plan.env;
    let program =
        crate::backend::locate(&plan.program).ok_or_else(|| Invalid::BackendNotInstalled {
            name: backend.to_string(),
            program: plan.program.clone(),
        })?;
    // An agent with its own configuration talks to its own service: no door.
    let door = work.door.clone().filter(|_| plan.own_config.is_empty());
    let programs = [program.clone()];
    let reach = Reach {
        programs: &programs,
        own_config: plan.own_config,
        ..work
    };
    let sandbox = agent_sandbox(engine, scratch, reach)?;
    let sandbox = match sandbox {
        Some(confined) => {
            env.extend(confined.env);
            Some(confined.sandbox)
        }
        None => {
            if let Some(home) = std::env::var_os("ARENA_AGENT_HOME") {
                env.push(("HOME".into(), home.to_string_lossy().into_owned()));
            }
            None
        }
    };
    Ok((
        Launch {
            program,
            args: plan.args,
            cwd: cwd.to_path_buf(),
            env,
            timeout: engine.config().limits.max_duration(),
            sandbox,
            bounds: bounds(engine),
            door,
        },
        folder,
    ))
}

/// What an agent or check process may produce, from `[limits]`.
pub(super) fn bounds(engine: &Engine) -> process::Bounds {
    let limits = &engine.config().limits;
    process::Bounds {
        output_bytes: limits.max_output_bytes,
        file_bytes: Some(limits.max_file_bytes),
    }
}

async fn run_cli(
    engine: &Engine,
    c: &Contestant,
    workspace: &Workspace,
    prompt: &str,
    token: &CancellationToken,
) -> Result<AgentRun> {
    let endpoint = engine.agent_endpoint(&c.provider).await;
    let (launch, _scratch, format) = launch(engine, endpoint, c, workspace, prompt)?;
    let (tx, forward) = output_forwarder(engine, c);
    let mut final_answer: Option<String> = None;
    let exit = process::run(&launch, token, |line| {
        let Line::Stdout(l) = line else { return };
        match format {
            backends::OutputFormat::Lines => {
                let _ = tx.send(EventKind::Output {
                    text: format!("{l}\n"),
                });
            }
            backends::OutputFormat::ClaudeStreamJson => {
                for piece in backends::parse_claude_line(&l) {
                    let kind = match piece {
                        backends::Piece::Text(text) => EventKind::Output { text },
                        backends::Piece::Tool { name, summary } => EventKind::Tool {
                            name,
                            summary,
                            ok: true,
                        },
                        backends::Piece::Final(text) => {
                            final_answer = Some(text);
                            continue;
                        }
                    };
                    let _ = tx.send(kind);
                }
            }
        }
    })
    .await;
    if let Some(text) = dropped_note(&exit) {
        let _ = tx.send(EventKind::Output { text });
    }
    drop(tx);
    let output = forward.await.unwrap_or_default();
    let explanation = final_answer.unwrap_or(output);
    Ok(match exit {
        Ok(exit) if exit.success() => AgentRun {
            explanation,
            usage: None,
            error: None,
            cancelled: false,
        },
        Ok(exit) => AgentRun {
            explanation,
            usage: None,
            error: (!exit.cancelled).then(|| exit.describe(&c.identity)),
            cancelled: exit.cancelled,
        },
        Err(e) => AgentRun {
            explanation,
            usage: None,
            error: Some(e.to_string()),
            cancelled: false,
        },
    })
}

/// The visible note for output a run dropped over
/// `limits.max_output_bytes`, if it dropped any.
fn dropped_note(exit: &std::result::Result<process::Exit, process::SpawnError>) -> Option<String> {
    let dropped = exit
        .as_ref()
        .ok()
        .map(|e| e.output_dropped)
        .filter(|d| *d > 0)?;
    Some(format!(
        "\n[Arena: {dropped} more bytes of output were dropped (over limits.max_output_bytes); \
         the run went on]\n"
    ))
}

/// Runs the battle's check command in a finished worktree, in the sandbox
/// of an agent that builds and tests: it may change the worktree and read
/// your toolchains, and connect nowhere. A check that cannot be sandboxed
/// fails with the reason.
async fn run_check(
    engine: &Engine,
    c: &Contestant,
    command: &str,
    workspace: &Workspace,
    token: &CancellationToken,
) -> CheckResult {
    let path = workspace.path.as_path();
    let failed = |reason: String| CheckResult {
        command: command.to_string(),
        exit_code: None,
        passed: false,
        timed_out: false,
        duration_ms: 0,
        output_tail: reason,
    };
    let scratch_path = engine
        .data_dir()
        .join("agents")
        .join(format!("{}-check", c.id));
    // The programs it names bring their installations (`npm` under nvm,
    // `.venv/bin/python`, a tool given by its path).
    let programs: Vec<PathBuf> = command
        .split(|c: char| c.is_whitespace() || ";&|()`".contains(c))
        .map(|word| word.trim_matches(['"', '\'']))
        .filter(|word| !word.is_empty() && !word.starts_with('-') && !word.contains('='))
        .filter_map(crate::backend::locate)
        .collect();
    let confined = Scratch::create(&scratch_path).and_then(|scratch| {
        let reach = Reach {
            programs: &programs,
            workspace: path,
            writable: true,
            objects: &workspace.objects,
            connect: Some(Vec::new()),
            door: None,
            own_config: &[],
            toolchains: true,
        };
        Ok((agent_sandbox(engine, &scratch.0, reach)?, scratch))
    });
    let (confined, _scratch) = match confined {
        Ok(c) => c,
        Err(e) => return failed(format!("the check could not be sandboxed: {e}")),
    };
    let (env, sandbox) = match confined {
        Some(c) => (c.env, Some(c.sandbox)),
        None => (Vec::new(), None),
    };
    let launch = Launch {
        program: PathBuf::from("sh"),
        args: vec!["-c".into(), command.into()],
        cwd: path.to_path_buf(),
        env,
        timeout: Duration::from_secs(engine.config().limits.check_timeout_secs),
        sandbox,
        bounds: bounds(engine),
        door: None,
    };
    let started = Instant::now();
    let lines = Arc::new(std::sync::Mutex::new(
        std::collections::VecDeque::<String>::new(),
    ));
    let sink = lines.clone();
    let exit = process::run(&launch, token, move |line| {
        let (Line::Stdout(l) | Line::Stderr(l)) = line;
        let mut q = sink.lock().unwrap_or_else(|p| p.into_inner());
        q.push_back(shortened(l, CHECK_LINE));
        while q.len() > 40 {
            q.pop_front();
        }
    })
    .await;
    let mut tail = lines
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(note) = dropped_note(&exit) {
        tail.push_str(&note);
    }
    let duration_ms = started.elapsed().as_millis() as u64;
    match exit {
        Ok(exit) => CheckResult {
            command: command.to_string(),
            exit_code: exit.code,
            passed: exit.success(),
            timed_out: exit.timed_out,
            duration_ms,
            output_tail: tail,
        },
        Err(e) => CheckResult {
            duration_ms,
            ..failed(e.to_string())
        },
    }
}

/// How much of one line of the check's output its tail keeps.
const CHECK_LINE: usize = 2000;

/// `line` cut to at most `max` bytes (at a character boundary), marked.
fn shortened(mut line: String, max: usize) -> String {
    if line.len() > max {
        let mut end = max;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push_str(" …");
    }
    line
}

/// A diff's counts, and the files it names without their content.
fn summarize(d: &diff::Diff) -> DiffSummary {
    DiffSummary {
        files: d.stats.files,
        insertions: d.stats.insertions,
        deletions: d.stats.deletions,
        omitted: d
            .files
            .iter()
            .filter_map(|f| f.omitted.as_ref().map(|why| format!("{}: {why}", f.path)))
            .collect(),
    }
}

/// Records the outcome, then writes `diff.patch` and `result.md`.
async fn record(engine: &Engine, battle: &Battle, c: &Contestant, outcome: Outcome) -> Result<()> {
    let Outcome {
        status,
        error,
        explanation,
        bench,
        diff,
        check,
    } = outcome;
    let summary = diff.as_ref().map(summarize);
    // The patch is on disk before the contestant is `done`: a crash in
    // between leaves a contestant that runs again, never one without a diff.
    if let Some(d) = &diff {
        let dir = results::confined(&battle.results_path, &[&results::contestant_dir(c)])?;
        let patch = d.patch.clone();
        tokio::task::spawn_blocking(move || {
            results::write_atomic(&dir.join(results::DIFF_FILE), patch.as_bytes())
        })
        .await??;
    }
    let (c2, at) = (c.clone(), engine.now());
    let (summary2, check2) = (summary.clone(), check.clone());
    let recorded = engine
        .db(move |s| {
            s.transact(|tx| {
                tx.conn().execute(
                    "UPDATE contestants SET diff_stats = ?1, check_result = ?2 WHERE id = ?3",
                    rusqlite::params![
                        summary2.as_ref().map(serde_json::to_string).transpose()?,
                        check2.as_ref().map(serde_json::to_string).transpose()?,
                        c2.id
                    ],
                )?;
                tx.finish_contestant(
                    &c2,
                    status,
                    error.as_deref(),
                    &explanation,
                    "",
                    false,
                    &bench,
                    at,
                )
            })
        })
        .await?;
    if !recorded {
        return Ok(());
    }
    let battle = engine.battle(&battle.id).await?;
    let Some(c) = battle.contestants.iter().find(|x| x.id == c.id).cloned() else {
        return Ok(());
    };
    super::contestant::write_result(engine, &battle, &c).await
}

/// The task for a refinement round: the original prompt, what the agent
/// said last time, and the user's feedback. (Agents' own session resume is
/// not used: every backend gets the same, self-contained follow-up.)
pub fn refine_prompt(prompt: &str, previous: &str, feedback: &str) -> String {
    format!(
        "{prompt}\n\nYou have already worked on this task in this repository; your changes are in \
         the working tree. What you reported last time:\n{}\n\nThe reviewer's feedback:\n{feedback}\n\n\
         Continue from the current state of the files and address the feedback.",
        previous.trim()
    )
}

/// Runs refinement round `round` of a finished Coding contestant in its own
/// worktree; writes `round-<n>/result.md` and `round-<n>/diff.patch`.
pub(super) async fn refine(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    mut round: crate::battle::Round,
    previous: &str,
    token: &CancellationToken,
) -> Result<crate::battle::Round> {
    let started = Instant::now();
    let base = battle
        .base_commit
        .clone()
        .ok_or_else(|| Error::Task(format!("battle {} has no base commit", battle.id)))?;
    let path = c.worktree.clone().filter(|p| p.exists()).ok_or_else(|| {
        Error::Conflict(format!(
            "contestant {}'s worktree is gone (pruned?); it cannot be refined",
            c.id
        ))
    })?;
    let prompt = refine_prompt(&battle.prompt, previous, &round.feedback);
    let want = lane::Want {
        provider: c.provider.clone(),
        model: c.model.clone(),
        holder: format!(
            "{}, contestant {} (refine round {})",
            lane::battle_name(&battle.id),
            c.position + 1,
            round.number
        ),
        battle_id: Some(battle.id.clone()),
        contestant_id: None,
        ready_at: engine.now(),
        position: c.position,
    };
    let outcome = match lane::take(engine, want, token).await {
        Ok(Some(slot)) => Some(work(engine, battle, c, &path, &prompt, &base, token, slot).await),
        Ok(None) => None,
        Err(e) => Some(Err(e)),
    };
    round.duration_ms = Some(started.elapsed().as_millis() as u64);
    let diff = match outcome {
        // Cancelled while waiting for its lane.
        None => {
            round.status = Some(ContestantStatus::Cancelled);
            None
        }
        Some(Ok(Work { run, diff, check })) => {
            round.status = Some(if run.cancelled {
                ContestantStatus::Cancelled
            } else if run.error.is_some() {
                ContestantStatus::Error
            } else {
                ContestantStatus::Done
            });
            round.error = run.error;
            round.output = run.explanation;
            round.diff = Some(summarize(&diff));
            round.check = check;
            Some(diff)
        }
        Some(Err(e)) => {
            round.status = Some(ContestantStatus::Error);
            round.error = Some(e.to_string());
            None
        }
    };
    let dir = results::confined(
        &battle.results_path,
        &[
            &results::contestant_dir(c),
            &format!("round-{}", round.number),
        ],
    )?;
    let md = render_round(battle, c, &round);
    let patch = diff.map(|d| d.patch);
    let dir2 = dir.clone();
    tokio::task::spawn_blocking(move || -> Result<()> {
        if let Some(patch) = patch {
            results::write_atomic(&dir2.join(results::DIFF_FILE), patch.as_bytes())?;
        }
        results::write_atomic(&dir2.join(results::RESULT_FILE), md.as_bytes())
    })
    .await??;
    round.result_path = Some(dir.join(results::RESULT_FILE));
    round.finished_at = Some(engine.now());
    let (bid, r, at) = (battle.id.clone(), round.clone(), engine.now());
    engine
        .db(move |s| s.transact(|tx| tx.finish_round(&bid, &r, at)))
        .await?;
    Ok(round)
}

pub(super) fn render_round(battle: &Battle, c: &Contestant, r: &crate::battle::Round) -> String {
    let mut md = format!(
        "# {} · {} — round {}\n\n- Battle: `{}`\n- Status: {}\n- Duration: {:.2} s\n\n## Feedback\n\n{}\n\n",
        c.identity,
        c.model,
        r.number,
        battle.id,
        r.status.map(|s| s.as_str()).unwrap_or("running"),
        r.duration_ms.unwrap_or(0) as f64 / 1000.0,
        r.feedback.trim()
    );
    if let Some(e) = &r.error {
        md.push_str(&format!("## Error\n\n{e}\n\n"));
    }
    if let Some(d) = &r.diff {
        md.push_str(&format!(
            "## Changes\n\n{} files changed, {} insertions(+), {} deletions(-) against the base commit (all rounds so far) — see [{}]({}).\n\n",
            d.files,
            d.insertions,
            d.deletions,
            results::DIFF_FILE,
            results::DIFF_FILE
        ));
        md.push_str(&results::omitted_list(d));
    }
    if let Some(check) = &r.check {
        md.push_str(&format!(
            "## Check\n\n`{}` {}.\n\n```\n{}\n```\n\n",
            check.command,
            if check.passed { "passed" } else { "failed" },
            check.output_tail.trim_end()
        ));
    }
    md.push_str("## Explanation\n\n");
    md.push_str(r.output.trim_end());
    md.push('\n');
    md
}
