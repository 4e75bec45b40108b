//! sqlx 0.8 (feature `sqlx08`): enqueue through a 0.8 `Transaction`, `PoolConnection`,
//! `PgConnection` or `MySqlConnection` of the application, on PostgreSQL and MariaDB/MySQL.
//!
//! Not SQLite: sqlx 0.8 and 0.9 link different versions of the SQLite C library
//! (`libsqlite3-sys` 0.30 and 0.37), and Cargo refuses two crates that link the same
//! native library in one build.

use futures::future::BoxFuture;

use super::{Dialect, RawSql};
use crate::foreign_error::ForeignDatabaseError;
use crate::{
    backend::sql::Arg,
    enqueue::{Enqueued, InsertMessages, NewMessage, QueuedRow, SelectInsert, SelectWritten},
};

/// Binds `args` to a sqlx 0.8 query in order.
fn bind<'q, DB: sqlx08::Database>(
    mut query: sqlx08::query::Query<'q, DB, <DB as sqlx08::Database>::Arguments<'q>>,
    args: &[Arg<'q>],
) -> sqlx08::query::Query<'q, DB, <DB as sqlx08::Database>::Arguments<'q>>
where
    i64: sqlx08::Encode<'q, DB> + sqlx08::Type<DB>,
    f64: sqlx08::Encode<'q, DB> + sqlx08::Type<DB>,
    &'q str: sqlx08::Encode<'q, DB> + sqlx08::Type<DB>,
    &'q [u8]: sqlx08::Encode<'q, DB> + sqlx08::Type<DB>,
    Option<i64>: sqlx08::Encode<'q, DB> + sqlx08::Type<DB>,
    Option<f64>: sqlx08::Encode<'q, DB> + sqlx08::Type<DB>,
    Option<&'q str>: sqlx08::Encode<'q, DB> + sqlx08::Type<DB>,
{
    for arg in args {
        query = match *arg {
            Arg::Int(v) => query.bind(v),
            Arg::OptInt(v) => query.bind(v),
            Arg::Real(v) => query.bind(v),
            Arg::OptReal(v) => query.bind(v),
            Arg::Text(v) => query.bind(v),
            Arg::OptText(v) => query.bind(v),
            Arg::Bytes(v) => query.bind(v),
        };
    }
    query
}

/// A sqlx 0.8 error as a sqlx 0.9 one.
pub(super) fn error(engine: &'static str, e: sqlx08::Error) -> sqlx::Error {
    use sqlx::error::ErrorKind as K;
    use sqlx08::error::ErrorKind as K08;
    match e {
        sqlx08::Error::Database(d) => {
            let kind = match d.kind() {
                K08::UniqueViolation => K::UniqueViolation,
                K08::ForeignKeyViolation => K::ForeignKeyViolation,
                K08::NotNullViolation => K::NotNullViolation,
                K08::CheckViolation => K::CheckViolation,
                _ => K::Other,
            };
            let code = d.code().map(|c| c.into_owned());
            ForeignDatabaseError::new(engine, code, d.message().to_owned(), kind).into_sqlx()
        }
        sqlx08::Error::Io(e) => sqlx::Error::Io(e),
        other => sqlx::Error::AnyDriverError(Box::new(other)),
    }
}

/// [`RawSql`] and [`InsertMessages`] for a sqlx 0.8 connection type.
macro_rules! sqlx08_connection {
    ($conn:ty, $dialect:expr, $engine:literal) => {
        impl RawSql for $conn {
            fn dialect(&self) -> Dialect {
                $dialect
            }

            fn in_transaction(&mut self) -> bool {
                sqlx08::Connection::is_in_transaction(self)
            }

            fn execute<'a>(
                &'a mut self,
                sql: &'a str,
                args: &'a [Arg<'a>],
            ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
                Box::pin(async move {
                    bind(sqlx08::query(sql), args)
                        .execute(&mut *self)
                        .await
                        .map(|done| done.rows_affected())
                        .map_err(|e| error($engine, e))
                })
            }

            fn query_text<'a>(
                &'a mut self,
                sql: &'a str,
                args: &'a [Arg<'a>],
            ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>> {
                Box::pin(async move {
                    let row = bind(sqlx08::query(sql), args)
                        .fetch_optional(&mut *self)
                        .await
                        .map_err(|e| error($engine, e))?;
                    match row {
                        None => Ok(None),
                        Some(row) => sqlx08::Row::try_get::<Option<String>, _>(&row, 0)
                            .map_err(|e| error($engine, e)),
                    }
                })
            }
        }

        super::insert_messages_via_raw_sql!($conn);
    };
}

#[cfg(feature = "postgres")]
sqlx08_connection!(sqlx08::PgConnection, Dialect::Postgres, "postgres");
#[cfg(feature = "mysql")]
sqlx08_connection!(sqlx08::MySqlConnection, Dialect::MySql, "mysql");

/// [`InsertMessages`] for a sqlx 0.8 wrapper of a connection (a transaction, a pooled
/// connection): through the connection it derefs to.
macro_rules! through_connection {
    ($($wrapper:ident)::+ $(<$lt:lifetime>)?) => {
        impl<DB> InsertMessages for $($wrapper)::+<$($lt,)? DB>
        where
            DB: sqlx08::Database,
            DB::Connection: RawSql,
        {
            fn insert_messages<'a>(
                &'a mut self,
                rows: &'a [NewMessage],
            ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
                Box::pin(super::insert_messages(&mut **self, rows))
            }

            fn insert_select<'a>(
                &'a mut self,
                insert: &'a SelectInsert<'a>,
            ) -> BoxFuture<'a, Result<SelectWritten, sqlx::Error>> {
                Box::pin(super::insert_select(&mut **self, insert))
            }

            fn queued_rows<'a>(
                &'a mut self,
                type_tag: &'a str,
            ) -> BoxFuture<'a, Result<Vec<QueuedRow>, sqlx::Error>> {
                Box::pin(super::queued_rows(&mut **self, type_tag))
            }

            fn record_processed<'a>(
                &'a mut self,
                consumer: &'a str,
                id: &'a str,
                at_ms: i64,
            ) -> BoxFuture<'a, Result<bool, sqlx::Error>> {
                Box::pin(super::record_processed(&mut **self, consumer, id, at_ms))
            }
        }
    };
}

// A transaction enqueues inside it; a pooled connection on its own.
through_connection!(sqlx08::Transaction<'_>);
through_connection!(sqlx08::pool::PoolConnection);
