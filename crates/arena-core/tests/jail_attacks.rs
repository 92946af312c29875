//! The jail, attacked: an agent (a `[[backend]]` script) and the check
//! command it wrote try every way out the README's sandbox table closes —
//! `/dev/shm`, raw devices, a daemon that outlives the run, the host's
//! loopback and UDP, path and abstract UNIX sockets, Arena's own
//! `/proc/<pid>/environ` and the provider's key — on the real kernel with
//! the real bubblewrap. Each attempt prints `blocked NAME` or `ESCAPED NAME`.

mod common;

use std::path::Path;
use std::time::Duration;

use arena_core::battle::ContestantStatus;
use arena_core::config::CustomBackend;
use arena_core::Battle;
use arena_testserver::ModelScript;
use common::*;

/// The cloud provider's key, in Arena's environment only.
const KEY: &str = "sk-arena-test-real-key-7Q2";

fn jail_ready() -> bool {
    match arena_core::agent::jail::jail_info() {
        Ok(_) => true,
        Err(why) => {
            // CI installs bubblewrap; a machine without it skips.
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail: {why}"
            );
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// The harness's engine with the `fake` backend running `script`, and the
/// providers' key in Arena's environment.
fn configure(h: &mut Harness, script: &str) {
    // SAFETY: set once, before any thread of this test binary reads it.
    unsafe { std::env::set_var("ARENA_TEST_CLOUD_KEY", KEY) };
    let command = vec!["bash".into(), "-c".into(), script.to_string()];
    h.reconfigure(|config| {
        config.backends = vec![CustomBackend {
            name: "fake".into(),
            command,
        }];
        for p in &mut config.providers {
            p.api_key_env = Some("ARENA_TEST_CLOUD_KEY".into());
        }
    });
    h.cloud.set_model("m1", ModelScript::tokens(1));
    h.cloud.set_model("m2", ModelScript::tokens(1));
}

async fn battle(h: &Harness, project: &Path, check: Option<&str>) -> Battle {
    run_coding(h, project, &["fake@m1", "fake@m2"], check).await
}

const TRY: &str = r#"try() { if timeout 5 sh -c "$2" >/dev/null 2>&1; then echo "ESCAPED $1"; else echo "blocked $1"; fi; }
"#;

fn assert_blocked(text: &str, names: &[&str]) {
    assert!(!text.contains("ESCAPED"), "{text}");
    for name in names {
        assert!(text.contains(&format!("blocked {name}")), "{name}: {text}");
    }
}

#[tokio::test]
async fn an_agent_and_its_check_find_no_way_out_of_the_jail() {
    if !jail_ready() {
        return;
    }
    let shm = format!("/dev/shm/arena-test-{}", std::process::id());
    std::fs::write(&shm, "another program's secret\n").unwrap();
    // A path UNIX socket (a session bus stand-in) and an abstract one.
    let sockets = tempfile::tempdir().unwrap();
    let bus = sockets.path().join("bus");
    let _bus = std::os::unix::net::UnixListener::bind(&bus).unwrap();
    let abstract_name = format!("arena-test-bus-{}", std::process::id());
    let _abstract = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let v6 = std::net::TcpListener::bind("[::1]:0").ok();

    let mut h = Harness::new().await;
    let provider_port = h.cloud.addr().port();
    let v6_port = v6
        .as_ref()
        .map(|l| l.local_addr().unwrap().port())
        .unwrap_or(1);
    let probes = format!(
        r#"{TRY}
/usr/bin/python3 -c 'import socket; print("python works")'
try shm-read "cat {shm}"
echo left > /dev/shm/arena-left-{pid} 2>/dev/null
try raw-disk "ls /dev/vda /dev/sda /dev/nvme0n1 2>/dev/null | grep ."
try fuse "test -e /dev/fuse"
try tun "test -e /dev/net/tun"
try tty "exec 3<>/dev/tty"
try run-user "ls /run/user | grep ."
try path-socket "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{bus}\")'"
try abstract-socket "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0{abstract_name}\")'"
try udp "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"x\", (\"127.0.0.1\", {udp_port}))' && false"
try loopback-provider "exec 3<>/dev/tcp/127.0.0.1/{provider_port}"
try ipv6-loopback "exec 3<>/dev/tcp/::1/{v6_port}"
try arena-environ "grep -a ARENA_TEST_CLOUD_KEY /proc/{pid}/environ"
try any-environ "cat /proc/*/environ | grep -a {KEY}"
try key-in-env "env | grep -a {KEY}"
"#,
        pid = std::process::id(),
        bus = bus.display(),
    );
    // The agent: the probes, then the provider through its one door, and a
    // daemon that would outlive it.
    let script = format!(
        r#"{probes}
echo "key: $OPENAI_API_KEY"
exec 3<>/dev/tcp/127.0.0.1/41414 && printf 'GET /v1/models HTTP/1.0\r\nHost: x\r\n\r\n' >&3 && grep -q '"data"' <&3 && echo "reached the provider through the door"
setsid sh -c 'while :; do date +%s%N >> beat; sleep 0.05; done' </dev/null >/dev/null 2>&1 &
sleep 0.3
printf '%s\n' "$(cat <<'EOF'
{probes}
EOF
)" > check.sh
echo done
"#
    );
    configure(&mut h, &script);
    let project = repo();
    let b = battle(&h, project.path(), Some("bash check.sh")).await;
    let names = [
        "shm-read",
        "raw-disk",
        "fuse",
        "tun",
        "tty",
        "run-user",
        "path-socket",
        "abstract-socket",
        "udp",
        "loopback-provider",
        "ipv6-loopback",
        "arena-environ",
        "any-environ",
        "key-in-env",
    ];
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let out = c.output.clone().unwrap_or_default();
        assert_blocked(&out, &names);
        assert!(
            out.contains("reached the provider through the door"),
            "{out}"
        );
        assert!(out.contains("key: arena-relay-no-key-here"), "{out}");
        let check = c.check.as_ref().expect("the check ran");
        assert_blocked(&check.output_tail, &names);
        assert!(
            check.output_tail.contains("python works"),
            "{}",
            check.output_tail
        );
    }
    // The provider got the real key, from the relay.
    let asked = h.cloud.requests();
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|r| r
        .headers
        .iter()
        .any(|(k, v)| k == "authorization" && v == &format!("Bearer {KEY}"))));
    // No datagram arrived; nothing was left in /dev/shm.
    let mut buf = [0u8; 8];
    assert!(udp.recv_from(&mut buf).is_err(), "a datagram got out");
    assert!(!Path::new(&format!("/dev/shm/arena-left-{}", std::process::id())).exists());
    // The daemon died with its jail: the heartbeat stops.
    for c in &b.contestants {
        let beat = c.worktree.clone().unwrap().join("beat");
        let before = std::fs::metadata(&beat).map(|m| m.len()).unwrap_or(0);
        assert!(before > 0, "the daemon never ran");
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = std::fs::metadata(&beat).map(|m| m.len()).unwrap_or(0);
        assert_eq!(before, after, "a daemon outlived the run");
    }
    let _ = std::fs::remove_file(&shm);
}

