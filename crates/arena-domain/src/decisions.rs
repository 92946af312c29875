//! Pure decisions: whose turn it is on a lane, whether a status change is
//! allowed, when a battle is over, what to do after a restart, how long to
//! wait before a retry, and whether a battle's lease can be taken. No I/O
//! here; the runner in `engine` applies these.

use std::time::Duration;

use crate::battle::{BattleStatus, ContestantStatus, Lane};
use crate::config::ProviderConfig;

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

/// A lane: one model server as a shared resource of the whole machine —
/// or of the whole team, on a team database. Every local server is its own
/// lane with one slot, however many providers point at it; a cloud
/// provider is a lane with `max_concurrency` slots and an optional start
/// rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneSpec {
    /// Identifies the lane across processes (and machines):
    /// `local:http://127.0.0.1:8080`, `local:server:gpu-box`, `cloud:openai`.
    pub key: String,
    /// How waiting messages name it: `llama-swap (127.0.0.1:8080)`, `openai`.
    pub label: String,
    pub slots: u32,
    pub requests_per_minute: Option<u32>,
    pub local: bool,
    /// Shared by a team's machines: holders are named with their machine.
    pub team: bool,
}

/// Whether `host` is this machine's own (a loopback address).
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The lane a provider's requests run in. `team` is this machine's name
/// when the lanes are a team's (a team database), else `None`.
///
/// On a team, a loopback address names a different server on each
/// machine, so its lane is the machine's own (`…@laptop`); any other host
/// is the same server for everyone; `server = "gpu-box"` names the server
/// outright, whatever address reaches it.
pub fn lane_of(p: &ProviderConfig, team: Option<&str>) -> LaneSpec {
    match p.lane {
        Lane::Local => {
            let (mut key, mut address) = match url::Url::parse(&p.base_url) {
                Ok(url) => {
                    let host = match url.host_str().unwrap_or("").to_ascii_lowercase() {
                        h if h == "localhost" => "127.0.0.1".to_string(),
                        h => h,
                    };
                    let port = url.port_or_known_default().unwrap_or(0);
                    (
                        format!("local:{}://{host}:{port}", url.scheme()),
                        format!("{host}:{port}"),
                    )
                }
                // Config validation refuses such URLs; keep them apart anyway.
                Err(_) => (format!("local:{}", p.base_url), p.base_url.clone()),
            };
            if let Some(server) = &p.server {
                key = format!("local:server:{server}");
                address = format!("server {server}");
            } else if let Some(machine) = team {
                let host = url::Url::parse(&p.base_url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
                if host.as_deref().is_some_and(is_loopback) {
                    key = format!("{key}@{machine}");
                    address = format!("{address} on {machine}");
                }
            }
            LaneSpec {
                key,
                label: format!("{} ({address})", p.name),
                slots: 1,
                requests_per_minute: None,
                local: true,
                team: team.is_some(),
            }
        }
        Lane::Cloud => LaneSpec {
            key: format!("cloud:{}", p.name),
            label: p.name.clone(),
            slots: p.max_concurrency.max(1),
            requests_per_minute: p.requests_per_minute,
            local: false,
            team: team.is_some(),
        },
    }
}

/// One place in a lane's queue, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    pub id: i64,
    /// When the work became ready (ms); earlier goes first.
    pub ready_at_ms: i64,
    /// Its place in its battle; breaks ties.
    pub position: u32,
    /// "battle 1a2b3c4d, contestant 2".
    pub holder: String,
    pub granted: bool,
    /// The process that holds or waits with it.
    pub lease: Lease,
}

/// Whether a ticket's process is gone: its lease expired, or it was a
/// process on this host that no longer exists.
pub fn ticket_is_stale(
    t: &Ticket,
    my_host: &str,
    now_ms: i64,
    pid_alive: impl Fn(u32) -> bool,
) -> bool {
    t.lease.expires_at_ms <= now_ms || (t.lease.host == my_host && !pid_alive(t.lease.pid))
}

/// Whether the holder of ticket `me` may take a slot of the lane now.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    Go,
    Wait {
        /// Who holds the lane's slots now.
        holders: Vec<String>,
        /// Tickets waiting ahead of `me`.
        ahead: usize,
        /// The start rate is used up until this time (ms).
        rate_limited_until: Option<i64>,
    },
}

