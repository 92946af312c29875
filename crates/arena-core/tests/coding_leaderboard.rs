//! Check outcomes feed the Coding leaderboard (issue 42, item 4): a
//! contestant whose check passed beats one whose check failed unless the
//! user chose otherwise; `[coding] check_decides = false` turns it off.
//! Two scripted agents (a `[[backend]]` script, one per seat) in real
//! jails, five real Coding battles, the check run on each change.

mod common;

use arena_core::battle::BattleType;
use arena_core::check_outcome::CheckOutcome;
use arena_core::config::CustomBackend;
use arena_core::leaderboard::{Source, Standing};
use arena_core::LeaderboardQuery;
use arena_testserver::ModelScript;
use common::*;

/// The user's check: `calc.add(2, 2) == 4`.
const CHECK: &str = r#"/usr/bin/python3 -c "from calc import add; assert add(2, 2) == 4""#;

/// Seat `m1` writes a correct `calc.py`, seat `m2` a wrong one.
const SCRIPT: &str = "set -e\ncase \"$PWD\" in\n*m1*) printf 'def add(a, b):\\n    return a + b\\n' > calc.py ;;\n*) printf 'def add(a, b):\\n    return a - b\\n' > calc.py ;;\nesac\necho done\n";

fn configure(h: &mut Harness, check_decides: Option<bool>) {
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command: vec![
                "bash".into(),
                "-c".into(),
                SCRIPT.into(),
                "agent".into(),
                "{prompt}".into(),
            ],
        }];
        config.coding.check_decides = check_decides;
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
}

fn standing<'a>(board: &'a [Standing], model: &str) -> &'a Standing {
    board
        .iter()
        .find(|s| s.model == model)
        .unwrap_or_else(|| panic!("no standing for {model}: {board:?}"))
}

async fn five_battles(h: &Harness) -> Vec<Standing> {
    let project = repo();
    for _ in 0..5 {
        let b = run_coding(h, project.path(), &["fake@m1", "fake@m2"], Some(CHECK)).await;
        let outcomes: Vec<CheckOutcome> = b
            .contestants
            .iter()
            .map(|c| CheckOutcome::of(c.check.as_ref()))
            .collect();
        assert_eq!(
            outcomes,
            vec![CheckOutcome::Passed, CheckOutcome::Failed],
            "{:?}",
            b.contestants
                .iter()
                .map(|c| (&c.error, &c.check))
                .collect::<Vec<_>>()
        );
    }
    h.engine
        .leaderboard(LeaderboardQuery {
            battle_type: Some(BattleType::Coding),
            source: Source::Both,
            ..Default::default()
        })
        .await
        .expect("leaderboard")
        .standings
}

/// Acceptance: over five battles, with no judge and no vote, the passing
/// contestant wins each battle on its check and ranks above the failing
/// one; their ratings and intervals differ.
#[tokio::test]
async fn a_passing_and_a_failing_contestant_rank_apart_on_the_coding_leaderboard() {
    let mut h = Harness::new().await;
    configure(&mut h, None);
    let board = five_battles(&h).await;
    let (pass, fail) = (standing(&board, "m1"), standing(&board, "m2"));
    assert_eq!((pass.wins, pass.losses), (5, 0), "{pass:?}");
    assert_eq!((fail.wins, fail.losses), (0, 5), "{fail:?}");
    assert!(pass.rank < fail.rank, "{board:?}");
    assert!(pass.rating > fail.rating + 100.0, "{board:?}");
    assert!(pass.rating_low > fail.rating_low, "{board:?}");
    assert!(pass.rating_high > fail.rating_high, "{board:?}");
}

/// `[coding] check_decides = false`: the checks say nothing to the
/// leaderboard; with no verdict the two stand level.
#[tokio::test]
async fn with_check_decides_off_the_check_does_not_rank() {
    let mut h = Harness::new().await;
    configure(&mut h, Some(false));
    let board = five_battles(&h).await;
    let (pass, fail) = (standing(&board, "m1"), standing(&board, "m2"));
    assert_eq!((pass.wins, fail.wins), (0, 0), "{board:?}");
    assert_eq!(pass.rating, fail.rating, "{board:?}");
}

