//! The jail's network door ([`arena_core::agent::relay`]) against a direct
//! connection: a 2,000-token answer streamed by the scripted server at a
//! steady rate, read by a client once directly and once through the relay
//! (which adds the key and forwards both ways), interleaved. Reported:
//! median time to first token and tokens per second (first to last token),
//! and their ratios. Target: tok/s through the door within 2 % of direct.
//!
//! Run: cargo bench -p arena-cli --bench door
//! (Without `--bench`, as under `cargo test --benches`: 2 runs of 200
//! tokens, a smoke test.)

use std::time::{Duration, Instant};

use arena_core::agent::relay;
use arena_core::config::ProviderKind;
use arena_core::keychain::Secret;
use arena_testserver::{ModelScript, TestServer};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

type Result<T, E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

/// One streamed answer: (time to first token, tokens per second).
async fn stream(client: &reqwest::Client, base: &str, tokens: usize) -> Result<(Duration, f64)> {
    let started = Instant::now();
    let response = client
        .post(format!("{base}/chat/completions"))
        .bearer_auth("placeholder")
        .json(&serde_json::json!({
            "model": "m",
            "stream": true,
            "messages": [{"role": "user", "content": "go"}],
        }))
        .send()
        .await?
        .error_for_status()?;
    let mut body = response.bytes_stream();
    let (mut first, mut last, mut seen) = (None, started, 0usize);
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        let text = String::from_utf8_lossy(&chunk);
        let n = text.matches("\"content\"").count();
        if n > 0 {
            first.get_or_insert_with(Instant::now);
            last = Instant::now();
            seen += n;
        }
    }
    let first = first.ok_or("no token came")?;
    if seen < tokens {
        return Err(format!("only {seen} of {tokens} tokens came").into());
    }
    let rate = (seen - 1) as f64 / (last - first).as_secs_f64().max(1e-9);
    Ok((first - started, rate))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let (runs, tokens, rate) = if full {
        (9, 2000, 400.0)
    } else {
        (2, 200, 2000.0)
    };
    let server = TestServer::start().await?;
    server.set_model("m", ModelScript::tokens(tokens).rate(rate));
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let upstream = relay::Upstream {
        kind: ProviderKind::Openai,
        base_url: server.base_url(),
        api_key: Secret::new("sk-bench".into()),
    };
    let inside = relay::inside_url(&upstream, port)?;
    let stop = CancellationToken::new();
    tokio::spawn(relay::serve(
        listener,
        upstream,
        Default::default(),
        stop.clone(),
    ));
    let client = reqwest::Client::new();

    let (mut direct, mut door) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for _ in 0..runs {
        let (ttft, tps) = stream(&client, &server.base_url(), tokens).await?;
        direct.0.push(ttft.as_secs_f64() * 1000.0);
        direct.1.push(tps);
        let (ttft, tps) = stream(&client, &inside, tokens).await?;
        door.0.push(ttft.as_secs_f64() * 1000.0);
        door.1.push(tps);
    }
    stop.cancel();
    let (d_ttft, d_tps) = (median(direct.0), median(direct.1));
    let (r_ttft, r_tps) = (median(door.0), median(door.1));
    println!(
        "door benchmark: {tokens} tokens at {rate} tok/s, median of {runs} interleaved runs each"
    );
    println!("  direct        TTFT {d_ttft:7.2} ms   {d_tps:8.1} tok/s");
    println!("  through door  TTFT {r_ttft:7.2} ms   {r_tps:8.1} tok/s");
    println!(
        "  door/direct   TTFT +{:.2} ms        tok/s ratio {:.4}",
        r_ttft - d_ttft,
        r_tps / d_tps
    );
    Ok(())
}
