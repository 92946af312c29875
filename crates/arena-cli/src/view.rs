//! How battles look on the terminal (`--json` prints the wire model of
//! `arena-api`).
//!
//! Every text here that carries words from a model, an agent, a check or a
//! provider passes through [`shown`] (or is built and then passed whole
//! through [`for_terminal`]): no escape sequence or control character an
//! answer holds reaches the terminal. `--json` keeps the text exact.

use arena_core::blind::DetailView;
use std::borrow::Cow;

use arena_core::analysis::Outcome;
use arena_core::battle::{Battle, Contestant, Round};
use arena_core::catalog::Catalog;
use arena_core::cross_exam::CrossExamination;
use arena_core::leaderboard::Leaderboard;

/// `text` from a model, an agent, a check or a provider as it may be
/// printed: without control characters and escape sequences, `\n` and
/// `\t` kept (`arena_domain::terminal::printable`).
pub fn shown(text: &str) -> Cow<'_, str> {
    arena_domain::terminal::printable(text)
}

/// [`shown`] for a text built here, reusing it when nothing is taken out.
fn for_terminal(text: String) -> String {
    match shown(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(clean) => clean,
    }
}

pub fn cross_exam_text(x: &CrossExamination) -> String {
    let mut out = format!(
        "Cross-examination {} by {}@{} ({:?})
",
        x.number, x.identity, x.model, x.status
    );
    if let Some(p) = &x.path {
        out.push_str(&format!("Report: {}\n", p.display()));
    }
    if let Some(e) = &x.error {
        out.push_str(&format!("error: {e}\n"));
    }
    out.push('\n');
    out.push_str(x.output.trim_end());
    out.push('\n');
    for_terminal(out)
}

pub fn leaderboard_text(board: &Leaderboard) -> String {
    let standings = &board.standings;
    if standings.is_empty() {
        return "No finished battles yet.\n".into();
    }
    let mut out = format!(
        "{:>4}  {:<36} {:>7} {:>17} {:>9} {:>7} {:>5} {:>6} {:>9} {:>8} {:>9}\n",
        "rank",
        "contestant",
        "rating",
        "95% interval",
        "length-c.",
        "battles",
        "wins",
        "win %",
        "median s",
        "tok/s",
        "$/win"
    );
    for s in standings {
        let name = format!("{}@{}", s.identity, s.model);
        out.push_str(&format!(
            "{:>4}  {:<36} {:>7.0} {:>17} {:>9} {:>7} {:>5} {:>5.0}% {:>9} {:>8} {:>9}\n",
            s.rank,
            name,
            s.rating,
            format!("[{:.0}, {:.0}]", s.rating_low, s.rating_high),
            s.rating_lc
                .map(|r| format!("{r:.0}"))
                .unwrap_or_else(|| "—".into()),
            s.battles,
            s.wins,
            s.win_rate * 100.0,
            s.median_duration_ms
                .map(|d| format!("{:.1}", d / 1000.0))
                .unwrap_or_else(|| "—".into()),
            s.median_tokens_per_sec
                .map(|r| format!("{r:.1}"))
                .unwrap_or_else(|| "—".into()),
            s.cost_per_win_usd
                .map(|c| format!("{c:.4}"))
                .unwrap_or_else(|| "—".into()),
        ));
    }
    let a = &board.agreement;
    match (a.rate, a.rate_ci) {
        (Some(rate), Some((lo, hi))) => out.push_str(&format!(
            "\nJudge and you agreed in {} of {} battles you both judged: {:.0}% (95% interval {:.0}–{:.0}%).\n",
            a.agreed,
            a.both_chose,
            rate * 100.0,
            lo * 100.0,
            hi * 100.0
        )),
        _ => out.push_str("\nNo battle has both your verdict and the judge's yet.\n"),
    }
    if let Some(g) = board.length_coefficient {
        out.push_str(&format!(
            "Length-controlled ratings (length-c.) discount answer length; its coefficient is {g:+.2} ({}).\n",
            if g > 0.0 { "longer answers won more" } else { "shorter answers won more" }
        ));
    }
    for_terminal(out)
}