/// The user's explicit pick still wins: a battle where the user chose the
/// failing contestant counts as its win.
#[tokio::test]
async fn the_users_pick_beats_the_check() {
    let mut h = Harness::new().await;
    configure(&mut h, None);
    let project = repo();
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], Some(CHECK)).await;
    let failing = b.contestants[1].id.clone();
    h.engine
        .set_winner(&b.id, Some(&failing))
        .await
        .expect("the user's pick");
    let board = h
        .engine
        .leaderboard(LeaderboardQuery {
            battle_type: Some(BattleType::Coding),
            source: Source::Both,
            ..Default::default()
        })
        .await
        .expect("leaderboard")
        .standings;
    assert_eq!(standing(&board, "m2").wins, 1, "{board:?}");
    assert_eq!(standing(&board, "m1").wins, 0, "{board:?}");
}

/// A judge that prefers whichever answer's check failed, in both orders.
fn contrary_judge() -> ModelScript {
    ModelScript::respond_with(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let system = messages
            .first()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        if system.contains("You summarise one answer") {
            return "Summary: it made a change.".into();
        }
        let user = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let (mut label, mut pick) = ("A", "A");
        for line in user.lines() {
            if let Some(rest) = line.strip_prefix("Answer ") {
                label = &rest[..1];
            }
            if line.starts_with("Evidence:") && line.contains("` failed") {
                pick = label;
            }
        }
        let other = if pick == "A" { "B" } else { "A" };
        format!(
            "{{\"winner\": \"{pick}\", \"ranking\": [\"{pick}\", \"{other}\"], \"reasons\": {{\"{pick}\": \"bolder\", \"{other}\": \"timid\"}}}}"
        )
    })
}

async fn judged_battle(
    check_decides: Option<bool>,
) -> (Harness, arena_core::Battle, arena_core::analysis::Analysis) {
    let mut h = Harness::new().await;
    configure(&mut h, check_decides);
    h.cloud.set_model("judge", contrary_judge());
    let project = repo();
    let b = run_coding(&h, project.path(), &["fake@m1", "fake@m2"], Some(CHECK)).await;
    let a = h
        .engine
        .analyze(&b.id, Some("judge"))
        .await
        .expect("analysis");
    (h, b, a)
}

/// The judge is told each check outcome; when it picks the contestant
/// whose check failed over the one whose check passed, the passed one
/// wins and the analysis says why. The leaderboard follows.
#[tokio::test]
async fn the_judges_pick_of_a_failed_check_gives_way_to_a_passed_one() {
    let (h, b, a) = judged_battle(None).await;
    let (pass, fail) = (&b.contestants[0].id, &b.contestants[1].id);
    let prompts: Vec<String> = h
        .cloud
        .requests_for("judge")
        .into_iter()
        .map(|r| r.body.to_string())
        .filter(|t| t.contains("Evidence:"))
        .collect();
    assert_eq!(prompts.len(), 2, "two judge runs");
    for p in &prompts {
        assert!(p.contains("passed") && p.contains("` failed"), "{p}");
    }
    // Both runs picked the failed one; the check rule overrides it.
    assert!(a
        .judge_runs
        .iter()
        .all(|r| r.verdict.as_ref().map(|v| &v.winner) == Some(fail)));
    assert_eq!(a.winner.as_ref(), Some(pass), "{a:?}");
    assert_eq!(a.ranking.first(), Some(pass));
    assert!(
        a.reasons[pass].contains("whose check failed") && a.reasons[pass].contains("check_decides"),
        "{:?}",
        a.reasons
    );
    let battle = h.engine.battle(&b.id).await.expect("battle");
    assert_eq!(battle.winner.map(|w| w.contestant_id).as_ref(), Some(pass));
    let board = h
        .engine
        .leaderboard(LeaderboardQuery {
            battle_type: Some(BattleType::Coding),
            source: Source::Judge,
            ..Default::default()
        })
        .await
        .expect("leaderboard")
        .standings;
    assert_eq!(standing(&board, "m1").wins, 1, "{board:?}");
}

/// With `check_decides = false` the judge's pick stands.
#[tokio::test]
async fn with_check_decides_off_the_judges_pick_stands() {
    let (_h, b, a) = judged_battle(Some(false)).await;
    assert_eq!(a.winner.as_ref(), Some(&b.contestants[1].id), "{a:?}");
}
