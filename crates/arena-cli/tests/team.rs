//! Team mode from the command line: `arena status`, a team database named
//! by `ARENA_DATABASE_URL` shared by two "machines" (two data directories,
//! two `ARENA_MACHINE`s), the one-line refusals at start, and the password
//! kept by `arena database login`.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{output, stdout, Setup};
use serde_json::Value;

/// `setup`'s `arena` as machine `machine` on the team database `url`, with
/// its own data directory.
fn on_team(setup: &Setup, machine: &str, url: &str, password: &str, args: &[&str]) -> Command {
    let mut cmd = setup.command(args);
    cmd.env(
        "ARENA_DATA_DIR",
        setup.dir.path().join(format!("data-{machine}")),
    )
    .env("ARENA_MACHINE", machine)
    .env("ARENA_DATABASE_URL", url)
    .env("ARENA_DATABASE_PASSWORD", password);
    cmd
}

fn json_of(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).expect("JSON")
}

/// Runs `cmd`, which must fail within 8 s: what it printed, one line.
async fn quick_failure(cmd: Command) -> String {
    let started = Instant::now();
    let out = output(cmd).await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    one_line_failure(&out)
}

/// What an `arena` that had to fail printed: one line on standard error.
fn one_line_failure(out: &Output) -> String {
    assert!(!out.status.success(), "it should have failed");
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert_eq!(err.lines().count(), 1, "one line, not: {err}");
    err
}

#[tokio::test]
async fn status_names_the_database_and_the_machine() {
    let setup = Setup::new().await;
    let mut cmd = setup.command(&["status"]);
    cmd.env("ARENA_MACHINE", "alpha");
    let text = stdout(&output(cmd).await);
    assert!(text.contains("database: SQLite"), "{text}");
    assert!(text.contains("data/arena.db"), "{text}");
    assert!(text.contains("machine:  alpha"), "{text}");

    let status = setup.json(&["status", "--json"]).await;
    assert_eq!(status["database"]["backend"], "sqlite");
    assert!(status["database"]["schema"].as_i64().unwrap() >= 15);

    let mut bad = setup.command(&["status"]);
    bad.env("ARENA_MACHINE", "alpha laptop");
    let err = one_line_failure(&output(bad).await);
    assert!(err.contains("ARENA_MACHINE"), "{err}");
}

