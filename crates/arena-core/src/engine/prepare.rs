//! An environment for a base that is not today's: when a battle's base
//! carries other lockfiles than the user's current tree (another
//! [environment key](crate::agent::envkey)), the folders the user
//! installed do not fit it. Arena then runs the project's prepare command
//! (`[coding] prepare`, else the one the lockfiles call for) once per key,
//! in a checkout of the base kept in the store of prepared environments,
//! in a jail whose only network is the door to the package registries, and
//! every later contestant of any battle with that key sees the result.
//!
//! The store, under the data directory:
//!
//! ```text
//! environments/<key>/record.json   what was made: key, project, base, command, size, when
//! environments/<key>/tree/         the base's files with the prepared folders in them
//! environments/<key>/caches/       Cargo's home and Go's module cache the prepare filled
//!                                  (the cargo home set offline once filled)
//! environments/.locks/<key>.lock   held exclusively while preparing or removing, shared
//!                                  while a battle uses the environment
//! ```
//!
//! An environment is made where it stays (a virtualenv's `#!` lines and
//! the paths a build records are absolute: made elsewhere and moved, they
//! would lead nowhere). Its `record.json` is written last, in one rename:
//! a folder without one is unfinished (being prepared under the lock, or
//! left by a crash and removed by the next prepare). A prepare that fails
//! leaves nothing. Once made, its files lose their write permission (its
//! folders keep theirs: an overlay copies a folder up with its mode, and a
//! contestant must be able to add to its own copy).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::agent::environment;
use crate::agent::envkey::{self, Ecosystem, EnvKey};
use crate::agent::process::{self, Launch};
use crate::agent::registry;
use crate::error::{Error, Invalid, Result};

use super::launch::{self, Env, Reach, Scratch};
use super::Engine;

/// How many entries the size of an environment counts, at most.
const SIZE_ENTRIES: usize = 2_000_000;
/// How many of the prepare's last output lines its error keeps.
const TAIL_LINES: usize = 40;
/// How often a wait for another process's prepare looks again.
const LOCK_POLL: Duration = Duration::from_millis(100);

/// Which environment a battle's contestants get.
#[derive(Debug, Clone)]
pub enum EnvChoice {
    /// The base has the key of the user's current tree: the folders the
    /// user installed serve as they are.
    Current { key: String },
    /// Another key: the environment prepared for it. `root` is a checkout
    /// of the base with the prepared folders in it (what
    /// [`environment::find`] looks in). While this value (or a clone)
    /// lives, the environment is held in use: `arena env prune` leaves it.
    Prepared {
        key: String,
        root: PathBuf,
        record: Box<EnvRecord>,
        hold: EnvHold,
    },
    /// The base carries no lockfile (nor a `Cargo.toml` without one), or
    /// none Arena knows a command for and no `[coding] prepare`: no
    /// environment.
    None,
}

/// A shared hold on a prepared environment (its lock file, locked shared).
#[derive(Debug, Clone)]
pub struct EnvHold(#[allow(dead_code)] Arc<File>);

/// What a prepared environment is: its `record.json`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EnvRecord {
    /// The key's first 16 hex digits (the folder's name).
    pub key: String,
    /// The whole key (SHA-256, hex).
    pub full_key: String,
    /// The project it was made for, and the base commit checked out.
    pub project: PathBuf,
    pub base: String,
    /// The command that made it (shown before it first ran).
    pub command: String,
    pub created: chrono::DateTime<chrono::Utc>,
    /// Bytes of its files (the tree and the caches), when made.
    pub size_bytes: u64,
    pub duration_ms: u64,
    /// Whether the command succeeded (a failed one is never kept).
    pub ok: bool,
    /// Caches the prepare filled beside the tree, by what they are
    /// (`cargo home`, `go modules`): a contestant's toolchain reads them.
    #[serde(default)]
    pub caches: Vec<(String, PathBuf)>,
}

/// What `arena env list` shows of one environment in the store.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EnvEntry {
    pub key: String,
    /// Its record; `None` for an unfinished one.
    pub record: Option<EnvRecord>,
    pub path: PathBuf,
    pub state: EnvState,
}

