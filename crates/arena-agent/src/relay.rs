//! The one network door of a jailed agent that Arena points at one of your
//! providers. The agent sees a plain HTTP endpoint on `127.0.0.1` (in its
//! own network namespace, where nothing else is reachable) and a
//! placeholder key; Arena, outside the jail, forwards each request to the
//! provider — streaming both ways — and puts the real key on it there. So
//! the key never enters the jail, and the agent reaches that provider's
//! API and nothing else (no other path prefix, host, port, DNS or UDP).
//!
//! What the door checks, both ways:
//! - the path it sends is the one it checked, as the URL parser that
//!   builds the outgoing request reads it ([`target`]): under the
//!   provider's prefix, no dot segment or backslash in any spelling;
//! - nothing it passes back carries the key ([`scrub`]): headers and
//!   bodies, streamed ones across their chunks, in its plain, JSON,
//!   percent and base64 spellings; a compressed answer, which could not
//!   be checked, is refused (the door asks for none);
//! - redirects are passed back to the agent, never followed;
//! - the request's framing is kept: a `Content-Length` body is sent with
//!   it, a chunked one chunked, none as none;
//! - [`DoorLimits`]: body size, connections at once, time per request.

mod scrub;
mod target;

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, TRANSFER_ENCODING};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

pub use scrub::{Needles, Scrubber, MASK};

use arena_domain::config::ProviderKind;
use arena_domain::secret::Secret;

/// The key an agent behind the relay is given: a placeholder, replaced by
/// the relay.
pub const PLACEHOLDER_KEY: &str = "arena-relay-no-key-here";

/// Where the relay forwards to.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub kind: ProviderKind,
    /// The provider's `base_url` (up to and including `/v1`).
    pub base_url: String,
    pub api_key: Secret,
}

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("the provider's base_url `{0}` is not an http(s) URL")]
    BadUrl(String),
    #[error("the relay could not listen: {0}")]
    Io(#[from] std::io::Error),
}

/// The port the relay listens on inside a jail's network namespace (which
/// is empty, so any port is free).
pub const PORT: u16 = 41414;

/// A listening socket on port [`PORT`] in the network namespace of the
/// process `pid` (a jail's first process, started blocked until its door
/// is open). The socket is made by a short-lived child that joins the
/// jail's user and network namespaces (a thread of a multithreaded process
/// may not) and hands it back over a socket pair; Arena serves it from
/// outside.
#[cfg(target_os = "linux")]
pub fn listen_in(pid: u32) -> std::io::Result<std::net::TcpListener> {
    listen_on_in(pid, PORT)
}

