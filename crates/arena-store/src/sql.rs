//! The SQL the store speaks, apart from the database that runs it: a
//! connection to run statements on ([`Conn`]), the values they bind
//! ([`Param`]) and the rows they return ([`Row`], read as [`Col`] types).
//!
//! Every reader and writer of the store goes through these, never through
//! a database library's own types, so that a second backend (PostgreSQL,
//! for team mode: `docs/design/team-mode.md`) is a new arm here and not a
//! rewrite of every query. The column types a row can be read as are the
//! few both databases have: 64-bit integers, reals, text, bytes and
//! booleans (and their `Option`), and `u32` for the places, counts and
//! pids the store keeps (a 64-bit integer column, checked on the way).
//!
//! Statements are written once, with SQLite's `?N` placeholders; on
//! PostgreSQL they are rewritten to `$N` ([`translate`]). Either way each
//! is prepared once per connection and kept.

use std::cell::RefCell;
use std::collections::HashMap;

use tokio_postgres::types::{to_sql_checked, IsNull, ToSql as PgToSql, Type};

use crate::error::{Error, Result};

/// A connection, or a transaction, to run statements on.
#[derive(Clone, Copy)]
pub(crate) enum Conn<'c> {
    Sqlite(&'c rusqlite::Connection),
    Postgres(&'c Pg),
}

/// A PostgreSQL connection and the statements prepared on it. Its
/// transactions are plain `BEGIN` … `COMMIT` on it (see `Store::transact`).
///
/// The connection's socket is driven on the team runtime's thread
/// ([`crate::team`]); a statement is sent to it and waited for here with
/// a plain blocking wait, so the store stays synchronous and may be called
/// from any thread — an async one included, as SQLite's may — without
/// starting a runtime inside a runtime.
pub(crate) struct Pg {
    client: RefCell<tokio_postgres::Client>,
    statements: RefCell<HashMap<String, tokio_postgres::Statement>>,
    connector: crate::team::Connector,
    /// A reply said the connection is gone (see [`Pg::noted`]).
    lost: std::cell::Cell<bool>,
}

impl Pg {
    pub(crate) fn open(connector: crate::team::Connector) -> Result<Pg> {
        Ok(Pg {
            client: RefCell::new(connector.connect()?),
            statements: RefCell::new(HashMap::new()),
            connector,
            lost: std::cell::Cell::new(false),
        })
    }

    pub(crate) fn connector(&self) -> &crate::team::Connector {
        &self.connector
    }

    /// Whether the connection is gone (or known to be going).
    pub(crate) fn is_lost(&self) -> bool {
        self.lost.get() || self.client.borrow().is_closed()
    }

    /// Connects again when the connection was lost (the server restarted,
    /// the network dropped): the work that was under way when it was lost
    /// failed, the next begins on a new connection.
    pub(crate) fn reconnect_if_lost(&self) -> Result<()> {
        if !self.lost.get() && !self.client.borrow().is_closed() {
            return Ok(());
        }
        tracing::warn!(
            url = self.connector.shown(),
            "the team database connection was lost; connecting again"
        );
        let client = self.connector.connect()?;
        *self.client.borrow_mut() = client;
        self.statements.borrow_mut().clear();
        self.lost.set(false);
        Ok(())
    }

    /// `result`, noting when its error shows the connection gone (the
    /// server ended the session, the socket broke): the driver sees the
    /// end a moment later, and the next call must not go out on the old
    /// connection meanwhile, to fail a second time.
    fn noted<T>(&self, result: std::result::Result<T, tokio_postgres::Error>) -> Result<T> {
        if let Err(e) = &result {
            let fatal = e
                .as_db_error()
                .is_some_and(|db| matches!(db.severity(), "FATAL" | "PANIC"));
            let broken = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
            if fatal || broken || e.is_closed() {
                self.lost.set(true);
            }
        }
        Ok(result?)
    }

    /// `sql`, prepared once on this connection.
    fn statement(&self, sql: &str) -> Result<tokio_postgres::Statement> {
        if let Some(stmt) = self.statements.borrow().get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = self.noted(wait(self.client.borrow().prepare(&translate(sql))))?;
        self.statements
            .borrow_mut()
            .insert(sql.to_string(), stmt.clone());
        Ok(stmt)
    }

    fn query(&self, sql: &str, params: Params<'_>) -> Result<Vec<tokio_postgres::Row>> {
        let stmt = self.statement(sql)?;
        self.noted(wait(self.client.borrow().query(&stmt, &pg_params(params))))
    }

    fn execute(&self, sql: &str, params: Params<'_>) -> Result<usize> {
        let stmt = self.statement(sql)?;
        Ok(self.noted(wait(
            self.client.borrow().execute(&stmt, &pg_params(params)),
        ))? as usize)
    }

    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        self.noted(wait(self.client.borrow().batch_execute(sql)))
    }
}

