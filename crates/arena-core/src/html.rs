//! Reports as one self-contained HTML file that someone can open from a
//! mail attachment: inline styles and SVG charts, model output rendered
//! from Markdown and sanitised (no script, no event handler, no image or
//! other resource from anywhere), and a Content-Security-Policy that
//! forbids scripts and every remote load in case anything slipped through.

use std::fmt::Write;

use std::collections::BTreeMap;

use crate::battle::{BattleType, Contestant};
use crate::patch::{ContestantDiff, LineKind};
use crate::series::{ContestantReport, SeriesSummary};

/// One prompt of a series with what each contestant answered in its first
/// run: `(contestant, answer)`.
pub struct Sample {
    pub prompt: String,
    pub answers: Vec<(String, String)>,
}

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1d2430}\
h1,h2,h3{line-height:1.2}table{border-collapse:collapse;margin:1rem 0;font-variant-numeric:tabular-nums}\
th,td{border-bottom:1px solid #dde2ea;padding:.35rem .6rem;text-align:right}th:first-child,td:first-child{text-align:left}\
.muted{color:#5f6b7a}.answer{border:1px solid #dde2ea;border-radius:8px;padding:.5rem 1rem;margin:.5rem 0;overflow:auto}\
pre{background:#f4f6f9;padding:.5rem;overflow:auto}svg text{font:12px system-ui,sans-serif;fill:#1d2430}\
.prompt{white-space:pre-wrap;border-left:3px solid #dde2ea;padding-left:1rem}\
.diff{font:13px/1.35 ui-monospace,monospace;padding:0;white-space:pre}.diff span{display:block;padding:0 .5rem}\
.diff .add{background:#e6f6ea;color:#116329}.diff .del{background:#fdebec;color:#a40e26}\
.diff .hunk{background:#e7f0fd;color:#1f5fae}.file{font-weight:600;margin:.8rem 0 .2rem}.won{border-color:#e0a400}";

/// Text as HTML text or attribute content.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Untrusted Markdown (a model's answer) as safe HTML: rendered, then
/// sanitised to text formatting, lists, tables, code and links — no
/// images, no scripts, no styles, no event handlers.
pub fn markdown(text: &str) -> String {
    let mut html = String::new();
    let options =
        pulldown_cmark::Options::ENABLE_TABLES | pulldown_cmark::Options::ENABLE_STRIKETHROUGH;
    pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new_ext(text, options));
    let mut tags = ammonia::Builder::default().clone_tags();
    tags.remove("img");
    ammonia::Builder::default()
        .tags(tags)
        .url_schemes(["http", "https", "mailto"].into_iter().collect())
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&html)
        .to_string()
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>{STYLE}</style></head><body>\n{body}\n<p class=\"muted\">Made by Arena.</p></body></html>\n",
        escape(title)
    )
}

/// Horizontal bars of a rate (0–1) per contestant, each with its 95%
/// interval as a whisker.
fn rate_chart(rows: &[(&str, Option<f64>, f64, f64)]) -> String {
    let (label_w, bar_w, row_h) = (260.0, 360.0, 26.0);
    let height = row_h * rows.len() as f64 + 10.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\">",
        label_w + bar_w + 70.0
    );
    for (i, (name, rate, low, high)) in rows.iter().enumerate() {
        let y = 5.0 + row_h * i as f64;
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{}\">{}</text>",
            y + 16.0,
            escape(name)
        );
        if let Some(rate) = rate {
            let _ = write!(
                svg,
                "<rect x=\"{label_w}\" y=\"{}\" width=\"{:.1}\" height=\"16\" fill=\"#2f7de1\"/>\
<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#1d2430\" stroke-width=\"2\"/>\
<text x=\"{}\" y=\"{}\">{:.0}%</text>",
                y + 4.0,
                bar_w * rate,
                label_w + bar_w * low,
                label_w + bar_w * high,
                y + 12.0,
                y + 12.0,
                label_w + bar_w + 8.0,
                y + 16.0,
                rate * 100.0
            );
        } else {
            let _ = write!(
                svg,
                "<text x=\"{label_w}\" y=\"{}\" class=\"muted\">—</text>",
                y + 16.0
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// `report.html` of a series: what it ran, the table, charts of win and
/// goal rates with their intervals, and sample answers.
pub fn series_report(summary: &SeriesSummary, samples: &[Sample]) -> String {
    let s = &summary.series;
    let r = &s.request;
    let mut body = format!(
        "<h1>Series {}</h1>\n<p>{} · {} of {} battles · {} × {} prompt{}{}</p>\n",
        escape(&crate::battle::short_id(&s.id)),
        escape(s.status.as_str()),
        summary.progress.done,
        s.total,
        r.runs,
        r.prompts.len(),
        if r.prompts.len() == 1 { "" } else { "s" },
        s.decided_after
            .map(|k| format!(" · decided after {k} runs"))
            .unwrap_or_default()
    );
    if let Some(goal) = &r.goal {
        let _ = writeln!(body, "<p>Goal: {}</p>", escape(goal));
    }
    let _ = writeln!(
        body,
        "<p>Spent: {}{}</p>",
        summary
            .progress
            .spent_usd
            .map_or("unknown".into(), crate::benchmark::usd),
        r.budget_usd
            .map(|b| format!(" of a ${b:.2} budget"))
            .unwrap_or_default()
    );
    body.push_str(&table(&summary.reports));
    let wins: Vec<_> = summary
        .reports
        .iter()
        .map(|c| {
            (
                c.contestant.as_str(),
                c.win_rate,
                c.win_rate_low,
                c.win_rate_high,
            )
        })
        .collect();
    let _ = writeln!(
        body,
        "<h2>Win rate (95% interval)</h2>\n{}",
        rate_chart(&wins)
    );
    if summary.reports.iter().any(|c| c.goal_checked > 0) {
        let passes: Vec<_> = summary
            .reports
            .iter()
            .map(|c| {
                (
                    c.contestant.as_str(),
                    c.pass_rate,
                    c.pass_rate_low,
                    c.pass_rate_high,
                )
            })
            .collect();
        let _ = writeln!(
            body,
            "<h2>Goal reached (95% interval)</h2>\n{}",
            rate_chart(&passes)
        );
    }
    if !samples.is_empty() {
        body.push_str("<h2>Sample answers (first run)</h2>\n");
        for sample in samples {
            let _ = writeln!(body, "<h3>{}</h3>", escape(&sample.prompt));
            for (who, answer) in &sample.answers {
                let _ = writeln!(
                    body,
                    "<div class=\"answer\"><p class=\"muted\">{}</p>{}</div>",
                    escape(who),
                    markdown(answer)
                );
            }
        }
    }
    page(
        &format!("Series {} — Arena", crate::battle::short_id(&s.id)),
        &body,
    )
}

/// A battle's report, as the engine prepares it: each contestant's name as
/// shown (its label while the battle is blind), and what may be shown.
pub struct BattleReport<'a> {
    pub detail: &'a crate::blind::DetailView,
    /// Coding: each contestant's latest diff, by contestant id.
    pub diffs: &'a BTreeMap<String, ContestantDiff>,
    /// By contestant id: `IDENTITY@MODEL`, or its label while blind.
    pub names: BTreeMap<String, String>,
    /// Providers, lanes, speeds, costs and the judge's verdict: `false`
    /// while the battle is blind (nothing that gives a contestant away).
    pub revealed: bool,
    /// The user's vote, in words (`"You chose A"`, `"You called it a tie"`).
    pub vote: Option<String>,
}

/// Horizontal bars of a figure per contestant (`None`: unknown).
fn bar_chart(title: &str, rows: &[(String, Option<f64>)], unit: &str) -> String {
    let (label_w, bar_w, row_h) = (260.0, 360.0, 24.0);
    let max = rows.iter().filter_map(|(_, v)| *v).fold(0.0_f64, f64::max);
    if max <= 0.0 {
        return String::new();
    }
    let height = row_h * rows.len() as f64 + 10.0;
    let mut svg = format!(
        "<h3>{}</h3><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\">",
        escape(title),
        label_w + bar_w + 90.0
    );
    for (i, (name, value)) in rows.iter().enumerate() {
        let y = 5.0 + row_h * i as f64;
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{}\">{}</text>",
            y + 15.0,
            escape(name)
        );
        if let Some(v) = value {
            let _ = write!(
                svg,
                "<rect x=\"{label_w}\" y=\"{}\" width=\"{:.1}\" height=\"14\" fill=\"#0f9e8f\"/>\
<text x=\"{}\" y=\"{}\">{v:.1} {unit}</text>",
                y + 4.0,
                bar_w * v / max,
                label_w + bar_w + 8.0,
                y + 15.0,
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

/// A patch as coloured lines: additions green, deletions red, hunk
/// headers blue.
fn diff_html(diff: &ContestantDiff) -> String {
    let mut out = String::new();
    for f in &diff.files {
        let _ = writeln!(
            out,
            "<p class=\"file\">{} <span class=\"muted\">+{} −{}</span></p>",
            escape(&f.file.path),
            f.file.insertions,
            f.file.deletions
        );
        if f.lines.is_empty() {
            out.push_str("<p class=\"muted\">(binary or no text change)</p>\n");
            continue;
        }
        out.push_str("<pre class=\"diff\">");
        for line in &f.lines {
            let (class, mark) = match line.kind {
                LineKind::Add => ("add", "+"),
                LineKind::Delete => ("del", "-"),
                LineKind::Hunk => ("hunk", ""),
                LineKind::Context => ("ctx", " "),
            };
            let _ = write!(
                out,
                "<span class=\"{class}\">{mark}{}</span>",
                escape(&line.text)
            );
        }
        out.push_str("</pre>\n");
    }
    out
}

/// A figure or a dash.
fn or_dash<T>(value: Option<T>, f: impl Fn(T) -> String) -> String {
    value.map_or_else(|| "—".to_string(), f)
}

/// `report.html` of one battle: the prompt, the winner and the vote, the
/// benchmark table and charts, the judge's verdict, every answer (rendered
/// and sanitised) with its later turns, and for Coding each diff in colour.
pub fn battle_report(r: &BattleReport) -> String {
    let b = &r.detail.battle.battle;
    let name = |c: &Contestant| r.names.get(&c.id).cloned().unwrap_or_else(|| c.id.clone());
    let kind = match b.battle_type {
        BattleType::Qa => "Q&A battle",
        BattleType::Coding => "Coding battle",
    };
    let mut body = format!(
        "<h1>{kind} {}</h1>\n<p class=\"muted\">{} · started {}{}</p>\n<div class=\"prompt\">{}</div>\n",
        escape(&crate::battle::short_id(&b.id)),
        escape(b.status.as_str()),
        b.created_at.format("%Y-%m-%d %H:%M UTC"),
        b.check_command
            .as_deref()
            .map(|c| format!(" · check <code>{}</code>", escape(c)))
            .unwrap_or_default(),
        escape(&b.prompt)
    );
    if let Some(vote) = &r.vote {
        let _ = writeln!(body, "<p><strong>{}</strong></p>", escape(vote));
    }
    if r.revealed {
        if let Some(w) = &b.winner {
            if let Some(c) = b.contestants.iter().find(|c| c.id == w.contestant_id) {
                let _ = writeln!(
                    body,
                    "<p>Winner: <strong>{}</strong> ({})</p>",
                    escape(&name(c)),
                    match w.source {
                        crate::battle::WinnerSource::User => "chosen by you",
                        crate::battle::WinnerSource::Analysis => "chosen by the judge",
                    }
                );
            }
        }
        body.push_str(&benchmark_table(r, &name));
        let rows = |f: &dyn Fn(&Contestant) -> Option<f64>| -> Vec<(String, Option<f64>)> {
            b.contestants.iter().map(|c| (name(c), f(c))).collect()
        };
        body.push_str(&bar_chart(
            "Duration",
            &rows(&|c| c.benchmark.duration_ms.map(|ms| ms as f64 / 1000.0)),
            "s",
        ));
        body.push_str(&bar_chart(
            "Generation speed",
            &rows(&|c| c.benchmark.tokens_per_sec),
            "tok/s",
        ));
        if let Some(a) = &r.detail.analysis {
            let _ = writeln!(
                body,
                "<h2>The judge</h2>\n<p class=\"muted\">{} on {}{}</p>",
                escape(&a.model),
                escape(&a.provider),
                a.error
                    .as_deref()
                    .map(|e| format!(" · failed: {}", escape(e)))
                    .unwrap_or_default()
            );
            let winner = a
                .winner
                .as_deref()
                .and_then(|id| b.contestants.iter().find(|c| c.id == id));
            if let Some(c) = winner {
                let _ = writeln!(
                    body,
                    "<p>The judge chose <strong>{}</strong>.</p>",
                    escape(&name(c))
                );
            }
            for (id, reason) in &a.reasons {
                let who = b
                    .contestants
                    .iter()
                    .find(|c| &c.id == id)
                    .map_or_else(|| id.clone(), &name);
                let _ = writeln!(
                    body,
                    "<div class=\"answer\"><p class=\"muted\">{}</p>{}</div>",
                    escape(&who),
                    markdown(reason)
                );
            }
        }
    } else {
        body.push_str("<p class=\"muted\">A blind battle: names, speeds and the judge's verdict show once you have voted.</p>\n");
    }
    body.push_str("<h2>Answers</h2>\n");
    for c in &b.contestants {
        let won = r.revealed && b.winner.as_ref().is_some_and(|w| w.contestant_id == c.id);
        let _ = write!(
            body,
            "<div class=\"answer{}\"><h3>{}</h3>",
            if won { " won" } else { "" },
            escape(&name(c))
        );
        match (&c.output, &c.error) {
            (Some(out), _) => body.push_str(&markdown(out)),
            (None, Some(err)) if r.revealed => {
                let _ = write!(body, "<p class=\"muted\">Failed: {}</p>", escape(err));
            }
            _ => body.push_str("<p class=\"muted\">No answer.</p>"),
        }
        for round in r.detail.rounds.get(&c.id).into_iter().flatten() {
            let _ = write!(
                body,
                "<h4>Turn {}</h4><p class=\"muted\">“{}”</p>{}",
                round.number,
                escape(&round.feedback),
                markdown(&round.output)
            );
        }
        if let Some(check) = &c.check {
            let _ = write!(
                body,
                "<p>Check <code>{}</code>: {}</p>",
                escape(&check.command),
                crate::check_outcome::CheckOutcome::of(Some(check)).words()
            );
        }
        if let Some(diff) = r.diffs.get(&c.id) {
            body.push_str(&diff_html(diff));
        }
        body.push_str("</div>\n");
    }
    page(
        &format!("{kind} {} — Arena", crate::battle::short_id(&b.id)),
        &body,
    )
}

fn benchmark_table(r: &BattleReport, name: &dyn Fn(&Contestant) -> String) -> String {
    let mut out = String::from(
        "<h2>Benchmark</h2>\n<table><thead><tr><th>contestant</th><th>provider</th><th>lane</th><th>status</th>\
<th>duration</th><th>TTFT</th><th>tokens in/out</th><th>tok/s</th><th>cost</th></tr></thead><tbody>",
    );
    for c in &r.detail.battle.battle.contestants {
        let m = &c.benchmark;
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td></tr>",
            escape(&name(c)),
            escape(&c.provider),
            c.lane.as_str(),
            c.status.as_str(),
            or_dash(m.duration_ms, |ms| format!("{:.1} s", ms as f64 / 1000.0)),
            or_dash(m.ttft_ms, |ms| format!("{ms} ms")),
            or_dash(m.prompt_tokens, |t| t.to_string()),
            or_dash(m.completion_tokens, |t| t.to_string()),
            or_dash(m.tokens_per_sec, |t| format!("{t:.1}")),
            crate::benchmark::usd_or_dash(m.cost_usd),
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

fn table(reports: &[ContestantReport]) -> String {
    let pct = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{:.0}%", v * 100.0));
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".to_string(), f);
    let mut out = String::from(
        "<table><thead><tr><th>contestant</th><th>runs</th><th>wins</th><th>win rate</th><th>ties</th>\
<th>goal</th><th>turns to goal</th><th>errors</th><th>p50</th><th>p95</th><th>TTFT p50</th>\
<th>tok/s (local)</th><th>tokens in/out</th><th>own cost</th><th>own cost per pass</th>\
<th>goal judging</th></tr></thead><tbody>",
    );
    for c in reports {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.contestant),
            c.runs,
            c.wins,
            pct(c.win_rate),
            c.ties,
            pct(c.pass_rate),
            opt(c.mean_turns_to_goal, &|t| format!("{t:.1}")),
            c.errors,
            opt(c.duration_p50_ms, &|ms| format!("{:.1} s", ms / 1000.0)),
            opt(c.duration_p95_ms, &|ms| format!("{:.1} s", ms / 1000.0)),
            opt(c.ttft_p50_ms, &|ms| format!("{ms:.0} ms")),
            match (c.tokens_per_sec_mean, c.tokens_per_sec_sd) {
                (Some(m), Some(sd)) => format!("{m:.1} ± {sd:.1}"),
                _ => "—".to_string(),
            },
            c.prompt_tokens,
            c.completion_tokens,
            crate::benchmark::usd_or_dash(c.cost_usd),
            crate::benchmark::usd_or_dash(c.cost_per_pass_usd),
            crate::benchmark::usd_or_dash(c.judging_cost_usd),
        );
    }
    out.push_str("</tbody></table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_markup_runs_nothing_and_loads_nothing() {
        let html = markdown(
            "**bold** <script>alert(1)</script>\n\n<img src=\"https://evil.example/x.png\" onerror=\"alert(2)\">\n\n![pic](https://evil.example/y.png)\n\n<a href=\"javascript:alert(3)\">x</a> [ok](https://example.org)\n\n<style>body{display:none}</style><iframe src=\"https://evil.example\"></iframe>",
        );
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        for bad in [
            "<script",
            "onerror",
            "<img",
            "evil.example",
            "javascript:",
            "<style",
            "<iframe",
        ] {
            assert!(!html.contains(bad), "{bad} in {html}");
        }
        assert!(html.contains("href=\"https://example.org\""), "{html}");
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
