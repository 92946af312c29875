//! Battle events into the webview: the app's sink for the engine's event
//! stream.
//!
//! `subscribe_battle` hands a Tauri [`Channel`] to [`follow`], which replays
//! the battle's journal from `since_seq` and then follows it live through
//! [`Engine::subscribe`]. Deliveries are at least [`COALESCE_WINDOW`] apart:
//! an event after a quiet spell goes out at once, events that arrive sooner
//! wait for the window to pass; [`coalesce`] merges their text deltas and the
//! whole batch crosses into the webview as one channel message, in `seq`
//! order. Six fast streams thus cost the webview one message per engine
//! group commit (≤ 40 a second), not one per contestant per flush. A subscription ends when the webview is gone
//! (a send fails), when it is unsubscribed, or when its webview loads a new
//! page.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use arena_core::{BattleEvent, Engine, EventKind};
use futures::{Stream, StreamExt};
use tauri::ipc::Channel;
use tokio_util::sync::CancellationToken;

use arena_api::BattleEventDto;

/// The least time between two deliveries to the webview. Short: the
/// engine already journals streamed text in groups (one transaction for
/// every contestant at most every 25 ms), so events arrive in bursts and a
/// burst goes out whole; a longer window only held each burst back.
pub const COALESCE_WINDOW: Duration = Duration::from_millis(10);
/// How long to wait before following again after the event stream failed.
const RETRY_DELAY: Duration = Duration::from_secs(1);

/// Merges text deltas: an `output` (or `reasoning`) event is appended to
/// the same contestant's previous event when that one is an `output` (or
/// `reasoning`) too. The merged event takes the later event's `seq` and
/// `at`, and its place in the list, so `seq` still increases strictly.
///
/// Nothing else moves: a contestant's events keep their order (any other
/// event of that contestant, including a delta of the other kind, ends its
/// run of deltas), and a battle-wide event (no contestant) ends every run.
/// Other contestants' events in between do not end a run; they only come
/// out ahead of the merged text, which never depends on them.
pub fn coalesce(events: Vec<BattleEvent>) -> Vec<BattleEvent> {
    let mut out: Vec<Option<BattleEvent>> = Vec::with_capacity(events.len());
    // Per contestant: the index in `out` of its latest event.
    let mut latest: HashMap<String, usize> = HashMap::new();
    for event in events {
        let Some(contestant) = event.contestant_id.clone() else {
            latest.clear();
            out.push(Some(event));
            continue;
        };
        let previous = latest
            .get(&contestant)
            .copied()
            .filter(|&i| out[i].as_ref().is_some_and(|e| continues(e, &event)));
        let event = match previous.and_then(|i| out[i].take()) {
            Some(mut earlier) => {
                append(&mut earlier, event);
                earlier
            }
            None => event,
        };
        latest.insert(contestant, out.len());
        out.push(Some(event));
    }
    out.into_iter().flatten().collect()
}

/// Whether `later` continues `earlier`'s run: both `output` or both `reasoning`.
fn continues(earlier: &BattleEvent, later: &BattleEvent) -> bool {
    matches!(
        (&earlier.kind, &later.kind),
        (EventKind::Output { .. }, EventKind::Output { .. })
            | (EventKind::Reasoning { .. }, EventKind::Reasoning { .. })
    )
}

/// Appends `later`'s text to `earlier` (see [`continues`]); `earlier` takes
/// its `seq` and `at`.
fn append(earlier: &mut BattleEvent, later: BattleEvent) {
    match (&mut earlier.kind, later.kind) {
        (EventKind::Output { text }, EventKind::Output { text: more })
        | (EventKind::Reasoning { text }, EventKind::Reasoning { text: more }) => {
            text.push_str(&more)
        }
        _ => return,
    }
    earlier.seq = later.seq;
    earlier.at = later.at;
}

/// Why [`relay`] stopped.
#[derive(Debug)]
pub enum RelayEnd {
    /// Cancelled (unsubscribed, or the page went away).
    Cancelled,
    /// The sink refused an event (the webview is gone).
    SinkClosed,
    /// The event stream ended.
    StreamEnded,
    /// The event stream failed; everything before the failure was delivered.
    Failed(arena_core::Error),
}

/// Most events in one delivery (a long journal replays in several).
const MAX_BATCH: usize = 2048;

