//! The verifier (issue 40): after a contestant's processes have ended,
//! its change — the patch Arena took and kept — is judged against the
//! task's hidden tests, never in the agent's tree:
//!
//! 1. the agent's edits to the files the test patch touches, to the test
//!    folders and to the test infrastructure are dropped
//!    ([`arena_domain::test_infra`]), and named in the result;
//! 2. what is left, then the test patch, is applied with Arena's apply
//!    rules to a fresh tree of the base (an overlay of the battle's base
//!    tree, applied inside the check's jail by Arena's own binary, as a
//!    check's change is — [`super::fresh`]; the two patches touch no file
//!    in common once the drop is done, so they apply in one pass);
//! 3. the task's test command, made to write a machine-readable report
//!    ([`arena_domain::test_report::report_command`]), runs in the check's
//!    jail with the task's environment, a fresh logs folder named by
//!    `$ARENA_VERIFIER_LOGS` (and reachable as `/logs/verifier` in a
//!    jail), within the task's time limit;
//! 4. the report is read from that folder without following a link,
//!    opening a FIFO or reading more than [`REPORT_BYTES`], and graded with
//!    the exit status ([`arena_domain::test_report::grade_report`]).
//!
//! A suite that never starts, a crash, or a timeout is an error of the
//! run, not a failure of the agent — unless the change caused it: when a
//! run with the agent's change ends in such an error, the test patch alone
//! is run on the base (once per base, command and test patch in a
//! process), and if the tests run and report there, the change stopped
//! them and the task is unresolved. An agent whose code ends the runner
//! before it reports, or hangs it, cannot turn a failure into an error,
//! which scores leave out.
//!
//! What this cannot catch: the code under test runs in the test process,
//! so a change that rewrites the runner's report from inside it, as a
//! plain file, and exits 0 is not told apart from a pass by the report
//! and the exit code alone (SWE-bench and Harbor have the same limit). The
//! change is in the battle's results for anyone to read.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use arena_domain::test_infra::{self, Dropped, Protected};
use arena_domain::test_report::{self, Ecosystem, Exit, Grade, TestLists};

use crate::agent::process::Launch;
use crate::battle::{Battle, Contestant};
use crate::error::{Error, Result};
use crate::results;

use super::launch::{self, Reach, Scratch};
use super::workspace::Workspace;
use super::Engine;

/// The environment variable naming the verifier's logs folder.
pub const LOGS_VAR: &str = "ARENA_VERIFIER_LOGS";

/// Where the logs folder is also found inside a jail (Harbor's path).
pub const LOGS_IN_JAIL: &str = "/logs/verifier";

/// The most of a report Arena reads.
pub const REPORT_BYTES: u64 = 16 * 1024 * 1024;

/// What the verifier needs of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyTask {
    /// The hidden tests, as a patch in `git diff` format over the base.
    pub test_patch: String,
    /// The tests that decide the task.
    pub lists: TestLists,
    /// The task's test command (`pytest`, `cargo test`, `go test ./...`).
    pub test_command: String,
    /// How long the tests may run.
    pub time_limit: Duration,
}

/// What the verifier found.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub grade: Grade,
    /// The agent's edits it left out, with why.
    pub dropped: Vec<Dropped>,
    /// The command it ran (the test command with its report flags).
    pub command: String,
    /// The last lines of the tests' output.
    pub output_tail: String,
    /// The tests' exit code, when they exited by themselves.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The whole verification, in seconds.
    pub seconds: f64,
    /// Of which the tests' run (from the jail's start to its end).
    pub test_seconds: f64,
}

impl Engine {
    /// Verifies contestant `c` of the (finished) Coding battle `battle`
    /// against `task` (see the module's notes). The change judged is the
    /// patch Arena kept of the contestant's latest round; none is an empty
    /// change. Fails (an error of Arena, not a grade) when the battle has no
    /// base, the contestant no worktree, or no tree can be made.
    pub async fn verify(
        &self,
        battle: &Battle,
        c: &Contestant,
        task: &VerifyTask,
    ) -> Result<Verification> {
        verify(self, battle, c, task, &CancellationToken::new()).await
    }
}

