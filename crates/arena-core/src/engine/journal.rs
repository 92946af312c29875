//! Where streamed text goes: a model's answer, an agent's output, a judge's
//! or an examiner's text, as events of its battle's journal. Every kind of
//! turn writes through a [`Sink`], so what a viewer sees of each is decided
//! here once.
//!
//! Streamed events are written together (group commit): a sink queues them
//! and goes on at once; one writer per process journals everything queued,
//! for every battle and contestant, in one transaction at most every
//! [`GROUP`] while someone in this process watches a battle live (the app's
//! window, a terminal's progress), else every [`UNWATCHED_GROUP`] (viewers
//! in other processes read the journal, which that keeps well within their
//! 250 ms). [`Sink::sync`] waits until what a sink queued is written (a
//! turn syncs before its end is recorded, so its events precede its end);
//! a sync or a grouped write cuts the writer's wait short.
//!
//! Other writes that come in bursts — the contestants of a battle starting
//! together, their ends, their result files' paths — join the same
//! transaction through [`Engine::grouped`]: each stands or falls alone
//! (a savepoint), and its caller learns the outcome once the transaction
//! is committed. Six answers ending together cost one transaction, not
//! six.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot, Notify};

use crate::config::Limits;
use crate::error::{Error, Result};
use crate::event::EventKind;
use crate::store::{Store, Tx};

use super::Engine;

/// How long the writer gathers streamed events before it writes them
/// while this process has a live viewer (a sync writes at once).
const GROUP: Duration = Duration::from_millis(25);
/// The same with no live viewer in this process: each transaction is a
/// few lock and write calls, so fewer of them is most of what a streamed
/// delta costs beyond reading it.
const UNWATCHED_GROUP: Duration = Duration::from_millis(100);
/// How long the writer gathers when a grouped write waits for it: long
/// enough for the rest of a burst to join, short beside a model's turn.
const JOB_GROUP: Duration = Duration::from_millis(5);
/// The same with no live viewer in this process: answers that end within
/// a few tens of milliseconds of each other (a battle's contestants on
/// equally fast models) are one transaction rather than two or three.
const UNWATCHED_JOB_GROUP: Duration = Duration::from_millis(25);

/// This process's side of the journal: streamed events waiting to be
/// written, and whether its writer runs.
#[derive(Default)]
pub(super) struct Journal {
    queue: Arc<Mutex<Queue>>,
    wake: Arc<Notify>,
    /// A sync or a grouped write is waiting: the writer stops gathering.
    hurry: Arc<Notify>,
    writing: AtomicBool,
    /// Transactions the writer committed (for tests and benchmarks).
    commits: Arc<AtomicU64>,
}

#[derive(Default)]
struct Queue {
    /// In the order they were queued.
    items: Vec<Item>,
    /// Each is told when everything queued before it is written.
    waiters: Vec<oneshot::Sender<()>>,
    /// Battles whose events could not be written, with why (reported once).
    failed: HashMap<String, String>,
}

enum Item {
    Events(Write),
    Job(Job),
}

/// A grouped write: run inside the writer's transaction — more than once
/// when the team database went away mid-way and the transaction is run
/// again (only the last run is kept) — then told the transaction's outcome
/// (`None` when it committed, else why not).
type Job = Box<dyn GroupedWrite>;

