//! The store's tests run on both backends: SQLite in a temporary folder,
//! and PostgreSQL (team mode) in a throwaway cluster (`arena-testdb`; the
//! PostgreSQL half skips without it, unless `ARENA_REQUIRE_POSTGRES=1`).
//!
//! ```ignore
//! each_backend! {
//!     fn a_page_is_newest_first(store: &Store) { … }
//! }
//! ```
//! makes `a_page_is_newest_first::sqlite` and `…::postgres`.

use arena_store::Store;

/// What a store's data lives in, kept until the test ends.
pub enum Keep {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres(#[allow(dead_code)] arena_testdb::Cluster),
}

/// A fresh SQLite store.
pub fn sqlite() -> (Store, Keep) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("arena.db")).unwrap();
    (store, Keep::Sqlite(dir))
}

/// A fresh PostgreSQL store in a cluster of its own; `None` when
/// PostgreSQL is not installed (and not required).
pub fn postgres(test: &str) -> Option<(Store, Keep)> {
    let cluster = arena_testdb::Cluster::for_test(test)?;
    let db = cluster.create_database().unwrap();
    let store = Store::open_postgres(&cluster.url(&db), Some(cluster.password())).unwrap();
    Some((store, Keep::Postgres(cluster)))
}

/// Each test in it twice, once per backend (see the module documentation).
#[macro_export]
macro_rules! each_backend {
    ($($(#[doc = $doc:literal])* fn $name:ident($store:ident: &Store) $body:block)*) => {$(
        $(#[doc = $doc])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn sqlite() {
                let (store, _keep) = $crate::common::sqlite();
                let $store: &Store = &store;
                $body
            }

            #[test]
            fn postgres() {
                let Some((store, _keep)) =
                    $crate::common::postgres(concat!(stringify!($name), "::postgres"))
                else {
                    return;
                };
                let $store: &Store = &store;
                $body
            }
        }
    )*};
}
