//! The battle's check command, run in a finished worktree in the sandbox
//! of an agent that builds and tests.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::agent::process::Launch;
use crate::battle::{CheckResult, Contestant};

use super::launch::{self, Reach, Scratch};
use super::workspace::Workspace;
use super::Engine;

/// A check that says it could not run (exit 126/127, the shell's "not
/// found") is believed only when its program is missing where the check
/// runs on the base too (the dry run of [`Engine::probe_check`]): the
/// contestant's change cannot decide that. Otherwise it is the change's
/// failure (a change that prints "pytest: not found" and exits 127 gains
/// nothing), and the tail says why.
pub(super) async fn confirm_could_not_run(
    engine: &Engine,
    project: &std::path::Path,
    mut check: CheckResult,
) -> CheckResult {
    if check.could_not_run.is_none() {
        return check;
    }
    let missing = match engine.probe_check(project, &check.command).await {
        Ok(probe) => probe.warning.is_some(),
        Err(e) => {
            tracing::warn!(error = %e, "the check's dry run failed: its exit counts as a failure");
            false
        }
    };
    if !missing {
        check.could_not_run = None;
        check.output_tail.push_str(
            "\n[Arena: its program is there where the check runs on the base, so this exit is the change's failure]\n",
        );
    }
    check
}

/// Runs the battle's check command in a finished worktree, in the sandbox
/// of an agent that builds and tests: it may change the worktree and read
/// your toolchains, and connect nowhere. A check that cannot be sandboxed
/// fails with the reason.
pub(super) async fn run_check(
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
        ..Default::default()
    };
    let scratch_path = engine
        .data_dir()
        .join("agents")
        .join(format!("{}-check", c.id));
    let programs = programs(command);
    let confined = Scratch::create(&scratch_path).and_then(|scratch| {
        let reach = Reach {
            programs: &programs,
            toolchains: true,
            ..workspace.offline()
        };
        Ok((
            launch::agent_sandbox(engine, scratch.path(), reach)?,
            scratch,
        ))
    });
    let (confined, _scratch) = match confined {
        Ok(c) => c,
        Err(e) => return failed(format!("the check could not be sandboxed: {e}")),
    };
    let (env, sandbox) = match confined {
        Some(c) => (c.env, Some(c.sandbox)),
        None => (Vec::new(), None),
    };
    // On an overlay of the base tree: Arena's own binary applies the
    // change there, inside the jail, then becomes the check.
    let (program, args) = match workspace.command_line(_scratch.path(), command) {
        Ok(line) => line,
        Err(e) => {
            return failed(format!(
                "the change could not be written for the check: {e}"
            ))
        }
    };
    let launch = Launch {
        program,
        args,
        cwd: path.to_path_buf(),
        env,
        timeout: Duration::from_secs(engine.config().limits.check_timeout_secs),
        sandbox,
        bounds: launch::bounds(engine),
        door: None,
        registries: None,
    };
    let started = Instant::now();
    let (exit, mut tail) = launch::run_keeping_tail(&launch, token, 40, "check").await;
    // A limit of `[limits]` it reached stopped it: the tail says which.
    if let Some(limit) = exit.as_ref().ok().and_then(|e| e.limit.as_ref()) {
        tail.push_str(&format!("\n[Arena: the check {limit}]\n"));
    }
    let duration_ms = started.elapsed().as_millis() as u64;
    match exit {
        Ok(exit) => {
            // A missing program (127), one that cannot be executed (126),
            // the shell's "not found" for the first word: the check never
            // ran, so it says nothing of the change.
            let could_not_run = (!exit.timed_out && exit.limit.is_none())
                .then(|| crate::check_outcome::could_not_run(command, exit.code, &tail))
                .flatten();
            if let Some(reason) = &could_not_run {
                tracing::warn!(contestant = %c.id, %reason, "the check could not run");
            }
            CheckResult {
                command: command.to_string(),
                exit_code: exit.code,
                passed: exit.success(),
                timed_out: exit.timed_out,
                duration_ms,
                output_tail: tail,
                could_not_run,
                ..Default::default()
            }
        }
        Err(e) => CheckResult {
            duration_ms,
            ..failed(e.to_string())
        },
    }
}

/// The programs a check command names, found on this machine: they bring
/// their installations into the check's jail (`npm` under nvm,
/// `.venv/bin/python`, a tool given by its path).
pub(super) fn programs(command: &str) -> Vec<PathBuf> {
    command
        .split(|c: char| c.is_whitespace() || ";&|()`".contains(c))
        .map(|word| word.trim_matches(['"', '\'']))
        .filter(|word| !word.is_empty() && !word.starts_with('-') && !word.contains('='))
        .filter_map(crate::backend::locate)
        .collect()
}
