//! `arena-testserver`: serve scripted models on a loopback port until killed.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use arena_testserver::{parse_model_spec, ScriptFile, TestServer};
use clap::Parser;

/// A scripted OpenAI/Anthropic-compatible streaming server for tests and benchmarks.
#[derive(Debug, Parser)]
#[command(name = "arena-testserver", version)]
struct Args {
    /// Port to listen on (127.0.0.1 only); 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A model as NAME:TOKENS:RATE (RATE in tokens/s, 0 = unlimited). Repeatable.
    #[arg(long = "model", value_name = "NAME:TOKENS:RATE")]
    models: Vec<String>,
    /// A JSON script file: {"models": {"name": {"tokens": 100, "rate": 50.0, ...}}}.
    /// A model may answer in tool-calling turns instead: "turns": [{"text": "..."} |
    /// {"tool_calls": [{"name": "write_file", "arguments": {...}}], "text": "optional"}].
    /// Tool calls are served on /v1/chat/completions, /v1/messages and /v1/responses.
    #[arg(long, value_name = "FILE.json")]
    script: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("arena-testserver: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut scripts = Vec::new();
    if let Some(path) = &args.script {
        scripts.extend(ScriptFile::load(path)?.scripts());
    }
    for spec in &args.models {
        scripts.push(parse_model_spec(spec)?);
    }
    let server = TestServer::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await?;
    for (name, script) in scripts {
        server.set_model(&name, script);
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}", server.base_url())?;
    stdout.flush()?;
    drop(stdout);
    tokio::signal::ctrl_c().await?;
    server.shutdown();
    Ok(())
}
