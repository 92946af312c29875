//! The settings screen (providers with their reachability, backends,
//! personas, about, where the data is kept and which machine this is) and
//! the leaderboard (table and chart) after decided
//! battles.
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use arena_core::Lane;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, Harness, ProviderEntry, MODEL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_show_providers_backends_personas_and_about() -> Result<()> {
    let Some(h) = Harness::start("settings_show_providers_backends_personas_and_about").await?
    else {
        return Ok(());
    };
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding a port")?;
        listener.local_addr()?.port()
    };
    h.write_config(&config_toml(
        &[
            ProviderEntry::local("scripted", h.server()),
            ProviderEntry::at(
                "offline",
                &format!("http://127.0.0.1:{closed}/v1"),
                Lane::Cloud,
            ),
        ],
        Some(MODEL),
    ))?;
    let app = h.launch().await?;
    app.goto("#/settings").await?;
    app.wait_for("[data-testid=settings]").await?;

    let reach = Duration::from_secs(30);
    app.wait_attr(
        "[data-testid=provider-row][data-name=scripted]",
        "data-reachable",
        "true",
        reach,
    )
    .await?;
    app.wait_attr(
        "[data-testid=provider-row][data-name=offline]",
        "data-reachable",
        "false",
        reach,
    )
    .await?;
    app.wait_for("[data-testid=backend-row][data-name=native]")
        .await?;
    let personas = app.count("[data-testid=persona-row]").await?;
    ensure!(
        personas >= 4,
        "settings list {personas} personas; AGENTS.md is seeded with at least 4"
    );

    let version = app.definition("Version").await?;
    // "0.1.0 (commit 1a2b3c4d5e6f, built 2026-11-27)"
    ensure!(
        version.starts_with(&format!("{} (commit ", env!("CARGO_PKG_VERSION")))
            && version.contains(", built 20"),
        "Version shows {version:?}, Cargo says {} (with the commit and the build day)",
        env!("CARGO_PKG_VERSION")
    );
    let data_dir = app.definition("Data directory").await?;
    ensure!(
        data_dir == h.data_dir().display().to_string(),
        "Data directory shows {data_dir:?}, the test set {}",
        h.data_dir().display()
    );
    // The sandbox's state, as `arena backends` prints it.
    let sandbox = app.definition("Agent sandbox").await?;
    let expected = match arena_core::agent::jail::jail_info() {
        Ok(info) => format!("jail: {info}"),
        Err(_) => "unavailable".to_string(),
    };
    ensure!(
        sandbox.starts_with(&expected),
        "Agent sandbox shows {sandbox:?}, expected {expected:?}"
    );
    app.screenshot("settings").await?;
    app.close().await
}