/// The battle without outputs, for listings.
pub fn catalog_text(catalog: &Catalog) -> String {
    let mut out = String::new();
    if catalog.providers.is_empty() {
        out.push_str("No providers configured. Add a [[provider]] table to arena.toml.\n");
    }
    for p in &catalog.providers {
        out.push_str(&format!(
            "{} ({} lane, {:?}) {}\n",
            p.provider, p.lane, p.kind, p.base_url
        ));
        match &p.models {
            Ok(models) if models.is_empty() => out.push_str("  (no models)\n"),
            Ok(models) => {
                for m in models {
                    out.push_str(&format!("  {m}\n"));
                }
            }
            Err(e) => out.push_str(&format!("  unreachable: {e}\n")),
        }
    }
    for_terminal(out)
}

fn fmt_ms(ms: Option<u64>) -> String {
    match ms {
        Some(ms) if ms >= 1000 => format!("{:.1}s", ms as f64 / 1000.0),
        Some(ms) => format!("{ms}ms"),
        None => "—".into(),
    }
}

/// Tokens written per second, marked `*` when the server reported it
/// rather than Arena measuring it (the legend under the table says so).
fn fmt_rate(c: &Contestant) -> String {
    let server = c.benchmark.rate_source == Some(arena_core::battle::RateSource::Server);
    c.benchmark
        .tokens_per_sec
        .map(|r| format!("{r:.1}{}", if server { "*" } else { "" }))
        .unwrap_or_else(|| "—".into())
}

