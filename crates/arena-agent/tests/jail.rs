//! The jail against the real kernel and the real bubblewrap: each test is
//! an attack from issue 20, run once outside the jail (where it must work,
//! so the test proves the jail and not the machine) and once inside (where
//! it must be refused). The jailed processes are plain
//! `std::process::Command`s; no engine is involved.
//!
//! Without bubblewrap on the machine every test says so and passes.
#![cfg(target_os = "linux")]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use arena_agent::jail::{self, Jail, Network, Prepared};

const PYTHON: &str = "/usr/bin/python3";
const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Whether bubblewrap is here; says why a test does nothing if not.
fn have_bwrap(test: &str) -> bool {
    let found = jail::find_bwrap().is_some();
    if !found {
        eprintln!("{test}: skipped: no bubblewrap (`apt install bubblewrap`)");
    }
    found
}

fn jail_of(read: &[&Path], write: &[&Path], cwd: &Path, network: Network) -> Jail {
    let v = |s: &[&Path]| s.iter().map(|p| p.to_path_buf()).collect();
    Jail {
        read: v(read),
        write: v(write),
        protect: Vec::new(),
        cwd: cwd.to_path_buf(),
        network,
        tmp_bytes: jail::TMP_BYTES,
        layers: Vec::new(),
        links: Vec::new(),
        tree_at: None,
    }
}

/// A small environment, as `process.rs` gives (it clears the rest).
fn small_env(cmd: &mut Command, home: &Path) {
    cmd.env_clear()
        .env("PATH", PATH)
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null());
}

/// `program args` in `jail`, ready to spawn; keep the `Prepared` until the
/// child is spawned.
fn jailed(jail: &Jail, program: &str, args: &[&str]) -> (Command, Prepared) {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let prepared = jail.command(Path::new(program), &args).unwrap();
    let mut cmd = Command::new(&prepared.program);
    cmd.args(&prepared.args);
    small_env(&mut cmd, &jail.cwd);
    // SAFETY: the closure makes two async-signal-safe calls on a
    // descriptor `prepared` keeps open.
    unsafe {
        cmd.pre_exec(prepared.pre_exec());
    }
    (cmd, prepared)
}

/// The same, not jailed.
fn plain(program: &str, args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(cwd);
    small_env(&mut cmd, cwd);
    cmd
}

/// Runs `cmd` to its end, or fails the test: it gets a minute, and once it
/// has exited nothing may hold its output open (a process that survived
/// the jail would).
fn run(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child)
}

fn finish(mut child: Child) -> Output {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            let _ = tx.send(bytes);
        });
        rx
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let collect = |rx: mpsc::Receiver<Vec<u8>>| {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("its output is held open after it exited: something survived it")
    };
    Output {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The value printed as `name:value` on a line of `out`.
fn field<'a>(out: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}:");
    out.lines()
        .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {name}: in {out}"))
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A fresh temporary folder, canonical (so it matches what the jail binds).
fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    (dir, path)
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

// 1. The user's terminal ------------------------------------------------

const TIOCSTI_PY: &str = r##"
import fcntl, os, termios
r = []
try:
    os.close(os.open("/dev/tty", os.O_RDWR)); r.append("tty:opened")
except OSError as e:
    r.append("tty:" + e.strerror)
for fd in (0, 1):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"#"); r.append("sti%d:pushed" % fd)
    except OSError as e:
        r.append("sti%d:%s" % (fd, e.strerror))
# A new line first: the terminal echoes what was pushed into it.
print("\n" + "\n".join(r))
"##;

#[test]
fn a_jailed_process_cannot_type_into_the_users_terminal() {
    if !have_bwrap("tiocsti") {
        return;
    }
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("tiocsti: skipped: no `script` to give it a terminal (`apt install bsdutils`)");
        return;
    }
    let (_dir, dir) = tempdir();
    let code = dir.join("sti.py");
    std::fs::write(&code, TIOCSTI_PY).unwrap();
    let code_text = code.to_str().unwrap();
    // `script` runs the command on a new terminal, which is its
    // controlling terminal and its standard input and output.
    let under_script = |line: String| {
        let mut cmd = plain("script", &["-qec", &line, "/dev/null"], &dir);
        cmd.env("TERM", "dumb");
        cmd
    };

    let outside = text(&run(under_script(format!("{PYTHON} {code_text}"))));
    assert_eq!(field(&outside, "tty"), "opened", "{outside}");
    assert_eq!(field(&outside, "sti0"), "pushed", "{outside}");

    let jail = jail_of(&[&dir], &[], &dir, Network::None);
    let prepared = jail
        .command(Path::new(PYTHON), &[code_text.into()])
        .unwrap();
    let line = std::iter::once(prepared.program.to_str().unwrap().to_string())
        .chain(prepared.args.iter().cloned())
        .map(|a| sh_quote(&a))
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = under_script(line);
    // SAFETY: as in `jailed`.
    unsafe {
        cmd.pre_exec(prepared.pre_exec());
    }
    let out = run(cmd);
    let inside = text(&out);
    assert!(out.status.success(), "{inside}");
    assert_eq!(
        field(&inside, "tty"),
        "No such device or address",
        "{inside}"
    );
    assert_eq!(
        field(&inside, "sti0"),
        "Operation not permitted",
        "{inside}"
    );
    assert_eq!(
        field(&inside, "sti1"),
        "Operation not permitted",
        "{inside}"
    );
}

// 2. /dev/shm ---------------------------------------------------------------

/// Files in the host's /dev/shm, removed at the end.
struct ShmFiles(Vec<PathBuf>);

