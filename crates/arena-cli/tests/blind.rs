//! Blind battles and the personal leaderboard through the real `arena`
//! binary: labels only until `battle vote`, the vote beside the judge's,
//! and the leaderboard's source, project, type, series, tag, machine and
//! voter filters with judge–human agreement on battles of known outcome.

mod common;

use arena_testserver::ModelScript;
use common::{output, stdout as text, Setup};
use serde_json::Value;

/// The judge (the default model) prefers answers with STAR; `m-star` has
/// it, `m-plain` has not.
fn models(s: &Setup) {
    s.cloud
        .set_model("judge", ModelScript::judge_preferring("STAR"));
    s.cloud
        .set_model("m-star", ModelScript::text("The STAR answer: 4."));
    s.cloud
        .set_model("m-plain", ModelScript::text("It is four, I believe."));
}

const SECRETS: [&str; 5] = ["m-star", "m-plain", "debugger", "explainer", "cloud"];

fn assert_hidden(what: &str, text: &str) {
    let lower = text.to_lowercase();
    for secret in SECRETS {
        assert!(!lower.contains(secret), "{what} shows {secret}: {text}");
    }
}

#[tokio::test]
async fn a_blind_battle_shows_labels_until_the_vote() {
    let s = Setup::new().await;
    models(&s);
    let project = s.project();
    let out = s
        .arena(&[
            "battle",
            "run",
            "--type",
            "qa",
            "--blind",
            "--tag",
            "maths",
            "--prompt",
            "What is 2+2?",
            "--project",
            project.to_str().unwrap(),
            "-c",
            "debugger@m-star",
            "-c",
            "explainer@m-plain",
        ])
        .await;
    let shown = text(&out);
    // The progress (stderr) and the battle at the end (stdout): labels only.
    assert_hidden("the progress", &String::from_utf8_lossy(&out.stderr));
    assert_hidden("the battle", &shown);
    assert!(
        shown.contains("Contestant A") && shown.contains("Contestant B"),
        "{shown}"
    );
    assert!(shown.contains("arena battle vote"), "{shown}");

    let list = s.json(&["battle", "list", "--json"]).await;
    let id = list[0]["id"].as_str().unwrap().to_string();
    let json = s.json(&["battle", "show", &id, "--json"]).await;
    assert_eq!(json["masked"], true);
    assert_eq!(json["tags"], serde_json::json!(["maths"]));
    assert_hidden("battle show --json", &json.to_string());
    assert_hidden(
        "battle show --output",
        &text(&s.arena(&["battle", "show", &id, "--output"]).await),
    );
    // The answers are there, by label.
    let star_label = json["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["output"].as_str().unwrap_or("").contains("STAR"))
        .map(|c| c["label"].as_str().unwrap().to_string())
        .unwrap();
    let plain_label = if star_label == "A" { "B" } else { "A" };

    // A wrong label is refused (exit 2), and nothing is revealed.
    let bad = s.arena(&["battle", "vote", &id, "Q"]).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("vote for one of"));
    assert_eq!(
        s.json(&["battle", "show", &id, "--json"]).await["masked"],
        true
    );

    // The vote for the plain answer reveals, with the judge's choice beside it.
    let voted = text(&s.arena(&["battle", "vote", &id, plain_label]).await);
    assert!(
        voted.contains(&format!("You chose {plain_label} · Explainer@m-plain."))
            && voted.contains(&format!("The judge chose {star_label} · Debugger@m-star.")),
        "{voted}"
    );
    let json = s.json(&["battle", "show", &id, "--json"]).await;
    assert_eq!(json["masked"], false);
    assert_eq!(json["winner"]["source"], "user");
    assert!(json["analysis"].is_object());
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(json["results_path"].as_str().unwrap()).join("manifest.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(manifest.to_string().contains("m-plain"), "{manifest:#}");
    let tie = text(&s.arena(&["battle", "vote", &id, "--all-bad"]).await);
    assert!(tie.starts_with("You found them all bad."), "{tie}");
}

/// The live progress, drawn as on a terminal: `script` gives the CLI a
/// pseudo-terminal, so indicatif draws its lines.
#[tokio::test]
async fn the_progress_of_a_blind_battle_shows_labels() {
    let s = Setup::new().await;
    models(&s);
    s.cloud
        .set_model("m-plain", ModelScript::tokens(30).rate(60.0));
    let arena = env!("CARGO_BIN_EXE_arena");
    let command = format!(
        "{arena} battle run --type qa --blind --no-analysis --prompt 'What is 2+2?' --project {} -c debugger@m-star -c explainer@m-plain",
        s.project().display()
    );
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &command, "/dev/null"])
        .env("ARENA_CONFIG", s.dir.path().join("arena.toml"))
        .env("ARENA_DATA_DIR", s.dir.path().join("data"))
        .env("TERM", "xterm")
        .env_remove("RUST_LOG");
    let shown = text(&output(cmd).await);
    // The progress lines (and the battle printed after them).
    assert!(
        shown.contains("Contestant A") && shown.contains("[blind]"),
        "{shown}"
    );
    assert_hidden("the terminal", &shown);
}