/// First come, first served: `me` goes when fewer tickets wait ahead of it
/// than slots are free (and, with a start rate, when it is not used up).
/// `tickets` are the lane's live tickets (stale ones removed), in any
/// order; `recent_starts` the grant times (ms) of the last 60 seconds.
pub fn lane_turn(
    tickets: &[Ticket],
    me: i64,
    spec: &LaneSpec,
    recent_starts: &[i64],
    now_ms: i64,
) -> Turn {
    let mut waiting: Vec<&Ticket> = tickets.iter().filter(|t| !t.granted).collect();
    waiting.sort_by_key(|t| (t.ready_at_ms, t.position, t.id));
    let ahead = waiting
        .iter()
        .position(|t| t.id == me)
        .unwrap_or(waiting.len());
    let granted: Vec<&Ticket> = tickets.iter().filter(|t| t.granted).collect();
    let free = (spec.slots as usize).saturating_sub(granted.len());
    let in_window: Vec<i64> = recent_starts
        .iter()
        .copied()
        .filter(|at| *at > now_ms - 60_000)
        .collect();
    let rate_limited_until = match spec.requests_per_minute {
        Some(rpm) if in_window.len() + ahead >= rpm as usize => {
            let mut sorted = in_window.clone();
            sorted.sort_unstable();
            // The start that must leave the window before ours fits.
            let index = (in_window.len() + ahead + 1).saturating_sub(rpm as usize) - 1;
            Some(sorted.get(index).map_or(now_ms, |at| at + 60_000))
        }
        _ => None,
    };
    if ahead < free && rate_limited_until.is_none() {
        return Turn::Go;
    }
    Turn::Wait {
        holders: granted
            .iter()
            .map(|t| match spec.team {
                true => format!("{} on {}", t.holder, t.lease.host),
                false => t.holder.clone(),
            })
            .collect(),
        ahead,
        rate_limited_until,
    }
}

/// The one decision a waiter makes over a lane's queue (see [`lane_decision`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LaneDecision {
    /// Tickets of processes that are gone ([`ticket_is_stale`]): the store
    /// deletes them; a reader that may not write takes the write lock.
    pub stale: Vec<Ticket>,
    pub verdict: LaneVerdict,
}

/// Whether the ticket is still in the queue, and if so whose turn it is.
#[derive(Debug, Clone, PartialEq)]
pub enum LaneVerdict {
    /// The ticket is gone (its lease expired while its process stalled, and
    /// another process dropped it): its holder must queue again.
    Lost,
    Turn(Turn),
}

/// Drops the stale tickets, then: `me` gone → [`LaneVerdict::Lost`], else
/// [`lane_turn`] over the live ones. Both the lock-free peek and the
/// store's taking of a slot decide with this, so they cannot disagree.
/// `tickets` are the lane's tickets as read (any order), `recent_starts`
/// its grant times (ms) of the last 60 seconds; `my_host` and `pid_alive`
/// say which processes of this host still exist.
pub fn lane_decision(
    tickets: Vec<Ticket>,
    me: i64,
    spec: &LaneSpec,
    recent_starts: &[i64],
    now_ms: i64,
    my_host: &str,
    pid_alive: impl Fn(u32) -> bool,
) -> LaneDecision {
    let (stale, live): (Vec<Ticket>, Vec<Ticket>) = tickets
        .into_iter()
        .partition(|t| ticket_is_stale(t, my_host, now_ms, &pid_alive));
    let verdict = if live.iter().any(|t| t.id == me) {
        LaneVerdict::Turn(lane_turn(&live, me, spec, recent_starts, now_ms))
    } else {
        LaneVerdict::Lost
    };
    LaneDecision { stale, verdict }
}