/// Ordinary checks still work in the jail: `npm test` (node and npm from
/// the system, its cache in the scratch home, no network), Python's
/// `unittest`, and `pytest` from a virtualenv (the peers' one, made by
/// `scripts/peers.sh`: the check reads the installation of the program it
/// starts with).
#[tokio::test]
async fn ordinary_checks_pass_in_the_jail() {
    if !jail_ready() {
        return;
    }
    let has_npm = std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut h = Harness::new().await;
    configure(&mut h, "echo 'edited' >> NOTES.md; echo done");
    let project = repo();
    let p = project.path();
    std::fs::write(
        p.join("package.json"),
        r#"{"name": "demo", "version": "1.0.0", "scripts": {"test": "node test.js"}}"#,
    )
    .unwrap();
    std::fs::write(
        p.join("test.js"),
        "const assert = require('assert'); assert.strictEqual(1 + 1, 2); console.log('node tests passed');\n",
    )
    .unwrap();
    std::fs::write(
        p.join("test_demo.py"),
        "import unittest\n\nclass Demo(unittest.TestCase):\n    def test_sum(self):\n        self.assertEqual(1 + 1, 2)\n",
    )
    .unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "tests"]);
    let venv_python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/venv/bin/python");
    let venv_python = arena_core::agent::sandbox::lexical(&venv_python);
    let has_pytest = std::process::Command::new(&venv_python)
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pytest {
        assert!(
            std::env::var_os("ARENA_REQUIRE_PEERS").is_none(),
            "no pytest in {} (scripts/peers.sh installs it)",
            venv_python.display()
        );
        eprintln!("pytest not run: no {}", venv_python.display());
    }
    let mut check = String::new();
    if has_npm {
        check.push_str("npm test && ");
    }
    if has_pytest {
        check.push_str(&format!("{} -m pytest -v 2>&1 && ", venv_python.display()));
    }
    // A `python3` found through a version manager's shim (pyenv's, as on
    // the test machines) runs the interpreter it manages.
    let shim = arena_core::backend::locate("python3")
        .is_some_and(|p| p.parent().is_some_and(|d| d.ends_with("shims")));
    if shim {
        check.push_str("python3 -c 'print(\"shim python works\")' && ");
    }
    check.push_str("/usr/bin/python3 -m unittest -v 2>&1 && echo ALL-GREEN");
    let check = check.as_str();
    let b = battle(&h, p, Some(check)).await;
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let check = c.check.as_ref().unwrap();
        assert!(check.passed, "{check:?}");
        assert!(check.output_tail.contains("ALL-GREEN"), "{check:?}");
        if has_npm {
            assert!(check.output_tail.contains("node tests passed"), "{check:?}");
        }
        assert!(check.output_tail.contains("test_sum"), "{check:?}");
        if has_pytest {
            assert!(check.output_tail.contains("1 passed"), "{check:?}");
        }
        if shim {
            assert!(check.output_tail.contains("shim python works"), "{check:?}");
        }
    }
}

