//! `arena pack write` and `arena pack review` (issue 41, point 5): write
//! the instructions of a mined pack's validated tasks with a model (local
//! by default), then review them one task a screen in the terminal —
//! `a` approve, `e` edit in `$EDITOR`, `d` drop, `n`/`p` next and
//! previous, `q` quit. The review state is kept in each task.toml's
//! `[metadata.arena]`. Without a terminal, `--approve ID` and `--drop ID`
//! do the same, and `--json` lists the states.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use arena_core::pack::instruct::{self, WriteOptions, Writer};
use arena_core::pack::{self, mine::PLACEHOLDER_INSTRUCTION, Pack, Solution, Task};
use arena_core::{Error, Invalid};
use arena_domain::instruction::{self, ReviewState};
use arena_domain::terminal::printable;
use clap::Args;
use serde::Serialize;

#[derive(Args)]
pub struct WriteArgs {
    /// The pack (mined and validated).
    pub pack: PathBuf,
    /// The model that writes (default: the config's default model when
    /// its provider is local). A cloud model sends the code off this
    /// machine: it is used only when named here.
    #[arg(long, value_name = "MODEL")]
    pub writer: Option<String>,
    /// Only these tasks (written again whatever their state).
    #[arg(long, value_name = "ID,..", value_delimiter = ',')]
    pub tasks: Option<Vec<String>>,
    /// Print machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ReviewArgs {
    /// The pack whose written instructions to review.
    pub pack: PathBuf,
    /// Approve these tasks' instructions (no terminal needed).
    #[arg(long, value_name = "ID")]
    pub approve: Vec<String>,
    /// Drop these tasks (no terminal needed).
    #[arg(long, value_name = "ID")]
    pub drop: Vec<String>,
    /// Why the tasks given with --drop are dropped.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// List the tasks and their review states as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `arena pack write`.
pub async fn write(args: WriteArgs) -> Result<(), Error> {
    let config = arena_core::config::load()?;
    let writer = Writer::choose(&config, args.writer.as_deref()).await?;
    if writer.leaves_the_machine() {
        eprintln!(
            "arena: the writer {} is a cloud model: each task's commit message, hidden tests and \
             failure output leave this machine for it.",
            writer.name()
        );
    }
    let report = instruct::write_instructions(
        &args.pack,
        &writer,
        &WriteOptions {
            tasks: args.tasks.clone(),
        },
    )
    .await?;
    if args.json {
        crate::print_json(&report);
        return Ok(());
    }
    for t in &report.tasks {
        let why = t
            .reason
            .as_deref()
            .map(|r| format!("  ({})", printable(r)))
            .unwrap_or_default();
        println!("  {} {}{why}", t.id, t.state.as_str());
    }
    for (id, why) in &report.skipped {
        println!("  {id} skipped: {}", printable(why));
    }
    println!(
        "Wrote {} instruction(s) with {}, {} dropped by the audit; review them with `arena pack review {}`.",
        report.count(ReviewState::Pending),
        report.writer,
        report.count(ReviewState::Dropped),
        args.pack.display()
    );
    Ok(())
}

/// What `arena pack mine --out PACK [--writer MODEL]` says of the
/// instructions it wrote at its end (arena-core's
/// [`arena_core::Engine::mine_pack`] wrote them as `arena pack write`
/// does). A writer that could not be chosen (no local model, a cloud
/// default) is said, not fatal: the validated pack stays, and `arena pack
/// write` can write them later.
pub fn said_after_mining(
    instructions: &arena_core::Instructions,
    pack: &std::path::Path,
    quiet: bool,
) {
    match instructions {
        arena_core::Instructions::NotAsked => {}
        arena_core::Instructions::NoWriter { why } => eprintln!(
            "arena: instructions not written ({why}); write them later with `arena pack write {}`",
            pack.display()
        ),
        arena_core::Instructions::Written(report) => {
            if !quiet {
                eprintln!(
                    "arena: {} instruction(s) written with {}, {} dropped by the audit; review \
                     them with `arena pack review {}`",
                    report.count(ReviewState::Pending),
                    report.writer,
                    report.count(ReviewState::Dropped),
                    pack.display()
                );
            }
        }
    }
}

/// One task in the review's list.
#[derive(Debug, Serialize)]
struct Reviewed {
    id: String,
    state: ReviewState,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    committed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    writer: Option<String>,
}

fn usage(message: String) -> Error {
    Error::Invalid(Invalid::Other(message))
}

/// The tasks with a written instruction (a review state).
fn reviewable(pack: &Pack) -> Vec<&Task> {
    pack.tasks
        .iter()
        .filter(|t| instruct::review_state(t).is_some())
        .collect()
}

fn find<'a>(pack: &'a Pack, id: &str) -> Result<&'a Task, Error> {
    let task = pack
        .tasks
        .iter()
        .find(|t| t.id.as_str() == id)
        .ok_or_else(|| usage(format!("the pack has no task `{}`", pack::printable(id))))?;
    if instruct::review_state(task).is_none() {
        return Err(usage(format!(
            "task `{id}` has no written instruction to review; write it with `arena pack write`"
        )));
    }
    Ok(task)
}