/// Where one kept environment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvState {
    /// Made, and no battle holds it.
    Ready,
    /// Made, and a battle (or a prepare) holds it now.
    InUse,
    /// Being prepared now.
    Preparing,
    /// Left unfinished (a prepare that crashed): the next prepare or a
    /// prune removes it.
    Unfinished,
}

impl EnvState {
    pub fn as_str(self) -> &'static str {
        match self {
            EnvState::Ready => "ready",
            EnvState::InUse => "in use",
            EnvState::Preparing => "preparing",
            EnvState::Unfinished => "unfinished",
        }
    }
}

/// What `arena env prune` did with one environment.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PrunedEnv {
    pub key: String,
    /// Bytes freed (0 when kept).
    pub size_bytes: u64,
    pub removed: bool,
    /// Why it was kept.
    pub kept_because: Option<String>,
}

/// The store's folder under a data directory.
fn store(data_dir: &Path) -> PathBuf {
    data_dir.join("environments")
}

impl Engine {
    /// The environment a Coding battle on `project` at `base` gets: the
    /// user's current folders when the base's key is the current tree's,
    /// else the one prepared for the base's key (prepared now, once per
    /// key, when none is kept; a concurrent prepare of the same key is
    /// waited for), or none when the base carries no lockfile. A prepare
    /// that fails is an error naming the key, the command and the last
    /// lines of its output.
    pub async fn environment_for(
        &self,
        project: &Path,
        base: &str,
        token: &CancellationToken,
    ) -> Result<EnvChoice> {
        environment_for(self, project, base, token, None).await
    }

    /// The prepared environments kept in the store, oldest first.
    pub async fn environments(&self) -> Result<Vec<EnvEntry>> {
        let root = store(self.data_dir());
        tokio::task::spawn_blocking(move || list(&root)).await?
    }

    /// Removes kept environments: those named by `keys` (a key or a unique
    /// start of one), or with `all` every one. One in use (a battle holds
    /// it, or it is being prepared) is kept and said so.
    pub async fn prune_environments(&self, keys: &[String], all: bool) -> Result<Vec<PrunedEnv>> {
        let root = store(self.data_dir());
        let keys = keys.to_vec();
        tokio::task::spawn_blocking(move || prune(&root, &keys, all)).await?
    }
}

