//! The results folder: `<project>/Arena/<dated-battle-slug>/` with
//! `manifest.json` and one folder per contestant holding `result.md`.
//! Every name built from user or model text is sanitised and the final path
//! is checked to lie inside the results root.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::battle::{Battle, BattleType, Benchmark, Contestant, Winner};
use crate::error::{Error, Result};

pub const RESULTS_DIR: &str = "Arena";
pub const MANIFEST_FILE: &str = "manifest.json";
pub const RESULT_FILE: &str = "result.md";
pub const DIFF_FILE: &str = "diff.patch";

/// Turns arbitrary text into one safe path component: no separators, no
/// `..`, no control characters or reserved names, at most `max` bytes.
pub fn safe_component(text: &str, max: usize) -> String {
    let options = sanitize_filename::Options {
        windows: true,
        truncate: true,
        replacement: "-",
    };
    let cleaned = sanitize_filename::sanitize_with_options(text, options);
    let mut out = String::with_capacity(cleaned.len());
    for ch in cleaned.chars().flat_map(char::to_lowercase) {
        let ch = if ch.is_ascii_alphanumeric() || ch == '_' || ch == '.' {
            ch
        } else {
            '-'
        };
        let last = out.chars().last();
        let repeat = matches!((last, ch), (Some('-'), '-') | (Some('.'), '.'));
        if !repeat {
            out.push(ch);
        }
    }
    // Dots only inside words: segments like `..` disappear entirely.
    let mut out: String = out
        .split('-')
        .map(|seg| seg.trim_matches('.'))
        .filter(|seg| !seg.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if out.len() > max {
        let mut cut = max;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out = out.trim_end_matches(['-', '.']).to_string();
    }
    // Reserved device names are only reserved as whole names.
    let reserved = sanitize_filename::sanitize_with_options(
        &out,
        sanitize_filename::Options {
            windows: true,
            truncate: true,
            replacement: "",
        },
    );
    if out.is_empty() || reserved != out {
        out = format!("x-{out}");
        out = out.trim_end_matches('-').to_string();
    }
    out
}

/// `2026-11-21-0915-qa-why-is-the-sky-blue-1a2b3c4d`
pub fn battle_slug(
    id: &str,
    battle_type: BattleType,
    prompt: &str,
    created_at: DateTime<Utc>,
) -> String {
    let words: String = prompt
        .split_whitespace()
        .take(8)
        .collect::<Vec<_>>()
        .join(" ");
    let topic = safe_component(&words, 40);
    let short_id = crate::battle::short_id(id);
    let mut slug = format!("{}-{}", created_at.format("%Y-%m-%d-%H%M%S"), battle_type);
    if !topic.is_empty() && topic != "x" {
        slug.push('-');
        slug.push_str(&topic);
    }
    slug.push('-');
    slug.push_str(&safe_component(&short_id, 8));
    slug
}

/// A contestant's folder (and worktree) name: `01-debugger-qwen3-8b`, or
/// `contestant-B` in a blind battle, so that no path tells who it is.
pub fn contestant_dir(c: &Contestant) -> String {
    match &c.label {
        Some(label) if label.chars().all(|c| c.is_ascii_alphanumeric()) => {
            format!("contestant-{label}")
        }
        Some(label) => format!("contestant-{}", safe_component(label, 8)),
        None => contestant_dir_name(c.position, &c.identity, &c.model),
    }
}

/// `01-debugger-qwen3-8b`
pub fn contestant_dir_name(position: u32, identity: &str, model: &str) -> String {
    format!(
        "{:02}-{}",
        position + 1,
        safe_component(&format!("{identity}-{model}"), 80)
    )
}

/// Joins `parts` under `root`, refusing anything that would leave it.
pub fn confined(root: &Path, parts: &[&str]) -> Result<PathBuf> {
    let mut path = root.to_path_buf();
    for part in parts {
        let p = Path::new(part);
        let mut comps = p.components();
        match (comps.next(), comps.next()) {
            (Some(Component::Normal(_)), None) => path.push(p),
            _ => {
                return Err(Error::Conflict(format!(
                    "refusing path component `{part}`: it would leave the results folder {}",
                    root.display()
                )))
            }
        }
    }
    if !path.starts_with(root) {
        return Err(Error::Conflict(format!(
            "refusing {}: outside {}",
            path.display(),
            root.display()
        )));
    }
    Ok(path)
}

/// The results folder for a new battle.
pub fn battle_dir(
    project: &Path,
    id: &str,
    battle_type: BattleType,
    prompt: &str,
    created_at: DateTime<Utc>,
) -> Result<PathBuf> {
    confined(
        &project.join(RESULTS_DIR),
        &[&battle_slug(id, battle_type, prompt, created_at)],
    )
}

/// A series' report folder: `<project>/Arena/series-<dated-slug>/`, named
/// like a battle's folder after the series' first prompt.
pub fn series_dir(
    project: &Path,
    id: &str,
    prompt: &str,
    created_at: DateTime<Utc>,
) -> Result<PathBuf> {
    let words: String = prompt
        .split_whitespace()
        .take(8)
        .collect::<Vec<_>>()
        .join(" ");
    let topic = safe_component(&words, 40);
    let mut slug = format!("series-{}", created_at.format("%Y-%m-%d-%H%M%S"));
    if !topic.is_empty() && topic != "x" {
        slug.push('-');
        slug.push_str(&topic);
    }
    slug.push('-');
    slug.push_str(&safe_component(&crate::battle::short_id(id), 8));
    confined(&project.join(RESULTS_DIR), &[&slug])
}

/// Writes a file through a temporary sibling and a rename, so readers never
/// see half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Keeps `Arena/` out of the project's `git status` through the
/// repository's own `info/exclude` (its common folder's, for a linked
/// worktree), never a file in the project's tree: nothing new appears
/// beside your files, and `.gitignore` is left as it is. A project that is
/// no repository, or whose `.gitignore` or exclude file already covers
/// `Arena/`, is left alone.
pub fn ensure_excluded(project: &Path) -> Result<()> {
    let covers = |text: &str| {
        text.lines()
            .map(str::trim)
            .any(|l| matches!(l, "Arena" | "Arena/" | "/Arena" | "/Arena/"))
    };
    if std::fs::read_to_string(project.join(".gitignore")).is_ok_and(|t| covers(&t)) {
        return Ok(());
    }
    let Ok(repo) = git2::Repository::open(project) else {
        return Ok(());
    };
    // Not the repository's top folder: `/Arena/` would name another.
    let top = repo.workdir().and_then(|w| w.canonicalize().ok());
    if top.is_none() || top != project.canonicalize().ok() {
        return Ok(());
    }
    // A linked worktree's repository names its common folder in `commondir`.
    let git_dir = repo.path().to_path_buf();
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(rel) => git_dir.join(rel.trim()),
        Err(_) => git_dir,
    };
    let path = common.join("info").join("exclude");
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(&path, e)),
    };
    if covers(&existing) {
        return Ok(());
    }
    let mut new = existing;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str("# Arena battle results\n/Arena/\n");
    // Replaced whole, never truncated in place: a battle starting in
    // another process at the same moment reads either file, never half of
    // one. Readable as git writes it.
    write_atomic(&path, new.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[derive(Serialize)]
struct Manifest<'a> {
    id: &'a str,
    battle_type: BattleType,
    status: crate::battle::BattleStatus,
    prompt: &'a str,
    created_at: String,
    finished_at: Option<String>,
    winner: Option<&'a Winner>,
    /// The user's tie or "all bad".
    #[serde(skip_serializing_if = "Option::is_none")]
    user_verdict: Option<crate::battle::UserVerdict>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    blind: bool,
    /// Whether a blind battle's names are shown (here and in the app).
    #[serde(skip_serializing_if = "Option::is_none")]
    revealed_at: Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    tags: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    base_commit: Option<&'a str>,
    contestants: Vec<ManifestContestant<'a>>,
}

