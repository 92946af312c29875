//! Reaching a team database, attacked: what `Store::open_postgres` promises
//! (`src/team.rs`) checked against a real server (`arena-testdb`) and
//! against sockets that misbehave on purpose.
//!
//! - A refusal (wrong or missing password, nothing listening, a server that
//!   never answers) comes back within seconds as one line that names the
//!   URL, says what to do, and never holds the password.
//! - A URL with a password in it, or an `sslmode` Arena does not know, is
//!   refused before anything is sent anywhere.
//! - TLS as `sslmode` says, the certificate always verified (chain and host
//!   name) against the web's roots plus `sslrootcert`.
//! - A connection lost to a restart or a crash is made again: one call may
//!   fail, the next works, and the data is still there.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arena_domain::battle::{BattleType, Lane, RunSpec};
use arena_store::{Error, NewBattle, NewContestant, SqlValue, Store};
use arena_testdb::Cluster;

/// How long a failed open may take (the store's own limit is 5 s).
const PROMPT: Duration = Duration::from_secs(8);

/// `f`, and how long it took.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

/// Opens `url` on a thread of its own, failing the test (rather than
/// hanging it) when that takes longer than [`PROMPT`].
fn open_within_prompt(url: &str, password: Option<&str>) -> arena_store::Result<Store> {
    let (url, password) = (url.to_string(), password.map(str::to_string));
    let (sent, opened) = std::sync::mpsc::channel();
    let shown = url.clone();
    std::thread::spawn(move || {
        let _ = sent.send(timed(|| Store::open_postgres(&url, password.as_deref())));
    });
    match opened.recv_timeout(PROMPT + Duration::from_secs(1)) {
        Ok((result, took)) => {
            assert!(took < PROMPT, "{shown} took {took:?}");
            result
        }
        Err(_) => panic!("{shown} is still opening after {PROMPT:?}"),
    }
}

/// Opens `url`, expecting it to fail within [`PROMPT`]; the error.
fn open_fails(url: &str, password: Option<&str>) -> Error {
    match open_within_prompt(url, password) {
        Ok(_) => panic!("{url} opened, but should not have"),
        Err(e) => e,
    }
}

/// `e` is an `Unreachable` for `url` that reads as one line; its text.
fn unreachable(e: &Error, url: &str) -> String {
    let text = e.to_string();
    assert!(
        matches!(e, Error::Unreachable { url: u, .. } if u == url),
        "not Unreachable for {url}: {e:?}"
    );
    assert!(!text.contains('\n'), "more than one line: {text:?}");
    assert!(text.contains(url), "the URL is not named: {text}");
    eprintln!("{text}");
    text
}

/// A database of its own in `cluster`.
fn database(cluster: &Cluster) -> String {
    cluster.create_database().unwrap()
}

/// `url` with query `query` (`sslmode=…&…`).
fn with_query(url: &str, query: &str) -> String {
    format!("{url}?{query}")
}

