//! The JSON contract, pinned: one snapshot per wire type (in
//! `tests/snapshots/`), built from engine values with every field set, and
//! the README's list of Battle JSON fields checked against the real thing.
//! A change to a wire type shows up here as a snapshot diff to review
//! (`INSTA_UPDATE=always cargo test -p arena-api --test wire` rewrites them).

use std::collections::BTreeMap;
use std::path::PathBuf;

use arena_api::*;
use arena_core as core;
use chrono::{DateTime, TimeZone, Utc};
use insta::assert_json_snapshot;

fn at(second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 9, 15, second)
        .single()
        .expect("a valid time")
}

fn contestant(position: u32, id: &str) -> core::Contestant {
    core::Contestant {
        id: id.into(),
        battle_id: "b1".into(),
        position,
        identity: "native".into(),
        model: format!("qwen3-{id}"),
        provider: "llama-swap".into(),
        lane: core::Lane::Local,
        status: core::ContestantStatus::Done,
        error: None,
        attempts: 1,
        started_at: Some(at(4)),
        finished_at: Some(at(9)),
        benchmark: core::battle::Benchmark {
            duration_ms: Some(5000),
            ttft_ms: Some(120),
            prompt_tokens: Some(40),
            completion_tokens: Some(400),
            tokens_per_sec: Some(81.5),
            rate_source: Some(core::battle::RateSource::Server),
            cached_tokens: Some(8),
            prompt_per_sec: Some(512.0),
            model_switched: position == 0,
            cost_usd: Some(0.0125),
        },
        output: Some("Fixed the off-by-one.".into()),
        reasoning: Some("The loop ends one early.".into()),
        truncated: false,
        result_path: Some(PathBuf::from(format!("/p/Arena/b/0{position}/result.md"))),
        run: core::battle::RunSpec::default(),
        worktree: Some(PathBuf::from(format!("/data/worktrees/{id}"))),
        diff: Some(core::battle::DiffSummary {
            files: 2,
            insertions: 10,
            deletions: 3,
            omitted: Vec::new(),
            environment: None,
        }),
        check: Some(check()),
        waiting: None,
        label: None,
    }
}

fn check() -> core::battle::CheckResult {
    core::battle::CheckResult {
        command: "cargo test".into(),
        exit_code: Some(0),
        passed: true,
        timed_out: false,
        duration_ms: 900,
        output_tail: "test result: ok".into(),
        not_in_change: vec!["calc/ (a git repository of its own)".into()],
        not_in_change_count: 1,
        touches_check: vec!["tests/test_calc.py".into()],
        could_not_run: None,
    }
}

fn battle() -> core::Battle {
    core::Battle {
        id: "b1".into(),
        battle_type: core::BattleType::Coding,
        status: core::BattleStatus::Done,
        prompt: "Fix the bug".into(),
        project: PathBuf::from("/p"),
        results_path: PathBuf::from("/p/Arena/b"),
        created_at: at(3),
        finished_at: Some(at(10)),
        winner: Some(core::battle::Winner {
            contestant_id: "c2".into(),
            source: core::battle::WinnerSource::Analysis,
        }),
        contestants: vec![contestant(0, "c1"), contestant(1, "c2")],
        base_commit: Some("abc123".into()),
        check_command: Some("cargo test".into()),
        series_id: None,
        blind: false,
        revealed_at: None,
        user_verdict: None,
        tags: Vec::new(),
        judging: Some(core::battle::Judging {
            status: core::analysis::AnalysisStatus::Done,
            outcome: Some(core::analysis::Outcome::NoClearWinner),
        }),
        machine: Some("alpha".into()),
        user_name: Some("alice".into()),
        voted_by: None,
        source: None,
    }
}

