//! The registry door of a prepare jail (`registry`), attacked: from a raw
//! TCP client on loopback (every request spelling the door must refuse),
//! and from inside a real bubblewrap jail started by `process::run` with
//! `Launch.registries` set, where curl, npm and pip try the door, around
//! it, and through it to a real package registry.
#![cfg(target_os = "linux")]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arena_agent::process::{run, Bounds, Launch, Line};
use arena_agent::registry::{self, Limits, Registries};
use arena_agent::sandbox::Sandbox;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// A door on loopback, served until the token is cancelled.
async fn door(hosts: &[&str], limits: Limits) -> (SocketAddr, CancellationToken) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let registries = Registries {
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
    };
    tokio::spawn(registry::serve(listener, registries, limits, stop.clone()));
    (addr, stop)
}

/// What the door answers `request` with (up to its close, 10 s at most).
async fn ask(door: SocketAddr, request: &[u8]) -> String {
    let mut stream = tokio::net::TcpStream::connect(door).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

fn status_of(answer: &str) -> &str {
    answer.split(' ').nth(1).unwrap_or("")
}

#[tokio::test]
async fn the_door_refuses_every_spelling_that_is_not_https_to_a_public_registry() {
    let (addr, stop) = door(&["localhost", "registry.example"], Limits::default()).await;
    let cases: &[(&str, &str, &str)] = &[
        // An allowed name that resolves to loopback.
        (
            "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n",
            "403",
            "loopback",
        ),
        ("CONNECT LocalHost:443 HTTP/1.1\r\n\r\n", "403", "loopback"),
        // Trailing-dot and suffix tricks.
        (
            "CONNECT localhost.:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        (
            "CONNECT registry.example.:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        (
            "CONNECT evilregistry.example:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        (
            "CONNECT registry.example.evil.example:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        // Hosts not on the list.
        (
            "CONNECT other.example:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        // Addresses, however spelled: loopback, LAN, metadata, IPv6.
        (
            "CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n",
            "403",
            "never to an address",
        ),
        (
            "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n",
            "403",
            "never to an address",
        ),
        (
            "CONNECT 192.168.1.1:443 HTTP/1.1\r\n\r\n",
            "403",
            "never to an address",
        ),
        (
            "CONNECT 169.254.169.254:443 HTTP/1.1\r\n\r\n",
            "403",
            "never to an address",
        ),
        (
            "CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
            "403",
            "never to an address",
        ),
        (
            "CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n",
            "403",
            "never to an address",
        ),
        (
            "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        (
            "CONNECT 0x7f000001:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        // Userinfo, zones and smuggled ports.
        (
            "CONNECT evil.example@registry.example:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        (
            "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n",
            "403",
            "not a package registry",
        ),
        (
            "CONNECT registry.example:443@169.254.169.254:80 HTTP/1.1\r\n\r\n",
            "403",
            "port 443 only",
        ),
        // Another port, or none.
        (
            "CONNECT registry.example:80 HTTP/1.1\r\n\r\n",
            "403",
            "port 443 only",
        ),
        (
            "CONNECT registry.example:0443 HTTP/1.1\r\n\r\n",
            "403",
            "port 443 only",
        ),
        (
            "CONNECT registry.example HTTP/1.1\r\n\r\n",
            "403",
            "no port",
        ),
        // Plain HTTP, absolute or not.
        (
            "GET http://registry.example/ HTTP/1.1\r\nHost: registry.example\r\n\r\n",
            "405",
            "plain HTTP",
        ),
        (
            "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n",
            "405",
            "plain HTTP",
        ),
        (
            "GET / HTTP/1.1\r\nHost: registry.example\r\n\r\n",
            "405",
            "plain HTTP",
        ),
        (
            "connect registry.example:443 HTTP/1.1\r\n\r\n",
            "405",
            "plain HTTP",
        ),
    ];
    for (request, status, reason) in cases {
        let answer = ask(addr, request.as_bytes()).await;
        assert_eq!(status_of(&answer), *status, "{request:?} -> {answer}");
        assert!(answer.contains(reason), "{request:?} -> {answer}");
        assert!(answer.contains("Arena's registry door"), "{answer}");
    }
    stop.cancel();
}

#[tokio::test]
async fn the_door_bounds_a_requests_head_its_idle_time_and_its_connections() {
    let limits = Limits {
        max_connections: 2,
        max_head_bytes: 1024,
        idle_timeout: Duration::from_millis(500),
        connect_timeout: Duration::from_secs(2),
    };
    let (addr, stop) = door(&["registry.example"], limits).await;
    // A head over the limit.
    let mut big = b"CONNECT registry.example:443 HTTP/1.1\r\n".to_vec();
    big.extend(format!("X-Filler: {}\r\n\r\n", "a".repeat(4096)).as_bytes());
    let answer = ask(addr, &big).await;
    assert_eq!(status_of(&answer), "431", "{answer}");
    // A head that never ends is dropped after the idle time.
    let started = std::time::Instant::now();
    let answer = ask(addr, b"CONNECT registry.example:443 HTTP/1.1\r\n").await;
    assert!(answer.is_empty(), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // Two silent connections hold both places; a third waits until one
    // is dropped for its silence, then is answered.
    let first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let second = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let answer = ask(addr, b"CONNECT other.example:443 HTTP/1.1\r\n\r\n").await;
    assert_eq!(status_of(&answer), "403", "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the third connection was served at once: {:?}",
        started.elapsed()
    );
    drop((first, second));
    stop.cancel();
}

// ---- In a real jail ----

fn have_bwrap(test: &str) -> bool {
    let found = arena_agent::jail::find_bwrap().is_some();
    if !found {
        eprintln!("{test}: skipped: no bubblewrap");
    }
    found
}

/// `script` (sh) in a jail whose only network is the registry door to
/// `hosts`, working in `work`.
fn prepare_jail(work: &Path, script: &str, hosts: Vec<String>) -> Launch {
    // Connect to nothing: the registry door narrows it to its own port.
    let sandbox = Sandbox::new(Vec::new(), vec![work.to_path_buf()], Some(Vec::new()));
    let mut env = vec![
        ("HOME".to_string(), work.display().to_string()),
        ("TMPDIR".to_string(), "/tmp".to_string()),
        (
            "PATH".to_string(),
            "/usr/local/bin:/usr/bin:/bin".to_string(),
        ),
    ];
    // The machine's own certificate authorities, where it says them (a
    // prepare command gets what the engine gives it; here, the test).
    for name in ["PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"] {
        if let Ok(value) = std::env::var(name) {
            env.push((name.to_string(), value));
        }
    }
    Launch {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        cwd: work.to_path_buf(),
        env,
        timeout: Duration::from_secs(180),
        sandbox: Some(sandbox),
        bounds: Bounds::default(),
        door: None,
        registries: Some(Registries { hosts }),
    }
}

async fn run_jailed(launch: &Launch) -> (bool, String) {
    let mut lines = Vec::new();
    let exit = run(launch, &CancellationToken::new(), |line| {
        let (Line::Stdout(l) | Line::Stderr(l)) = line;
        lines.push(l);
    })
    .await
    .expect("the jail starts");
    (exit.success(), lines.join("\n"))
}

/// The value after `name=` on a line of `output`.
fn said<'a>(output: &'a str, name: &str) -> &'a str {
    output
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in:\n{output}"))
}

/// A stand-in for the provider on the host's loopback, counting the
/// connections it gets.
async fn provider() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nprovider")
                .await;
        }
    });
    (port, count)
}