trait GroupedWrite: Send {
    /// The lanes it decides on (see [`Tx::lock_lanes`]).
    fn lanes(&self) -> &[String];
    fn run(&mut self, tx: &mut Tx<'_>);
    fn deliver(self: Box<Self>, failure: Option<&str>);
}

/// A caller's write `f`, the value its last run gave, and its caller.
struct Grouped<T, F> {
    lanes: Vec<String>,
    f: F,
    value: Option<Result<T>>,
    send: oneshot::Sender<Result<T>>,
}

impl<T, F> GroupedWrite for Grouped<T, F>
where
    T: Send,
    F: FnMut(&mut Tx<'_>) -> crate::store::Result<T> + Send,
{
    fn lanes(&self) -> &[String] {
        &self.lanes
    }

    fn run(&mut self, tx: &mut Tx<'_>) {
        self.value = Some(tx.apart(&mut self.f).map_err(Error::from));
    }

    fn deliver(self: Box<Self>, failure: Option<&str>) {
        let outcome = match (self.value, failure) {
            (Some(Ok(_)) | None, Some(why)) => Err(Error::Task(format!("not written: {why}"))),
            (Some(value), _) => value,
            (None, None) => Err(Error::Task("not written: it never ran".into())),
        };
        let _ = self.send.send(outcome);
    }
}

struct Write {
    battle_id: String,
    contestant: Option<String>,
    at: DateTime<Utc>,
    kinds: Vec<EventKind>,
    /// Deltas for the live journal, folded away when the answer ends.
    live: bool,
}

impl Journal {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many transactions the writer has committed so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Why `battle_id`'s events could not be written, once.
    fn failure(&self, battle_id: &str) -> Result<()> {
        match self.lock().failed.remove(battle_id) {
            Some(why) => Err(Error::Conflict(why)),
            None => Ok(()),
        }
    }

    /// Starts the writer once per process; it ends with the engine.
    fn start(&self, store: &Store) {
        if self.writing.swap(true, Ordering::SeqCst) {
            return;
        }
        let queue: Weak<Mutex<Queue>> = Arc::downgrade(&self.queue);
        let (wake, hurry) = (self.wake.clone(), self.hurry.clone());
        let (commits, store) = (self.commits.clone(), store.clone());
        tokio::spawn(async move {
            loop {
                wake.notified().await;
                let Some(queue) = queue.upgrade() else { return };
                gather(&queue, &hurry, store.watched()).await;
                let (items, waiters) = {
                    let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                    (std::mem::take(&mut q.items), std::mem::take(&mut q.waiters))
                };
                if !items.is_empty() {
                    let failed = write_all(&store, items).await;
                    commits.fetch_add(1, Ordering::Relaxed);
                    queue
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .failed
                        .extend(failed);
                }
                for waiter in waiters {
                    let _ = waiter.send(());
                }
            }
        });
    }
}

/// Waits while the writer gathers what to write next: [`GROUP`] or
/// [`UNWATCHED_GROUP`] from now, cut to [`JOB_GROUP`] (or
/// [`UNWATCHED_JOB_GROUP`]) after a grouped write comes, and to nothing
/// when a sync waits.
async fn gather(queue: &Mutex<Queue>, hurry: &Notify, watched: bool) {
    use tokio::time::Instant;
    let mut until = Instant::now() + if watched { GROUP } else { UNWATCHED_GROUP };
    let mut job_seen = false;
    loop {
        {
            let q = queue.lock().unwrap_or_else(|p| p.into_inner());
            if !q.waiters.is_empty() {
                return;
            }
            if !job_seen && q.items.iter().any(|i| matches!(i, Item::Job(_))) {
                job_seen = true;
                let wait = if watched {
                    JOB_GROUP
                } else {
                    UNWATCHED_JOB_GROUP
                };
                until = until.min(Instant::now() + wait);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep_until(until) => return,
            _ = hurry.notified() => {}
        }
    }
}

/// Journals `items` in one transaction, in order; a contestant's events
/// only while this process holds its battle's lease. Returns the battles
/// whose events were not written, with why, and tells each grouped write
/// its outcome.
async fn write_all(store: &Store, items: Vec<Item>) -> Vec<(String, String)> {
    let battles: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            Item::Events(w) => Some(w.battle_id.clone()),
            Item::Job(_) => None,
        })
        .collect();
    let store = store.clone();
    let mut items = items;
    let written = tokio::task::spawn_blocking(move || {
        // The lanes its grouped writes decide on, locked first in one
        // order: another machine's writer never holds one of them while
        // waiting for another this one holds.
        let lanes: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                Item::Job(job) => Some(job.lanes().to_vec()),
                Item::Events(_) => None,
            })
            .flatten()
            .collect();
        // Run again whole when the team database went away mid-way.
        let written = store.transact(|tx| {
            tx.lock_lanes(lanes.iter().map(String::as_str))?;
            let mut leases: HashMap<String, Option<String>> = HashMap::new();
            for item in items.iter_mut() {
                let w = match item {
                    Item::Events(w) => &*w,
                    Item::Job(job) => {
                        job.run(tx);
                        continue;
                    }
                };
                if w.contestant.is_some() {
                    let refused = leases.entry(w.battle_id.clone()).or_insert_with(|| {
                        tx.require_lease(&w.battle_id).err().map(|e| e.to_string())
                    });
                    if refused.is_some() {
                        continue;
                    }
                }
                for kind in &w.kinds {
                    let (battle, contestant) = (&w.battle_id, w.contestant.as_deref());
                    if w.live {
                        tx.emit_live(battle, contestant, w.at, kind.clone())?;
                    } else {
                        tx.emit(battle, contestant, w.at, kind.clone())?;
                    }
                }
            }
            Ok(leases
                .into_iter()
                .filter_map(|(battle, refused)| Some((battle, refused?)))
                .collect::<Vec<_>>())
        });
        let failure = written.as_ref().err().map(|e| e.to_string());
        for item in items {
            if let Item::Job(job) = item {
                job.deliver(failure.as_deref());
            }
        }
        written
    })
    .await;
    match written {
        Ok(Ok(failed)) => failed,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "could not write streamed events");
            battles.into_iter().map(|b| (b, e.to_string())).collect()
        }
        Err(e) => battles.into_iter().map(|b| (b, e.to_string())).collect(),
    }
}

