//! The one network door of a *prepare* jail: an HTTPS proxy (HTTP
//! `CONNECT`) that Arena serves inside the jail's own network namespace,
//! like the provider's door ([`crate::relay`]), through which a prepare
//! command (`npm ci`, `pip install`, `uv sync`, `cargo fetch`, `go mod
//! download`) reaches the package registries and nothing else.
//!
//! What the door lets through: `CONNECT host:443` to a host on its list
//! ([`Registries`], matched exactly, case-insensitively; `*.name` for the
//! names under `name`), and only when every address the name resolves to
//! is a public one ([`refusal_for`]: no loopback, private, shared, link-local,
//! unique-local, multicast, unspecified or broadcast address, in any IPv6
//! spelling of them, and no address of this machine). It connects to an
//! address it checked (no second lookup, so no DNS rebinding between the
//! check and the connection). It never sees inside TLS and adds nothing:
//! no header of the request reaches the registry, so no credential either.
//! A plain-HTTP request (`GET http://…`) is refused with 405; everything
//! else with 403 and a plain reason. Bounded by [`Limits`]: connections at
//! once, the size of a request's head, and how long a connection may sit
//! idle.
//!
//! Which hosts: [`machine_registries`] asks this machine's own package
//! tools what they are configured to use (npm, pip and uv, Cargo, Go), at
//! run time, plus the names `[coding] registries` adds.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The port the registry door listens on inside a prepare jail's network
/// namespace (`127.0.0.1`), next to the provider's door
/// ([`crate::relay::PORT`]).
pub const PORT: u16 = 41415;

/// The only port the door connects to: HTTPS.
const HTTPS: u16 = 443;

/// The hosts a prepare jail may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registries {
    /// Host names; `*.name` allows every name under `name` (not `name`
    /// itself).
    pub hosts: Vec<String>,
}

impl Registries {
    /// Whether `host` (as a `CONNECT` names it) is on the list: exactly,
    /// ignoring case; never an IP literal, a name with a trailing dot, an
    /// empty label or a character a host name cannot hold.
    pub fn allows(&self, host: &str) -> bool {
        let Some(host) = host_name(host) else {
            return false;
        };
        self.hosts.iter().any(|entry| {
            let entry = entry.trim().trim_end_matches('.').to_ascii_lowercase();
            match entry.strip_prefix("*.") {
                Some(parent) if !parent.is_empty() => host
                    .strip_suffix(parent)
                    .is_some_and(|under| under.len() > 1 && under.ends_with('.')),
                _ => !entry.is_empty() && entry == host,
            }
        })
    }
}

/// `host` lowercased when it is a plain DNS name: letters, digits, `-`
/// and `.`, no empty label (so no trailing dot), no label over 63 bytes,
/// and not an IP address in any spelling a resolver reads (its last label
/// is not all digits, nor a `0x` number).
fn host_name(host: &str) -> Option<String> {
    let host = host.to_ascii_lowercase();
    if host.is_empty() || host.len() > 253 || host.parse::<IpAddr>().is_ok() {
        return None;
    }
    let labels: Vec<&str> = host.split('.').collect();
    if labels.iter().any(|l| {
        l.is_empty()
            || l.len() > 63
            || l.starts_with('-')
            || l.ends_with('-')
            || !l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    }) {
        return None;
    }
    let last = labels.last()?;
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || (last.starts_with("0x") && last[2..].bytes().all(|b| b.is_ascii_hexdigit()));
    (!numeric).then_some(host)
}

/// Why the door will not connect to `address`, or `None` when it is a
/// public address. `own` holds the addresses of this machine's interfaces.
pub fn refusal_for(address: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    let special = match address {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    };
    special.or_else(|| {
        own.contains(&address)
            .then_some("an address of this machine")
    })
}

fn refusal_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [b0, b1, ..] = a.octets();
    if b0 == 0 {
        Some("an unspecified address (0.0.0.0/8)")
    } else if a.is_loopback() {
        Some("a loopback address")
    } else if a.is_private() {
        Some("a private (LAN) address")
    } else if b0 == 100 && (64..128).contains(&b1) {
        Some("a shared (CGNAT) address")
    } else if a.is_link_local() {
        Some("a link-local address")
    } else if a.is_multicast() {
        Some("a multicast address")
    } else if a.is_broadcast() {
        Some("the broadcast address")
    } else {
        None
    }
}