/// Runs one Q&A battle (judged) in `project`, returns its id.
async fn battle(s: &Setup, project: &std::path::Path, tag: Option<&str>) -> String {
    let project = project.to_str().unwrap();
    let mut args = vec![
        "battle",
        "run",
        "--type",
        "qa",
        "--json",
        "--project",
        project,
    ];
    args.extend(["--prompt", "What is 2+2?"]);
    args.extend(["-c", "debugger@m-star", "-c", "explainer@m-plain"]);
    if let Some(tag) = tag {
        args.extend(["--tag", tag]);
    }
    s.json(&args).await["id"].as_str().unwrap().to_string()
}

/// Wins per model in `arena leaderboard --json ARGS…`, and the agreement.
async fn board(s: &Setup, args: &[&str]) -> (Vec<(String, u64)>, Value) {
    let mut all = vec!["leaderboard", "--json"];
    all.extend_from_slice(args);
    let json = s.json(&all).await;
    let mut wins: Vec<(String, u64)> = json["standings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["model"].as_str().unwrap().to_string(),
                r["wins"].as_u64().unwrap(),
            )
        })
        .collect();
    wins.sort();
    (wins, json["agreement"].clone())
}

fn wins(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(m, w)| (m.to_string(), *w)).collect()
}

#[tokio::test]
async fn the_leaderboard_filters_by_source_project_type_series_and_tag() {
    let s = Setup::new().await;
    models(&s);
    let home = s.project();
    let other = s.dir.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    // Known outcomes: the judge always picks m-star (position 1).
    // b1: you pick m-plain (disagree); b2: you pick m-star (agree);
    // b3 (other project, tagged): you call it a tie (disagree);
    // b4 (tagged): no vote.
    let b1 = battle(&s, &home, None).await;
    let b2 = battle(&s, &home, None).await;
    let b3 = battle(&s, &other, Some("hard")).await;
    let _b4 = battle(&s, &home, Some("hard")).await;
    text(&s.arena(&["battle", "vote", &b1, "2"]).await);
    text(&s.arena(&["battle", "vote", &b2, "1"]).await);
    text(&s.arena(&["battle", "vote", &b3, "--tie"]).await);
    // A series of two runs, unvoted: the judge's verdicts.
    let series = s
        .json(&[
            "series",
            "run",
            "--type",
            "qa",
            "--project",
            home.to_str().unwrap(),
            "--prompt",
            "Again: 2+2?",
            "-c",
            "debugger@m-star",
            "-c",
            "explainer@m-plain",
            "--runs",
            "2",
            "--json",
        ])
        .await;
    let series_id = series["id"].as_str().unwrap().to_string();
    // Its tag, given afterwards, reaches its battles.
    let tagged = text(&s.arena(&["series", "tag", &series_id, "again"]).await);
    assert_eq!(tagged.trim(), "again");

    let (mine, agreement) = board(&s, &["--source", "mine"]).await;
    assert_eq!(mine, wins(&[("m-plain", 1), ("m-star", 1)]));
    // Three battles with both verdicts (b1, b2, b3), one agreed (b2).
    assert_eq!(
        (
            agreement["both_chose"].as_u64(),
            agreement["agreed"].as_u64()
        ),
        (Some(3), Some(1))
    );
    let ci = agreement["rate_ci"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() < 1.0 / 3.0 && 1.0 / 3.0 < ci[1].as_f64().unwrap());
    let (judge, _) = board(&s, &["--source", "judge"]).await;
    assert_eq!(judge, wins(&[("m-plain", 0), ("m-star", 6)]));
    // Both: yours where given (b1 plain, b2 star, b3 tie), else the judge's.
    let (both, _) = board(&s, &[]).await;
    assert_eq!(both, wins(&[("m-plain", 1), ("m-star", 4)]));
    let (elsewhere, _) = board(&s, &["--project", other.to_str().unwrap()]).await;
    assert_eq!(elsewhere, wins(&[("m-plain", 0), ("m-star", 0)]));
    let (hard, _) = board(&s, &["--tag", "hard"]).await;
    assert_eq!(hard, wins(&[("m-plain", 0), ("m-star", 1)]));
    let (in_series, _) = board(&s, &["--series", &series_id, "--source", "judge"]).await;
    assert_eq!(in_series, wins(&[("m-plain", 0), ("m-star", 2)]));
    let (again, _) = board(&s, &["--tag", "again", "--source", "judge"]).await;
    assert_eq!(again, in_series);
    let (coding, _) = board(&s, &["--type", "coding"]).await;
    assert!(coding.is_empty());
    // The text view shows the agreement and the length-controlled rating.
    let shown = text(&s.arena(&["leaderboard"]).await);
    assert!(
        shown.contains("agreed in 1 of 3 battles") && shown.contains("length-c."),
        "{shown}"
    );
    let bad = s.arena(&["leaderboard", "--source", "yours"]).await;
    assert_eq!(bad.status.code(), Some(2));
}

