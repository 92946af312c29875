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
#[derive(Debug, Clone)]
pub(super) struct Checked {
    identity: String,
    model: String,
    provider: String,
    lane: crate::battle::Lane,
    run: RunSpec,
}

/// A battle request that passed every check: what [`record`] writes.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub battle_type: BattleType,
    pub project: std::path::PathBuf,
    pub prompt: String,
    contestants: Vec<Checked>,
    base_commit: Option<String>,
    pub check_command: Option<String>,
    pub blind: bool,
    pub tags: Vec<String>,
    /// Coding: a sealed repository its git objects come from instead of
    /// the project's ([`Plan::take_objects_from`]).
    source: Option<std::path::PathBuf>,
}

impl Plan {
    /// The commit a Coding battle starts from.
    pub fn base_commit(&self) -> Option<&str> {
        self.base_commit.as_deref()
    }

    /// Starts the battle from `commit` (a series' base) instead of the
    /// project's HEAD.
    pub fn start_from(&mut self, commit: &str) {
        if self.base_commit.is_some() {
            self.base_commit = Some(commit.to_string());
        }
    }

    /// Takes the battle's git objects (its worktrees', base tree's and
    /// readers') from `sealed`, a repository [`crate::agent::seal::seal`]
    /// made of the base commit, instead of the project's store: nothing
    /// beyond the base is in a jail's reach. Start from that commit too
    /// ([`Plan::start_from`]). A Q&A plan is left as it is.
    pub fn take_objects_from(&mut self, sealed: &std::path::Path) {
        if self.base_commit.is_some() {
            self.source = Some(sealed.to_path_buf());
        }
    }

    /// Each contestant's `(provider, model)` (the provider is empty for a
    /// CLI agent's own model).
    pub fn models(&self) -> impl Iterator<Item = (&str, &str)> {
        self.contestants
            .iter()
            .map(|c| (c.provider.as_str(), c.model.as_str()))
    }
}

/// Checks a request and records it: nothing is created when a check fails.
pub(super) async fn create(engine: &Engine, request: BattleRequest) -> Result<Battle> {
    let plan = check(engine, request).await?;
    record(engine, &plan, None).await
}

/// Every check of a battle request, cheap ones first; touches nothing.
pub(super) async fn check(engine: &Engine, request: BattleRequest) -> Result<Plan> {
    let BattleRequest {
        battle_type,
        project,
        prompt,
        contestants,
        check_command,
        blind,
        tags,
    } = request;
    let tags = crate::blind::tags(&tags)?;
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
    let project = project_folder(&project)?;

    // Identities: personas for Q&A, installed backends for Coding.
    let mut identities = Vec::with_capacity(contestants.len());
    let mut base_commit: Option<String> = None;
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
            // Every Coding contestant is an agent, and agents run sandboxed.
            if let Err(why) = engine.sandbox_ready() {
                return Err(Invalid::Other(why).into());
            }
            let custom = &engine.config().backends;
            for c in &contestants {
                let (name, program) = match crate::backend::find(&c.identity) {
                    Some(info) => (info.name.to_string(), info.program.map(str::to_string)),
                    None => match custom.iter().find(|b| b.name == c.identity) {
                        Some(b) => (b.name.clone(), b.command.first().cloned()),
                        None => {
                            let mut known = backend::names().join(", ");
                            for b in custom {
                                known.push_str(", ");
                                known.push_str(&b.name);
                            }
                            return Err(Invalid::UnknownBackend {
                                name: c.identity.clone(),
                                known,
                            }
                            .into());
                        }
                    },
                };
                if let Some(program) = program {
                    let found = backend::locate(&program).is_some();
                    if !found {
                        return Err(Invalid::BackendNotInstalled { name, program }.into());
                    }
                }
                identities.push((name, RunSpec::default()));
            }
            base_commit = Some(git_base(&project).await?);
        }
    }

    // Models: ask the providers, then resolve each contestant's model.
    let catalog = engine.catalog().await;
    let mut checked = Vec::with_capacity(contestants.len());
    let mut seen = HashSet::new();
    for (spec, (identity, run)) in contestants.iter().zip(identities) {
        let resolved = match catalog.resolve(&spec.model) {
            Ok(r) => r,
            // A CLI agent may use a model from its own configuration.
            Err(_)
                if battle_type.takes_agents()
                    && backend::Agent::parse(&identity).is_none_or(backend::Agent::is_cli) =>
            {
                crate::catalog::Resolved {
                    provider: String::new(),
                    model: spec.model.clone(),
                    lane: crate::battle::Lane::Cloud,
                }
            }
            Err(e) => return Err(e.into()),
        };
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

    Ok(Plan {
        battle_type,
        project,
        prompt,
        contestants: checked,
        base_commit,
        check_command,
        blind,
        tags,
        source: None,
    })
}

