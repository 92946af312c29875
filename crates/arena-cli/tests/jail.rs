//! The jail as a user meets it, through the real `arena` binary: an agent
//! cannot type into the terminal `arena battle run` runs in (TIOCSTI), and
//! nothing it starts survives Arena — not even when Arena is SIGKILLed.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arena_testserver::ModelScript;
use common::*;

fn jail_ready() -> bool {
    match arena_core::agent::jail::jail_info() {
        Ok(_) => true,
        Err(why) => {
            assert!(
                std::env::var_os("ARENA_REQUIRE_JAIL").is_none(),
                "no jail: {why}"
            );
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// A git project, and `[[backend]] name = "attacker"` running `script`
/// (plus `extra` lines for `[limits]`).
fn setup_attacker(s: &Setup, script: &str, limits: &str) -> PathBuf {
    let project = s.project();
    std::fs::remove_dir_all(project.join(".git")).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.email", "arena@example.invalid"],
        &["config", "user.name", "Arena Test"],
    ] {
        assert!(Command::new("git")
            .args(args)
            .current_dir(&project)
            .status()
            .unwrap()
            .success());
    }
    std::fs::write(project.join("README.md"), "hello\n").unwrap();
    for args in [&["add", "."][..], &["commit", "-q", "-m", "initial"]] {
        assert!(Command::new("git")
            .args(args)
            .current_dir(&project)
            .status()
            .unwrap()
            .success());
    }
    let config = s.dir.path().join("arena.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(limits);
    text.push_str(&format!(
        "\n[[backend]]\nname = \"attacker\"\ncommand = [\"bash\", \"-c\", {}, \"{{prompt}}\"]\n",
        toml_string(script)
    ));
    std::fs::write(&config, text).unwrap();
    s.cloud.set_model("m1", ModelScript::tokens(1));
    s.cloud.set_model("m2", ModelScript::tokens(1));
    project
}

fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

fn run_args(project: &Path) -> Vec<String> {
    [
        "battle",
        "run",
        "--type",
        "coding",
        "--no-analysis",
        "--prompt",
        "go",
        "--project",
        project.to_str().unwrap(),
        "-c",
        "attacker@m1",
        "-c",
        "attacker@m2",
    ]
    .map(String::from)
    .to_vec()
}

/// Runs `arena battle run` on a terminal (`script`), then reads one line
/// from that terminal: what an agent pushed into it with TIOCSTI would be
/// that line.
async fn typed_after_the_run(s: &Setup, project: &Path) -> String {
    let arena = env!("CARGO_BIN_EXE_arena");
    let args: Vec<String> = run_args(project).iter().map(|a| format!("'{a}'")).collect();
    let line = format!(
        "'{arena}' {} >/dev/null 2>&1; read -t 2 typed; echo \"TYPED:[$typed]\"",
        args.join(" ")
    );
    let mut cmd = Command::new("script");
    // `script` runs the line with $SHELL (sh when unset, as on CI), and
    // `read -t` is bash's.
    cmd.args(["-q", "-e", "-c", &line, "/dev/null"])
        .env("SHELL", "/bin/bash")
        .env("ARENA_CONFIG", s.dir.path().join("arena.toml"))
        .env("ARENA_DATA_DIR", s.dir.path().join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = cmd.spawn().unwrap();
        // Keep the terminal's input open (not at its end) while it runs.
        let stdin = child.stdin.take();
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        out
    })
    .await
    .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const TIOCSTI: &str = r#"python3 - <<'EOF'
import fcntl, os, termios
try:
    fd = os.open("/dev/tty", os.O_RDWR)
except OSError as e:
    print("no tty:", e); raise SystemExit(0)
for c in b"echo PWNED\n":
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
    except OSError as e:
        print("TIOCSTI refused:", e); break
EOF
"#;

#[tokio::test]
async fn an_agent_cannot_type_into_the_users_terminal() {
    if !jail_ready() || Command::new("script").arg("--version").output().is_err() {
        return;
    }
    let s = Setup::new().await;
    let project = setup_attacker(&s, TIOCSTI, "");
    let seen = typed_after_the_run(&s, &project).await;
    assert!(seen.contains("TYPED:[]"), "{seen}");
    assert!(!seen.contains("PWNED"), "{seen}");

    // Without the sandbox the same agent gets through (so the test sees
    // an attack that works).
    let s = Setup::new().await;
    let project = setup_attacker(&s, TIOCSTI, "sandbox = \"off\"\n");
    let seen = typed_after_the_run(&s, &project).await;
    // Both attackers type at once, so their letters may interleave.
    let typed = seen
        .split_once("TYPED:[")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(typed, _)| typed)
        .unwrap_or_default();
    assert!("PWNED".chars().all(|c| typed.contains(c)), "{seen}");
}

/// The heartbeat files of daemons the agents left, under the data dir.
fn beats(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(battles) = std::fs::read_dir(data.join("worktrees")) else {
        return out;
    };
    for battle in battles.flatten() {
        for wt in std::fs::read_dir(battle.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let beat = wt.path().join("beat");
            if beat.exists() {
                out.push(beat);
            }
        }
    }
    out
}

fn sizes(files: &[PathBuf]) -> Vec<u64> {
    files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .collect()
}

#[tokio::test]
async fn nothing_an_agent_starts_survives_a_killed_arena() {
    if !jail_ready() {
        return;
    }
    let s = Setup::new().await;
    let daemon = "setsid sh -c 'while :; do date +%s%N >> beat; sleep 0.05; done' \
                  </dev/null >/dev/null 2>&1 & sleep 60";
    // The limit on `sandbox = "off"` is what makes the kill needed: off, a
    // setsid daemon escapes its process group.
    let project = setup_attacker(&s, daemon, "");
    let args = run_args(&project);
    let mut arena = s
        .command(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let data = s.dir.path().join("data");
    let deadline = Instant::now() + Duration::from_secs(30);
    let files = loop {
        let found = beats(&data);
        if found.len() == 2 && sizes(&found).iter().all(|n| *n > 0) {
            break found;
        }
        assert!(Instant::now() < deadline, "the daemons never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    arena.kill().unwrap();
    arena.wait().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = sizes(&files);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(before, sizes(&files), "a daemon outlived the killed arena");
}

/// Inside the jail, Landlock is a second layer over the same folders and
/// ports, applied by the `arena` binary before it becomes the agent: a
/// port the agent opens in its own namespace is still not one it may
/// connect to (only the door is), while the door works.
#[tokio::test]
async fn landlock_is_a_second_layer_inside_the_jail() {
    if !jail_ready() || arena_core::agent::sandbox::abi_version() < 4 {
        return;
    }
    let s = Setup::new().await;
    let script = r#"
/usr/bin/python3 - <<'PY'
import socket
server = socket.socket()
server.bind(("127.0.0.1", 5555))
server.listen()
client = socket.socket()
try:
    client.connect(("127.0.0.1", 5555))
    print("inner-connect ESCAPED")
except OSError as e:
    print("inner-connect blocked", e.errno)
door = socket.socket()
door.connect(("127.0.0.1", 41414))
print("the door opens")
PY
"#;
    let project = setup_attacker(&s, script, "");
    let args = run_args(&project);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.push("--json");
    let b = s.json(&args).await;
    for c in b["contestants"].as_array().unwrap() {
        assert_eq!(c["status"], "done", "{c:#}");
        let out = c["output"].as_str().unwrap_or("");
        assert!(out.contains("inner-connect blocked 13"), "{out}");
        assert!(out.contains("the door opens"), "{out}");
    }
}