/// Whether the store's connection is encrypted, as the server sees it.
fn encrypted(store: &Store) -> bool {
    let ssl = store
        .query_i64(
            "SELECT (CASE WHEN ssl THEN 1 ELSE 0 END)::bigint FROM pg_stat_ssl \
             WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap();
    match ssl {
        Some(1) => true,
        Some(0) => false,
        other => panic!("pg_stat_ssl has no row for this connection: {other:?}"),
    }
}

/// The server process serving the store's connection.
fn backend_pid(store: &Store) -> i64 {
    store
        .query_i64("SELECT pg_backend_pid()::bigint", &[])
        .unwrap()
        .unwrap()
}

/// A loopback port nothing listens on (bound, read, let go).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A listener that records whether anyone connected, never answering.
struct Watched {
    listener: TcpListener,
}

impl Watched {
    fn new() -> Watched {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Watched { listener }
    }

    fn port(&self) -> u16 {
        self.listener.local_addr().unwrap().port()
    }

    /// Whether a connection came (the kernel completes the handshake
    /// without an `accept`, so one made is one waiting here).
    fn was_contacted(&self) -> bool {
        match self.listener.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// A server that accepts connections and never says a word: a wedged
/// database, or a port some other program holds.
struct Silent {
    port: u16,
    stop: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (stopping, holding) = (stop.clone(), held.clone());
        std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => holding.lock().unwrap().push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Silent { port, stop, held }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.held.lock().unwrap().clear();
    }
}

/// Writes battle `id` (one contestant, queued) through the store's
/// ordinary transaction.
fn write_battle(store: &Store, id: &str) -> arena_store::Result<()> {
    store.transact(|tx| tx.insert_battle(&new_battle(id)))
}

/// Battle `id`, with one contestant.
fn new_battle(id: &str) -> NewBattle {
    NewBattle {
        id: id.into(),
        battle_type: BattleType::Qa,
        prompt: format!("prompt of {id}"),
        project: "/tmp/project".into(),
        results_path: format!("/tmp/project/Arena/{id}").into(),
        created_at: chrono::Utc::now(),
        contestants: vec![NewContestant {
            id: format!("{id}-c0"),
            identity: "explainer".into(),
            model: "gpt-4o".into(),
            provider: "cloud".into(),
            lane: Lane::Cloud,
            run: RunSpec::default(),
            label: None,
        }],
        base_commit: None,
        check_command: None,
        series: None,
        blind: false,
        tags: vec![],
        machine: None,
        user_name: None,
    }
}

/// Calls `call` until it works, allowing one failure (the call that finds
/// the connection lost); the failure, if any.
fn works_after_at_most_one_failure<T: std::fmt::Debug>(
    what: &str,
    mut call: impl FnMut() -> arena_store::Result<T>,
) -> (T, Option<String>) {
    match call() {
        Ok(value) => (value, None),
        Err(first) => {
            let first = first.to_string();
            match call() {
                Ok(value) => (value, Some(first)),
                Err(second) => panic!(
                    "{what} failed twice after the server came back: first {first}; then {second}"
                ),
            }
        }
    }
}

// --- refusals ---------------------------------------------------------

#[test]
fn a_wrong_password_fails_quickly_says_to_check_it_and_never_shows_it() {
    let Some(cluster) = Cluster::for_test("a_wrong_password_fails_quickly") else {
        return;
    };
    let url = cluster.url(&database(&cluster));
    let wrong = "Wr0ng-hunter2-password";
    let e = open_fails(&url, Some(wrong));
    let text = unreachable(&e, &url);
    assert!(
        text.contains("check the password")
            && text.contains("ARENA_DATABASE_PASSWORD")
            && text.contains("arena database login"),
        "no advice on the password: {text}"
    );
    assert!(!text.contains(wrong), "the password tried is shown: {text}");
    assert!(
        !format!("{e:?}").contains(wrong),
        "the password tried is in the error's debug form: {e:?}"
    );
    assert!(
        !text.contains(cluster.password()),
        "the real password is shown: {text}"
    );
}

#[test]
fn no_password_at_all_says_how_to_give_one() {
    let Some(cluster) = Cluster::for_test("no_password_at_all_says_how_to_give_one") else {
        return;
    };
    let url = cluster.url(&database(&cluster));
    let text = unreachable(&open_fails(&url, None), &url);
    assert!(
        text.contains("ARENA_DATABASE_PASSWORD") && text.contains("arena database login"),
        "no advice on giving the password: {text}"
    );
}

#[test]
fn a_closed_port_is_refused_quickly_in_one_line() {
    let url = format!("postgres://arena@127.0.0.1:{}/arena", closed_port());
    let text = unreachable(&open_fails(&url, Some("secret-pw")), &url);
    assert!(text.contains("refused"), "does not say refused: {text}");
    assert!(
        text.contains("is PostgreSQL running there"),
        "no advice: {text}"
    );
    assert!(!text.contains("secret-pw"), "the password is shown: {text}");
}

#[test]
fn a_server_that_never_answers_times_out_instead_of_hanging() {
    let silent = Silent::start();
    let url = format!("postgres://arena@127.0.0.1:{}/arena", silent.port);
    for query in ["sslmode=disable", "sslmode=require"] {
        let url = with_query(&url, query);
        let text = unreachable(&open_fails(&url, Some("pw")), &url);
        assert!(text.contains("timed out"), "does not say timed out: {text}");
    }
}

#[test]
fn a_password_in_the_url_is_refused_before_connecting_and_not_repeated() {
    let watched = Watched::new();
    let port = watched.port();
    for url in [
        format!("postgres://arena:hunter2pw@127.0.0.1:{port}/arena"),
        format!("postgresql://arena:hunter2pw@127.0.0.1:{port}/arena?sslmode=disable"),
        format!("postgres://arena@127.0.0.1:{port}/arena?password=hunter2pw"),
        format!("postgres://arena@127.0.0.1:{port}/arena?sslmode=disable&password=hunter2pw"),
    ] {
        let e = open_fails(&url, Some("given-apart"));
        let text = e.to_string();
        assert!(
            matches!(e, Error::TeamUrl { .. }),
            "not refused as a TeamUrl: {e:?}"
        );
        assert!(text.contains("password"), "does not say why: {text}");
        assert!(
            !text.contains("hunter2pw") && !format!("{e:?}").contains("hunter2pw"),
            "the password in the URL is repeated: {e:?}"
        );
        assert!(!text.contains('\n'), "more than one line: {text:?}");
    }
    // Even a URL that cannot be read does not repeat its password.
    for url in [
        "postgres://arena:hunter2pw@127.0.0.1:99999/arena".to_string(),
        format!("postgres://arena:hunter2pw@127.0.0.1:{port}/arena?sslmode=bogus"),
    ] {
        let e = open_fails(&url, None);
        assert!(matches!(e, Error::TeamUrl { .. }), "{e:?}");
        assert!(
            !format!("{e} {e:?}").contains("hunter2pw"),
            "the password in the URL is repeated: {e:?}"
        );
    }
    assert!(!watched.was_contacted(), "a connection was attempted");
}

#[test]
fn an_unknown_sslmode_is_refused_before_connecting() {
    let watched = Watched::new();
    let port = watched.port();
    for mode in ["verify_full", "on", "REQUIRE", ""] {
        let url = format!("postgres://arena@127.0.0.1:{port}/arena?sslmode={mode}");
        let e = open_fails(&url, Some("pw"));
        match &e {
            Error::TeamUrl { url: u, message } => {
                assert_eq!(u, &url);
                assert!(
                    message.contains("sslmode") && message.contains("verify-full"),
                    "does not list the modes: {message}"
                );
            }
            other => panic!("sslmode={mode}: not a TeamUrl: {other:?}"),
        }
    }
    assert!(!watched.was_contacted(), "a connection was attempted");
}

#[test]
fn an_unreadable_sslrootcert_is_refused_before_connecting() {
    let watched = Watched::new();
    let dir = tempfile::tempdir().unwrap();
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello\n").unwrap();
    for file in [dir.path().join("missing.pem"), not_pem] {
        let url = format!(
            "postgres://arena@127.0.0.1:{}/arena?sslmode=require&sslrootcert={}",
            watched.port(),
            file.display()
        );
        let e = open_fails(&url, Some("pw"));
        match &e {
            Error::TeamUrl { message, .. } => {
                assert!(message.contains("sslrootcert"), "{message}")
            }
            other => panic!("{}: not a TeamUrl: {other:?}", file.display()),
        }
    }
    assert!(!watched.was_contacted(), "a connection was attempted");
}

// --- TLS --------------------------------------------------------------

#[test]
fn tls_with_the_teams_ca_is_encrypted_and_verified() {
    let Some(cluster) = Cluster::for_test_tls("tls_with_the_teams_ca_is_encrypted") else {
        return;
    };
    let db = database(&cluster);
    let ca = cluster.ca_file().unwrap().display().to_string();
    for (host, mode) in [
        ("localhost", "require"),
        ("localhost", "verify-ca"),
        ("localhost", "verify-full"),
        ("localhost", "prefer"),
        ("localhost", "allow"),
        // The certificate names the address too.
        ("127.0.0.1", "verify-full"),
    ] {
        let url = with_query(
            &cluster.url_with_host(host, &db),
            &format!("sslmode={mode}&sslrootcert={ca}"),
        );
        let store = Store::open_postgres(&url, Some(cluster.password()))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(encrypted(&store), "{url}: not encrypted");
    }
    // No sslmode: `prefer`, which takes TLS when the server offers it.
    let url = with_query(
        &cluster.url_with_host("localhost", &db),
        &format!("sslrootcert={ca}"),
    );
    let store = Store::open_postgres(&url, Some(cluster.password())).unwrap();
    assert!(encrypted(&store), "{url}: not encrypted");
}

#[test]
fn tls_without_the_teams_ca_is_refused_with_certificate_advice() {
    let Some(cluster) = Cluster::for_test_tls("tls_without_the_teams_ca_is_refused") else {
        return;
    };
    let db = database(&cluster);
    // `prefer` and the default too: a certificate that fails is never a
    // reason to fall back to plain text.
    for query in [
        "sslmode=require",
        "sslmode=verify-full",
        "sslmode=prefer",
        "",
    ] {
        let url = cluster.url_with_host("localhost", &db);
        let url = if query.is_empty() {
            url
        } else {
            with_query(&url, query)
        };
        let text = unreachable(&open_fails(&url, Some(cluster.password())), &url);
        assert!(
            text.contains("certificate") && text.contains("sslrootcert="),
            "no certificate advice: {text}"
        );
        assert!(!text.contains(cluster.password()), "password shown: {text}");
    }
}

#[test]
fn tls_to_a_host_the_certificate_does_not_name_is_refused() {
    let Some(cluster) = Cluster::builder()
        .tls_for(&["db.example.test"])
        .for_test("tls_to_a_host_the_certificate_does_not_name")
    else {
        return;
    };
    let db = database(&cluster);
    let ca = cluster.ca_file().unwrap().display().to_string();
    for host in ["localhost", "127.0.0.1"] {
        let url = with_query(
            &cluster.url_with_host(host, &db),
            &format!("sslmode=require&sslrootcert={ca}"),
        );
        let text = unreachable(&open_fails(&url, Some(cluster.password())), &url);
        assert!(
            text.contains("certificate") && text.contains(&format!("name \"{host}\"")),
            "does not say why: {text}"
        );
        assert!(
            text.contains("connect by a host name") && !text.contains("give the server's CA"),
            "the CA is given; the advice should be about the name: {text}"
        );
    }
}

#[test]
fn sslmode_disable_talks_plain_text_even_to_a_tls_server() {
    let Some(cluster) = Cluster::for_test_tls("sslmode_disable_talks_plain_text") else {
        return;
    };
    let url = with_query(
        &cluster.url_with_host("localhost", &database(&cluster)),
        "sslmode=disable",
    );
    let store = Store::open_postgres(&url, Some(cluster.password())).unwrap();
    assert!(!encrypted(&store), "sslmode=disable used TLS");
}

#[test]
fn a_server_without_tls_is_used_in_plain_text_unless_tls_is_required() {
    let Some(cluster) = Cluster::for_test("a_server_without_tls") else {
        return;
    };
    let db = database(&cluster);
    for query in ["sslmode=prefer", "sslmode=allow", "sslmode=disable"] {
        let url = with_query(&cluster.url(&db), query);
        let store = Store::open_postgres(&url, Some(cluster.password())).unwrap();
        assert!(!encrypted(&store));
    }
    for mode in ["require", "verify-ca", "verify-full"] {
        let url = with_query(&cluster.url(&db), &format!("sslmode={mode}"));
        let text = unreachable(&open_fails(&url, Some(cluster.password())), &url);
        assert!(
            text.contains("does not support TLS"),
            "does not say the server has no TLS: {text}"
        );
        assert!(
            text.contains("sslmode"),
            "does not say what to change: {text}"
        );
    }
}

// --- reconnecting -----------------------------------------------------

#[test]
fn a_restarted_server_is_connected_to_again_and_keeps_the_data() {
    let Some(cluster) = Cluster::for_test("a_restarted_server_is_connected_to_again") else {
        return;
    };
    let url = cluster.url(&database(&cluster));
    let store = Store::open_postgres(&url, Some(cluster.password())).unwrap();
    write_battle(&store, "before-restart").unwrap();
    let pid = backend_pid(&store);

    cluster.restart().unwrap();
    let (count, failure) = works_after_at_most_one_failure("a read", || store.battle_count());
    assert_eq!(count, 1, "the battle written before the restart is gone");
    if let Some(failure) = failure {
        eprintln!("the first call after the restart: {failure}");
        assert!(!failure.contains('\n'), "{failure:?}");
    }
    assert_ne!(backend_pid(&store), pid, "still on the old connection?");
    assert_eq!(store.battle("before-restart").unwrap().id, "before-restart");
    // Writes work on the new connection (statements prepared again).
    write_battle(&store, "after-restart").unwrap();
    assert_eq!(store.battle_count().unwrap(), 2);

    // Twice: the new connection is lost in turn, and made again.
    cluster.restart().unwrap();
    works_after_at_most_one_failure("a write", || write_battle(&store, "after-second"));
    assert_eq!(store.battle_count().unwrap(), 3);
}

#[test]
fn a_crashed_server_started_again_is_connected_to_again() {
    let Some(cluster) = Cluster::for_test("a_crashed_server_started_again") else {
        return;
    };
    let url = cluster.url(&database(&cluster));
    let store = Store::open_postgres(&url, Some(cluster.password())).unwrap();
    write_battle(&store, "before-crash").unwrap();
    // The test cluster commits without waiting for the WAL
    // (`synchronous_commit=off`), so a crash may lose the last fraction of
    // a second, by design; a checkpoint puts the commit in the files.
    cluster.psql("postgres", "CHECKPOINT").unwrap();

    cluster.kill();
    // A read while it is down waits for it (the store rides out an outage
    // of up to 30 s) and gets its answer once it is back.
    let (count, took) = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(1500));
            cluster.start_again().unwrap();
        });
        timed(|| store.battle_count())
    });
    assert!(
        took >= Duration::from_millis(1000),
        "answered while down: {took:?}"
    );
    assert_eq!(
        count.unwrap(),
        1,
        "the battle written before the crash is gone"
    );
    write_battle(&store, "after-crash").unwrap();
    assert_eq!(store.battle_count().unwrap(), 2);
}