impl Engine {
    /// Runs `f` in the journal writer's next transaction, with whatever
    /// else is queued (see the [module](self)); its value once that
    /// transaction is committed. `f` stands alone: when it fails, what it
    /// wrote is undone and the others' writes go on.
    pub(super) async fn grouped<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Tx<'_>) -> crate::store::Result<T> + Send + 'static,
    ) -> Result<T> {
        self.grouped_on_lanes(Vec::new(), f).await
    }

    /// [`Engine::grouped`] for a write that decides on `lanes` (takes a
    /// turn): the writer's transaction locks every grouped write's lanes
    /// first, in one order.
    pub(super) async fn grouped_on_lanes<T: Send + 'static>(
        &self,
        lanes: Vec<String>,
        f: impl FnMut(&mut Tx<'_>) -> crate::store::Result<T> + Send + 'static,
    ) -> Result<T> {
        let (send, got) = oneshot::channel::<Result<T>>();
        let job: Job = Box::new(Grouped {
            lanes,
            f,
            value: None,
            send,
        });
        let journal = &self.inner.journal;
        journal.lock().items.push(Item::Job(job));
        journal.start(&self.inner.store);
        journal.wake.notify_one();
        journal.hurry.notify_one();
        got.await
            .map_err(|_| Error::Task("the journal writer stopped".into()))?
    }
}

/// How often an answer's text is flushed to the journal while nobody in
/// this process watches live: each flush is a timer and a wake-up, which
/// at one token every 5 ms was most of what a streamed token cost beyond
/// reading it (BENCHMARKS.md, "Against promptfoo").
const UNWATCHED_COALESCE: Duration = Duration::from_millis(25);

/// How often text that is not a contestant's first answer is flushed.
const SIDE_FLUSH: Duration = Duration::from_millis(100);

/// A battle's event stream, seen from one piece of work.
#[derive(Debug, Clone)]
pub(super) struct Sink {
    pub battle_id: String,
    kind: SinkKind,
}

#[derive(Debug, Clone)]
enum SinkKind {
    /// A contestant's own run: output, reasoning, live benchmarks, retry
    /// and reset notices, tools and changed files. A Q&A answer `folds`:
    /// its deltas go to the live journal and are folded away at its end.
    Answer {
        contestant: String,
        folds: bool,
    },
    /// A later turn of a contestant's conversation: its output only.
    Round {
        contestant: String,
    },
    Analysis {
        id: String,
        stage: String,
    },
    CrossExam {
        id: String,
    },
    /// Nothing streams (a series' goal check).
    Silent,
}

/// What a forwarder is sent: text to merge, or an event as it is.
pub(super) enum Piece {
    Text(String),
    Event(EventKind),
}

impl Sink {
    /// A Coding contestant's run (its agent's output is kept).
    pub fn answer(battle_id: &str, contestant: &str) -> Sink {
        let contestant = contestant.into();
        Sink::new(
            battle_id,
            SinkKind::Answer {
                contestant,
                folds: false,
            },
        )
    }

    /// A Q&A contestant's answer, whose deltas are folded at its end.
    pub fn folding_answer(battle_id: &str, contestant: &str) -> Sink {
        let contestant = contestant.into();
        Sink::new(
            battle_id,
            SinkKind::Answer {
                contestant,
                folds: true,
            },
        )
    }

