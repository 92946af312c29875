//! Live progress for a battle on the terminal: one line per contestant with
//! status, elapsed time, tokens, tokens/s and the latest words. Drawn on
//! stderr, and only when it is a terminal; Ctrl-C cancels the battle.

use std::collections::HashMap;
use std::pin::pin;
use std::time::Duration;

use arena_core::battle::{Battle, ContestantStatus};
use arena_core::{BattleEvent, Engine, Error, EventKind};
use futures_lite::StreamExt;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::view;

struct Line {
    bar: ProgressBar,
    lane: String,
    status: ContestantStatus,
    tokens: u64,
    rate: Option<f64>,
    tail: String,
    /// Why it is still queued (its lane is busy), shown instead of output.
    waiting: Option<String>,
}

impl Line {
    fn render(&mut self) {
        let rate = self
            .rate
            .map(|r| format!("{r:.1} tok/s"))
            .unwrap_or_default();
        // Made printable before it is cut, so a sequence is taken out
        // whole (an unfinished one, still streaming, entirely).
        let tail: String = view::shown(&self.tail)
            .chars()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let tail = match &self.waiting {
            Some(reason) => view::shown(reason).into_owned(),
            None => tail.replace(['\n', '\t'], " "),
        };
        self.bar.set_message(format!(
            "[{}] {:<9} {:>6} tok {:>12}  {}",
            self.lane,
            self.status.as_str(),
            self.tokens,
            rate,
            tail
        ));
    }
}

struct Bars {
    lines: HashMap<String, Line>,
}

impl Bars {
    fn new(battle: &Battle, show: bool) -> Bars {
        let multi = MultiProgress::with_draw_target(if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let style = ProgressStyle::with_template("{spinner} {prefix:<32} {elapsed:>4} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let width = 32;
        // A blind battle shows its labels only, until the vote.
        let view = arena_core::blind::BattleView::of(battle);
        let masked = view.masked;
        let battle: &Battle = &view.battle;
        let lines = battle
            .contestants
            .iter()
            .map(|c| {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(style.clone());
                let mut name = if masked {
                    format!("Contestant {}", c.identity)
                } else {
                    format!("{}@{}", c.identity, c.model)
                };
                if name.chars().count() > width {
                    name = name.chars().take(width - 1).collect::<String>() + "…";
                }
                bar.set_prefix(name);
                let mut line = Line {
                    bar,
                    lane: view
                        .lane(c)
                        .map_or_else(|| "blind".to_string(), |lane| lane.to_string()),
                    status: c.status,
                    tokens: 0,
                    rate: None,
                    tail: String::new(),
                    waiting: c.waiting.clone(),
                };
                line.render();
                (c.id.clone(), line)
            })
            .collect();
        Bars { lines }
    }

    fn apply(&mut self, event: &BattleEvent) {
        let Some(line) = event
            .contestant_id
            .as_ref()
            .and_then(|id| self.lines.get_mut(id))
        else {
            return;
        };
        match &event.kind {
            EventKind::ContestantStatus { status, .. } => {
                line.status = *status;
                line.waiting = None;
                match status {
                    ContestantStatus::Running => {
                        line.bar.reset_elapsed();
                        line.bar.enable_steady_tick(Duration::from_millis(120));
                    }
                    s if s.is_terminal() => line.bar.disable_steady_tick(),
                    _ => {}
                }
            }
            EventKind::Output { text } => {
                line.tail.push_str(text);
                if line.tail.len() > 400 {
                    let cut = line.tail.len() - 200;
                    let cut = (cut..line.tail.len())
                        .find(|i| line.tail.is_char_boundary(*i))
                        .unwrap_or(0);
                    line.tail.drain(..cut);
                }
            }
            EventKind::Folded { output, .. } => {
                let start = output.len().saturating_sub(200);
                let start = (start..=output.len())
                    .find(|i| output.is_char_boundary(*i))
                    .unwrap_or(0);
                line.tail = output[start..].to_string();
            }
            EventKind::Waiting { reason } => line.waiting = reason.clone(),
            EventKind::Reset { .. } => {
                line.tail.clear();
                line.tokens = 0;
                line.rate = None;
            }
            EventKind::Benchmark { benchmark } => {
                line.tokens = benchmark.completion_tokens.unwrap_or(line.tokens);
                line.rate = benchmark.tokens_per_sec.or(line.rate);
            }
            _ => return,
        }
        line.render();
    }

    fn finish(&mut self) {
        for line in self.lines.values_mut() {
            line.bar.disable_steady_tick();
            line.render();
            line.bar.abandon();
        }
    }
}

/// Runs a created battle to the end while showing its progress.
pub async fn follow(engine: &Engine, battle: Battle, show: bool) -> Result<Battle, Error> {
    let (e, id) = (engine.clone(), battle.id.clone());
    let task = tokio::spawn(async move { e.run_battle(&id).await });
    watch(engine, &battle, show, task).await
}

/// Resumes one battle while showing its progress.
pub async fn resume(engine: &Engine, battle: Battle, show: bool) -> Result<Battle, Error> {
    let (e, id) = (engine.clone(), battle.id.clone());
    let task = tokio::spawn(async move {
        let mut done = e.resume(Some(&id)).await?;
        match done.pop() {
            Some(b) => Ok(b),
            None => e.battle(&id).await,
        }
    });
    watch(engine, &battle, show, task).await
}

async fn watch(
    engine: &Engine,
    battle: &Battle,
    show: bool,
    task: tokio::task::JoinHandle<Result<Battle, Error>>,
) -> Result<Battle, Error> {
    let mut bars = Bars::new(battle, show);
    let mut events = pin!(engine.subscribe(&battle.id, 0));
    let mut task = pin!(task);
    let mut interrupted = false;
    let result = loop {
        tokio::select! {
            done = &mut task => break done.map_err(Error::from).and_then(|r| r),
            Some(event) = events.next() => match event {
                Ok(event) => bars.apply(&event),
                Err(e) => tracing::warn!(error = %e, "event stream"),
            },
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                bars.finish();
                eprintln!("arena: cancelling battle {} (Ctrl-C again to quit at once)…", battle.id);
                let (e, id) = (engine.clone(), battle.id.clone());
                tokio::spawn(async move {
                    if let Err(err) = e.cancel_battle(&id).await {
                        eprintln!("arena: cancel failed: {}", view::shown(&err.to_string()));
                    }
                });
                tokio::spawn(async {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
                    }
                });
            }
        }
    };
    bars.finish();
    result
}

/// Runs an analysis with a spinner on the terminal.
pub async fn analyze(
    engine: &Engine,
    battle_id: &str,
    model: Option<&str>,
    show: bool,
) -> Result<arena_core::analysis::Analysis, Error> {
    judging(show, engine.analyze(battle_id, model)).await
}

/// [`Engine::judge_ended`] with a spinner while the judge works.
pub async fn judge(
    engine: &Engine,
    battle: &arena_core::Battle,
    model: Option<&str>,
    show: bool,
) -> arena_core::Judged {
    judging(show, engine.judge_ended(battle, model)).await
}

/// `work` with a "judging" spinner on the terminal while it runs.
async fn judging<T>(show: bool, work: impl std::future::Future<Output = T>) -> T {
    let spinner = if show {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    spinner.set_message("judging the results…");
    spinner.enable_steady_tick(Duration::from_millis(120));
    let done = work.await;
    spinner.finish_and_clear();
    done
}