fn analysis() -> core::analysis::Analysis {
    let verdict = core::analysis::Verdict {
        winner: "c2".into(),
        ranking: vec!["c2".into(), "c1".into()],
        reasons: BTreeMap::from([("c2".into(), "adds a test".into())]),
    };
    core::analysis::Analysis {
        id: "a1".into(),
        battle_id: "b1".into(),
        status: core::analysis::AnalysisStatus::Done,
        model: "judge".into(),
        provider: "openrouter".into(),
        outcome: Some(core::analysis::Outcome::Winner),
        winner: Some("c2".into()),
        ranking: verdict.ranking.clone(),
        reasons: verdict.reasons.clone(),
        digests: vec![core::analysis::Digest {
            contestant_id: "c1".into(),
            text: "Fixes the loop.".into(),
            words: 3,
        }],
        judge_runs: vec![core::analysis::JudgeRun {
            order: vec!["c2".into(), "c1".into()],
            raw: "{\"winner\": \"A\"}".into(),
            verdict: Some(verdict),
            error: None,
            repaired: false,
        }],
        error: None,
        created_at: at(11),
        finished_at: Some(at(20)),
        cost_usd: Some(0.004),
    }
}

fn cross_examination() -> core::cross_exam::CrossExamination {
    core::cross_exam::CrossExamination {
        id: "x1".into(),
        battle_id: "b1".into(),
        number: 1,
        identity: "qwen".into(),
        model: "qwen3-8b".into(),
        provider: "llama-swap".into(),
        question: "Which one is right?".into(),
        status: core::analysis::AnalysisStatus::Done,
        output: "B is right.".into(),
        verdict: Some(core::cross_exam::CrossVerdict {
            winner: "c2".into(),
            reason: Some("it tests".into()),
        }),
        error: None,
        path: Some(PathBuf::from("/p/Arena/b/cross-exam-1.md")),
        created_at: at(21),
        finished_at: Some(at(30)),
    }
}

fn round() -> core::battle::Round {
    core::battle::Round {
        id: "r1".into(),
        contestant_id: "c1".into(),
        number: 2,
        feedback: "Also handle leap years".into(),
        status: Some(core::ContestantStatus::Done),
        output: "Handled.".into(),
        error: None,
        diff: Some(core::battle::DiffSummary {
            files: 3,
            insertions: 14,
            deletions: 3,
            omitted: Vec::new(),
            environment: None,
        }),
        check: Some(check()),
        duration_ms: Some(4000),
        result_path: Some(PathBuf::from("/p/Arena/b/00/round-2/result.md")),
        created_at: at(31),
        finished_at: Some(at(35)),
        cost_usd: None,
    }
}

fn detail() -> core::store::BattleDetail {
    core::store::BattleDetail {
        battle: battle(),
        analysis: Some(analysis()),
        cross_examinations: vec![cross_examination()],
        rounds: BTreeMap::from([("c1".into(), vec![round()]), ("c2".into(), vec![])]),
        last_seq: 42,
    }
}

/// The detail as the engine hands it to its viewer.
fn shown(d: &core::store::BattleDetail) -> BattleDetailDto {
    BattleDetailDto::from(&core::blind::DetailView::new(
        &d.battle,
        d.rounds.clone(),
        d.analysis.clone(),
        d.cross_examinations.clone(),
        d.last_seq,
    ))
}

#[test]
fn a_battle() {
    assert_json_snapshot!(BattleDto::from(&core::blind::BattleView::of(&battle())));
}

#[test]
fn a_battle_in_full() {
    assert_json_snapshot!(shown(&detail()));
}

/// A blind battle before the vote: labels in label order, and nothing in
/// the JSON names a contestant, its provider or lane, or its speeds.
#[test]
fn a_blind_battle_before_the_vote() {
    let mut d = detail();
    d.battle.blind = true;
    d.battle.contestants[0].label = Some("B".into());
    d.battle.contestants[1].label = Some("A".into());
    let dto = shown(&d);
    let json = serde_json::to_string(&dto).expect("serialisable");
    let c = &d.battle.contestants;
    for secret in [
        &c[0].identity,
        &c[0].model,
        &c[0].provider,
        &c[1].identity,
        &c[1].model,
        &c[1].provider,
        &"\"lane\":\"".to_string(),
        &"judge".to_string(),
    ] {
        assert!(!json.contains(secret.as_str()), "{secret} in {json}");
    }
    assert!(dto.battle.masked && dto.analysis.is_none());
    assert_json_snapshot!(dto);
    // Revealed: everything, labels kept, and the order the vote was cast
    // on (A first), not the roster's.
    d.battle.revealed_at = Some(at(40));
    let dto = shown(&d);
    assert!(!dto.battle.masked && dto.analysis.is_some());
    assert_eq!(
        dto.battle.contestants[0].model,
        d.battle.contestants[1].model
    );
    assert_eq!(dto.battle.contestants[0].label.as_deref(), Some("A"));
    assert_eq!(dto.battle.contestants[1].label.as_deref(), Some("B"));
}