/// Waits for a statement's reply (see [`Pg`]).
fn wait<F: std::future::Future>(request: F) -> F::Output {
    futures::executor::block_on(request)
}

/// `sql` in PostgreSQL's words: SQLite's placeholders (`?N`, and bare `?`
/// in order) as `$N`, and ` LIKE ` as ` ILIKE ` (SQLite's LIKE ignores the
/// case of ASCII letters; the history search relies on that). Text in
/// single quotes is left as it is.
pub(crate) fn translate(sql: &str) -> String {
    // Outside quotes only: split on quotes, rewrite the even parts.
    numbered(sql)
        .split('\'')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 0 {
                part.replace(" LIKE ", " ILIKE ")
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("'")
}

/// `sql` with `?N` and bare `?` (outside quotes) as `$N`.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let (mut quoted, mut next) = (false, 1);
    while let Some(ch) = chars.next() {
        match ch {
            '\'' => {
                quoted = !quoted;
                out.push(ch);
            }
            '?' if !quoted => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    digits = next.to_string();
                    next += 1;
                }
                out.push('$');
                out.push_str(&digits);
            }
            _ => out.push(ch),
        }
    }
    out
}

/// A value a statement binds: one both databases take, as the same column
/// type. Only these types: a `u32` would bind as PostgreSQL's `oid`, not as
/// the 64-bit integer every integer column is (widen it with `i64::from`).
pub(crate) trait Param: rusqlite::ToSql + PgToSql + Sync {}

macro_rules! param {
    ($($t:ty),*) => {$(
        impl Param for $t {}
        impl Param for Option<$t> {}
    )*};
}
param!(i64, f64, bool, String, Vec<u8>, Value, TextOrBytes);
impl Param for &str {}
impl Param for Option<&str> {}
impl Param for Option<&String> {}
impl Param for std::borrow::Cow<'_, str> {}
impl<T: Param> Param for &T {}

/// The parameters of a statement, in order (`?1`, `?2`, …).
pub(crate) type Params<'p> = &'p [&'p dyn Param];

/// A statement's parameters from expressions: `params![id, n as i64]`.
macro_rules! params {
    ($($p:expr),* $(,)?) => {
        &[$(&$p as &dyn $crate::sql::Param),*] as $crate::sql::Params<'_>
    };
}
pub(crate) use params;

/// A parameter built at run time (a search's filters).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Text(String),
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Value::Int(i) => rusqlite::ToSql::to_sql(i),
            Value::Text(t) => rusqlite::ToSql::to_sql(t),
        }
    }
}

impl PgToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Int(i) => i.to_sql(ty, out),
            Value::Text(t) => t.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <i64 as PgToSql>::accepts(ty) || <String as PgToSql>::accepts(ty)
    }

    to_sql_checked!();
}

/// `values` as a statement's parameters.
pub(crate) fn params_of(values: &[Value]) -> Vec<&dyn Param> {
    values.iter().map(|v| v as &dyn Param).collect()
}