/// `arena` as `user` on `machine` (`ARENA_USER`, `ARENA_MACHINE`).
async fn as_user(s: &Setup, machine: &str, user: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = s.command(args);
    cmd.env("ARENA_MACHINE", machine).env("ARENA_USER", user);
    output(cmd).await
}

#[tokio::test]
async fn the_leaderboard_filters_by_machine_and_by_who_gave_the_verdict() {
    let s = Setup::new().await;
    models(&s);
    let project = s.project();
    let run = |machine: &'static str, user: &'static str| {
        let s = &s;
        let project = project.to_str().unwrap().to_string();
        async move {
            let out = as_user(
                s,
                machine,
                user,
                &[
                    "battle",
                    "run",
                    "--type",
                    "qa",
                    "--json",
                    "--no-analysis",
                    "--project",
                    &project,
                    "--prompt",
                    "What is 2+2?",
                    "-c",
                    "debugger@m-star",
                    "-c",
                    "explainer@m-plain",
                ],
            )
            .await;
            let json: Value = serde_json::from_str(&text(&out)).unwrap();
            json["id"].as_str().unwrap().to_string()
        }
    };
    // b1 ran on alpha by alice, b2 on beta by bob, b3 on beta by bob.
    let b1 = run("alpha", "alice").await;
    let b2 = run("beta", "bob").await;
    let b3 = run("beta", "bob").await;
    // alice picks m-plain in b1 and m-star in b2 (from her machine); bob
    // calls b3 a tie.
    text(&as_user(&s, "alpha", "alice", &["battle", "vote", &b1, "2"]).await);
    text(&as_user(&s, "alpha", "alice", &["battle", "vote", &b2, "1"]).await);
    text(&as_user(&s, "beta", "bob", &["battle", "vote", &b3, "--tie"]).await);

    let shown = s.json(&["battle", "show", &b2, "--json"]).await;
    assert_eq!(
        (&shown["machine"], &shown["user_name"], &shown["voted_by"]),
        (
            &Value::from("beta"),
            &Value::from("bob"),
            &Value::from("alice")
        )
    );

    let (all, _) = board(&s, &[]).await;
    assert_eq!(all, wins(&[("m-plain", 1), ("m-star", 1)]));
    let (alpha, _) = board(&s, &["--machine", "alpha"]).await;
    assert_eq!(alpha, wins(&[("m-plain", 1), ("m-star", 0)]));
    let (beta, _) = board(&s, &["--machine", "beta"]).await;
    assert_eq!(beta, wins(&[("m-plain", 0), ("m-star", 1)]));
    // `--user` is who gave the verdict, not who started the battle.
    let (alice, _) = board(&s, &["--user", "alice"]).await;
    assert_eq!(alice, wins(&[("m-plain", 1), ("m-star", 1)]));
    let (bob, _) = board(&s, &["--user", "bob"]).await;
    assert_eq!(bob, wins(&[("m-plain", 0), ("m-star", 0)]));
    let (both, _) = board(&s, &["--machine", "beta", "--user", "alice"]).await;
    assert_eq!(both, wins(&[("m-plain", 0), ("m-star", 1)]));
    let (nobody, _) = board(&s, &["--user", "carol"]).await;
    assert!(nobody.is_empty());
    let (nowhere, _) = board(&s, &["--machine", "gamma"]).await;
    assert!(nowhere.is_empty());
}