/// Moves events from `events` to `sink` in batches, deliveries at least
/// `window` apart: the first event after a quiet spell goes out with
/// whatever else is ready at that moment; later ones gather until `window`
/// has passed since the last delivery. Each batch is [`coalesce`]d and
/// handed to `sink` whole, in order; `sink` returns false when it can take
/// no more.
pub async fn relay<S>(
    events: S,
    window: Duration,
    cancel: &CancellationToken,
    mut sink: impl FnMut(Vec<BattleEvent>) -> bool,
) -> RelayEnd
where
    S: Stream<Item = arena_core::Result<BattleEvent>>,
{
    let mut events = std::pin::pin!(events);
    let mut batch: Vec<BattleEvent> = Vec::new();
    let mut last_delivery: Option<tokio::time::Instant> = None;
    let mut deliver = |batch: &mut Vec<BattleEvent>, last: &mut Option<tokio::time::Instant>| {
        if batch.is_empty() {
            return true;
        }
        *last = Some(tokio::time::Instant::now());
        sink(coalesce(std::mem::take(batch)))
    };
    let flush_at = tokio::time::sleep(Duration::ZERO);
    let mut flush_at = std::pin::pin!(flush_at);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return RelayEnd::Cancelled,
            // What is ready now joins the batch before it goes out.
            next = events.next(), if batch.len() < MAX_BATCH => match next {
                Some(Ok(event)) => {
                    if batch.is_empty() {
                        let now = tokio::time::Instant::now();
                        let due = last_delivery.map_or(now, |at| (at + window).max(now));
                        flush_at.as_mut().reset(due);
                    }
                    batch.push(event);
                }
                Some(Err(err)) => {
                    if !deliver(&mut batch, &mut last_delivery) {
                        return RelayEnd::SinkClosed;
                    }
                    return RelayEnd::Failed(err);
                }
                None => {
                    if !deliver(&mut batch, &mut last_delivery) {
                        return RelayEnd::SinkClosed;
                    }
                    return RelayEnd::StreamEnded;
                }
            },
            () = &mut flush_at, if !batch.is_empty() => {
                if !deliver(&mut batch, &mut last_delivery) {
                    return RelayEnd::SinkClosed;
                }
            }
        }
    }
}

/// Forwards a battle's events (`seq > since_seq`) to `channel` until the
/// subscription is cancelled or the webview is gone. When the engine's
/// stream fails (a database hiccup), it follows again from the last
/// delivered `seq` after a short pause.
pub async fn follow(
    engine: Engine,
    battle_id: String,
    since_seq: u64,
    channel: Channel<Vec<BattleEventDto>>,
    cancel: CancellationToken,
) {
    let mut last = since_seq;
    loop {
        let stream = engine.subscribe(&battle_id, last);
        let end = relay(stream, COALESCE_WINDOW, &cancel, |batch| {
            let seq = batch.last().map_or(last, |e| e.seq);
            match channel.send(batch.into_iter().map(BattleEventDto::from).collect()) {
                Ok(()) => {
                    last = seq;
                    true
                }
                Err(err) => {
                    tracing::debug!(battle = %battle_id, %err, "event channel closed");
                    false
                }
            }
        })
        .await;
        match end {
            RelayEnd::Cancelled | RelayEnd::SinkClosed | RelayEnd::StreamEnded => return,
            RelayEnd::Failed(err) => {
                tracing::warn!(battle = %battle_id, %err, "following battle events failed; retrying");
                tokio::select! {
                    () = cancel.cancelled() => return,
                    () = tokio::time::sleep(RETRY_DELAY) => {}
                }
            }
        }
    }
}

/// The live subscriptions, by id, with the webview each one feeds.
#[derive(Default)]
pub struct Subscriptions {
    next_id: AtomicU64,
    live: Mutex<HashMap<u64, Subscription>>,
}

struct Subscription {
    webview: String,
    cancel: CancellationToken,
}