/// [`Engine::verify`], stopped by `token`.
pub(super) async fn verify(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    task: &VerifyTask,
    token: &CancellationToken,
) -> Result<Verification> {
    let started = Instant::now();
    let base = battle
        .base_commit
        .clone()
        .ok_or_else(|| Error::Task(format!("battle {} has no base commit", battle.id)))?;
    let worktree = c
        .worktree
        .clone()
        .ok_or_else(|| Error::Task(format!("contestant {} has no worktree", c.id)))?;
    let change = kept_patch(engine, c).await?;
    let protected = Protected::of(&task.test_patch, &task.lists);
    let split = test_infra::split(&change, &protected);
    if !split.dropped.is_empty() {
        tracing::info!(contestant = %c.id, dropped = split.dropped.len(), "the verifier dropped edits to the tests and their runner");
    }
    let mut patch = split.kept.clone();
    if !patch.is_empty() && !patch.ends_with('\n') {
        patch.push('\n');
    }
    patch.push_str(&task.test_patch);

    let tests: Vec<String> = task
        .lists
        .fail_to_pass
        .iter()
        .chain(&task.lists.pass_to_pass)
        .cloned()
        .collect();
    let plan = test_report::report_command(
        &task.test_command,
        Ecosystem::detect(&task.test_command),
        &tests,
        LOGS_VAR,
    );

    let at = Instant::now();
    let workspace = Workspace::of(engine, battle, (&worktree, &c.id), &base, token).await?;
    tracing::debug!(
        ms = at.elapsed().as_millis() as u64,
        "verifier: the workspace"
    );
    let (mut grade, run) = judge(
        engine,
        battle,
        c,
        &workspace,
        (&base, &patch),
        &plan,
        task,
        "verify",
        token,
    )
    .await?;
    // An error of the run that the change may have caused (its code ends
    // the runner, hangs it, or keeps it from reporting) is the change's
    // failure when the same tests run and report on the base: an agent
    // cannot turn a failure into an error, which scores leave out.
    if let test_report::Outcome::Error(why) = grade.outcome.clone() {
        if !split.kept.trim().is_empty()
            && base_reports(engine, battle, c, &workspace, &base, &plan, task, token).await?
        {
            grade = Grade {
                outcome: test_report::Outcome::Unresolved,
                reason: format!(
                    "with the change, {why}; with the test patch alone on the base the tests \
                     run and report, so the change is what stopped them"
                ),
                ..grade
            };
        }
    }
    Ok(Verification {
        grade,
        dropped: split.dropped,
        command: plan.command,
        output_tail: run.tail,
        exit_code: run.exit.and_then(|e| e.code),
        timed_out: run.exit.is_some_and(|e| e.timed_out),
        seconds: started.elapsed().as_secs_f64(),
        test_seconds: run.seconds,
    })
}

