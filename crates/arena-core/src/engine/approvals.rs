//! What a team database's rows may make this machine do. A row is data,
//! never a command or a credential: anyone who can write to the team's
//! database could otherwise run a command on every worker, or make one
//! fetch (with its owner's git credentials) a repository only that
//! machine can read.
//!
//! So on a team database, a worker takes up a series only when this
//! machine's user allowed what it asks for:
//! - each **check command** it runs: one of `[team] checks` in
//!   `arena.toml`, or approved for the series' project on this machine
//!   (`arena team approve SERIES`, or starting the series here);
//! - its **git remote**, when the project is on another machine: one of
//!   `[team] remotes` (fetched with this machine's credentials), approved
//!   here, or the remote of the project as this machine has it (a clone at
//!   the series' project path whose remote is that URL) — or one of
//!   `[team] public_remotes`, fetched with no credentials at all.
//!
//! Backends, personas and providers are this machine's own already: a
//! series names them, and the worker runs its own definition of each name
//! (`[[backend]]` commands, `AGENTS.md` personas), never a text from the
//! database. Approvals live in this machine's data folder
//! (`team-approvals.json`), never in the shared database.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::agent::mirror::Credentials;
use crate::battle::{short_id, BattleType};
use crate::config::RemoteAccess;
use crate::error::{Error, Invalid, Result};
use crate::series::Series;

use super::Engine;

/// The approvals file, in the data folder.
const FILE: &str = "team-approvals.json";
/// How a refusal that an approval lifts tells itself apart (a worker
/// looks again soon after it, not minutes later).
const APPROVE_HINT: &str = "arena team approve";
/// A command or URL from the database is quoted in a refusal at most
/// this long.
const QUOTED_CHARS: usize = 200;

/// One thing this machine's user allowed for one project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    /// The project: its remote's URL (its folder, for one without).
    pub project: String,
    /// A check command run for it; none: its remote fetched with this
    /// machine's git credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The series it was approved for, and the machine that started it.
    pub series: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// When (ms since the epoch).
    pub at_ms: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Approvals {
    #[serde(default)]
    approved: Vec<Approval>,
}

/// What a series asks of the machine that serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Asks {
    pub series: String,
    /// The project as approvals name it (see [`Approval::project`]).
    pub project: String,
    /// The machine that started it.
    pub origin: Option<String>,
    /// Its check commands (each once).
    pub checks: Vec<String>,
    /// Its git remote, when this machine would fetch it.
    pub remote: Option<String>,
    /// Of those, what this machine has not allowed yet.
    pub unapproved_checks: Vec<String>,
    pub remote_allowed: bool,
}

impl Engine {
    /// What series `id` asks of this machine (its check commands, its
    /// remote) and what of it is not allowed here yet.
    pub async fn team_asks(&self, id: &str) -> Result<Asks> {
        let series = self.series(id).await?;
        let engine = self.clone();
        tokio::task::spawn_blocking(move || asks(&engine, &series)).await?
    }

    /// Approves on this machine what series `id` asks for: its check
    /// commands for its project, and fetching its remote with this
    /// machine's git credentials. Returns what it asked.
    pub async fn approve_series(&self, id: &str) -> Result<Asks> {
        let series = self.series(id).await?;
        let engine = self.clone();
        tokio::task::spawn_blocking(move || {
            let asked = asks(&engine, &series)?;
            remember(&engine, &series, asked.remote.is_some())?;
            asks(&engine, &series)
        })
        .await?
    }
}

/// The project a series' approvals are for: its remote's URL, else its
/// folder.
fn project_of(series: &Series) -> String {
    series
        .remote_url
        .clone()
        .unwrap_or_else(|| series.request.project.to_string_lossy().into_owned())
}

/// A series' check commands, each once.
fn checks_of(series: &Series) -> Vec<String> {
    let r = &series.request;
    if !r.battle_type.judged_by_check() {
        return Vec::new();
    }
    let mut checks: Vec<String> = Vec::new();
    for p in &r.prompts {
        // A pack task's verifier runs its test command like a check (and a
        // row may name a check beside it: both are asked for).
        let tests = p.task.as_ref().and_then(|t| t.tests.as_ref());
        let commands = [tests.map(|t| t.test_command.as_str()), r.check_of(p)];
        for c in commands.into_iter().flatten().map(str::trim) {
            if !c.is_empty() && !checks.iter().any(|k| k == c) {
                checks.push(c.to_string());
            }
        }
    }
    checks
}

/// Whether this machine fetches a series' project (a Coding series that
/// started elsewhere).
fn fetched_here(engine: &Engine, series: &Series) -> bool {
    series.request.battle_type == BattleType::Coding
        && series
            .machine
            .as_deref()
            .is_some_and(|m| m != engine.machine())
}

fn asks(engine: &Engine, series: &Series) -> Result<Asks> {
    let approvals = load(engine.data_dir())?;
    let project = project_of(series);
    let config = engine.config();
    let checks = checks_of(series);
    let unapproved_checks = checks
        .iter()
        .filter(|c| !config.team.allows_check(c) && !approvals.allows_check(&project, c))
        .cloned()
        .collect();
    let remote = series
        .remote_url
        .clone()
        .filter(|_| fetched_here(engine, series));
    let remote_allowed = match &remote {
        Some(url) => access(engine, series, &approvals, url).is_some(),
        None => true,
    };
    Ok(Asks {
        series: series.id.clone(),
        project,
        origin: series.machine.clone(),
        checks,
        remote,
        unapproved_checks,
        remote_allowed,
    })
}