#[tokio::test]
async fn a_prepare_jail_reaches_no_loopback_lan_metadata_provider_or_unlisted_host() {
    if !have_bwrap("refusals") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (provider_port, provider_seen) = provider().await;
    // The machine's registries, and `localhost`: an allowed name that
    // resolves to loopback.
    let hosts = tokio::task::spawn_blocking(|| registry::machine_registries(&["localhost".into()]))
        .await
        .unwrap();
    let registry_host = hosts
        .iter()
        .find(|h| *h != "localhost")
        .cloned()
        .unwrap_or_else(|| "localhost".into());
    // Where that registry is, resolved outside the jail, for a direct try.
    let direct_ip = tokio::net::lookup_host((registry_host.as_str(), 443))
        .await
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|| "192.0.2.1".into());
    let script = format!(
        r#"
try() {{ curl -s -o /dev/null --max-time 10 -w '%{{http_connect}}' "$@"; echo " exit=$?"; }}
echo "localhost=$(try https://localhost/)"
echo "unlisted=$(try https://unlisted-host.example/)"
echo "literal=$(try https://127.0.0.1/)"
echo "lan=$(try https://10.0.0.1/)"
echo "lan6=$(try 'https://[fd00::1]/')"
echo "metadata=$(try https://169.254.169.254/)"
echo "metadata_plain=$(curl -s -o /dev/null --max-time 10 -w '%{{http_code}}' http://169.254.169.254/latest/meta-data/; echo " exit=$?")"
echo "provider_proxied=$(try https://127.0.0.1:{provider_port}/)"
echo "provider_direct=$(curl -s --noproxy '*' --max-time 5 http://127.0.0.1:{provider_port}/; echo " exit=$?")"
echo "registry_direct=$(curl -s -o /dev/null --noproxy '*' --max-time 10 https://{registry_host}/; echo " exit=$?")"
echo "address_direct=$(curl -s -k -o /dev/null --noproxy '*' --max-time 10 https://{direct_ip}/; echo " exit=$?")"
echo "proxy=$HTTPS_PROXY"
"#
    );
    let (_, output) = run_jailed(&prepare_jail(work.path(), &script, hosts)).await;
    println!("{output}");
    for name in [
        "localhost",
        "unlisted",
        "literal",
        "lan",
        "lan6",
        "metadata",
        "provider_proxied",
    ] {
        // The door answered 403; curl failed the tunnel.
        assert!(
            said(&output, name).starts_with("403 exit=")
                && !said(&output, name).ends_with(" exit=0"),
            "{name}: {}",
            said(&output, name)
        );
    }
    assert!(
        said(&output, "metadata_plain").starts_with("405 exit=0"),
        "{output}"
    );
    // Around the door: no network at all (no route, no DNS).
    for name in ["provider_direct", "registry_direct", "address_direct"] {
        let value = said(&output, name);
        assert!(!value.ends_with(" exit=0"), "{name}: {value}");
        assert!(!value.contains("provider"), "{name}: {value}");
    }
    assert_eq!(
        said(&output, "proxy"),
        format!("http://127.0.0.1:{}", registry::PORT)
    );
    assert_eq!(
        provider_seen.load(Ordering::SeqCst),
        0,
        "the provider was reached"
    );
}