fn approve(task: &Task) -> Result<(), Error> {
    if task.instruction == PLACEHOLDER_INSTRUCTION {
        return Err(usage(format!(
            "task `{}` has no instruction yet (the audit dropped the writer's); edit it first",
            task.id.as_str()
        )));
    }
    instruct::set_state(task, ReviewState::Approved, None, None)?;
    Ok(())
}

/// `arena pack review`.
pub fn review(args: ReviewArgs) -> Result<(), Error> {
    let loaded = Pack::load(&args.pack)?;
    if !args.approve.is_empty() || !args.drop.is_empty() {
        for id in &args.approve {
            approve(find(&loaded, id)?)?;
            println!("{id} approved");
        }
        let reason = args.reason.as_deref().unwrap_or("dropped in review");
        for id in &args.drop {
            instruct::set_state(find(&loaded, id)?, ReviewState::Dropped, Some(reason), None)?;
            println!("{id} dropped");
        }
        return Ok(());
    }
    if args.json {
        let list: Vec<Reviewed> = reviewable(&loaded)
            .into_iter()
            .filter_map(|t| {
                let (state, reason) = instruct::review_state(t)?;
                Some(Reviewed {
                    id: t.id.as_str().to_string(),
                    state,
                    reason,
                    committed_at: t.meta.committed_at.clone(),
                    writer: t
                        .meta
                        .other
                        .get(instruction::WRITER_KEY)
                        .and_then(|v| v.as_str())
                        .map(str::to_string),
                })
            })
            .collect();
        crate::print_json(&list);
        return Ok(());
    }
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(usage(
            "arena pack review is keyboard-driven and needs a terminal; without one, use \
             --approve ID or --drop ID [--reason TEXT], and --json to list the states"
                .into(),
        ));
    }
    interactive(&args.pack)
}

/// The terminal in single-key mode (no line editing, no echo) while it
/// lives; as it was afterwards.
struct SingleKeys {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    saved: Option<libc::termios>,
}

impl SingleKeys {
    fn on() -> SingleKeys {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: tcgetattr/tcsetattr only read and write the termios
            // given, for fd 0, which is a terminal (checked by the caller).
            unsafe {
                let mut t: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(0, &mut t) != 0 {
                    return SingleKeys { saved: None };
                }
                let saved = t;
                t.c_lflag &= !(libc::ICANON | libc::ECHO);
                t.c_cc[libc::VMIN] = 1;
                t.c_cc[libc::VTIME] = 0;
                if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
                    return SingleKeys { saved: None };
                }
                SingleKeys { saved: Some(saved) }
            }
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        SingleKeys {}
    }
}

impl Drop for SingleKeys {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if let Some(saved) = &self.saved {
            // SAFETY: as in `on`, with the termios read there.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, saved);
            }
        }
    }
}

