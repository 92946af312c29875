//! API keys in the OS keychain, through the engine.
//!
//! With `dbus-run-session` and `gnome-keyring-daemon` installed, the round
//! trip runs against a real Secret Service on a private session bus (this
//! test binary runs itself again inside `dbus-run-session`, with a
//! throw-away home for the keyring files). Without them it is skipped, with
//! a note; the unreachable-keychain path is tested either way.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use arena_core::battle::Lane;
use arena_core::config::{Config, ProviderConfig, ProviderKind, SettingsUpdate};
use arena_core::provider::KeySource;
use arena_core::{keychain, Engine, EngineOptions, Error};
use arena_testserver::TestServer;

/// Set in the run inside `dbus-run-session`.
const INNER: &str = "ARENA_KEYCHAIN_TEST_INNER";
/// The variable the test provider names in `api_key_env` (never set by the
/// environment the tests run in).
const KEY_VAR: &str = "ARENA_KEYCHAIN_TEST_KEY";

fn engine(data: &Path, base_url: String) -> Engine {
    let config = Config {
        providers: vec![ProviderConfig {
            api_key_env: Some(KEY_VAR.into()),
            ..ProviderConfig::new("cloud", ProviderKind::Openai, &base_url, Lane::Cloud)
        }],
        ..Config::default()
    };
    Engine::open(EngineOptions::local(data.to_path_buf(), config)).expect("engine")
}

async fn source(engine: &Engine) -> Option<KeySource> {
    engine.key_sources().await[0].1
}

/// The `Authorization` header of the last request the server received.
fn last_authorization(server: &TestServer) -> Option<String> {
    server.requests().last().and_then(|r| {
        r.headers
            .iter()
            .find(|(name, _)| name == "authorization")
            .map(|(_, value)| value.clone())
    })
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test]
async fn an_unreachable_keychain_is_explained_and_means_no_key() {
    if std::env::var_os(INNER).is_some() {
        return; // the inner run is for the round trip only
    }
    // Its own process: point the Secret Service at a bus that is not there.
    let status = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "unreachable_keychain_child", "--include-ignored"])
        .env(
            "DBUS_SESSION_BUS_ADDRESS",
            "unix:path=/nonexistent/arena-test-bus",
        )
        .status()
        .expect("run the child test");
    assert!(status.success(), "the child test failed");
}

#[tokio::test]
#[ignore = "run by an_unreachable_keychain_is_explained_and_means_no_key"]
async fn unreachable_keychain_child() {
    let server = TestServer::start().await.expect("test server");
    let data = tempfile::tempdir().expect("data dir");
    let engine = engine(data.path(), server.base_url());

    let err = engine
        .set_api_key("cloud", Some("sk-test"))
        .await
        .expect_err("no keychain to store in");
    assert!(matches!(err, Error::Keychain(_)), "{err:?}");
    assert_eq!(err.code(), "keychain");
    let message = err.to_string();
    assert!(message.contains("keychain is not available"), "{message}");
    assert!(message.contains("api_key_env"), "{message}");

    // Without a keychain a provider simply has no key…
    assert_eq!(source(&engine).await, None);
    engine.catalog().await;
    assert_eq!(last_authorization(&server), None);
    // …unless its variable is set.
    std::env::set_var(KEY_VAR, "sk-from-env");
    assert_eq!(source(&engine).await, Some(KeySource::Env));
    engine.catalog().await;
    assert_eq!(
        last_authorization(&server).as_deref(),
        Some("Bearer sk-from-env")
    );
}

