//! The instruction writer (issue 41, point 5) over real HTTP: the scripted
//! model server answers per request — a first draft that copies a line of
//! the fix and a clean rewrite, a task whose drafts leak twice (dropped
//! with the reason), a clean first draft — on a copy of the sample pack,
//! whose patches are real. The writer is local unless named.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arena_core::battle::Lane;
use arena_core::config::{Config, ProviderConfig, ProviderKind};
use arena_core::pack::instruct::{self, WriteOptions, Writer};
use arena_core::pack::{Pack, INSTRUCTION_FILE};
use arena_domain::instruction::{self, ReviewState};
use arena_testserver::{ModelScript, TestServer};
use serde_json::Value;

const MEDIAN: &str = "textkit__add-median";
const ROMAN: &str = "textkit__roman-range";
const TITLE: &str = "textkit__title-case-apostrophes";

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample")
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of the sample pack with each task's commit message and RED
/// output beside its hidden tests, as validation leaves them.
fn pack(dir: &Path) -> PathBuf {
    let pack = dir.join("pack");
    copy(&sample(), &pack);
    for (id, message) in [
        (
            MEDIAN,
            "Add median to stats\n\nUses a sorted copy; closes #12.",
        ),
        (ROMAN, "Refuse numbers outside 1..3999 in to_roman"),
        (TITLE, "title_case keeps apostrophes and capitals"),
    ] {
        let tests = pack.join("tasks").join(id).join("tests");
        std::fs::write(tests.join("commit-message.txt"), message).unwrap();
        std::fs::write(
            tests.join("red-output.txt"),
            format!("FAIL: {id}\nAssertionError: the RED run of {id}\n"),
        )
        .unwrap();
    }
    pack
}

fn config(local: &TestServer, cloud: &TestServer, default_model: Option<&str>) -> Config {
    Config {
        default_model: default_model.map(str::to_string),
        providers: vec![
            ProviderConfig::new(
                "local",
                ProviderKind::Openai,
                &local.base_url(),
                Lane::Local,
            ),
            ProviderConfig::new(
                "cloud",
                ProviderKind::Openai,
                &cloud.base_url(),
                Lane::Cloud,
            ),
        ],
        ..Config::default()
    }
}