/// See [`Engine::environment_for`].
pub(super) async fn environment_for(
    engine: &Engine,
    project: &Path,
    base: &str,
    token: &CancellationToken,
    shown_to: Option<(&str, &str)>,
) -> Result<EnvChoice> {
    let (p, b) = (project.to_path_buf(), base.to_string());
    // A snapshot of the working tree is a commit of Arena's own
    // repository (`<data>/snapshots/<commit>`), not of the project's.
    let snapshot = engine
        .data_dir()
        .join(crate::coding_base::SNAPSHOTS_DIR)
        .join(base);
    let (at_base, now, resolves) = tokio::task::spawn_blocking(move || {
        let (at_base, from) = match envkey::key_at(&p, &b) {
            Ok(key) => (key, p.clone()),
            Err(_) if snapshot.is_dir() => (
                envkey::key_at(&snapshot, &b).map_err(|e| Error::Git(e.to_string()))?,
                snapshot,
            ),
            Err(e) => return Err(Error::Git(e.to_string())),
        };
        let now = envkey::key_of_tree(&p).map_err(|e| Error::Git(e.to_string()))?;
        let resolves = envkey::resolves_dependencies(&from, &b, &at_base);
        Ok::<_, Error>((at_base, now, resolves))
    })
    .await??;
    if at_base.is_empty() {
        return Ok(EnvChoice::None);
    }
    // A tree with dependencies and no lockfile, the user's own included,
    // has never been resolved here (a build would have written one): its
    // environment is prepared, not taken from a cargo home that may lack
    // what it needs.
    if at_base.hex == now.hex && !resolves {
        return Ok(EnvChoice::Current {
            key: at_base.short().to_string(),
        });
    }
    let config = engine.config();
    let Some(command) = config
        .coding
        .prepare
        .clone()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| at_base.prepare_command())
    else {
        tracing::warn!(
            key = at_base.short(),
            "the base's lockfiles differ from the current tree's and no prepare command is \
             known for them (set [coding] prepare): no environment"
        );
        return Ok(EnvChoice::None);
    };
    let key = at_base.short().to_string();
    let store = store(engine.data_dir());
    let folder = store.join(&key);
    let lock_path = store.join(".locks").join(format!("{key}.lock"));
    std::fs::create_dir_all(store.join(".locks")).map_err(|e| Error::io(&store, e))?;
    let lock = open_lock(&lock_path)?;
    // Shared once it is made (battles use it side by side); exclusive to
    // make it (no one else prepares, uses or removes it meanwhile).
    if let Some(record) = wait_for(&lock, &folder, token).await? {
        tracing::debug!(key, "a prepared environment is reused");
        return Ok(EnvChoice::Prepared {
            key,
            root: folder.join("tree"),
            record: Box::new(record),
            hold: EnvHold(Arc::new(lock)),
        });
    }
    // Unfinished: left by a prepare that crashed.
    if folder.exists() {
        remove_folder(&folder)?;
    }
    // Said in the contestant's stream before it runs: what runs, once for
    // the key, and what it may reach.
    if let Some((battle_id, contestant_id)) = shown_to {
        let summary = format!(
            "preparing the environment for the base's lockfiles (key {key}), once: `{command}` \
             in a jail whose only network is the package registries"
        );
        let event = crate::event::EventKind::Tool {
            name: "prepare".into(),
            summary,
            ok: true,
        };
        super::journal::Sink::answer(battle_id, contestant_id)
            .write(engine, vec![event])
            .await?;
    }
    let made = prepare(engine, project, base, &at_base, &command, &folder, token).await;
    match made {
        Ok(record) => {
            share(&lock)?;
            Ok(EnvChoice::Prepared {
                key,
                root: folder.join("tree"),
                record: Box::new(record),
                hold: EnvHold(Arc::new(lock)),
            })
        }
        Err(e) => {
            let f = folder.clone();
            let _ = tokio::task::spawn_blocking(move || remove_folder(&f)).await;
            Err(e)
        }
    }
}

/// Makes the environment for `key` in `folder`: the base checked out in
/// `folder/tree`, the command run there in its jail; on success its record.
async fn prepare(
    engine: &Engine,
    project: &Path,
    base: &str,
    key: &EnvKey,
    command: &str,
    folder: &Path,
    token: &CancellationToken,
) -> Result<EnvRecord> {
    let short = key.short().to_string();
    tracing::info!(key = %short, command, project = %project.display(), base, "preparing the environment for a base with other lockfiles");
    let tree = folder.join("tree");
    let caches = folder.join("caches");
    {
        let (p, b, t, c) = (
            project.to_path_buf(),
            base.to_string(),
            tree.clone(),
            caches.clone(),
        );
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&c).map_err(|e| Error::io(&c, e))?;
            envkey::checkout(&p, &b, &t).map_err(|e| Error::Git(e.to_string()))
        })
        .await??;
    }
    let mut env: Vec<(String, String)> = vec![
        // Virtualenvs in the project, where the environment's folders are.
        ("POETRY_VIRTUALENVS_IN_PROJECT".into(), "true".into()),
        ("PIPENV_VENV_IN_PROJECT".into(), "1".into()),
    ];
    let mut kept_caches = Vec::new();
    let wants = |e: Ecosystem| key.ecosystems.iter().any(|f| f.ecosystem == e);
    if wants(Ecosystem::Cargo) || wants(Ecosystem::CargoManifests) {
        let home = caches.join("cargo");
        std::fs::create_dir_all(&home).map_err(|e| Error::io(&home, e))?;
        copy_cargo_config(&home);
        env.push(("CARGO_HOME".into(), home.to_string_lossy().into_owned()));
        kept_caches.push(("cargo home".to_string(), home));
    }
    if wants(Ecosystem::Go) {
        let mods = caches.join("go-mod");
        std::fs::create_dir_all(&mods).map_err(|e| Error::io(&mods, e))?;
        env.push(("GOMODCACHE".into(), mods.to_string_lossy().into_owned()));
        // Go leaves its module cache read-only; Arena does that itself.
        env.push(("GOFLAGS".into(), "-modcacherw".into()));
        kept_caches.push(("go modules".to_string(), mods));
    }
    let started = Instant::now();
    let (exit, tail) = run_in_jail(engine, &short, command, folder, &tree, env, token).await?;
    let duration_ms = started.elapsed().as_millis() as u64;
    let ok = exit.as_ref().is_ok_and(|e| e.success());
    if !ok {
        let how = match &exit {
            Ok(e) if e.timed_out => "timed out".to_string(),
            Ok(e) => match (e.code, &e.limit) {
                (_, Some(limit)) => format!("was stopped: {limit}"),
                (Some(code), None) => format!("exited with status {code}"),
                (None, None) => "was killed by a signal".to_string(),
            },
            Err(e) => format!("could not start: {e}"),
        };
        if token.is_cancelled() {
            return Err(Error::Cancelled);
        }
        return Err(Error::Task(format!(
            "the environment for key {short} could not be prepared: `{command}` {how}; \
             the last lines of its output:\n{tail}"
        )));
    }
    // The jails that use this cargo home reach no network: cargo is told
    // so, and resolves from what the prepare fetched (a tree with no
    // Cargo.lock gets the same versions the prepare locked in its tree,
    // the only ones downloaded), whether the command says `--offline` or
    // not.
    for (what, home) in &kept_caches {
        if what == "cargo home" {
            cargo_offline(home)?;
        }
    }
    let (f, made_caches) = (folder.to_path_buf(), kept_caches);
    let record = EnvRecord {
        key: short,
        full_key: key.hex.clone(),
        project: project.to_path_buf(),
        base: base.to_string(),
        command: command.to_string(),
        created: engine.now(),
        size_bytes: 0,
        duration_ms,
        ok: true,
        caches: made_caches,
    };
    tokio::task::spawn_blocking(move || finish(&f, record)).await?
}

