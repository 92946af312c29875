//! The one network door of a jailed agent that Arena points at one of your
//! providers. The agent sees a plain HTTP endpoint on `127.0.0.1` (in its
//! own network namespace, where nothing else is reachable) and a
//! placeholder key; Arena, outside the jail, forwards each request to the
//! provider — streaming both ways — and puts the real key on it there. So
//! the key never enters the jail, and the agent reaches that provider's
//! API and nothing else (no other path prefix, host, port, DNS or UDP).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

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
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::process::CommandExt;

    let user = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
    let net = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    let (user_fd, net_fd, send_fd) = (user.as_raw_fd(), net.as_raw_fd(), theirs.as_raw_fd());
    // Made before the fork: the child must not allocate.
    let address = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: PORT.to_be(),
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

struct Door {
    kind: ProviderKind,
    /// `scheme://host:port` of the provider.
    origin: String,
    /// The provider's path prefix; requests elsewhere are refused.
    prefix: String,
    key: Secret,
    client: reqwest::Client,
}

/// Serves the relay on `listener` until `stop`: every request under the
/// provider's path goes to the provider with the real key; anything else
/// gets 404.
pub async fn serve(
    listener: std::net::TcpListener,
    upstream: Upstream,
    stop: CancellationToken,
) -> Result<(), RelayError> {
    let url = reqwest::Url::parse(&upstream.base_url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or_else(|| RelayError::BadUrl(upstream.base_url.clone()))?;
    let origin = url.origin().ascii_serialization();
    let door = Arc::new(Door {
        kind: upstream.kind,
        origin,
        prefix: url.path().trim_end_matches('/').to_string(),
        key: upstream.api_key,
        client: reqwest::Client::builder()
            .build()
            .map_err(|e| RelayError::Io(std::io::Error::other(e)))?,
    });
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let router = axum::Router::new().fallback(forward).with_state(door);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await?;
    Ok(())
}

/// Headers the relay never passes on: hop-by-hop ones and any key the
/// agent sent.
fn dropped(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "authorization"
            | "x-api-key"
            | "api-key"
    )
}

async fn forward(State(door): State<Arc<Door>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let inside = path == door.prefix
        || path.starts_with(&format!("{}/", door.prefix))
        || path.starts_with(&format!("{}?", door.prefix));
    if !inside || path.contains("/../") {
        return (
            StatusCode::NOT_FOUND,
            "Arena's relay forwards only to the provider's API\n",
        )
            .into_response();
    }
    let mut outgoing = door
        .client
        .request(parts.method, format!("{}{path}", door.origin));
    for (name, value) in &parts.headers {
        if !dropped(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    outgoing = match door.kind {
        ProviderKind::Anthropic => outgoing.header("x-api-key", door.key.expose()),
        ProviderKind::Openai => outgoing.bearer_auth(door.key.expose()),
    };
    let outgoing = outgoing.body(reqwest::Body::wrap_stream(body.into_data_stream()));
    match outgoing.send().await {
        Ok(reply) => {
            let mut response = Response::builder().status(reply.status());
            for (name, value) in reply.headers() {
                if !dropped(name) {
                    response = response.header(name, value);
                }
            }
            response
                .body(Body::from_stream(reply.bytes_stream()))
                .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
        }
        Err(error) => {
            tracing::warn!(%error, "the relay could not reach the provider");
            (
                StatusCode::BAD_GATEWAY,
                format!("Arena's relay could not reach the provider: {error}\n"),
            )
                .into_response()
        }
    }
}