/// [`Params`] as PostgreSQL binds them.
fn pg_params<'p>(params: Params<'p>) -> Vec<&'p (dyn PgToSql + Sync)> {
    params.iter().map(|p| *p as &(dyn PgToSql + Sync)).collect()
}

/// [`Params`] as SQLite binds them.
fn sqlite_params<'p>(
    params: Params<'p>,
) -> rusqlite::ParamsFromIter<impl Iterator<Item = &'p dyn rusqlite::ToSql>> {
    rusqlite::params_from_iter(params.iter().map(|p| *p as &dyn rusqlite::ToSql))
}

impl Conn<'_> {
    /// Whether this is the team database's (PostgreSQL), for the few
    /// statements that differ.
    pub(crate) fn is_postgres(self) -> bool {
        matches!(self, Conn::Postgres(_))
    }

    /// Every row of `sql`, each read by `read`.
    pub(crate) fn rows<T>(
        self,
        sql: &str,
        params: Params<'_>,
        mut read: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(sqlite_params(params))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(read(&Row::Sqlite(r))?);
                }
                Ok(out)
            }
            Conn::Postgres(pg) => pg
                .query(sql, params)?
                .iter()
                .map(|r| read(&Row::Postgres(r)))
                .collect(),
        }
    }

    /// The first row of `sql`, read by `read`; `None` when there is none.
    pub(crate) fn opt_row<T>(
        self,
        sql: &str,
        params: Params<'_>,
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let mut rows = stmt.query(sqlite_params(params))?;
                match rows.next()? {
                    Some(r) => Ok(Some(read(&Row::Sqlite(r))?)),
                    None => Ok(None),
                }
            }
            Conn::Postgres(pg) => match pg.query(sql, params)?.first() {
                Some(r) => Ok(Some(read(&Row::Postgres(r))?)),
                None => Ok(None),
            },
        }
    }

    /// The first row of `sql`, which must have one (an aggregate, say).
    pub(crate) fn row<T>(
        self,
        sql: &str,
        params: Params<'_>,
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.opt_row(sql, params, read)?
            .ok_or_else(|| Error::Inconsistent(format!("no row from: {sql}")))
    }

    /// Runs one statement; how many rows it changed.
    pub(crate) fn exec(self, sql: &str, params: Params<'_>) -> Result<usize> {
        match self {
            Conn::Sqlite(c) => Ok(c.prepare_cached(sql)?.execute(sqlite_params(params))?),
            Conn::Postgres(pg) => pg.execute(sql, params),
        }
    }

    /// Runs one transaction-control statement (`SAVEPOINT`, `RELEASE`,
    /// …), prepared once per connection on SQLite as every other statement
    /// is (parsing them anew was a few percent of a streamed series' CPU).
    pub(crate) fn control(self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(c) => Ok(c.prepare_cached(sql)?.execute([]).map(drop)?),
            Conn::Postgres(pg) => pg.batch(sql),
        }
    }

    /// Locks row `id` of `table` until the transaction ends, so that a
    /// read-decide-write on it cannot interleave with another process's:
    /// PostgreSQL's `FOR UPDATE`. Nothing on SQLite, whose writers already
    /// take turns (immediate transactions).
    pub(crate) fn lock_row(self, table: &str, id: &str) -> Result<()> {
        match self {
            Conn::Sqlite(_) => Ok(()),
            Conn::Postgres(_) => {
                self.rows(
                    &format!("SELECT 1 FROM {table} WHERE id = ?1 FOR UPDATE"),
                    params![id],
                    |_| Ok(()),
                )?;
                Ok(())
            }
        }
    }

    /// Locks `name` (a lane's key) until the transaction ends: a
    /// transaction-level advisory lock on PostgreSQL, for a decision that
    /// reads many rows (a lane's queue) and so has no one row to lock.
    /// Nothing on SQLite, whose writers already take turns.
    pub(crate) fn lock_name(self, name: &str) -> Result<()> {
        match self {
            Conn::Sqlite(_) => Ok(()),
            Conn::Postgres(_) => {
                self.rows(
                    "SELECT pg_advisory_xact_lock(hashtext(?1))::text",
                    params![name],
                    |_| Ok(()),
                )?;
                Ok(())
            }
        }
    }

    /// Tells the team database's listeners `payload` on `channel` when the
    /// transaction commits (PostgreSQL's `NOTIFY`; nothing on SQLite, whose
    /// waiters poll).
    pub(crate) fn notify(self, channel: &str, payload: &str) -> Result<()> {
        match self {
            Conn::Sqlite(_) => Ok(()),
            Conn::Postgres(_) => {
                self.rows(
                    "SELECT pg_notify(?1, ?2)::text",
                    params![channel, payload],
                    |_| Ok(()),
                )?;
                Ok(())
            }
        }
    }

    /// Inserts one row with `sql` (an `INSERT … RETURNING id`) and returns
    /// the id it was given.
    pub(crate) fn insert_returning_id(self, sql: &str, params: Params<'_>) -> Result<i64> {
        self.row(sql, params, |r| r.get(0))
    }
}