/// A listening socket on `port` in the network namespace of the process
/// `pid`, made as [`listen_in`] makes the relay's (the registry door of a
/// prepare jail listens on its own port, [`crate::registry::PORT`]).
#[cfg(target_os = "linux")]
pub fn listen_on_in(pid: u32, port: u16) -> std::io::Result<std::net::TcpListener> {
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::process::CommandExt;

    let user = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
    let net = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    let (user_fd, net_fd, send_fd) = (user.as_raw_fd(), net.as_raw_fd(), theirs.as_raw_fd());
    // Made before the fork: the child must not allocate.
    let address = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        // Any address of the namespace, whose only interface is its
        // loopback: bwrap gives it 127.0.0.1 after this (the jail is
        // blocked until the door is open), so 127.0.0.1 cannot be bound
        // yet.
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::UNSPECIFIED).to_be(),
        },
        sin_zero: [0; 8],
    };
    let mut command = std::process::Command::new("/bin/true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: between fork and exec the closure makes system calls only
    // (setns, socket, bind, listen, sendmsg) on descriptors and
    // buffers made before the fork; it does not allocate.
    unsafe {
        command.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::setns(user_fd, libc::CLONE_NEWUSER) != 0
                || libc::setns(net_fd, libc::CLONE_NEWNET) != 0
            {
                return fail();
            }
            let listener = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if listener < 0
                || libc::bind(
                    listener,
                    (&address as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                ) != 0
                || libc::listen(listener, 64) != 0
            {
                return fail();
            }
            // Hand the socket over (SCM_RIGHTS).
            let mut byte = 0u8;
            let mut io = libc::iovec {
                iov_base: (&mut byte as *mut u8).cast(),
                iov_len: 1,
            };
            let mut space = [0u64; 8];
            let mut message: libc::msghdr = std::mem::zeroed();
            message.msg_iov = &mut io;
            message.msg_iovlen = 1;
            message.msg_control = space.as_mut_ptr().cast();
            message.msg_controllen =
                libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), listener);
            if libc::sendmsg(send_fd, &message, 0) != 1 {
                return fail();
            }
            Ok(())
        });
    }
    let status = command.status()?;
    drop(theirs);
    if !status.success() {
        return Err(std::io::Error::other(
            "could not open the relay's door in the jail's network namespace",
        ));
    }
    // Receive it.
    let mut byte = 0u8;
    let mut io = libc::iovec {
        iov_base: (&mut byte as *mut u8).cast(),
        iov_len: 1,
    };
    let mut space = [0u64; 8];
    // SAFETY: a plain recvmsg into buffers owned here; the descriptor in
    // the control message, if any, becomes ours.
    let fd = unsafe {
        let mut message: libc::msghdr = std::mem::zeroed();
        message.msg_iov = &mut io;
        message.msg_iovlen = 1;
        message.msg_control = space.as_mut_ptr().cast();
        message.msg_controllen = std::mem::size_of_val(&space) as _;
        if libc::recvmsg(ours.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC) != 1 {
            return Err(std::io::Error::last_os_error());
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null()
            || (*header).cmsg_level != libc::SOL_SOCKET
            || (*header).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(std::io::Error::other("no socket came back from the jail"));
        }
        std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>())
    };
    // SAFETY: `fd` was just received and is owned by nobody else.
    Ok(unsafe { std::net::TcpListener::from_raw_fd(fd) })
}

/// What the agent is told: its base URL behind the relay (same path as the
/// provider's, on the relay's port).
pub fn inside_url(upstream: &Upstream, port: u16) -> Result<String, RelayError> {
    let url = reqwest::Url::parse(&upstream.base_url)
        .map_err(|_| RelayError::BadUrl(upstream.base_url.clone()))?;
    Ok(format!(
        "http://127.0.0.1:{port}{}",
        url.path().trim_end_matches('/')
    ))
}

/// What the door allows one agent: how big a request, how many at once,
/// how long each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DoorLimits {
    /// The largest request body passed on. A request that declares more
    /// (`Content-Length`) is refused with 413 before anything reaches the
    /// provider; a chunked one is cut when it passes this, so the
    /// provider never receives it whole, and the agent gets 413.
    pub max_body_bytes: u64,
    /// Connections the agent may hold open at once; more wait their turn.
    pub max_connections: usize,
    /// How long one request may take, its answer streamed to the end
    /// included: 504 before the provider answers, a cut stream after.
    pub request_timeout: Duration,
}

impl Default for DoorLimits {
    fn default() -> Self {
        DoorLimits {
            // The largest request the big providers take (32 MB, images
            // and documents included).
            max_body_bytes: 32 * 1024 * 1024,
            max_connections: 32,
            // A contestant's own default time limit (`max_duration_secs`).
            request_timeout: Duration::from_secs(30 * 60),
        }
    }
}

struct Door {
    kind: ProviderKind,
    /// The provider's origin (`scheme://host:port/`).
    origin: reqwest::Url,
    /// The provider's path prefix; requests elsewhere are refused.
    prefix: String,
    key: Secret,
    /// The key's spellings, masked in everything passed back.
    needles: Needles,
    limits: DoorLimits,
    client: reqwest::Client,
}

