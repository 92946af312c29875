//! Where streamed text goes: a model's answer, an agent's output, a judge's
//! or an examiner's text, as events of its battle's journal. Every kind of
//! turn writes through a [`Sink`], so what a viewer sees of each is decided
//! here once.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::config::Limits;
use crate::error::Result;
use crate::event::EventKind;

use super::Engine;

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
    /// and reset notices, tools and changed files.
    Answer {
        contestant: String,
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
    pub fn answer(battle_id: &str, contestant: &str) -> Sink {
        Sink::new(
            battle_id,
            SinkKind::Answer {
                contestant: contestant.into(),
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
            SinkKind::Answer { contestant } | SinkKind::Round { contestant } => Some(contestant),
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

    /// Whether viewers follow this turn's speed live and see its retries.
    pub fn is_answer(&self) -> bool {
        matches!(self.kind, SinkKind::Answer { .. })
    }

    /// How long text waits to be written with what follows it.
    pub fn coalesce(&self, limits: &Limits) -> Duration {
        match self.kind {
            SinkKind::Answer { .. } => Duration::from_millis(limits.coalesce_ms.max(1)),
            _ => SIDE_FLUSH,
        }
    }

    /// Writes `kinds` in one transaction; a contestant's only while this
    /// process holds its battle's lease.
    pub async fn write(&self, engine: &Engine, kinds: Vec<EventKind>) -> Result<()> {
        if kinds.is_empty() {
            return Ok(());
        }
        let (battle_id, at) = (self.battle_id.clone(), engine.now());
        let contestant = self.contestant().map(str::to_string);
        engine
            .db(move |s| {
                s.transact(|tx| {
                    if contestant.is_some() {
                        tx.require_lease(&battle_id)?;
                    }
                    for kind in kinds {
                        tx.emit(&battle_id, contestant.as_deref(), at, kind)?;
                    }
                    Ok(())
                })
            })
            .await
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
        let coalesce = self.coalesce(&engine.config().limits);
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
            all
        });
        (tx, task)
    }
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
