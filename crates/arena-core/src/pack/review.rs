//! Reviewing the instructions Arena wrote for mined tasks (issue 41,
//! point 5): the tasks waiting for a person, and a person's decision on
//! one — approve it, drop it with a reason, or edit its instruction (the
//! edit is audited like a written one: a text that gives the fix away is
//! refused, saying why, and nothing is written).

use std::path::Path;

pub use arena_domain::instruction::ReviewState;

use super::instruct::{replace, review_state, set_state};
use super::{Pack, PackError, Solution, Task, INSTRUCTION_FILE};

/// A task whose instruction Arena wrote, as a reviewer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewItem {
    pub id: String,
    pub state: ReviewState,
    /// Why it was dropped, when it was.
    pub reason: Option<String>,
    pub instruction: String,
    /// What the audit finds in the instruction now (none for one the
    /// writer's audit passed).
    pub leaks: Vec<String>,
}

/// What a reviewer decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Approve,
    /// With the reviewer's reason (else "dropped in review").
    Drop(Option<String>),
    /// The instruction as the reviewer rewrote it; approved when its audit
    /// finds nothing.
    Edit(String),
}

fn leaks_of(task: &Task, text: &str) -> Vec<String> {
    let gold = match &task.solution {
        Solution::GoldPatch(p) => p.as_str(),
        _ => "",
    };
    arena_domain::instruction::audit(text, gold, task.test_patch.as_deref().unwrap_or(""))
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn item(task: &Task) -> Option<ReviewItem> {
    let (state, reason) = review_state(task)?;
    Some(ReviewItem {
        id: task.id.as_str().to_string(),
        state,
        reason,
        instruction: task.instruction.clone(),
        leaks: leaks_of(task, &task.instruction),
    })
}

/// The tasks of `pack` whose instruction Arena wrote, pending ones first.
pub fn reviewable(pack: &Pack) -> Vec<ReviewItem> {
    let mut items: Vec<ReviewItem> = pack.tasks.iter().filter_map(item).collect();
    items.sort_by_key(|i| i.state != ReviewState::Pending);
    items
}

/// Applies `decision` to the task `id` of the pack at `dir`; returns the
/// task as it is now.
pub fn decide(dir: &Path, id: &str, decision: Decision) -> Result<ReviewItem, PackError> {
    let pack = Pack::load(dir)?;
    let task = pack
        .task(id)
        .ok_or_else(|| PackError::Usage(format!("the pack has no task `{id}`")))?;
    if review_state(task).is_none() {
        return Err(PackError::Usage(format!(
            "task `{id}`'s instruction was not written by Arena: there is nothing to review"
        )));
    }
    match decision {
        Decision::Approve => set_state(task, ReviewState::Approved, None, None)?,
        Decision::Drop(reason) => {
            let reason = reason
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "dropped in review".into());
            set_state(task, ReviewState::Dropped, Some(&reason), None)?;
        }
        Decision::Edit(text) => {
            let text = text.trim();
            if text.is_empty() {
                return Err(PackError::Usage("the instruction is empty".into()));
            }
            let leaks = leaks_of(task, text);
            if !leaks.is_empty() {
                return Err(PackError::Usage(format!(
                    "the instruction gives the fix away: {}",
                    leaks.join("; ")
                )));
            }
            replace(
                &task.dir.join(INSTRUCTION_FILE),
                format!("{text}\n").as_bytes(),
            )?;
            set_state(task, ReviewState::Approved, None, None)?;
        }
    }
    let pack = Pack::load(dir)?;
    pack.task(id)
        .and_then(item)
        .ok_or_else(|| PackError::Usage(format!("task `{id}` is gone from the pack")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the sample pack whose first task waits for review.
    fn pending_pack() -> (tempfile::TempDir, std::path::PathBuf, String) {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/sample");
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = tmp.path().join("pack");
        super::super::read::copy_folder(&sample, &dir).expect("copy the sample pack");
        let pack = Pack::load(&dir).expect("the copy loads");
        let task = &pack.tasks[0];
        set_state(task, ReviewState::Pending, None, Some("local@writer")).expect("pending");
        (tmp, dir, task.id.as_str().to_string())
    }

    #[test]
    fn a_pending_task_is_listed_and_an_edit_that_gives_the_fix_away_is_refused() {
        let (_tmp, dir, id) = pending_pack();
        let pack = Pack::load(&dir).unwrap();
        let items = reviewable(&pack);
        assert_eq!(items.len(), 1, "only the task Arena wrote: {items:?}");
        assert_eq!(items[0].id, id);
        assert_eq!(items[0].state, ReviewState::Pending);
        let task = pack.task(&id).unwrap();
        let Solution::GoldPatch(gold) = &task.solution else {
            panic!("the sample's tasks have gold patches")
        };
        let line = gold
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .map(|l| l[1..].trim())
            .find(|l| l.len() >= 20)
            .expect("a long added line");
        let before = std::fs::read_to_string(task.dir.join(INSTRUCTION_FILE)).unwrap();
        let err = decide(&dir, &id, Decision::Edit(format!("Do this:\n{line}\n"))).unwrap_err();
        assert!(err.to_string().contains("gives the fix away"), "{err}");
        let after = std::fs::read_to_string(task.dir.join(INSTRUCTION_FILE)).unwrap();
        assert_eq!(before, after, "a refused edit writes nothing");
        let still = reviewable(&Pack::load(&dir).unwrap());
        assert_eq!(still[0].state, ReviewState::Pending);
    }

    #[test]
    fn an_edit_is_written_and_approved_and_a_drop_keeps_its_reason() {
        let (_tmp, dir, id) = pending_pack();
        let done = decide(
            &dir,
            &id,
            Decision::Edit("Make the function handle the empty case as described.".into()),
        )
        .expect("a clean edit");
        assert_eq!(done.state, ReviewState::Approved);
        assert_eq!(
            done.instruction.trim(),
            "Make the function handle the empty case as described."
        );
        let dropped = decide(&dir, &id, Decision::Drop(Some("too vague".into()))).unwrap();
        assert_eq!(dropped.state, ReviewState::Dropped);
        assert_eq!(dropped.reason.as_deref(), Some("too vague"));
        let other = Pack::load(&dir).unwrap().tasks[1].id.as_str().to_string();
        let err = decide(&dir, &other, Decision::Approve).unwrap_err();
        assert!(err.to_string().contains("nothing to review"), "{err}");
    }
}