/// Serves the relay on `listener` until `stop`: every request under the
/// provider's path goes to the provider with the real key; anything else
/// gets 404. Redirects are passed back to the agent, never followed (a
/// redirect followed here would carry the key wherever the provider
/// points).
pub async fn serve(
    listener: std::net::TcpListener,
    upstream: Upstream,
    limits: DoorLimits,
    stop: CancellationToken,
) -> Result<(), RelayError> {
    let url = reqwest::Url::parse(&upstream.base_url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or_else(|| RelayError::BadUrl(upstream.base_url.clone()))?;
    let mut origin = url.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    let door = Arc::new(Door {
        kind: upstream.kind,
        origin,
        prefix: url.path().trim_end_matches('/').to_string(),
        needles: Needles::for_key(upstream.api_key.expose()),
        key: upstream.api_key,
        limits,
        client: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| RelayError::Io(std::io::Error::other(e)))?,
    });
    listener.set_nonblocking(true)?;
    let listener = Rationed {
        listener: tokio::net::TcpListener::from_std(listener)?,
        turns: Arc::new(Semaphore::new(limits.max_connections.max(1))),
    };
    let router = axum::Router::new().fallback(forward).with_state(door);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await?;
    Ok(())
}

/// The door's listener: at most [`DoorLimits::max_connections`] accepted
/// connections at once; the next is accepted when one closes.
struct Rationed {
    listener: tokio::net::TcpListener,
    turns: Arc<Semaphore>,
}