#[derive(Serialize)]
struct ManifestContestant<'a> {
    id: &'a str,
    /// A blind battle's letter.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    /// Who it is: left out while a blind battle is masked.
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lane: Option<crate::battle::Lane>,
    status: crate::battle::ContestantStatus,
    error: Option<&'a str>,
    benchmark: &'a Benchmark,
    result: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<&'a crate::battle::DiffSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<&'a crate::battle::CheckResult>,
}

/// Writes `manifest.json`; while a blind battle is masked, with labels
/// and only what a viewer may see (see `blind::masked`).
pub fn write_manifest(battle: &Battle) -> Result<()> {
    let masked = battle.is_masked();
    let view = crate::blind::masked(battle);
    let battle: &Battle = &view;
    let manifest = Manifest {
        id: &battle.id,
        battle_type: battle.battle_type,
        status: battle.status,
        prompt: &battle.prompt,
        created_at: rfc3339(battle.created_at),
        finished_at: battle.finished_at.map(rfc3339),
        winner: battle.winner.as_ref(),
        user_verdict: battle.user_verdict,
        blind: battle.blind,
        revealed_at: battle.revealed_at.map(rfc3339),
        tags: &battle.tags,
        base_commit: battle.base_commit.as_deref(),
        contestants: battle
            .contestants
            .iter()
            .map(|c| ManifestContestant {
                id: &c.id,
                label: c.label.as_deref(),
                identity: (!masked).then_some(c.identity.as_str()),
                model: (!masked).then_some(c.model.as_str()),
                provider: (!masked).then_some(c.provider.as_str()),
                lane: (!masked).then_some(c.lane),
                status: c.status,
                error: c.error.as_deref(),
                benchmark: &c.benchmark,
                diff: c.diff.as_ref(),
                check: c.check.as_ref(),
                result: c.result_path.as_ref().and_then(|p| {
                    p.strip_prefix(&battle.results_path)
                        .ok()
                        .map(|r| r.to_string_lossy().into_owned())
                }),
            })
            .collect(),
    };
    let mut json = serde_json::to_vec_pretty(&manifest)?;
    json.push(b'\n');
    write_atomic(&battle.results_path.join(MANIFEST_FILE), &json)
}