/// Runs the task's tests over `patch` (the kept change and the test patch)
/// applied to a fresh tree of `base`, and grades what they report; the
/// tree is removed after. `suffix` names the tree (`verify`, `verify-base`).
#[allow(clippy::too_many_arguments)]
async fn judge(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    workspace: &Workspace,
    (base, patch): (&str, &str),
    plan: &test_report::ReportPlan,
    task: &VerifyTask,
    suffix: &str,
    token: &CancellationToken,
) -> Result<(Grade, TestRun)> {
    let (base, patch) = (base.to_string(), patch.to_string());
    let root = engine.data_dir().join("worktrees").join(&battle.id);
    let name = format!(
        "{}-{}-{suffix}",
        crate::battle::short_id(&battle.id),
        results::contestant_dir(c)
    );
    let logs_root = Scratch::create(
        &engine
            .data_dir()
            .join("agents")
            .join(format!("{}-{suffix}-logs", c.id)),
    )?;
    let logs = logs_root.path().join("verifier");
    std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;

    let (tree, run) = if super::fresh::overlays_here(engine) {
        let at = Instant::now();
        let lower = super::fresh::base_tree(engine, battle, &root, &base).await?;
        tracing::debug!(
            ms = at.elapsed().as_millis() as u64,
            "verifier: the base tree"
        );
        let path = root.join(&name);
        let made = tokio::task::spawn_blocking({
            let path = path.clone();
            move || {
                crate::agent::environment::remove(&path);
                std::fs::create_dir_all(&path)
            }
        })
        .await?;
        made.map_err(|e| Error::io(&path, e))?;
        let fresh = workspace.over(&path, &lower, &patch);
        let run = run_tests(engine, c, &plan.command, &fresh, &logs, task, token).await;
        (path, run)
    } else {
        let (source, root2, name2, base2, patch2) = (
            battle.objects_source().to_path_buf(),
            root.clone(),
            name.clone(),
            base.clone(),
            patch.clone(),
        );
        let made = tokio::task::spawn_blocking(move || {
            super::fresh::fresh_tree(&source, &root2, &name2, &base2, &patch2)
        })
        .await?
        .map_err(|e| Error::Git(format!("making a fresh tree of the base: {e}")))?;
        let (path, applied) = made;
        let run = match applied {
            Ok(()) => {
                let fresh = workspace.at(&path);
                run_tests(engine, c, &plan.command, &fresh, &logs, task, token).await
            }
            Err(reason) => Ok(TestRun::not_applied(reason)),
        };
        (path, run)
    };
    let run = run?;

    let report = match &run.exit {
        Some(_) => {
            let file = logs.join(&plan.report_file);
            tokio::task::spawn_blocking(move || read_report(&file, REPORT_BYTES)).await?
        }
        None => None,
    };
    let grade = match (&run.exit, &run.not_applied) {
        (_, Some(reason)) => Grade {
            outcome: test_report::Outcome::Unresolved,
            reason: format!(
                "the change and the test patch do not apply to a fresh tree of the base: {reason}"
            ),
            fail_to_pass_passed: 0,
            fail_to_pass_total: task.lists.fail_to_pass.len(),
            missing: Vec::new(),
            failed: task.lists.fail_to_pass.clone(),
        },
        (Some(exit), None) => {
            let root = tree.to_string_lossy().into_owned();
            let text = report.as_ref().and_then(|r| r.as_ref().ok());
            let grade = test_report::grade_report(
                &task.lists,
                plan.format,
                text.map(String::as_str),
                Some(&root),
                *exit,
            );
            match (&report, grade.outcome.clone()) {
                // A report that is there but is not a plain file, or too
                // big: the run's error, said.
                (Some(Err(why)), test_report::Outcome::Error(_)) => Grade {
                    outcome: test_report::Outcome::Error(why.clone()),
                    reason: why.clone(),
                    ..grade
                },
                _ => grade,
            }
        }
        (None, None) => Grade {
            outcome: test_report::Outcome::Error(run.tail.clone()),
            reason: run.tail.clone(),
            fail_to_pass_passed: 0,
            fail_to_pass_total: task.lists.fail_to_pass.len(),
            missing: Vec::new(),
            failed: Vec::new(),
        },
    };
    let gone = tree.clone();
    tokio::task::spawn_blocking(move || crate::agent::environment::remove(&gone)).await?;
    Ok((grade, run))
}

/// Whether the task's tests run and report on the base with the test patch
/// alone (graded anything but an error); asked once per sealed source,
/// base, command and test patch in a process.
#[allow(clippy::too_many_arguments)]
async fn base_reports(
    engine: &Engine,
    battle: &Battle,
    c: &Contestant,
    workspace: &Workspace,
    base: &str,
    plan: &test_report::ReportPlan,
    task: &VerifyTask,
    token: &CancellationToken,
) -> Result<bool> {
    use std::hash::{Hash, Hasher};
    static KNOWN: std::sync::Mutex<Vec<(u64, bool)>> = std::sync::Mutex::new(Vec::new());
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        battle.objects_source(),
        base,
        &plan.command,
        &task.test_patch,
        task.time_limit,
    )
        .hash(&mut hasher);
    let key = hasher.finish();
    let known = |k: u64| {
        KNOWN
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(x, _)| *x == k)
            .map(|(_, v)| *v)
    };
    if let Some(answer) = known(key) {
        return Ok(answer);
    }
    let (grade, _) = judge(
        engine,
        battle,
        c,
        workspace,
        (base, &task.test_patch),
        plan,
        task,
        "verify-base",
        token,
    )
    .await?;
    let reports = !matches!(grade.outcome, test_report::Outcome::Error(_));
    tracing::info!(reports, "the verifier ran the tests on the base");
    KNOWN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((key, reports));
    Ok(reports)
}