/// Runs the prepare command in `tree`, in a jail whose write folder is the
/// environment's `folder` and whose only network is the registry door.
/// Returns how it ended and the last lines of its output.
async fn run_in_jail(
    engine: &Engine,
    key: &str,
    command: &str,
    folder: &Path,
    tree: &Path,
    mut env: Vec<(String, String)>,
    token: &CancellationToken,
) -> Result<(
    std::result::Result<process::Exit, process::SpawnError>,
    String,
)> {
    let scratch_path = engine
        .data_dir()
        .join("agents")
        .join(format!("prepare-{key}"));
    let programs: Vec<PathBuf> = command
        .split(|c: char| c.is_whitespace() || ";&|()`".contains(c))
        .map(|word| word.trim_matches(['"', '\'']))
        .filter(|word| !word.is_empty() && !word.starts_with('-') && !word.contains('='))
        .filter_map(crate::backend::locate)
        .collect();
    let scratch = Scratch::create(&scratch_path)?;
    let reach = Reach {
        programs: &programs,
        workspace: folder,
        writable: true,
        objects: &[],
        // No network but the door to the package registries (which
        // `process::run` opens and allows).
        connect: Some(Vec::new()),
        door: None,
        own_config: &[],
        toolchains: true,
        // The toolchains' caches the user keeps, copy-on-write: what was
        // fetched before need not be fetched again.
        environment: Some(Env {
            folders: &[],
            project: tree,
            layers: None,
            over: None,
            at_project: false,
            caches: &[],
        }),
    };
    let confined = launch::agent_sandbox(engine, scratch.path(), reach)?;
    let sandbox = match confined {
        Some(c) => {
            let mut all = c.env;
            all.append(&mut env);
            env = all;
            Some(c.sandbox)
        }
        None => {
            tracing::warn!(
                key,
                "[limits] sandbox is off: the prepare command runs unconfined"
            );
            None
        }
    };
    // The door's hosts: those this machine's package tools use, and
    // `[coding] registries`.
    let configured = engine.config().coding.registries.clone();
    let hosts =
        tokio::task::spawn_blocking(move || registry::machine_registries(&configured)).await?;
    tracing::info!(key, hosts = ?hosts, "the prepare's door reaches these package registries");
    let limits = &engine.config().limits;
    let launch = Launch {
        program: PathBuf::from("sh"),
        args: vec!["-c".into(), command.into()],
        cwd: tree.to_path_buf(),
        env,
        timeout: limits
            .max_duration()
            .max(Duration::from_secs(limits.check_timeout_secs)),
        sandbox,
        bounds: launch::bounds(engine),
        door: None,
        registries: Some(registry::Registries { hosts }),
    };
    let (exit, tail) = launch::run_keeping_tail(&launch, token, TAIL_LINES, "prepare").await;
    drop(scratch);
    Ok((exit, tail))
}