impl Subscriptions {
    /// Registers a subscription for `webview`; returns its id and the token
    /// that stops it.
    pub fn open(&self, webview: &str) -> (u64, CancellationToken) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let cancel = CancellationToken::new();
        self.lock().insert(
            id,
            Subscription {
                webview: webview.to_string(),
                cancel: cancel.clone(),
            },
        );
        (id, cancel)
    }

    /// Stops subscription `id` if `webview` owns it; false when there is no
    /// such subscription (already ended, or another webview's).
    pub fn close(&self, id: u64, webview: &str) -> bool {
        let mut live = self.lock();
        match live.get(&id) {
            Some(s) if s.webview == webview => {
                if let Some(s) = live.remove(&id) {
                    s.cancel.cancel();
                }
                true
            }
            _ => false,
        }
    }

    /// Forgets subscription `id` after it ended by itself.
    pub fn ended(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Stops every subscription of `webview` (it is loading a new page, so
    /// nothing there listens any more).
    pub fn close_webview(&self, webview: &str) {
        self.lock().retain(|_, s| {
            let keep = s.webview != webview;
            if !keep {
                s.cancel.cancel();
            }
            keep
        });
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Subscription>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    fn event(seq: u64, contestant: Option<&str>, kind: EventKind) -> BattleEvent {
        BattleEvent {
            battle_id: "b".into(),
            seq,
            contestant_id: contestant.map(str::to_string),
            at: Utc
                .timestamp_millis_opt(1_000 * seq as i64)
                .single()
                .expect("valid time"),
            kind,
        }
    }

    fn out(seq: u64, c: &str, text: &str) -> BattleEvent {
        event(seq, Some(c), EventKind::Output { text: text.into() })
    }

    fn reasoning(seq: u64, c: &str, text: &str) -> BattleEvent {
        event(seq, Some(c), EventKind::Reasoning { text: text.into() })
    }

    fn status(seq: u64, c: &str) -> BattleEvent {
        event(
            seq,
            Some(c),
            EventKind::ContestantStatus {
                status: arena_core::ContestantStatus::Done,
                error: None,
                attempt: 1,
            },
        )
    }

    fn winner(seq: u64) -> BattleEvent {
        event(seq, None, EventKind::Winner { winner: None })
    }

    /// (seq, contestant, text or event name) for compact assertions.
    fn summary(events: &[BattleEvent]) -> Vec<(u64, Option<&str>, String)> {
        events
            .iter()
            .map(|e| {
                let what = match &e.kind {
                    EventKind::Output { text } => format!("out:{text}"),
                    EventKind::Reasoning { text } => format!("think:{text}"),
                    other => other.name().to_string(),
                };
                (e.seq, e.contestant_id.as_deref(), what)
            })
            .collect()
    }

    #[test]
    fn merges_neighbouring_deltas_of_one_contestant() {
        let merged = coalesce(vec![
            out(1, "a", "Hel"),
            out(2, "a", "lo"),
            out(3, "a", "!"),
        ]);
        assert_eq!(summary(&merged), vec![(3, Some("a"), "out:Hello!".into())]);
        assert_eq!(
            merged[0].at,
            out(3, "a", "").at,
            "takes the last event's time"
        );

        let merged = coalesce(vec![reasoning(4, "a", "hm"), reasoning(5, "a", "m")]);
        assert_eq!(summary(&merged), vec![(5, Some("a"), "think:hmm".into())]);
    }

    #[test]
    fn never_merges_across_contestants() {
        let merged = coalesce(vec![out(1, "a", "x"), out(2, "b", "y")]);
        assert_eq!(
            summary(&merged),
            vec![
                (1, Some("a"), "out:x".into()),
                (2, Some("b"), "out:y".into())
            ]
        );
    }

    #[test]
    fn interleaved_contestants_merge_each_own_text_in_seq_order() {
        let merged = coalesce(vec![
            out(1, "a", "1"),
            out(2, "b", "x"),
            out(3, "a", "2"),
            out(4, "b", "y"),
            out(5, "a", "3"),
        ]);
        assert_eq!(
            summary(&merged),
            vec![
                (4, Some("b"), "out:xy".into()),
                (5, Some("a"), "out:123".into())
            ]
        );
    }

    #[test]
    fn never_merges_across_other_event_kinds() {
        // Output, then reasoning, then output again: three runs.
        let merged = coalesce(vec![
            out(1, "a", "x"),
            reasoning(2, "a", "r"),
            out(3, "a", "y"),
        ]);
        assert_eq!(merged.len(), 3);
        // A status (or any other event) of the same contestant ends a run.
        let merged = coalesce(vec![out(1, "a", "x"), status(2, "a"), out(3, "a", "y")]);
        assert_eq!(
            summary(&merged),
            vec![
                (1, Some("a"), "out:x".into()),
                (2, Some("a"), "contestant_status".into()),
                (3, Some("a"), "out:y".into())
            ]
        );
        // A battle-wide event ends every run.
        let merged = coalesce(vec![out(1, "a", "x"), winner(2), out(3, "a", "y")]);
        assert_eq!(merged.len(), 3);
        // Non-delta events are never merged with each other.
        let merged = coalesce(vec![status(1, "a"), status(2, "a"), winner(3), winner(4)]);
        assert_eq!(merged.len(), 4);
    }

    #[test]
    fn keeps_order_and_strictly_increasing_seq() {
        let input = vec![
            out(10, "a", "1"),
            status(11, "b"),
            out(12, "a", "2"),
            reasoning(13, "b", "r"),
            reasoning(14, "b", "s"),
            winner(15),
            out(16, "a", "3"),
            out(17, "a", "4"),
        ];
        let merged = coalesce(input);
        assert_eq!(
            summary(&merged),
            vec![
                (11, Some("b"), "contestant_status".into()),
                (12, Some("a"), "out:12".into()),
                (14, Some("b"), "think:rs".into()),
                (15, None, "winner".into()),
                (17, Some("a"), "out:34".into()),
            ]
        );
        assert!(merged.windows(2).all(|w| w[0].seq < w[1].seq));
        assert!(coalesce(Vec::new()).is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn relay_delivers_batches_at_most_once_a_window() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let stream = tokio_stream_from(rx);
        let cancel = CancellationToken::new();
        let start = tokio::time::Instant::now();
        let mut got = Vec::new();
        let ms = Duration::from_millis;
        let sender = async {
            // Ready together after a quiet spell: out at once, as one batch.
            for e in [out(1, "a", "x"), out(2, "a", "y"), status(3, "b")] {
                tx.send(Ok(e)).expect("open");
            }
            // Soon after: they wait until a window after that delivery.
            tokio::time::sleep(COALESCE_WINDOW / 2).await;
            tx.send(Ok(out(4, "a", "z"))).expect("open");
            tokio::time::sleep(COALESCE_WINDOW / 5).await;
            tx.send(Ok(out(5, "a", "w"))).expect("open");
            // Quiet again: out at once.
            tokio::time::sleep(ms(200)).await;
            tx.send(Ok(out(6, "a", "v"))).expect("open");
            drop(tx);
        };
        let (end, ()) = tokio::join!(
            relay(stream, COALESCE_WINDOW, &cancel, |batch| {
                let owned: Vec<(u64, Option<String>, String)> = summary(&batch)
                    .into_iter()
                    .map(|(seq, c, what)| (seq, c.map(str::to_string), what))
                    .collect();
                got.push((start.elapsed(), owned));
                true
            }),
            sender
        );
        assert!(matches!(end, RelayEnd::StreamEnded), "{end:?}");
        let text = |seq: u64, c: &str, t: &str| (seq, Some(c.to_string()), t.to_string());
        assert_eq!(
            got,
            vec![
                (
                    ms(0),
                    vec![text(2, "a", "out:xy"), text(3, "b", "contestant_status")]
                ),
                (COALESCE_WINDOW, vec![text(5, "a", "out:zw")]),
                (
                    COALESCE_WINDOW / 2 + COALESCE_WINDOW / 5 + ms(200),
                    vec![text(6, "a", "out:v")]
                ),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn relay_stops_when_the_sink_is_gone_or_cancelled() {
        let cancel = CancellationToken::new();
        let mut sent = 0;
        // More than one batch: a long replay is cut at MAX_BATCH events.
        let events =
            futures::stream::iter((1..=2 * MAX_BATCH as u64).map(|seq| Ok(status(seq, "a"))));
        let end = relay(events, COALESCE_WINDOW, &cancel, |_| {
            sent += 1;
            sent < 2
        })
        .await;
        assert!(matches!(end, RelayEnd::SinkClosed), "{end:?}");
        assert_eq!(sent, 2, "nothing is sent after a failed send");

        let cancel = CancellationToken::new();
        cancel.cancel();
        let end = relay(futures::stream::pending(), COALESCE_WINDOW, &cancel, |_| {
            true
        })
        .await;
        assert!(matches!(end, RelayEnd::Cancelled), "{end:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn relay_delivers_what_came_before_a_failure() {
        let events = futures::stream::iter(vec![
            Ok(out(1, "a", "x")),
            Err(arena_core::Error::Task("db".into())),
        ]);
        let mut got = Vec::new();
        let end = relay(
            events,
            COALESCE_WINDOW,
            &CancellationToken::new(),
            |batch| {
                got.extend(batch);
                true
            },
        )
        .await;
        assert!(matches!(end, RelayEnd::Failed(_)), "{end:?}");
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn subscriptions_close_by_id_and_by_webview() {
        let subs = Subscriptions::default();
        let (one, one_cancel) = subs.open("main");
        let (two, two_cancel) = subs.open("main");
        let (three, three_cancel) = subs.open("other");
        assert_ne!(one, two);
        assert!(!subs.close(one, "other"), "only the owner may close it");
        assert!(subs.close(one, "main"));
        assert!(one_cancel.is_cancelled());
        assert!(!subs.close(one, "main"), "already closed");

        subs.close_webview("main");
        assert!(two_cancel.is_cancelled());
        assert!(!three_cancel.is_cancelled());
        assert_eq!(subs.len(), 1);
        subs.ended(three);
        assert!(subs.is_empty());
    }

    /// An mpsc receiver as a stream (tokio-stream is not a dependency).
    fn tokio_stream_from<T>(
        mut rx: tokio::sync::mpsc::UnboundedReceiver<T>,
    ) -> impl Stream<Item = T> {
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
