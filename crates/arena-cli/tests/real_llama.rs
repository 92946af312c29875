//! Against a REAL llama.cpp server with a real small model (SmolLM2-135M from
//! PyPI, installed by scripts/peers.sh): a Q&A battle with two local
//! contestants completes, and each contestant's tokens/s agrees with the
//! server's own report within 2%. The server's report is read from its log
//! ("eval time = … tokens per second"), independently of the HTTP stream.
//!
//! Needs ARENA_LLAMA_SERVER and ARENA_TEST_GGUF (see .peers/env). Without
//! them the test is skipped, unless ARENA_REQUIRE_PEERS=1 (as in
//! scripts/test.sh), where it fails.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

struct Server {
    child: Child,
    log: PathBuf,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peers() -> Option<(String, String)> {
    let server = std::env::var("ARENA_LLAMA_SERVER")
        .ok()
        .filter(|s| !s.is_empty());
    let model = std::env::var("ARENA_TEST_GGUF")
        .ok()
        .filter(|s| !s.is_empty());
    match (server, model) {
        (Some(s), Some(m)) => Some((s, m)),
        _ if std::env::var("ARENA_REQUIRE_PEERS").as_deref() == Ok("1") => {
            panic!("ARENA_REQUIRE_PEERS=1 but ARENA_LLAMA_SERVER / ARENA_TEST_GGUF are not set; run scripts/peers.sh and source .peers/env")
        }
        _ => None,
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(server: &str, model: &str, dir: &std::path::Path) -> Server {
    let port = free_port();
    let log = dir.join("llama-server.log");
    let out = std::fs::File::create(&log).unwrap();
    let child = Command::new(server)
        .args([
            "-m",
            model,
            "--alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-t", "2", "-c", "4096", "-np", "1"])
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .expect("start llama-server");
    let mut s = Server { child, log, port };
    // Poll until healthy; the Drop impl stops the server if we panic.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(Some(status)) = s.child.try_wait() {
            panic!(
                "llama-server exited ({status}): {}",
                std::fs::read_to_string(&s.log).unwrap_or_default()
            );
        }
        if health(port) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "llama-server did not become healthy"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn health(port: u16) -> bool {
    use std::io::Write;
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200")
}

/// "eval time = 412.34 ms / 64 tokens ( 6.44 ms per token, 155.21 tokens per second)"
fn logged_rates(log: &str) -> Vec<f64> {
    log.lines()
        .filter(|l| l.contains("eval time") && !l.contains("prompt eval time"))
        .filter_map(|l| {
            let before = l.split("tokens per second").next()?;
            before.rsplit([',', '(']).next()?.trim().parse().ok()
        })
        .collect()
}

#[test]
fn a_real_llama_cpp_battle_reports_the_servers_own_speed() {
    let Some((server, model)) = peers() else {
        eprintln!("skipped: set ARENA_LLAMA_SERVER and ARENA_TEST_GGUF (scripts/peers.sh) to run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let llama = start(&server, &model, dir.path());
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("AGENTS.md"),
        "## Brief\n- temperature: 0\n- max_tokens: 96\n\nAnswer in two short sentences.\n\n\
         ## Friendly\n- temperature: 0.7\n- max_tokens: 96\n\nYou are a friendly assistant.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("arena.toml"),
        format!(
            "[[provider]]\nname = \"llama-cpp\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nlane = \"local\"\n",
            llama.port
        ),
    )
    .unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_arena"))
        .args(["battle", "run", "--type", "qa", "--json", "--project"])
        .arg(&project)
        .args([
            "--prompt",
            "What is the capital of France?",
            "-c",
            "brief@smollm2",
            "-c",
            "friendly@smollm2",
        ])
        .env("ARENA_CONFIG", dir.path().join("arena.toml"))
        .env("ARENA_DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "arena failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let battle: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(battle["status"], "done", "{battle:#}");

    let log = std::fs::read_to_string(&llama.log).unwrap();
    let logged = logged_rates(&log);
    assert_eq!(
        logged.len(),
        2,
        "expected two generations in the server log:\n{log}"
    );
    let contestants = battle["contestants"].as_array().unwrap();
    for (c, server_rate) in contestants.iter().zip(&logged) {
        assert_eq!(c["status"], "done", "{c:#}");
        assert_eq!(c["lane"], "local");
        assert_eq!(c["tokens_per_sec_source"], "server");
        assert!(
            !c["output"].as_str().unwrap_or("").trim().is_empty(),
            "empty answer"
        );
        assert!(c["completion_tokens"].as_u64().unwrap() > 0);
        let ours = c["tokens_per_sec"].as_f64().unwrap();
        let diff = (ours - server_rate).abs() / server_rate;
        assert!(
            diff <= 0.02,
            "{}: ours {ours:.2} tok/s vs server {server_rate:.2} tok/s",
            c["identity"]
        );
    }
    // Local contestants ran one at a time.
    let (a, b) = (&contestants[0], &contestants[1]);
    assert!(a["finished_at"].as_str().unwrap() <= b["started_at"].as_str().unwrap());
}

#[test]
fn parses_llama_cpp_timing_lines() {
    let log = "prompt eval time =      10.00 ms /    12 tokens (    0.83 ms per token,  1200.00 tokens per second)\n\
               eval time =     412.34 ms /    64 tokens (    6.44 ms per token,   155.21 tokens per second)\n";
    assert_eq!(logged_rates(log), vec![155.21]);
}
