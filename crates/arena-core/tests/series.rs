//! Series on the scripted servers: every place of the series becomes one
//! battle, judged and checked against the goal; the report counts wins,
//! passes and costs; keys, budgets, "until decided", judge errors, the
//! confirming judge and cancelling from another engine.

mod common;

use arena_core::battle::{BattleType, ContestantSpec};
use arena_core::config::Price;
use arena_core::series::{parse_prompts, SeriesRequest, SeriesStatus};
use arena_core::{Error, SeriesStart};
use arena_testserver::ModelScript;
use common::*;
use serde_json::Value;

fn system_text(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

/// Digests mark the answer that says Paris; the judge names it; the goal
/// judge passes an answer that names Paris (`goal` answers otherwise).
fn judge(goal: &'static str) -> ModelScript {
    ModelScript::respond_with(move |body| {
        let (system, user) = (system_text(body), user_text(body));
        if system.contains("You summarise one answer") {
            let mark = if user.contains("Paris") {
                "MARK-BEST"
            } else {
                "MARK-MEH"
            };
            return format!("{mark} a summary");
        }
        if system.contains("achieves a goal") {
            let answer = user.split("answer\n").last().unwrap_or("");
            return match goal {
                "garbage" => "It looks fine to me.".into(),
                "fail" => r#"{"pass": false, "reason": "a strict judge"}"#.into(),
                _ if answer.contains("Paris") => {
                    r#"{"pass": true, "reason": "names Paris"}"#.into()
                }
                _ => r#"{"pass": false, "reason": "does not name Paris"}"#.into(),
            };
        }
        let mut label = "A";
        let mut best = "A";
        for line in user.lines() {
            if let Some(rest) = line.strip_prefix("Answer ") {
                label = &rest[..1];
            }
            if line.contains("MARK-BEST") {
                best = label;
            }
        }
        let other = if best == "A" { "B" } else { "A" };
        format!("{{\"winner\": \"{best}\", \"ranking\": [\"{best}\", \"{other}\"]}}")
    })
}

async fn harness(goal: &'static str) -> Harness {
    let mut h = Harness::new().await;
    h.cloud.set_model("judge", judge(goal));
    h.cloud.set_model("confirm", judge("fail"));
    h.cloud
        .set_model("good", ModelScript::text("The capital of France is Paris."));
    h.cloud
        .set_model("bad", ModelScript::text("It is probably Lyon."));
    h.reconfigure(|c| c.default_model = Some("judge".into()));
    h
}

fn request(h: &Harness, runs: u32) -> SeriesRequest {
    SeriesRequest {
        runs,
        parallel: 2,
        goal: Some("names the capital, Paris".into()),
        ..SeriesRequest::new(
            BattleType::Qa,
            h.project.path(),
            ["debugger@good", "explainer@bad"]
                .iter()
                .map(|c| ContestantSpec::parse(c).unwrap())
                .collect(),
            parse_prompts("What is the capital of France?\n").unwrap(),
        )
    }
}

async fn start(h: &Harness, request: SeriesRequest) -> String {
    match h.engine.create_series(request, None).await.expect("create") {
        SeriesStart::Created(s) => s.id,
        SeriesStart::Existing(s) => panic!("a new series was expected, got {}", s.id),
    }
}

#[tokio::test]
async fn a_series_runs_every_battle_judges_the_goal_and_reports() {
    let h = harness("names").await;
    let id = start(&h, request(&h, 3)).await;
    let series = h.engine.run_series(&id).await.expect("run");
    assert_eq!(series.status, SeriesStatus::Done);
    let summary = h.engine.series_summary(&id).await.unwrap();
    assert_eq!(summary.progress.done, 3);
    assert_eq!(summary.rows.len(), 6, "one row per contestant per battle");
    let good = &summary.reports[0];
    let bad = &summary.reports[1];
    assert_eq!(good.contestant, "Debugger@good");
    assert_eq!((good.runs, good.wins, good.decided), (3, 3, 3));
    assert_eq!((good.goal_passes, good.goal_checked), (3, 3));
    assert_eq!((bad.wins, bad.goal_passes, bad.goal_checked), (0, 0, 3));
    assert!(
        good.win_rate_low > 0.4 && good.win_rate_high == 1.0,
        "{good:?}"
    );
    assert_eq!(good.mean_turns_to_goal, Some(1.0));
    assert!(good.duration_p50_ms.is_some() && good.ttft_p50_ms.is_some());
    // Each battle is an ordinary battle of the series.
    let battles = h.engine.battles(50).await.unwrap();
    assert_eq!(battles.len(), 3);
    assert!(battles
        .iter()
        .all(|b| b.series_id.as_deref() == Some(id.as_str())));
    // The goal judge saw each answer fenced as untrusted data.
    let goal_requests: Vec<_> = h
        .cloud
        .requests_for("judge")
        .into_iter()
        .filter(|r| system_text(&r.body).contains("achieves a goal"))
        .collect();
    assert_eq!(goal_requests.len(), 6);
    assert!(goal_requests
        .iter()
        .all(|r| user_text(&r.body).contains("<<<UNTRUSTED-")));
    // The report files.
    let dir = series.report_path.expect("a report folder");
    assert!(dir.starts_with(h.results_root()), "{}", dir.display());
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("| Debugger@good | 3 | 3 | 100%"), "{md}");
    let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["status"], "done");
    assert_eq!(json["contestants"][0]["wins"], 3);
    // One self-contained HTML file: charts inline, nothing to run or load.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("Debugger@good"));
    assert!(
        html.contains("The capital of France is Paris."),
        "sample answers"
    );
    assert!(html.contains("default-src 'none'"));
    assert!(!html.contains("<script") && !html.contains(" src="));
}