/// The next key pressed (`None` at the end of input).
fn key() -> Option<u8> {
    let mut b = [0u8; 1];
    loop {
        match std::io::stdin().read(&mut b) {
            Ok(0) => return None,
            Ok(_) if b[0] == b'\n' || b[0] == b'\r' => continue,
            Ok(_) => return Some(b[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

fn screen(task: &Task, at: usize, of: usize, note: &str) -> String {
    let (state, reason) = instruct::review_state(task).unwrap_or((ReviewState::Pending, None));
    let subject = task
        .meta
        .swebench
        .as_ref()
        .and_then(|s| s.get("mined_subject"))
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let mut s = String::from("\x1b[2J\x1b[H");
    s.push_str(&format!(
        "Task {} of {of}: {}   [{}]\n",
        at + 1,
        task.id.as_str(),
        state.as_str()
    ));
    if let Some(reason) = reason {
        s.push_str(&format!("why: {}\n", printable(&reason)));
    }
    s.push_str(&format!(
        "committed {}  {}\n",
        task.meta.committed_at.as_deref().unwrap_or("?"),
        printable(subject)
    ));
    s.push_str(&"─".repeat(72));
    s.push('\n');
    s.push_str(&printable(&task.instruction));
    if !task.instruction.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(&"─".repeat(72));
    s.push('\n');
    if !note.is_empty() {
        s.push_str(&printable(note));
        s.push('\n');
    }
    s.push_str("a approve  e edit  d drop  n next  p previous  q quit\n");
    s
}

/// Opens `$VISUAL`/`$EDITOR` (else `vi`) on the task's instruction; what
/// the audit finds in the result, in words.
fn edit(task: &Task) -> Result<String, Error> {
    let editor = std::env::var("VISUAL")
        .ok()
        .or_else(|| std::env::var("EDITOR").ok())
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".into());
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or("vi");
    let file = task.dir.join(pack::INSTRUCTION_FILE);
    let status = std::process::Command::new(program)
        .args(words)
        .arg(&file)
        .status()
        .map_err(|e| usage(format!("could not start the editor `{editor}`: {e}")))?;
    if !status.success() {
        return Ok(format!(
            "the editor `{editor}` ended with {status}; nothing checked"
        ));
    }
    let text = pack::read::read_text(
        &task.dir,
        pack::INSTRUCTION_FILE,
        pack::read::MAX_INSTRUCTION,
    )?
    .unwrap_or_default();
    let (Solution::GoldPatch(gold), Some(test)) = (&task.solution, &task.test_patch) else {
        return Ok("edited".into());
    };
    let leaks = instruction::audit(&text, gold, test);
    if leaks.is_empty() {
        return Ok("edited; the audit finds nothing".into());
    }
    let words: Vec<String> = leaks.iter().map(ToString::to_string).collect();
    Ok(format!("edited; the audit finds: {}", words.join("; ")))
}

fn interactive(dir: &std::path::Path) -> Result<(), Error> {
    let mut loaded = Pack::load(dir)?;
    let ids: Vec<String> = reviewable(&loaded)
        .iter()
        .map(|t| t.id.as_str().to_string())
        .collect();
    if ids.is_empty() {
        println!(
            "No task of this pack has a written instruction; write them with `arena pack write`."
        );
        return Ok(());
    }
    let mut at = 0;
    let mut note = String::new();
    let mut keys = SingleKeys::on();
    let mut out = std::io::stdout();
    loop {
        let task = find(&loaded, &ids[at])?;
        let _ = out.write_all(screen(task, at, ids.len(), &note).as_bytes());
        let _ = out.flush();
        note.clear();
        let Some(k) = key() else { break };
        match k {
            b'a' => match approve(task) {
                Ok(()) => {
                    note = format!("{} approved", ids[at]);
                    at = (at + 1).min(ids.len() - 1);
                }
                Err(e) => note = e.to_string(),
            },
            b'd' => {
                instruct::set_state(task, ReviewState::Dropped, Some("dropped in review"), None)?;
                note = format!("{} dropped", ids[at]);
                at = (at + 1).min(ids.len() - 1);
            }
            b'e' => {
                drop(keys);
                note = edit(task)?;
                keys = SingleKeys::on();
            }
            b'n' => at = (at + 1).min(ids.len() - 1),
            b'p' => at = at.saturating_sub(1),
            b'q' | 0x04 => break,
            _ => note = "keys: a approve, e edit, d drop, n next, p previous, q quit".into(),
        }
        loaded = Pack::load(dir)?;
    }
    drop(keys);
    let counts = reviewable(&loaded)
        .iter()
        .filter_map(|t| instruct::review_state(t))
        .fold([0usize; 3], |mut c, (s, _)| {
            c[s as usize] += 1;
            c
        });
    println!(
        "\n{} approved, {} pending, {} dropped.",
        counts[ReviewState::Approved as usize],
        counts[ReviewState::Pending as usize],
        counts[ReviewState::Dropped as usize]
    );
    Ok(())
}
