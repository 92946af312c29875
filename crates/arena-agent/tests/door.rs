//! The network door of a jailed agent (`relay`), attacked from both sides:
//! an agent that sends request targets meant to leave the provider's API
//! path, and a provider (or a gateway before it) that quotes the key back.
//! The agent is a raw HTTP/1.1 client over a TCP socket (so its targets
//! reach the door exactly as written), the provider a real loopback server
//! that records every request it is sent.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arena_agent::relay::{self, DoorLimits, Upstream};
use arena_domain::config::ProviderKind;
use arena_domain::secret::Secret;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-door-test-4f9a1c77e2b04d6b9c3e";

/// One request as the provider stand-in read it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    /// The body, when it is small enough to keep (16 MiB).
    body: Vec<u8>,
    length: usize,
    chunked: bool,
}

const KEPT: usize = 16 * 1024 * 1024;

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The request's head as the provider got it, as a gateway's error
    /// page would quote it.
    fn head(&self) -> String {
        let mut text = format!("{} {}\r\n", self.method, self.target);
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text
    }
}

/// What the stand-in writes back: pieces written one at a time, flushed,
/// with a pause between them (so they cross the door as separate chunks).
type Script = Arc<dyn Fn(&Seen) -> Vec<Vec<u8>> + Send + Sync>;

/// A provider stand-in on loopback: reads each request's body by
/// `Content-Length` (or by chunks, noting it), records it, and answers
/// with its script, one request per connection.
struct Provider {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<Mutex<usize>>,
}

impl Provider {
    async fn start(script: Script) -> Provider {
        Provider::start_after(Duration::ZERO, script).await
    }

    /// A stand-in that waits `pause` before it answers each request.
    async fn start_after(pause: Duration, script: Script) -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let (record, count) = (seen.clone(), connections.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                *count.lock().unwrap() += 1;
                let (record, script) = (record.clone(), script.clone());
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    record.lock().unwrap().push(request.clone());
                    tokio::time::sleep(pause).await;
                    let pieces = script(&request);
                    let last = pieces.len().saturating_sub(1);
                    for (i, piece) in pieces.into_iter().enumerate() {
                        if stream.write_all(&piece).await.is_err() {
                            return;
                        }
                        let _ = stream.flush().await;
                        if i < last {
                            tokio::time::sleep(Duration::from_millis(150)).await;
                        }
                    }
                    let _ = stream.shutdown().await;
                });
            }
        });
        Provider {
            addr,
            seen,
            connections,
        }
    }

    fn base_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }
}