pub fn battle_text(view: &DetailView, with_output: bool) -> String {
    let (b, analysis) = (&view.battle.battle, view.analysis.as_ref());
    let mut out = format!(
        "Battle {} ({}) — {}\nPrompt: {}\nResults: {}\n",
        b.id,
        b.battle_type,
        b.status,
        b.prompt.lines().next().unwrap_or(""),
        b.results_path.display()
    );
    if arena_core::coding_base::base_of(b) == Some(arena_core::coding_base::BaseChoice::WorkingTree)
    {
        out.push_str("Base: a snapshot of the working tree (uncommitted files included)\n");
    }
    if let Some(warning) = arena_core::check_outcome::battle_warning(b) {
        out.push_str(&format!("Warning: {}\n", shown(&warning)));
    }
    out.push_str(&format!(
        "  {:<3} {:<28} {:<6} {:<10} {:>8} {:>8} {:>7} {:>12} {:>10} {:>9}\n",
        "#",
        "contestant",
        "lane",
        "status",
        "duration",
        "ttft",
        "tokens",
        "prompt tok/s",
        "tok/s",
        "cost"
    ));
    let masked = view.battle.masked;
    for c in &b.contestants {
        let winner = b.winner.as_ref().is_some_and(|w| w.contestant_id == c.id);
        let name = contestant_name(b, c);
        out.push_str(&format!(
            "{} {:<3} {:<28} {:<6} {:<10} {:>8} {:>8} {:>7} {:>12} {:>10} {:>9}\n",
            if winner { "🏆" } else { " " },
            c.label
                .clone()
                .filter(|_| masked)
                .unwrap_or_else(|| (c.position + 1).to_string()),
            name,
            view.battle
                .lane(c)
                .map_or_else(|| "—".to_string(), |lane| lane.to_string()),
            c.status,
            fmt_ms(c.benchmark.duration_ms),
            fmt_ms(c.benchmark.ttft_ms),
            c.benchmark
                .completion_tokens
                .map(|t| t.to_string())
                .unwrap_or_else(|| "—".into()),
            c.benchmark
                .prompt_per_sec
                .map(|r| format!("{r:.1}"))
                .unwrap_or_else(|| "—".into()),
            fmt_rate(c),
            arena_core::benchmark::usd_or_dash(c.benchmark.cost_usd),
        ));
        if let Some(e) = &c.error {
            out.push_str(&format!("      error: {e}\n"));
        }
        if let Some(check) = &c.check {
            out.push_str(&check_lines(check, "      "));
        }
        if let Some(env) = c.diff.as_ref().and_then(|d| d.environment.as_ref()) {
            out.push_str(&format!("      environment: {env}\n"));
        }
        if let Some(reason) = &c.waiting {
            out.push_str(&format!("      {reason}\n"));
        }
        if c.benchmark.model_switched && c.benchmark.ttft_ms.is_some() {
            out.push_str(
                "      time to first token includes model load (the lane switched model)\n",
            );
        }
    }
    if !masked
        && b.contestants
            .iter()
            .any(|c| c.benchmark.tokens_per_sec.is_some() || c.benchmark.prompt_per_sec.is_some())
    {
        out.push_str(
            "  prompt tok/s: how fast the server read the prompt, as it reports; tok/s: how fast it wrote, measured by Arena (* as the server reports)\n",
        );
    }
    let name = |id: &str| {
        b.contestants
            .iter()
            .find(|c| c.id == id)
            .map(|c| contestant_name(b, c))
            .unwrap_or_else(|| id.to_string())
    };
    if masked {
        out.push_str(&format!(
            "Blind: names, speeds and the judge show after your vote (arena battle vote {} A|B|…|--tie|--all-bad).\n",
            arena_core::battle::short_id(&b.id)
        ));
    }
    match b.user_verdict {
        Some(arena_core::battle::UserVerdict::Tie) => out.push_str("Your vote: a tie\n"),
        Some(arena_core::battle::UserVerdict::AllBad) => out.push_str("Your vote: all bad\n"),
        None => {}
    }
    if !b.tags.is_empty() {
        out.push_str(&format!("Tags: {}\n", b.tags.join(", ")));
    }
    if let Some(w) = &b.winner {
        out.push_str(&format!(
            "Winner: {} (chosen by {})\n",
            name(&w.contestant_id),
            w.source
        ));
    }
    if let Some(a) = analysis {
        let outcome = match (&a.error, a.outcome) {
            (Some(e), _) => format!("failed: {e}"),
            (None, Some(Outcome::Winner)) => format!(
                "winner {}",
                a.winner.as_deref().map(name).unwrap_or_default()
            ),
            (None, Some(Outcome::Walkover)) => "walkover (one finisher)".into(),
            (None, Some(Outcome::NoClearWinner)) => {
                "no clear winner (the verdicts changed with the order)".into()
            }
            (None, Some(Outcome::JudgeError)) => "judge error (no verdict could be read)".into(),
            (None, None) => "running".into(),
        };
        out.push_str(&format!("Analysis by {}: {outcome}\n", a.model));
        for id in &a.ranking {
            if let Some(reason) = a.reasons.get(id) {
                out.push_str(&format!("  {}: {reason}\n", name(id)));
            }
        }
    }
    if with_output {
        for c in &b.contestants {
            out.push_str(&format!(
                "\n── {} ──\n{}\n",
                contestant_name(b, c),
                c.output.as_deref().unwrap_or("(no output)")
            ));
        }
    }
    for_terminal(out)
}

/// `debugger@qwen3-8b`; `Contestant B` while a blind battle is masked
/// (pass it through `blind::masked` first); `B · debugger@qwen3-8b` after
/// the reveal.
fn contestant_name(b: &Battle, c: &Contestant) -> String {
    match (&c.label, b.is_masked()) {
        (Some(label), true) => format!("Contestant {label}"),
        (Some(label), false) => format!("{label} · {}@{}", c.identity, c.model),
        (None, _) => format!("{}@{}", c.identity, c.model),
    }
}

/// What `battle cancel --analysis|--cross-exam|--contestant` stopped.
pub fn cancelled_work_text(work: arena_core::store::Work, stopped: usize) -> String {
    use arena_core::store::Work;
    let what = match work {
        Work::Analysis => "analysis",
        Work::CrossExamination => "cross-examination",
        Work::Round => "refine round",
    };
    match stopped {
        0 => format!("No {what} was running."),
        1 => format!("Cancelled the running {what}."),
        n => format!("Cancelled {n} running {what}s."),
    }
}

