//! A series' rows and report: per battle and contestant, what it did and
//! what its goal checks and later turns cost; the summary, the overview
//! and the report files (`report.md`, `report.json`, `runs.csv`,
//! `report.html`).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use crate::battle::{Battle, ContestantStatus};
use crate::error::{Error, Result};
use crate::series::{
    self, time_left_ms, GoalCheck, RoundCost, RunRow, Series, SeriesProgress, SeriesRequest,
    SeriesStatus, SeriesSummary,
};

use super::Engine;

impl Engine {
    /// Where a series is: battles ended and under way, and what it spent
    /// (one query, however long the series).
    pub async fn series_progress(&self, id: &str) -> Result<SeriesProgress> {
        let series = self.series(id).await?;
        let i = series.id.clone();
        let ((done, running, spent), (ended, started)) =
            self.db(move |s| s.series_progress_and_pace(&i)).await?;
        let time_left_ms = if series.status == SeriesStatus::Running {
            let now = crate::store::ms(self.now());
            let ended: Vec<f64> = ended.into_iter().map(|d| d as f64).collect();
            let elapsed: Vec<f64> = started
                .into_iter()
                .map(|t| (now - t).max(0) as f64)
                .collect();
            let not_started = series.total.saturating_sub(done + running);
            time_left_ms(&ended, &elapsed, not_started, series.request.parallel)
                .map(|ms| ms.round() as u64)
        } else {
            None
        };
        Ok(SeriesProgress {
            status: series.status,
            done,
            total: series.total,
            running,
            spent_usd: spent.total(),
            spent_known_usd: spent.known_usd,
            unknown_costs: spent.unknown,
            unpriced: self.unpriced(&spent.unknown_models),
            time_left_ms,
        })
    }

    /// Of the models a series ran without a known cost, those with no
    /// price ("model at provider"): a `[[price]]` would give their cost
    /// (the others ended before their server reported one).
    fn unpriced(&self, models: &[(String, String)]) -> Vec<String> {
        let config = self.config();
        models
            .iter()
            .filter(|(provider, model)| {
                !provider.is_empty() && config.price(provider, model).is_none()
            })
            .map(|(provider, model)| format!("{model} at {provider}"))
            .collect()
    }

    /// The rows of the battle at place `slot` of a series.
    pub(super) async fn place_rows(
        &self,
        series: &Series,
        slot: u64,
        battle_id: &str,
    ) -> Result<Vec<RunRow>> {
        let detail = self.battle_detail(battle_id).await?;
        let b = battle_id.to_string();
        let checks = self.db(move |s| s.goal_checks(&b)).await?;
        let rounds: BTreeMap<String, Vec<RoundCost>> = detail
            .rounds
            .iter()
            .map(|(id, rounds)| {
                let costs = rounds
                    .iter()
                    .map(|r| RoundCost {
                        cost_usd: r.cost_usd,
                        status: r.status,
                    })
                    .collect();
                (id.clone(), costs)
            })
            .collect();
        let outcome = detail.analysis.as_ref().and_then(|a| a.outcome);
        Ok(rows_of(
            &series.request,
            slot,
            &detail.battle,
            outcome,
            &Judged {
                checks: &checks,
                rounds: &rounds,
            },
        ))
    }

    /// Every row of a series (one per contestant per battle, by place):
    /// its analyses' outcomes, goal checks and later turns' costs in one
    /// read each, then its battles (without outputs) a chunk at a time, so
    /// a long series costs a few queries and little memory.
    async fn series_rows(&self, series: &Series) -> Result<Vec<RunRow>> {
        /// Battles read per query.
        const CHUNK: usize = 64;
        let i = series.id.clone();
        let (outcomes, checks, rounds, slots) = self
            .db(move |s| {
                Ok::<_, Error>((
                    s.series_analysis_outcomes(&i)?,
                    s.series_goal_checks(&i)?,
                    s.series_round_costs(&i)?,
                    s.series_battles(&i)?,
                ))
            })
            .await?;
        let slot_of: HashMap<&str, u64> = slots.iter().map(|(n, id)| (id.as_str(), *n)).collect();
        let judged = Judged {
            checks: &checks,
            rounds: &rounds,
        };
        let mut by_slot: BTreeMap<u64, Vec<RunRow>> = BTreeMap::new();
        for offset in (0..slots.len()).step_by(CHUNK) {
            let query = crate::battle::BattleQuery {
                series_id: Some(series.id.clone()),
                limit: CHUNK,
                offset,
                ..crate::battle::BattleQuery::default()
            };
            let (battles, _) = self.db(move |s| s.battle_page(&query)).await?;
            for battle in &battles {
                if let Some(&slot) = slot_of.get(battle.id.as_str()) {
                    let outcome = outcomes.get(&battle.id).map(|(o, _)| *o);
                    let rows = rows_of(&series.request, slot, battle, outcome, &judged);
                    by_slot.insert(slot, rows);
                }
            }
        }
        Ok(by_slot.into_values().flatten().collect())
    }