    pub fn round(battle_id: &str, contestant: &str) -> Sink {
        Sink::new(
            battle_id,
            SinkKind::Round {
                contestant: contestant.into(),
            },
        )
    }

    pub fn analysis(battle_id: &str, id: &str, stage: String) -> Sink {
        Sink::new(
            battle_id,
            SinkKind::Analysis {
                id: id.into(),
                stage,
            },
        )
    }

    pub fn cross_exam(battle_id: &str, id: &str) -> Sink {
        Sink::new(battle_id, SinkKind::CrossExam { id: id.into() })
    }

    pub fn silent(battle_id: &str) -> Sink {
        Sink::new(battle_id, SinkKind::Silent)
    }

    fn new(battle_id: &str, kind: SinkKind) -> Sink {
        Sink {
            battle_id: battle_id.to_string(),
            kind,
        }
    }

    /// The contestant whose events these are, if any.
    pub fn contestant(&self) -> Option<&str> {
        match &self.kind {
            SinkKind::Answer { contestant, .. } | SinkKind::Round { contestant } => {
                Some(contestant)
            }
            _ => None,
        }
    }

    /// Streamed text as this sink's event; `None` where nothing streams.
    pub fn output(&self, text: String) -> Option<EventKind> {
        match &self.kind {
            SinkKind::Answer { .. } | SinkKind::Round { .. } => Some(EventKind::Output { text }),
            SinkKind::Analysis { id, stage } => Some(EventKind::AnalysisOutput {
                analysis_id: id.clone(),
                stage: stage.clone(),
                text,
            }),
            SinkKind::CrossExam { id } => Some(EventKind::CrossExamOutput {
                cross_exam_id: id.clone(),
                text,
            }),
            SinkKind::Silent => None,
        }
    }

    /// Streamed reasoning as an event: a contestant's first answer only.
    pub fn reasoning(&self, text: String) -> Option<EventKind> {
        matches!(self.kind, SinkKind::Answer { .. }).then_some(EventKind::Reasoning { text })
    }

    /// Whether this turn's end is recorded by a grouped write (a Q&A
    /// answer's, see `answer::record`), which the journal writes after
    /// everything the sink queued before it.
    pub fn ends_in_queue(&self) -> bool {
        matches!(self.kind, SinkKind::Answer { folds: true, .. })
    }

    /// Whether viewers follow this turn's speed live and see its retries.
    pub fn is_answer(&self) -> bool {
        matches!(self.kind, SinkKind::Answer { .. })
    }

    /// How long text waits to be written with what follows it: an
    /// answer's `coalesce_ms` while someone in this process watches live;
    /// else at least [`UNWATCHED_COALESCE`] (the journal writer gathers
    /// for [`UNWATCHED_GROUP`] then anyway).
    pub fn coalesce(&self, limits: &Limits, watched: bool) -> Duration {
        match self.kind {
            SinkKind::Answer { .. } => {
                let set = Duration::from_millis(limits.coalesce_ms.max(1));
                if watched {
                    set
                } else {
                    set.max(UNWATCHED_COALESCE)
                }
            }
            _ => SIDE_FLUSH,
        }
    }

    /// Queues `kinds` for the journal (see the [module](self)); fails when
    /// this sink's earlier events could not be written (its battle's lease
    /// was lost).
    pub async fn write(&self, engine: &Engine, kinds: Vec<EventKind>) -> Result<()> {
        let journal = &engine.inner.journal;
        journal.failure(&self.battle_id)?;
        if kinds.is_empty() {
            return Ok(());
        }
        let folds = matches!(self.kind, SinkKind::Answer { folds: true, .. });
        let at = engine.now();
        let mut queue = journal.lock();
        // In order: each run of deltas (live) or of other events (kept).
        for kind in kinds {
            let live = folds
                && matches!(
                    kind,
                    EventKind::Output { .. }
                        | EventKind::Reasoning { .. }
                        | EventKind::Benchmark { .. }
                );
            // Text joins the same piece of text still waiting to be written:
            // one event per contestant and transaction, however often the
            // sink flushes.
            let kind = match merge_text(&mut queue.items, self, live, kind) {
                Some(kind) => kind,
                None => continue,
            };
            match queue.items.last_mut() {
                Some(Item::Events(w))
                    if w.live == live
                        && w.at == at
                        && w.battle_id == self.battle_id
                        && w.contestant.as_deref() == self.contestant() =>
                {
                    w.kinds.push(kind)
                }
                _ => queue.items.push(Item::Events(Write {
                    battle_id: self.battle_id.clone(),
                    contestant: self.contestant().map(str::to_string),
                    at,
                    kinds: vec![kind],
                    live,
                })),
            }
        }
        drop(queue);
        journal.start(&engine.inner.store);
        journal.wake.notify_one();
        Ok(())
    }