/// Writes `<results>/<contestant dir>/result.md`; returns its path.
pub fn write_result(battle: &Battle, c: &Contestant) -> Result<PathBuf> {
    let dir = confined(&battle.results_path, &[&contestant_dir(c)])?;
    let path = dir.join(RESULT_FILE);
    write_atomic(&path, render_result(battle, c).as_bytes())?;
    Ok(path)
}

fn fmt_opt<T: std::fmt::Display>(v: Option<T>, unit: &str) -> String {
    v.map(|v| format!("{v}{unit}"))
        .unwrap_or_else(|| "—".into())
}

/// A contestant's `result.md`; while a blind battle is masked, under its
/// label and with its work only (rewritten with everything at the reveal).
pub fn render_result(battle: &Battle, c: &Contestant) -> String {
    if battle.is_masked() {
        let mut md = format!(
            "# Contestant {}\n\n- Battle: `{}` ({}), blind until your vote\n- Status: {}\n\n",
            c.label.as_deref().unwrap_or("?"),
            battle.id,
            battle.battle_type,
            c.status,
        );
        push_work(&mut md, battle, c, false);
        return md;
    }
    let b = &c.benchmark;
    let rate = match (b.tokens_per_sec, b.rate_source) {
        (Some(r), Some(crate::battle::RateSource::Server)) => {
            format!("{r:.1} (as the server reports)")
        }
        (Some(r), Some(crate::battle::RateSource::Measured)) => {
            format!("{r:.1} (measured by Arena)")
        }
        (Some(r), None) => format!("{r:.1}"),
        _ => "—".into(),
    };
    let duration = b
        .duration_ms
        .map(|d| format!("{:.2} s", d as f64 / 1000.0))
        .unwrap_or_else(|| "—".into());
    let mut md = format!(
        "# {} · {}\n\n- Battle: `{}` ({}), {}\n- Status: {}\n- Lane: {} · Provider: {}\n",
        c.identity,
        c.model,
        battle.id,
        battle.battle_type,
        rfc3339(battle.created_at),
        c.status,
        c.lane,
        c.provider,
    );
    // The machine that made it, with its own configuration of the
    // provider, persona or agent named above (a team's places run on any).
    if let Some(machine) = &battle.machine {
        md.push_str(&format!(
            "- Ran on: `{}`, with its own `{}` and `{}`\n",
            code_text(machine),
            code_text(&c.identity),
            code_text(&c.provider),
        ));
    }
    md.push('\n');
    // A model load is said beside a first token that waited for it: a
    // model's answer on a local server that served another model just
    // before. An agent (a shell or CLI agent) has no first token, and no
    // model load of its own to speak of.
    let ttft = match (
        b.ttft_ms,
        b.model_switched && !battle.battle_type.has_worktrees(),
    ) {
        (Some(ms), true) => format!("{ms} ms (includes model load)"),
        (ttft, _) => fmt_opt(ttft, " ms"),
    };
    md.push_str("## Benchmark\n\n| Duration | Time to first token | Prompt tokens | Completion tokens | Prompt read (tokens/s) | Written (tokens/s) |\n|---|---|---|---|---|---|\n");
    md.push_str(&format!(
        "| {} | {} | {} | {} | {} | {} |\n\n",
        duration,
        ttft,
        fmt_opt(b.prompt_tokens, ""),
        fmt_opt(b.completion_tokens, ""),
        b.prompt_per_sec
            .map(|r| format!("{r:.1}"))
            .unwrap_or_else(|| "—".into()),
        rate
    ));
    push_work(&mut md, battle, c, true);
    md
}

