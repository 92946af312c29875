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
//! Statements are prepared once per connection and kept (see
//! `Tx::run`).

use rusqlite::types::FromSql;

use crate::error::Result;

/// A connection, or a transaction, to run statements on.
#[derive(Clone, Copy)]
pub(crate) enum Conn<'c> {
    Sqlite(&'c rusqlite::Connection),
}

impl<'c> From<&'c rusqlite::Connection> for Conn<'c> {
    fn from(c: &'c rusqlite::Connection) -> Self {
        Conn::Sqlite(c)
    }
}

impl<'c> From<&'c rusqlite::Transaction<'_>> for Conn<'c> {
    fn from(tx: &'c rusqlite::Transaction<'_>) -> Self {
        Conn::Sqlite(tx)
    }
}

/// A value a statement binds.
pub(crate) trait Param: rusqlite::ToSql {}

impl<T: rusqlite::ToSql + ?Sized> Param for T {}

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
            Value::Int(i) => i.to_sql(),
            Value::Text(t) => t.to_sql(),
        }
    }
}

/// `values` as a statement's parameters.
pub(crate) fn params_of(values: &[Value]) -> Vec<&dyn Param> {
    values.iter().map(|v| v as &dyn Param).collect()
}

/// [`Params`] as SQLite binds them.
fn sqlite_params<'p>(
    params: Params<'p>,
) -> rusqlite::ParamsFromIter<impl Iterator<Item = &'p dyn rusqlite::ToSql>> {
    rusqlite::params_from_iter(params.iter().map(|p| *p as &dyn rusqlite::ToSql))
}

impl Conn<'_> {
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
            .ok_or_else(|| rusqlite::Error::QueryReturnedNoRows.into())
    }

    /// Runs one statement; how many rows it changed.
    pub(crate) fn exec(self, sql: &str, params: Params<'_>) -> Result<usize> {
        match self {
            Conn::Sqlite(c) => Ok(c.prepare_cached(sql)?.execute(sqlite_params(params))?),
        }
    }

    /// Runs statements without parameters, one after another.
    pub(crate) fn batch(self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch(sql)?),
        }
    }

    /// The id the last insert into a table with an integer key gave.
    pub(crate) fn last_insert_id(self) -> i64 {
        match self {
            Conn::Sqlite(c) => c.last_insert_rowid(),
        }
    }
}

/// One row of a result.
pub(crate) enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
}

impl Row<'_> {
    /// Column `i` as a `T`.
    pub(crate) fn get<T: Col>(&self, i: usize) -> Result<T> {
        match self {
            Row::Sqlite(r) => Ok(r.get::<_, T>(i)?),
        }
    }

    /// Column `i` as stored: text, or bytes (a packed answer), or nothing.
    pub(crate) fn text_or_bytes(&self, i: usize) -> Result<Option<TextOrBytes>> {
        match self {
            Row::Sqlite(r) => TextOrBytes::from_sqlite(i, r.get_ref(i)?),
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

impl rusqlite::ToSql for TextOrBytes {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            TextOrBytes::Text(t) => t.to_sql(),
            TextOrBytes::Bytes(b) => b.to_sql(),
        }
    }
}

/// A type a column is read as: the ones both databases have.
pub(crate) trait Col: FromSql {}

impl Col for i64 {}
impl Col for u32 {}
impl Col for f64 {}
impl Col for bool {}
impl Col for String {}
impl Col for Vec<u8> {}
impl<T: Col> Col for Option<T> {}