/// One row of a result.
pub(crate) enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r tokio_postgres::Row),
}

impl Row<'_> {
    /// Column `i` as a `T`.
    pub(crate) fn get<T: Col>(&self, i: usize) -> Result<T> {
        match self {
            Row::Sqlite(r) => T::sqlite(r, i),
            Row::Postgres(r) => T::postgres(r, i),
        }
    }

    /// Column `i` as stored: text, or bytes (a packed answer), or nothing.
    pub(crate) fn text_or_bytes(&self, i: usize) -> Result<Option<TextOrBytes>> {
        match self {
            Row::Sqlite(r) => TextOrBytes::from_sqlite(i, r.get_ref(i)?),
            Row::Postgres(r) => Ok(r.try_get::<_, Option<String>>(i)?.map(TextOrBytes::Text)),
        }
    }
}

/// A column that holds text or bytes (see [`Row::text_or_bytes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextOrBytes {
    Text(String),
    Bytes(Vec<u8>),
}

impl TextOrBytes {
    /// SQLite's column `i`, which must be text, bytes or NULL.
    pub(crate) fn from_sqlite(
        i: usize,
        value: rusqlite::types::ValueRef<'_>,
    ) -> Result<Option<TextOrBytes>> {
        use rusqlite::types::ValueRef;
        match value {
            ValueRef::Null => Ok(None),
            ValueRef::Text(t) => Ok(Some(TextOrBytes::Text(
                String::from_utf8_lossy(t).into_owned(),
            ))),
            ValueRef::Blob(b) => Ok(Some(TextOrBytes::Bytes(b.to_vec()))),
            ValueRef::Integer(_) | ValueRef::Real(_) => Err(crate::error::Error::Inconsistent(
                format!("column {i} holds a number where text is kept"),
            )),
        }
    }
}

impl PgToSql for TextOrBytes {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            TextOrBytes::Text(t) => t.to_sql(ty, out),
            // Deflated text belongs to SQLite (`packed::pack_for`); a text
            // column must never get it.
            TextOrBytes::Bytes(_) if *ty == Type::TEXT => {
                Err("deflated bytes bound to a text column".into())
            }
            TextOrBytes::Bytes(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <String as PgToSql>::accepts(ty) || <Vec<u8> as PgToSql>::accepts(ty)
    }

    to_sql_checked!();
}

impl rusqlite::ToSql for TextOrBytes {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            TextOrBytes::Text(t) => rusqlite::ToSql::to_sql(t),
            TextOrBytes::Bytes(b) => rusqlite::ToSql::to_sql(b),
        }
    }
}

