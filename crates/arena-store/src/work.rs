//! Work that runs beside a battle's drive (analyses, cross-examinations,
//! refine rounds): who runs it, its orphans, and requests to cancel it or
//! the battle.

use chrono::{DateTime, Utc};

use crate::sql::{params, Conn};

use arena_domain::analysis::AnalysisStatus;
use arena_domain::battle::ContestantStatus;
use arena_domain::event::EventKind;

use crate::error::Result;
use crate::rows::ms;
use crate::{Store, Tx};

/// Work that runs outside a battle's drive and is recorded as `running`
/// until it ends: a process that dies leaves it so (see
/// [`Tx::interrupt_orphans`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    Analysis,
    CrossExamination,
    Round,
}

impl Work {
    fn table(self) -> &'static str {
        match self {
            Work::Analysis => "analyses",
            Work::CrossExamination => "cross_examinations",
            Work::Round => "rounds",
        }
    }
}

/// A piece of [`Work`] whose process stopped before it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Orphan {
    pub work: Work,
    pub id: String,
    pub battle_id: String,
    /// The model an analysis was judging with.
    pub model: String,
}

impl Store {
    /// Whether a piece of work is still running.
    pub fn work_running(&self, work: Work, id: &str) -> Result<bool> {
        self.query(|c| {
            Ok(c.opt_row(
                &format!(
                    "SELECT status = 'running' FROM {} WHERE id = ?1",
                    work.table()
                ),
                params![id],
                |r| r.get(0),
            )?
            .unwrap_or(false))
        })
    }

    /// [`Tx::cancel_requests`], read without the write lock (a driver's
    /// heartbeat between renewals of its lease).
    pub fn cancel_requests(&self, battle_id: &str) -> Result<(bool, Vec<String>)> {
        self.query(|c| cancel_requests(c, battle_id))
    }

    /// Whether a piece of work was asked to stop.
    pub fn work_cancel_requested(&self, work: Work, id: &str) -> Result<bool> {
        self.query(|c| {
            Ok(c.opt_row(
                &format!(
                    "SELECT cancel_requested FROM {} WHERE id = ?1",
                    work.table()
                ),
                params![id],
                |r| r.get(0),
            )?
            .unwrap_or(false))
        })
    }
}

/// Whether the battle, and which of its contestants, were asked to stop.
fn cancel_requests(c: Conn<'_>, battle_id: &str) -> Result<(bool, Vec<String>)> {
    let battle: bool = c.row(
        "SELECT cancel_requested FROM battles WHERE id = ?1",
        params![battle_id],
        |r| r.get(0),
    )?;
    let ids = c.rows(
        "SELECT id FROM contestants WHERE battle_id = ?1 AND cancel_requested = TRUE",
        params![battle_id],
        |r| r.get(0),
    )?;
    Ok((battle, ids))
}

