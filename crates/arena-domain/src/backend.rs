//! The Coding agents Arena knows by name and the program each runs
//! (`native` is the built-in agent). Whether one is installed, and how it
//! is launched, is the agent layer's business.
//!
//! [`Agent`] is the one registry: every question about an agent is an
//! exhaustive `match` on it, here and in `arena-agent`'s `backends`, so a
//! new agent does not compile until each one is answered.

use std::fmt;

use serde::Serialize;

/// An agent Arena knows: the built-in one or a CLI agent it can launch.
/// (The user's own `[[backend]]` commands are configuration, not agents.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agent {
    /// Arena's own agent, run in-process against a provider.
    Native,
    ClaudeCode,
    OpenCode,
    Qwen,
    Goose,
    Aider,
    Codex,
}

impl Agent {
    /// Every agent, the built-in one first (the order the UI lists them).
    pub const ALL: &'static [Agent] = &[
        Agent::Native,
        Agent::ClaudeCode,
        Agent::OpenCode,
        Agent::Qwen,
        Agent::Goose,
        Agent::Aider,
        Agent::Codex,
    ];

    /// The name a contestant uses for it (`claude-code@model`).
    pub const fn name(self) -> &'static str {
        match self {
            Agent::Native => "native",
            Agent::ClaudeCode => "claude-code",
            Agent::OpenCode => "opencode",
            Agent::Qwen => "qwen",
            Agent::Goose => "goose",
            Agent::Aider => "aider",
            Agent::Codex => "codex",
        }
    }

    /// The program it runs; `None` for the built-in agent.
    pub const fn program(self) -> Option<&'static str> {
        match self {
            Agent::Native => None,
            Agent::ClaudeCode => Some("claude"),
            Agent::OpenCode => Some("opencode"),
            Agent::Qwen => Some("qwen"),
            Agent::Goose => Some("goose"),
            Agent::Aider => Some("aider"),
            Agent::Codex => Some("codex"),
        }
    }

    /// Whether it is a CLI agent (a child process), not the built-in one.
    pub const fn is_cli(self) -> bool {
        self.program().is_some()
    }

    /// The agent called `name`, ignoring case.
    pub fn parse(name: &str) -> Option<Agent> {
        Agent::ALL
            .iter()
            .copied()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// Its name and program.
    pub const fn info(self) -> BackendInfo {
        BackendInfo {
            agent: self,
            name: self.name(),
            program: self.program(),
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Agent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A known backend and the program that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BackendInfo {
    #[serde(skip)]
    pub agent: Agent,
    pub name: &'static str,
    /// `None` for the built-in agent.
    pub program: Option<&'static str>,
}

/// Every agent's [`BackendInfo`], in the order of [`Agent::ALL`].
pub const BACKENDS: &[BackendInfo] = &{
    let mut infos = [Agent::Native.info(); Agent::ALL.len()];
    let mut i = 0;
    while i < infos.len() {
        infos[i] = Agent::ALL[i].info();
        i += 1;
    }
    infos
};

/// The agent called `name` (ignoring case), with its program.
pub fn find(name: &str) -> Option<&'static BackendInfo> {
    BACKENDS.iter().find(|b| b.name.eq_ignore_ascii_case(name))
}

/// Every agent's name.
pub fn names() -> Vec<&'static str> {
    Agent::ALL.iter().map(|a| a.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_are_found_by_name_ignoring_case() {
        for agent in Agent::ALL {
            assert_eq!(Agent::parse(agent.name()), Some(*agent));
            assert_eq!(
                Agent::parse(&agent.name().to_uppercase()),
                Some(*agent),
                "{agent}"
            );
            assert_eq!(find(agent.name()).map(|b| b.agent), Some(*agent));
        }
        assert_eq!(Agent::parse("Claude-Code"), Some(Agent::ClaudeCode));
        assert_eq!(Agent::parse("cursor"), None);
        assert!(find("cursor").is_none());
    }

    #[test]
    fn the_table_follows_the_agents() {
        assert_eq!(BACKENDS.len(), Agent::ALL.len());
        for (info, agent) in BACKENDS.iter().zip(Agent::ALL) {
            assert_eq!(*info, agent.info());
        }
        assert_eq!(
            names(),
            [
                "native",
                "claude-code",
                "opencode",
                "qwen",
                "goose",
                "aider",
                "codex"
            ]
        );
        assert_eq!(Agent::ClaudeCode.program(), Some("claude"));
        // Only the built-in agent has no program.
        let built_in: Vec<_> = Agent::ALL.iter().filter(|a| !a.is_cli()).collect();
        assert_eq!(built_in, [&Agent::Native]);
    }
}