/// What a waiting contestant shows: "waiting for llama-swap
/// (127.0.0.1:8080): battle 1a2b3c4d, contestant 2".
pub fn waiting_reason(spec: &LaneSpec, turn: &Turn, now_ms: i64) -> Option<String> {
    let Turn::Wait {
        holders,
        ahead,
        rate_limited_until,
    } = turn
    else {
        return None;
    };
    let mut parts = Vec::new();
    if !holders.is_empty() {
        const SHOWN: usize = 3;
        let mut named = holders
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        if holders.len() > SHOWN {
            named.push_str(&format!(" and {} more", holders.len() - SHOWN));
        }
        parts.push(named);
    }
    if *ahead > 0 {
        parts.push(format!("{ahead} ahead in the queue"));
    }
    if let (Some(until), Some(rpm)) = (rate_limited_until, spec.requests_per_minute) {
        let secs = ((until - now_ms).max(0) + 999) / 1000;
        parts.push(format!(
            "{rpm} requests per minute reached, next start in {secs} s"
        ));
    }
    if parts.is_empty() {
        parts.push("its turn is next".into());
    }
    Some(format!("waiting for {}: {}", spec.label, parts.join(", ")))
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

    fn lease(pid: u32, expires_at_ms: i64) -> Lease {
        Lease {
            owner: format!("p{pid}"),
            host: "h".into(),
            pid,
            expires_at_ms,
        }
    }

    fn ticket(id: i64, ready_at_ms: i64, position: u32, granted: bool) -> Ticket {
        Ticket {
            id,
            ready_at_ms,
            position,
            holder: format!("battle b, contestant {}", position + 1),
            granted,
            lease: lease(1, i64::MAX),
        }
    }

    fn provider(name: &str, url: &str, lane: Lane) -> ProviderConfig {
        ProviderConfig::new(name, crate::config::ProviderKind::Openai, url, lane)
    }

    #[test]
    fn on_a_team_loopback_is_each_machines_own_and_a_named_server_is_everyones() {
        let swap = provider("swap", "http://127.0.0.1:8080/v1", Lane::Local);
        let alpha = lane_of(&swap, Some("alpha"));
        let beta = lane_of(&swap, Some("beta"));
        assert_eq!(alpha.key, "local:http://127.0.0.1:8080@alpha");
        assert_eq!(alpha.label, "swap (127.0.0.1:8080 on alpha)");
        assert_ne!(
            alpha.key, beta.key,
            "each machine's loopback is its own server"
        );
        assert!(alpha.team);
        for host in ["localhost", "[::1]", "127.0.0.2"] {
            let p = provider("swap", &format!("http://{host}:8080/v1"), Lane::Local);
            assert!(lane_of(&p, Some("alpha")).key.ends_with("@alpha"), "{host}");
        }
        let lan = provider("box", "http://10.0.0.5:8080/v1", Lane::Local);
        assert_eq!(
            lane_of(&lan, Some("alpha")).key,
            lane_of(&lan, Some("beta")).key,
            "another host is the same server for everyone"
        );
        assert_eq!(
            lane_of(&lan, Some("alpha")).key,
            "local:http://10.0.0.5:8080"
        );
        // A server named outright: one lane whatever address reaches it.
        let tunnel = ProviderConfig {
            server: Some("gpu-box".into()),
            ..provider("tunnel", "http://127.0.0.1:9000/v1", Lane::Local)
        };
        let direct = ProviderConfig {
            server: Some("gpu-box".into()),
            ..provider("direct", "http://10.0.0.9:8080/v1", Lane::Local)
        };
        assert_eq!(lane_of(&tunnel, Some("alpha")).key, "local:server:gpu-box");
        assert_eq!(lane_of(&direct, Some("beta")).key, "local:server:gpu-box");
        assert_eq!(lane_of(&tunnel, None).key, "local:server:gpu-box");
        assert_eq!(
            lane_of(&tunnel, Some("alpha")).label,
            "tunnel (server gpu-box)"
        );
        // Alone (no team database) nothing changes.
        assert_eq!(lane_of(&swap, None).key, "local:http://127.0.0.1:8080");
        assert!(!lane_of(&swap, None).team);
        let cloud = provider("openai", "https://api.example.com/v1", Lane::Cloud);
        assert_eq!(lane_of(&cloud, Some("alpha")).key, "cloud:openai");
    }

    #[test]
    fn on_a_team_the_waiting_reason_names_the_holders_machine() {
        let tunnel = ProviderConfig {
            server: Some("shared-box".into()),
            ..provider("llama-swap", "http://127.0.0.1:9000/v1", Lane::Local)
        };
        let spec = lane_of(&tunnel, Some("alpha"));
        let mut holding = ticket(1, 0, 0, true);
        holding.holder = "battle 1a2b3c4d, contestant 2".into();
        holding.lease.host = "beta".into();
        let tickets = vec![holding, ticket(2, 10, 0, false), ticket(3, 20, 0, false)];
        let turn = lane_turn(&tickets, 3, &spec, &[], 100);
        assert_eq!(
            waiting_reason(&spec, &turn, 100).as_deref(),
            Some(
                "waiting for llama-swap (server shared-box): battle 1a2b3c4d, contestant 2 on \
                 beta, 1 ahead in the queue"
            )
        );
    }

    #[test]
    fn a_local_lane_is_the_server_address_and_a_cloud_lane_the_provider() {
        let a = lane_of(
            &provider("swap", "http://127.0.0.1:8080/v1", Lane::Local),
            None,
        );
        let b = lane_of(
            &provider("ollama", "http://localhost:8080/api/v1", Lane::Local),
            None,
        );
        assert_eq!(a.key, b.key, "one server reached two ways is one lane");
        assert_eq!(a.key, "local:http://127.0.0.1:8080");
        assert_eq!(a.label, "swap (127.0.0.1:8080)");
        assert_eq!(a.slots, 1);
        let other = lane_of(
            &provider("gpu2", "http://10.0.0.2:8080/v1", Lane::Local),
            None,
        );
        assert_ne!(a.key, other.key);
        let https = lane_of(&provider("remote", "https://box.lan/v1", Lane::Local), None);
        assert_eq!(https.key, "local:https://box.lan:443");
        let mut cloud = provider("openai", "https://api.example.com/v1", Lane::Cloud);
        cloud.max_concurrency = 2;
        cloud.requests_per_minute = Some(30);
        let c = lane_of(&cloud, None);
        assert_eq!(
            (c.key.as_str(), c.slots, c.requests_per_minute),
            ("cloud:openai", 2, Some(30))
        );
        assert!(!c.local);
    }

    #[test]
    fn the_first_ready_goes_first_then_battle_position() {
        let spec = lane_of(&provider("l", "http://127.0.0.1:1/v1", Lane::Local), None);
        // Ticket 3 arrived last but became ready first.
        let queue = [
            ticket(1, 200, 0, false),
            ticket(2, 200, 1, false),
            ticket(3, 100, 5, false),
        ];
        assert_eq!(lane_turn(&queue, 3, &spec, &[], 0), Turn::Go);
        assert!(matches!(
            lane_turn(&queue, 1, &spec, &[], 0),
            Turn::Wait { ahead: 1, .. }
        ));
        assert!(matches!(
            lane_turn(&queue, 2, &spec, &[], 0),
            Turn::Wait { ahead: 2, .. }
        ));
        // Same readiness: battle position decides.
        let queue = [ticket(1, 100, 1, false), ticket(2, 100, 0, false)];
        assert_eq!(lane_turn(&queue, 2, &spec, &[], 0), Turn::Go);
    }

    #[test]
    fn a_busy_lane_makes_everyone_wait_and_names_the_holder() {
        let spec = lane_of(
            &provider("swap", "http://127.0.0.1:8080/v1", Lane::Local),
            None,
        );
        let queue = [ticket(1, 100, 1, true), ticket(2, 50, 0, false)];
        let turn = lane_turn(&queue, 2, &spec, &[], 0);
        assert_eq!(
            waiting_reason(&spec, &turn, 0).unwrap(),
            "waiting for swap (127.0.0.1:8080): battle b, contestant 2"
        );
        assert_eq!(waiting_reason(&spec, &Turn::Go, 0), None);
    }

    #[test]
    fn a_cloud_lane_fills_its_slots_in_order() {
        let mut p = provider("cloud", "https://x/v1", Lane::Cloud);
        p.max_concurrency = 2;
        let spec = lane_of(&p, None);
        let queue = [
            ticket(1, 0, 0, true),
            ticket(2, 0, 1, false),
            ticket(3, 0, 2, false),
        ];
        assert_eq!(lane_turn(&queue, 2, &spec, &[], 0), Turn::Go);
        let turn = lane_turn(&queue, 3, &spec, &[], 0);
        assert!(matches!(turn, Turn::Wait { ahead: 1, .. }), "{turn:?}");
        let reason = waiting_reason(&spec, &turn, 0).unwrap();
        assert_eq!(
            reason,
            "waiting for cloud: battle b, contestant 1, 1 ahead in the queue"
        );
    }

    #[test]
    fn a_start_rate_waits_for_the_oldest_start_to_leave_the_window() {
        let mut p = provider("cloud", "https://x/v1", Lane::Cloud);
        p.requests_per_minute = Some(2);
        let spec = lane_of(&p, None);
        let queue = [ticket(1, 0, 0, false)];
        assert_eq!(lane_turn(&queue, 1, &spec, &[10_000], 20_000), Turn::Go);
        let turn = lane_turn(&queue, 1, &spec, &[10_000, 15_000], 20_000);
        assert_eq!(
            turn,
            Turn::Wait {
                holders: vec![],
                ahead: 0,
                rate_limited_until: Some(70_000)
            }
        );
        assert_eq!(
            waiting_reason(&spec, &turn, 20_000).unwrap(),
            "waiting for cloud: 2 requests per minute reached, next start in 50 s"
        );
        // Starts older than a minute no longer count.
        assert_eq!(
            lane_turn(&queue, 1, &spec, &[1_000, 15_000], 70_000),
            Turn::Go
        );
        // The second in the queue waits for the second-oldest start.
        let queue = [ticket(1, 0, 0, false), ticket(2, 0, 1, false)];
        let turn = lane_turn(&queue, 2, &spec, &[10_000], 20_000);
        assert!(
            matches!(
                turn,
                Turn::Wait {
                    rate_limited_until: Some(70_000),
                    ..
                }
            ),
            "{turn:?}"
        );
    }

    #[test]
    fn a_ticket_of_a_dead_or_silent_process_is_stale() {
        let t = ticket(1, 0, 0, true);
        assert!(!ticket_is_stale(&t, "h", 0, |_| true));
        assert!(ticket_is_stale(&t, "h", 0, |_| false));
        assert!(!ticket_is_stale(&t, "other-host", 0, |_| false));
        let silent = Ticket {
            lease: lease(1, 500),
            ..t
        };
        assert!(ticket_is_stale(&silent, "other-host", 500, |_| true));
    }

    #[test]
    fn the_lane_decision_drops_stale_tickets_before_taking_turns() {
        let spec = lane_of(&provider("l", "http://127.0.0.1:1/v1", Lane::Local), None);
        // Ticket 1 holds the only slot, but its process (pid 7, this host) is gone.
        let dead = Ticket {
            lease: lease(7, i64::MAX),
            ..ticket(1, 0, 0, true)
        };
        let queue = vec![dead.clone(), ticket(2, 100, 0, false)];
        let d = lane_decision(queue, 2, &spec, &[], 0, "h", |pid| pid != 7);
        assert_eq!(d.stale, vec![dead]);
        assert_eq!(d.verdict, LaneVerdict::Turn(Turn::Go));
    }

    #[test]
    fn the_lane_decision_waits_behind_a_live_holder() {
        let spec = lane_of(&provider("l", "http://127.0.0.1:1/v1", Lane::Local), None);
        let queue = vec![ticket(1, 0, 0, true), ticket(2, 100, 0, false)];
        let d = lane_decision(queue, 2, &spec, &[], 0, "h", |_| true);
        assert!(d.stale.is_empty());
        assert_eq!(
            d.verdict,
            LaneVerdict::Turn(Turn::Wait {
                holders: vec!["battle b, contestant 1".into()],
                ahead: 0,
                rate_limited_until: None,
            })
        );
    }

    #[test]
    fn a_ticket_missing_or_stale_itself_is_lost() {
        let spec = lane_of(&provider("l", "http://127.0.0.1:1/v1", Lane::Local), None);
        let missing = lane_decision(vec![ticket(1, 0, 0, true)], 9, &spec, &[], 0, "h", |_| true);
        assert_eq!(missing.verdict, LaneVerdict::Lost);
        // Its own lease expired (the process stalled): stale, hence lost.
        let expired = Ticket {
            lease: lease(1, 500),
            ..ticket(2, 0, 0, false)
        };
        let d = lane_decision(vec![expired.clone()], 2, &spec, &[], 500, "h", |_| true);
        assert_eq!((d.stale, d.verdict), (vec![expired], LaneVerdict::Lost));
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