/// The patch Arena kept of the contestant's latest round (empty: none).
async fn kept_patch(engine: &Engine, c: &Contestant) -> Result<String> {
    let id = c.id.clone();
    let patch = engine
        .db(move |s| {
            let round = s.rounds(&id)?.iter().map(|r| r.number).max().unwrap_or(1);
            s.patch(&id, round)
        })
        .await?;
    Ok(patch.unwrap_or_default())
}

/// How the tests' run went.
struct TestRun {
    /// Its exit; `None` when it could not start (the tail says why).
    exit: Option<Exit>,
    tail: String,
    seconds: f64,
    /// The change and the test patch did not apply (why).
    not_applied: Option<String>,
}

impl TestRun {
    fn not_applied(reason: String) -> TestRun {
        TestRun {
            exit: Some(Exit {
                code: Some(crate::agent::apply::APPLY_FAILED),
                timed_out: false,
                signal: None,
            }),
            tail: reason.clone(),
            seconds: 0.0,
            not_applied: Some(reason),
        }
    }
}

/// Runs `command` in the check's jail over `workspace` (its patch applied
/// first inside the jail when it is an overlay), with `logs` writable and
/// named by [`LOGS_VAR`] (and linked at [`LOGS_IN_JAIL`] in a jail).
async fn run_tests(
    engine: &Engine,
    c: &Contestant,
    command: &str,
    workspace: &Workspace,
    logs: &Path,
    task: &VerifyTask,
    token: &CancellationToken,
) -> Result<TestRun> {
    let path = workspace.path.as_path();
    let scratch = Scratch::create(
        &engine
            .data_dir()
            .join("agents")
            .join(format!("{}-verify", c.id)),
    )?;
    let (env, sandbox, program, args) = test_jail(engine, &scratch, command, workspace, logs)?;
    let launch = Launch {
        program,
        args,
        cwd: path.to_path_buf(),
        env,
        timeout: task.time_limit,
        sandbox,
        bounds: launch::bounds(engine),
        door: None,
        registries: None,
    };
    let started = Instant::now();
    let (exit, mut tail) = launch::run_keeping_tail(&launch, token, 40, "verifier").await;
    let seconds = started.elapsed().as_secs_f64();
    if let Some(limit) = exit.as_ref().ok().and_then(|e| e.limit.as_ref()) {
        tail.push_str(&format!("\n[Arena: the tests {limit}]\n"));
    }
    drop(scratch);
    match exit {
        Err(e) => Ok(TestRun {
            exit: None,
            tail: format!("the tests could not start: {e}"),
            seconds,
            not_applied: None,
        }),
        Ok(exit) if exit.cancelled => Err(Error::Cancelled),
        Ok(exit)
            if workspace.over.is_some()
                && exit.code == Some(crate::agent::apply::APPLY_FAILED)
                && tail.contains("could not be applied") =>
        {
            Ok(TestRun::not_applied(tail.trim().to_string()))
        }
        Ok(exit) => Ok(TestRun {
            exit: Some(Exit {
                code: exit.code,
                timed_out: exit.timed_out,
                // A limit of `[limits]` that stopped it (memory, processes,
                // a file's size) is a crash of the run: it was killed.
                signal: exit.signal.or(exit.limit.as_ref().map(|_| libc::SIGKILL)),
            }),
            tail,
            seconds,
            not_applied: None,
        }),
    }
}

