//! Later rounds of a finished contestant: another turn of a Q&A
//! conversation, or a Coding agent refining its work in its worktree.

use crate::battle::ContestantStatus;
use crate::error::{Error, Result};

use super::{answer, coding, contestant_of, drive, Engine};

impl Engine {
    /// Continues a finished contestant with the user's feedback, as a new
    /// round with its own output: a Coding contestant in its own worktree
    /// (with its diff and check), a Q&A contestant in the same conversation
    /// (its question, its answers and the feedback so far, then this one).
    pub async fn refine(
        &self,
        battle_id: &str,
        contestant_id: &str,
        feedback: &str,
    ) -> Result<crate::battle::Round> {
        let feedback = feedback.trim();
        if feedback.is_empty() {
            return Err(crate::error::Invalid::Other(
                "the feedback is empty; say what to change".into(),
            )
            .into());
        }
        let battle = self.battle(battle_id).await?;
        if !battle.status.is_terminal() {
            return Err(Error::Conflict(format!(
                "battle {battle_id} is still running; refine a contestant when it has finished"
            )));
        }
        let c = contestant_of(&battle, contestant_id)?.clone();
        let coding = battle.battle_type.has_worktrees();
        if coding && !c.worktree.as_ref().is_some_and(|p| p.exists()) {
            return Err(Error::Conflict(format!(
                "contestant {contestant_id} has no worktree any more (pruned?); it cannot be refined"
            )));
        }
        if !coding && c.status != ContestantStatus::Done {
            return Err(Error::Conflict(format!(
                "contestant {contestant_id} has no answer to continue from ({})",
                c.status
            )));
        }
        let held = drive::hold(self, battle_id).await?;
        let rounds = self.rounds(contestant_id).await?;
        let round = crate::battle::Round {
            id: uuid::Uuid::now_v7().to_string(),
            contestant_id: c.id.clone(),
            number: rounds.iter().map(|r| r.number).max().unwrap_or(1) + 1,
            feedback: feedback.to_string(),
            status: None,
            output: String::new(),
            error: None,
            diff: None,
            check: None,
            duration_ms: None,
            result_path: None,
            created_at: self.now(),
            finished_at: None,
            cost_usd: None,
        };
        let (bid, r) = (battle.id.clone(), round.clone());
        let me = self.inner.me.clone();
        self.db(move |s| {
            s.transact(|tx| {
                tx.insert_round(&bid, &r)?;
                tx.set_owner(crate::store::Work::Round, &r.id, &me.host, me.pid)
            })
        })
        .await?;
        let token = held.live.contestant_token(&c.id);
        let watch = self.watch_work(crate::store::Work::Round, &round.id, token.clone());
        let done = if coding {
            let previous = rounds
                .iter()
                .rev()
                .find(|r| !r.output.trim().is_empty())
                .map(|r| r.output.clone())
                .or_else(|| c.output.clone())
                .unwrap_or_default();
            coding::refine(self, &battle, &c, round, &previous, &token).await
        } else {
            let history = answer::conversation(&battle, &c, &rounds);
            answer::continue_turn(self, &battle, &c, round, history, &token).await
        };
        drop(watch);
        drop(held);
        done
    }

    /// A contestant's refinement rounds (2, 3, …).
    pub async fn rounds(&self, contestant_id: &str) -> Result<Vec<crate::battle::Round>> {
        let id = contestant_id.to_string();
        self.db(move |s| s.rounds(&id)).await
    }
}
