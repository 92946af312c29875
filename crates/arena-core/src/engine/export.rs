//! A battle's report to share (`arena battle export`, the app's "Export
//! report"): one self-contained HTML file, or Markdown.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Engine;
use crate::error::Result;
use crate::html::BattleReport;

/// The formats a battle report comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Html,
    Markdown,
}

impl Engine {
    /// A battle's report as text. Each contestant's latest diff is in it
    /// for Coding; while the battle is blind it names contestants by label
    /// and leaves out what would give them away.
    pub async fn battle_report(&self, id: &str, format: ReportFormat) -> Result<String> {
        let view = self.view_detail(id).await?;
        let b = &view.battle.battle;
        let mut diffs = BTreeMap::new();
        if b.battle_type.has_worktrees() {
            for c in b.contestants.iter().filter(|c| c.status.is_terminal()) {
                // A contestant that left no diff has none to show.
                if let Ok(diff) = self.contestant_diff(&b.id, &c.id).await {
                    diffs.insert(c.id.clone(), diff);
                }
            }
        }
        // While blind: labels only, no figures, no judge (see `blind`).
        let masked = view.battle.masked;
        let names = b
            .contestants
            .iter()
            .map(|c| {
                let name = match (masked, &c.label) {
                    (true, label) => format!("Contestant {}", label.as_deref().unwrap_or("?")),
                    (false, _) => crate::blind::revealed_name(b, &c.id),
                };
                (c.id.clone(), name)
            })
            .collect();
        let vote = view.vote.as_ref().map(|w| w.to_string());
        let report = BattleReport {
            detail: &view,
            diffs: &diffs,
            names,
            revealed: !masked,
            vote,
        };
        Ok(match format {
            ReportFormat::Html => crate::html::battle_report(&report),
            ReportFormat::Markdown => markdown(&report),
        })
    }

    /// Writes the battle's HTML report into its results folder as
    /// `report.html`; returns its path.
    pub async fn write_battle_report(&self, id: &str) -> Result<std::path::PathBuf> {
        let html = self.battle_report(id, ReportFormat::Html).await?;
        let file = self.results_folder(id).await?.join("report.html");
        let path = file.clone();
        tokio::task::spawn_blocking(move || crate::results::write_atomic(&path, html.as_bytes()))
            .await??;
        Ok(file)
    }
}

/// The report as Markdown: the answers as they are, diffs in `diff` fences.
fn markdown(r: &BattleReport) -> String {
    let b = &r.detail.battle.battle;
    let name = |id: &str| r.names.get(id).cloned().unwrap_or_else(|| id.to_string());
    let mut out = format!(
        "# {} battle {}\n\n{}\n\n",
        b.battle_type.label(),
        crate::battle::short_id(&b.id),
        b.prompt
            .lines()
            .map(|l| format!("> {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    if let Some(vote) = &r.vote {
        let _ = writeln!(out, "**{vote}**\n");
    }
    if r.revealed {
        if let Some(w) = &b.winner {
            let _ = writeln!(
                out,
                "Winner: **{}** ({})\n",
                name(&w.contestant_id),
                w.source
            );
        }
        out.push_str("| contestant | status | duration | tokens out | tok/s | cost |\n|---|---|---|---|---|---|\n");
        for c in &b.contestants {
            let m = &c.benchmark;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                name(&c.id),
                c.status,
                m.duration_ms
                    .map_or("—".into(), |ms| format!("{:.1} s", ms as f64 / 1000.0)),
                m.completion_tokens.map_or("—".into(), |t| t.to_string()),
                m.tokens_per_sec.map_or("—".into(), |t| format!("{t:.1}")),
                crate::benchmark::usd_or_dash(m.cost_usd),
            );
        }
        if let Some(a) = &r.detail.analysis {
            let _ = writeln!(out, "\n## The judge ({})\n", a.model);
            if let Some(w) = &a.winner {
                let _ = writeln!(out, "The judge chose **{}**.\n", name(w));
            }
            for (id, reason) in &a.reasons {
                let _ = writeln!(out, "- **{}**: {}", name(id), reason.replace('\n', " "));
            }
        }
    }
    for c in &b.contestants {
        let _ = writeln!(out, "\n## {}\n", name(&c.id));
        out.push_str(c.output.as_deref().unwrap_or("(no answer)"));
        out.push('\n');
        for round in r.detail.rounds.get(&c.id).into_iter().flatten() {
            let _ = writeln!(
                out,
                "\n### Turn {}\n\n> {}\n\n{}",
                round.number, round.feedback, round.output
            );
        }
        if let Some(diff) = r.diffs.get(&c.id) {
            out.push_str("\n```diff\n");
            for f in &diff.files {
                for line in &f.lines {
                    let mark = match line.kind {
                        crate::patch::LineKind::Add => "+",
                        crate::patch::LineKind::Delete => "-",
                        crate::patch::LineKind::Context => " ",
                        crate::patch::LineKind::Hunk => "",
                    };
                    let _ = writeln!(out, "{mark}{}", line.text);
                }
            }
            out.push_str("```\n");
        }
    }
    out
}
