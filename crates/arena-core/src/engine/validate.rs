//! Checking a battle request and recording it — all or nothing.

use std::collections::HashSet;

use crate::backend;
use crate::battle::{
    Battle, BattleRequest, BattleStatus, BattleType, Contestant, ContestantStatus, RunSpec,
};
use crate::error::{Error, Invalid, Result};
use crate::results;
use crate::store::{NewBattle, NewContestant};

use super::Engine;

/// One contestant after validation: canonical identity, resolved model.
struct Checked {
    identity: String,
    model: String,
    provider: String,
    lane: crate::battle::Lane,
    run: RunSpec,
}

pub(super) async fn create(engine: &Engine, request: BattleRequest) -> Result<Battle> {
    let BattleRequest {
        battle_type,
        project,
        prompt,
        contestants,
        check_command,
    } = request;
    let check_command = check_command
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty());

    // Cheap checks first; nothing touches the network or disk until they pass.
    if prompt.trim().is_empty() {
        return Err(Invalid::EmptyPrompt.into());
    }
    if !(2..=6).contains(&contestants.len()) {
        return Err(Invalid::ContestantCount(contestants.len()).into());
    }
    if !project.is_dir() {
        return Err(Invalid::ProjectMissing(project).into());
    }
    let project = project.canonicalize().map_err(|e| Error::io(&project, e))?;

    // Identities: personas for Q&A, installed backends for Coding.
    let mut identities = Vec::with_capacity(contestants.len());
    match battle_type {
        BattleType::Qa => {
            let registry = engine.personas()?;
            for c in &contestants {
                let persona =
                    registry
                        .find(&c.identity)
                        .ok_or_else(|| Invalid::UnknownPersona {
                            name: c.identity.clone(),
                            known: registry.names().join(", "),
                            registry: registry.path.display().to_string(),
                        })?;
                identities.push((
                    persona.name.clone(),
                    RunSpec {
                        system_prompt: Some(persona.system_prompt.clone()),
                        temperature: persona.temperature,
                        top_p: persona.top_p,
                        max_tokens: persona.max_tokens,
                    },
                ));
            }
        }
        BattleType::Coding => {
            for c in &contestants {
                let info = backend::find(&c.identity).ok_or_else(|| Invalid::UnknownBackend {
                    name: c.identity.clone(),
                    known: backend::names().join(", "),
                })?;
                if let Some(program) = info.program {
                    if backend::which(program).is_none() {
                        return Err(Invalid::BackendNotInstalled {
                            name: info.name.to_string(),
                            program: program.to_string(),
                        }
                        .into());
                    }
                }
                identities.push((info.name.to_string(), RunSpec::default()));
            }
            let repo = project.clone();
            let is_repo = tokio::task::spawn_blocking(move || {
                git2::Repository::discover(&repo)
                    .map(|r| !r.is_bare())
                    .unwrap_or(false)
            })
            .await?;
            if !is_repo {
                return Err(Invalid::NotAGitRepository(project).into());
            }
        }
    }

    // Models: ask the providers, then resolve each contestant's model.
    let catalog = engine.catalog().await;
    let mut checked = Vec::with_capacity(contestants.len());
    let mut seen = HashSet::new();
    for (spec, (identity, run)) in contestants.iter().zip(identities) {
        let resolved = catalog.resolve(&spec.model)?;
        let key = (
            identity.to_lowercase(),
            resolved.provider.clone(),
            resolved.model.clone(),
        );
        if !seen.insert(key) {
            return Err(Invalid::DuplicateContestant {
                identity: spec.identity.clone(),
                model: spec.model.clone(),
            }
            .into());
        }
        checked.push(Checked {
            identity,
            model: resolved.model,
            provider: resolved.provider,
            lane: resolved.lane,
            run,
        });
    }

    if battle_type == BattleType::Coding {
        return Err(Error::Unsupported(
            "running Coding battles (worktrees and agents arrive in a later release)".into(),
        ));
    }

    let id = uuid::Uuid::now_v7().to_string();
    let created_at = engine.now();
    let results_path = results::battle_dir(&project, &id, battle_type, &prompt, created_at)?;
    let new = NewBattle {
        id: id.clone(),
        battle_type,
        prompt,
        project: project.clone(),
        results_path: results_path.clone(),
        created_at,
        contestants: checked
            .into_iter()
            .map(|c| NewContestant {
                id: uuid::Uuid::now_v7().to_string(),
                identity: c.identity,
                model: c.model,
                provider: c.provider,
                lane: c.lane,
                run: c.run,
            })
            .collect(),
        base_commit: None,
        check_command,
    };
    let battle = in_memory(&new);

    // Disk first, then the database; undo the folder if the insert fails.
    let results_root = project.join(results::RESULTS_DIR);
    let root_existed = results_root.exists();
    let written =
        results::write_manifest(&battle).and_then(|_| results::ensure_gitignored(&project));
    let inserted = match written {
        Ok(()) => {
            engine
                .db(move |s| s.transact(|tx| tx.insert_battle(&new)))
                .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = inserted {
        let _ = std::fs::remove_dir_all(&results_path);
        if !root_existed {
            let _ = std::fs::remove_dir(&results_root);
        }
        return Err(e);
    }
    tracing::info!(battle = %id, contestants = battle.contestants.len(), "battle created");
    engine.battle(&id).await
}

fn in_memory(b: &NewBattle) -> Battle {
    Battle {
        id: b.id.clone(),
        battle_type: b.battle_type,
        status: BattleStatus::Running,
        prompt: b.prompt.clone(),
        project: b.project.clone(),
        results_path: b.results_path.clone(),
        created_at: b.created_at,
        finished_at: None,
        winner: None,
        base_commit: b.base_commit.clone(),
        check_command: b.check_command.clone(),
        contestants: b
            .contestants
            .iter()
            .enumerate()
            .map(|(i, c)| Contestant {
                id: c.id.clone(),
                battle_id: b.id.clone(),
                position: i as u32,
                identity: c.identity.clone(),
                model: c.model.clone(),
                provider: c.provider.clone(),
                lane: c.lane,
                status: ContestantStatus::Queued,
                error: None,
                attempts: 0,
                started_at: None,
                finished_at: None,
                benchmark: Default::default(),
                output: None,
                reasoning: None,
                truncated: false,
                result_path: None,
                run: c.run.clone(),
                worktree: None,
                diff: None,
                check: None,
            })
            .collect(),
    }
}