#[test]
fn an_analysis() {
    assert_json_snapshot!(AnalysisDto::from(&analysis()));
}

#[test]
fn a_cross_examination() {
    assert_json_snapshot!(CrossExaminationDto::from(&cross_examination()));
}

#[test]
fn a_round() {
    assert_json_snapshot!(RoundDto::from(&round()));
}

#[test]
fn events() {
    use core::EventKind as K;
    let kinds = vec![
        K::ContestantStatus {
            status: core::ContestantStatus::Error,
            error: Some("429".into()),
            attempt: 2,
        },
        K::Output { text: "Hel".into() },
        K::Waiting {
            reason: Some("waiting for llama-swap (127.0.0.1:8080)".into()),
        },
        K::Benchmark {
            benchmark: battle().contestants[0].benchmark.clone(),
        },
        K::Winner {
            winner: battle().winner,
        },
    ];
    let events: Vec<BattleEventDto> = kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            BattleEventDto::from(core::BattleEvent {
                battle_id: "b1".into(),
                seq: i as u64 + 1,
                contestant_id: Some("c1".into()),
                at: at(5),
                kind,
            })
        })
        .collect();
    assert_json_snapshot!(events);
}

#[test]
fn a_standing() {
    assert_json_snapshot!(StandingDto::from(&core::leaderboard::Standing {
        rank: 1,
        identity: "native".into(),
        model: "qwen3-8b".into(),
        rating: 1087.5,
        rating_low: 1010.0,
        rating_high: 1160.25,
        rating_lc: Some(1042.0),
        battles: 12,
        decided: 10,
        wins: 7,
        ties: 1,
        losses: 2,
        win_rate: 0.7,
        median_duration_ms: Some(5200.0),
        median_tokens_per_sec: Some(80.5),
        cost_usd: Some(0.35),
        cost_per_win_usd: Some(0.05),
    }));
}

#[test]
fn the_providers_and_their_models() {
    let catalog = core::catalog::Catalog {
        providers: vec![
            core::catalog::ProviderModels {
                provider: "llama-swap".into(),
                kind: core::config::ProviderKind::Openai,
                base_url: "http://127.0.0.1:8080/v1".into(),
                lane: core::Lane::Local,
                models: Ok(vec!["qwen3-8b".into()]),
            },
            core::catalog::ProviderModels {
                provider: "anthropic".into(),
                kind: core::config::ProviderKind::Anthropic,
                base_url: "https://api.anthropic.com/v1".into(),
                lane: core::Lane::Cloud,
                models: Err("401 Unauthorized".into()),
            },
        ],
    };
    assert_json_snapshot!(CatalogDto::from(&catalog));
}

#[test]
fn the_personas() {
    let registry = core::persona::Registry {
        path: PathBuf::from("/data/AGENTS.md"),
        personas: vec![core::persona::Persona {
            name: "Debugger".into(),
            system_prompt: "You find bugs.".into(),
            tools: vec!["read_file".into()],
            temperature: Some(0.2),
            top_p: None,
            max_tokens: Some(2048),
            description: Some("finds bugs".into()),
        }],
    };
    assert_json_snapshot!(PersonasDto::from(&registry));
}

#[test]
fn a_backend() {
    assert_json_snapshot!(BackendDto::from(core::backend::BackendStatus {
        name: "qwen".into(),
        program: Some("qwen".into()),
        installed: true,
        path: Some(PathBuf::from("/usr/local/bin/qwen")),
        read_only: true,
        custom: false,
    }));
}

#[test]
fn a_diff() {
    let patch = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n # Demo\n+hello\n";
    let files = core::patch::parse(patch);
    assert_json_snapshot!(DiffViewDto::from(core::patch::ContestantDiff {
        round: 1,
        files
    }));
}