#[test]
fn a_tls_connection_is_made_again_with_tls() {
    let Some(cluster) = Cluster::for_test_tls("a_tls_connection_is_made_again") else {
        return;
    };
    let url = with_query(
        &cluster.url_with_host("localhost", &database(&cluster)),
        &format!(
            "sslmode=verify-full&sslrootcert={}",
            cluster.ca_file().unwrap().display()
        ),
    );
    let store = Store::open_postgres(&url, Some(cluster.password())).unwrap();
    write_battle(&store, "b").unwrap();
    cluster.restart().unwrap();
    let (count, _) = works_after_at_most_one_failure("a read", || store.battle_count());
    assert_eq!(count, 1);
    assert!(encrypted(&store), "the new connection is not encrypted");
}

#[test]
fn a_session_the_server_ends_is_made_again() {
    let Some(cluster) = Cluster::for_test("a_session_the_server_ends_is_made_again") else {
        return;
    };
    let db = database(&cluster);
    let store = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    write_battle(&store, "before").unwrap();
    // An administrator (or idle_session_timeout) ends the session; the
    // server stays up. The next call races the session's end: it may
    // fail, once; the one after it must not go out on the dead connection
    // (the driver notices the end a moment later). Many times, so that the
    // race is run.
    let admin = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    for round in 0..80 {
        let pid = backend_pid(&store);
        let ended = admin
            .query_i64(
                "SELECT pg_terminate_backend((?1::bigint)::int)::int::bigint",
                &[SqlValue::Int(pid)],
            )
            .unwrap();
        assert_eq!(ended, Some(1));
        let (count, _) =
            works_after_at_most_one_failure(&format!("round {round}"), || store.battle_count());
        assert_eq!(count, 1);
        assert_ne!(backend_pid(&store), pid);
    }
}