fn refusal_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    if a.is_unspecified() {
        return Some("an unspecified address");
    }
    if a.is_loopback() {
        return Some("a loopback address");
    }
    // IPv4 in IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d) and
    // the NAT64 prefix (64:ff9b::/96) reach the IPv4 address they carry.
    let embedded = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let carries_v4 = (s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0))
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4]);
    if carries_v4 {
        return refusal_v4(embedded).or(if s[5] == 0 && s[0] == 0 {
            // ::a.b.c.d: deprecated, never a registry.
            Some("an IPv4-compatible address")
        } else {
            None
        });
    }
    if s[0] & 0xfe00 == 0xfc00 {
        Some("a unique-local (ULA) address")
    } else if s[0] & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if s[0] & 0xffc0 == 0xfec0 {
        Some("a site-local address")
    } else if a.is_multicast() {
        Some("a multicast address")
    } else {
        None
    }
}

/// The addresses of this machine's network interfaces (where the door
/// runs: outside the jail).
fn own_addresses() -> Vec<IpAddr> {
    let mut found = Vec::new();
    #[cfg(unix)]
    // SAFETY: getifaddrs fills a list owned here, read and freed once.
    unsafe {
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut list) != 0 {
            return found;
        }
        let mut entry = list;
        while !entry.is_null() {
            let address = (*entry).ifa_addr;
            if !address.is_null() {
                match i32::from((*address).sa_family) {
                    libc::AF_INET => {
                        let v4 = &*(address as *const libc::sockaddr_in);
                        found.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))));
                    }
                    libc::AF_INET6 => {
                        let v6 = &*(address as *const libc::sockaddr_in6);
                        found.push(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            entry = (*entry).ifa_next;
        }
        libc::freeifaddrs(list);
    }
    found
}

/// The environment that points the usual package tools at the door: the
/// proxy variables curl, pip, uv, Go, git and npm read, npm's, pnpm's and
/// Yarn's own settings, Cargo's `http.proxy`, pip's `--proxy` and the Java
/// proxy properties every JVM (Gradle, Maven) reads from
/// `JAVA_TOOL_OPTIONS`; no host is exempt (`NO_PROXY` empty).
pub fn proxy_env() -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{PORT}");
    let java = format!(
        "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort={PORT} \
         -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={PORT} -Dhttp.nonProxyHosts="
    );
    [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "YARN_HTTPS_PROXY",
        "YARN_HTTP_PROXY",
        "CARGO_HTTP_PROXY",
        "PIP_PROXY",
    ]
    .into_iter()
    .map(|name| (name.to_string(), url.clone()))
    .chain(
        ["NO_PROXY", "no_proxy", "npm_config_noproxy"]
            .into_iter()
            .map(|name| (name.to_string(), String::new())),
    )
    .chain([("JAVA_TOOL_OPTIONS".to_string(), java)])
    .collect()
}

/// What the door allows one prepare jail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; more wait their turn.
    pub max_connections: usize,
    /// The largest request head (`CONNECT` line and headers).
    pub max_head_bytes: usize,
    /// How long a connection may pass no byte either way before it is
    /// closed (and how long its head may take to arrive).
    pub idle_timeout: Duration,
    /// How long resolving a name, and connecting to it, may take.
    pub connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // npm opens up to 16 sockets per host by default (maxsockets).
            max_connections: 64,
            max_head_bytes: 8 * 1024,
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// Serves the door on `listener` until `stop`.
pub async fn serve(
    listener: std::net::TcpListener,
    registries: Registries,
    limits: Limits,
    stop: CancellationToken,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let turns = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let registries = Arc::new(registries);
    tracing::debug!(hosts = ?registries.hosts, "the registry door is open");
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            permit = turns.clone().acquire_owned() => permit,
        };
        let accepted = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::debug!(%error, "the registry door could not accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (registries, stop) = (registries.clone(), stop.clone());
        tokio::spawn(async move {
            let _permit = permit;
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = connection(stream, &registries, limits) => {}
            }
        });
    }
}

