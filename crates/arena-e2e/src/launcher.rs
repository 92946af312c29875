//! Filling in the battle launcher (`#/new`) as a user does.

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use arena_core::BattleType;

use crate::app::poll_until;
use crate::App;

/// How long the launcher may take to show the battle it started.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What to type and pick in the launcher.
#[derive(Debug, Clone)]
pub struct BattleForm<'a> {
    pub battle_type: BattleType,
    pub project: &'a Path,
    pub prompt: &'a str,
    /// `(identity, model)` per contestant row: a persona name (Q&A) or a
    /// backend name (Coding), and a model id as `arena` accepts it.
    pub contestants: Vec<(&'a str, &'a str)>,
    /// Coding only: the check command.
    pub check: Option<&'a str>,
}

impl BattleForm<'_> {
    /// A Q&A battle in `project`.
    pub fn qa<'a>(
        project: &'a Path,
        prompt: &'a str,
        contestants: &[(&'a str, &'a str)],
    ) -> BattleForm<'a> {
        BattleForm {
            battle_type: BattleType::Qa,
            project,
            prompt,
            contestants: contestants.to_vec(),
            check: None,
        }
    }

    /// A Coding battle in the git repository `project`.
    pub fn coding<'a>(
        project: &'a Path,
        prompt: &'a str,
        contestants: &[(&'a str, &'a str)],
    ) -> BattleForm<'a> {
        BattleForm {
            battle_type: BattleType::Coding,
            ..BattleForm::qa(project, prompt, contestants)
        }
    }
}

/// The launcher's elements (the data-testid contract).
pub(crate) mod css {
    pub const LAUNCHER: &str = "[data-testid=launcher]";
    pub const TYPE_QA: &str = "input[data-testid=battle-type-qa]";
    pub const TYPE_CODING: &str = "input[data-testid=battle-type-coding]";
    pub const PROJECT: &str = "input[data-testid=project-input]";
    pub const PROMPT: &str = "textarea[data-testid=prompt-input]";
    pub const ROW: &str = "[data-testid=contestant-row]";
    pub const IDENTITY: &str = "select[data-testid=contestant-identity]";
    pub const MODEL: &str = "select[data-testid=contestant-model]";
    pub const REMOVE: &str = "button[data-testid=remove-contestant]";
    pub const ADD: &str = "button[data-testid=add-contestant]";
    pub const CHECK: &str = "input[data-testid=check-input]";
    pub const START: &str = "button[data-testid=start-battle]";
}

impl App {
    /// Opens the launcher (`#/new`) and waits for its form.
    pub async fn open_launcher(&self) -> Result<()> {
        self.goto("#/new").await?;
        self.wait_for(css::LAUNCHER).await?;
        Ok(())
    }

    /// Makes the launcher show exactly `n` contestant rows, with the
    /// add and remove buttons.
    pub async fn set_contestant_rows(&self, n: usize) -> Result<()> {
        // Bounded: each round adds or removes one row.
        for _ in 0..20 {
            let rows = self.find_all(css::ROW).await?;
            if rows.len() == n {
                return Ok(());
            }
            if rows.len() < n {
                self.click(css::ADD).await?;
            } else {
                let last = rows
                    .last()
                    .ok_or_else(|| anyhow!("no contestant row to remove"))?;
                let remove = last
                    .find(fantoccini::Locator::Css(css::REMOVE))
                    .await
                    .context("finding the last row's remove button")?;
                self.click_element(&remove)
                    .await
                    .context("clicking the last row's remove button")?;
            }
            let before = rows.len();
            self.wait_until(
                &format!("the launcher to go from {before} contestant rows towards {n}"),
                Duration::from_secs(5),
                || async {
                    let now = self.count(css::ROW).await?;
                    Ok((now != before).then_some(()))
                },
            )
            .await?;
        }
        let rows = self.count(css::ROW).await?;
        Err(self.with_log(anyhow!(
            "the launcher shows {rows} contestant rows, wanted {n}"
        )))
    }

    /// Fills in the whole launcher form (it must be open).
    pub async fn fill_launcher(&self, form: &BattleForm<'_>) -> Result<()> {
        self.wait_for(css::LAUNCHER).await?;
        self.click(match form.battle_type {
            BattleType::Qa => css::TYPE_QA,
            BattleType::Coding => css::TYPE_CODING,
        })
        .await?;
        let project = self.wait_for(css::PROJECT).await?;
        self.fill(&project, &form.project.display().to_string())
            .await?;
        let prompt = self.wait_for(css::PROMPT).await?;
        self.fill(&prompt, form.prompt).await?;

        self.set_contestant_rows(form.contestants.len()).await?;
        let rows = self.find_all(css::ROW).await?;
        for (i, (row, (identity, model))) in rows.iter().zip(&form.contestants).enumerate() {
            let select = |css: &'static str| async move {
                row.find(fantoccini::Locator::Css(css))
                    .await
                    .with_context(|| format!("finding {css} in contestant row {}", i + 1))
            };
            self.choose(&select(css::IDENTITY).await?, identity)
                .await
                .with_context(|| format!("contestant row {}: identity", i + 1))?;
            self.choose(&select(css::MODEL).await?, model)
                .await
                .with_context(|| format!("contestant row {}: model", i + 1))?;
        }
        if let Some(check) = form.check {
            let input = self.wait_for(css::CHECK).await?;
            self.fill(&input, check).await?;
        }
        Ok(())
    }

    /// Opens the launcher, fills it in, presses Start and waits for the
    /// battle view; returns the new battle's id (from `#/battle/<id>`).
    pub async fn start_battle(&self, form: &BattleForm<'_>) -> Result<String> {
        self.open_launcher().await?;
        self.fill_launcher(form).await?;
        self.press_start().await?;
        let launcher_error = std::sync::Mutex::new(String::new());
        let waited = poll_until(
            "the launcher to open #/battle/<id>",
            START_TIMEOUT,
            || async {
                if let Ok(text) = self.visible_text("[data-testid=launcher-error]").await {
                    if let Ok(mut seen) = launcher_error.lock() {
                        *seen = text;
                    }
                }
                let hash = self.hash().await?;
                Ok(hash
                    .strip_prefix("#/battle/")
                    .filter(|id| !id.is_empty())
                    .map(str::to_string))
            },
        )
        .await;
        waited.map_err(|err| {
            let shown = launcher_error.lock().map(|s| s.clone()).unwrap_or_default();
            let hint = if shown.is_empty() {
                String::new()
            } else {
                format!("; the launcher says: {shown}")
            };
            self.with_log(anyhow!("{err:#}{hint}"))
        })
    }

    /// Presses the launcher's Start button.
    pub async fn press_start(&self) -> Result<()> {
        self.click(css::START).await
    }

    /// The text of the first element matching `css`, if it is displayed
    /// (an error otherwise).
    async fn visible_text(&self, css: &str) -> Result<String> {
        let element = self.client().find(fantoccini::Locator::Css(css)).await?;
        anyhow::ensure!(element.is_displayed().await?, "{css} is hidden");
        Ok(element.text().await?)
    }
}
