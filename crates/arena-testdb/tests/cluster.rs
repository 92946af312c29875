//! The throwaway cluster itself: it starts, takes password logins over
//! loopback only, runs unprivileged, survives a restart and a crash with its
//! data, and leaves nothing behind.

use arena_testdb::Cluster;

/// The effective uid of a process, from /proc.
fn uid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

#[test]
fn a_cluster_serves_password_logins_and_leaves_nothing_behind() {
    let Some(cluster) =
        Cluster::for_test("a_cluster_serves_password_logins_and_leaves_nothing_behind")
    else {
        return;
    };
    let db = cluster.database().unwrap();
    assert_eq!(db.psql("SELECT 40 + 2").unwrap(), "42");
    assert!(
        db.url().starts_with("postgres://arena@127.0.0.1:"),
        "{}",
        db.url()
    );
    assert!(!db.url().contains(cluster.password()));
    // A wrong password is refused, in words.
    let refused = cluster
        .psql_with(db.name(), "SELECT 1", "not-the-password")
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("password authentication failed"),
        "{refused}"
    );
    // Under root the server runs as an unprivileged user.
    let pid = cluster.server_pid().unwrap();
    let uid = uid_of(pid).unwrap();
    if uid_of(std::process::id()) == Some(0) {
        assert_ne!(uid, 0, "the server runs as root");
    }
    // Only loopback: the server listens on 127.0.0.1 alone.
    let listening = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let port = format!(":{:04X}", cluster.port());
    let addresses: Vec<&str> = listening
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|a| a.ends_with(&port))
        .collect();
    assert!(
        !addresses.is_empty() && addresses.iter().all(|a| a.starts_with("0100007F")),
        "listening on {addresses:?}"
    );
    // A dropped database is gone.
    let name = db.name().to_string();
    drop(db);
    let left = cluster
        .psql(
            "postgres",
            &format!("SELECT count(*) FROM pg_database WHERE datname = '{name}'"),
        )
        .unwrap();
    assert_eq!(left, "0");
    // A dropped cluster leaves no process and no folder.
    let dir = cluster.dir().to_path_buf();
    drop(cluster);
    assert!(!dir.exists(), "{} is still there", dir.display());
    assert!(uid_of(pid).is_none(), "the server {pid} still runs");
}

#[test]
fn data_survives_a_restart_and_a_crash() {
    let Some(cluster) = Cluster::for_test("data_survives_a_restart_and_a_crash") else {
        return;
    };
    let db = cluster.database().unwrap();
    db.psql("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('kept')")
        .unwrap();
    let before = cluster.server_pid().unwrap();
    cluster.restart().unwrap();
    assert_ne!(cluster.server_pid().unwrap(), before, "not restarted");
    assert_eq!(db.psql("SELECT v FROM t").unwrap(), "kept");
    cluster.kill();
    assert!(db.psql("SELECT 1").is_err(), "answered while killed");
    cluster.start_again().unwrap();
    assert_eq!(db.psql("SELECT v FROM t").unwrap(), "kept");
}
