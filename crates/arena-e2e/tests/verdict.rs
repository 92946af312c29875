//! The verdict card (issue 42, items 1 and 8): one card that always says
//! the truth — not judged and why (the judge's error as the engine has
//! it, with "Analyse again" and another judge from the model picker),
//! judged and why, undecided and what each run chose, cancelled, or the
//! user's pick — with no second banner and no layout jump on choosing;
//! the history's row says the same.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_core::Lane;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, contestant_with_model, App, BattleForm, Harness, ProviderEntry};

/// How long a whole battle (and its judging) may take in the window.
const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);

/// A loopback address nobody listens on: a port bound, then released.
fn dead_url() -> Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding a free port")?;
    let port = listener.local_addr()?.port();
    drop(listener);
    Ok(format!("http://127.0.0.1:{port}/v1"))
}

/// A judge that prefers the answer whose digest says "correct".
fn paris_judge() -> ModelScript {
    ModelScript::respond_with(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let system = messages
            .first()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let user = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        if system.contains("You summarise one answer") {
            return if user.contains("Paris") {
                "Says Paris, correct."
            } else {
                "Says Lyon, wrong."
            }
            .into();
        }
        let mut label = "A";
        let mut best = "A";
        for line in user.lines() {
            if let Some(rest) = line.strip_prefix("Answer ") {
                label = rest.get(..1).unwrap_or("A");
            }
            if line.contains("correct.") {
                best = label;
            }
        }
        format!("{{\"winner\": \"{best}\", \"reasons\": {{\"{best}\": \"names the capital\"}}}}")
    })
}

/// The verdict card's `data-kind`, once it reads `kind`.
async fn wait_kind(app: &App, kind: &str) -> Result<()> {
    app.wait_attr(
        "[data-testid=verdict-card]",
        "data-kind",
        kind,
        BATTLE_TIMEOUT,
    )
    .await
}

/// Waits until the card's second line says each of `words` (what the
/// stored analysis adds comes a moment after its event).
async fn wait_detail(app: &App, words: &[&str]) -> Result<()> {
    let said = std::sync::Mutex::new(String::new());
    app.wait_until(
        &format!("the verdict card to say {words:?}"),
        Duration::from_secs(10),
        || async {
            let detail = app.text_content("[data-testid=verdict-detail]").await?;
            let ok = words.iter().all(|w| detail.contains(w));
            if let Ok(mut seen) = said.lock() {
                *seen = detail;
            }
            Ok(ok.then_some(()))
        },
    )
    .await
    .with_context(|| {
        let seen = said.lock().map(|s| s.clone()).unwrap_or_default();
        format!("the card's second line reads {seen:?}")
    })
}