/// An agent that keeps its own configuration (its model is not served by
/// one of your providers) keeps the host's network — it talks to its own
/// service — but still reaches no UNIX socket outside: not a path one (not
/// bound) and, where the kernel has Landlock scoping, not an abstract one.
#[tokio::test]
async fn a_self_configured_agent_keeps_the_network_but_reaches_no_local_socket() {
    if !jail_ready() {
        return;
    }
    let sockets = tempfile::tempdir().unwrap();
    let bus = sockets.path().join("bus");
    let _bus = std::os::unix::net::UnixListener::bind(&bus).unwrap();
    let abstract_name = format!("arena-test-own-{}", std::process::id());
    let _abstract = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let service_port = service.local_addr().unwrap().port();
    let scoped = arena_core::agent::sandbox::abi_version() >= 6;
    let script = format!(
        r#"{TRY}
try path-socket "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{bus}\")'"
try abstract-socket "/usr/bin/python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0{abstract_name}\")'"
if bash -c 'exec 3<>/dev/tcp/127.0.0.1/{service_port}'; then echo "reached its own service"; fi
echo "key: [${{OPENAI_API_KEY:-}}]"
"#,
        bus = bus.display()
    );
    let mut h = Harness::new().await;
    configure(&mut h, &script);
    let project = repo();
    let b = run_coding(&h, project.path(), &["fake@its-own-model", "fake@m1"], None).await;
    let own = &b.contestants[0];
    assert_eq!(own.status, ContestantStatus::Done, "{:?}", own.error);
    let out = own.output.clone().unwrap_or_default();
    assert!(out.contains("blocked path-socket"), "{out}");
    if scoped {
        assert!(out.contains("blocked abstract-socket"), "{out}");
    }
    assert!(out.contains("reached its own service"), "{out}");
    assert!(!out.contains(KEY), "{out}");
}

/// The real rustup binary behind `cargo` on `PATH` (`~/.cargo/bin/cargo`
/// is a link to it), if there is one.
fn real_rustup() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("cargo"))
        .find(|c| c.is_file())
        .and_then(|c| c.canonicalize().ok())
        .filter(|r| r.file_name().is_some_and(|n| n == "rustup"))
}

/// A user's home in a temporary folder, the shape of a real one: `HOME`
/// then the folders under it.
struct FakeHome {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl FakeHome {
    fn new() -> FakeHome {
        // Not under /tmp, where a jail would see its own /tmp instead.
        let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fake-homes");
        std::fs::create_dir_all(&base).unwrap();
        let dir = tempfile::tempdir_in(&base).unwrap();
        let path = dir.path().canonicalize().unwrap();
        FakeHome { _dir: dir, path }
    }

