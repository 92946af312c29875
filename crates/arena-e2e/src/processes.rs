//! The app's processes and their memory, read from `/proc` (Linux).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Result};

use crate::App;

/// Memory of a set of processes, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// How many processes were summed.
    pub processes: usize,
    /// Resident set size, in KiB (`VmRSS`; shared pages count once per process).
    pub rss_kib: u64,
    /// Proportional set size, in KiB (shared pages split between their
    /// users), from `smaps_rollup`; `None` when it cannot be read.
    pub pss_kib: Option<u64>,
}

/// `pid`'s memory plus that of all its descendants.
pub fn process_tree_memory(pid: u32) -> Memory {
    let tree = descendants(pid);
    let mut memory = Memory {
        pss_kib: Some(0),
        ..Memory::default()
    };
    for p in std::iter::once(pid).chain(tree) {
        let dir = Path::new("/proc").join(p.to_string());
        let Some(rss) = status_kib(&dir.join("status"), "VmRSS:") else {
            continue; // gone meanwhile, or a kernel thread
        };
        memory.processes += 1;
        memory.rss_kib += rss;
        let pss = status_kib(&dir.join("smaps_rollup"), "Pss:");
        memory.pss_kib = memory.pss_kib.zip(pss).map(|(sum, p)| sum + p);
    }
    memory
}

impl App {
    /// The app's own process (`arena-app`, launched by WebKitWebDriver).
    pub fn app_pid(&self) -> Result<u32> {
        let driver = self.driver_pid();
        let found: Vec<u32> = descendants(driver)
            .into_iter()
            .filter(|p| command_name(*p).as_deref() == Some("arena-app"))
            .collect();
        match found.as_slice() {
            [pid] => Ok(*pid),
            [] => bail!("no arena-app process under tauri-driver (pid {driver})"),
            many => bail!("several arena-app processes under tauri-driver: {many:?}"),
        }
    }

    /// The memory of the app and all its processes (web content, network…).
    pub fn memory(&self) -> Result<Memory> {
        Ok(process_tree_memory(self.app_pid()?))
    }
}

/// Every process below `root` (children, grandchildren, …).
fn descendants(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if let Some(ppid) = parent(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        if let Some(kids) = children.get(&p) {
            out.extend(kids);
            stack.extend(kids);
        }
    }
    out
}

/// The parent pid, from `/proc/<pid>/stat` (`pid (comm) state ppid …`; the
/// command name may hold spaces and parentheses).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

fn command_name(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The KiB value of a `Key:   123 kB` line.
fn status_kib(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_and_a_child_are_measured() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawning sleep");
        let me = std::process::id();
        assert!(descendants(me).contains(&child.id()));
        assert_eq!(parent(child.id()), Some(me));
        let memory = process_tree_memory(me);
        assert!(memory.processes >= 2, "{memory:?}");
        assert!(memory.rss_kib > 1000, "{memory:?}");
        if let Some(pss) = memory.pss_kib {
            assert!(pss > 0 && pss <= memory.rss_kib, "{memory:?}");
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}