/// The text of a chat request's messages.
fn said(body: &Value) -> String {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["content"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The scripted writer: per task and per attempt.
fn writer_script(calls: Arc<AtomicUsize>) -> ModelScript {
    ModelScript::respond_with(move |body| {
        calls.fetch_add(1, Ordering::SeqCst);
        let text = said(body);
        let rewrite = text.contains("Your statement was rejected");
        if text.contains("MedianTest") {
            if rewrite {
                "Add a median to the statistics module\n\n`textkit.stats` can average a list \
                 but cannot give its middle value. It should, averaging the two middle values \
                 of an even-length list, and refuse an empty list with ValueError."
                    .into()
            } else {
                // Copies a line of the fix.
                "<think>easy</think>Median is missing\n\nDo it like this: \
                 `raise ValueError(\"median of an empty list\")`."
                    .into()
            }
        } else if text.contains("ToRomanTest") {
            // Leaks every time: a URL and an issue number.
            "Roman range\n\nSee https://example.org/roman and GH-7.".into()
        } else {
            "Title case mangles apostrophes\n\n`title_case(\"don't stop\")` gives \
             \"Don'T Stop\"; each word should only get its first letter upper case."
                .into()
        }
    })
}

#[tokio::test]
async fn the_writer_rewrites_a_leak_once_drops_a_second_leak_and_never_sends_the_fix() {
    let (local, cloud) = (
        TestServer::start().await.unwrap(),
        TestServer::start().await.unwrap(),
    );
    let calls = Arc::new(AtomicUsize::new(0));
    local.set_model("writer", writer_script(calls.clone()));
    let dir = tempfile::tempdir().unwrap();
    let pack = pack(dir.path());
    let roman_before =
        std::fs::read_to_string(pack.join("tasks").join(ROMAN).join(INSTRUCTION_FILE)).unwrap();

    let writer = Writer::choose(&config(&local, &cloud, Some("writer")), None)
        .await
        .unwrap();
    assert!(!writer.leaves_the_machine());
    assert_eq!(writer.name(), "local/writer");
    let report = instruct::write_instructions(&pack, &writer, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(report.tasks.len(), 3, "{report:?}");
    let by = |id: &str| report.tasks.iter().find(|t| t.id == id).unwrap();

    // Median: rejected for the gold line, rewritten clean, pending review.
    let median = by(MEDIAN);
    assert_eq!((median.state, median.attempts), (ReviewState::Pending, 2));
    assert!(
        median
            .reason
            .as_deref()
            .unwrap()
            .contains("copies a line of the fix"),
        "{median:?}"
    );
    assert_eq!(median.interface, vec!["median".to_string()]);
    let text =
        std::fs::read_to_string(pack.join("tasks").join(MEDIAN).join(INSTRUCTION_FILE)).unwrap();
    assert!(
        text.starts_with("Add a median to the statistics module"),
        "{text}"
    );
    assert!(
        text.contains("## Interface")
            && text.contains("function `median(xs)` in `textkit/stats.py`"),
        "{text}"
    );
    let gold = std::fs::read_to_string(pack.join("tasks").join(MEDIAN).join("solution/gold.patch"))
        .unwrap();
    let test =
        std::fs::read_to_string(pack.join("tasks").join(MEDIAN).join("tests/test.patch")).unwrap();
    assert_eq!(instruction::audit(&text, &gold, &test), vec![]);

    // Roman: leaked twice, dropped with the reason, its instruction untouched.
    let roman = by(ROMAN);
    assert_eq!((roman.state, roman.attempts), (ReviewState::Dropped, 2));
    let reason = roman.reason.clone().unwrap();
    assert!(
        reason.contains("rejected the instruction twice"),
        "{reason}"
    );
    assert!(
        reason.contains("URL") && reason.contains("GH-7"),
        "{reason}"
    );
    assert_eq!(
        std::fs::read_to_string(pack.join("tasks").join(ROMAN).join(INSTRUCTION_FILE)).unwrap(),
        roman_before
    );

    // Title: clean at once.
    let title = by(TITLE);
    assert_eq!((title.state, title.attempts), (ReviewState::Pending, 1));
    assert_eq!(calls.load(Ordering::SeqCst), 5);

    // The states are in task.toml, read back as the pack's reader reads it.
    let loaded = Pack::load(&pack).unwrap();
    let state = |id: &str| {
        instruct::review_state(loaded.tasks.iter().find(|t| t.id.as_str() == id).unwrap())
    };
    assert_eq!(state(MEDIAN), Some((ReviewState::Pending, None)));
    assert_eq!(state(ROMAN), Some((ReviewState::Dropped, Some(reason))));
    assert_eq!(state(TITLE), Some((ReviewState::Pending, None)));
    let counts = instruct::count_states(&loaded);
    assert_eq!(counts.get(&ReviewState::Pending), Some(&2));
    assert_eq!(counts.get(&ReviewState::Dropped), Some(&1));
    // A dropped task is not run: its defect says why.
    let roman_task = loaded
        .tasks
        .iter()
        .find(|t| t.id.as_str() == ROMAN)
        .unwrap();
    let defect = roman_task.defect().unwrap();
    assert!(
        defect.contains("its instruction was dropped: the audit rejected"),
        "{defect}"
    );
    assert!(loaded
        .tasks
        .iter()
        .filter(|t| t.id.as_str() != ROMAN)
        .all(|t| t.defect().is_none()));

    // What the model was sent: the message, the tests, the RED output —
    // and no line of any gold patch.
    let requests = local.requests_for("writer");
    assert_eq!(requests.len(), 5);
    let first_median = requests
        .iter()
        .map(|r| said(&r.body))
        .find(|t| t.contains("MedianTest"))
        .unwrap();
    assert!(first_median.contains("Add median to stats"));
    assert!(first_median.contains("AssertionError: the RED run of textkit__add-median"));
    for task in &loaded.tasks {
        let arena_core::pack::Solution::GoldPatch(gold) = &task.solution else {
            panic!("a gold patch")
        };
        for line in instruction::added_lines(gold) {
            let line = line.trim();
            if line.len() >= 12 {
                for r in &requests {
                    let text = said(&r.body);
                    // The rejected draft quoted back to the model is the
                    // model's own words.
                    let quoted = text.contains("Your statement was rejected")
                        && line.contains("median of an empty list");
                    assert!(
                        quoted || !text.contains(line),
                        "sent `{line}` to the writer"
                    );
                }
            }
        }
    }

    // A second run leaves written tasks alone; naming one writes it again.
    let again = instruct::write_instructions(&pack, &writer, &WriteOptions::default())
        .await
        .unwrap();
    assert!(again.tasks.is_empty());
    assert_eq!(again.skipped.len(), 3, "{again:?}");
    let named = instruct::write_instructions(
        &pack,
        &writer,
        &WriteOptions {
            tasks: Some(vec![TITLE.into()]),
        },
    )
    .await
    .unwrap();
    assert_eq!(named.tasks.len(), 1);
    assert!(instruct::write_instructions(
        &pack,
        &writer,
        &WriteOptions {
            tasks: Some(vec!["no-such-task".into()]),
        },
    )
    .await
    .is_err());
}

#[tokio::test]
async fn the_writer_is_local_unless_the_user_names_a_cloud_model() {
    let (local, cloud) = (
        TestServer::start().await.unwrap(),
        TestServer::start().await.unwrap(),
    );
    local.set_model("small", ModelScript::text("x"));
    cloud.set_model("big", ModelScript::text("x"));

    // A cloud default model is not used on its own.
    let err = Writer::choose(&config(&local, &cloud, Some("big")), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cloud model") && err.contains("--writer"),
        "{err}"
    );
    // Named, it is: and the writer says the code leaves the machine.
    let named = Writer::choose(&config(&local, &cloud, Some("small")), Some("big"))
        .await
        .unwrap();
    assert!(named.leaves_the_machine());
    assert_eq!(named.name(), "cloud/big");
    let default = Writer::choose(&config(&local, &cloud, Some("small")), None)
        .await
        .unwrap();
    assert!(!default.leaves_the_machine());
    // No model at all: say how to name one.
    let err = Writer::choose(&config(&local, &cloud, None), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("--writer"), "{err}");
    // A model no provider serves.
    assert!(
        Writer::choose(&config(&local, &cloud, None), Some("nobody"))
            .await
            .is_err()
    );
}