#[test]
fn keys_are_stored_resolved_and_cleared_in_a_real_keychain() {
    if std::env::var_os(INNER).is_some() {
        return inner_round_trip();
    }
    if !installed("dbus-run-session") || !installed("gnome-keyring-daemon") {
        eprintln!(
            "skipped: the round trip needs dbus-run-session and gnome-keyring-daemon \
             (apt-get install dbus-daemon gnome-keyring)"
        );
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let exe = std::env::current_exe().expect("test binary");
    let output = Command::new("dbus-run-session")
        .arg("--")
        .arg(exe)
        .args([
            "--exact",
            "keys_are_stored_resolved_and_cleared_in_a_real_keychain",
            "--nocapture",
        ])
        .env(INNER, "1")
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_RUNTIME_DIR", home.path())
        .env_remove(KEY_VAR)
        .output()
        .expect("run dbus-run-session");
    assert!(
        output.status.success(),
        "the round trip failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Inside a private session bus: start GNOME Keyring, then store, resolve
/// and clear a key through the engine.
fn inner_round_trip() {
    let mut daemon = Command::new("gnome-keyring-daemon")
        .args(["--unlock", "--components=secrets"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start gnome-keyring-daemon");
    if let Some(mut stdin) = daemon.stdin.take() {
        use std::io::Write;
        stdin
            .write_all(b"arena-test-password")
            .expect("unlock the keyring");
    }
    daemon
        .wait()
        .expect("gnome-keyring-daemon forks and returns");
    // The daemon registers on the bus shortly after.
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(err) = keychain::get("arena-probe") {
        assert!(
            Instant::now() < deadline,
            "the keychain never came up: {err}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let server = TestServer::start().await.expect("test server");
        let data = tempfile::tempdir().expect("data dir");
        let engine = engine(data.path(), server.base_url());
        assert_eq!(source(&engine).await, None);

        engine
            .set_api_key("cloud", Some("  sk-in-keychain \n"))
            .await
            .expect("store the key");
        assert_eq!(
            keychain::get("cloud")
                .expect("read back")
                .map(|k| k.expose().to_string()),
            Some("sk-in-keychain".to_string())
        );
        assert_eq!(source(&engine).await, Some(KeySource::Keychain));
        engine.catalog().await;
        assert_eq!(
            last_authorization(&server).as_deref(),
            Some("Bearer sk-in-keychain")
        );

        // The environment variable wins when it is set.
        std::env::set_var(KEY_VAR, "sk-from-env");
        assert_eq!(source(&engine).await, Some(KeySource::Env));
        std::env::remove_var(KEY_VAR);

        // Renamed in the settings, the provider keeps its key.
        let mut renamed = engine.config().providers[0].clone();
        renamed.name = "cloud-2".into();
        engine
            .save_settings(
                &data.path().join("arena.toml"),
                SettingsUpdate {
                    default_model: None,
                    providers: vec![renamed.clone()],
                },
            )
            .await
            .expect("rename");
        assert_eq!(source(&engine).await, Some(KeySource::Keychain));
        assert!(keychain::get("cloud").expect("read").is_none());
        renamed.name = "cloud".into();
        engine
            .save_settings(
                &data.path().join("arena.toml"),
                SettingsUpdate {
                    default_model: None,
                    providers: vec![renamed],
                },
            )
            .await
            .expect("rename back");
        assert_eq!(source(&engine).await, Some(KeySource::Keychain));

        // Renamed and pointed at another host, it does not take the key
        // along: a key goes only where it was given for.
        let original = engine.config().providers[0].clone();
        let elsewhere = ProviderConfig {
            name: "cloud-elsewhere".into(),
            base_url: original.base_url.replace("127.0.0.1", "localhost"),
            ..original.clone()
        };
        for (provider, expected) in [(elsewhere, None), (original, Some(KeySource::Keychain))] {
            engine
                .save_settings(
                    &data.path().join("arena.toml"),
                    SettingsUpdate {
                        default_model: None,
                        providers: vec![provider],
                    },
                )
                .await
                .expect("rename with another host");
            assert_eq!(source(&engine).await, expected);
        }
        assert!(keychain::get("cloud-elsewhere").expect("read").is_none());

        engine.set_api_key("cloud", None).await.expect("clear");
        assert_eq!(source(&engine).await, None);
        assert!(keychain::get("cloud").expect("read").is_none());
        // Clearing twice is fine; unknown providers and blank keys are not.
        engine
            .set_api_key("cloud", None)
            .await
            .expect("clear again");
        let err = engine
            .set_api_key("nobody", Some("k"))
            .await
            .expect_err("unknown provider");
        assert_eq!(err.code(), "not_found");
        let err = engine
            .set_api_key("cloud", Some("  "))
            .await
            .expect_err("blank key");
        assert_eq!(err.code(), "invalid_input");
    });
}