#[test]
fn worktrees_and_pruning() {
    let entry = core::WorktreeEntry {
        battle_id: "b1".into(),
        battle_status: core::BattleStatus::Done,
        contestant_id: "c1".into(),
        project: PathBuf::from("/p"),
        path: PathBuf::from("/data/worktrees/c1"),
        name: Some("arena-c1".into()),
        exists: true,
        dirty: false,
    };
    assert_json_snapshot!(WorktreeDto::from(&entry));
    assert_json_snapshot!(PruneDto::new(
        &[PathBuf::from("/data/worktrees/c1")],
        &[(
            PathBuf::from("/data/worktrees/c2"),
            "uncommitted changes".into()
        )],
    ));
    use core::agent::apply::{Applied, AppliedFile, Autorun, Changes};
    use core::diff::{ChangeStatus, DiffStats};
    let held = Applied::Held(Changes {
        files: vec![
            AppliedFile {
                path: "src/new.rs".into(),
                old_path: Some("src/old.rs".into()),
                status: ChangeStatus::Renamed,
                autorun: None,
            },
            AppliedFile {
                path: ".envrc".into(),
                old_path: None,
                status: ChangeStatus::Added,
                autorun: Some(Autorun::Direnv),
            },
        ],
        stats: DiffStats {
            files: 2,
            insertions: 2,
            deletions: 0,
        },
    });
    assert_json_snapshot!(ApplyResultDto::new("b1".into(), "c2".into(), &held));
}

/// Run again and Edit & rerun: what a battle was started with, in launch
/// order; each model named with its provider in the request, an agent's
/// own model (no provider) as it is.
#[test]
fn a_launch() {
    let mut b = battle();
    b.contestants.reverse();
    b.contestants[0].identity = "claude".into();
    b.contestants[0].model = "sonnet".into();
    b.contestants[0].provider = String::new();
    b.tags = vec!["rust".into()];
    b.blind = true;
    let launch = LaunchDto::from(&b);
    assert_eq!(
        launch.request().contestants,
        ["native@llama-swap/qwen3-c1", "claude@sonnet"]
    );
    assert_eq!(launch.request().base, BaseChoiceDto::Head);
    assert_json_snapshot!(launch);
}

#[test]
fn a_series() {
    use core::series::{
        parse_prompts, report, RunRow, Series, SeriesProgress, SeriesRequest, SeriesStatus,
        SeriesSummary,
    };
    let request = SeriesRequest {
        battle_type: core::BattleType::Qa,
        project: PathBuf::from("/p"),
        contestants: vec![
            core::ContestantSpec::parse("debugger@m1").unwrap(),
            core::ContestantSpec::parse("explainer@m2").unwrap(),
        ],
        prompts: parse_prompts("Why?\n").unwrap(),
        runs: 2,
        parallel: 1,
        goal: Some("explains".into()),
        goal_model: None,
        confirm_model: None,
        max_turns: 1,
        budget_usd: Some(1.0),
        until_decided: false,
        analysis: true,
        check_command: None,
        tags: vec![],
        blind: false,
    };
    let row = |run: u32, who: &str, won: bool| RunRow {
        run,
        prompt: 0,
        battle_id: format!("b{run}"),
        contestant_id: format!("{who}{run}"),
        contestant: format!("{who}@m"),
        status: core::ContestantStatus::Done,
        won,
        tie: false,
        decided: true,
        goal_passed: Some(won),
        goal_reason: Some("checked".into()),
        goal_error: None,
        turns: 1,
        duration_ms: Some(1000 * u64::from(run)),
        ttft_ms: Some(100),
        tokens_per_sec: Some(50.0),
        local: true,
        prompt_tokens: Some(10),
        completion_tokens: Some(20),
        cost_usd: Some(0.0),
        judging_cost_usd: Some(0.0),
    };
    let rows = vec![
        row(1, "Debugger", true),
        row(1, "Explainer", false),
        row(2, "Debugger", true),
        row(2, "Explainer", false),
    ];
    let summary = SeriesSummary {
        series: Series {
            id: "0193a2b4-0000-7000-8000-00000000abcd".into(),
            key: Some("nightly".into()),
            request,
            status: SeriesStatus::Done,
            total: 2,
            created_at: at(1),
            finished_at: Some(at(50)),
            decided_after: None,
            report_path: Some(PathBuf::from("/p/Arena/series-x")),
            error: None,
            tags: vec!["geo".into()],
            machine: Some("alpha".into()),
            waiting: None,
            base_commit: None,
            remote_url: None,
        },
        battles: vec!["b1".into(), "b2".into()],
        reports: report(&rows),
        rows,
        progress: SeriesProgress {
            status: SeriesStatus::Done,
            done: 2,
            total: 2,
            running: 0,
            spent_usd: Some(0.0),
            spent_known_usd: 0.0,
            unknown_costs: 0,
            unpriced: Vec::new(),
            time_left_ms: None,
        },
        awaiting_votes: 0,
    };
    assert_json_snapshot!(SeriesDto::from(&summary));
}