/// `text` fit for inline code: no control characters, no backquote.
fn code_text(text: &str) -> String {
    arena_domain::terminal::printable(text).replace('`', "'")
}

/// The files a diff names without their content, as a Markdown list (empty
/// when there are none).
pub fn omitted_list(d: &crate::battle::DiffSummary) -> String {
    if d.omitted.is_empty() {
        return String::new();
    }
    let mut md = String::from("Not in the patch (copy them from the worktree by hand):\n\n");
    for line in &d.omitted {
        md.push_str(&format!("- `{line}`\n"));
    }
    md.push('\n');
    md
}

/// The project's environment the agent and check saw, a line of the
/// result (nothing when there was none).
pub fn environment_note(d: &crate::battle::DiffSummary) -> String {
    match &d.environment {
        Some(line) => format!("Environment: {}\n\n", code_text(line)),
        None => String::new(),
    }
}

/// The part of `result.md` that is the contestant's work (and its error,
/// when `with_error`).
fn push_work(md: &mut String, battle: &Battle, c: &Contestant, with_error: bool) {
    if let Some(error) = c.error.as_ref().filter(|_| with_error) {
        md.push_str(&format!("## Error\n\n{error}\n\n"));
    }
    if let Some(d) = &c.diff {
        md.push_str(&format!(
            "## Changes\n\n{} files changed, {} insertions(+), {} deletions(-) against `{}` — see [{DIFF_FILE}]({DIFF_FILE}).\n\n",
            d.files,
            d.insertions,
            d.deletions,
            battle.base_commit.as_deref().map(|b| &b[..b.len().min(12)]).unwrap_or("the base commit"),
        ));
        md.push_str(&omitted_list(d));
        md.push_str(&environment_note(d));
    }
    if let Some(check) = &c.check {
        let verdict = if let Some(why) = &check.could_not_run {
            format!("could not run ({why}); it counts for no contestant")
        } else if check.passed {
            "passed".to_string()
        } else if check.timed_out {
            "timed out".to_string()
        } else {
            format!(
                "failed (exit status {})",
                check
                    .exit_code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "none".into())
            )
        };
        md.push_str(&format!(
            "## Check\n\n`{}` {verdict} in {:.1} s.\n\n```\n{}\n```\n\n",
            check.command,
            check.duration_ms as f64 / 1000.0,
            check.output_tail.trim_end()
        ));
        md.push_str(&check_notes(check));
    }
    if let Some(reasoning) = c.reasoning.as_deref().filter(|r| !r.is_empty()) {
        md.push_str("<details><summary>Reasoning</summary>\n\n");
        md.push_str(reasoning.trim_end());
        md.push_str("\n\n</details>\n\n");
    }
    md.push_str(&format!("## {}\n\n", battle.battle_type.answer_heading()));
    md.push_str(c.output.as_deref().unwrap_or("(no output)").trim_end());
    md.push('\n');
    if c.truncated {
        md.push_str("\n_(output truncated at the size cap, limits.max_output_bytes)_\n");
    }
}

