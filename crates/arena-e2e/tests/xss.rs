//! Contestant output is untrusted: markup in it must neither run script nor
//! load anything, while it streams (plain text) nor once it is rendered
//! (sanitised Markdown).
//!
//! Needs a display and the drivers; see the crate docs.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, App, BattleForm, Beacon, Harness, ProviderEntry};
use serde::Deserialize;

const BATTLE_TIMEOUT: Duration = Duration::from_secs(90);
/// How long rendered output gets to (wrongly) load its remote resources.
const LOAD_GRACE: Duration = Duration::from_millis(1500);

/// The globals the payload tries to set.
const FLAGS: [&str; 9] = [
    "__arenaPwned",
    "__arenaPwned2",
    "__arenaPwned3",
    "__arenaPwned4",
    "__arenaPwned5",
    "__arenaPwned6",
    "__arenaPwned7",
    "__arenaPwned8",
    "__arenaPwned9",
];

/// The plain text after the last piece of markup in the payload (the
/// answer renders as Markdown while it streams, so markup itself is not
/// text on screen); after it comes plain padding, so the whole payload is
/// on screen while the stream goes on.
const PAYLOAD_END: &str = "Still streaming";

fn payload(beacon: &str) -> String {
    let padding: Vec<String> = (1..=45).map(|i| format!("pad{i}")).collect();
    format!(
        r#"Here is my answer, with some markup.

<img src=x onerror="window.__arenaPwned=1">

<script>window.__arenaPwned2=1</script>

<img src="{beacon}/img.png" alt="beacon">

![markdown beacon]({beacon}/markdown.png)

[a link](javascript:window.__arenaPwned3=1)

<a href="javascript:window.__arenaPwned4=1">click me</a>

<iframe src="{beacon}/frame.html"></iframe>

<div style="background-image:url({beacon}/background.png)">styled block</div>

<svg onload="window.__arenaPwned5=1"><a xlink:href="javascript:window.__arenaPwned6=1"><text x="10" y="20">svg link</text></a></svg>

<details open ontoggle="window.__arenaPwned7=1"><summary>details</summary>inside</details>

<form action="javascript:window.__arenaPwned8=1"><button formaction="javascript:window.__arenaPwned9=1">go</button></form>

Still streaming: {}.
"#,
        padding.join(" ")
    )
}

/// What the page holds that it should not.
#[derive(Debug, Deserialize)]
struct Findings {
    /// Globals the payload managed to set.
    flags: Vec<String>,
    /// Dangerous elements and attributes inside output bodies.
    markup: Vec<String>,
}

impl Findings {
    fn clean(&self) -> bool {
        self.flags.is_empty() && self.markup.is_empty()
    }
}

const INSPECT: &str = r#"
const flags = arguments[0].filter(name => typeof window[name] !== 'undefined');
const markup = [];
const forbidden = ['script', 'iframe', 'frame', 'frameset', 'object', 'embed', 'base', 'meta', 'link'];
for (const body of document.querySelectorAll('[data-testid=output-body]')) {
  for (const el of [body, ...body.querySelectorAll('*')]) {
    const tag = el.tagName.toLowerCase();
    if (forbidden.includes(tag)) markup.push(`<${tag}>`);
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value.replace(/[\s\u0000-\u001f]/g, '').toLowerCase();
      if (name.startsWith('on')) markup.push(`${tag} ${name}="${attr.value}"`);
      if (value.startsWith('javascript:')) markup.push(`${tag} ${name}="${attr.value}"`);
    }
  }
}
return { flags, markup };
"#;

async fn inspect(app: &App) -> Result<Findings> {
    app.js(INSPECT, vec![serde_json::json!(FLAGS)]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contestant_markup_runs_no_script_and_loads_nothing() -> Result<()> {
    let Some(h) = Harness::start("contestant_markup_runs_no_script_and_loads_nothing").await?
    else {
        return Ok(());
    };
    let beacon = Beacon::start().await?;
    beacon.self_test().await?;
    let server = h.server();
    // ~90 tokens at 15/s: about 4 s of markup, then 3 s of padding.
    server.set_model("evil", ModelScript::text(&payload(&beacon.url)).rate(15.0));
    server.set_model("plain", ModelScript::text("Nothing to see here."));
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", server)],
        None,
    ))?;
    let app = h.launch().await?;
    let project = h.project_dir();
    let id = app
        .start_battle(&BattleForm::qa(
            &project,
            "Show me some HTML.",
            &[("Debugger", "evil"), ("Explainer", "plain")],
        ))
        .await?;
    let battle = h.engine()?.battle(&id).await?;
    let evil = battle
        .contestants
        .iter()
        .find(|c| c.model == "evil")
        .map(|c| c.id.clone())
        .context("no evil contestant")?;

    // While it streams: checked at every look, and at least once with the
    // whole payload on screen.
    let deadline = Instant::now() + BATTLE_TIMEOUT;
    let mut seen_streaming = false;
    loop {
        let snap = app.battle_snapshot().await?;
        let findings = inspect(&app).await?;
        ensure!(
            findings.clean(),
            "while streaming, the page holds {findings:?}; beacon hits {:?}",
            beacon.hits()
        );
        let running = snap
            .row(&evil)
            .is_some_and(|r| r.status.as_deref() == Some("running"));
        if running && snap.output(&evil).contains(PAYLOAD_END) {
            if !seen_streaming {
                app.screenshot("xss-streaming").await?;
            }
            seen_streaming = true;
        }
        if snap.all("done") {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "the battle was not done within {BATTLE_TIMEOUT:?}: {}",
                snap.describe()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(
        seen_streaming,
        "the payload was never seen on screen while the contestant was still streaming"
    );

    // Rendered as Markdown once finished.
    let pane = format!("[data-testid=output-pane][data-contestant-id=\"{evil}\"]");
    app.wait_for(&format!("{pane} .markdown[data-testid=output-body]"))
        .await?;
    let rendered = app
        .text_content(&format!("{pane} [data-testid=output-body]"))
        .await?;
    ensure!(
        rendered.contains("styled block") && rendered.contains("Still streaming"),
        "the rendered output lost its text: {rendered:?}"
    );
    tokio::time::sleep(LOAD_GRACE).await;
    let findings = inspect(&app).await?;
    ensure!(
        findings.clean(),
        "once rendered, the page holds {findings:?}"
    );

    // A user clicks the links that were in the text.
    let anchors = app.find_all(&format!("{pane} a")).await?;
    for anchor in anchors {
        let href = anchor.attr("href").await?.unwrap_or_default();
        // Only links that cannot take the window elsewhere.
        let inert = href.is_empty() || href.trim().to_ascii_lowercase().starts_with("javascript:");
        if inert && anchor.is_displayed().await? {
            app.click_element(&anchor)
                .await
                .with_context(|| format!("clicking the link {href:?}"))?;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let findings = inspect(&app).await?;
    ensure!(
        findings.clean(),
        "after clicking the links, the page holds {findings:?}"
    );
    ensure!(
        beacon.hits().is_empty(),
        "the window loaded remote resources from contestant output: {:?}",
        beacon.hits()
    );
    app.screenshot("xss-rendered").await?;
    app.close().await
}
