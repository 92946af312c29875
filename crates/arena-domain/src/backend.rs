//! The Coding backends Arena knows by name and the program each runs
//! (`native` is the built-in agent). Whether one is installed, and how it
//! is launched, is the agent layer's business.

use serde::Serialize;

/// A known backend and the program that runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BackendInfo {
    pub name: &'static str,
    /// `None` for the built-in agent.
    pub program: Option<&'static str>,
}

pub const BACKENDS: &[BackendInfo] = &[
    BackendInfo {
        name: "native",
        program: None,
    },
    BackendInfo {
        name: "claude-code",
        program: Some("claude"),
    },
    BackendInfo {
        name: "opencode",
        program: Some("opencode"),
    },
    BackendInfo {
        name: "qwen",
        program: Some("qwen"),
    },
    BackendInfo {
        name: "goose",
        program: Some("goose"),
    },
    BackendInfo {
        name: "aider",
        program: Some("aider"),
    },
    BackendInfo {
        name: "codex",
        program: Some("codex"),
    },
];

pub fn find(name: &str) -> Option<&'static BackendInfo> {
    BACKENDS.iter().find(|b| b.name.eq_ignore_ascii_case(name))
}

pub fn names() -> Vec<&'static str> {
    BACKENDS.iter().map(|b| b.name).collect()
}
