//! Before a Coding battle: a dry run of its check's first word in the
//! check's own jail, with the check's environment (the project's
//! environment folders, your toolchains, the programs it names), so a
//! check that will not be able to run (`pytest` missing, a `.venv` that is
//! not there) is said before Start — a warning, never a refusal.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::agent::environment;
use crate::agent::process::Launch;
use crate::error::Result;

use super::launch::{self, Env, Reach, Scratch};
use super::Engine;

/// What the dry run found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckProbe {
    /// The check's first word (the program it runs first).
    pub program: Option<String>,
    /// Why the check will not be able to run; `None` when its program was
    /// found, or when it could not be told (a word the shell expands).
    pub warning: Option<String>,
}

/// The shell's test for a program: a path must be an executable file, a
/// name must be found by `command -v` (a builtin counts).
const PROBE: &str =
    r#"case "$1" in */*) [ -f "$1" ] && [ -x "$1" ] ;; *) command -v "$1" >/dev/null ;; esac"#;

impl Engine {
    /// Dry-runs `command`'s first word where the check of a battle in
    /// `project` will run: in the check's jail, the project's environment
    /// folders and your toolchains in it, at the project's path (read only).
    pub async fn probe_check(&self, project: &Path, command: &str) -> Result<CheckProbe> {
        let project = super::validate::project_folder(project)?;
        let Some(word) = crate::check_outcome::first_word(command).map(str::to_string) else {
            return Ok(CheckProbe {
                program: None,
                warning: None,
            });
        };
        if word.contains(['$', '`', '*', '?', '~', '{']) {
            return Ok(CheckProbe {
                program: Some(word),
                warning: None,
            });
        }
        let listed = self.config().coding.environment.clone();
        let found = tokio::task::spawn_blocking({
            let root = project.clone();
            move || environment::find(&root, &listed)
        })
        .await?;
        let programs = super::check::programs(command);
        let scratch = Scratch::create(
            &self
                .data_dir()
                .join("agents")
                .join(format!("probe-{}", uuid::Uuid::new_v4().simple())),
        )?;
        let reach = Reach {
            programs: &programs,
            workspace: &project,
            writable: false,
            objects: &[],
            connect: Some(Vec::new()),
            door: None,
            own_config: &[],
            toolchains: true,
            environment: Some(Env {
                folders: &found,
                project: &project,
                layers: None,
                over: None,
                at_project: true,
                caches: &[],
            }),
        };
        let confined = launch::agent_sandbox(self, scratch.path(), reach)?;
        let (env, sandbox) = match confined {
            Some(c) => (c.env, Some(c.sandbox)),
            None => (Vec::new(), None),
        };
        let probe = Launch {
            program: "sh".into(),
            args: vec!["-c".into(), PROBE.into(), "probe".into(), word.clone()],
            cwd: project.clone(),
            env,
            timeout: Duration::from_secs(20),
            sandbox,
            bounds: launch::bounds(self),
            door: None,
            registries: None,
        };
        let (exit, tail) =
            launch::run_keeping_tail(&probe, &CancellationToken::new(), 5, "check probe").await;
        let warning = match exit {
            Ok(exit) if exit.success() => None,
            Ok(exit) if exit.code == Some(1) || exit.code == Some(127) => Some(format!(
                "`{word}` is not found where the check runs (its jail, with the project's environment){}: the check `{command}` will not be able to run, and would count for no contestant",
                if word.contains('/') {
                    " — no executable file at that path"
                } else {
                    " — not on the check's PATH"
                }
            )),
            Ok(exit) => {
                tracing::debug!(code = ?exit.code, %tail, "the check probe could not tell");
                None
            }
            Err(e) => {
                tracing::debug!(error = %e, "the check probe could not run");
                None
            }
        };
        drop(scratch);
        Ok(CheckProbe {
            program: Some(word),
            warning,
        })
    }
}