    fn write(&self, rel: &str, text: &str) -> std::path::PathBuf {
        let path = self.path.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// Issue 37: for a check `cargo test`, `cargo` lives in `~/.cargo/bin`,
/// and the jail bound "the folder above `bin`", all of `~/.cargo`: the
/// agent's code, run by the check, printed the registry token from
/// `credentials.toml`. Through a real `~/.cargo/bin/cargo` (rustup's
/// proxy, hard-linked as rustup installs it) the check builds and tests,
/// and the token beside it is out of reach.
#[tokio::test]
async fn a_check_through_cargo_in_a_cargo_home_cannot_read_the_registry_token() {
    if !jail_ready() {
        return;
    }
    let Some(rustup) = real_rustup() else {
        eprintln!("skipped: no rustup behind `cargo` on PATH");
        return;
    };
    let home = FakeHome::new();
    let bin = home.path.join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    if std::fs::hard_link(&rustup, bin.join("rustup")).is_err() {
        std::fs::copy(&rustup, bin.join("rustup")).unwrap();
    }
    std::fs::hard_link(bin.join("rustup"), bin.join("cargo")).unwrap();
    let token = home.write(
        ".cargo/credentials.toml",
        "[registry]\ntoken = \"SECRET-cargo-registry-token\"\n",
    );
    home.write(".cargo/config.toml", "[net]\noffline = true\n");
    home.write(".git-credentials", "https://u:SECRET-git@example.invalid\n");

    let mut h = Harness::new().await;
    configure(&mut h, "echo 'edited' >> NOTES.md; echo done");
    let project = repo();
    let p = project.path();
    std::fs::write(
        p.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(p.join("src")).unwrap();
    // The agent's code, run by the check: it prints whatever it can read.
    std::fs::write(
        p.join("src/lib.rs"),
        format!(
            r#"#[test]
fn steal() {{
    for path in [{token:?}, {git:?}] {{
        match std::fs::read_to_string(path) {{
            Ok(text) => println!("STOLEN {{text}}"),
            Err(e) => println!("refused {{path}}: {{e}}"),
        }}
    }}
}}
"#,
            token = token.display().to_string(),
            git = home.path.join(".git-credentials").display().to_string(),
        ),
    )
    .unwrap();
    git(p, &["add", "."]);
    git(p, &["commit", "-q", "-m", "a crate"]);
    let check = format!(
        "{cargo} test --offline -q -- --nocapture 2>&1 && echo TESTED; cat {token} 2>&1; \
         ls {home}/.cargo 2>&1",
        cargo = bin.join("cargo").display(),
        token = token.display(),
        home = home.path.display(),
    );
    let b = battle(&h, p, Some(&check)).await;
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let out = &c.check.as_ref().expect("the check ran").output_tail;
        assert!(
            out.contains("TESTED"),
            "cargo test ran through the proxy: {out}"
        );
        assert!(out.contains("refused"), "{out}");
        assert!(!out.contains("SECRET"), "{out}");
        assert!(!out.contains("credentials.toml\n"), "{out}");
    }
}

/// The same for a program in `~/.local/bin`: the jail bound all of
/// `~/.local`, with `share/keyrings` (the desktop's key ring) and
/// whatever tokens lie there. It gets its `bin` and the `lib` it loads
/// from; a token file in that `lib` is hidden; a virtualenv's Python
/// still runs with its own packages.
#[tokio::test]
async fn a_check_through_a_program_in_local_bin_reads_its_lib_not_the_keyring() {
    if !jail_ready() {
        return;
    }
    let home = FakeHome::new();
    let keyring = home.write(".local/share/keyrings/login.keyring", "SECRET-keyring");
    let creds = home.write(
        ".local/lib/tool/.git-credentials",
        "https://u:SECRET-git@example.invalid",
    );
    let module = home.write(".local/lib/tool/module.txt", "PUBLIC-module");
    let prog = home.write(
        ".local/bin/tool",
        &format!(
            "#!/bin/sh\nfor f in {} {} {}; do cat \"$f\" 2>&1; echo; done\necho tool-ran\n",
            keyring.display(),
            creds.display(),
            module.display()
        ),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let venv = home.path.join("venv");
    let has_venv = std::process::Command::new("/usr/bin/python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .is_ok_and(|s| s.success());
    if has_venv {
        let site = std::fs::read_dir(venv.join("lib"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path()
            .join("site-packages");
        std::fs::write(site.join("venvmod.py"), "WHERE = 'from-the-venv'\n").unwrap();
    }
    let mut h = Harness::new().await;
    configure(&mut h, "echo 'edited' >> NOTES.md; echo done");
    let project = repo();
    let mut check = format!("{}", prog.display());
    if has_venv {
        check.push_str(&format!(
            " && {}/bin/python -c 'import venvmod; print(venvmod.WHERE)'",
            venv.display()
        ));
    }
    let b = battle(&h, project.path(), Some(&check)).await;
    for c in &b.contestants {
        assert_eq!(c.status, ContestantStatus::Done, "{:?}", c.error);
        let out = &c.check.as_ref().expect("the check ran").output_tail;
        assert!(
            out.contains("tool-ran") && out.contains("PUBLIC-module"),
            "{out}"
        );
        assert!(!out.contains("SECRET"), "{out}");
        if has_venv {
            assert!(out.contains("from-the-venv"), "{out}");
        }
    }
}