impl Drop for ShmFiles {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[test]
fn dev_shm_is_the_jails_own_and_goes_with_it() {
    if !have_bwrap("shm") {
        return;
    }
    use std::os::unix::fs::OpenOptionsExt;
    let (_dir, dir) = tempdir();
    let id = std::process::id();
    let name = |what: &str| format!("arena-jail-test-{id}-{what}");
    let secret = Path::new("/dev/shm").join(name("secret"));
    let left = Path::new("/dev/shm").join(name("left"));
    let left_outside = Path::new("/dev/shm").join(name("left-outside"));
    let _cleanup = ShmFiles(vec![secret.clone(), left.clone(), left_outside.clone()]);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&secret)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"another program's secret"))
        .unwrap();
    let script = format!(
        "cat /dev/shm/{secret} 2>/dev/null || echo unreadable; echo left > /dev/shm/{left}",
        secret = name("secret"),
        left = name("left"),
    );

    let out = run(plain(
        "/bin/sh",
        &["-c", &script.replace("-left", "-left-outside")],
        &dir,
    ));
    assert!(
        text(&out).contains("another program's secret"),
        "{}",
        text(&out)
    );
    assert!(
        left_outside.exists(),
        "outside, a file left in /dev/shm stays"
    );

    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let out = run(jailed(&jail, "/bin/sh", &["-c", &script]).0);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out).trim(), "unreadable");
    assert!(!left.exists(), "a file left in the jail's /dev/shm is gone");

    // Two jails at once share no /dev/shm: no channel between contestants.
    let chan = name("channel");
    let writer = format!("echo hi > /dev/shm/{chan}; sleep 1.5; cat /dev/shm/{chan}");
    let (mut cmd, prepared) = jailed(&jail, "/bin/sh", &["-c", &writer]);
    let writer = cmd.stdout(Stdio::piped()).spawn().unwrap();
    drop(prepared);
    std::thread::sleep(Duration::from_millis(500));
    let reader = format!("ls /dev/shm; test -e /dev/shm/{chan} && echo seen || echo unseen");
    let out = run(jailed(&jail, "/bin/sh", &["-c", &reader]).0);
    assert_eq!(text(&out).trim(), "unseen", "{}", text(&out));
    let out = finish(writer);
    assert_eq!(
        text(&out).trim(),
        "hi",
        "the writer still sees its own file"
    );
}

// 3. Devices ----------------------------------------------------------------

const DEVICES_PY: &str = r#"
import os, sys
for d in sys.argv[1:]:
    try:
        os.close(os.open(d, os.O_RDONLY)); print(d + ":opened")
    except FileNotFoundError:
        print(d + ":absent")
    except OSError as e:
        print(d + ":" + e.strerror)
"#;

#[test]
fn raw_disks_fuse_and_tun_are_not_in_the_jail() {
    if !have_bwrap("devices") {
        return;
    }
    let (_dir, dir) = tempdir();
    let candidates = [
        "/dev/sda",
        "/dev/vda",
        "/dev/xvda",
        "/dev/nvme0n1",
        "/dev/fuse",
        "/dev/net/tun",
        "/dev/kvm",
        "/dev/loop0",
        "/dev/kmsg",
        "/dev/mem",
    ];
    let present: Vec<&str> = candidates
        .into_iter()
        .filter(|d| Path::new(d).exists())
        .collect();
    assert!(
        !present.is_empty(),
        "none of {candidates:?} exists here, so this test proves nothing"
    );
    let args: Vec<&str> = ["-c", DEVICES_PY]
        .into_iter()
        .chain(present.iter().copied())
        .collect();
    let outside = text(&run(plain(PYTHON, &args, &dir)));
    for d in &present {
        assert_ne!(field(&outside, d), "absent", "{outside}");
    }
    // As root, some open (a container's device rules may hold back others).
    if is_root() {
        assert!(
            present.iter().any(|d| field(&outside, d) == "opened"),
            "{outside}"
        );
    }

    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let inside = text(&run(jailed(&jail, PYTHON, &args).0));
    for d in &present {
        assert_eq!(field(&inside, d), "absent", "{inside}");
    }
    let listing = text(&run(jailed(&jail, "/bin/ls", &["-A", "/dev"]).0));
    let minimal = [
        "console", "core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm",
        "stderr", "stdin", "stdout", "tty", "urandom", "zero",
    ];
    for entry in listing.split_whitespace() {
        assert!(
            minimal.contains(&entry),
            "/dev/{entry} in the jail: {listing}"
        );
    }
}

// 4. Daemons ------------------------------------------------------------------