/// How this machine may fetch `url`, a series' remote, if at all: with
/// its credentials when its user named it (`[team] remotes`, an approval,
/// the remote of the project here), else anonymously when it is one of
/// `[team] public_remotes`.
fn access(
    engine: &Engine,
    series: &Series,
    approvals: &Approvals,
    url: &str,
) -> Option<Credentials> {
    let config = engine.config();
    let team = &config.team;
    if team.remote_access(url) == Some(RemoteAccess::Credentials)
        || approvals.allows_fetch(url)
        || crate::agent::mirror::is_remote_of(&series.request.project, url)
    {
        return Some(Credentials::Machine);
    }
    (team.remote_access(url) == Some(RemoteAccess::Anonymous)).then_some(Credentials::Anonymous)
}

/// Team mode: refuses (with how to allow it) a series whose check
/// commands this machine's user has not allowed.
pub(super) fn check_commands(engine: &Engine, series: &Series) -> Result<()> {
    if !engine.inner.store.is_team() {
        return Ok(());
    }
    // A pack task without its tests would have its verifier read a pack
    // folder the row names: a path from the team's database is not one
    // this machine chose to run.
    if series
        .request
        .prompts
        .iter()
        .any(|p| p.task.as_ref().is_some_and(|t| t.tests.is_none()))
    {
        return Err(Invalid::Other(format!(
            "series {} is a pack run recorded without its tasks' tests (by an older Arena): only the machine that started it runs it",
            short_id(&series.id)
        ))
        .into());
    }
    let asked = asks(engine, series)?;
    match asked.unapproved_checks.first() {
        None => Ok(()),
        Some(check) => {
            let short = short_id(&series.id);
            Err(Invalid::Other(format!(
                "check `{}` of series {short} is not approved on this machine: run `{APPROVE_HINT} {short}` to allow it (or list it in [team] checks in arena.toml)",
                quoted(check)
            ))
            .into())
        }
    }
}

/// Team mode: a battle's check command, when one of its series' (a row
/// changed since could name any other).
pub(super) fn battle_check(series: &Series, check: Option<&str>) -> Result<()> {
    let Some(check) = check.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(());
    };
    if checks_of(series).iter().any(|c| c == check) {
        return Ok(());
    }
    Err(Invalid::Other(format!(
        "a battle of series {} has the check `{}`, which is not its series': it is not run here",
        short_id(&series.id),
        quoted(check)
    ))
    .into())
}

/// How this machine fetches series' remote `url`; refused (with how to
/// allow it) when its user has not allowed it.
pub(super) fn remote(engine: &Engine, series: &Series, url: &str) -> Result<Credentials> {
    let approvals = load(engine.data_dir())?;
    access(engine, series, &approvals, url).ok_or_else(|| {
        let short = short_id(&series.id);
        Invalid::Other(format!(
            "its remote `{}` is not one this machine fetches: run `{APPROVE_HINT} {short}` to fetch it with this machine's git credentials, or list it in [team] remotes (with them) or public_remotes (with none) in arena.toml",
            quoted(url)
        ))
        .into()
    })
}

/// Whether a refusal is lifted by an approval (so a worker looks again
/// soon).
pub(super) fn awaits_approval(e: &Error) -> bool {
    e.to_string().contains(APPROVE_HINT)
}

/// Remembers, for a series started on this machine, that its user gave
/// its check commands (starting it is approving them).
pub(super) fn remember_started(engine: &Engine, series: &Series) -> Result<()> {
    if !engine.inner.store.is_team() || checks_of(series).is_empty() {
        return Ok(());
    }
    remember(engine, series, false)
}

fn remember(engine: &Engine, series: &Series, fetch: bool) -> Result<()> {
    let dir = engine.data_dir();
    let mut approvals = load(dir)?;
    let project = project_of(series);
    let base = Approval {
        project: project.clone(),
        check: None,
        series: series.id.clone(),
        origin: series.machine.clone(),
        at_ms: engine.lease_ms(),
    };
    let mut add = |check: Option<String>| {
        let known = approvals
            .approved
            .iter()
            .any(|a| a.project == project && a.check == check);
        if !known {
            approvals.approved.push(Approval {
                check,
                ..base.clone()
            });
        }
    };
    for check in checks_of(series) {
        add(Some(check));
    }
    if let Some(url) = series.remote_url.clone().filter(|_| fetch) {
        debug_assert_eq!(url, project);
        add(None);
    }
    let mut json = serde_json::to_vec_pretty(&approvals)?;
    json.push(b'\n');
    crate::results::write_atomic(&path(dir), &json)
}

impl Approvals {
    fn allows_check(&self, project: &str, check: &str) -> bool {
        self.approved
            .iter()
            .any(|a| a.project == project && a.check.as_deref() == Some(check))
    }

    fn allows_fetch(&self, url: &str) -> bool {
        self.approved
            .iter()
            .any(|a| a.project == url && a.check.is_none())
    }
}

fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

fn load(data_dir: &Path) -> Result<Approvals> {
    let path = path(data_dir);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::Config {
            path,
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Approvals::default()),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Text from the database as a refusal quotes it: printable on a
/// terminal, and short.
fn quoted(text: &str) -> String {
    let text = arena_domain::terminal::printable(text);
    let mut out: String = text.chars().take(QUOTED_CHARS).collect();
    if text.chars().count() > QUOTED_CHARS {
        out.push('…');
    }
    out
}
