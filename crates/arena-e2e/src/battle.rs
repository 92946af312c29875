//! Reading the battle view (`#/battle/<id>`) in one consistent snapshot.

use std::time::Duration;

use anyhow::{anyhow, Result};
use serde::Deserialize;

use crate::app::poll_until;
use crate::App;

/// What the battle view shows at one instant (read by one script, so the
/// roster and the outputs belong to the same moment).
#[derive(Debug, Clone, Deserialize)]
pub struct BattleSnapshot {
    /// `data-status` of `[data-testid=battle-view]`; `None` without a view.
    pub status: Option<String>,
    /// `data-battle-type` (`qa` | `coding`).
    pub battle_type: Option<String>,
    pub rows: Vec<RosterRow>,
    pub outputs: Vec<OutputPane>,
}

/// One `[data-testid=roster-row]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RosterRow {
    /// `data-contestant-id`.
    pub id: Option<String>,
    /// `data-status`: queued | running | done | error | cancelled.
    pub status: Option<String>,
    /// `data-lane`: local | cloud.
    pub lane: Option<String>,
}

/// One `[data-testid=output-pane]` and its `[data-testid=output-body]`.
#[derive(Debug, Clone, Deserialize)]
pub struct OutputPane {
    /// `data-contestant-id`.
    pub id: Option<String>,
    /// The body's `textContent` (`None` without a body).
    pub text: Option<String>,
    /// Whether the body has the class `markdown` (rendered, finished).
    pub markdown: bool,
}

const SNAPSHOT: &str = r#"
const view = document.querySelector('[data-testid=battle-view]');
const rows = [...document.querySelectorAll('[data-testid=roster-row]')].map(r => ({
  id: r.getAttribute('data-contestant-id'),
  status: r.getAttribute('data-status'),
  lane: r.getAttribute('data-lane'),
}));
const outputs = [...document.querySelectorAll('[data-testid=output-pane]')].map(p => {
  const body = p.querySelector('[data-testid=output-body]');
  return {
    id: p.getAttribute('data-contestant-id'),
    text: body ? body.textContent : null,
    markdown: body ? body.classList.contains('markdown') : false,
  };
});
return {
  status: view ? view.getAttribute('data-status') : null,
  battle_type: view ? view.getAttribute('data-battle-type') : null,
  rows,
  outputs,
};
"#;

impl BattleSnapshot {
    /// The row of contestant `id`.
    pub fn row(&self, id: &str) -> Option<&RosterRow> {
        self.rows.iter().find(|r| r.id.as_deref() == Some(id))
    }

    /// The output text of contestant `id` (empty when it has none yet).
    pub fn output(&self, id: &str) -> &str {
        self.outputs
            .iter()
            .find(|o| o.id.as_deref() == Some(id))
            .and_then(|o| o.text.as_deref())
            .unwrap_or_default()
    }

    /// The output pane of contestant `id`.
    pub fn pane(&self, id: &str) -> Option<&OutputPane> {
        self.outputs.iter().find(|o| o.id.as_deref() == Some(id))
    }

    /// Whether the view and every row read `status`.
    pub fn all(&self, status: &str) -> bool {
        self.status.as_deref() == Some(status)
            && !self.rows.is_empty()
            && self
                .rows
                .iter()
                .all(|r| r.status.as_deref() == Some(status))
    }

    /// `id:status:lane` per row, for messages.
    pub fn describe(&self) -> String {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                format!(
                    "{}:{}:{}",
                    r.id.as_deref().unwrap_or("?"),
                    r.status.as_deref().unwrap_or("?"),
                    r.lane.as_deref().unwrap_or("?")
                )
            })
            .collect();
        format!(
            "battle-view data-status={:?}, rows [{}]",
            self.status,
            rows.join(", ")
        )
    }
}

impl App {
    /// The battle view as it is now.
    pub async fn battle_snapshot(&self) -> Result<BattleSnapshot> {
        self.js(SNAPSHOT, Vec::new()).await
    }

    /// Waits until the battle view and all its roster rows read `status`;
    /// returns that snapshot. The error shows the last one seen.
    pub async fn wait_battle_status(
        &self,
        status: &str,
        timeout: Duration,
    ) -> Result<BattleSnapshot> {
        let last = std::sync::Mutex::new(None::<BattleSnapshot>);
        let waited = poll_until(
            &format!("the battle view and every roster row to read {status}"),
            timeout,
            || async {
                let snap = self.battle_snapshot().await?;
                let reached = snap.all(status);
                if let Ok(mut seen) = last.lock() {
                    *seen = Some(snap.clone());
                }
                Ok(reached.then_some(snap))
            },
        )
        .await;
        waited.map_err(|err| {
            let seen = last
                .lock()
                .ok()
                .and_then(|s| s.as_ref().map(BattleSnapshot::describe))
                .unwrap_or_else(|| "no battle view".into());
            self.with_log(anyhow!("{err:#}; last seen: {seen}"))
        })
    }
}