impl Tx<'_> {
    pub fn request_cancel(&mut self, battle_id: &str, contestant_id: Option<&str>) -> Result<()> {
        match contestant_id {
            Some(id) => self.run(
                "UPDATE contestants SET cancel_requested = TRUE WHERE id = ?1 AND battle_id = ?2",
                params![id, battle_id],
            )?,
            None => self.run(
                "UPDATE battles SET cancel_requested = TRUE WHERE id = ?1",
                params![battle_id],
            )?,
        };
        Ok(())
    }

    /// Asks every running piece of `work` of a battle (a refine round: of
    /// `contestant_id`'s) to stop; returns their ids.
    pub fn request_work_cancel(
        &mut self,
        work: Work,
        battle_id: &str,
        contestant_id: Option<&str>,
    ) -> Result<Vec<String>> {
        // Analyses and cross-examinations belong to the battle; rounds to
        // its contestants (all of them, or `contestant_id`).
        let filter = match work {
            Work::Round => "contestant_id IN (SELECT id FROM contestants WHERE battle_id = ?1) AND contestant_id = COALESCE(?2, contestant_id)",
            _ => "battle_id = ?1",
        };
        let ids: Vec<String> = {
            let sql = format!(
                "SELECT id FROM {} WHERE status = 'running' AND {filter}",
                work.table()
            );
            let params = match work {
                Work::Round => params![battle_id, contestant_id],
                _ => params![battle_id],
            };
            self.db().rows(&sql, params, |r| r.get(0))?
        };
        for id in &ids {
            self.run(
                &format!(
                    "UPDATE {} SET cancel_requested = TRUE WHERE id = ?1",
                    work.table()
                ),
                params![id],
            )?;
        }
        Ok(ids)
    }

    /// Records which process runs a piece of work (just inserted).
    pub fn set_owner(&mut self, work: Work, id: &str, host: &str, pid: u32) -> Result<()> {
        self.run(
            &format!(
                "UPDATE {} SET owner_host = ?1, owner_pid = ?2 WHERE id = ?3",
                work.table()
            ),
            params![host, i64::from(pid), id],
        )?;
        Ok(())
    }

    /// Marks as failed, with `reason`, every analysis, cross-examination and
    /// refine round still `running` whose process is gone (on this host,
    /// its PID no longer exists; recorded before owners were, it has none).
    /// Their status events go out; returns what was marked.
    pub fn interrupt_orphans(
        &mut self,
        my_host: &str,
        pid_alive: impl Fn(u32) -> bool,
        reason: &str,
        at: DateTime<Utc>,
    ) -> Result<Vec<Orphan>> {
        let mut orphans = Vec::new();
        for (work, battle, model) in [
            (Work::Analysis, "battle_id", "model"),
            (Work::CrossExamination, "battle_id", "model"),
            (
                Work::Round,
                "(SELECT battle_id FROM contestants c WHERE c.id = contestant_id)",
                "''",
            ),
        ] {
            let rows = self.db().rows(
                &format!(
                    "SELECT id, {battle}, {model}, owner_host, owner_pid FROM {} WHERE status = 'running'",
                    work.table()
                ),
                &[],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<String>(1)?,
                        r.get::<String>(2)?,
                        r.get::<Option<String>>(3)?,
                        r.get::<Option<u32>>(4)?,
                    ))
                },
            )?;
            for (id, battle_id, model, host, pid) in rows {
                let gone = match (host, pid) {
                    (Some(host), Some(pid)) => host == my_host && !pid_alive(pid),
                    _ => true,
                };
                if gone {
                    orphans.push(Orphan {
                        work,
                        id,
                        battle_id,
                        model,
                    });
                }
            }
        }
        for o in &orphans {
            self.run(
                &format!(
                    "UPDATE {} SET status = 'error', error = ?1, finished_at = ?2 WHERE id = ?3 AND status = 'running'",
                    o.work.table()
                ),
                params![reason, ms(at), o.id],
            )?;
            let kind = match o.work {
                Work::Analysis => EventKind::AnalysisStatus {
                    analysis_id: o.id.clone(),
                    status: AnalysisStatus::Error,
                    outcome: None,
                    winner: None,
                    error: Some(reason.to_string()),
                },
                Work::CrossExamination => {
                    let number: u32 = self.db().row(
                        "SELECT number FROM cross_examinations WHERE id = ?1",
                        params![o.id],
                        |r| r.get(0),
                    )?;
                    EventKind::CrossExamStatus {
                        cross_exam_id: o.id.clone(),
                        number,
                        status: AnalysisStatus::Error,
                        error: Some(reason.to_string()),
                    }
                }
                Work::Round => {
                    let number: u32 = self.db().row(
                        "SELECT number FROM rounds WHERE id = ?1",
                        params![o.id],
                        |r| r.get(0),
                    )?;
                    EventKind::Round {
                        number,
                        status: Some(ContestantStatus::Error),
                        feedback: None,
                    }
                }
            };
            let contestant: Option<String> = match o.work {
                Work::Round => self.db().opt_row(
                    "SELECT contestant_id FROM rounds WHERE id = ?1",
                    params![o.id],
                    |r| r.get(0),
                )?,
                _ => None,
            };
            self.emit(&o.battle_id, contestant.as_deref(), at, kind)?;
        }
        Ok(orphans)
    }

    /// Cancellation requests recorded by other processes, for a battle we drive.
    pub fn cancel_requests(&self, battle_id: &str) -> Result<(bool, Vec<String>)> {
        cancel_requests(self.db(), battle_id)
    }
}