/// The user's Cargo configuration (registry sources and mirrors) in the
/// prepare's own Cargo home; never its credentials.
fn copy_cargo_config(home: &Path) {
    let user = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(user) = user else { return };
    for file in ["config.toml", "config"] {
        let from = user.join(file);
        if from.is_file() {
            if let Err(e) = std::fs::copy(&from, home.join(file)) {
                tracing::warn!(file = %from.display(), error = %e, "Cargo's configuration was not copied for the prepare");
            }
        }
    }
}

/// Sets `net.offline` in the Cargo configuration of `home` (its
/// `config.toml`, or the `config` cargo reads first when there is one),
/// keeping what the user's configuration copied there says.
fn cargo_offline(home: &Path) -> Result<()> {
    let legacy = home.join("config");
    let file = if legacy.is_file() {
        legacy
    } else {
        home.join("config.toml")
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(&file, e)),
    };
    let mut doc = text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        Error::Task(format!(
            "the Cargo configuration {} cannot be read: {e}",
            file.display()
        ))
    })?;
    let net = doc
        .entry("net")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(net) = net.as_table_like_mut() else {
        return Err(Error::Task(format!(
            "the Cargo configuration {} has a `net` that is not a table",
            file.display()
        )));
    };
    net.insert("offline", toml_edit::value(true));
    std::fs::write(&file, doc.to_string()).map_err(|e| Error::io(&file, e))
}

/// The end of a successful prepare: files made read-only, the size
/// counted, the record written (in one rename: from now on it is made).
fn finish(folder: &Path, mut record: EnvRecord) -> Result<EnvRecord> {
    read_only(folder, 0);
    record.size_bytes = environment::size(folder, SIZE_ENTRIES).unwrap_or(0);
    let text = serde_json::to_vec_pretty(&record)?;
    let part = folder.join("record.json.part");
    std::fs::write(&part, text).map_err(|e| Error::io(&part, e))?;
    let done = folder.join("record.json");
    std::fs::rename(&part, &done).map_err(|e| Error::io(&done, e))?;
    Ok(record)
}

/// Takes the write permission from every file beneath `path` (not
/// following links); folders keep theirs (see the module's notes).
fn read_only(path: &Path, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    if depth > 256 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            read_only(&entry.path(), depth + 1);
        } else if meta.is_file() {
            let mode = meta.permissions().mode() & !0o222;
            let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(mode));
        }
    }
}

/// The record of a made environment (`None`: unfinished or unreadable).
fn read_record(folder: &Path) -> Option<EnvRecord> {
    let text = std::fs::read(folder.join("record.json")).ok()?;
    serde_json::from_slice::<EnvRecord>(&text)
        .ok()
        .filter(|r| r.ok)
}

/// Removes an environment's folder, or says why it is still there.
fn remove_folder(folder: &Path) -> Result<()> {
    environment::remove(folder);
    if folder.exists() {
        return Err(Error::Task(format!(
            "{} could not be removed (see the log)",
            folder.display()
        )));
    }
    Ok(())
}

fn open_lock(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

/// Tries to lock `file` (`LOCK_EX` or `LOCK_SH`) without waiting.
fn try_lock(file: &File, how: libc::c_int) -> Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor this `File` owns.
    let rc = unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) || e.kind() == std::io::ErrorKind::Interrupted {
        Ok(false)
    } else {
        Err(Error::io("an environment's lock file", e))
    }
}

