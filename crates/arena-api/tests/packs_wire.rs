//! The JSON of the Packs screen's wire types (arena-api's packs module):
//! what the webview sends to start a pack run or decide a review, and
//! what a run's report looks like, field by field.

use arena_api::{PackRunReportDto, ReviewDecisionDto, StartPackRunRequest};
use arena_core::pack_score::{self, RunOutcome, TaskRun};
use arena_core::{PackRunReport, PackRunRow, PackRunTask};
use serde_json::json;

fn run(task: &str, contestant: &str, outcome: RunOutcome, reason: Option<&str>) -> PackRunRow {
    PackRunRow {
        task: task.into(),
        contestant: contestant.into(),
        run: 1,
        battle_id: format!("{task}-{contestant}"),
        outcome,
        reason: reason.map(str::to_string),
        fail_to_pass_fraction: None,
        dropped: if contestant == "agent@none" {
            vec!["tests/test_x.py".into()]
        } else {
            vec![]
        },
        cost_usd: None,
        seconds: 2.0,
    }
}

#[test]
fn a_start_request_reads_as_the_engine_takes_it() {
    let request: StartPackRunRequest = serde_json::from_value(json!({
        "pack": " /packs/sample ",
        "project": "  ",
        "contestants": ["agent@gold", "claude-code@sonnet"],
        "runs": null,
        "parallel": 0,
        "tasks": [],
        "budget_usd": 2.5,
        "key": null
    }))
    .expect("the webview's request parses");
    let engine = request.into_engine().expect("valid contestants");
    assert_eq!(engine.pack, std::path::PathBuf::from("/packs/sample"));
    assert_eq!(engine.project, None, "a blank project is the pack's bundle");
    assert_eq!(engine.runs, None, "the pack's default");
    assert_eq!(engine.parallel, 1, "at least one at once");
    assert_eq!(engine.contestants[1].identity, "claude-code");
    assert_eq!(engine.budget_usd, Some(2.5));
    let bad: StartPackRunRequest = serde_json::from_value(json!({
        "pack": "/p", "project": null, "contestants": ["no-model"], "runs": 1,
        "parallel": 1, "tasks": [], "budget_usd": null, "key": null
    }))
    .unwrap();
    assert!(bad.into_engine().is_err(), "IDENTITY@MODEL is required");
}

#[test]
fn review_decisions_are_tagged_by_action() {
    let cases = [
        (json!({"action": "approve"}), ReviewDecisionDto::Approve),
        (
            json!({"action": "drop", "reason": "vague"}),
            ReviewDecisionDto::Drop {
                reason: Some("vague".into()),
            },
        ),
        (
            json!({"action": "edit", "instruction": "Do it."}),
            ReviewDecisionDto::Edit {
                instruction: "Do it.".into(),
            },
        ),
    ];
    for (value, want) in cases {
        let got: ReviewDecisionDto = serde_json::from_value(value.clone()).expect("parses");
        assert_eq!(got, want, "{value}");
    }
    assert!(serde_json::from_value::<ReviewDecisionDto>(json!({"action": "merge"})).is_err());
}

#[test]
fn a_run_report_carries_scores_intervals_runs_and_dropped_edits() {
    let rows = [
        run(
            "t1",
            "agent@gold",
            RunOutcome::Resolved,
            Some("all tests pass"),
        ),
        run("t1", "agent@none", RunOutcome::Unresolved, Some("2 fail")),
        run("t2", "agent@gold", RunOutcome::Error, None),
    ];
    let scored: Vec<TaskRun> = rows
        .iter()
        .filter(|r| r.reason.is_some())
        .map(|r| TaskRun {
            task: r.task.clone(),
            contestant: r.contestant.clone(),
            identity: "agent".into(),
            model: r.contestant.split('@').nth(1).unwrap_or("").into(),
            run: r.run,
            outcome: r.outcome,
            fail_to_pass_fraction: None,
            cost_usd: None,
            seconds: r.seconds,
        })
        .collect();
    let report = PackRunReport {
        series_id: "s1".into(),
        pack: "sample".into(),
        version: "1".into(),
        status: "running".into(),
        runs_per_task: 1,
        done: 2,
        planned: 4,
        scores: pack_score::score(&scored),
        cutoffs: Vec::new(),
        tasks: vec![
            PackRunTask {
                id: "t1".into(),
                runs: rows[..2].to_vec(),
            },
            PackRunTask {
                id: "t2".into(),
                runs: rows[2..].to_vec(),
            },
        ],
    };
    let dto = PackRunReportDto::from(&report);
    let v = serde_json::to_value(&dto).expect("serialises");
    assert_eq!(v["series_id"], "s1");
    assert_eq!(v["planned"], 4);
    assert_eq!(v["lineup"], json!(["agent@gold", "agent@none"]));
    let gold = &v["contestants"][0];
    assert_eq!(gold["contestant"], "agent@gold");
    assert_eq!(gold["pass_at_1"], 1.0);
    let interval = &gold["pass_at_1_interval"];
    assert!(interval["low"].as_f64().unwrap() < 1.0, "{interval}");
    assert!(interval["method"].is_string());
    assert_eq!(gold["pass_at"][0]["k"], 1);
    let t1 = &v["tasks"][0]["runs"];
    assert_eq!(t1[0]["outcome"], "resolved");
    assert_eq!(t1[0]["done"], true);
    assert_eq!(t1[1]["dropped"], json!(["tests/test_x.py"]));
    let pending = &v["tasks"][1]["runs"][0];
    assert_eq!(pending["done"], false, "no reason yet: not done");
    assert_eq!(pending["outcome"], "error");
}