    /// A series with its rows (one per contestant per battle) and the
    /// report computed from them.
    ///
    /// While blind battles of it await the user's vote, the rows and the
    /// report are left out (see `SeriesSummary::awaiting_votes`).
    pub async fn series_summary(&self, id: &str) -> Result<SeriesSummary> {
        self.summarise(id, true).await
    }

    /// A series for a listing: as [`Engine::series_summary`] but without
    /// its rows and report, which read every battle of it.
    pub async fn series_overview(&self, id: &str) -> Result<SeriesSummary> {
        self.summarise(id, false).await
    }

    async fn summarise(&self, id: &str, with_rows: bool) -> Result<SeriesSummary> {
        let series = self.series(id).await?;
        let i = series.id.clone();
        let (slots, awaiting_votes) = self
            .db(move |s| Ok::<_, Error>((s.series_battles(&i)?, s.series_masked(&i)?)))
            .await?;
        let rows = if with_rows && awaiting_votes == 0 {
            self.series_rows(&series).await?
        } else {
            Vec::new()
        };
        let reports = series::report(&rows);
        let progress = self.series_progress(&series.id).await?;
        Ok(SeriesSummary {
            series,
            battles: slots.into_values().collect(),
            rows,
            reports,
            progress,
            awaiting_votes,
        })
    }

    /// Writes the series' report into `PROJECT/Arena/series-<slug>/`:
    /// `report.md`, `report.json` and `runs.csv`; returns the folder.
    /// A blind series' report waits for the votes on all its battles.
    pub async fn write_series_report(&self, id: &str) -> Result<PathBuf> {
        let (summary, files) = self.series_report_files(id).await?;
        let s = &summary.series;
        // Its folder is in its project, on the machine that started it.
        if let Some(origin) = s.machine.as_deref().filter(|m| *m != self.machine()) {
            if self.database_is_team() {
                return Err(Error::Conflict(format!(
                    "series {}'s report folder is on {origin}, where it started; `arena series report {} --format md` (or html, json, csv) prints it here",
                    crate::battle::short_id(&s.id),
                    crate::battle::short_id(&s.id)
                )));
            }
        }
        let dir = match &s.report_path {
            Some(dir) => dir.clone(),
            None => crate::results::series_dir(
                &s.request.project,
                &s.id,
                &s.request.prompts[0].prompt,
                s.created_at,
            )?,
        };
        let d = dir.clone();
        tokio::task::spawn_blocking(move || -> Result<()> {
            for (name, text) in files {
                crate::results::write_atomic(&d.join(name), text.as_bytes())?;
            }
            Ok(())
        })
        .await??;
        let (i, d) = (s.id.clone(), dir.clone());
        self.db(move |st| st.transact(|tx| tx.set_series_report(&i, &d)))
            .await?;
        Ok(dir)
    }
}

impl Engine {
    /// One of a series' report files (`report.md`, `report.json`,
    /// `runs.csv`, `report.html`) as text, made from the database: any
    /// machine of a team can show any series' report, whoever ran it.
    pub async fn series_report_text(&self, id: &str, file: &str) -> Result<String> {
        let (_, files) = self.series_report_files(id).await?;
        files
            .into_iter()
            .find(|(name, _)| *name == file)
            .map(|(_, text)| text)
            .ok_or_else(|| {
                crate::error::Invalid::Other(format!(
                    "a series' report has no file `{file}`: report.md, report.json, runs.csv or report.html"
                ))
                .into()
            })
    }