#[test]
fn the_app_and_its_settings() {
    assert_json_snapshot!(AppInfo {
        version: "0.1.0".into(),
        commit: "1a2b3c4d5e6f".into(),
        built: "2026-11-27".into(),
        data_dir: "/data/dev.arena.desktop".into(),
        battles: Some(3),
        startup_error: None,
        config_missing: None,
    });
    let provider = core::config::ProviderConfig::new(
        "openrouter",
        core::config::ProviderKind::Openai,
        "https://openrouter.ai/api/v1",
        core::Lane::Cloud,
    );
    assert_json_snapshot!(SettingsDto {
        config_path: Some("/home/u/.config/dev.arena.desktop/arena.toml".into()),
        config_exists: true,
        data_dir: "/data/dev.arena.desktop".into(),
        default_model: Some("judge".into()),
        providers: vec![ProviderSettingsDto::new(
            &provider,
            Some(core::provider::KeySource::Keychain)
        )],
        sandbox: "jail: bubblewrap 0.8.0 · Landlock ABI 7 · seccomp".into(),
    });
}

#[test]
fn an_error() {
    let e = core::Error::from(core::Invalid::EmptyPrompt);
    assert_json_snapshot!(ErrorDto::from(&e));
}

/// Every field the README lists for the Battle JSON of `battle run/show
/// --json` is in it, at the battle and at each contestant.
#[test]
fn the_readme_battle_contract_holds() {
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("the README");
    let start = readme
        .find("Battle JSON (`battle run/show --json`):")
        .expect("the README documents the Battle JSON");
    let section = &readme[start..];
    let section = &section[..section.find("\n\n").unwrap_or(section.len())];
    let (battle_part, contestant_part) = section
        .split_once("`contestants[]` with")
        .expect("the contestant fields follow `contestants[]`");
    let fields = |text: &str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .filter(|f| f.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .map(str::to_string)
            .collect()
    };
    let json = serde_json::to_value(shown(&detail())).expect("serialisable");
    let battle_fields = fields(battle_part);
    let contestant_fields = fields(contestant_part);
    assert!(battle_fields.len() >= 12 && contestant_fields.len() >= 25);
    for f in &battle_fields {
        assert!(json.get(f).is_some(), "the battle has no `{f}`: {json:#}");
    }
    for f in &contestant_fields {
        assert!(
            json["contestants"][0].get(f).is_some(),
            "a contestant has no `{f}`"
        );
    }
}

/// Every leaf of `value` with its path (`.contestants.0.benchmark.ttft_ms`).
fn leaves<'v>(
    value: &'v serde_json::Value,
    path: String,
    out: &mut Vec<(String, &'v serde_json::Value)>,
) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                leaves(v, format!("{path}.{k}"), out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                leaves(v, format!("{path}.{i}"), out);
            }
        }
        leaf => out.push((path, leaf)),
    }
}

/// What would tell a masked battle's contestants apart, as the fixtures
/// spell it.
const SECRETS: &[&str] = &[
    "native",
    "qwen3-c1",
    "qwen3-c2",
    "llama-swap",
    "openrouter",
    "\"local\"",
    "/p/Arena/b/0",
    "/data/worktrees",
    "judge",
    "out of memory on the 8B",
];