/// The top of the first answer (CSS px from the top of the page).
async fn answers_top(app: &App) -> Result<f64> {
    app.js(
        "const p = document.querySelector('[data-testid=output-pane]');
         return p.getBoundingClientRect().top + window.scrollY;",
        vec![],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_that_is_down_says_why_in_the_one_verdict_card() -> Result<()> {
    let Some(h) = Harness::start("a_judge_that_is_down_says_why_in_the_one_verdict_card").await?
    else {
        return Ok(());
    };
    let cloud = h.server();
    cloud.set_model("good", ModelScript::text("The capital of France is Paris."));
    cloud.set_model("bad", ModelScript::text("The capital of France is Lyon."));
    cloud.set_model("judge", paris_judge());
    // The judge, judge-4o, is on a provider that is down.
    h.write_config(&config_toml(
        &[
            ProviderEntry::cloud("cloud", cloud),
            ProviderEntry::at("judges", &dead_url()?, Lane::Cloud),
        ],
        Some("judge-4o"),
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "What is the capital of France?",
            &[("Debugger", "good"), ("Explainer", "bad")],
        ))
        .await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;

    // Not judged, and why: the engine's own words, in the card.
    wait_kind(&app, "not_judged").await?;
    let headline = app.text_content("[data-testid=verdict-headline]").await?;
    ensure!(
        headline.contains("Not judged"),
        "the card's headline reads {headline:?}"
    );
    let why = app.text_content("[data-testid=verdict-detail]").await?;
    ensure!(
        why.contains("judge-4o")
            && why.contains("judges is unreachable")
            && why.contains("pick one of the models"),
        "the card does not say why the judge failed: {why:?}"
    );
    let stored = h
        .engine()?
        .analysis(&id)
        .await?
        .and_then(|a| a.error)
        .unwrap_or_default();
    ensure!(
        why.trim() == stored.trim(),
        "the card says {why:?}, the engine has {stored:?}"
    );
    let page = app.page_text().await?;
    for stale in ["No winner yet", "Not analysed yet", "Choose one below"] {
        ensure!(!page.contains(stale), "the page still says {stale:?}");
    }
    ensure!(
        app.count("[data-testid=verdict-card]").await? == 1
            && app.count("[data-testid=verdict-banner]").await? == 0,
        "more than one verdict on the page"
    );
    // Analyse again, and another judge from the model picker (the models
    // the providers serve), not a free-text box.
    ensure!(
        app.is_visible("button[data-testid=analyze]").await?,
        "no Analyse again in the card"
    );
    let analyse = app.text_of("button[data-testid=analyze]").await?;
    ensure!(analyse == "Analyse again", "the button reads {analyse:?}");
    let judge = app.wait_for("select[data-testid=verdict-judge]").await?;
    ensure!(
        app.count("[data-testid=analysis-panel] input[type=text]")
            .await?
            == 0,
        "the analysis panel still asks for the judge as free text"
    );
    let card = "[data-testid=verdict-card]";
    app.scroll_to(&app.wait_for(card).await?).await?;
    app.screenshot("verdict-judge-down").await?;

    // The history's row says the same.
    app.goto("#/history").await?;
    let row = format!("[data-testid=history-row][data-battle-id=\"{id}\"]");
    let said = app
        .text_of(&format!("{row} [data-testid=history-outcome]"))
        .await?;
    ensure!(
        said.starts_with("Not judged"),
        "the history row reads {said:?}"
    );

    // Choose another judge: the card follows it to a verdict, and why.
    app.goto(&format!("#/battle/{id}")).await?;
    wait_kind(&app, "not_judged").await?;
    let judge_select = app.wait_for("select[data-testid=verdict-judge]").await?;
    drop(judge);
    app.choose(&judge_select, "judge").await?;
    app.click("button[data-testid=analyze]").await?;
    wait_kind(&app, "judged").await?;
    let battle = h.engine()?.battle(&id).await?;
    let (good, bad) = (
        contestant_with_model(&battle, "good")?,
        contestant_with_model(&battle, "bad")?,
    );
    app.wait_attr(
        "[data-testid=winner-display]",
        "data-contestant-id",
        &good,
        BATTLE_TIMEOUT,
    )
    .await?;
    // The reason comes with the stored analysis, a moment after its event.
    wait_detail(&app, &["names the capital", "judge"]).await?;
    // The picker's "no pick" names the judge's pick, not "Analysis decides".
    let none: String = app
        .js(
            "return document.querySelector('[data-testid=winner-select]').options[0].label;",
            vec![],
        )
        .await?;
    ensure!(
        none.starts_with("The judge’s pick") && none.contains("good"),
        "the picker's first option reads {none:?}"
    );

    // Choosing: the same card says so; nothing moves.
    let card_before = app.rects(card).await?;
    let top_before = answers_top(&app).await?;
    let select = app.wait_for("select[data-testid=winner-select]").await?;
    app.choose(&select, &bad).await?;
    wait_kind(&app, "pick").await?;
    let headline = app.text_content("[data-testid=verdict-headline]").await?;
    let beside = app.text_content("[data-testid=verdict-detail]").await?;
    ensure!(
        headline.contains("You chose") && headline.contains("bad"),
        "after choosing, the headline reads {headline:?}"
    );
    ensure!(
        beside.contains("The judge chose") && beside.contains("good"),
        "the judge's verdict beside the pick reads {beside:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let card_after = app.rects(card).await?;
    let top_after = answers_top(&app).await?;
    ensure!(
        app.count("[data-testid=verdict-card]").await? == 1,
        "choosing added a second verdict"
    );
    ensure!(
        (top_after - top_before).abs() < 1.0
            && card_before.first().map(|r| r.height()) == card_after.first().map(|r| r.height()),
        "choosing moved the layout: the answers from {top_before} to {top_after} px, the card \
         {card_before:?} → {card_after:?}"
    );
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_and_undecided_battles_say_so_and_the_picker_is_named_for_what_it_does(
) -> Result<()> {
    let Some(h) = Harness::start(
        "cancelled_and_undecided_battles_say_so_and_the_picker_is_named_for_what_it_does",
    )
    .await?
    else {
        return Ok(());
    };
    let cloud = h.server();
    cloud.set_model("m-a", ModelScript::text("Answer A, plainly.").rate(20.0));
    cloud.set_model("m-b", ModelScript::text("Answer B, plainly.").rate(20.0));
    // Slow enough to cancel before it ends.
    cloud.set_model("slow", ModelScript::tokens(2000).rate(10.0));
    // Always the first answer shown: the two runs (opposite orders) disagree.
    cloud.set_model(
        "judge",
        ModelScript::text(r#"{"winner": "A", "ranking": ["A", "B"], "reasons": {"A": "first"}}"#),
    );
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("cloud", cloud)],
        Some("judge"),
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();

    // Undecided: what each run chose, and the picker is on the right.
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "Which answer is better?",
            &[("Debugger", "m-a"), ("Explainer", "m-b")],
        ))
        .await?;
    // While it runs the card is already there, saying so.
    app.wait_for("[data-testid=verdict-card]").await?;
    app.wait_battle_status("done", BATTLE_TIMEOUT).await?;
    wait_kind(&app, "undecided").await?;
    let headline = app.text_content("[data-testid=verdict-headline]").await?;
    ensure!(
        headline.contains("No clear winner"),
        "the undecided headline reads {headline:?}"
    );
    wait_detail(&app, &["run 1 chose", "run 2 chose"]).await?;
    let none: String = app
        .js(
            "return document.querySelector('[data-testid=winner-select]').options[0].label;",
            vec![],
        )
        .await?;
    ensure!(
        none == "No pick",
        "the picker's first option reads {none:?}"
    );
    let page = app.page_text().await?;
    for stale in ["Choose one below", "Analysis decides", "No winner yet"] {
        ensure!(!page.contains(stale), "the page says {stale:?}");
    }
    // The picker sits beside the words, to their right.
    let words = app.rects("[data-testid=verdict-card] .words").await?;
    let picker = app.rects("[data-testid=winner-select]").await?;
    ensure!(
        matches!((words.first(), picker.first()), (Some(w), Some(p)) if p.left >= w.right - 1.0),
        "the picker is not to the right of the card's words: {words:?} {picker:?}"
    );
    let battle = h.engine()?.battle(&id).await?;
    ensure!(battle.winner.is_none(), "the judge named a winner");

    // Cancelled: says cancelled, not "No winner yet".
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "A long one, to be cancelled.",
            &[("Debugger", "slow"), ("Explainer", "slow")],
        ))
        .await?;
    app.wait_for_text_within("Answers are coming in", Duration::from_secs(20))
        .await?;
    app.click("button[data-testid=cancel-battle]").await?;
    app.wait_battle_status("cancelled", BATTLE_TIMEOUT).await?;
    wait_kind(&app, "cancelled").await?;
    let headline = app.text_content("[data-testid=verdict-headline]").await?;
    ensure!(
        headline.starts_with("Cancelled"),
        "the cancelled battle's card reads {headline:?}"
    );
    let page = app.page_text().await?;
    ensure!(
        !page.contains("No winner yet"),
        "a cancelled battle says \"No winner yet\""
    );
    app.screenshot("verdict-cancelled").await?;
    app.goto("#/history").await?;
    let row = format!("[data-testid=history-row][data-battle-id=\"{id}\"]");
    let said = app
        .text_of(&format!("{row} [data-testid=history-outcome]"))
        .await?;
    ensure!(
        said.starts_with("Cancelled"),
        "the history row reads {said:?}"
    );
    app.close().await
}