#[tokio::test]
async fn two_machines_on_one_team_database_see_each_others_battles() {
    let Some(cluster) = arena_testdb::Cluster::for_test("two_machines_on_one_team_database") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let (url, password) = (cluster.url(&db), cluster.password().to_string());
    let setup = Setup::new().await;
    setup
        .cloud
        .set_model("m1", arena_testserver::ModelScript::text("One."));
    setup
        .cloud
        .set_model("m2", arena_testserver::ModelScript::text("Two."));

    let status = json_of(
        &output(on_team(
            &setup,
            "alpha",
            &url,
            &password,
            &["status", "--json"],
        ))
        .await,
    );
    assert_eq!(status["database"]["backend"], "postgresql");
    assert_eq!(status["database"]["location"], url.as_str());
    assert!(
        status["database"]["schema"].as_i64().unwrap() >= 2,
        "{status}"
    );
    assert_eq!(status["machine"], "alpha");

    let project = setup.project();
    let run = output(on_team(
        &setup,
        "alpha",
        &url,
        &password,
        &[
            "battle",
            "run",
            "--type",
            "qa",
            "--json",
            "--prompt",
            "Say a number.",
            "--project",
            project.to_str().unwrap(),
            "-c",
            "explainer@m1",
            "-c",
            "debugger@m2",
        ],
    ))
    .await;
    let battle = json_of(&run);
    assert_eq!(battle["status"], "done");
    // Nothing of it in alpha's data directory: the team database has it…
    assert!(!setup.dir.path().join("data-alpha/arena.db").exists());
    // …and beta, another machine with its own data directory, sees it whole.
    let list = json_of(
        &output(on_team(
            &setup,
            "beta",
            &url,
            &password,
            &["battle", "list", "--json"],
        ))
        .await,
    );
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let id = battle["id"].as_str().unwrap();
    let shown = json_of(
        &output(on_team(
            &setup,
            "beta",
            &url,
            &password,
            &["battle", "show", id, "--output", "--json"],
        ))
        .await,
    );
    let outputs: Vec<&str> = shown["contestants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["output"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outputs, ["One.", "Two."], "{shown}");
    // Beta sees that alpha ran it.
    assert_eq!(shown["machine"], "alpha", "{shown}");
}

#[tokio::test]
async fn a_wrong_password_or_an_unreachable_database_is_one_line_at_start() {
    let Some(cluster) = arena_testdb::Cluster::for_test("wrong_password_or_unreachable") else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let setup = Setup::new().await;

    let wrong = "not-the-password-4711";
    let err = quick_failure(on_team(
        &setup,
        "alpha",
        &cluster.url(&db),
        wrong,
        &["status"],
    ))
    .await;
    assert!(err.contains("password"), "{err}");
    assert!(err.contains(&cluster.url(&db)), "{err}");
    assert!(
        !err.contains(wrong),
        "the password tried is never shown: {err}"
    );
    assert!(!err.contains(cluster.password()), "{err}");

    // A port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let url = format!("postgres://arena@127.0.0.1:{port}/arena");
    let err = quick_failure(on_team(
        &setup,
        "alpha",
        &url,
        "whatever",
        &["battle", "list"],
    ))
    .await;
    assert!(err.contains("refused"), "{err}");

    // A password in the URL is refused before anything is tried.
    let mut cmd = setup.command(&["status"]);
    cmd.env(
        "ARENA_DATABASE_URL",
        format!("postgres://arena:{wrong}@127.0.0.1:{port}/arena"),
    );
    let err = one_line_failure(&output(cmd).await);
    assert!(err.contains("must not contain the password"), "{err}");
    assert!(!err.contains(wrong), "{err}");
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `arena database login` checks the password against the database and
/// keeps it in the OS keychain (a real Secret Service on a private session
/// bus), where `arena` finds it from then on; a wrong one is not kept.
#[tokio::test]
async fn database_login_keeps_a_checked_password_in_the_keychain() {
    let Some(cluster) = arena_testdb::Cluster::for_test("database_login") else {
        return;
    };
    if !installed("dbus-run-session") || !installed("gnome-keyring-daemon") {
        eprintln!("skipped: needs dbus-run-session and gnome-keyring-daemon");
        return;
    }
    let db = cluster.create_database().unwrap();
    let setup = Setup::new().await;
    let home = tempfile::tempdir().unwrap();
    // Inside the session: unlock a keyring, wait for it, then the steps.
    let script = r#"
        printf 'arena-test' | gnome-keyring-daemon --unlock --components=secrets >/dev/null
        for _ in $(seq 50); do
          "$ARENA" database logout >/dev/null 2>&1 && break
          sleep 0.2
        done
        echo "--- wrong"
        printf 'wrong-password\n' | "$ARENA" database login 2>&1
        echo "--- status without"
        "$ARENA" status 2>&1
        echo "--- right"
        printf '%s\n' "$RIGHT" | "$ARENA" database login 2>&1
        echo "--- status with"
        "$ARENA" status 2>&1
    "#;
    let mut cmd = Command::new("dbus-run-session");
    cmd.args(["--", "sh", "-c", script])
        .env("ARENA", env!("CARGO_BIN_EXE_arena"))
        .env("RIGHT", cluster.password())
        .env("ARENA_CONFIG", setup.dir.path().join("arena.toml"))
        .env("ARENA_DATA_DIR", setup.dir.path().join("data"))
        .env("ARENA_DATABASE_URL", cluster.url(&db))
        .env_remove("ARENA_DATABASE_PASSWORD")
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_RUNTIME_DIR", home.path());
    let out = output(cmd).await;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let part = |name: &str| {
        let start = text
            .find(&format!("--- {name}\n"))
            .unwrap_or_else(|| panic!("{text}"));
        let rest = &text[start + name.len() + 5..];
        rest[..rest.find("--- ").unwrap_or(rest.len())].to_string()
    };
    assert!(
        part("wrong").contains("password authentication failed"),
        "{text}"
    );
    assert!(
        part("status without").contains("arena database login"),
        "{text}"
    );
    assert!(part("right").contains("is in the OS keychain"), "{text}");
    assert!(
        part("status with").contains("database: PostgreSQL"),
        "{text}"
    );
    assert!(!text.contains(cluster.password()), "{text}");
}

#[tokio::test]
async fn a_machine_name_another_computer_uses_is_refused() {
    let Some(cluster) = arena_testdb::Cluster::for_test("a_machine_name_another_computer_uses")
    else {
        return;
    };
    let db = cluster.create_database().unwrap();
    let (url, password) = (cluster.url(&db), cluster.password().to_string());
    let setup = Setup::new().await;
    let as_computer = |boot: &str| {
        let mut cmd = on_team(&setup, "alpha", &url, &password, &["status"]);
        cmd.env("ARENA_BOOT_ID", boot);
        cmd
    };
    // The first computer claims `alpha`; its own processes share it.
    stdout(&output(as_computer("boot-one")).await);
    stdout(&output(as_computer("boot-one")).await);
    // Another computer under the same name is refused, in one line that
    // says what to do; under a name of its own it is welcome.
    let err = quick_failure(as_computer("boot-two")).await;
    assert!(
        err.contains("`alpha` is in use") && err.contains("ARENA_MACHINE"),
        "{err}"
    );
    let mut own = on_team(&setup, "beta", &url, &password, &["status"]);
    own.env("ARENA_BOOT_ID", "boot-two");
    stdout(&output(own).await);
    // A computer restarted (a new boot) takes its name back once the old
    // boot's claim has lapsed.
    cluster
        .psql(
            &db,
            "UPDATE live.machines SET seen_at = seen_at - 120000 WHERE name = 'alpha'",
        )
        .unwrap();
    stdout(&output(as_computer("boot-two")).await);
}
