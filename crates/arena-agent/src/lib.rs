//! Arena's agents and their workspaces: git worktrees and diffs (git2),
//! the CLI agents (launch plans, child processes), the built-in tool-calling
//! agent, and the kernel sandbox every agent process runs in.

pub mod apply;
pub mod backend;
pub mod backends;
pub mod bounds;
pub mod diff;
pub mod environment;
pub mod envkey;
pub mod jail;
pub mod left_out;
pub mod mirror;
pub mod native;
pub mod process;
pub mod reader;
pub mod registry;
pub mod relay;
pub mod sandbox;
pub mod seal;
pub mod worktree;