/// A package tool's fetch, as a prepare command runs it: `script` (sh,
/// in a fresh home) prints `ok=…` with what it fetched.
struct Fetch {
    tool: &'static str,
    script: String,
    /// Folders beyond the system's the tool needs to read (its toolchain).
    read: Vec<PathBuf>,
    /// What `ok=` must start with.
    expect: &'static str,
}

fn fetches() -> Vec<Fetch> {
    let mut all = Vec::new();
    let on_path = |tool: &str| {
        std::process::Command::new(tool)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if on_path("npm") {
        all.push(Fetch {
            tool: "npm",
            script: "echo \"ok=$(npm view is-odd version --cache \"$HOME/npm-cache\" --loglevel=error 2>npm.log)\"; tail -n 5 npm.log".into(),
            read: Vec::new(),
            expect: "3.",
        });
    }
    if Path::new("/usr/bin/python3").exists() {
        all.push(Fetch {
            tool: "pip",
            script: "/usr/bin/python3 -m pip download --no-deps --no-cache-dir --only-binary=:all: -d \"$HOME/wheels\" six >pip.log 2>&1 && echo \"ok=$(ls \"$HOME/wheels\")\"; tail -n 5 pip.log".into(),
            read: Vec::new(),
            expect: "six-",
        });
    }
    // Cargo from the active toolchain, called directly (not through
    // rustup's proxy, which reads the user's whole rustup home).
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if let Some(sysroot) = sysroot.filter(|s| s.join("bin/cargo").exists()) {
        let cargo = sysroot.join("bin/cargo");
        all.push(Fetch {
            tool: "cargo",
            script: format!(
                r#"export CARGO_HOME="$HOME/cargo-home" RUSTC="{rustc}"
mkdir -p p/src && cd p && printf '[package]\nname = "p"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nitoa = "=1.0.11"\n' > Cargo.toml && touch src/lib.rs
"{cargo}" fetch >../cargo.log 2>&1 && ls "$CARGO_HOME/registry/cache/"*/ | sed 's/^/ok=/'; tail -n 5 ../cargo.log"#,
                cargo = cargo.display(),
                rustc = sysroot.join("bin/rustc").display(),
            ),
            read: vec![sysroot],
            expect: "itoa-1.0.11.crate",
        });
    }
    all
}

/// `script` outside any jail, in a fresh home: its output.
fn outside(script: &str) -> String {
    let home = tempfile::tempdir().unwrap();
    let output = std::process::Command::new("/bin/sh")
        .args(["-c", script])
        .current_dir(home.path())
        .env("HOME", home.path())
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn a_prepare_jail_reaches_the_package_registries_through_the_door() {
    if !have_bwrap("registries") {
        return;
    }
    let hosts = tokio::task::spawn_blocking(|| registry::machine_registries(&[]))
        .await
        .unwrap();
    assert!(
        !hosts.is_empty(),
        "this machine's package tools name no registry"
    );
    let mut fetched = 0;
    for fetch in fetches() {
        let script = fetch.script.clone();
        let free = tokio::task::spawn_blocking(move || outside(&script))
            .await
            .unwrap();
        if !free
            .lines()
            .any(|l| l.starts_with(&format!("ok={}", fetch.expect)))
        {
            eprintln!(
                "registries: {}: skipped: its registry does not answer from this machine outside the jail: {free}",
                fetch.tool
            );
            continue;
        }
        let work = tempfile::tempdir().unwrap();
        let mut launch = prepare_jail(work.path(), &fetch.script, hosts.clone());
        if let Some(sandbox) = launch.sandbox.as_mut() {
            sandbox.read.extend(fetch.read.iter().cloned());
        }
        let (_, output) = run_jailed(&launch).await;
        println!("{}: {output}", fetch.tool);
        assert!(
            output
                .lines()
                .any(|l| l.starts_with(&format!("ok={}", fetch.expect))),
            "{} through the door: {output}",
            fetch.tool
        );
        fetched += 1;
    }
    assert!(
        fetched > 0,
        "no package tool could fetch here, even outside a jail"
    );
}