#[test]
fn a_restart_inside_a_transaction_fails_it_whole_and_the_next_works() {
    let Some(cluster) = Cluster::for_test("a_restart_inside_a_transaction") else {
        return;
    };
    let db = database(&cluster);
    let store = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    write_battle(&store, "kept").unwrap();
    let failed = store.transact(|tx| {
        tx.insert_battle(&new_battle("half-written"))?;
        cluster.restart().unwrap();
        tx.insert_battle(&new_battle("never"))
    });
    let e = failed.expect_err("a transaction across a restart committed");
    assert!(!e.to_string().contains('\n'), "{e}");
    let (count, _) = works_after_at_most_one_failure("a read", || store.battle_count());
    assert_eq!(count, 1, "half a transaction was kept");
    write_battle(&store, "next").unwrap();
    assert_eq!(store.battle_count().unwrap(), 2);
}

#[test]
fn a_panic_inside_a_transaction_does_not_leak_into_the_next() {
    let Some(cluster) = Cluster::for_test("a_panic_inside_a_transaction") else {
        return;
    };
    let db = database(&cluster);
    let store = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store
            .transact(|tx| {
                tx.insert_battle(&new_battle("half-written"))?;
                panic!("a bug, halfway through a transaction");
                #[allow(unreachable_code)]
                Ok(())
            })
            .unwrap();
    }));
    assert!(panicked.is_err());
    // The store is still usable (its lock is poisoned: that is allowed)…
    write_battle(&store, "next").unwrap();
    // …and what the panicked transaction wrote was rolled back, not
    // committed by the next transaction.
    let other = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    assert_eq!(other.battle_count().unwrap(), 1);
    assert!(
        other.battle("half-written").is_err(),
        "the panicked transaction's write was committed by the next one"
    );
}