/// Settings says where Arena keeps its data (this machine's own SQLite file
/// in the data directory) and which machine this is (`ARENA_MACHINE`), and
/// its worker switch makes this app a worker, listed there, until off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_show_the_database_and_the_machine() -> Result<()> {
    let Some(h) = Harness::start("settings_show_the_database_and_the_machine").await? else {
        return Ok(());
    };
    let app = h.launch_with_env(&[("ARENA_MACHINE", "e2e-box")]).await?;
    app.goto("#/settings").await?;
    let section = "[data-testid=database-section]";
    // The database answers, or the section says why not.
    app.wait_until(
        "the Database section to load",
        Duration::from_secs(30),
        || async {
            let done = app
                .count(&format!("{section} [data-testid=database-line]"))
                .await?
                + app.count(&format!("{section} [role=alert]")).await?;
            Ok((done > 0).then_some(()))
        },
    )
    .await?;
    ensure!(
        app.count(&format!("{section} [role=alert]")).await? == 0,
        "the Database section shows an error: {:?}",
        app.text_of(section).await?
    );

    let line = app.text_of("[data-testid=database-line]").await?;
    let file = h.data_dir().join("arena.db");
    let lead = "This machine's own database (SQLite 3.";
    ensure!(
        line.starts_with(lead) && line.ends_with(&format!(") at {}", file.display())),
        "the Database section reads {line:?}; expected {lead}…) at {}",
        file.display()
    );
    app.wait_attr(
        "[data-testid=database-line]",
        "data-backend",
        "sqlite",
        Duration::from_secs(5),
    )
    .await?;
    let machine = app.text_of("[data-testid=machine-line]").await?;
    ensure!(
        machine == "This machine: e2e-box",
        "the Database section reads {machine:?}; ARENA_MACHINE is e2e-box"
    );

    // The worker switch: off at start; on, the section lists this app as a
    // worker on e2e-box (the status is asked again every 5 s); off, the
    // worker is gone.
    let switch = "[data-testid=worker-enabled]";
    let ours = "[data-testid=status-worker][data-machine=e2e-box][data-role=worker]";
    app.wait_until(
        "the worker switch to be offered",
        Duration::from_secs(10),
        || async {
            let offered: bool = app
                .js(
                    "const c = document.querySelector(arguments[0]); \
                     return c !== null && !c.disabled;",
                    vec![switch.into()],
                )
                .await?;
            Ok(offered.then_some(()))
        },
    )
    .await?;
    app.wait_attr(
        "[data-testid=worker-switch]",
        "data-enabled",
        "false",
        Duration::from_secs(5),
    )
    .await?;
    ensure!(
        app.count(ours).await? == 0,
        "a worker is listed before the switch was turned on: {:?}",
        app.text_of(section).await?
    );
    let places: String = app
        .js(
            "return document.querySelector('[data-testid=worker-places]').value;",
            vec![],
        )
        .await?;
    ensure!(
        places == "2",
        "the switch offers {places:?} places; 2 by default"
    );
    app.click(switch).await?;
    app.wait_attr(
        "[data-testid=worker-switch]",
        "data-enabled",
        "true",
        Duration::from_secs(5),
    )
    .await?;
    let row = app
        .wait_until(
            "the Database section to list this app's worker",
            Duration::from_secs(15),
            || async {
                Ok(match app.count(ours).await? {
                    0 => None,
                    _ => Some(app.text_of(ours).await?),
                })
            },
        )
        .await?;
    ensure!(
        row.contains("e2e-box (worker, pid ") && row.contains(": 0 of 2 places, seen "),
        "the worker reads {row:?}"
    );
    app.screenshot("settings-database").await?;
    app.click(switch).await?;
    app.wait_attr(
        "[data-testid=worker-switch]",
        "data-enabled",
        "false",
        Duration::from_secs(5),
    )
    .await?;
    app.wait_until(
        "the worker to leave the Database section",
        Duration::from_secs(15),
        || async { Ok((app.count(ours).await? == 0).then_some(())) },
    )
    .await?;
    ensure!(
        app.count("[data-testid=worker-error], [data-testid=worker-problem]")
            .await?
            == 0,
        "the worker switch shows an error: {:?}",
        app.text_of("[data-testid=worker-switch]").await?
    );
    app.close().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaderboard_ranks_decided_battles() -> Result<()> {
    let Some(h) = Harness::start("leaderboard_ranks_decided_battles").await? else {
        return Ok(());
    };
    h.server()
        .set_model("strong", ModelScript::text("A strong answer.").rate(40.0));
    h.server()
        .set_model("weak", ModelScript::text("A weak answer.").rate(40.0));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", h.server())],
        None,
    ))?;

    // Three decided battles through the engine, the app closed: strong wins
    // two, weak one.
    let engine = h.engine()?;
    for (n, winner) in ["strong", "weak", "strong"].into_iter().enumerate() {
        let battle = h
            .run_qa_battle(
                &format!("Leaderboard question {n}"),
                &["debugger@strong", "explainer@weak"],
            )
            .await?;
        let id = battle
            .contestants
            .iter()
            .find(|c| c.model == winner)
            .map(|c| c.id.clone())
            .with_context(|| format!("no contestant with model {winner}"))?;
        engine.set_winner(&battle.id, Some(&id)).await?;
    }
    drop(engine);

    let app = h.launch().await?;
    app.goto("#/leaderboard").await?;
    app.wait_for("[data-testid=leaderboard-table]").await?;
    let rows = "[data-testid=leaderboard-row]";
    app.wait_until(
        "the leaderboard to rank 2 contestants",
        Duration::from_secs(30),
        || async { Ok((app.count(rows).await? == 2).then_some(())) },
    )
    .await?;
    let first = app
        .find_all(rows)
        .await?
        .first()
        .context("no leaderboard row")?
        .text()
        .await?;
    ensure!(
        first.contains("strong"),
        "the top row is {first:?}; strong won 2 of 3"
    );
    let points = app.count("[data-testid=leaderboard-chart] circle").await?;
    let lines = app.count("[data-testid=leaderboard-chart] line").await?;
    ensure!(
        points == 2 && lines >= 2 * 3,
        "the chart has {points} points and {lines} lines; expected a point and a whisker \
         with two caps per contestant"
    );
    app.screenshot("leaderboard").await?;

    // The type filter: no Coding battles, then Q&A again.
    let filter = app
        .wait_for("select[data-testid=leaderboard-filter-type]")
        .await?;
    app.choose(&filter, "coding").await?;
    app.wait_until(
        "the Coding leaderboard to be empty",
        Duration::from_secs(10),
        || async { Ok((app.count(rows).await? == 0).then_some(())) },
    )
    .await?;
    app.choose(&filter, "qa").await?;
    app.wait_until(
        "the Q&A leaderboard to rank 2 contestants",
        Duration::from_secs(10),
        || async { Ok((app.count(rows).await? == 2).then_some(())) },
    )
    .await?;

    // The Project filter while typing: a folder that is not there (yet),
    // or a relative path, is said at the field and the board stays.
    let project = app.wait_for("input[data-testid=lb-project]").await?;
    let note = "[data-testid=lb-project-note]";
    for (typed, says) in [
        ("/no/such/folder/for/arena", "no folder"),
        ("projects/arena", "full path"),
    ] {
        app.fill(&project, typed).await?;
        app.wait_until(
            &format!("a note at the Project field for {typed:?}"),
            Duration::from_secs(10),
            || async {
                let text = app.text_now(note).await?;
                Ok(text.filter(|t| t.contains(says)).map(|_| ()))
            },
        )
        .await?;
        ensure!(
            app.count(rows).await? == 2,
            "typing {typed:?} into Project replaced the board"
        );
        ensure!(
            app.count("[data-testid=leaderboard] .error, [data-testid=leaderboard] [role=alert]")
                .await?
                == 0,
            "typing {typed:?} into Project showed an error in place of the board"
        );
    }
    // (A blank: typing nothing sends WebDriver no keys.)
    app.fill(&project, " ").await?;
    app.wait_until(
        "the Project note to go once the field is blank",
        Duration::from_secs(10),
        || async { Ok((app.count(note).await? == 0).then_some(())) },
    )
    .await?;
    ensure!(app.count(rows).await? == 2, "the board went with the note");
    app.close().await
}

