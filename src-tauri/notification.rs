//! The OS notification when a battle ends. Sent from Rust through the
//! notification plugin; the window is granted none of its commands.

use arena_core::blind::BattleView;
use arena_core::BattleStatus;
use tauri::{AppHandle, Runtime};
use tauri_plugin_notification::NotificationExt;

/// The notification's title.
pub const TITLE: &str = "Battle finished";
/// How much of the prompt's first line the body shows.
const PROMPT_CHARS: usize = 80;

/// Tells the user that `battle` ended, and how. A notification that cannot
/// be shown (no notification service, as on a CI machine) is logged and
/// otherwise ignored.
pub fn battle_finished<R: Runtime>(app: &AppHandle<R>, view: &BattleView) {
    let battle = &view.battle;
    let shown = app
        .notification()
        .builder()
        .title(TITLE)
        .body(body(view))
        .show();
    if let Err(err) = shown {
        tracing::warn!(battle = %battle.id, %err, "could not show the battle-finished notification");
    }
}

/// The prompt's first line (shortened) and the outcome: the winner when
/// there is one, else how the battle ended.
pub fn body(view: &BattleView) -> String {
    let battle = &view.battle;
    let first_line = battle
        .prompt
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let prompt = if first_line.chars().count() > PROMPT_CHARS {
        let cut: String = first_line.chars().take(PROMPT_CHARS - 1).collect();
        format!("{}…", cut.trim_end())
    } else {
        first_line.to_string()
    };
    // A blind battle names nobody, not even its judged winner (the view
    // has none while masked).
    let winner = battle
        .winner
        .as_ref()
        .and_then(|w| battle.contestants.iter().find(|c| c.id == w.contestant_id));
    let outcome = match (battle.status, winner) {
        (BattleStatus::Done, _) if view.masked => {
            "Done; blind — your vote reveals who is who".to_string()
        }
        (_, Some(c)) => format!("Winner: {} · {}", c.identity, c.model),
        (BattleStatus::Done, None) => "Done; no winner chosen yet".to_string(),
        (BattleStatus::Error, None) => "Ended with errors".to_string(),
        (BattleStatus::Cancelled, None) => "Cancelled".to_string(),
        (BattleStatus::Running, None) => "Still running".to_string(),
    };
    format!("{prompt}\n{outcome}")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use arena_core::battle::{Benchmark, RunSpec, Winner, WinnerSource};
    use arena_core::{Battle, BattleType, Contestant, ContestantStatus, Lane};
    use chrono::Utc;

    use super::*;

    fn battle(prompt: &str, status: BattleStatus, winner: Option<&str>) -> Battle {
        let contestant = |id: &str, identity: &str| Contestant {
            id: id.into(),
            battle_id: "b".into(),
            position: 0,
            identity: identity.into(),
            model: "qwen3-8b".into(),
            provider: "local".into(),
            lane: Lane::Local,
            status: ContestantStatus::Done,
            error: None,
            attempts: 1,
            started_at: None,
            finished_at: None,
            benchmark: Benchmark::default(),
            output: None,
            reasoning: None,
            truncated: false,
            result_path: None,
            run: RunSpec::default(),
            worktree: None,
            diff: None,
            check: None,
            waiting: None,
            label: None,
        };
        Battle {
            id: "b".into(),
            battle_type: BattleType::Qa,
            status,
            prompt: prompt.into(),
            project: PathBuf::from("/p"),
            results_path: PathBuf::from("/p/Arena/b"),
            created_at: Utc::now(),
            finished_at: None,
            winner: winner.map(|id| Winner {
                contestant_id: id.into(),
                source: WinnerSource::Analysis,
            }),
            contestants: vec![contestant("c1", "Debugger"), contestant("c2", "Explainer")],
            base_commit: None,
            check_command: None,
            series_id: None,
            blind: false,
            revealed_at: None,
            user_verdict: None,
            tags: Vec::new(),
            judging: None,
            machine: None,
            user_name: None,
            voted_by: None,
            source: None,
        }
    }

    #[test]
    fn the_body_names_the_prompt_and_the_winner() {
        let b = battle(
            "\n  Why is the sky blue?\nExplain.",
            BattleStatus::Done,
            Some("c2"),
        );
        assert_eq!(
            body(&BattleView::of(&b)),
            "Why is the sky blue?\nWinner: Explainer · qwen3-8b"
        );
    }

    #[test]
    fn a_blind_battle_names_nobody_until_the_vote() {
        let mut b = battle("Sum 2+2", BattleStatus::Done, Some("c2"));
        b.blind = true;
        assert_eq!(
            body(&BattleView::of(&b)),
            "Sum 2+2\nDone; blind — your vote reveals who is who"
        );
        b.status = BattleStatus::Error;
        assert_eq!(body(&BattleView::of(&b)), "Sum 2+2\nEnded with errors");
        b.revealed_at = Some(Utc::now());
        assert!(body(&BattleView::of(&b)).ends_with("Winner: Explainer · qwen3-8b"));
    }

    #[test]
    fn without_a_winner_the_body_says_how_it_ended() {
        let cases = [
            (BattleStatus::Done, "Done; no winner chosen yet"),
            (BattleStatus::Error, "Ended with errors"),
            (BattleStatus::Cancelled, "Cancelled"),
        ];
        for (status, outcome) in cases {
            assert_eq!(
                body(&BattleView::of(&battle("Fix it", status, None))),
                format!("Fix it\n{outcome}")
            );
        }
    }

    #[test]
    fn a_long_first_line_is_shortened() {
        let long = "word ".repeat(40);
        let text = body(&BattleView::of(&battle(&long, BattleStatus::Done, None)));
        let first = text.lines().next().expect("a first line");
        assert!(first.ends_with('…'), "{first}");
        assert!(first.chars().count() <= PROMPT_CHARS, "{first}");
    }
}
