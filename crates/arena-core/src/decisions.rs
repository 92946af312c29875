//! Pure decisions: which contestant may start, whether a status change is
//! allowed, when a battle is over, what to do after a restart, how long to
//! wait before a retry, and whether a battle's lease can be taken. No I/O
//! here; the runner in `engine` applies these.

use std::time::Duration;

use crate::battle::{BattleStatus, ContestantStatus, Lane};

/// The scheduling view of one contestant, in battle order.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot<'a> {
    pub id: &'a str,
    pub lane: Lane,
    pub status: ContestantStatus,
}

/// Whether a contestant may move from `from` to `to`. Terminal statuses are
/// final; `running → queued` is the resume path that re-runs lost work.
pub fn can_transition(from: ContestantStatus, to: ContestantStatus) -> bool {
    use ContestantStatus::*;
    matches!(
        (from, to),
        (Queued, Running)
            | (Queued, Cancelled)
            | (Queued, Error)
            | (Running, Done)
            | (Running, Error)
            | (Running, Cancelled)
            | (Running, Queued)
    )
}

/// The next local contestant to run: none while one is running, else the
/// first queued one in battle order.
pub fn next_local<'a>(slots: &[Slot<'a>]) -> Option<&'a str> {
    let busy = slots
        .iter()
        .any(|s| s.lane == Lane::Local && s.status == ContestantStatus::Running);
    if busy {
        return None;
    }
    slots
        .iter()
        .find(|s| s.lane == Lane::Local && s.status == ContestantStatus::Queued)
        .map(|s| s.id)
}

/// Every contestant that should start now: all queued cloud contestants and
/// at most one local one.
pub fn to_start<'a>(slots: &[Slot<'a>]) -> Vec<&'a str> {
    let mut ids: Vec<&str> = slots
        .iter()
        .filter(|s| s.lane == Lane::Cloud && s.status == ContestantStatus::Queued)
        .map(|s| s.id)
        .collect();
    ids.extend(next_local(slots));
    ids
}

/// The battle's final status once every contestant is terminal, else `None`.
pub fn battle_outcome(
    statuses: &[ContestantStatus],
    cancel_requested: bool,
) -> Option<BattleStatus> {
    if statuses.iter().any(|s| !s.is_terminal()) {
        return None;
    }
    let any_done = statuses.contains(&ContestantStatus::Done);
    let all_cancelled = statuses.iter().all(|s| *s == ContestantStatus::Cancelled);
    Some(
        if cancel_requested || (all_cancelled && !statuses.is_empty()) {
            BattleStatus::Cancelled
        } else if any_done {
            BattleStatus::Done
        } else {
            BattleStatus::Error
        },
    )
}

/// What resume does with one contestant of a battle left running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeAction {
    /// Nothing to do: finished and written, or still waiting its turn.
    Keep,
    /// Finished, but its result file was not written before the stop.
    WriteResult,
    /// It was running when the process died: its output is lost, run it again.
    Rerun,
    /// It was interrupted too often; mark it failed with this message.
    GiveUp(String),
}

/// Decides the resume action for one contestant. `attempts` counts the runs
/// already started; `max_attempts` caps how often an interrupted contestant
/// is started again.
pub fn reconcile(
    status: ContestantStatus,
    attempts: u32,
    result_written: bool,
    max_attempts: u32,
) -> ResumeAction {
    match status {
        ContestantStatus::Done if !result_written => ResumeAction::WriteResult,
        ContestantStatus::Done
        | ContestantStatus::Error
        | ContestantStatus::Cancelled
        | ContestantStatus::Queued => ResumeAction::Keep,
        ContestantStatus::Running if attempts >= max_attempts => ResumeAction::GiveUp(format!(
            "interrupted {attempts} times (the process running it stopped); not retried again"
        )),
        ContestantStatus::Running => ResumeAction::Rerun,
    }
}

/// Exponential backoff with jitter. `attempt` is the attempt that just
/// failed (1-based); `jitter` is a random number in `[0, 1)`. The delay is
/// drawn from the upper half of the exponential step so retries spread out
/// without collapsing to zero. A server's `Retry-After` is a floor.
pub fn backoff_delay(
    attempt: u32,
    base: Duration,
    max: Duration,
    jitter: f64,
    retry_after: Option<Duration>,
) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(20));
    let step = base.saturating_mul(factor).min(max);
    let jitter = jitter.clamp(0.0, 1.0);
    let delay = step.mul_f64(0.5 + 0.5 * jitter);
    match retry_after {
        Some(floor) => delay.max(floor),
        None => delay,
    }
}

/// A battle's lease as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub owner: String,
    pub host: String,
    pub pid: u32,
    pub expires_at_ms: i64,
}