/// After five battles one model always won, its interval on the
/// leaderboard is honest: wide (a small sample), never a point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_one_sided_battles_give_wide_intervals_not_points() -> Result<()> {
    let Some(h) = Harness::start("five_one_sided_battles_give_wide_intervals_not_points").await?
    else {
        return Ok(());
    };
    h.server()
        .set_model("strong", ModelScript::text("A strong answer."));
    h.server()
        .set_model("weak", ModelScript::text("A weak answer."));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", h.server())],
        None,
    ))?;
    let engine = h.engine()?;
    for n in 0..5 {
        let battle = h
            .run_qa_battle(
                &format!("One-sided question {n}"),
                &["debugger@strong", "explainer@weak"],
            )
            .await?;
        let strong = arena_e2e::contestant_with_model(&battle, "strong")?;
        engine.set_winner(&battle.id, Some(&strong)).await?;
    }
    drop(engine);

    let app = h.launch().await?;
    app.goto("#/leaderboard").await?;
    let row = "[data-testid=leaderboard-row][data-model=strong]";
    app.wait_for(row).await?;
    let interval = app
        .text_of(&format!("{row} [data-testid=lb-interval]"))
        .await?;
    let (low, high) = interval
        .split_once('–')
        .and_then(|(l, h)| Some((l.trim().parse::<i64>().ok()?, h.trim().parse::<i64>().ok()?)))
        .with_context(|| format!("the interval reads {interval:?}"))?;
    // Five battles say little: the interval spans well over a hundred points.
    ensure!(
        high - low > 100,
        "after 5 one-sided battles the interval is {interval:?}"
    );
    app.screenshot("leaderboard-one-sided").await?;
    app.close().await
}