/// The check's notes: the files of the check the change touches, and what
/// the agent's worktree held that the change does not carry (the check ran
/// on the change applied to a fresh tree of the base, without them).
fn check_notes(check: &crate::battle::CheckResult) -> String {
    // Paths are the agent's: no backtick or line break of theirs reaches
    // the Markdown.
    let quoted = |path: &str| {
        let clean: String = path
            .chars()
            .map(|ch| {
                if ch == '`' || ch.is_control() {
                    '?'
                } else {
                    ch
                }
            })
            .collect();
        format!("`{clean}`")
    };
    let mut md = String::new();
    if !check.touches_check.is_empty() {
        md.push_str(&format!(
            "The change touches the check's own files (tests, test configuration, build files): {}.\n\n",
            check.touches_check.iter().map(|p| quoted(p)).collect::<Vec<_>>().join(", ")
        ));
    }
    if !check.not_in_change.is_empty() {
        md.push_str(
            "Not part of the change (in the agent's worktree, but not in its diff; the check ran \
             without them, as `apply` would leave you):\n\n",
        );
        for path in &check.not_in_change {
            md.push_str(&format!("- {}\n", quoted(path)));
        }
        let more = check
            .not_in_change_count
            .saturating_sub(check.not_in_change.len());
        if more > 0 {
            md.push_str(&format!("- … and {more} more\n"));
        }
        md.push('\n');
    }
    md
}

/// `round-<n>/result.md` of a contestant's later turn (Q&A) or refinement
/// round (Coding).
pub fn render_round(battle: &Battle, c: &Contestant, r: &crate::battle::Round) -> String {
    let mut md = format!(
        "# {} · {} — round {}\n\n- Battle: `{}`\n- Status: {}\n- Duration: {:.2} s\n\n## Feedback\n\n{}\n\n",
        c.identity,
        c.model,
        r.number,
        battle.id,
        r.status.map(|s| s.as_str()).unwrap_or("running"),
        r.duration_ms.unwrap_or(0) as f64 / 1000.0,
        r.feedback.trim()
    );
    if let Some(e) = &r.error {
        md.push_str(&format!("## Error\n\n{e}\n\n"));
    }
    if let Some(d) = &r.diff {
        md.push_str(&format!(
            "## Changes\n\n{} files changed, {} insertions(+), {} deletions(-) against the base commit (all rounds so far) — see [{}]({}).\n\n",
            d.files,
            d.insertions,
            d.deletions,
            DIFF_FILE,
            DIFF_FILE
        ));
        md.push_str(&omitted_list(d));
        md.push_str(&environment_note(d));
    }
    if let Some(check) = &r.check {
        md.push_str(&format!(
            "## Check\n\n`{}` {}.\n\n```\n{}\n```\n\n",
            check.command,
            if check.passed { "passed" } else { "failed" },
            check.output_tail.trim_end()
        ));
        md.push_str(&check_notes(check));
    }
    md.push_str("## Explanation\n\n");
    md.push_str(r.output.trim_end());
    md.push('\n');
    md
}

/// A contestant as result files name it: `identity · model` (its id if
/// it is not one of the battle's).
pub fn contestant_name(battle: &Battle, id: &str) -> String {
    battle
        .contestants
        .iter()
        .find(|c| c.id == id)
        .map(|c| format!("{} · {}", c.identity, c.model))
        .unwrap_or_else(|| id.to_string())
}

