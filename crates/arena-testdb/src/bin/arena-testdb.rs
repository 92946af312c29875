//! `arena-testdb serve`: starts a throwaway cluster for a whole test run,
//! prints `ARENA_TEST_POSTGRES=<port> <password>` on its first line, and
//! keeps the cluster until its standard input ends (then removes it).
//! `scripts/test.sh` runs it so the engine's tests can take a database each
//! on PostgreSQL.

use std::io::Read;

fn main() {
    if std::env::args().nth(1).as_deref() != Some("serve") {
        eprintln!("usage: arena-testdb serve   (runs until its standard input ends)");
        std::process::exit(2);
    }
    let cluster = match arena_testdb::Cluster::start() {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("arena-testdb: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "{}={}",
        arena_testdb::SHARED_VAR,
        arena_testdb::Shared::describe(&cluster)
    );
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(cluster);
}