/// A `setsid` double-forked daemon that appends to `beat` every 50 ms and
/// writes its pid to `pid`.
fn daemon(beat: &Path, pid: &Path) -> String {
    format!(
        "(setsid sh -c 'echo $$ > {pid}; while :; do echo . >> {beat}; sleep 0.05; done' \
         </dev/null >/dev/null 2>&1 &); \
         while [ ! -s {beat} ]; do sleep 0.05; done",
        pid = pid.display(),
        beat = beat.display()
    )
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Whether `beat` still grows, over a second.
fn beating(beat: &Path) -> bool {
    std::thread::sleep(Duration::from_millis(300));
    let before = size(beat);
    std::thread::sleep(Duration::from_millis(700));
    size(beat) > before
}

fn wait_for_beat(beat: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while size(beat) == 0 {
        assert!(Instant::now() < deadline, "the daemon never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills the unjailed daemon whose pid is in `pid`.
fn kill_daemon(pid: &Path) {
    let pid: i32 = std::fs::read_to_string(pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signals the daemon this test started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

#[test]
fn a_daemon_dies_with_the_jailed_process() {
    if !have_bwrap("daemon") {
        return;
    }
    let (_dir, dir) = tempdir();
    let (beat, pid) = (dir.join("outside.beat"), dir.join("outside.pid"));
    let out = run(plain("/bin/sh", &["-c", &daemon(&beat, &pid)], &dir));
    assert!(out.status.success(), "{}", text(&out));
    let survived = beating(&beat);
    kill_daemon(&pid);
    assert!(survived, "outside, the daemon outlives its parent");

    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let (beat, pid) = (dir.join("inside.beat"), dir.join("inside.pid"));
    let out = run(jailed(&jail, "/bin/sh", &["-c", &daemon(&beat, &pid)]).0);
    assert!(out.status.success(), "{}", text(&out));
    assert!(size(&beat) > 0, "the daemon ran in the jail");
    assert!(
        !beating(&beat),
        "the daemon is gone once the jailed process exits"
    );
}

/// Runs `args` under an intermediate `sh` (standing in for Arena), which
/// the test then kills with SIGKILL.
fn under_sh(program: &str, args: &[String], cwd: &Path) -> Command {
    let mut sh_args = vec!["-c".to_string(), "\"$@\"; echo after".into(), "sh".into()];
    sh_args.push(program.into());
    sh_args.extend(args.iter().cloned());
    let sh_args: Vec<&str> = sh_args.iter().map(String::as_str).collect();
    plain("/bin/sh", &sh_args, cwd)
}

#[test]
fn a_daemon_dies_when_the_process_that_started_the_jail_is_killed() {
    if !have_bwrap("die-with-parent") {
        return;
    }
    let (_dir, dir) = tempdir();
    let body = |beat: &Path, pid: &Path| format!("{}; exec sleep 30", daemon(beat, pid));

    let (beat, pid) = (dir.join("outside.beat"), dir.join("outside.pid"));
    let mut arena: Child = plain("/bin/sh", &["-c", &body(&beat, &pid)], &dir)
        .spawn()
        .unwrap();
    wait_for_beat(&beat);
    arena.kill().unwrap();
    arena.wait().unwrap();
    let survived = beating(&beat);
    kill_daemon(&pid);
    assert!(survived, "outside, the daemon outlives a SIGKILLed parent");

    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let (beat, pid) = (dir.join("inside.beat"), dir.join("inside.pid"));
    let args = vec!["-c".to_string(), body(&beat, &pid)];
    let prepared = jail.command(Path::new("/bin/sh"), &args).unwrap();
    let bwrap = prepared.program.to_str().unwrap();
    let mut cmd = under_sh(bwrap, &prepared.args, &dir);
    // SAFETY: as in `jailed`.
    unsafe {
        cmd.pre_exec(prepared.pre_exec());
    }
    let mut arena = cmd.stdout(Stdio::null()).spawn().unwrap();
    wait_for_beat(&beat);
    let started = Instant::now();
    arena.kill().unwrap();
    arena.wait().unwrap();
    assert!(
        !beating(&beat),
        "the jail's daemon is gone after its starter was SIGKILLed"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

// 5. Network ---------------------------------------------------------------

const NET_PY: &str = r#"
import socket, sys
tcp4, tcp6, udp = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for name, family, host, port in (("tcp4", socket.AF_INET, "127.0.0.1", tcp4),
                                  ("tcp6", socket.AF_INET6, "::1", tcp6)):
    if port == 0:
        print(name + ":none"); continue
    s = socket.socket(family); s.settimeout(3)
    try:
        s.connect((host, port)); print(name + ":connected")
    except OSError as e:
        print(name + ":" + type(e).__name__)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"from-the-jail", ("127.0.0.1", udp)); print("udp:sent")
except OSError as e:
    print("udp:" + type(e).__name__)
print("links:" + ",".join(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]))
"#;

/// Whether `listener` got a connection within a short while.
fn accepted(listener: &std::net::TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        if listener.accept().is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn received(socket: &std::net::UdpSocket) -> bool {
    socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut buf = [0u8; 64];
    matches!(socket.recv_from(&mut buf), Ok((n, _)) if &buf[..n] == b"from-the-jail")
}

#[test]
fn without_network_no_host_port_and_no_datagram_is_reachable() {
    if !have_bwrap("network") {
        return;
    }
    let (_dir, dir) = tempdir();
    let tcp4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp6 = std::net::TcpListener::bind("[::1]:0").ok();
    if tcp6.is_none() {
        eprintln!("network: no IPv6 loopback here; [::1] is not tried");
    }
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let ports = [
        tcp4.local_addr().unwrap().port().to_string(),
        tcp6.as_ref()
            .map_or(0, |l| l.local_addr().unwrap().port())
            .to_string(),
        udp.local_addr().unwrap().port().to_string(),
    ];
    let args: Vec<&str> = ["-c", NET_PY]
        .into_iter()
        .chain(ports.iter().map(String::as_str))
        .collect();

    let outside = text(&run(plain(PYTHON, &args, &dir)));
    assert_eq!(field(&outside, "tcp4"), "connected", "{outside}");
    assert!(accepted(&tcp4));
    if let Some(l) = &tcp6 {
        assert_eq!(field(&outside, "tcp6"), "connected", "{outside}");
        assert!(accepted(l));
    }
    assert_eq!(field(&outside, "udp"), "sent", "{outside}");
    assert!(received(&udp), "outside, the datagram arrives");

    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let inside = text(&run(jailed(&jail, PYTHON, &args).0));
    assert_eq!(field(&inside, "tcp4"), "ConnectionRefusedError", "{inside}");
    assert!(!accepted(&tcp4));
    if let Some(l) = &tcp6 {
        assert_eq!(field(&inside, "tcp6"), "ConnectionRefusedError", "{inside}");
        assert!(!accepted(l));
    }
    assert!(!received(&udp), "a datagram from the jail never arrives");
    assert_eq!(field(&inside, "links"), "lo", "{inside}");
}

// 6. UNIX sockets, /run/user -------------------------------------------------

const UNIX_PY: &str = r#"
import os, socket, sys
for name, address in (("path", sys.argv[1]), ("abstract", "\0" + sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address); print(name + ":connected")
    except OSError as e:
        print(name + ":" + type(e).__name__)
print("run-user:" + ("present" if os.path.exists("/run/user") else "absent"))
"#;

#[test]
fn a_unix_socket_outside_the_jail_is_unreachable() {
    if !have_bwrap("unix") {
        return;
    }
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let (_dir, dir) = tempdir();
    let (_sockets, sockets) = tempdir();
    // A session bus stand-in, in a folder the jail does not bind.
    let bus_path = sockets.join("bus");
    let bus = UnixListener::bind(&bus_path).unwrap();
    bus.set_nonblocking(true).unwrap();
    let name = format!("arena-jail-test-{}", std::process::id());
    let abstract_bus =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    abstract_bus.set_nonblocking(true).unwrap();
    let args = ["-c", UNIX_PY, bus_path.to_str().unwrap(), &name];

    let outside = text(&run(plain(PYTHON, &args, &dir)));
    assert_eq!(field(&outside, "path"), "connected", "{outside}");
    assert_eq!(field(&outside, "abstract"), "connected", "{outside}");
    assert!(bus.accept().is_ok() && abstract_bus.accept().is_ok());
    if Path::new("/run/user").exists() {
        assert_eq!(field(&outside, "run-user"), "present");
    }

    // The path socket is out of reach by the file system alone: also with
    // the host's network.
    for network in [Network::None, Network::Host] {
        let jail = jail_of(&[], &[&dir], &dir, network);
        let inside = text(&run(jailed(&jail, PYTHON, &args).0));
        assert_eq!(field(&inside, "path"), "FileNotFoundError", "{inside}");
        assert_eq!(field(&inside, "run-user"), "absent", "{inside}");
        if network == Network::None {
            assert_eq!(
                field(&inside, "abstract"),
                "ConnectionRefusedError",
                "{inside}"
            );
        }
        while abstract_bus.accept().is_ok() {}
        assert!(
            bus.accept().is_err(),
            "{network:?}: nothing reached the bus"
        );
    }
}

// 7. /proc -----------------------------------------------------------------

const PROC_PY: &str = r#"
import os, sys
marker, arena = sys.argv[1].encode(), sys.argv[2]
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if marker in open("/proc/%s/environ" % pid, "rb").read():
                found.append(pid)
        except OSError:
            pass
print("found:" + ",".join(found))
try:
    print("arena:" + ("secret" if marker in open("/proc/%s/environ" % arena, "rb").read() else "clean"))
except OSError as e:
    print("arena:" + type(e).__name__)
print("init:" + ("secret" if marker in open("/proc/1/environ", "rb").read() else "clean"))
"#;

#[test]
fn arenas_environment_is_not_in_the_jails_proc() {
    if !have_bwrap("proc") {
        return;
    }
    let (_dir, dir) = tempdir();
    let code = dir.join("proc.py");
    std::fs::write(&code, PROC_PY).unwrap();
    let marker = format!("key-{}-{:?}", std::process::id(), Instant::now());
    // "Arena": a shell holding a key in its environment, which starts the
    // jail with a cleared one (as process.rs does) and waits.
    let starter = |program: &str, args: &[String], pre: Option<&Prepared>| {
        let mut all = vec![
            "-c".to_string(),
            "env -i PATH=/usr/bin:/bin \"$@\" \"$$\"; true".into(),
            "sh".into(),
            program.into(),
        ];
        all.extend(args.iter().cloned());
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let mut cmd = plain("/bin/sh", &all, &dir);
        cmd.env("ARENA_TEST_PROVIDER_KEY", &marker);
        if let Some(p) = pre {
            // SAFETY: as in `jailed`.
            unsafe {
                cmd.pre_exec(p.pre_exec());
            }
        }
        cmd
    };
    let py_args = vec![code.to_str().unwrap().to_string(), marker.clone()];

    let outside = text(&run(starter(PYTHON, &py_args, None)));
    assert_eq!(field(&outside, "arena"), "secret", "{outside}");
    assert_ne!(field(&outside, "found"), "", "{outside}");

    let jail = jail_of(&[&dir], &[], &dir, Network::None);
    let prepared = jail.command(Path::new(PYTHON), &py_args).unwrap();
    let out = run(starter(
        prepared.program.to_str().unwrap(),
        &prepared.args,
        Some(&prepared),
    ));
    let inside = text(&out);
    assert_eq!(field(&inside, "found"), "", "{inside}");
    assert_ne!(field(&inside, "arena"), "secret", "{inside}");
    assert_eq!(field(&inside, "init"), "clean", "{inside}");
    // Only the jail's own processes are in its /proc.
    let listing = text(&run(jailed(
        &jail,
        "/bin/sh",
        &["-c", "ls -d /proc/[0-9]*"],
    )
    .0));
    assert!(
        listing.split_whitespace().count() <= 3,
        "the jail's /proc lists {listing}"
    );
}

// 8. Writes -------------------------------------------------------------------

/// A read folder, a write folder holding a repository's `.git` (config and
/// hooks to protect), and a sibling folder the jail does not bind.
struct Layout {
    root: PathBuf,
    ro: PathBuf,
    w: PathBuf,
    sibling: PathBuf,
}

fn layout(root: &Path) -> Layout {
    let l = Layout {
        root: root.to_path_buf(),
        ro: root.join("ro"),
        w: root.join("w"),
        sibling: root.join("sibling"),
    };
    for d in [
        &l.ro,
        &l.sibling,
        &l.w.join(".git/hooks"),
        &l.w.join(".git/objects"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(l.ro.join("a"), "read me").unwrap();
    std::fs::write(l.w.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(l.w.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    l
}

fn attacks(l: &Layout) -> String {
    let (root, ro, w, sib) = (
        l.root.display(),
        l.ro.display(),
        l.w.display(),
        l.sibling.display(),
    );
    format!(
        r#"
t() {{ name=$1; shift; if "$@" 2>/dev/null; then echo "$name:done"; else echo "$name:refused"; fi; }}
t ro-create touch {ro}/new
t ro-change sh -c 'echo x >> {ro}/a'
t sibling-create touch {sib}/new
t root-create touch {root}/new
t config-append sh -c 'echo x >> {w}/.git/config'
t config-truncate sh -c ': > {w}/.git/config'
t config-rename mv {w}/.git/config {w}/.git/config-old
t config-over sh -c 'echo "[core] fsmonitor = evil" > {w}/evil && mv -f {w}/evil {w}/.git/config'
t config-rm rm -f {w}/.git/config
t hooks-add touch {w}/.git/hooks/post-checkout
t hooks-change sh -c 'echo evil >> {w}/.git/hooks/pre-commit'
t hooks-rename mv {w}/.git/hooks {w}/.git/hooks-old
t hooks-rm rm -rf {w}/.git/hooks
t objects-write touch {w}/.git/objects/new
t work-write sh -c 'echo work > {w}/file'
t git-rename mv {w}/.git {w}/git-old
"#
    )
}

fn unchanged(l: &Layout) -> bool {
    std::fs::read_to_string(l.w.join(".git/config"))
        .ok()
        .as_deref()
        == Some("[core]\n")
        && std::fs::read_to_string(l.w.join(".git/hooks/pre-commit"))
            .ok()
            .as_deref()
            == Some("#!/bin/sh\n")
        && std::fs::read_dir(l.w.join(".git/hooks"))
            .map(|d| d.count())
            .ok()
            == Some(1)
        && std::fs::read_to_string(l.ro.join("a")).ok().as_deref() == Some("read me")
        && !l.ro.join("new").exists()
        && !l.sibling.join("new").exists()
        && !l.root.join("new").exists()
}

#[test]
fn writes_stay_in_the_write_folders_and_protected_paths_stay_put() {
    if !have_bwrap("writes") {
        return;
    }
    let (_dir, dir) = tempdir();

    let outside = layout(&dir.join("outside"));
    let said = text(&run(plain("/bin/sh", &["-c", &attacks(&outside)], &dir)));
    for line in said.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            line.ends_with(":done"),
            "outside, every attack works: {said}"
        );
    }
    assert!(!unchanged(&outside));

    let inside = layout(&dir.join("inside"));
    let jail = Jail {
        read: vec![inside.ro.clone()],
        write: vec![inside.w.clone()],
        protect: vec![inside.w.join(".git/config"), inside.w.join(".git/hooks")],
        cwd: inside.w.clone(),
        network: Network::None,
        tmp_bytes: jail::TMP_BYTES,
        layers: Vec::new(),
        links: Vec::new(),
        tree_at: None,
    };
    let out = run(jailed(&jail, "/bin/sh", &["-c", &attacks(&inside)]).0);
    let said = text(&out);
    for line in said.lines().filter(|l| !l.trim().is_empty()) {
        let name = line.split(':').next().unwrap_or_default();
        // The jail's own root is a scratch file system: a file made there
        // is the jail's alone (checked on the host below).
        let allowed = ["objects-write", "work-write", "root-create"];
        let expect = if allowed.contains(&name) {
            "done"
        } else {
            "refused"
        };
        assert_eq!(field(&said, name), expect, "{name}: {said}");
    }
    assert!(unchanged(&inside), "the host's files are as they were");
    assert!(inside.w.join(".git/objects/new").exists());
    assert_eq!(
        std::fs::read_to_string(inside.w.join("file")).unwrap(),
        "work\n"
    );
}

// 9. What still works -----------------------------------------------------------

#[test]
fn a_jailed_shell_reads_writes_and_runs_the_system_programs() {
    if !have_bwrap("works") {
        return;
    }
    let (_dir, dir) = tempdir();
    let (ro, w) = (dir.join("ro"), dir.join("w"));
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::create_dir_all(&w).unwrap();
    std::fs::write(ro.join("notes"), "from the read folder").unwrap();
    let jail = jail_of(&[&ro], &[&w], &w, Network::None);
    let script = format!(
        "set -e; cat {ro}/notes; echo; echo written > {w}/out; /usr/bin/env | grep -c PATH=; \
         git --version; pwd; echo home=$HOME; echo uid=$(id -u); grep CapEff /proc/self/status; \
         cd /tmp && touch scratch && echo tmp-ok; \
         {PYTHON} -c 'import threading; t = threading.Thread(target=print, args=(\"thread-ok\",)); t.start(); t.join()'",
        ro = ro.display(),
        w = w.display()
    );
    let (mut cmd, _prepared) = jailed(&jail, "/bin/sh", &["-c", &script]);
    cmd.env("ARENA_PASSED", "through");
    let out = run(cmd);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("from the read folder"), "{said}");
    assert!(said.contains("git version"), "{said}");
    assert!(said.contains(&format!("home={}", w.display())), "{said}");
    assert!(said.contains("tmp-ok"), "{said}");
    // Threads start (glibc's clone3 falls back to clone under the filter).
    assert!(said.contains("thread-ok"), "{said}");
    assert!(said.contains("CapEff:\t0000000000000000"), "{said}");
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    assert!(
        said.contains(&format!("uid={uid}")),
        "same user inside: {said}"
    );
    assert_eq!(std::fs::read_to_string(w.join("out")).unwrap(), "written\n");

    // The environment passes through bubblewrap as it is given.
    let (mut cmd, _prepared) = jailed(&jail, "/bin/sh", &["-c", "echo $ARENA_PASSED"]);
    cmd.env("ARENA_PASSED", "through");
    assert_eq!(text(&run(cmd)).trim(), "through");
}

#[test]
fn the_hosts_password_hashes_are_masked() {
    if !have_bwrap("masked") || !is_root() || !Path::new("/etc/shadow").exists() {
        eprintln!("masked: skipped: needs root and /etc/shadow");
        return;
    }
    let (_dir, dir) = tempdir();
    let script = "head -c 5 /etc/shadow >/dev/null && echo shadow:read || echo shadow:refused";
    let outside = text(&run(plain("/bin/sh", &["-c", script], &dir)));
    assert_eq!(field(&outside, "shadow"), "read", "root reads it outside");
    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let inside = text(&run(jailed(&jail, "/bin/sh", &["-c", script]).0));
    assert_eq!(field(&inside, "shadow"), "refused", "{inside}");
}

#[test]
fn an_unprivileged_user_is_itself_inside() {
    if !have_bwrap("uid") {
        return;
    }
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("uid: skipped: needs root and setpriv to become another user");
        return;
    }
    let (_dir, dir) = tempdir();
    let jail = jail_of(&[], &[], Path::new("/"), Network::None);
    let prepared = jail.command(Path::new("/usr/bin/id"), &[]).unwrap();
    let mut args = vec!["--reuid=65534", "--regid=65534", "--clear-groups"];
    args.push(prepared.program.to_str().unwrap());
    args.extend(prepared.args.iter().map(String::as_str));
    let mut cmd = plain("setpriv", &args, &dir);
    // SAFETY: as in `jailed`.
    unsafe {
        cmd.pre_exec(prepared.pre_exec());
    }
    let out = run(cmd);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).starts_with("uid=65534"), "{}", text(&out));
}

// The seccomp filter ---------------------------------------------------------

const SECCOMP_PY: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ptrace, vm_read, keyctl, unshare, clone = (int(a) for a in sys.argv[1:6])
def say(name, r):
    print(name + ":" + ("ok" if r >= 0 else os.strerror(ctypes.get_errno())))
pid = os.fork()
if pid == 0:
    r = libc.syscall(ptrace, 0, 0, 0, 0)  # PTRACE_TRACEME
    os._exit(0 if r == 0 else ctypes.get_errno())
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
print("ptrace:" + ("ok" if code == 0 else os.strerror(code)))
L = ctypes.c_long
say("process_vm_readv", libc.syscall(L(vm_read), L(os.getpid()), None, L(0), None, L(0), L(0)))
say("keyctl", libc.syscall(keyctl, 0, ctypes.c_int(-3), 0))  # GET_KEYRING_ID, session
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
r = libc.syscall(clone, CLONE_NEWUSER | SIGCHLD, None, None, None, None)
if r == 0:
    os._exit(0)
if r > 0:
    os.waitpid(r, 0)
say("clone-newuser", r)
say("unshare-newuser", libc.syscall(unshare, CLONE_NEWUSER))
"#;

#[test]
fn the_filter_refuses_tracing_keys_and_new_namespaces() {
    if !have_bwrap("seccomp") {
        return;
    }
    if jail::seccomp_filter().is_none() {
        eprintln!("seccomp: skipped: no filter on this architecture");
        return;
    }
    let (_dir, dir) = tempdir();
    let nrs = [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_keyctl,
        libc::SYS_unshare,
        libc::SYS_clone,
    ]
    .map(|n| n.to_string());
    let args: Vec<&str> = ["-c", SECCOMP_PY]
        .into_iter()
        .chain(nrs.iter().map(String::as_str))
        .collect();
    let calls = [
        "ptrace",
        "process_vm_readv",
        "keyctl",
        "clone-newuser",
        "unshare-newuser",
    ];

    let outside = text(&run(plain(PYTHON, &args, &dir)));
    for call in calls {
        assert_eq!(field(&outside, call), "ok", "{call} outside: {outside}");
    }
    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let inside = text(&run(jailed(&jail, PYTHON, &args).0));
    for call in calls {
        assert_eq!(
            field(&inside, call),
            "Operation not permitted",
            "{call} inside: {inside}"
        );
    }
}

// Socket families (issue 37) ---------------------------------------------------

const FAMILIES_PY: &str = r#"
import socket
AF_VSOCK = getattr(socket, "AF_VSOCK", 40)
tries = [
    ("vsock", AF_VSOCK, socket.SOCK_STREAM, 0),
    ("packet", socket.AF_PACKET, socket.SOCK_DGRAM, 0),
    ("alg", 38, socket.SOCK_SEQPACKET, 0),
    ("netlink-audit", socket.AF_NETLINK, socket.SOCK_RAW, 9),
    ("netlink-uevent", socket.AF_NETLINK, socket.SOCK_DGRAM, 15),
    ("unix", socket.AF_UNIX, socket.SOCK_STREAM, 0),
    ("inet", socket.AF_INET, socket.SOCK_STREAM, 0),
    ("inet6", socket.AF_INET6, socket.SOCK_DGRAM, 0),
    ("netlink-route", socket.AF_NETLINK, socket.SOCK_RAW, 0),
]
for name, family, kind, proto in tries:
    try:
        socket.socket(family, kind, proto).close(); print(name + ":ok")
    except OSError as e:
        print(name + ":" + e.strerror)
try:
    socket.socketpair(AF_VSOCK, socket.SOCK_STREAM); print("vsock-pair:ok")
except OSError as e:
    print("vsock-pair:" + e.strerror)
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
a.send(b"x"); print("unix-pair:" + ("ok" if b.recv(1) == b"x" else "lost"))
print("if_nameindex:" + ",".join(n for _, n in socket.if_nameindex()))
print("getaddrinfo:" + str(len(socket.getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG)) > 0))
"#;

const NOT_SUPPORTED: &str = "Address family not supported by protocol";

/// AF_VSOCK is in no network namespace: in a VM (a cloud machine, WSL2) a
/// jail would reach the hypervisor's host. The filter refuses every family
/// but local sockets, IP and netlink's route protocol (which the C
/// library, Python and Node read interfaces through).
#[test]
fn socket_families_beyond_local_and_ip_are_refused() {
    if !have_bwrap("families") {
        return;
    }
    if jail::seccomp_filter().is_none() {
        eprintln!("families: skipped: no filter on this architecture");
        return;
    }
    let (_dir, dir) = tempdir();
    let outside = text(&run(plain(PYTHON, &["-c", FAMILIES_PY], &dir)));
    if field(&outside, "vsock") != "ok" {
        eprintln!("families: AF_VSOCK is not available outside the jail here either: {outside}");
    }
    for jail in [
        jail_of(&[], &[&dir], &dir, Network::None),
        jail_of(&[], &[&dir], &dir, Network::Host),
    ] {
        let out = run(jailed(&jail, PYTHON, &["-c", FAMILIES_PY]).0);
        let inside = text(&out);
        assert!(out.status.success(), "{inside}");
        for refused in [
            "vsock",
            "vsock-pair",
            "packet",
            "alg",
            "netlink-audit",
            "netlink-uevent",
        ] {
            assert_eq!(
                field(&inside, refused),
                NOT_SUPPORTED,
                "{refused}: {inside}"
            );
        }
        for works in ["unix", "inet", "inet6", "netlink-route", "unix-pair"] {
            assert_eq!(field(&inside, works), "ok", "{works}: {inside}");
        }
        assert!(field(&inside, "if_nameindex").contains("lo"), "{inside}");
        assert_eq!(field(&inside, "getaddrinfo"), "True", "{inside}");
    }
    // Node reads the interfaces through netlink too.
    let node = Path::new("/usr/bin/node");
    if node.exists() {
        let jail = jail_of(&[], &[&dir], &dir, Network::None);
        let js = "console.log('node:' + Object.keys(require('os').networkInterfaces()).join(','))";
        let inside = text(&run(jailed(&jail, "/usr/bin/node", &["-e", js]).0));
        assert!(field(&inside, "node").contains("lo"), "{inside}");
    }
}

// What a jail may hold in memory (issue 37) ------------------------------------

const FILL_PY: &str = r#"
import os, sys
mib = int(sys.argv[1])
def fill(path):
    try:
        with open(path, "wb") as f:
            for _ in range(mib):
                f.write(b"\0" * (1 << 20))
                f.flush()
        return "wrote"
    except OSError as e:
        return e.strerror
    finally:
        try: os.unlink(path)
        except OSError: pass
print("tmp:" + fill("/tmp/balloon"))
print("shm:" + fill("/dev/shm/balloon"))
for path in ("/dev/balloon", "/dev/shm/../balloon2"):
    try:
        open(path, "wb").close(); print("dev:created")
    except OSError as e:
        print("dev:" + e.strerror)
with open("/tmp/small", "wb") as f:
    f.write(b"\0" * (1 << 20))
print("small:ok")
with open("/dev/null", "wb") as f:
    f.write(b"still a sink")
print("null:ok")
"#;

/// The jail's `/tmp` and `/dev/shm` are memory: unsized, each could hold
/// half the machine's RAM, pinned where the OOM killer does not look. They
/// are sized ([`Jail::tmp_bytes`]), and `/dev` itself holds nothing.
#[test]
fn tmp_and_dev_shm_are_sized_and_dev_holds_nothing() {
    if !have_bwrap("tmpfs") {
        return;
    }
    let (_dir, dir) = tempdir();
    let mut jail = jail_of(&[], &[&dir], &dir, Network::None);
    jail.tmp_bytes = 8 << 20;
    let out = run(jailed(&jail, PYTHON, &["-c", FILL_PY, "16"]).0);
    let inside = text(&out);
    assert!(out.status.success(), "{inside}");
    assert_eq!(field(&inside, "tmp"), "No space left on device", "{inside}");
    assert_eq!(field(&inside, "shm"), "No space left on device", "{inside}");
    assert!(
        inside
            .lines()
            .filter(|l| l.starts_with("dev:"))
            .all(|l| l == "dev:Read-only file system"),
        "{inside}"
    );
    assert_eq!(field(&inside, "small"), "ok", "{inside}");
    assert_eq!(field(&inside, "null"), "ok", "{inside}");
}

// Credentials in what a jail reads (issue 37) ---------------------------------

/// Files in the host's /etc, removed at the end.
struct EtcFiles(Vec<PathBuf>);

impl Drop for EtcFiles {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_dir_all(f).or_else(|_| std::fs::remove_file(f));
        }
    }
}

/// Run as root (CI is), a jail's uid 0 is the real root's: a file of
/// root's that only its owner may read (a WireGuard key, a TLS key) was
/// readable in the jail. Every file and folder of /etc that not everyone
/// may read is hidden.
#[test]
fn root_only_files_of_etc_are_hidden_from_a_jail_of_roots() {
    if !have_bwrap("etc") {
        return;
    }
    if !is_root() {
        eprintln!("etc: skipped: not root (only root's jail owns root's files)");
        return;
    }
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let tag = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let file = PathBuf::from(format!("/etc/arena-test-secret-{tag}"));
    let folder = PathBuf::from(format!("/etc/arena-test-store-{tag}"));
    let open_file = PathBuf::from(format!("/etc/arena-test-public-{tag}"));
    let _cleanup = EtcFiles(vec![file.clone(), folder.clone(), open_file.clone()]);
    let write = |path: &Path, text: &str, mode: u32| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .unwrap();
    };
    write(&file, "wg-private-key-1\n", 0o600);
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    write(&folder.join("wg0.conf"), "wg-private-key-2\n", 0o644);
    write(&open_file, "public-config\n", 0o644);
    let script = format!(
        "cat {} {} {} 2>&1; echo \"listing:$(ls {} 2>&1 | tr '\\n' ' ')\"",
        file.display(),
        folder.join("wg0.conf").display(),
        open_file.display(),
        folder.display()
    );
    let (_dir, dir) = tempdir();
    let outside = text(&run(plain("/bin/sh", &["-c", &script], &dir)));
    assert!(outside.contains("wg-private-key-1") && outside.contains("wg-private-key-2"));
    let jail = jail_of(&[], &[&dir], &dir, Network::None);
    let inside = text(&run(jailed(&jail, "/bin/sh", &["-c", &script]).0));
    assert!(!inside.contains("wg-private-key"), "{inside}");
    assert!(inside.contains("public-config"), "{inside}");
    assert_eq!(field(&outside, "listing").trim(), "wg0.conf", "{outside}");
    assert_eq!(
        field(&inside, "listing"),
        "",
        "the folder is empty: {inside}"
    );
    let info = jail::probe().unwrap();
    assert!(
        info.to_string()
            .contains("root-only files and folders of /etc masked"),
        "{info}"
    );
}

/// A folder a jail reads (an installation, a toolchain) may hold the
/// user's tokens and keys beside what the program needs: they are hidden,
/// by name (`credentials.toml`, `.npmrc`, `.git-credentials`, `auth.json`,
/// `.ssh/`, `keyrings/`, …) and by content (a `*.pem` or `id_*` that holds a
/// private key), at any depth the walk reaches. A file given to the jail by
/// name (an agent's own sign-in) stays.
#[test]
fn credentials_in_a_read_folder_are_hidden() {
    if !have_bwrap("credentials") {
        return;
    }
    let (_dir, dir) = tempdir();
    let tool = dir.join("tool");
    let files: &[(&str, &str)] = &[
        ("credentials.toml", "SECRET-registry-token"),
        ("lib/node/.npmrc", "//host/:_authToken=SECRET-npm"),
        ("lib/.git-credentials", "https://u:SECRET-git@host"),
        ("lib/deep/er/.netrc", "machine host password SECRET-netrc"),
        (
            ".ssh/id_ed25519",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET-ssh",
        ),
        ("share/keyrings/login.keyring", "SECRET-keyring"),
        ("lib/server.pem", "-----BEGIN PRIVATE KEY-----\nSECRET-pem"),
        (
            "lib/certifi/cacert.pem",
            "-----BEGIN CERTIFICATE-----\nPUBLIC-ca",
        ),
        ("lib/id_generator.js", "PUBLIC-module"),
        ("bin/tool", "PUBLIC-program"),
        ("own/auth.json", "GIVEN-sign-in"),
    ];
    for (path, content) in files {
        let path = tool.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
    }
    let paths: Vec<String> = files
        .iter()
        .map(|(p, _)| tool.join(p).display().to_string())
        .collect();
    let script = format!(
        "for f in {}; do cat \"$f\"; echo; done 2>&1",
        paths.join(" ")
    );
    let outside = text(&run(plain("/bin/sh", &["-c", &script], &dir)));
    assert_eq!(outside.matches("SECRET").count(), 7, "{outside}");
    let given = tool.join("own/auth.json");
    let jail = jail_of(&[&tool, &given], &[], &tool, Network::None);
    let inside = text(&run(jailed(&jail, "/bin/sh", &["-c", &script]).0));
    assert!(!inside.contains("SECRET"), "{inside}");
    for public in [
        "PUBLIC-ca",
        "PUBLIC-module",
        "PUBLIC-program",
        "GIVEN-sign-in",
    ] {
        assert!(inside.contains(public), "{public}: {inside}");
    }
}

/// A check's toolchains: cargo's `registry/` and `config.toml` (linked
/// into a cargo home of its own), not the `credentials.toml` beside them.
#[test]
fn a_checks_cargo_home_has_the_registry_and_config_not_the_token() {
    if !have_bwrap("cargo-home") {
        return;
    }
    let (_dir, dir) = tempdir();
    let home = dir.join("home");
    let scratch = dir.join("scratch");
    for (rel, text) in [
        (".cargo/credentials.toml", "SECRET-token"),
        (".cargo/config.toml", "PUBLIC-config"),
        (".cargo/registry/index/marker", "PUBLIC-registry"),
        (".cargo/bin/tool", "PUBLIC-bin"),
    ] {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(&scratch).unwrap();
    let tools = arena_agent::sandbox::toolchains(Some(&home), |_| None, &scratch).unwrap();
    let cargo_home = &tools.env.iter().find(|(k, _)| k == "CARGO_HOME").unwrap().1;
    let script = format!(
        "for f in config.toml registry/index/marker bin/tool credentials.toml; do \
         cat {cargo_home}/$f; echo; done; cat {home}/.cargo/credentials.toml; true",
        home = home.display()
    );
    let read: Vec<&Path> = tools.read.iter().map(PathBuf::as_path).collect();
    let mut jail = jail_of(&read, &[&scratch], &scratch, Network::None);
    jail.layers = tools.layers.clone();
    let inside = text(&run(jailed(&jail, "/bin/sh", &["-c", &script]).0));
    for public in ["PUBLIC-config", "PUBLIC-registry", "PUBLIC-bin"] {
        assert!(inside.contains(public), "{public}: {inside}");
    }
    assert!(!inside.contains("SECRET"), "{inside}");
}

// The probe ------------------------------------------------------------------

#[test]
fn the_probe_builds_a_trial_jail_and_names_what_it_found() {
    if !have_bwrap("probe") {
        return;
    }
    let info = jail::probe().unwrap();
    let line = info.to_string();
    assert!(
        line.starts_with(&format!("bubblewrap {}", info.version)),
        "{line}"
    );
    assert!(info.version.split('.').count() >= 2, "{line}");
    let landlock = arena_agent::sandbox::abi_version();
    if landlock > 0 {
        assert!(line.contains(&format!("Landlock ABI {landlock}")), "{line}");
    }
    let version = Command::new(&info.bwrap).arg("--version").output().unwrap();
    assert!(text(&version).contains(&info.version));
}
