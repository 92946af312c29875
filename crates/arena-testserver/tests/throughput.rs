//! The server must not be the bottleneck of the engine's throughput benchmark
//! (6 concurrent unpaced streams of 50,000 tokens, > 100,000 deltas/s seen by
//! the engine). A bare TCP client is used so that the client's own cost
//! (an unoptimized HTTP client in test builds) does not hide the server's.

use std::time::Instant;

use arena_testserver::{ModelScript, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const STREAMS: usize = 6;
const TOKENS: usize = 50_000;

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

async fn raw_stream(addr: std::net::SocketAddr, model: String) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body =
        format!(r#"{{"model":"{model}","stream":true,"stream_options":{{"include_usage":true}}}}"#);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::with_capacity(16 << 20);
    s.read_to_end(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_unpaced_streams_of_50k_tokens() {
    let server = TestServer::start().await.unwrap();
    for i in 0..STREAMS {
        server.set_model(&format!("m{i}"), ModelScript::tokens(TOKENS));
    }
    let start = Instant::now();
    let tasks: Vec<_> = (0..STREAMS)
        .map(|i| tokio::spawn(raw_stream(server.addr(), format!("m{i}"))))
        .collect();
    let mut responses = Vec::new();
    for t in tasks {
        responses.push(t.await.unwrap());
    }
    let secs = start.elapsed().as_secs_f64();

    let mut total = 0;
    for (i, resp) in responses.iter().enumerate() {
        assert!(resp.starts_with(b"HTTP/1.1 200 OK\r\n"));
        // Each body frame is one HTTP chunk holding whole events, so no
        // delta is split by chunk framing.
        let tokens = count(resp, b"\"delta\":{\"content\":");
        assert_eq!(tokens, TOKENS, "stream {i}");
        let frames = count(resp, b"}\n\n\r\n");
        assert!(
            frames < TOKENS / 16,
            "{frames} body frames for {TOKENS} tokens"
        );
        assert!(resp.ends_with(b"data: [DONE]\n\n\r\n0\r\n\r\n"));
        total += tokens;
    }
    let rate = total as f64 / secs;
    println!("{total} deltas in {secs:.3}s = {rate:.0} deltas/s");
    assert!(rate > 100_000.0, "{rate:.0} deltas/s");
    let reqs = server.requests();
    assert_eq!(reqs.len(), STREAMS);
}