#[test]
fn a_session_cannot_hold_locks_for_long() {
    let Some(cluster) = Cluster::for_test("a_session_cannot_hold_locks_for_long") else {
        return;
    };
    let url = cluster.url(&database(&cluster));
    let store = Store::open_postgres(&url, Some(cluster.password())).unwrap();
    let setting = |name: &str| {
        store
            .query_i64(
                "SELECT CAST(setting AS BIGINT) FROM pg_settings WHERE name = ?1",
                &[SqlValue::Text(name.into())],
            )
            .unwrap()
    };
    // A session cut off inside a transaction gives its locks back within
    // a minute; a lock is waited for 20 s at most.
    assert_eq!(setting("idle_in_transaction_session_timeout"), Some(60_000));
    assert_eq!(setting("lock_timeout"), Some(20_000));

    // A process holding the lock under which tables are laid out (stuck,
    // say) makes another's start fail in one line, not wait for ever.
    store
        .transact(|tx| tx.exec_raw("SELECT pg_advisory_lock(418531077729)", &[]))
        .unwrap();
    let (second, took) = timed(|| Store::open_postgres(&url, Some(cluster.password())));
    let e = second.err().expect("the second open waited for the lock");
    assert!(took < Duration::from_secs(30), "{took:?}");
    let text = e.to_string();
    assert!(
        text.contains("updating the tables of the team database") && text.contains("try again"),
        "{text}"
    );
    assert!(!text.contains('\n'), "{text}");
}