/// The viewer policy, field by field: the IPC payload of a masked battle
/// (with its rounds, analysis and cross-examinations) and every event a
/// masked viewer is sent are walked leaf by leaf. No leaf names a
/// contestant, model, provider, lane, path or private error; figures,
/// times, lanes, the winner and the judge's panel are empty; places follow
/// the labels.
#[test]
fn a_masked_battle_field_by_field() {
    let mut d = detail();
    d.battle.blind = true;
    d.battle.contestants[0].label = Some("B".into());
    d.battle.contestants[1].label = Some("A".into());
    d.battle.contestants[0].error = Some("llama-swap: out of memory on the 8B".into());
    d.battle.contestants[1].waiting = Some("waiting for llama-swap (qwen3-c2)".into());
    if let Some(rounds) = d.rounds.get_mut("c1") {
        rounds[0].error = Some("out of memory on the 8B".into());
    }
    let json = serde_json::to_value(shown(&d)).expect("serialisable");
    let mut all = Vec::new();
    leaves(&json, String::new(), &mut all);
    let hidden = [
        "lane",
        "started_at",
        "finished_at",
        "result_path",
        "worktree",
        "winner",
        "duration_ms",
        "cost_usd",
        "analysis",
        "vote",
        "judging",
    ];
    for (path, leaf) in &all {
        let text = leaf.to_string();
        for secret in SECRETS {
            assert!(!text.contains(secret), "{path} = {text} shows {secret}");
        }
        let field = path.rsplit('.').next().unwrap_or_default();
        let figure = path.contains(".benchmark.") && field != "model_switched";
        // A check's result is the contestant's work, shown like its diff.
        let work = path.contains(".check.");
        if figure || (hidden.contains(&field) && !work) {
            assert!(leaf.is_null(), "{path} = {text} while masked");
        }
    }
    assert_eq!(json["cross_examinations"], serde_json::json!([]));
    let places: Vec<_> = json["contestants"]
        .as_array()
        .expect("contestants")
        .iter()
        .map(|c| (c["label"].clone(), c["position"].clone()))
        .collect();
    assert_eq!(
        places,
        [
            (serde_json::json!("A"), serde_json::json!(1)),
            (serde_json::json!("B"), serde_json::json!(2))
        ]
    );

    use core::EventKind as K;
    let c = &d.battle.contestants[0];
    let kinds = vec![
        K::ContestantStatus {
            status: core::ContestantStatus::Error,
            error: c.error.clone(),
            attempt: 2,
        },
        K::Waiting {
            reason: Some("waiting for llama-swap (qwen3-c1)".into()),
        },
        K::Retry {
            attempt: 2,
            delay_ms: 500,
            reason: "llama-swap: out of memory on the 8B".into(),
        },
        K::Benchmark {
            benchmark: c.benchmark.clone(),
        },
        K::Winner {
            winner: d.battle.winner.clone(),
        },
        K::ResultWritten {
            path: "/p/Arena/b/01-native-qwen3-c1/result.md".into(),
        },
        K::AnalysisStatus {
            analysis_id: "a1".into(),
            status: core::analysis::AnalysisStatus::Done,
            outcome: Some(core::analysis::Outcome::Winner),
            winner: Some("c2".into()),
            error: None,
        },
        K::AnalysisOutput {
            analysis_id: "a1".into(),
            stage: "judge 1".into(),
            text: "native on qwen3-c1 is best".into(),
        },
        K::CrossExamStatus {
            cross_exam_id: "x1".into(),
            number: 1,
            status: core::analysis::AnalysisStatus::Error,
            error: Some("llama-swap".into()),
        },
        K::CrossExamOutput {
            cross_exam_id: "x1".into(),
            text: "qwen3-c2 wins".into(),
        },
        K::Output { text: "Hel".into() },
    ];
    let mut mask = core::blind::EventMask::new(true);
    for kind in kinds {
        let Some(kind) = mask.apply(kind) else {
            continue;
        };
        let event = serde_json::to_value(BattleEventDto::from(core::BattleEvent {
            battle_id: "b1".into(),
            seq: 1,
            contestant_id: Some("c1".into()),
            at: at(5),
            kind,
        }))
        .expect("serialisable");
        let mut all = Vec::new();
        leaves(&event, String::new(), &mut all);
        for (path, leaf) in all {
            for secret in SECRETS {
                let text = leaf.to_string();
                assert!(
                    !text.contains(secret),
                    "event {path} = {text} shows {secret}"
                );
            }
        }
    }
}
