//! A battle as a viewer sees it: its events, replayed from the journal
//! then followed live (also those another process writes).

use futures::Stream;

use crate::error::Result;
use crate::event::BattleEvent;

use super::{Engine, FOLLOW_POLL};

/// An event as a viewer sees it (see [`Engine::subscribe`]).
fn viewed(mask: &mut crate::blind::EventMask, event: BattleEvent) -> Option<BattleEvent> {
    let BattleEvent {
        battle_id,
        seq,
        contestant_id,
        at,
        kind,
    } = event;
    mask.apply(kind).map(|kind| BattleEvent {
        battle_id,
        seq,
        contestant_id,
        at,
        kind,
    })
}

impl Engine {
    /// Events of a battle with `seq > since_seq`: first the journal, then live
    /// events as they happen (also those written by another process). The
    /// stream does not end by itself. It is a viewer's: while a blind
    /// battle is masked, what would tell its contestants apart is left out
    /// or reworded (see `blind::mask_event`) until its `revealed` event.
    pub fn subscribe(
        &self,
        battle_id: &str,
        since_seq: u64,
    ) -> impl Stream<Item = Result<BattleEvent>> + Send + 'static {
        let engine = self.clone();
        let battle_id = battle_id.to_string();
        let mut rx = self.inner.store.subscribe();
        async_stream::try_stream! {
            let mut last = since_seq;
            // A blind battle's viewer sees labels only until its reveal.
            let masked = engine.battle(&battle_id).await.is_ok_and(|b| b.is_masked());
            let mut mask = crate::blind::EventMask::new(masked);
            loop {
                loop {
                    let (id, from) = (battle_id.clone(), last);
                    let batch = engine.db(move |s| s.events_since(&id, from, 2000)).await?;
                    if batch.is_empty() {
                        break;
                    }
                    for event in batch {
                        last = event.seq;
                        if let Some(event) = viewed(&mut mask, event) {
                            yield event;
                        }
                    }
                }
                loop {
                    tokio::select! {
                        received = rx.recv() => match received {
                            Ok(e) if e.battle_id == battle_id && e.seq <= last => {}
                            Ok(e) if e.battle_id == battle_id && e.seq == last + 1 => {
                                last = e.seq;
                                if let Some(e) = viewed(&mut mask, e) {
                                    yield e;
                                }
                            }
                            Ok(e) if e.battle_id == battle_id => break, // a gap: replay it
                            Ok(_) => {}
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                        },
                        _ = tokio::time::sleep(FOLLOW_POLL) => break,
                    }
                }
            }
        }
    }
}
