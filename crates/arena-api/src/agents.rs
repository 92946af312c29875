//! Agents and personas as the Settings screen edits them (issue 42): one
//! `[[backend]]` of arena.toml, one persona of `AGENTS.md`. Each type only
//! converts into the engine's; the engine checks and writes.

use arena_core as core;
use serde::Deserialize;

/// A `[[backend]]` to add (`previous: null`) or to write over the one named
/// `previous` (renamed when `name` differs).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BackendInputDto {
    pub previous: Option<String>,
    pub name: String,
    /// The program and its arguments, one per entry, with the placeholders
    /// `{prompt}` (required), `{model}` and `{worktree}`.
    pub command: Vec<String>,
}

impl BackendInputDto {
    /// The name it replaces and the backend.
    pub fn into_engine(self) -> (Option<String>, core::config::CustomBackend) {
        (
            self.previous,
            core::config::CustomBackend {
                name: self.name,
                command: self.command,
            },
        )
    }
}

/// A persona to add (`previous: null`) or to write over the one named
/// `previous`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PersonaInputDto {
    pub previous: Option<String>,
    pub name: String,
    pub description: Option<String>,
    pub system_prompt: String,
    pub tools: Vec<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_tokens: Option<u64>,
}

impl PersonaInputDto {
    /// The name it replaces and the persona.
    pub fn into_engine(self) -> (Option<String>, core::persona::Persona) {
        (
            self.previous,
            core::persona::Persona {
                name: self.name,
                system_prompt: self.system_prompt,
                tools: self.tools,
                temperature: self.temperature,
                top_p: self.top_p,
                max_tokens: self.max_tokens,
                description: self.description,
            },
        )
    }
}