    /// The series' summary and its report files' names and texts; refused
    /// while blind battles of it await votes.
    async fn series_report_files(
        &self,
        id: &str,
    ) -> Result<(SeriesSummary, [(&'static str, String); 4])> {
        let summary = self.series_summary(id).await?;
        if summary.awaiting_votes > 0 {
            return Err(Error::Conflict(format!(
                "{} blind battles of series {} await your vote; its report is written once each is voted on (arena battle vote) or revealed",
                summary.awaiting_votes,
                crate::battle::short_id(&summary.series.id)
            )));
        }
        let samples = self.samples(&summary).await?;
        let files = [
            ("report.md", series::report_markdown(&summary)),
            ("report.json", series::report_json(&summary)),
            ("runs.csv", series::runs_csv(&summary.rows)),
            (
                "report.html",
                crate::html::series_report(&summary, &samples),
            ),
        ];
        Ok((summary, files))
    }

    /// The first run's answers to each prompt (the first 10 prompts), for
    /// the HTML report.
    async fn samples(&self, summary: &SeriesSummary) -> Result<Vec<crate::html::Sample>> {
        let mut samples = Vec::new();
        for (p, prompt) in summary.series.request.prompts.iter().enumerate().take(10) {
            let Some(row) = summary.rows.iter().find(|r| r.prompt == p && r.run == 1) else {
                continue;
            };
            let battle = self.battle(&row.battle_id).await?;
            samples.push(crate::html::Sample {
                prompt: prompt.prompt.clone(),
                answers: battle
                    .contestants
                    .iter()
                    .map(|c| {
                        let answer = c.output.clone().unwrap_or_else(|| {
                            c.error
                                .clone()
                                .map(|e| format!("(error: {e})"))
                                .unwrap_or_default()
                        });
                        (format!("{}@{}", c.identity, c.model), answer)
                    })
                    .collect(),
            });
        }
        Ok(samples)
    }
}

/// What was judged of a battle's contestants besides the battle itself,
/// by contestant id: goal checks and later turns.
struct Judged<'a> {
    checks: &'a BTreeMap<String, Vec<GoalCheck>>,
    rounds: &'a BTreeMap<String, Vec<RoundCost>>,
}

/// One row per contestant of the battle at place `slot`; `outcome` is its
/// newest analysis's.
fn rows_of(
    request: &SeriesRequest,
    slot: u64,
    battle: &Battle,
    outcome: Option<crate::analysis::Outcome>,
    judged: &Judged<'_>,
) -> Vec<RunRow> {
    let (prompt, run) = request.slot(slot);
    let tie = battle.winner.is_none() && outcome == Some(crate::analysis::Outcome::NoClearWinner);
    let decided = battle.winner.is_some() || tie;
    battle
        .contestants
        .iter()
        .map(|c| {
            let mine = judged.checks.get(&c.id);
            let last = mine.and_then(|v| v.last());
            let goal_cost = mine
                .map(|v| crate::benchmark::add_costs(v.iter().map(|g| g.cost_usd)))
                .unwrap_or(Some(0.0));
            // Later turns are rounds; each costs what it cost.
            let turns_cost = crate::benchmark::add_costs(
                judged.rounds.get(&c.id).into_iter().flatten().map(|r| {
                    r.cost_usd
                        .or((r.status != Some(ContestantStatus::Done)).then_some(0.0))
                }),
            );
            RunRow {
                run,
                prompt,
                battle_id: battle.id.clone(),
                contestant_id: c.id.clone(),
                contestant: format!("{}@{}", c.identity, c.model),
                status: c.status,
                won: battle
                    .winner
                    .as_ref()
                    .is_some_and(|w| w.contestant_id == c.id),
                tie,
                decided,
                goal_passed: last.and_then(|g| g.passed),
                goal_reason: last.and_then(|g| g.reason.clone()),
                goal_error: last.and_then(|g| g.error.clone()),
                turns: mine.map_or(1, |v| v.len().max(1) as u32),
                duration_ms: c.benchmark.duration_ms,
                ttft_ms: c.benchmark.ttft_ms,
                tokens_per_sec: c.benchmark.tokens_per_sec,
                local: c.lane == crate::battle::Lane::Local,
                prompt_tokens: c.benchmark.prompt_tokens,
                completion_tokens: c.benchmark.completion_tokens,
                cost_usd: crate::benchmark::add_costs([c.benchmark.cost_usd, turns_cost]),
                judging_cost_usd: goal_cost,
            }
        })
        .collect()
}
