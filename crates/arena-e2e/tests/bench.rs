//! Benchmark (ignored by default): how long a token takes from the scripted
//! server to the battle view's DOM with six contestants streaming at once,
//! and how much memory the app (all its processes) uses meanwhile.
//!
//! ```sh
//! (cd ui && npm run build) && cargo build --release -p arena-app
//! xvfb-run -a -s "-screen 0 1280x1024x24" \
//!     cargo test -p arena-e2e --release --test bench -- --ignored bench_dom_latency --nocapture
//! ```
//!
//! Every token carries a unique marker (`m<contestant>x<index>`). The test
//! server records the wall-clock time each frame of tokens was handed to
//! the HTTP layer; a `MutationObserver` in the page records when each marker
//! first appears in an `[data-testid=output-body]` (epoch milliseconds,
//! `performance.timeOrigin + performance.now()`). Same machine, same clock.
//!
//! `ARENA_BENCH_JSC_PROFILE=<dir>` also takes a profile of the page's
//! JavaScript for the length of the battle: JavaScriptCore's sampling
//! profiler, which its `JSC_exposeProfilersOnGlobalObject` option lets the
//! page switch on and off, writes its samples as JSON to `<dir>/arena-page-*`
//! (the web process's `TMPDIR`); `scripts/jsc-profile.py <file>` sums them
//! by function.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context, Result};
use arena_core::EventKind;
use arena_e2e::arena_testserver::ModelScript;
use arena_e2e::{config_toml, process_tree_memory, BattleForm, Harness, Memory, ProviderEntry};

const CONTESTANTS: usize = 6;
const TOKENS_PER_SEC: f64 = 200.0;
/// 10 s of streaming per contestant.
const TOKENS: usize = 2000;
const BATTLE_TIMEOUT: Duration = Duration::from_secs(180);
const MEMORY_EVERY: Duration = Duration::from_millis(250);

/// Records the first time each marker shows in an output body.
const OBSERVE: &str = r#"
const marks = {};
window.__arenaMarks = marks;
window.__arenaScan = { calls: 0, ms: 0 };
const scanned = new WeakMap();
const re = /m\dx\d{5}/g;
const scan = () => {
  const now = performance.timeOrigin + performance.now();
  for (const body of document.querySelectorAll('[data-testid=output-body]')) {
    const text = body.textContent;
    let from = scanned.get(body) ?? 0;
    if (text.length < from) from = 0;
    re.lastIndex = Math.max(0, from - 8);
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      if (!(m[0] in marks)) marks[m[0]] = now;
    }
    scanned.set(body, text.length);
  }
  window.__arenaScan.calls += 1;
  window.__arenaScan.ms += performance.timeOrigin + performance.now() - now;
};
new MutationObserver(scan).observe(document.body, { subtree: true, childList: true, characterData: true });
return true;
"#;

fn marker(contestant: usize, index: usize) -> String {
    format!("m{contestant}x{index:05}")
}

fn epoch_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// The value at quantile `q` of sorted `values` (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// A battle's events from its first, as they come, until it ends.
async fn follow_until_done(
    engine: &arena_core::Engine,
    battle_id: &str,
) -> Result<Vec<arena_core::BattleEvent>> {
    use futures::StreamExt;
    let mut stream = std::pin::pin!(engine.subscribe(battle_id, 0));
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(BATTLE_TIMEOUT, stream.next())
        .await
        .context("the battle's events stopped")?
    {
        let event = event.context("following the battle's events")?;
        let done =
            matches!(&event.kind, EventKind::BattleStatus { status } if status.is_terminal());
        events.push(event);
        if done {
            break;
        }
    }
    Ok(events)
}