/// Waits (polling, stopped by `token`) until the environment in `folder`
/// is made and `file` locked shared (its record), or no one holds `file`
/// and it is locked exclusively (`None`: this process makes it).
async fn wait_for(
    file: &File,
    folder: &Path,
    token: &CancellationToken,
) -> Result<Option<EnvRecord>> {
    let mut said = false;
    loop {
        if read_record(folder).is_some() && try_lock(file, libc::LOCK_SH)? {
            // Read again under the lock: a prune may have come between.
            if let Some(record) = read_record(folder) {
                return Ok(Some(record));
            }
            unlock(file);
        }
        if try_lock(file, libc::LOCK_EX)? {
            return match read_record(folder) {
                Some(record) => {
                    share(file)?;
                    Ok(Some(record))
                }
                None => Ok(None),
            };
        }
        if !said {
            tracing::info!(folder = %folder.display(), "waiting for another prepare of the same environment");
            said = true;
        }
        tokio::select! {
            _ = token.cancelled() => return Err(Error::Cancelled),
            _ = tokio::time::sleep(LOCK_POLL) => {}
        }
    }
}

fn unlock(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor this `File` owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// Turns an exclusive lock into a shared one (a hold of a battle).
fn share(file: &File) -> Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: as in `try_lock`; a blocking LOCK_SH on a lock this process
    // holds exclusively converts it without waiting.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::io(
            "an environment's lock file",
            std::io::Error::last_os_error(),
        ))
    }
}

/// What the store holds.
fn list(root: &Path) -> Result<Vec<EnvEntry>> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(root, e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        let record = read_record(&path);
        let lock = open_lock(&root.join(".locks").join(format!("{name}.lock")))?;
        let state = if try_lock(&lock, libc::LOCK_EX)? {
            if record.is_some() {
                EnvState::Ready
            } else {
                EnvState::Unfinished
            }
        } else if record.is_some() {
            EnvState::InUse
        } else {
            EnvState::Preparing
        };
        out.push(EnvEntry {
            key: name,
            record,
            path,
            state,
        });
    }
    out.sort_by(|a, b| {
        let at = |e: &EnvEntry| e.record.as_ref().map(|r| r.created);
        at(a).cmp(&at(b)).then_with(|| a.key.cmp(&b.key))
    });
    Ok(out)
}

/// See [`Engine::prune_environments`].
fn prune(root: &Path, keys: &[String], all: bool) -> Result<Vec<PrunedEnv>> {
    if keys.is_empty() && !all {
        return Err(Invalid::Other(
            "name the environments to remove (their keys, from `arena env list`), or pass --all"
                .into(),
        )
        .into());
    }
    let kept = list(root)?;
    let mut chosen: Vec<&EnvEntry> = Vec::new();
    if all {
        chosen.extend(kept.iter());
    }
    for wanted in keys {
        let matching: Vec<&EnvEntry> = kept
            .iter()
            .filter(|e| e.key.starts_with(wanted.as_str()))
            .collect();
        match matching.as_slice() {
            [] => return Err(Error::not_found("environment", wanted.clone())),
            [one] => {
                if !chosen.iter().any(|c| c.key == one.key) {
                    chosen.push(one);
                }
            }
            _ => {
                return Err(Invalid::Other(format!(
                    "`{wanted}` is the start of several environments' keys; give more of it"
                ))
                .into())
            }
        }
    }
    let mut out = Vec::new();
    for entry in chosen {
        let lock = open_lock(&root.join(".locks").join(format!("{}.lock", entry.key)))?;
        if !try_lock(&lock, libc::LOCK_EX)? {
            out.push(PrunedEnv {
                key: entry.key.clone(),
                size_bytes: 0,
                removed: false,
                kept_because: Some(if entry.record.is_some() {
                    "a battle is using it".into()
                } else {
                    "it is being prepared".into()
                }),
            });
            continue;
        }
        let size = environment::size(&entry.path, SIZE_ENTRIES).unwrap_or(0);
        remove_folder(&entry.path)?;
        tracing::info!(key = %entry.key, size, "a prepared environment was removed");
        out.push(PrunedEnv {
            key: entry.key.clone(),
            size_bytes: size,
            removed: true,
            kept_because: None,
        });
    }
    Ok(out)
}