    /// Fails when this sink's earlier events could not be written (as
    /// [`Sink::write`] does), without waiting for anything.
    pub fn check(&self, engine: &Engine) -> Result<()> {
        engine.inner.journal.failure(&self.battle_id)
    }

    /// Waits until everything queued so far is written; fails as
    /// [`Sink::write`] does.
    pub async fn sync(&self, engine: &Engine) -> Result<()> {
        let journal = &engine.inner.journal;
        let (tx, rx) = oneshot::channel();
        journal.lock().waiters.push(tx);
        journal.start(&engine.inner.store);
        journal.wake.notify_one();
        journal.hurry.notify_one();
        let _ = rx.await;
        journal.failure(&self.battle_id)
    }

    /// A task that writes what it is sent in batches (neighbouring texts
    /// merged into one event, every `coalesce`), for output that arrives
    /// line by line from a process. Its result is all the text it wrote.
    pub fn forwarder(
        &self,
        engine: &Engine,
    ) -> (
        mpsc::UnboundedSender<Piece>,
        tokio::task::JoinHandle<String>,
    ) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Piece>();
        let coalesce = self.coalesce(&engine.config().limits, true);
        let (engine, sink) = (engine.clone(), self.clone());
        let task = tokio::spawn(async move {
            let mut all = String::new();
            while let Some(first) = rx.recv().await {
                tokio::time::sleep(coalesce).await;
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                let mut kinds = Vec::new();
                let mut text = String::new();
                for piece in batch {
                    match piece {
                        Piece::Text(t) => {
                            all.push_str(&t);
                            text.push_str(&t);
                        }
                        Piece::Event(kind) => {
                            kinds.extend(sink.output(std::mem::take(&mut text)).filter(has_text));
                            kinds.push(kind);
                        }
                    }
                }
                kinds.extend(sink.output(text).filter(has_text));
                if let Err(e) = sink.write(&engine, kinds).await {
                    tracing::warn!(error = %e, "could not record streamed output");
                }
            }
            if let Err(e) = sink.sync(&engine).await {
                tracing::warn!(error = %e, "could not record streamed output");
            }
            all
        });
        (tx, task)
    }
}

/// Appends `kind`'s text to the newest waiting event of the same text of
/// `sink`'s battle and contestant (`None`: it is merged), when nothing else
/// of that contestant or of the whole battle, and no grouped write, was
/// queued after it; else gives `kind` back. The merged event keeps its
/// place and its time (that of its first piece).
fn merge_text(items: &mut [Item], sink: &Sink, live: bool, kind: EventKind) -> Option<EventKind> {
    let contestant = sink.contestant();
    if contestant.is_none()
        || !matches!(kind, EventKind::Output { .. } | EventKind::Reasoning { .. })
    {
        return Some(kind);
    }
    for item in items.iter_mut().rev() {
        let w = match item {
            Item::Job(_) => return Some(kind),
            Item::Events(w) => w,
        };
        if w.battle_id != sink.battle_id {
            continue;
        }
        if w.contestant.is_none() {
            return Some(kind);
        }
        if w.contestant.as_deref() != contestant {
            continue;
        }
        if w.live != live {
            return Some(kind);
        }
        return match (w.kinds.last_mut(), kind) {
            (Some(EventKind::Output { text }), EventKind::Output { text: more })
            | (Some(EventKind::Reasoning { text }), EventKind::Reasoning { text: more }) => {
                text.push_str(&more);
                None
            }
            (_, kind) => Some(kind),
        };
    }
    Some(kind)
}

/// An output event with something in it.
fn has_text(kind: &EventKind) -> bool {
    match kind {
        EventKind::Output { text }
        | EventKind::AnalysisOutput { text, .. }
        | EventKind::CrossExamOutput { text, .. } => !text.is_empty(),
        _ => true,
    }
}