/// Whether `me` may take (or keep) the lease. A lease is free when nobody
/// holds it, we hold it, it has expired, or its holder was a process on this
/// host that is no longer alive.
pub fn lease_is_free(
    lease: Option<&Lease>,
    me: &str,
    my_host: &str,
    now_ms: i64,
    pid_alive: impl Fn(u32) -> bool,
) -> bool {
    match lease {
        None => true,
        Some(l) if l.owner == me => true,
        Some(l) if l.expires_at_ms <= now_ms => true,
        Some(l) => l.host == my_host && !pid_alive(l.pid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContestantStatus::*;
    use Lane::*;

    fn slots<'a>(v: &'a [(&'a str, Lane, ContestantStatus)]) -> Vec<Slot<'a>> {
        v.iter()
            .map(|(id, lane, status)| Slot {
                id,
                lane: *lane,
                status: *status,
            })
            .collect()
    }

    #[test]
    fn terminal_statuses_are_final() {
        for from in [Done, Error, Cancelled] {
            for to in ContestantStatus::ALL {
                assert!(!can_transition(from, *to), "{from} -> {to}");
            }
        }
        assert!(can_transition(Queued, Running));
        assert!(can_transition(Running, Queued));
        assert!(!can_transition(Queued, Done));
        assert!(!can_transition(Running, Running));
    }

    #[test]
    fn start_all_cloud_and_one_local() {
        let s = [
            ("l1", Local, Queued),
            ("c1", Cloud, Queued),
            ("l2", Local, Queued),
            ("c2", Cloud, Queued),
        ];
        assert_eq!(to_start(&slots(&s)), vec!["c1", "c2", "l1"]);
    }

    #[test]
    fn local_lane_waits_for_the_running_one() {
        let s = [("l1", Local, Running), ("l2", Local, Queued)];
        assert_eq!(next_local(&slots(&s)), None);
        let s = [
            ("l1", Local, Error),
            ("l2", Local, Queued),
            ("l3", Local, Queued),
        ];
        assert_eq!(next_local(&slots(&s)), Some("l2"));
        let s = [("l1", Local, Done), ("l2", Local, Cancelled)];
        assert_eq!(next_local(&slots(&s)), None);
        let s = [("c1", Cloud, Running), ("l1", Local, Queued)];
        assert_eq!(to_start(&slots(&s)), vec!["l1"]);
    }

    #[test]
    fn outcome_waits_for_every_contestant() {
        assert_eq!(battle_outcome(&[Done, Running], false), None);
        assert_eq!(
            battle_outcome(&[Done, Error], false),
            Some(BattleStatus::Done)
        );
        assert_eq!(
            battle_outcome(&[Error, Error], false),
            Some(BattleStatus::Error)
        );
        assert_eq!(
            battle_outcome(&[Cancelled, Cancelled], false),
            Some(BattleStatus::Cancelled)
        );
        assert_eq!(
            battle_outcome(&[Done, Cancelled], true),
            Some(BattleStatus::Cancelled)
        );
        assert_eq!(
            battle_outcome(&[Error, Cancelled], false),
            Some(BattleStatus::Error)
        );
    }

    #[test]
    fn resume_keeps_finished_work_and_reruns_lost_work() {
        assert_eq!(reconcile(Done, 1, true, 3), ResumeAction::Keep);
        assert_eq!(reconcile(Done, 1, false, 3), ResumeAction::WriteResult);
        assert_eq!(reconcile(Error, 1, false, 3), ResumeAction::Keep);
        assert_eq!(reconcile(Cancelled, 0, false, 3), ResumeAction::Keep);
        assert_eq!(reconcile(Queued, 0, false, 3), ResumeAction::Keep);
        assert_eq!(reconcile(Running, 1, false, 3), ResumeAction::Rerun);
        assert!(matches!(
            reconcile(Running, 3, false, 3),
            ResumeAction::GiveUp(_)
        ));
    }

    #[test]
    fn backoff_grows_caps_and_honours_retry_after() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(2);
        assert_eq!(
            backoff_delay(1, base, max, 0.0, None),
            Duration::from_millis(50)
        );
        assert_eq!(
            backoff_delay(1, base, max, 1.0, None),
            Duration::from_millis(100)
        );
        assert_eq!(
            backoff_delay(3, base, max, 1.0, None),
            Duration::from_millis(400)
        );
        assert_eq!(backoff_delay(30, base, max, 1.0, None), max);
        let d = backoff_delay(1, base, max, 0.5, Some(Duration::from_secs(3)));
        assert_eq!(d, Duration::from_secs(3));
        for j in [0.0, 0.3, 0.99] {
            let d = backoff_delay(2, base, max, j, None);
            assert!(d >= Duration::from_millis(100) && d <= Duration::from_millis(200));
        }
    }

    #[test]
    fn lease_rules() {
        let lease = Lease {
            owner: "a".into(),
            host: "h".into(),
            pid: 7,
            expires_at_ms: 1_000,
        };
        let alive = |_| true;
        let dead = |_| false;
        assert!(lease_is_free(None, "b", "h", 0, alive));
        assert!(lease_is_free(Some(&lease), "a", "h", 0, alive));
        assert!(!lease_is_free(Some(&lease), "b", "h", 999, alive));
        assert!(lease_is_free(Some(&lease), "b", "h", 1_000, alive));
        assert!(lease_is_free(Some(&lease), "b", "h", 0, dead));
        assert!(!lease_is_free(Some(&lease), "b", "other", 0, dead));
    }
}