/// When the engine flushed each marker as an output event (its `at`, epoch
/// ms), from the battle's `events` as they streamed.
async fn engine_flush_times(
    h: &Harness,
    battle_id: &str,
    events: Vec<arena_core::BattleEvent>,
) -> Result<HashMap<String, f64>> {
    let battle = h.engine()?.battle(battle_id).await?;
    let mut times = HashMap::new();
    for event in events {
        let EventKind::Output { text } = &event.kind else {
            continue;
        };
        // Contestant `bench-<n>` streams the markers `m<n>x…`.
        let Some(n) = event
            .contestant_id
            .as_deref()
            .and_then(|cid| battle.contestants.iter().find(|c| c.id == cid))
            .and_then(|c| c.model.strip_prefix("bench-"))
        else {
            continue;
        };
        let at = event.at.timestamp_micros() as f64 / 1000.0;
        let prefix = format!("m{n}x");
        for word in text.split_whitespace() {
            if word.starts_with(&prefix) {
                times.entry(word.to_string()).or_insert(at);
            }
        }
    }
    Ok(times)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored bench_dom_latency --nocapture (see the file's docs)"]
async fn bench_dom_latency() -> Result<()> {
    let Some(h) = Harness::start("bench_dom_latency").await? else {
        return Ok(());
    };
    let models: Vec<String> = (0..CONTESTANTS).map(|c| format!("bench-{c}")).collect();
    for (c, model) in models.iter().enumerate() {
        let tokens: Vec<String> = (0..TOKENS).map(|i| format!("{} ", marker(c, i))).collect();
        h.server().set_model(
            model,
            ModelScript::text(&tokens.concat()).rate(TOKENS_PER_SEC),
        );
    }
    h.write_config(&config_toml(
        &[ProviderEntry::cloud("scripted", h.server())],
        None,
    ))?;

    let profile_dir = std::env::var("ARENA_BENCH_JSC_PROFILE").ok();
    let app = match &profile_dir {
        Some(dir) => {
            h.launch_with_env(&[
                ("JSC_exposeProfilersOnGlobalObject", "true"),
                ("JSC_useSamplingProfiler", "false"),
                ("JSC_sampleInterval", "1000"),
                ("TMPDIR", dir.as_str()),
            ])
            .await?
        }
        None => h.launch().await?,
    };
    let project = h.project_dir();
    let contestants: Vec<(&str, &str)> = models.iter().map(|m| ("Debugger", m.as_str())).collect();
    app.open_launcher().await?;
    app.fill_launcher(&BattleForm::qa(&project, "Count for me.", &contestants))
        .await?;
    let app_pid = app.app_pid()?;
    let idle = process_tree_memory(app_pid);

    // The page is one document (hash routes): the observer outlives the
    // navigation to the battle view.
    let installed: bool = app.js(OBSERVE, Vec::new()).await?;
    ensure!(installed, "the observer script did not run");
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        tokio::spawn(async move {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                samples.push(process_tree_memory(app_pid));
                tokio::time::sleep(MEMORY_EVERY).await;
            }
            samples
        })
    };
    if profile_dir.is_some() {
        let on: bool = app
            .js(
                "if (typeof __enableSamplingProfiler !== 'function') return false;
                 __enableSamplingProfiler(); return true;",
                Vec::new(),
            )
            .await?;
        ensure!(
            on,
            "the page has no sampling profiler (JSC_exposeProfilersOnGlobalObject)"
        );
    }
    app.press_start().await?;
    // The engine's output events, followed as another process sees them
    // (the journal keeps only the folded answers once they end).
    let battle_id = loop {
        let hash = app.hash().await?;
        if let Some(id) = hash.strip_prefix("#/battle/") {
            break id.to_string();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let followed = {
        let (engine, id) = (h.engine()?, battle_id.clone());
        tokio::spawn(async move { follow_until_done(&engine, &id).await })
    };
    let done = app.wait_battle_status("done", BATTLE_TIMEOUT).await;
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.await.context("the memory sampler failed")?;
    done?;
    if let Some(dir) = &profile_dir {
        // The samples go to a new file in `dir`; the page gets no path back.
        let _: serde_json::Value = app
            .js(
                "__disableSamplingProfiler();
                 __dumpAndClearSamplingProfilerSamples('arena-page-');
                 return null;",
                Vec::new(),
            )
            .await
            .context("dumping the JavaScript profile")?;
        println!("JavaScript profile written to {dir}");
    }
    app.screenshot("bench-six-streams").await?;

    let marks: HashMap<String, f64> = app
        .js("return window.__arenaMarks;", Vec::new())
        .await
        .context("reading the observed markers")?;
    let (scan_calls, scan_ms): (u64, f64) = app
        .js(
            "return [window.__arenaScan.calls, window.__arenaScan.ms];",
            Vec::new(),
        )
        .await?;
    let events = followed.await.context("following the battle failed")??;
    let engine_at = engine_flush_times(&h, &battle_id, events).await?;
    let mut all = Vec::new();
    let mut to_engine = Vec::new();
    let mut from_engine = Vec::new();
    let mut per_contestant = Vec::new();
    let mut missing = 0usize;
    for (c, model) in models.iter().enumerate() {
        let request = h
            .server()
            .requests_for(model)
            .into_iter()
            .next()
            .with_context(|| format!("the server got no request for {model}"))?;
        let mut delays = Vec::with_capacity(TOKENS);
        for i in 0..TOKENS {
            let sent = request
                .token_sent_at(i)
                .with_context(|| format!("{model}: token {i} was never sent"))?;
            let sent = epoch_ms(sent);
            let seen = marks.get(&marker(c, i));
            match seen {
                Some(seen) => delays.push(seen - sent),
                None => missing += 1,
            }
            if let (Some(seen), Some(flushed)) = (seen, engine_at.get(&marker(c, i))) {
                to_engine.push(flushed - sent);
                from_engine.push(seen - flushed);
            }
        }
        delays.sort_by(f64::total_cmp);
        per_contestant.push(quantile(&delays, 0.95));
        all.extend(delays);
    }
    for list in [&mut all, &mut to_engine, &mut from_engine] {
        list.sort_by(f64::total_cmp);
    }

    let peak = |f: fn(&Memory) -> Option<u64>| samples.iter().filter_map(f).max().unwrap_or(0);
    let mean = |f: fn(&Memory) -> Option<u64>| {
        let values: Vec<u64> = samples.iter().filter_map(f).collect();
        values.iter().sum::<u64>() as f64 / values.len().max(1) as f64
    };
    let rss = |m: &Memory| Some(m.rss_kib);
    let pss = |m: &Memory| m.pss_kib;
    let processes = samples.iter().map(|m| m.processes).max().unwrap_or(0);
    let build = if h
        .tools()
        .app
        .components()
        .any(|c| c.as_os_str() == "release")
    {
        "release"
    } else {
        "debug"
    };

    println!();
    println!(
        "bench_dom_latency: {CONTESTANTS} cloud contestants x {TOKENS} tokens at {TOKENS_PER_SEC} tok/s each, {build} app"
    );
    println!(
        "token -> DOM delay over {} tokens: p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms, min {:.1} ms ({missing} never seen)",
        all.len(),
        quantile(&all, 0.50),
        quantile(&all, 0.95),
        quantile(&all, 0.99),
        all.last().copied().unwrap_or(f64::NAN),
        all.first().copied().unwrap_or(f64::NAN),
    );
    println!(
        "  of which server -> engine output event: p50 {:.1} ms, p95 {:.1} ms; \
         engine output event -> DOM: p50 {:.1} ms, p95 {:.1} ms ({} tokens matched)",
        quantile(&to_engine, 0.50),
        quantile(&to_engine, 0.95),
        quantile(&from_engine, 0.50),
        quantile(&from_engine, 0.95),
        from_engine.len(),
    );
    println!(
        "  (the observer itself: {scan_calls} callbacks, {scan_ms:.0} ms of the page's time in all)"
    );
    let per: Vec<String> = per_contestant.iter().map(|p| format!("{p:.1}")).collect();
    println!("p95 per contestant (ms): {}", per.join(", "));
    println!(
        "app memory ({processes} processes, {} samples every {MEMORY_EVERY:?}): RSS peak {:.0} MiB, mean {:.0} MiB; PSS peak {:.0} MiB, mean {:.0} MiB",
        samples.len(),
        mib(peak(rss)),
        mean(rss) / 1024.0,
        mib(peak(pss)),
        mean(pss) / 1024.0,
    );
    println!(
        "app memory before the battle ({} processes): RSS {:.0} MiB, PSS {}",
        idle.processes,
        mib(idle.rss_kib),
        idle.pss_kib
            .map_or("unreadable".to_string(), |p| format!("{:.0} MiB", mib(p)))
    );

    ensure!(
        missing == 0,
        "{missing} of {} tokens never showed in the DOM",
        CONTESTANTS * TOKENS
    );
    app.close().await
}
