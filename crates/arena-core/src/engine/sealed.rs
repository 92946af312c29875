//! Battles whose git objects come from a sealed repository
//! ([`crate::agent::seal`]): only the objects reachable from the base
//! commit are in any jail's reach (the worktrees' alternates, the check's
//! base tree, the readers), while the environment still comes from the
//! user's project. A task pack's battles are made this way, so a task's
//! future (its fix, its hidden tests, later commits, other branches) is not
//! there to be found.

use std::path::{Path, PathBuf};

use crate::battle::{Battle, BattleRequest};
use crate::error::{Error, Result};

use super::{validate, Engine};

impl Engine {
    /// The sealed repository of commit `base` of `project`:
    /// `<data dir>/sealed/<full commit id>`, made once and reused (a commit
    /// id names its whole history, so every project holding it shares it).
    pub async fn seal_base(&self, project: &Path, base: &str) -> Result<PathBuf> {
        let (project, base) = (project.to_path_buf(), base.to_string());
        let root = self.data_dir().join("sealed");
        let sealed = tokio::task::spawn_blocking(move || {
            let commit = crate::agent::seal::resolve(&project, &base)?;
            crate::agent::seal::seal(&project, &commit, &root.join(&commit))
        })
        .await?
        .map_err(|e| Error::Git(format!("sealing the base: {e}")))?;
        if !sealed.reused {
            tracing::info!(base = %sealed.base, "sealed a base commit");
        }
        Ok(sealed.path)
    }

    /// Checks and records a Coding battle that starts from `base` (any
    /// revision of the project) and takes its git objects from that
    /// commit's sealed repository ([`Engine::seal_base`]) instead of the
    /// project's store; it is recorded on the battle
    /// ([`Battle::source`]), so a resumed battle is sealed too.
    pub async fn create_sealed_battle(&self, request: BattleRequest, base: &str) -> Result<Battle> {
        let project = request.project.clone();
        let mut plan = validate::check(self, request).await?;
        if plan.base_commit().is_none() {
            return Err(Error::Task(
                "only a Coding battle takes its objects from a sealed base".into(),
            ));
        }
        let sealed = self.seal_base(&project, base).await?;
        let commit = crate::agent::seal::sealed_base(&sealed)
            .ok_or_else(|| Error::Git(format!("{} is not sealed", sealed.display())))?;
        plan.start_from(&commit);
        plan.take_objects_from(&sealed);
        validate::record(self, &plan, None).await
    }
}