/// Reads one request: its head, then its body by `Content-Length`, or by
/// chunks when it says `Transfer-Encoding: chunked`.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut rest = buffer[head_end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        // Until the last chunk.
        loop {
            if let Some(body) = dechunk(&rest) {
                let length = body.len();
                break (body, length);
            }
            let mut chunk = [0u8; 8192];
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            rest.extend_from_slice(&chunk[..n]);
        }
    } else {
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut read = rest.len();
        let mut chunk = vec![0u8; 64 * 1024];
        while read < length {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            read += n;
            if length <= KEPT {
                rest.extend_from_slice(&chunk[..n]);
            }
        }
        rest.truncate(length.min(KEPT));
        if length > KEPT {
            rest.clear();
        }
        (rest, length)
    };
    let (body, length) = body;
    Some(Seen {
        method,
        target,
        headers,
        body,
        length,
        chunked,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A chunked body decoded, once its last chunk has come.
fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = find(raw, b"\r\n")?;
        let size_text = String::from_utf8_lossy(&raw[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        if raw.len() < size + 2 {
            return None;
        }
        body.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// A door to `base_url`, on loopback.
fn door(base_url: &str, limits: DoorLimits) -> (SocketAddr, CancellationToken) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let upstream = Upstream {
        kind: ProviderKind::Openai,
        base_url: base_url.to_string(),
        api_key: Secret::new(KEY.into()),
    };
    tokio::spawn(relay::serve(listener, upstream, limits, stop.clone()));
    (addr, stop)
}

/// What the agent got back.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Everything the agent read, the body decoded.
    fn text(&self) -> String {
        let mut text = String::new();
        for (name, value) in &self.headers {
            text.push_str(&format!("{name}: {value}\n"));
        }
        text + &String::from_utf8_lossy(&self.body)
    }
}

/// Sends `request` as written, reads the answer to the end (the request
/// says `Connection: close`).
async fn raw(door: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(door).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("the door answered within 20 s")
        .unwrap();
    parse_reply(&answer)
}

fn parse_reply(answer: &[u8]) -> Reply {
    let head_end = find(answer, b"\r\n\r\n").expect("a whole head");
    let head = String::from_utf8_lossy(&answer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let raw_body = &answer[head_end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(raw_body).expect("a whole chunked body")
    } else {
        raw_body.to_vec()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn get(target: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: door\r\nAuthorization: Bearer arena-relay-no-key-here\r\nConnection: close\r\n\r\n")
        .into_bytes()
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let mut three = [0u8; 3];
        three[..group.len()].copy_from_slice(group);
        let n = u32::from(three[0]) << 16 | u32::from(three[1]) << 8 | u32::from(three[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            out.push(if i <= group.len() {
                ALPHABET[((n >> shift) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// Asserts the agent cannot read the key in `text`: not as it is (in any
/// case, so not as `Bearer <key>` either), nor in base64 — every run of
/// base64 characters is decoded from each of its first four places, in
/// both alphabets, and searched.
fn assert_no_key(text: &str) {
    let lower = text.to_lowercase();
    assert!(
        !lower.contains(&KEY.to_lowercase()),
        "the key came back: {text}"
    );
    let is_base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_');
    for run in text.split(|c: char| !is_base64(c)).filter(|r| r.len() >= 8) {
        for start in 0..4.min(run.len()) {
            let decoded = decode_base64(&run[start..]);
            assert!(
                find(&decoded, KEY.as_bytes()).is_none(),
                "the key came back in base64 ({run}): {text}"
            );
        }
    }
}

/// Lenient base64 (either alphabet), dropping a partial last group.
fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' | b'-' => 62,
        _ => 63,
    };
    let mut out = Vec::new();
    for group in text.as_bytes().chunks_exact(4) {
        let n = group
            .iter()
            .fold(0u32, |n, &c| n << 6 | u32::from(value(c)));
        out.extend_from_slice(&n.to_be_bytes()[1..]);
    }
    out
}

#[tokio::test]
async fn encoded_dot_segments_and_backslashes_never_leave_the_api_path() {
    let provider = Provider::start(Arc::new(|_: &Seen| {
        vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"data\":[]}"
                .to_vec(),
        ]
    }))
    .await;
    let (door, _stop) = door(&provider.base_url("/api/v1"), DoorLimits::default());
    let attacks = [
        // The four that reached the provider as /admin/keys, /api/, /api/x, /bs.
        "/api/v1/%2e%2e/%2e%2e/admin/keys",
        "/api/v1/..",
        "/api/v1/.%2e/x",
        "/api/v1/..\\..\\bs",
        // Their cousins.
        "/api/v1/%2E%2E/%2E%2E/admin/keys",
        "/api/v1/%2E./x",
        "/api/v1/../../admin/keys",
        "/api/v1/./../x",
        "/api/v1/%5c..%5c..%5Cbs",
        "/api/v1/x%2f..%2f..%2Fadmin",
        "/api/v1/%252e%252e/%252e%252e/admin",
        "/api/v1/.../admin",
        "/api/v1x/models",
        "/api",
        "/admin/keys",
        "//127.0.0.1/admin/keys",
        "http://127.0.0.1/admin/keys",
    ];
    for attack in attacks {
        let reply = raw(door, &get(attack)).await;
        assert_eq!(reply.status, 404, "{attack} was let through: {reply:?}");
    }
    // The API itself still answers.
    let reply = raw(door, &get("/api/v1/models?limit=2")).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.body, b"{\"data\":[]}");
    let seen = provider.seen();
    let targets: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(targets, ["/api/v1/models?limit=2"]);
    assert!(seen.iter().all(|s| s.target.starts_with("/api/v1/")
        && s.header("authorization") == Some(&format!("Bearer {KEY}"))));
}

/// A gateway's error page quotes the request's headers, in its own
/// headers and its body (as JSON, and a debug header in base64).
#[tokio::test]
async fn a_provider_that_quotes_the_request_never_hands_the_key_to_the_agent() {
    let provider = Provider::start(Arc::new(|seen: &Seen| {
        let auth = seen.header("authorization").unwrap_or_default().to_string();
        let body = serde_json::json!({
            "error": {
                "message": format!("upstream rejected the request: authorization: {auth}"),
                "headers": seen.headers,
                "debug": base64(seen.head().as_bytes()),
                "basic": format!("Basic {}", base64(format!("user:{}", KEY).as_bytes())),
            }
        })
        .to_string();
        vec![format!(
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nX-Echo-Authorization: {auth}\r\nWWW-Authenticate: Basic realm=\"{}\"\r\nX-Debug-Request: {}\r\nX-Key-{KEY}: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            base64(format!("user:{KEY}").as_bytes()),
            base64(seen.head().as_bytes()),
            body.len()
        )
        .into_bytes()]
    }))
    .await;
    let (door, _stop) = door(&provider.base_url("/v1"), DoorLimits::default());
    let reply = raw(
        door,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: door\r\nAccept-Encoding: gzip, br\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    )
    .await;
    assert_eq!(reply.status, 401, "{reply:?}");
    let text = reply.text();
    assert_no_key(&text);
    assert!(
        text.contains("authorization: Bearer [key removed by Arena]"),
        "{text}"
    );
    assert!(
        reply.header("x-echo-authorization") == Some("Bearer [key removed by Arena]"),
        "{text}"
    );
    // The provider did get the key, and was asked for an answer it can
    // scrub (not compressed).
    let seen = provider.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(seen[0].header("accept-encoding"), Some("identity"));
}

/// The same, streamed: the key split across two chunks written apart.
#[tokio::test]
async fn a_key_split_across_streamed_chunks_never_reaches_the_agent() {
    let provider = Provider::start(Arc::new(|seen: &Seen| {
        let auth = seen.header("authorization").unwrap_or_default().to_string();
        let event = format!("data: {{\"error\":\"the gateway saw authorization: {auth}\"}}\n\n");
        let split = event.find(KEY).unwrap() + 7;
        let encoded = format!("data: {{\"basic\":\"{}\"}}\n\n", base64(format!("u:{KEY}").as_bytes()));
        let encoded_split = encoded.len() / 2;
        let chunk = |text: &str| format!("{:x}\r\n{text}\r\n", text.len()).into_bytes();
        vec![
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec(),
            chunk(&event[..split]),
            chunk(&event[split..]),
            chunk(&encoded[..encoded_split]),
            chunk(&encoded[encoded_split..]),
            chunk("data: [DONE]\n\n"),
            b"0\r\n\r\n".to_vec(),
        ]
    }))
    .await;
    let (door, _stop) = door(&provider.base_url("/v1"), DoorLimits::default());
    let reply = raw(
        door,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: door\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"stream\":true}",
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let text = reply.text();
    assert_no_key(&text);
    assert!(
        text.contains("the gateway saw authorization: Bearer [key removed by Arena]"),
        "{text}"
    );
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
}

/// A redirect is the agent's to see, never the door's to follow: followed,
/// it would carry the key to wherever the provider points.
#[tokio::test]
async fn redirects_are_passed_back_never_followed() {
    let elsewhere = Provider::start(Arc::new(|_: &Seen| {
        vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec()]
    }))
    .await;
    let to = elsewhere.base_url("/steal");
    let provider = Provider::start(Arc::new(move |seen: &Seen| {
        let location = if seen.target.ends_with("/away") {
            to.clone()
        } else {
            "/admin/keys".to_string()
        };
        vec![format!(
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .into_bytes()]
    }))
    .await;
    let (door, _stop) = door(&provider.base_url("/v1"), DoorLimits::default());
    let reply = raw(door, &get("/v1/away")).await;
    assert_eq!(reply.status, 302, "{reply:?}");
    assert_eq!(
        reply.header("location"),
        Some(elsewhere.base_url("/steal").as_str())
    );
    let reply = raw(door, &get("/v1/home")).await;
    assert_eq!(reply.status, 302, "{reply:?}");
    assert_eq!(reply.header("location"), Some("/admin/keys"));
    // Followed by the agent, it is refused at the door.
    assert_eq!(raw(door, &get("/admin/keys")).await.status, 404);
    let targets: Vec<String> = provider.seen().into_iter().map(|s| s.target).collect();
    assert_eq!(targets, ["/v1/away", "/v1/home"]);
    assert_eq!(elsewhere.connections(), 0);
}

/// A server that reads request bodies by `Content-Length` only (Python's
/// `http.server`, as KoboldCpp and many small OpenAI-compatible servers
/// are): the body arrives whole, twice in a row on kept-alive connections.
#[tokio::test]
async fn a_body_with_a_length_arrives_whole_at_a_server_that_reads_only_by_length() {
    let script = r#"
import http.server, sys
class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Framing", self.headers.get("Transfer-Encoding") or "length " + str(self.headers.get("Content-Length")))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
    let mut python = std::process::Command::new("python3")
        .args(["-c", script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut port = String::new();
    {
        let stdout = python.stdout.as_mut().unwrap();
        let mut byte = [0u8; 1];
        while stdout.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            port.push(char::from(byte[0]));
        }
    }
    let base = format!("http://127.0.0.1:{}/v1", port.trim());
    let (door, _stop) = door(&base, DoorLimits::default());
    let client = reqwest::Client::new();
    for size in [300_000usize, 17] {
        let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
        // Streamed by the agent's own client too, with its length said.
        let mut raw_request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: door\r\nContent-Type: application/json\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        raw_request.extend_from_slice(&body);
        let reply = raw(door, &raw_request).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(reply.header("x-framing"), Some(&*format!("length {size}")));
        assert!(
            reply.body == body,
            "the body came back with {} bytes",
            reply.body.len()
        );
        // And through an ordinary client, which keeps its connection.
        let reply = client
            .post(format!("http://{door}/v1/chat/completions"))
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        assert_eq!(
            reply
                .headers()
                .get("x-framing")
                .and_then(|v| v.to_str().ok()),
            Some(&*format!("length {size}"))
        );
        assert!(reply.bytes().await.unwrap() == body);
    }
    let _ = python.kill();
    let _ = python.wait();
}

#[tokio::test]
async fn a_chunked_body_stays_chunked() {
    let provider = Provider::start(Arc::new(|_: &Seen| {
        vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec()]
    }))
    .await;
    let (door, _stop) = door(&provider.base_url("/v1"), DoorLimits::default());
    let reply = raw(
        door,
        b"POST /v1/responses HTTP/1.1\r\nHost: door\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let seen = provider.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].chunked, "{:?}", seen[0]);
    assert_eq!(seen[0].header("content-length"), None);
    assert_eq!(seen[0].body, b"hello world");
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_before_it_reaches_the_provider() {
    let provider = Provider::start(Arc::new(|_: &Seen| {
        vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec()]
    }))
    .await;
    let limits = DoorLimits {
        max_body_bytes: 1000,
        ..DoorLimits::default()
    };
    let (door, _stop) = door(&provider.base_url("/v1"), limits);
    // Said in advance: refused before any connection to the provider.
    let reply = raw(
        door,
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: door\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(reply.status, 413, "{reply:?}");
    assert_eq!(provider.connections(), 0);
    // Chunked: cut as it passes the limit; the provider never has it whole.
    let mut request =
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: door\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for _ in 0..6 {
        request.extend_from_slice(format!("{:x}\r\n{}\r\n", 500, "x".repeat(500)).as_bytes());
    }
    request.extend_from_slice(b"0\r\n\r\n");
    let reply = raw(door, &request).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    // Exactly at the limit passes.
    let mut request =
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: door\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n".to_vec();
    request.extend_from_slice(&[b'y'; 1000]);
    assert_eq!(raw(door, &request).await.status, 200);
    let seen = provider.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].body.len(), 1000);
}

#[tokio::test]
async fn the_door_holds_so_many_connections_at_once_and_no_more() {
    let provider = Provider::start(Arc::new(|_: &Seen| {
        vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec()]
    }))
    .await;
    let limits = DoorLimits {
        max_connections: 2,
        ..DoorLimits::default()
    };
    let (door, _stop) = door(&provider.base_url("/v1"), limits);
    let first = tokio::net::TcpStream::connect(door).await.unwrap();
    let _second = tokio::net::TcpStream::connect(door).await.unwrap();
    let third = tokio::spawn(async move { raw(door, &get("/v1/models")).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!third.is_finished(), "a third connection was served");
    assert_eq!(provider.connections(), 0);
    drop(first);
    let reply = tokio::time::timeout(Duration::from_secs(5), third)
        .await
        .expect("served once a place was free")
        .unwrap();
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn a_provider_that_does_not_answer_in_time_gets_504() {
    let provider = Provider::start_after(
        Duration::from_secs(3),
        Arc::new(|_: &Seen| {
            vec![b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec()]
        }),
    )
    .await;
    let limits = DoorLimits {
        request_timeout: Duration::from_millis(500),
        ..DoorLimits::default()
    };
    let (door, _stop) = door(&provider.base_url("/v1"), limits);
    let started = std::time::Instant::now();
    let reply = raw(door, &get("/v1/models")).await;
    assert_eq!(reply.status, 504, "{reply:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_compressed_answer_is_refused_not_passed_unchecked() {
    let provider = Provider::start(Arc::new(|_: &Seen| {
        vec![b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\nConnection: close\r\n\r\nzzzz".to_vec()]
    }))
    .await;
    let (door, _stop) = door(&provider.base_url("/v1"), DoorLimits::default());
    let reply = raw(door, &get("/v1/models")).await;
    assert_eq!(reply.status, 502, "{reply:?}");
    assert!(reply.text().contains("compressed"), "{reply:?}");
}

/// A body much larger than memory should hold streams through: the
/// door's process grows by far less than the body. Run in a child
/// process of its own, so the other tests' memory is not counted.
#[test]
fn a_large_body_streams_through_in_bounded_memory() {
    const BODY: u64 = 256 * 1024 * 1024;
    if std::env::var_os("ARENA_DOOR_MEMORY_CHILD").is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_large_body_streams_through_in_bounded_memory",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("ARENA_DOOR_MEMORY_CHILD", "1")
            .status()
            .unwrap();
        assert!(status.success());
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let transfer = async {
        let provider = Provider::start(Arc::new(|seen: &Seen| {
            let n = seen.length;
            vec![format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{n}",
                n.to_string().len()
            )
            .into_bytes()]
        }))
        .await;
        let limits = DoorLimits {
            max_body_bytes: BODY,
            ..DoorLimits::default()
        };
        let (door, _stop) = door(&provider.base_url("/v1"), limits);
        // Warm up, then measure the peak from here.
        assert_eq!(raw(door, &get("/v1/models")).await.status, 200);
        let before = peak_rss();
        let mut stream = tokio::net::TcpStream::connect(door).await.unwrap();
        stream
            .write_all(format!("POST /v1/files HTTP/1.1\r\nHost: door\r\nContent-Length: {BODY}\r\nConnection: close\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let block = vec![b'z'; 64 * 1024];
        let mut sent = 0;
        while sent < BODY {
            stream.write_all(&block).await.unwrap();
            sent += block.len() as u64;
        }
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let reply = parse_reply(&answer);
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(String::from_utf8_lossy(&reply.body), BODY.to_string());
        let grown = peak_rss().saturating_sub(before);
        eprintln!(
            "peak RSS grew by {} KiB for a {} MiB body",
            grown / 1024,
            BODY >> 20
        );
        assert!(grown < 48 * 1024 * 1024, "grew by {grown} bytes");
    };
    runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(120), transfer)
            .await
            .expect("the body went through within 120 s")
    });
}

/// The process's peak resident size, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        * 1024
}