impl axum::serve::Listener for Rationed {
    type Io = Turn;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Turn, std::net::SocketAddr) {
        // The semaphore is never closed.
        let permit = self.turns.clone().acquire_owned().await.ok();
        loop {
            match self.listener.accept().await {
                Ok((stream, address)) => {
                    return (
                        Turn {
                            stream,
                            _permit: permit,
                        },
                        address,
                    )
                }
                Err(error) => {
                    tracing::debug!(%error, "the relay could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

/// One accepted connection, holding its place until it closes.
struct Turn {
    stream: tokio::net::TcpStream,
    _permit: Option<OwnedSemaphorePermit>,
}

impl AsyncRead for Turn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Turn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// Headers the relay never passes on, either way: hop-by-hop ones (the
/// framing included: the door sets it), any key, and the encodings asked
/// for (an answer must come uncompressed for its key to be found).
fn dropped(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "proxy-authenticate"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "expect"
            | "content-length"
            | "accept-encoding"
            | "authorization"
            | "x-api-key"
            | "api-key"
    )
}

/// How the agent's request body is framed; the door frames it the same
/// way to the provider.
enum Framing {
    /// No body.
    None,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

fn refusal(status: StatusCode, text: &str) -> Response {
    (status, format!("Arena's relay {text}\n")).into_response()
}

async fn forward(State(door): State<Arc<Door>>, request: Request) -> Response {
    let deadline = tokio::time::Instant::now() + door.limits.request_timeout;
    let (parts, body) = request.into_parts();
    let Some(url) = parts
        .uri
        .path_and_query()
        .and_then(|target| target::checked(&door.origin, &door.prefix, target.as_str()))
    else {
        tracing::debug!(target = %parts.uri, "the relay refused a request outside the provider's API");
        return refusal(StatusCode::NOT_FOUND, "forwards only to the provider's API");
    };
    let framing = if parts.headers.contains_key(TRANSFER_ENCODING) {
        Framing::Chunked
    } else {
        match parts
            .headers
            .get(CONTENT_LENGTH)
            .map(|v| v.to_str().ok().and_then(|v| v.parse::<u64>().ok()))
        {
            None => Framing::None,
            Some(Some(length)) => Framing::Length(length),
            // The server under the door has checked it already.
            Some(None) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    "could not read the request's Content-Length",
                )
            }
        }
    };
    let limit = door.limits.max_body_bytes;
    if matches!(framing, Framing::Length(length) if length > limit) {
        return refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("passes on request bodies of at most {limit} bytes"),
        );
    }
    let mut outgoing = door.client.request(parts.method, url);
    for (name, value) in &parts.headers {
        if !dropped(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    outgoing = outgoing.header(ACCEPT_ENCODING, "identity");
    outgoing = match door.kind {
        ProviderKind::Anthropic => outgoing.header("x-api-key", door.key.expose()),
        ProviderKind::Openai => outgoing.bearer_auth(door.key.expose()),
    };
    let too_big = Arc::new(AtomicBool::new(false));
    outgoing = match framing {
        Framing::None => outgoing,
        Framing::Length(length) => {
            // Streamed, with the length said: hyper's client keeps a
            // Content-Length it is given (the body under it is framed by
            // the same length, by the server the agent talks to).
            outgoing
                .header(CONTENT_LENGTH, length)
                .body(reqwest::Body::wrap_stream(body.into_data_stream()))
        }
        Framing::Chunked => {
            let too_big = too_big.clone();
            let mut seen = 0u64;
            outgoing.body(reqwest::Body::wrap_stream(body.into_data_stream().map(
                move |chunk| {
                    let chunk = chunk.map_err(std::io::Error::other)?;
                    seen += chunk.len() as u64;
                    if seen > limit {
                        too_big.store(true, Ordering::Relaxed);
                        return Err(std::io::Error::other("the request body is over the limit"));
                    }
                    Ok(chunk)
                },
            )))
        }
    };
    let reply = match tokio::time::timeout_at(deadline, outgoing.send()).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(_)) if too_big.load(Ordering::Relaxed) => {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("passes on request bodies of at most {limit} bytes"),
            );
        }
        Ok(Err(error)) => {
            // A client error may quote the URL; the key is a header, but
            // what goes back into the jail is scrubbed all the same.
            let error = door
                .needles
                .scrub(error.to_string().as_bytes())
                .into_owned();
            let error = String::from_utf8_lossy(&error);
            tracing::warn!(%error, "the relay could not reach the provider");
            return refusal(
                StatusCode::BAD_GATEWAY,
                &format!("could not reach the provider: {error}"),
            );
        }
        Err(_) => {
            return refusal(
                StatusCode::GATEWAY_TIMEOUT,
                &format!(
                    "had no answer from the provider within {} s",
                    door.limits.request_timeout.as_secs()
                ),
            );
        }
    };
    if let Some(encoding) = reply
        .headers()
        .get(CONTENT_ENCODING)
        .filter(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        tracing::warn!(
            ?encoding,
            "the provider sent a compressed answer though none was asked for"
        );
        return refusal(
            StatusCode::BAD_GATEWAY,
            "cannot pass on a compressed answer (its content could not be checked for the key)",
        );
    }
    let mut response = Response::builder().status(reply.status());
    for (name, value) in reply.headers() {
        if dropped(name) || door.needles.found_in(name.as_str().as_bytes()) {
            continue;
        }
        let value = match door.needles.scrub(value.as_bytes()) {
            std::borrow::Cow::Borrowed(_) => value.clone(),
            std::borrow::Cow::Owned(scrubbed) => match HeaderValue::from_bytes(&scrubbed) {
                Ok(value) => value,
                Err(_) => continue,
            },
        };
        response = response.header(name, value);
    }
    let answer = Answer {
        stream: Box::pin(reply.bytes_stream()),
        scrubber: Some(door.needles.scrubber()),
        deadline,
    };
    response
        .body(Body::from_stream(futures::stream::unfold(
            answer,
            Answer::next,
        )))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

/// The provider's answer on its way into the jail: scrubbed of the key,
/// cut at the request's deadline.
struct Answer {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    /// None once the answer has ended.
    scrubber: Option<Scrubber>,
    deadline: tokio::time::Instant,
}

impl Answer {
    async fn next(mut self) -> Option<(std::io::Result<Bytes>, Answer)> {
        loop {
            let scrubber = self.scrubber.as_mut()?;
            match tokio::time::timeout_at(self.deadline, self.stream.next()).await {
                Ok(Some(Ok(chunk))) => {
                    let passed = scrubber.push(&chunk);
                    if !passed.is_empty() {
                        return Some((Ok(Bytes::from(passed)), self));
                    }
                }
                Ok(None) => {
                    let rest = self.scrubber.take()?.finish();
                    return (!rest.is_empty()).then(|| (Ok(Bytes::from(rest)), self));
                }
                // What was held back (less than a spelling of the key) is
                // dropped with the broken stream.
                Ok(Some(Err(_))) => {
                    self.scrubber = None;
                    return Some((
                        Err(std::io::Error::other("the provider's answer broke off")),
                        self,
                    ));
                }
                Err(_) => {
                    self.scrubber = None;
                    return Some((
                        Err(std::io::Error::other("the request's time ran out")),
                        self,
                    ));
                }
            }
        }
    }
}