/// One connection: its head, the checks, then the tunnel.
async fn connection(mut client: tokio::net::TcpStream, registries: &Registries, limits: Limits) {
    let (head, rest) = match read_head(&mut client, limits).await {
        Ok(read) => read,
        Err(Unread::TooBig) => {
            let text = format!(
                "takes request heads of at most {} bytes",
                limits.max_head_bytes
            );
            let _ = answer(&mut client, 431, "Request Header Fields Too Large", &text).await;
            return;
        }
        Err(Unread::Gone) => return,
    };
    let Some(line) = head.split("\r\n").next() else {
        return;
    };
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if method != "CONNECT" {
        tracing::info!(method, "the registry door refused a plain-HTTP request");
        let _ = answer(
            &mut client,
            405,
            "Method Not Allowed",
            "passes HTTPS (CONNECT) to the package registries only; plain HTTP is refused",
        )
        .await;
        return;
    }
    let upstream = match admit(target, registries, limits).await {
        Ok(upstream) => upstream,
        Err(reason) => {
            tracing::info!(target, %reason, "the registry door refused a CONNECT");
            let _ = answer(&mut client, 403, "Forbidden", &reason).await;
            return;
        }
    };
    tracing::info!(target, "the registry door opened a tunnel");
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    tunnel(client, upstream, rest, limits.idle_timeout).await;
}

enum Unread {
    TooBig,
    Gone,
}

/// The request's head (up to its blank line) and what came after it.
async fn read_head(
    client: &mut tokio::net::TcpStream,
    limits: Limits,
) -> Result<(String, Vec<u8>), Unread> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            if end + 4 > limits.max_head_bytes {
                return Err(Unread::TooBig);
            }
            let rest = buffer.split_off(end + 4);
            return Ok((String::from_utf8_lossy(&buffer).into_owned(), rest));
        }
        if buffer.len() > limits.max_head_bytes {
            return Err(Unread::TooBig);
        }
        match tokio::time::timeout(limits.idle_timeout, client.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buffer.extend_from_slice(&chunk[..n]),
            _ => return Err(Unread::Gone),
        }
    }
}

/// The connection to the registry a `CONNECT target` asks for, or why
/// not.
async fn admit(
    target: &str,
    registries: &Registries,
    limits: Limits,
) -> Result<tokio::net::TcpStream, String> {
    let (host, port) = target
        .rsplit_once(':')
        .ok_or_else(|| format!("CONNECT `{target}` names no port"))?;
    if port != HTTPS.to_string() {
        return Err(format!("connects to port {HTTPS} only, not `{port}`"));
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        return Err(format!(
            "connects to registry names only, never to an address (`{host}`)"
        ));
    }
    if !registries.allows(host) {
        return Err(format!("`{host}` is not a package registry of this machine (add it to [coding] registries if it is one)"));
    }
    let addresses: Vec<SocketAddr> = tokio::time::timeout(
        limits.connect_timeout,
        tokio::net::lookup_host((host, HTTPS)),
    )
    .await
    .map_err(|_| format!("could not resolve `{host}` in time"))?
    .map_err(|e| format!("could not resolve `{host}`: {e}"))?
    .collect();
    if addresses.is_empty() {
        return Err(format!("`{host}` has no address"));
    }
    let own = own_addresses();
    for address in &addresses {
        if let Some(reason) = refusal_for(address.ip(), &own) {
            return Err(format!(
                "`{host}` resolves to {} ({reason}), which the door never reaches",
                address.ip()
            ));
        }
    }
    let mut last = String::new();
    for address in addresses {
        match tokio::time::timeout(
            limits.connect_timeout,
            tokio::net::TcpStream::connect(address),
        )
        .await
        {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(error)) => last = format!("could not connect to `{host}`: {error}"),
            Err(_) => last = format!("could not connect to `{host}` in time"),
        }
    }
    Err(last)
}

