// Prevents an additional console window on Windows in release builds.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // Started as a jail's inner layer: become the agent, under Landlock.
    if let Some(code) = arena_core::agent::jail::confine_main() {
        std::process::exit(code);
    }
    // Started as a reader of an agent's files (in its jail): answer.
    if let Some(code) = arena_core::agent::reader::reader_main() {
        std::process::exit(code);
    }
    // Started in a check's jail: apply the change, then become the check.
    if let Some(code) = arena_core::agent::apply::apply_first_main() {
        std::process::exit(code);
    }
    if let Ok(exe) = std::env::current_exe() {
        arena_core::agent::jail::set_confiner(exe);
    }
    arena_app::run();
}