/// Reads the report at `file`, written by a jailed run: `None` when there
/// is none; an error (the run's) when it is a link, a FIFO or anything but
/// a plain file, or longer than `limit`. Never follows a link, never
/// blocks on a FIFO.
pub(super) fn read_report(file: &Path, limit: u64) -> Option<std::result::Result<String, String>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let meta = match std::fs::symlink_metadata(file) {
        Err(_) => return None,
        Ok(m) => m,
    };
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !meta.file_type().is_file() {
        return Some(Err(format!(
            "the test report {name} is not a plain file (a link, a FIFO or a folder); it is not read"
        )));
    }
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file);
    let f = match opened {
        Ok(f) => f,
        Err(e) => return Some(Err(format!("the test report {name} cannot be opened: {e}"))),
    };
    match f.metadata() {
        Ok(m) if !m.is_file() => {
            return Some(Err(format!("the test report {name} is not a plain file")));
        }
        Ok(m) if m.len() > limit => {
            return Some(Err(format!(
                "the test report {name} is over {limit} bytes; it is not read"
            )));
        }
        Ok(_) => {}
        Err(e) => return Some(Err(format!("the test report {name}: {e}"))),
    }
    let mut bytes = Vec::new();
    if let Err(e) = f.take(limit + 1).read_to_end(&mut bytes) {
        return Some(Err(format!("the test report {name} cannot be read: {e}")));
    }
    if bytes.len() as u64 > limit {
        return Some(Err(format!(
            "the test report {name} is over {limit} bytes; it is not read"
        )));
    }
    Some(Ok(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The jail, environment and command line of a test run over `workspace`
/// (the verifier's, mining's validation): the check's jail (the programs
/// the command names bring their installations, your toolchains, no
/// network) with `logs` writable, bound at [`LOGS_IN_JAIL`] and named by
/// [`LOGS_VAR`].
pub(super) fn test_jail(
    engine: &Engine,
    scratch: &Scratch,
    command: &str,
    workspace: &Workspace,
    logs: &Path,
) -> Result<TestJail> {
    let programs = super::check::programs(command);
    let reach = Reach {
        programs: &programs,
        toolchains: true,
        ..workspace.offline()
    };
    let confined = launch::agent_sandbox(engine, scratch.path(), reach)?;
    let (mut env, sandbox) = match confined {
        Some(mut c) => {
            c.sandbox.write.push(logs.to_path_buf());
            if c.sandbox.enforcement == crate::agent::sandbox::Enforcement::Jail {
                c.sandbox
                    .links
                    .push((PathBuf::from(LOGS_IN_JAIL), logs.to_path_buf()));
            }
            (c.env, Some(c.sandbox))
        }
        None => (Vec::new(), None),
    };
    env.push((LOGS_VAR.to_string(), logs.to_string_lossy().into_owned()));
    let tmp = scratch.path().join("tmp");
    let (program, args) = workspace
        .command_line(scratch.path(), command)
        .map_err(|e| Error::io(&tmp, e))?;
    Ok((env, sandbox, program, args))
}

/// What [`test_jail`] gives: the environment, the jail, the program and
/// its arguments.
pub(super) type TestJail = (
    Vec<(String, String)>,
    Option<crate::agent::sandbox::Sandbox>,
    PathBuf,
    Vec<String>,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_read_only_when_it_is_a_plain_file_within_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("report.xml");
        std::fs::write(&plain, "<testsuite/>").unwrap();
        assert_eq!(read_report(&plain, 100), Some(Ok("<testsuite/>".into())));
        assert_eq!(read_report(&dir.path().join("none.xml"), 100), None);
        let big = read_report(&plain, 4).unwrap().unwrap_err();
        assert!(big.contains("over 4 bytes"), "{big}");
        let link = dir.path().join("link.xml");
        std::os::unix::fs::symlink(&plain, &link).unwrap();
        let refused = read_report(&link, 100).unwrap().unwrap_err();
        assert!(refused.contains("not a plain file"), "{refused}");
        let fifo = dir.path().join("fifo.xml");
        let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let refused = read_report(&fifo, 100).unwrap().unwrap_err();
        assert!(refused.contains("not a plain file"), "{refused}");
    }
}
