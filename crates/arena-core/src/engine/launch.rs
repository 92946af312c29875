//! Launching an agent or a check: its private scratch folder, its sandbox
//! or jail (what it may read, write and reach), its one network door, its
//! environment and bounds. Every process Arena starts for an agent, a
//! check or an examiner is prepared here.

use std::path::{Path, PathBuf};

use crate::agent::backends;
use crate::agent::environment;
use crate::agent::process::{self, Launch};
use crate::agent::relay;
use crate::agent::sandbox::{self, Confinement, Sandbox};
use crate::error::{Error, Invalid, Result};

use super::Engine;

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
    /// The project's environment its tree sees ([`environment`]).
    pub environment: Option<Env<'a>>,
}

/// The project's environment around a tree ([`Reach::environment`]).
#[derive(Clone, Copy)]
pub(super) struct Env<'a> {
    /// Its folders (found in the user's project or a prepared one).
    pub folders: &'a [environment::Folder],
    /// The user's project: inside the jail its path leads into the tree.
    pub project: &'a Path,
    /// Where the tree's own layers are kept from run to run (a
    /// contestant's worktree); `None`: in the scratch folder, thrown away
    /// with it (a check's).
    pub layers: Option<&'a Path>,
    /// The tree itself is an overlay of this one (a check's tree over the
    /// battle's base tree), with a layer in the scratch folder.
    pub over: Option<&'a Path>,
    /// The tree is seen and worked in at the project's own path (a check's:
    /// a build finds what it recorded there, such as rustc's incremental
    /// cache, which is kept per working directory). Else the project's
    /// path holds links into the tree (an agent's, whose repository is its
    /// own and sits in the tree's `.git`).
    pub at_project: bool,
    /// Toolchain caches a prepared environment filled (`cargo home`, `go
    /// modules`): they stand where the user's would, for a base whose
    /// lockfiles are not the current tree's.
    pub caches: &'a [(String, PathBuf)],
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
    let mut toolchain_layers = Vec::new();
    if reach.toolchains {
        let prepared = |what: &str| {
            let caches = reach.environment.map(|e| e.caches).unwrap_or_default();
            caches
                .iter()
                .find(|(w, _)| w == what)
                .map(|(_, p)| p.clone())
        };
        let var = |name: &str| {
            let own = match name {
                "CARGO_HOME" => prepared("cargo home"),
                "GOMODCACHE" => prepared("go modules"),
                _ => None,
            };
            own.or_else(|| std::env::var_os(name).map(PathBuf::from))
        };
        let tools = sandbox::toolchains(real_home.as_deref(), var, scratch)
            .map_err(|e| Error::io(scratch, e))?;
        read.extend(tools.read);
        env.extend(tools.env);
        toolchain_layers = tools.layers;
    }
    let (mut layers, mut links, mut tree_at) = (toolchain_layers, Vec::new(), None);
    if let Some(env) = reach.environment {
        read.extend(
            environment::interpreters(env.folders)
                .iter()
                .flat_map(|p| sandbox::installation(p)),
        );
        if let Some(real) = &real_home {
            for (i, (from, to)) in
                environment::caches(real, |n| std::env::var_os(n).map(PathBuf::from), &home)
                    .into_iter()
                    .enumerate()
            {
                layers.push(environment::Layer {
                    lower: from,
                    at: to,
                    state: Some(scratch.join("caches").join(i.to_string())),
                });
            }
        }
        let kept = env.layers.map(Path::to_path_buf);
        let own = kept.unwrap_or_else(|| scratch.join("layers"));
        if let Some(base) = env.over {
            layers.push(environment::Layer {
                lower: base.to_path_buf(),
                at: reach.workspace.to_path_buf(),
                state: Some(scratch.join("tree")),
            });
            // Arena's own binary applies the change there first.
            read.extend(crate::agent::jail::confiner().map(Path::to_path_buf));
        }
        layers.extend(tree_layers(env, reach.workspace, reach.writable, &own));
        links = project_links(env.project, reach.workspace);
        // What the links now show is not read at its own place too.
        if !links.is_empty() {
            read.retain(|p| !p.starts_with(env.project));
            if env.at_project {
                links.clear();
                tree_at = Some((reach.workspace.to_path_buf(), env.project.to_path_buf()));
            }
        }
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
    sandbox.layers = layers;
    sandbox.links = links;
    sandbox.tree_at = tree_at;
    Ok(Some(Confinement { sandbox, env }))
}