/// Writes a checked battle: its results folder and manifest, then its
/// rows (a series' battle with its place in the series); the folder is
/// removed again if the rows cannot be written.
pub(super) async fn record(
    engine: &Engine,
    plan: &Plan,
    series: Option<(String, u64)>,
) -> Result<Battle> {
    let Plan {
        battle_type,
        project,
        prompt,
        ..
    } = plan;
    let (battle_type, project) = (*battle_type, project.clone());
    let id = uuid::Uuid::now_v7().to_string();
    let created_at = engine.now();
    let results_path = results::battle_dir(&project, &id, battle_type, prompt, created_at)?;
    // A blind battle's letters, shuffled per battle: position i shows as labels[i].
    let labels = plan
        .blind
        .then(|| crate::blind::shuffled_labels(plan.contestants.len(), &mut rand::thread_rng()));
    let new = NewBattle {
        id: id.clone(),
        battle_type,
        prompt: prompt.clone(),
        project: project.clone(),
        results_path: results_path.clone(),
        created_at,
        contestants: plan
            .contestants
            .iter()
            .enumerate()
            .map(|(i, c)| NewContestant {
                label: labels.as_ref().map(|l| l[i].clone()),
                id: contestant_id(plan.blind),
                identity: c.identity.clone(),
                model: c.model.clone(),
                provider: c.provider.clone(),
                lane: c.lane,
                run: c.run.clone(),
            })
            .collect(),
        base_commit: plan.base_commit.clone(),
        check_command: plan.check_command.clone(),
        series,
        blind: plan.blind,
        tags: plan.tags.clone(),
        machine: Some(engine.machine().to_string()),
        user_name: engine.user().map(str::to_string),
    };
    let battle = in_memory(&new);

    // Disk first, then the database; undo the folder if the insert fails.
    let results_root = project.join(results::RESULTS_DIR);
    let (root_existed, written) = {
        let (battle, project, root) = (battle.clone(), project.clone(), results_root.clone());
        tokio::task::spawn_blocking(move || {
            let root_existed = root.exists();
            // Its manifest is written when it ends (and again as its
            // verdict changes): written now too, it would be a file
            // written twice per battle for a folder nobody reads yet.
            let dir = &battle.results_path;
            let written = std::fs::create_dir_all(dir)
                .map_err(|e| crate::error::Error::io(dir, e))
                .and_then(|()| results::ensure_excluded(&project));
            (root_existed, written)
        })
        .await?
    };
    let source = plan.source.clone();
    let inserted = match written {
        Ok(()) => {
            engine
                .db(move |s| {
                    s.transact(|tx| {
                        tx.insert_battle(&new)?;
                        match &source {
                            Some(sealed) => tx.set_battle_source(&new.id, sealed),
                            None => Ok(()),
                        }
                    })
                })
                .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = inserted {
        // Undone off the async threads; what cannot be removed stays.
        let _ = tokio::task::spawn_blocking(move || {
            let _ = std::fs::remove_dir_all(&results_path);
            if !root_existed {
                let _ = std::fs::remove_dir(&results_root);
            }
        })
        .await;
        return Err(e);
    }
    tracing::info!(battle = %id, contestants = battle.contestants.len(), "battle created");
    engine.battle(&id).await
}

/// A battle's project folder, as given: a full path to a folder that
/// exists, made canonical. A relative path is refused rather than read
/// against whatever folder the process happens to run in (a front end
/// that takes relative paths, as the CLI does, makes them full first).
pub(super) fn project_folder(project: &std::path::Path) -> Result<std::path::PathBuf> {
    if !project.is_absolute() {
        return Err(Invalid::ProjectRelative(project.to_path_buf()).into());
    }
    match std::fs::metadata(project) {
        Err(_) => Err(Invalid::ProjectMissing(project.to_path_buf()).into()),
        Ok(m) if !m.is_dir() => Err(Invalid::ProjectNotAFolder(project.to_path_buf()).into()),
        Ok(_) => project.canonicalize().map_err(|e| Error::io(project, e)),
    }
}

/// The commit a Coding battle in `project` starts from; refused when the
/// folder is not a git repository with a commit.
pub(super) async fn git_base(project: &std::path::Path) -> Result<String> {
    let repo = project.to_path_buf();
    let checked =
        tokio::task::spawn_blocking(move || crate::worktree::check_project(&repo)).await?;
    Ok(checked.map_err(|e| match e {
        crate::worktree::WorktreeError::NotARepository(p) => Invalid::NotAGitRepository(p),
        other => Invalid::Other(other.to_string()),
    })?)
}

/// A new contestant's id. A blind battle's are random (v4): time-ordered
/// ids would follow the launcher's order and tell who is who.
fn contestant_id(blind: bool) -> String {
    if blind {
        uuid::Uuid::new_v4().to_string()
    } else {
        uuid::Uuid::now_v7().to_string()
    }
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
        series_id: b.series.as_ref().map(|(id, _)| id.clone()),
        blind: b.blind,
        revealed_at: None,
        user_verdict: None,
        tags: b.tags.clone(),
        judging: None,
        machine: b.machine.clone(),
        user_name: b.user_name.clone(),
        voted_by: None,
        source: None,
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
                waiting: None,
                truncated: false,
                result_path: None,
                run: c.run.clone(),
                worktree: None,
                diff: None,
                check: None,
                label: c.label.clone(),
            })
            .collect(),
    }
}