/// A refusal with its plain reason, then the connection closes.
async fn answer(
    client: &mut tokio::net::TcpStream,
    status: u16,
    phrase: &str,
    reason: &str,
) -> std::io::Result<()> {
    let body = format!("Arena's registry door {reason}\n");
    let head = format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await
}

/// Bytes both ways until either side closes or neither sends anything
/// for `idle`.
async fn tunnel(
    client: tokio::net::TcpStream,
    mut upstream: tokio::net::TcpStream,
    early: Vec<u8>,
    idle: Duration,
) {
    if !early.is_empty() && upstream.write_all(&early).await.is_err() {
        return;
    }
    let start = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let (client_read, client_write) = client.into_split();
    let (upstream_read, upstream_write) = upstream.into_split();
    let out = pump(client_read, upstream_write, start, last.clone(), idle);
    let back = pump(upstream_read, client_write, start, last, idle);
    // Either way ending ends the tunnel (a half-closed TLS stream has
    // nothing more to say).
    tokio::select! {
        _ = out => {}
        _ = back => {}
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    start: Instant,
    last: Arc<AtomicU64>,
    idle: Duration,
) {
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        match tokio::time::timeout(idle, from.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(n)) => {
                if to.write_all(&buffer[..n]).await.is_err() {
                    return;
                }
                last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
            }
            Err(_) => {
                let quiet = start
                    .elapsed()
                    .saturating_sub(Duration::from_millis(last.load(Ordering::Relaxed)));
                if quiet >= idle {
                    return;
                }
            }
        }
    }
}

// ---- Which hosts: this machine's own package tools ----

/// How long one tool may take to say its configuration.
const QUERY_TIME: Duration = Duration::from_secs(5);

/// The hosts this machine's own package tools are configured to use,
/// found at run time, with `configured` (`[coding] registries`) added;
/// lowercased, deduplicated. Blocking (it runs the tools): call it from
/// `spawn_blocking`. A tool that is not installed, or says nothing within
/// a few seconds, adds nothing.
///
/// - npm: `npm config get registry`, and the registry of every scope
///   (`@scope:registry=`) in the user's npmrc (only those lines are read;
///   nothing else of the file, tokens included, is kept).
/// - pip and uv: pip's configured `index-url` and `extra-index-url`
///   (`pip config list`, which includes `PIP_*` variables), uv's index
///   variables; when neither configures an index, pip's own default
///   index and its file storage host, as pip's own code names them.
/// - Cargo: the sparse indexes Cargo has used (folders of
///   `$CARGO_HOME/registry/index/` that hold a cached `config.json`) and
///   the `dl` host of each, and the indexes `$CARGO_HOME/config.toml`
///   names under `[source]` and `[registries]`.
/// - Go: `go env GOPROXY GOSUMDB` (`direct` and `off` add nothing).
///
/// Every tool runs from the user's home (never a project: a project's own
/// `.npmrc` or `.cargo/config.toml` is the project's word, not the
/// machine's, and a base commit could have written it).
pub fn machine_registries(configured: &[String]) -> Vec<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".cargo")));
    let neutral = home.clone().unwrap_or_else(|| PathBuf::from("/"));
    let mut hosts = Vec::new();
    hosts.extend(npm_hosts(&neutral, home.as_deref()));
    hosts.extend(python_hosts(&neutral));
    if let Some(cargo_home) = cargo_home {
        hosts.extend(cargo_hosts(&cargo_home));
    }
    hosts.extend(go_hosts(&neutral));
    hosts.extend(
        configured
            .iter()
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty()),
    );
    let mut seen = std::collections::BTreeSet::new();
    hosts.retain(|h| seen.insert(h.clone()));
    hosts
}

/// The host of a URL (`sparse+`/`registry+` prefixes allowed), lowercased;
/// never an IP literal.
fn url_host(text: &str) -> Option<String> {
    let text = text.trim().trim_matches(|c| c == '"' || c == '\'');
    let text = text
        .strip_prefix("sparse+")
        .or_else(|| text.strip_prefix("registry+"))
        .unwrap_or(text);
    let url = reqwest::Url::parse(text).ok()?;
    // `domain()` is none for an IP address.
    host_name(url.domain()?)
}