/// The layers of the environment's folders in `tree`: each an overlay with
/// its own layer in `own` (numbered as the folders), or read-only where
/// the tree is. A folder whose place in the tree is not a plain folder
/// reached without a link (an agent made it a link or a file) is left
/// out, said in the log; a missing place is made.
fn tree_layers(env: Env<'_>, tree: &Path, writable: bool, own: &Path) -> Vec<environment::Layer> {
    let mut layers = Vec::new();
    for (i, folder) in env.folders.iter().enumerate() {
        let at = tree.join(&folder.rel);
        if let Err(why) = plain_place(tree, &folder.rel) {
            tracing::warn!(place = %at.display(), why, "an environment folder is left out of this run");
            continue;
        }
        layers.push(environment::Layer {
            lower: folder.lower.clone(),
            at,
            state: writable.then(|| own.join(i.to_string())),
        });
    }
    layers
}

/// Makes `tree/rel` a folder if it is missing; refuses a link or a file
/// on the way.
pub(super) fn plain_place(tree: &Path, rel: &Path) -> std::result::Result<(), &'static str> {
    let mut at = tree.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(_) => return Err("a link or a file is in its place"),
            Err(_) => std::fs::create_dir(&at).map_err(|_| "its place cannot be made")?,
        }
    }
    Ok(())
}

/// How many entries of the project's top folder get a link.
const PROJECT_LINKS: usize = 2_000;

/// Links at the user's project path to the same names in `tree`, for the
/// entries of the project's top folder (not `.git`, whose object stores a
/// jail may read at their place): paths the environment holds into the
/// project (a virtualenv's `#!` lines, an editable install, a build's
/// recorded sources) lead into the tree. None when the tree is the project.
fn project_links(project: &Path, tree: &Path) -> Vec<(PathBuf, PathBuf)> {
    if project == tree || tree.starts_with(project) || project.starts_with(tree) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(project) else {
        return Vec::new();
    };
    let mut names: Vec<std::ffi::OsString> = entries
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n != ".git")
        .take(PROJECT_LINKS)
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| (project.join(&name), tree.join(&name)))
        .collect()
}

/// An agent's private folder for its configuration files: only this user
/// may enter it (0700), and it is removed when the run ends.
pub(super) struct Scratch(PathBuf);

impl Scratch {
    pub fn create(path: &Path) -> Result<Scratch> {
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

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // It may hold overlay layers, whose bookkeeping folder no one may
        // enter: removed as the environment's layers are.
        environment::remove(&self.0);
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
            registries: None,
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
        consumption: consumption(limits),
        door: crate::agent::relay::DoorLimits {
            max_body_bytes: limits.door_max_body_bytes,
            max_connections: usize::try_from(limits.door_max_connections)
                .unwrap_or(usize::MAX)
                .max(1),
            request_timeout: std::time::Duration::from_secs(limits.door_request_timeout_secs),
        },
    }
}

/// What all of one run's processes may consume, from `[limits]` (0: no
/// bound).
pub(super) fn consumption(limits: &crate::config::Limits) -> crate::agent::bounds::Consumption {
    let some = |n: u64| (n > 0).then_some(n);
    crate::agent::bounds::Consumption {
        memory_bytes: some(limits.jail_memory_bytes),
        processes: some(limits.jail_max_processes),
        write_bytes: some(limits.contestant_write_bytes),
        min_free_disk_bytes: some(limits.min_free_disk_bytes),
        tmp_bytes: some(limits.jail_tmp_bytes),
    }
}

/// The visible note for output a run dropped over
/// `limits.max_output_bytes`, if it dropped any.
pub(super) fn dropped_note(
    exit: &std::result::Result<process::Exit, process::SpawnError>,
) -> Option<String> {
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

/// How much of one output line a kept tail holds.
const TAIL_LINE_BYTES: usize = 2000;

/// Runs `launch` to its end (a check, a prepare), keeping the last `keep`
/// lines of its output, each cut to [`TAIL_LINE_BYTES`], as its tail, with
/// a note of what was dropped past `[limits]`' output budget. Each line
/// goes to the debug log as `what`.
pub(super) async fn run_keeping_tail(
    launch: &Launch,
    token: &tokio_util::sync::CancellationToken,
    keep: usize,
    what: &'static str,
) -> (
    std::result::Result<process::Exit, process::SpawnError>,
    String,
) {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(
        std::collections::VecDeque::<String>::new(),
    ));
    let sink = lines.clone();
    let exit = process::run(launch, token, move |line| {
        let (process::Line::Stdout(l) | process::Line::Stderr(l)) = line;
        tracing::debug!(line = %l, what);
        let mut q = sink.lock().unwrap_or_else(|p| p.into_inner());
        q.push_back(shortened(l, TAIL_LINE_BYTES));
        while q.len() > keep {
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
    (exit, tail)
}

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
