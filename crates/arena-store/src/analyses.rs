//! Analyses (the judge's verdicts) and cross-examinations of a battle.

use std::collections::HashMap;

use crate::sql::params;
use chrono::{DateTime, Utc};

use arena_domain::analysis::{Analysis, AnalysisStatus, Outcome};
use arena_domain::cross_exam::CrossExamination;
use arena_domain::event::EventKind;

use crate::error::Result;
use crate::rows::{self, ms};
use crate::{Store, Tx};

/// A unit enum's serde name (`"no_clear_winner"`), as stored in a TEXT column.
fn serde_plain<T: serde::Serialize>(v: &T) -> Result<String> {
    match serde_json::to_value(v)? {
        serde_json::Value::String(s) => Ok(s),
        other => Ok(other.to_string()),
    }
}

impl Store {
    /// The newest analysis of a battle.
    pub fn latest_analysis(&self, battle_id: &str) -> Result<Option<Analysis>> {
        self.query(|c| rows::latest_analysis(c, battle_id))
    }

    /// Each battle's newest analysis outcome and the winner it chose (a
    /// contestant id), for the leaderboard.
    pub fn analysis_outcomes(&self) -> Result<HashMap<String, (Outcome, Option<String>)>> {
        self.outcomes_of(None)
    }

    /// [`Store::analysis_outcomes`] of one series' battles.
    pub fn series_analysis_outcomes(
        &self,
        series_id: &str,
    ) -> Result<HashMap<String, (Outcome, Option<String>)>> {
        self.outcomes_of(Some(series_id))
    }

    fn outcomes_of(
        &self,
        series_id: Option<&str>,
    ) -> Result<HashMap<String, (Outcome, Option<String>)>> {
        self.query(|c| {
            let rows = c.rows(
                "SELECT battle_id, outcome, winner_id FROM analyses a
                 WHERE status = 'done' AND outcome IS NOT NULL AND created_at = (
                     SELECT MAX(created_at) FROM analyses b WHERE b.battle_id = a.battle_id AND b.status = 'done')
                   AND (CAST(?1 AS TEXT) IS NULL OR battle_id IN (SELECT id FROM battles WHERE series_id = ?1))",
                params![series_id],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<String>(1)?,
                        r.get::<Option<String>>(2)?,
                    ))
                },
            )?;
            let mut map = HashMap::new();
            for (battle, outcome, winner) in rows {
                if let Ok(o) = serde_json::from_value(serde_json::Value::String(outcome)) {
                    map.insert(battle, (o, winner));
                }
            }
            Ok(map)
        })
    }

    /// A battle's cross-examinations, in order.
    pub fn cross_examinations(&self, battle_id: &str) -> Result<Vec<CrossExamination>> {
        self.query(|c| rows::cross_examinations(c, battle_id))
    }
}

impl Tx<'_> {
    pub fn insert_analysis(&mut self, a: &Analysis) -> Result<()> {
        self.run(
            "INSERT INTO analyses (id, battle_id, status, model, provider, created_at) VALUES (?1, ?2, 'running', ?3, ?4, ?5)",
            params![a.id, a.battle_id, a.model, a.provider, ms(a.created_at)],
        )?;
        self.emit(
            &a.battle_id,
            None,
            a.created_at,
            EventKind::AnalysisStatus {
                analysis_id: a.id.clone(),
                status: AnalysisStatus::Running,
                outcome: None,
                winner: None,
                error: None,
            },
        )?;
        Ok(())
    }

    /// Stores a finished (or failed) analysis and announces it.
    pub fn finish_analysis(&mut self, a: &Analysis, at: DateTime<Utc>) -> Result<()> {
        self.run(
            "UPDATE analyses SET status = ?1, outcome = ?2, winner_id = ?3, ranking = ?4, reasons = ?5,
                digests = ?6, judge_runs = ?7, error = ?8, finished_at = ?9, cost_usd = ?11 WHERE id = ?10",
            params![
                serde_plain(&a.status)?,
                a.outcome.as_ref().map(serde_plain).transpose()?,
                a.winner,
                serde_json::to_string(&a.ranking)?,
                serde_json::to_string(&a.reasons)?,
                serde_json::to_string(&a.digests)?,
                serde_json::to_string(&a.judge_runs)?,
                a.error,
                ms(at),
                a.id,
                a.cost_usd
            ],
        )?;
        self.emit(
            &a.battle_id,
            None,
            at,
            EventKind::AnalysisStatus {
                analysis_id: a.id.clone(),
                status: a.status,
                outcome: a.outcome,
                winner: a.winner.clone(),
                error: a.error.clone(),
            },
        )?;
        Ok(())
    }

    pub fn insert_cross_examination(&mut self, x: &CrossExamination) -> Result<u32> {
        let number: u32 = self.db().row(
            "SELECT COALESCE(MAX(number), 0) + 1 FROM cross_examinations WHERE battle_id = ?1",
            params![x.battle_id],
            |r| r.get(0),
        )?;
        self.run(
            "INSERT INTO cross_examinations (id, battle_id, number, identity, model, provider, question, status, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8)",
            params![x.id, x.battle_id, i64::from(number), x.identity, x.model, x.provider, x.question, ms(x.created_at)],
        )?;
        self.emit(
            &x.battle_id,
            None,
            x.created_at,
            EventKind::CrossExamStatus {
                cross_exam_id: x.id.clone(),
                number,
                status: AnalysisStatus::Running,
                error: None,
            },
        )?;
        Ok(number)
    }

    pub fn finish_cross_examination(
        &mut self,
        x: &CrossExamination,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.run(
            "UPDATE cross_examinations SET status = ?1, output = ?2, verdict = ?3, error = ?4, path = ?5, finished_at = ?6 WHERE id = ?7",
            params![
                serde_plain(&x.status)?,
                x.output,
                x.verdict.as_ref().map(serde_json::to_string).transpose()?,
                x.error,
                x.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
                ms(at),
                x.id
            ],
        )?;
        self.emit(
            &x.battle_id,
            None,
            at,
            EventKind::CrossExamStatus {
                cross_exam_id: x.id.clone(),
                number: x.number,
                status: x.status,
                error: x.error.clone(),
            },
        )?;
        Ok(())
    }
}