/// A tool's standard output, when it exits successfully within
/// [`QUERY_TIME`].
fn query(cwd: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    use std::io::Read;
    let mut child = std::process::Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = (&mut stdout).take(1024 * 1024).read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + QUERY_TIME;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                tracing::debug!(
                    program,
                    "a package tool did not say its configuration in time"
                );
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let text = reader.join().ok()?;
    status.filter(|s| s.success()).map(|_| text)
}

fn npm_hosts(cwd: &Path, home: Option<&Path>) -> Vec<String> {
    let mut hosts = Vec::new();
    if let Some(text) = query(cwd, "npm", &["config", "get", "registry"], &[]) {
        hosts.extend(url_host(&text));
    }
    let npmrc = std::env::var_os("NPM_CONFIG_USERCONFIG")
        .or_else(|| std::env::var_os("npm_config_userconfig"))
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".npmrc")));
    if let Some(text) = npmrc.and_then(|p| std::fs::read_to_string(p).ok()) {
        hosts.extend(scope_registries(&text));
    }
    hosts
}

/// The hosts of the `@scope:registry=` lines of an npmrc; nothing else
/// of it is read.
fn scope_registries(npmrc: &str) -> Vec<String> {
    npmrc
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once('=')?;
            let key = key.trim();
            (key.starts_with('@') && key.ends_with(":registry"))
                .then(|| url_host(value))
                .flatten()
        })
        .collect()
}

fn python_hosts(cwd: &Path) -> Vec<String> {
    let mut hosts = Vec::new();
    if let Some(text) = query(cwd, "python3", &["-m", "pip", "config", "list"], &[]) {
        hosts.extend(pip_index_hosts(&text));
    }
    for name in [
        "UV_INDEX_URL",
        "UV_DEFAULT_INDEX",
        "UV_EXTRA_INDEX_URL",
        "UV_INDEX",
    ] {
        if let Ok(value) = std::env::var(name) {
            // UV_INDEX is `name=url` pairs.
            hosts.extend(
                value
                    .split_whitespace()
                    .filter_map(|v| url_host(v.rsplit_once('=').map_or(v, |(_, u)| u))),
            );
        }
    }
    if hosts.is_empty() {
        // pip's built-in default index and where its files are stored.
        let code = "from pip._internal.models.index import PyPI\nprint(PyPI.url)\nprint('https://' + PyPI.file_storage_domain + '/')";
        if let Some(text) = query(cwd, "python3", &["-c", code], &[]) {
            hosts.extend(text.lines().filter_map(url_host));
        }
    }
    hosts
}