/// A type a column is read as: the ones both databases have.
pub(crate) trait Col: Sized {
    fn sqlite(r: &rusqlite::Row<'_>, i: usize) -> Result<Self>;
    fn postgres(r: &tokio_postgres::Row, i: usize) -> Result<Self>;
}

macro_rules! col {
    ($($t:ty),*) => {$(
        impl Col for $t {
            fn sqlite(r: &rusqlite::Row<'_>, i: usize) -> Result<Self> {
                Ok(r.get::<_, $t>(i)?)
            }
            fn postgres(r: &tokio_postgres::Row, i: usize) -> Result<Self> {
                Ok(r.try_get::<_, $t>(i)?)
            }
        }
        impl Col for Option<$t> {
            fn sqlite(r: &rusqlite::Row<'_>, i: usize) -> Result<Self> {
                Ok(r.get::<_, Option<$t>>(i)?)
            }
            fn postgres(r: &tokio_postgres::Row, i: usize) -> Result<Self> {
                Ok(r.try_get::<_, Option<$t>>(i)?)
            }
        }
    )*};
}
col!(i64, f64, bool, String, Vec<u8>);

/// A place, count or pid: a 64-bit integer column, checked on the way.
fn narrow(i: usize, v: i64) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::Inconsistent(format!("column {i} holds {v}, not a u32")))
}

impl Col for u32 {
    fn sqlite(r: &rusqlite::Row<'_>, i: usize) -> Result<Self> {
        narrow(i, r.get(i)?)
    }
    fn postgres(r: &tokio_postgres::Row, i: usize) -> Result<Self> {
        narrow(i, r.try_get(i)?)
    }
}

impl Col for Option<u32> {
    fn sqlite(r: &rusqlite::Row<'_>, i: usize) -> Result<Self> {
        r.get::<_, Option<i64>>(i)?
            .map(|v| narrow(i, v))
            .transpose()
    }
    fn postgres(r: &tokio_postgres::Row, i: usize) -> Result<Self> {
        r.try_get::<_, Option<i64>>(i)?
            .map(|v| narrow(i, v))
            .transpose()
    }
}

/// A SQLite transaction on a connection, begun and committed with
/// statements prepared once per connection (rusqlite's `Transaction`
/// parses `BEGIN` and `COMMIT` every time); rolled back when dropped
/// without a commit, a panic's unwinding included.
pub(crate) struct SqliteTx<'c> {
    conn: &'c rusqlite::Connection,
    open: bool,
}

impl<'c> SqliteTx<'c> {
    /// Begins with `begin` (`BEGIN` or `BEGIN IMMEDIATE`).
    pub(crate) fn begin(
        conn: &'c rusqlite::Connection,
        begin: &'static str,
    ) -> rusqlite::Result<SqliteTx<'c>> {
        conn.prepare_cached(begin)?.execute([])?;
        Ok(SqliteTx { conn, open: true })
    }

    pub(crate) fn conn(&self) -> &'c rusqlite::Connection {
        self.conn
    }

    pub(crate) fn commit(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.open = false;
        Ok(())
    }
}

impl Drop for SqliteTx<'_> {
    fn drop(&mut self) {
        if self.open && !self.conn.is_autocommit() {
            if let Err(e) = self.conn.execute_batch("ROLLBACK") {
                tracing::warn!(error = %e, "could not roll back a transaction");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn placeholders_become_postgres_ones_outside_quotes() {
        assert_eq!(
            translate("SELECT a FROM t WHERE b = ?1 AND c = ?12 OR d = '?1'"),
            "SELECT a FROM t WHERE b = $1 AND c = $12 OR d = '?1'"
        );
        assert_eq!(
            translate("x LIKE ? ESCAPE '\\' AND y IN (?, ?) LIMIT ? OFFSET ?"),
            "x ILIKE $1 ESCAPE '\\' AND y IN ($2, $3) LIMIT $4 OFFSET $5"
        );
        assert_eq!(
            translate("a = ' LIKE ' AND b LIKE ?1"),
            "a = ' LIKE ' AND b ILIKE $1"
        );
    }
}
