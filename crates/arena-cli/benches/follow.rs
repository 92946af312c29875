//! How far a viewer in another process trails the driver: one engine runs
//! battles of six contestants streaming 200 tokens each at 200 tokens/s
//! (cloud lane, the scripted server); a second engine on the same data
//! folder — its own database connection, so it sees the first one's
//! events only through the journal, as a CLI `battle show` or the app
//! watching a battle the CLI drives does — follows each battle. For every
//! event it receives, the lag is the time it arrived less the time the
//! driver stamped it with. Prints the median, p95 and worst lag; the
//! relay of events within one process is `benches/relay.rs`.
//!
//! ```sh
//! cargo bench -p arena-cli --bench follow      # ARENA_BENCH_RUNS=N (default 5)
//! ```

mod common;

use std::time::Duration;

use arena_core::battle::ContestantSpec;
use arena_core::EventKind;
use arena_testserver::ModelScript;
use chrono::Utc;
use common::Bench;
use futures::StreamExt;

const CONTESTANTS: usize = 6;
const TOKENS: usize = 200;

#[tokio::main]
async fn main() {
    let runs: usize = common::setting("ARENA_BENCH_RUNS", 5);
    let bench = Bench::new().await;
    let models: Vec<String> = (1..=CONTESTANTS).map(|i| format!("m{i}")).collect();
    for m in &models {
        bench
            .cloud
            .set_model(m, ModelScript::tokens(TOKENS).rate(200.0));
    }
    let (driver, viewer) = (bench.engine(), bench.engine());
    let mut lags: Vec<f64> = Vec::new();
    for _ in 0..runs {
        let request = bench.qa(
            "Say hi.",
            models
                .iter()
                .map(|m| ContestantSpec::parse(&format!("explainer@{m}")).expect("a spec"))
                .collect(),
        );
        let battle = driver.create_battle(request).await.expect("created");
        let following = {
            let (viewer, id) = (viewer.clone(), battle.id.clone());
            tokio::spawn(async move {
                let mut lags = Vec::new();
                let events = viewer.subscribe(&id, 0);
                futures::pin_mut!(events);
                while let Ok(Some(Ok(event))) =
                    tokio::time::timeout(Duration::from_secs(30), events.next()).await
                {
                    let lag = (Utc::now() - event.at).num_microseconds().unwrap_or(0);
                    lags.push(lag as f64 / 1000.0);
                    if matches!(&event.kind, EventKind::BattleStatus { status } if status.is_terminal())
                    {
                        break;
                    }
                }
                lags
            })
        };
        driver.run_battle(&battle.id).await.expect("ran");
        lags.extend(following.await.expect("the viewer"));
    }
    lags.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| lags[((lags.len() - 1) as f64 * q).round() as usize];
    println!(
        "{runs} battles × {CONTESTANTS} contestants × {TOKENS} tokens at 200 tok/s, followed from a second engine"
    );
    println!(
        "  {} events; lag behind the driver: median {:.0} ms, p95 {:.0} ms, worst {:.0} ms",
        lags.len(),
        at(0.5),
        at(0.95),
        at(1.0)
    );
}