/// The index hosts in `pip config list`'s lines (`global.index-url='…'`,
/// `:env:.extra-index-url='… …'`).
fn pip_index_hosts(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(key, _)| key.ends_with("index-url"))
        .flat_map(|(_, value)| {
            value
                .trim()
                .trim_matches('\'')
                .split_whitespace()
                .filter_map(url_host)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn cargo_hosts(cargo_home: &Path) -> Vec<String> {
    let mut hosts = Vec::new();
    if let Ok(entries) = std::fs::read_dir(cargo_home.join("registry").join("index")) {
        for entry in entries.flatten() {
            let config = entry.path().join("config.json");
            let Ok(text) = std::fs::read_to_string(&config) else {
                continue;
            };
            // `index.crates.io-1949cf8c6b5b557f`: the host, a dash, a hash.
            if let Some((host, _)) = entry.file_name().to_string_lossy().rsplit_once('-') {
                hosts.extend(host_name(host));
            }
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) {
                for key in ["dl", "api"] {
                    hosts.extend(json.get(key).and_then(|v| v.as_str()).and_then(url_host));
                }
            }
        }
    }
    for name in ["config.toml", "config"] {
        if let Some(text) = std::fs::read_to_string(cargo_home.join(name))
            .ok()
            .and_then(|t| t.parse::<toml::Table>().ok())
        {
            hosts.extend(cargo_config_hosts(&text));
        }
    }
    hosts
}

/// The index hosts a Cargo configuration names: `[source.*] registry`
/// and `[registries.*] index`.
fn cargo_config_hosts(config: &toml::Table) -> Vec<String> {
    let mut hosts = Vec::new();
    for (table, key) in [("source", "registry"), ("registries", "index")] {
        if let Some(entries) = config.get(table).and_then(|t| t.as_table()) {
            for entry in entries.values() {
                hosts.extend(entry.get(key).and_then(|v| v.as_str()).and_then(url_host));
            }
        }
    }
    hosts
}

fn go_hosts(cwd: &Path) -> Vec<String> {
    // GOTOOLCHAIN=local: asking must never download a toolchain.
    let Some(text) = query(
        cwd,
        "go",
        &["env", "GOPROXY", "GOSUMDB"],
        &[("GOTOOLCHAIN", "local")],
    ) else {
        return Vec::new();
    };
    let mut lines = text.lines();
    let (proxy, sumdb) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    go_env_hosts(proxy, sumdb)
}

/// The hosts of `GOPROXY` (a list split by `,` or `|`; `direct` and `off`
/// name none) and `GOSUMDB` (`name[+key] [url]`).
fn go_env_hosts(proxy: &str, sumdb: &str) -> Vec<String> {
    let mut hosts: Vec<String> = proxy
        .split([',', '|'])
        .filter_map(|p| url_host(p.trim()))
        .collect();
    let mut words = sumdb.split_whitespace();
    if let Some(name) = words.next().filter(|n| *n != "off") {
        match words.next() {
            Some(url) => hosts.extend(url_host(url)),
            None => hosts.extend(host_name(name.split('+').next().unwrap_or(""))),
        }
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(hosts: &[&str]) -> Registries {
        Registries {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
        }
    }

    #[test]
    fn a_host_matches_exactly_ignoring_case_and_a_star_matches_below() {
        let r = list(&["registry.example", "*.files.example", "Mixed.Example"]);
        assert!(r.allows("registry.example"));
        assert!(r.allows("REGISTRY.Example"));
        assert!(r.allows("mixed.example"));
        assert!(r.allows("a.files.example"));
        assert!(r.allows("b.a.files.example"));
        assert!(!r.allows("files.example"));
        assert!(!r.allows("xfiles.example"));
        assert!(!r.allows("evil-registry.example"));
        assert!(!r.allows("registry.example.evil"));
        assert!(!r.allows("sub.registry.example"));
        // No trailing-dot, empty-label, or odd-character spellings.
        assert!(!r.allows("registry.example."));
        assert!(!r.allows("registry..example"));
        assert!(!r.allows(".registry.example"));
        assert!(!r.allows("registry.example%00"));
        assert!(!r.allows("registry.example\0"));
        assert!(!r.allows("registry.example/"));
        assert!(!r.allows("registry.example@x"));
        assert!(!r.allows("registry.example "));
        assert!(!r.allows(""));
    }

    #[test]
    fn an_address_is_never_a_host_name_whatever_the_list_says() {
        let r = list(&["127.0.0.1", "2130706433", "0x7f000001", "::1", "10.0.0.1"]);
        for host in [
            "127.0.0.1",
            "2130706433",
            "0x7f000001",
            "::1",
            "[::1]",
            "10.0.0.1",
            "127.1",
        ] {
            assert!(!r.allows(host), "{host}");
        }
        // A star never makes an empty entry match everything.
        assert!(!list(&["*.", "*", ""]).allows("anything.example"));
    }

    #[test]
    fn the_classifier_refuses_every_local_and_special_range() {
        let refused = [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.169.254",
            "224.0.0.1",
            "239.255.255.250",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "febf::1",
            "fc00::1",
            "fd12:3456::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:192.168.0.1",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::7f00:1",
        ];
        for address in refused {
            let ip: IpAddr = address.parse().unwrap();
            assert!(
                refusal_for(ip, &[]).is_some(),
                "{address} should be refused"
            );
        }
        let public = [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.0.1",
            "192.169.0.1",
            "203.0.113.80",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ];
        for address in public {
            let ip: IpAddr = address.parse().unwrap();
            assert_eq!(refusal_for(ip, &[]), None, "{address} is public");
        }
        // This machine's own addresses are refused, public or not.
        let own: IpAddr = "8.8.4.4".parse().unwrap();
        assert!(refusal_for(own, &[own]).is_some());
    }

    #[test]
    fn hosts_come_from_each_tools_configuration_and_never_its_tokens() {
        let npmrc = "//npm.corp.example/:_authToken=secret-token\n@corp:registry=https://npm.corp.example/\nregistry=https://ignored.example/\n@x:registry = \"https://X.Example:8443/path\"\n";
        assert_eq!(
            scope_registries(npmrc),
            vec!["npm.corp.example".to_string(), "x.example".to_string()]
        );
        let pip = "global.cert='/etc/ssl/certs/ca.crt'\nglobal.index-url='https://pypi.corp.example/simple'\n:env:.extra-index-url='https://one.example/simple https://two.example/simple'\n:env:.find-links='/opt/wheels'\n";
        assert_eq!(
            pip_index_hosts(pip),
            vec!["pypi.corp.example", "one.example", "two.example"]
        );
        let cargo: toml::Table = "[source.crates-io]\nreplace-with = 'mirror'\n[source.mirror]\nregistry = 'sparse+https://cargo.mirror.example/index/'\n[registries.corp]\nindex = 'https://git.corp.example/index.git'\n".parse().unwrap();
        assert_eq!(
            cargo_config_hosts(&cargo),
            vec!["cargo.mirror.example", "git.corp.example"]
        );
        assert_eq!(
            go_env_hosts("https://goproxy.example,direct", "sum.example+abc"),
            vec!["goproxy.example", "sum.example"]
        );
        assert_eq!(
            go_env_hosts("off", "gosum.example https://sumdb.example/x"),
            vec!["sumdb.example"]
        );
        assert!(go_env_hosts("direct", "off").is_empty());
        // Addresses never become hosts.
        assert_eq!(url_host("https://10.0.0.1/simple"), None);
        assert_eq!(url_host("http://[::1]:8080/"), None);
    }

    #[test]
    fn a_cargo_home_names_its_sparse_index_and_download_hosts() {
        let home = tempfile::tempdir().unwrap();
        let index = home
            .path()
            .join("registry/index/index.crates.example-1949cf8c6b5b557f");
        std::fs::create_dir_all(&index).unwrap();
        std::fs::write(
            index.join("config.json"),
            r#"{"dl":"https://static.crates.example/crates","api":"https://crates.example"}"#,
        )
        .unwrap();
        // A git index (no cached config.json) is not named.
        std::fs::create_dir_all(
            home.path()
                .join("registry/index/git.example-1ecc6299db9ec823/.git"),
        )
        .unwrap();
        let hosts = cargo_hosts(home.path());
        assert_eq!(
            hosts,
            vec![
                "index.crates.example",
                "static.crates.example",
                "crates.example"
            ]
        );
    }

    #[test]
    fn the_proxy_variables_all_point_at_the_door_and_exempt_nothing() {
        let env = proxy_env();
        let url = format!("http://127.0.0.1:{PORT}");
        for name in [
            "HTTPS_PROXY",
            "https_proxy",
            "CARGO_HTTP_PROXY",
            "PIP_PROXY",
            "npm_config_https_proxy",
        ] {
            assert!(env.iter().any(|(n, v)| n == name && *v == url), "{name}");
        }
        assert!(env.iter().any(|(n, v)| n == "NO_PROXY" && v.is_empty()));
        let java = &env
            .iter()
            .find(|(n, _)| n == "JAVA_TOOL_OPTIONS")
            .unwrap()
            .1;
        assert!(
            java.contains(&format!("-Dhttps.proxyPort={PORT} "))
                && java.contains("-Dhttps.proxyHost=127.0.0.1 ")
                && java.ends_with("-Dhttp.nonProxyHosts="),
            "{java}"
        );
    }
}
