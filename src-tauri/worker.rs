//! The worker switch in Settings: this app serving places of running series
//! (`Engine::work`, as `arena worker` does) in a background task.
//!
//! Turning it off cancels the task's token and returns at once; the task
//! stops taking places and finishes those under way on its own. A worker
//! started while an earlier one is still finishing waits for it first, so
//! the app never runs more places than the switch says (and the earlier
//! one, removing its row from `live.workers` as it returns, cannot remove
//! the new one's). The switch is not kept across restarts: off at start.

use std::sync::{Arc, Mutex};

use arena_core::{Engine, Invalid, WorkerOptions};
use tauri::async_runtime::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Places the switch allows at once.
pub const PLACES: std::ops::RangeInclusive<u32> = 1..=16;
/// Places shown before the switch is first turned on.
pub const DEFAULT_PLACES: u32 = 2;

/// The switch: a cheap handle, shared by the commands and the task.
#[derive(Clone, Default)]
pub struct Worker(Arc<Mutex<Switch>>);

#[derive(Default)]
struct Switch {
    /// The worker serving now (or waiting for the last one to finish).
    on: Option<On>,
    /// The places last asked for, shown while off.
    places: Option<u32>,
    /// The newest worker's task, running or finishing its places.
    last: Option<JoinHandle<()>>,
    /// Tells one start from the next.
    starts: u64,
}

struct On {
    places: u32,
    stop: CancellationToken,
    start: u64,
}

/// What the switch says: serving or not, and how many places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub enabled: bool,
    pub places: u32,
}

impl Worker {
    pub fn state(&self) -> State {
        let switch = self.lock();
        match &switch.on {
            Some(on) => State {
                enabled: true,
                places: on.places,
            },
            None => State {
                enabled: false,
                places: switch.places.unwrap_or(DEFAULT_PLACES),
            },
        }
    }

    /// Turns the worker on with `places` (again, when they changed) or off;
    /// `places` out of range is refused when turning it on.
    pub fn set(&self, engine: &Engine, enabled: bool, places: u32) -> Result<State, Invalid> {
        if enabled && !PLACES.contains(&places) {
            return Err(Invalid::Setting {
                field: "places".into(),
                message: format!(
                    "must be between {} and {} (not {places})",
                    PLACES.start(),
                    PLACES.end()
                ),
            });
        }
        let mut switch = self.lock();
        let unchanged = switch.on.as_ref().map(|on| on.places) == Some(places);
        if enabled && unchanged {
            return Ok(State { enabled, places });
        }
        if let Some(on) = switch.on.take() {
            tracing::info!(places = on.places, "the worker stops taking places");
            on.stop.cancel();
        }
        if PLACES.contains(&places) {
            switch.places = Some(places);
        }
        if enabled {
            switch.starts += 1;
            let start = switch.starts;
            let stop = CancellationToken::new();
            let task = serve(
                self.clone(),
                engine.clone(),
                places,
                stop.clone(),
                start,
                switch.last.take(),
            );
            switch.last = Some(tauri::async_runtime::spawn(task));
            switch.on = Some(On {
                places,
                stop,
                start,
            });
        }
        drop(switch);
        Ok(self.state())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Switch> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The worker's task: waits for the one before it, serves until `stop`, and
/// turns the switch off should it end by itself.
async fn serve(
    worker: Worker,
    engine: Engine,
    places: u32,
    stop: CancellationToken,
    start: u64,
    before: Option<JoinHandle<()>>,
) {
    if let Some(before) = before {
        // It ends once its places under way have finished.
        let _ = before.await;
    }
    if stop.is_cancelled() {
        return;
    }
    tracing::info!(places, "the worker serves places of running series");
    let options = WorkerOptions {
        places,
        series: None,
    };
    let result = engine.work(options, stop.clone()).await;
    match &result {
        Ok(()) => tracing::info!("the worker stopped"),
        Err(err) => tracing::error!(%err, "the worker stopped"),
    }
    if !stop.is_cancelled() {
        let mut switch = worker.lock();
        if switch.on.as_ref().is_some_and(|on| on.start == start) {
            switch.on = None;
        }
    }
}