/// `analysis.md`: outcome, winner, ranking, reasons, the judge runs, digests.
pub fn render_analysis(battle: &Battle, a: &crate::analysis::Analysis) -> String {
    use crate::analysis::{self, AnalysisStatus, Outcome};
    let name = |id: &str| contestant_name(battle, id);
    let mut md = format!(
        "# Analysis\n\n- Battle: `{}`\n- Judge model: {} ({})\n",
        battle.id, a.model, a.provider
    );
    let outcome = match (a.status, a.outcome) {
        (AnalysisStatus::Error, _) => format!("error: {}", a.error.as_deref().unwrap_or("unknown")),
        (_, Some(Outcome::Winner)) => format!(
            "winner: **{}**",
            a.winner.as_deref().map(name).unwrap_or_default()
        ),
        (_, Some(Outcome::Walkover)) => match &a.winner {
            Some(w) => format!(
                "winner by walkover (the only contestant that finished): **{}**",
                name(w)
            ),
            None => "no contestant finished".into(),
        },
        (_, Some(Outcome::NoClearWinner)) => {
            "no clear winner: the judge's verdicts changed with the order".into()
        }
        (_, Some(Outcome::JudgeError)) => {
            "judge error: a verdict could not be read (nobody's loss)".into()
        }
        (_, None) => "running".into(),
    };
    md.push_str(&format!("- Outcome: {outcome}\n\n"));
    if !a.ranking.is_empty() {
        md.push_str("## Ranking\n\n");
        for (i, id) in a.ranking.iter().enumerate() {
            let reason = a
                .reasons
                .get(id)
                .map(|r| format!(" — {r}"))
                .unwrap_or_default();
            md.push_str(&format!("{}. {}{}\n", i + 1, name(id), reason));
        }
        md.push('\n');
    }
    for (n, run) in a.judge_runs.iter().enumerate() {
        md.push_str(&format!("## Judge run {}\n\nOrder shown: ", n + 1));
        let shown: Vec<String> = analysis::labels(run.order.len())
            .iter()
            .zip(&run.order)
            .map(|(l, id)| format!("{l} = {}", name(id)))
            .collect();
        md.push_str(&shown.join(", "));
        md.push_str("\n\n");
        match (&run.verdict, &run.error) {
            (Some(v), _) => md.push_str(&format!("Verdict: {}\n\n", name(&v.winner))),
            (None, Some(e)) => md.push_str(&format!("Unreadable verdict: {e}\n\n")),
            _ => {}
        }
    }
    if !a.digests.is_empty() {
        md.push_str("## Digests\n\n");
        for d in &a.digests {
            md.push_str(&format!(
                "### {} ({} words)\n\n{}\n\n",
                name(&d.contestant_id),
                d.words,
                d.text.trim()
            ));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn components_are_safe() {
        for (input, want) in [
            ("qwen3-8b", "qwen3-8b"),
            ("Code Reviewer", "code-reviewer"),
            ("../../x", "x"),
            ("a/b\\c", "a-b-c"),
            ("..", "x"),
            ("", "x"),
            ("con", "x"),
            ("a/../b", "a-b"),
            ("name\u{0}with\u{7}ctl", "name-with-ctl"),
            ("Qwen/Qwen3:8B@q4", "qwen-qwen3-8b-q4"),
            ("a..b", "a.b"),
        ] {
            assert_eq!(safe_component(input, 60), want, "{input:?}");
        }
        let long = "é".repeat(100);
        assert!(safe_component(&long, 10).len() <= 10);
    }

    #[test]
    fn slug_and_dir_names() {
        let t = Utc.with_ymd_and_hms(2026, 11, 21, 9, 15, 3).unwrap();
        assert_eq!(
            battle_slug(
                "ffff0000-1a2b3c4d",
                BattleType::Qa,
                "Why is the sky blue?",
                t
            ),
            "2026-11-21-091503-qa-why-is-the-sky-blue-1a2b3c4d"
        );
        assert_eq!(
            contestant_dir_name(0, "Debugger", "../../x"),
            "01-debugger-x"
        );
    }

    #[test]
    fn confinement_refuses_escapes() {
        let root = Path::new("/p/Arena");
        assert!(confined(root, &["ok"]).is_ok());
        assert!(confined(root, &[".."]).is_err());
        assert!(confined(root, &["a/b"]).is_err());
        assert!(confined(root, &["/etc"]).is_err());
    }

    #[test]
    fn results_are_excluded_through_the_repository_not_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        git2::Repository::init(dir.path()).unwrap();
        ensure_excluded(dir.path()).unwrap();
        ensure_excluded(dir.path()).unwrap();
        let exclude = dir.path().join(".git/info/exclude");
        let text = std::fs::read_to_string(&exclude).unwrap();
        assert_eq!(text.matches("/Arena/").count(), 1, "{text}");
        assert!(!dir.path().join(".gitignore").exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&exclude).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
        // No repository: nothing written.
        let plain = tempfile::tempdir().unwrap();
        ensure_excluded(plain.path()).unwrap();
        assert!(!plain.path().join(".gitignore").exists());
        assert!(!plain.path().join(".git").exists());
        // A .gitignore that covers it already: left alone, nothing added.
        let kept = tempfile::tempdir().unwrap();
        git2::Repository::init(kept.path()).unwrap();
        std::fs::write(kept.path().join(".gitignore"), "target\nArena/\n").unwrap();
        ensure_excluded(kept.path()).unwrap();
        let text =
            std::fs::read_to_string(kept.path().join(".git/info/exclude")).unwrap_or_default();
        assert!(!text.contains("/Arena/"), "{text}");
    }
}