#[tokio::test]
async fn the_same_key_returns_the_series_and_another_request_with_it_is_refused() {
    let h = harness("names").await;
    let first = h
        .engine
        .create_series(request(&h, 2), Some("nightly".into()))
        .await
        .unwrap();
    let SeriesStart::Created(created) = first else {
        panic!("created")
    };
    let again = h
        .engine
        .create_series(request(&h, 2), Some("nightly".into()))
        .await
        .unwrap();
    assert!(matches!(&again, SeriesStart::Existing(s) if s.id == created.id));
    let err = h
        .engine
        .create_series(request(&h, 5), Some("nightly".into()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err}");
    assert!(err.to_string().contains("different request"), "{err}");
    assert_eq!(h.engine.series_list(10).await.unwrap().len(), 1);
    assert!(
        h.engine.battles(10).await.unwrap().is_empty(),
        "nothing ran"
    );
}

#[tokio::test]
async fn until_decided_stops_once_the_leaders_interval_separates() {
    let h = harness("names").await;
    let mut r = request(&h, 20);
    r.parallel = 1;
    r.until_decided = true;
    r.goal = None;
    let id = start(&h, r).await;
    let series = h.engine.run_series(&id).await.unwrap();
    assert_eq!(series.status, SeriesStatus::Decided);
    // 4 wins of 4 against 0 of 4: [0.51, 1] and [0, 0.49] no longer overlap.
    assert_eq!(series.decided_after, Some(4));
    assert_eq!(h.engine.battles(50).await.unwrap().len(), 4);
    let md = std::fs::read_to_string(series.report_path.unwrap().join("report.md")).unwrap();
    assert!(md.contains("decided after 4 runs"), "{md}");
}

fn price(model: &str) -> Price {
    Price {
        provider: "cloud".into(),
        model: model.into(),
        input_per_mtok: 1.0,
        output_per_mtok: 1.0,
        cached_input_per_mtok: None,
    }
}

#[tokio::test]
async fn a_budget_is_never_passed_and_needs_every_price() {
    let mut h = harness("names").await;
    let mut r = request(&h, 10);
    r.parallel = 1;
    r.goal = None;
    r.budget_usd = Some(0.06);
    // Without prices, a budget cannot be kept: refused, naming the model.
    let err = h.engine.create_series(r.clone(), None).await.unwrap_err();
    assert!(err.to_string().contains("`good` at `cloud`"), "{err}");
    assert!(h.engine.series_list(10).await.unwrap().is_empty());
    // The server says what each call cost (as OpenRouter does): 0.01 a
    // contestant, 0.001 a judge call; a battle is 2 × 0.01 + 4 × 0.001.
    h.cloud.set_model(
        "good",
        ModelScript::text("The capital of France is Paris.").cost(0.01),
    );
    h.cloud
        .set_model("bad", ModelScript::text("It is probably Lyon.").cost(0.01));
    h.cloud.set_model("judge", {
        let mut j = judge("names");
        j.cost = Some(0.001);
        j
    });
    h.reconfigure(|c| c.prices = vec![price("good"), price("bad"), price("judge")]);
    let id = start(&h, r).await;
    let series = h.engine.run_series(&id).await.unwrap();
    assert_eq!(series.status, SeriesStatus::BudgetReached);
    let summary = h.engine.series_summary(&id).await.unwrap();
    let spent = summary.progress.spent_usd.unwrap();
    assert!(
        (spent - 0.048).abs() < 1e-9,
        "two battles of 0.024: {spent}"
    );
    assert!(spent <= 0.06);
    assert_eq!(summary.progress.done, 2);
    assert!((summary.reports[0].cost_usd.unwrap() - 0.02).abs() < 1e-9);
    // Costs are kept with each contestant and analysis.
    let b = &h.engine.battles(1).await.unwrap()[0];
    let c = h.engine.battle(&b.id).await.unwrap().contestants[0].clone();
    assert_eq!(c.benchmark.cost_usd, Some(0.01));
    let a = h.engine.analysis(&b.id).await.unwrap().unwrap();
    assert!((a.cost_usd.unwrap() - 0.004).abs() < 1e-9);
}

#[tokio::test]
async fn an_unreadable_goal_verdict_is_a_judge_error_and_never_a_fail() {
    let h = harness("garbage").await;
    let mut r = request(&h, 1);
    r.analysis = false;
    let id = start(&h, r).await;
    h.engine.run_series(&id).await.unwrap();
    let summary = h.engine.series_summary(&id).await.unwrap();
    for report in &summary.reports {
        assert_eq!(report.goal_checked, 0, "{report:?}");
        assert_eq!(report.goal_errors, 1);
        assert_eq!(report.pass_rate, None);
    }
    assert!(summary.rows[0]
        .goal_error
        .as_deref()
        .unwrap()
        .contains("after one repair"));
    // Asked once, then repaired once, for each contestant.
    assert_eq!(h.cloud.requests_for("judge").len(), 4);
}

#[tokio::test]
async fn a_pass_counts_only_when_the_confirming_judge_agrees() {
    let h = harness("names").await;
    let mut r = request(&h, 1);
    r.analysis = false;
    r.confirm_model = Some("confirm".into());
    let id = start(&h, r).await;
    h.engine.run_series(&id).await.unwrap();
    let summary = h.engine.series_summary(&id).await.unwrap();
    let good = summary
        .rows
        .iter()
        .find(|r| r.contestant == "Debugger@good")
        .unwrap();
    assert_eq!(good.goal_passed, Some(false));
    assert!(good
        .goal_reason
        .as_deref()
        .unwrap()
        .starts_with("not confirmed"));
    // The confirming judge is asked only about passes.
    assert_eq!(h.cloud.requests_for("confirm").len(), 1);
}

#[tokio::test]
async fn a_series_cancelled_from_another_engine_stops_and_leaves_nothing_running() {
    let h = harness("names").await;
    h.cloud.set_model(
        "good",
        ModelScript::text("The capital of France is Paris, as everyone knows.").rate(20.0),
    );
    let mut r = request(&h, 10);
    r.parallel = 1;
    let id = start(&h, r).await;
    let runner = {
        let (engine, id) = (h.engine.clone(), id.clone());
        tokio::spawn(async move { engine.run_series(&id).await })
    };
    // Once the first battle has started, another process cancels.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while h.engine.battles(1).await.unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let other = h.second_engine();
    other.cancel_series(&id).await.unwrap();
    let series = runner.await.unwrap().unwrap();
    assert_eq!(series.status, SeriesStatus::Cancelled);
    let battles = h.engine.battles(50).await.unwrap();
    assert!(battles.len() < 10, "{} battles", battles.len());
    assert!(battles.iter().all(|b| b.status.is_terminal()));
}

/// A model gone since the series started stops every battle: the series
/// ends `error`, saying why, and is not resumed again.
#[tokio::test]
async fn a_series_whose_model_is_gone_ends_in_error() {
    let mut h = harness("names").await;
    let id = start(&h, request(&h, 3)).await;
    // The cloud provider (which serves `good` and `bad`) is removed.
    h.reconfigure(|config| config.providers.retain(|p| p.name != "cloud"));
    let e = h.engine.run_series(&id).await.unwrap_err();
    assert!(e.is_user_error(), "{e}");
    let series = h.engine.series(&id).await.unwrap();
    assert_eq!(series.status, SeriesStatus::Error);
    let why = series.error.unwrap();
    assert!(why.contains("good") || why.contains("bad"), "{why}");
    assert!(series.finished_at.is_some());
    // Terminal: nothing is resumed, and running it again changes nothing.
    let again = h.engine.run_series(&id).await.unwrap();
    assert_eq!(again.status, SeriesStatus::Error);
    assert!(h.engine.resume_series(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_is_created() {
    let h = harness("names").await;
    let mut r = request(&h, 10_001);
    let err = h.engine.create_series(r.clone(), None).await.unwrap_err();
    assert!(
        err.is_user_error() && err.to_string().contains("at most 10000"),
        "{err}"
    );
    r.runs = 1;
    r.contestants.pop();
    let err = h.engine.create_series(r, None).await.unwrap_err();
    assert!(err.to_string().contains("2 to 6 contestants"), "{err}");
    assert!(h.engine.series_list(10).await.unwrap().is_empty());
    assert!(!h.results_root().exists());
}

/// Answers "Lyon" until it is told it has not reached the goal yet.
fn learner() -> ModelScript {
    ModelScript::respond_with(|body| {
        let told = body["messages"].as_array().is_some_and(|m| {
            m.iter()
                .any(|m| m["content"].as_str().unwrap_or("").contains("Not yet"))
        });
        if told {
            "Oh, it is Paris.".into()
        } else {
            "Lyon, surely.".into()
        }
    })
}

#[tokio::test]
async fn a_miss_gets_another_turn_in_the_same_conversation() {
    let h = harness("names").await;
    h.cloud.set_model("learner", learner());
    let mut r = request(&h, 1);
    r.contestants[1] = ContestantSpec::parse("explainer@learner").unwrap();
    r.max_turns = 3;
    r.analysis = false;
    let id = start(&h, r).await;
    h.engine.run_series(&id).await.unwrap();
    let summary = h.engine.series_summary(&id).await.unwrap();
    let row = |who: &str| {
        summary
            .rows
            .iter()
            .find(|r| r.contestant == who)
            .unwrap()
            .clone()
    };
    let (good, learner) = (row("Debugger@good"), row("Explainer@learner"));
    assert_eq!((good.goal_passed, good.turns), (Some(true), 1));
    assert_eq!((learner.goal_passed, learner.turns), (Some(true), 2));
    assert_eq!(summary.reports[1].mean_turns_to_goal, Some(2.0));
    // The second turn saw the conversation: the question, its first answer,
    // then the judge's reason.
    let asked = h.cloud.requests_for("learner");
    assert_eq!(asked.len(), 2);
    let messages = asked[1].body["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(messages[2]["content"], "Lyon, surely.");
    assert_eq!(
        messages[3]["content"],
        "Not yet: does not name Paris. Continue."
    );
    // The turn is a round of the contestant, with its own result file.
    let rounds = h.engine.rounds(&learner.contestant_id).await.unwrap();
    assert_eq!(rounds.len(), 1);
    assert_eq!(rounds[0].number, 2);
    assert_eq!(rounds[0].output, "Oh, it is Paris.");
    assert!(rounds[0].result_path.as_ref().unwrap().is_file());
}

#[tokio::test]
async fn each_prompt_of_a_set_is_judged_against_its_own_goal() {
    let h = harness("names").await;
    // A goal judge that reads the goal: Paris for one prompt, 4 for the other.
    h.cloud.set_model(
        "goals",
        ModelScript::respond_with(|body| {
            let user = user_text(body);
            let goal = user.lines().next().unwrap_or("");
            // The answer, without the fence (whose random tag may hold a 4).
            let answer = user
                .split("answer\n")
                .last()
                .unwrap_or("")
                .split("UNTRUSTED")
                .next()
                .unwrap_or("");
            let pass = if goal.contains("Paris") {
                answer.contains("Paris")
            } else {
                answer.contains('4')
            };
            format!("{{\"pass\": {pass}, \"reason\": \"{goal}\"}}")
        }),
    );
    let mut r = request(&h, 2);
    r.goal = None;
    r.goal_model = Some("goals".into());
    r.analysis = false;
    r.prompts = parse_prompts(
        "{\"prompt\": \"Capital of France?\", \"goal\": \"names Paris\"}\n{\"prompt\": \"What is 2+2?\", \"goal\": \"says 4\"}\n",
    )
    .unwrap();
    let id = start(&h, r).await;
    h.engine.run_series(&id).await.unwrap();
    let summary = h.engine.series_summary(&id).await.unwrap();
    assert_eq!(summary.progress.done, 4, "2 runs × 2 prompts");
    let good: Vec<_> = summary
        .rows
        .iter()
        .filter(|r| r.contestant == "Debugger@good")
        .map(|r| (r.prompt, r.run, r.goal_passed))
        .collect();
    assert_eq!(
        good,
        [
            (0, 1, Some(true)),
            (1, 1, Some(false)),
            (0, 2, Some(true)),
            (1, 2, Some(false))
        ]
    );
    // Each goal judge request carried its own prompt's goal.
    let goals: Vec<String> = h
        .cloud
        .requests_for("goals")
        .iter()
        .map(|r| user_text(&r.body).lines().next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        goals.iter().filter(|g| g.contains("names Paris")).count(),
        4
    );
    assert_eq!(goals.iter().filter(|g| g.contains("says 4")).count(), 4);
}

#[tokio::test]
async fn a_coin_flip_is_never_decided_and_runs_to_the_maximum() {
    let h = harness("names").await;
    // The same answer from both: the judge always names the first shown,
    // so the two runs in opposite orders disagree: no clear winner.
    h.cloud
        .set_model("bad", ModelScript::text("The capital of France is Paris."));
    h.cloud.set_model(
        "judge",
        ModelScript::respond_with(|body| {
            if system_text(body).contains("You summarise one answer") {
                "a summary".into()
            } else {
                r#"{"winner": "A"}"#.into()
            }
        }),
    );
    let mut r = request(&h, 5);
    r.parallel = 1;
    r.until_decided = true;
    r.goal = None;
    let id = start(&h, r).await;
    let series = h.engine.run_series(&id).await.unwrap();
    assert_eq!(series.status, SeriesStatus::Done);
    assert_eq!(series.decided_after, None);
    let summary = h.engine.series_summary(&id).await.unwrap();
    assert_eq!(summary.progress.done, 5);
    assert!(summary.reports.iter().all(|c| c.ties == 5 && c.wins == 0));
}

#[tokio::test]
async fn turns_stop_at_max_turns_when_the_goal_is_never_reached() {
    let h = harness("names").await;
    let mut r = request(&h, 1);
    r.max_turns = 2;
    r.analysis = false;
    let id = start(&h, r).await;
    h.engine.run_series(&id).await.unwrap();
    let summary = h.engine.series_summary(&id).await.unwrap();
    let bad = summary
        .rows
        .iter()
        .find(|r| r.contestant == "Explainer@bad")
        .unwrap();
    assert_eq!((bad.goal_passed, bad.turns), (Some(false), 2));
    assert_eq!(h.cloud.requests_for("bad").len(), 2, "one answer per turn");
    let good = summary
        .rows
        .iter()
        .find(|r| r.contestant == "Debugger@good")
        .unwrap();
    assert_eq!(good.turns, 1, "a pass ends the turns");
    assert_eq!(h.cloud.requests_for("good").len(), 1);
}

/// A Coding series: the check command is the goal (exit 0 passes), no
/// judge is asked, and a miss gets a refine round with the check's output.
#[tokio::test]
async fn a_coding_series_takes_its_check_command_as_the_goal() {
    if !arena_core::agent::sandbox::supported() {
        eprintln!("skipped: this kernel has no Landlock");
        return;
    }
    let mut h = harness("names").await;
    // An agent that writes DONE for m1, and for m2 only once told the check failed.
    let script = r#"if [ "$1" = m1 ] || printf '%s' "$2" | grep -q 'check'; then echo ok > DONE; fi; echo worked"#;
    h.reconfigure(|c| {
        c.backends = vec![arena_core::config::CustomBackend {
            name: "fake".into(),
            command: vec![
                "sh".into(),
                "-c".into(),
                script.into(),
                "fake".into(),
                "{model}".into(),
                "{prompt}".into(),
            ],
        }]
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
    let project = repo();
    let r = SeriesRequest {
        max_turns: 2,
        analysis: false,
        check_command: Some("test -f DONE".into()),
        ..SeriesRequest::new(
            BattleType::Coding,
            project.path().to_path_buf(),
            ["fake@m1", "fake@m2"]
                .iter()
                .map(|c| ContestantSpec::parse(c).unwrap())
                .collect(),
            parse_prompts("Create DONE.\n").unwrap(),
        )
    };
    let id = start(&h, r).await;
    h.engine.run_series(&id).await.unwrap();
    let summary = h.engine.series_summary(&id).await.unwrap();
    let row = |who: &str| {
        summary
            .rows
            .iter()
            .find(|r| r.contestant == who)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (row("fake@m1").goal_passed, row("fake@m1").turns),
        (Some(true), 1)
    );
    assert_eq!(
        (row("fake@m2").goal_passed, row("fake@m2").turns),
        (Some(true), 2)
    );
    assert!(row("fake@m1")
        .goal_reason
        .unwrap()
        .contains("check `test -f DONE` passed"));
    assert!(
        h.cloud.requests_for("judge").is_empty(),
        "no judge for a check"
    );
}

/// The time left comes from the battles' own pace: nothing before the
/// first battle ends, then, while the battles ended stay the same, it only
/// falls as the running one goes on (the old estimate counted up there),
/// and nothing once the series has ended.
#[tokio::test]
async fn time_left_falls_while_a_battle_runs_and_is_gone_at_the_end() {
    let h = harness("names").await;
    h.cloud.set_model(
        "good",
        ModelScript::text("The capital of France is Paris, as everyone knows.").rate(40.0),
    );
    let mut r = request(&h, 3);
    r.parallel = 1;
    let id = start(&h, r).await;
    let runner = {
        let (engine, id) = (h.engine.clone(), id.clone());
        tokio::spawn(async move { engine.run_series(&id).await })
    };
    let mut readings = Vec::new();
    while !runner.is_finished() {
        let p = h.engine.series_progress(&id).await.unwrap();
        readings.push((p.done, p.running, p.time_left_ms));
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    }
    let series = runner.await.unwrap().unwrap();
    assert_eq!(series.status, SeriesStatus::Done);
    assert!(readings
        .iter()
        .filter(|(done, _, _)| *done == 0)
        .all(|(_, _, left)| left.is_none()));
    let during: Vec<u64> = readings
        .iter()
        .filter(|(done, running, _)| *done == 1 && *running == 1)
        .map(|(_, _, left)| left.expect("an estimate once a battle has ended"))
        .collect();
    assert!(
        during.len() >= 3,
        "readings while the second battle ran: {readings:?}"
    );
    assert!(
        during.windows(2).all(|w| w[1] <= w[0]),
        "it rose while the second battle ran: {during:?}"
    );
    assert!(during[0] > 0);
    let p = h.engine.series_progress(&id).await.unwrap();
    assert_eq!(p.time_left_ms, None);
}
