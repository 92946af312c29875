//! Team mode's PostgreSQL schema (`migrations/postgres/`) against SQLite's:
//! the same tables and columns, of matching kinds. Applied to a throwaway
//! PostgreSQL (`arena-testdb`), so its SQL is checked by the real server.

use std::collections::BTreeMap;

use crate::Store;
use crate::POSTGRES_MIGRATIONS as POSTGRES;

/// `schema.table.column` → its kind, as both databases' types map to one:
/// `int`, `real` or `text` (SQLite keeps flags as integers, PostgreSQL as
/// booleans; an answer is a BLOB in SQLite, TEXT in PostgreSQL).
type Columns = BTreeMap<String, String>;

fn sqlite_columns(store: &Store) -> Columns {
    store
        .read(|c| {
            let mut out = Columns::new();
            for (schema, pg_schema) in [("main", "public"), ("live", "live")] {
                let tables: Vec<String> = c
                    .prepare(&format!(
                        "SELECT name FROM {schema}.sqlite_master
                         WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                    ))?
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                for table in tables {
                    let mut stmt = c.prepare("SELECT name, type FROM pragma_table_info(?1, ?2)")?;
                    let columns = stmt
                        .query_map([&table, &schema.to_string()], |r| {
                            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                        })?
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    for (column, kind) in columns {
                        let kind = match kind.to_ascii_uppercase().as_str() {
                            "INTEGER" => "int",
                            "REAL" => "real",
                            "TEXT" | "BLOB" => "text",
                            other => panic!("{table}.{column} is of SQLite type {other}"),
                        };
                        out.insert(format!("{pg_schema}.{table}.{column}"), kind.into());
                    }
                }
            }
            Ok(out)
        })
        .unwrap()
}

fn postgres_columns(db: &arena_testdb::TestDb<'_>) -> Columns {
    db.psql(
        "SELECT table_schema, table_name, column_name, data_type
         FROM information_schema.columns
         WHERE table_schema IN ('public', 'live')",
    )
    .unwrap()
    .lines()
    .map(|line| {
        let parts: Vec<&str> = line.split('|').collect();
        let kind = match parts[3] {
            "bigint" | "boolean" => "int",
            "double precision" => "real",
            "text" => "text",
            other => panic!("{line}: PostgreSQL type {other}"),
        };
        (
            format!("{}.{}.{}", parts[0], parts[1], parts[2]),
            kind.into(),
        )
    })
    .collect()
}

#[test]
fn postgres_schema_agrees_with_sqlite() {
    let Some(cluster) = arena_testdb::Cluster::for_test("postgres_schema_agrees_with_sqlite")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("arena.db")).unwrap();
    let sqlite = sqlite_columns(&store);

    let db = cluster.database().unwrap();
    for migration in POSTGRES {
        db.psql(migration).unwrap();
    }
    let postgres = postgres_columns(&db);

    let only_sqlite: Vec<_> = sqlite
        .keys()
        .filter(|k| !postgres.contains_key(*k))
        .collect();
    let only_postgres: Vec<_> = postgres
        .keys()
        .filter(|k| !sqlite.contains_key(*k))
        .collect();
    assert!(
        only_sqlite.is_empty() && only_postgres.is_empty(),
        "only in SQLite: {only_sqlite:?}; only in PostgreSQL: {only_postgres:?}"
    );
    let differ: Vec<_> = sqlite
        .iter()
        .filter(|(k, kind)| postgres.get(*k) != Some(kind))
        .map(|(k, kind)| format!("{k}: {kind} in SQLite, {:?} in PostgreSQL", postgres.get(k)))
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
    assert!(sqlite.len() > 150, "only {} columns compared", sqlite.len());

    // The history search's function works as SQLite's does (all of Unicode).
    assert_eq!(
        db.psql("SELECT arena_fold('ÜNÏCØDÉ Straße')").unwrap(),
        "ünïcødé straße"
    );
}
