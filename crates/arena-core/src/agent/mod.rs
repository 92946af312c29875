//! Running CLI agents: child processes in their own process group with a
//! minimal environment, a timeout, and cancellation that takes down the
//! whole group.

pub mod backends;
pub mod native;
pub mod process;
pub mod sandbox;