/// One piece of work a stopped process left running, as `battle resume` reports it.
pub fn recovered_text(r: &arena_core::Recovered) -> String {
    use arena_core::store::Work;
    let what = match r.work {
        Work::Analysis => "an analysis",
        Work::CrossExamination => "a cross-examination",
        Work::Round => "a refine round",
    };
    let then = match &r.analysis {
        Some(Ok(a)) => match (&a.error, a.outcome) {
            (Some(e), _) => format!("; judged again, which failed: {e}"),
            (None, outcome) => format!(
                "; judged again: {}",
                outcome
                    .map(|o| format!("{o:?}"))
                    .unwrap_or_else(|| "done".into())
            ),
        },
        Some(Err(e)) => format!("; could not judge it again: {e}"),
        None => "; marked failed".into(),
    };
    for_terminal(format!(
        "Battle {}: {what} was interrupted (the process running it stopped){then}",
        r.battle_id
    ))
}

pub fn list_text(battles: &[Battle]) -> String {
    if battles.is_empty() {
        return "No battles yet. Start one with `arena battle run`.\n".into();
    }
    let mut out = String::new();
    for b in battles {
        let prompt: String = b.prompt.chars().take(50).collect();
        out.push_str(&format!(
            "{}  {}  {:<6} {:<9} {} contestants  {}\n",
            b.id,
            b.created_at.format("%Y-%m-%d %H:%M"),
            b.battle_type,
            b.status,
            b.contestants.len(),
            prompt.replace('\n', " ")
        ));
    }
    for_terminal(out)
}

/// A page of a listing: its battles, then "showing 51–100 of 10000" when
/// the page is not everything. `filtered`: a search or a filter chose them.
pub fn page_text(battles: &[Battle], offset: usize, total: u64, filtered: bool) -> String {
    if battles.is_empty() {
        return match (total, filtered) {
            (0, false) => list_text(battles),
            (0, true) => "No battles match.\n".into(),
            _ => format!("No battles after the first {offset} (there are {total}).\n"),
        };
    }
    let mut out = list_text(battles);
    let (first, last) = (offset as u64 + 1, (offset + battles.len()) as u64);
    if first > 1 || last < total {
        out.push_str(&format!("showing {first}–{last} of {total}\n"));
    }
    out
}

/// A check's verdict (it ran on the change applied to a fresh tree of the
/// base), the check's own files the change touches, and what the agent's
/// tree held that the change does not carry; each line after `indent`.
fn check_lines(check: &arena_core::battle::CheckResult, indent: &str) -> String {
    let verdict = if let Some(why) = &check.could_not_run {
        format!("could not run, counted for no one ({})", shown(why))
    } else if check.timed_out {
        "timed out".to_string()
    } else if check.passed {
        "passed".to_string()
    } else {
        match check.exit_code {
            Some(code) => format!("failed (exit {code})"),
            None => "failed".to_string(),
        }
    };
    let mut out = format!("{indent}check {verdict}: {}\n", check.command);
    if !check.touches_check.is_empty() {
        out.push_str(&format!(
            "{indent}  the change touches the check's own files: {}\n",
            check.touches_check.join(", ")
        ));
    }
    if !check.not_in_change.is_empty() {
        let more = check
            .not_in_change_count
            .saturating_sub(check.not_in_change.len());
        out.push_str(&format!(
            "{indent}  not part of the change (the check ran without them): {}{}\n",
            check.not_in_change.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    out
}

pub fn round_text(r: &Round) -> String {
    let status = r.status.map(|s| s.as_str()).unwrap_or("running");
    let mut out = format!("Round {}: {status}\n", r.number);
    if let Some(d) = &r.diff {
        out.push_str(&format!(
            "Changes so far: {} files, +{} -{}\n",
            d.files, d.insertions, d.deletions
        ));
    }
    if let Some(e) = &r.error {
        out.push_str(&format!("error: {e}\n"));
    }
    if let Some(check) = &r.check {
        out.push_str(&check_lines(check, ""));
    }
    if let Some(p) = &r.result_path {
        out.push_str(&format!("Result: {}\n", p.display()));
    }
    out.push('\n');
    out.push_str(r.output.trim_end());
    out.push('\n');
    for_terminal(out)
}
