//! A battle started again (issue 42, item 12): what a finished battle was
//! started with — the launcher's fields — for "Run again" (the same
//! request sent again) and "Edit & rerun" (the launcher opened with them).
//! Only converts: which battles may run again is the caller's rule.

use arena_core as core;
use serde::Serialize;

use crate::{BaseChoiceDto, BattleTypeDto, StartBattleRequest};

/// What a battle was started with, field for field as the launcher has
/// them: its type, project, prompt, contestants, check, blind, tags and
/// base choice. A blind battle's contestants are in the order they were
/// started in (not its letters' order), so nothing of who is who shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LaunchDto {
    /// The battle it was read from.
    pub battle_id: String,
    pub battle_type: BattleTypeDto,
    pub project: String,
    pub prompt: String,
    pub contestants: Vec<LaunchContestantDto>,
    pub check_command: Option<String>,
    pub blind: bool,
    pub tags: Vec<String>,
    /// Coding: HEAD or the working tree, as chosen then (taken anew: HEAD
    /// and the working tree as they are now); `head` for Q&A.
    pub base: BaseChoiceDto,
}

/// One contestant as it was started: its persona or backend, its model,
/// and the provider that served it (empty for a CLI agent's own model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LaunchContestantDto {
    pub identity: String,
    pub model: String,
    pub provider: String,
}

impl LaunchContestantDto {
    /// `IDENTITY@MODEL` as the engine takes it: the model named with its
    /// provider (`PROVIDER/MODEL`), so it runs on the same one again.
    pub fn spec(&self) -> String {
        if self.provider.is_empty() {
            format!("{}@{}", self.identity, self.model)
        } else {
            format!("{}@{}/{}", self.identity, self.provider, self.model)
        }
    }
}

impl From<&core::Battle> for LaunchDto {
    fn from(b: &core::Battle) -> Self {
        let mut contestants: Vec<&core::Contestant> = b.contestants.iter().collect();
        contestants.sort_by_key(|c| c.position);
        LaunchDto {
            battle_id: b.id.clone(),
            battle_type: b.battle_type.into(),
            project: crate::path(&b.project),
            prompt: b.prompt.clone(),
            contestants: contestants
                .into_iter()
                .map(|c| LaunchContestantDto {
                    identity: c.identity.clone(),
                    model: c.model.clone(),
                    provider: c.provider.clone(),
                })
                .collect(),
            check_command: b.check_command.clone(),
            blind: b.blind,
            tags: b.tags.clone(),
            base: core::coding_base::base_of(b)
                .map(Into::into)
                .unwrap_or_default(),
        }
    }
}

impl LaunchDto {
    /// The request that starts the same battle anew.
    pub fn request(&self) -> StartBattleRequest {
        StartBattleRequest {
            battle_type: self.battle_type,
            project: self.project.clone(),
            prompt: self.prompt.clone(),
            contestants: self
                .contestants
                .iter()
                .map(LaunchContestantDto::spec)
                .collect(),
            check_command: self.check_command.clone(),
            blind: self.blind,
            tags: self.tags.clone(),
            base: self.base,
        }
    }
}
