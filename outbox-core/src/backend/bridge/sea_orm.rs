//! SeaORM 2 (feature `sea-orm`): enqueue through the application's `DatabaseTransaction`,
//! on every database. SeaORM 2 runs on sqlx 0.9, the version the outbox uses, so its
//! database errors are read as they are.
//!
//! Not its `DatabaseConnection`: that is a pool, and a message enqueued on a pool would
//! not be part of the transaction that writes the rows it describes.

use futures::future::BoxFuture;
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, RuntimeErr, Statement};

use super::{Dialect, RawSql};
use crate::backend::sql::Arg;
use crate::foreign_error::ForeignDatabaseError;

/// The statement `sql` with `args`, in SeaORM's terms.
fn statement(backend: DbBackend, sql: &str, args: &[Arg<'_>]) -> Statement {
    use sea_orm::sea_query::Value;
    let values = args.iter().map(|arg| match *arg {
        Arg::Int(v) => Value::BigInt(Some(v)),
        Arg::OptInt(v) => Value::BigInt(v),
        Arg::Real(v) => Value::Double(Some(v)),
        Arg::OptReal(v) => Value::Double(v),
        Arg::Text(v) => Value::String(Some(v.to_owned())),
        Arg::OptText(v) => Value::String(v.map(str::to_owned)),
        Arg::Bytes(v) => Value::Bytes(Some(v.to_vec())),
    });
    Statement::from_sql_and_values(backend, sql, values)
}

/// The engine name of a SeaORM backend.
fn engine(backend: DbBackend) -> &'static str {
    match backend {
        DbBackend::Postgres => "postgres",
        DbBackend::MySql => "mysql",
        DbBackend::Sqlite => "sqlite",
        _ => "another database",
    }
}

/// A SeaORM error as a sqlx error: the database's own (its code and message), else the
/// SeaORM error as it is.
fn error(backend: DbBackend, e: DbErr) -> sqlx::Error {
    if let DbErr::Exec(RuntimeErr::SqlxError(inner)) | DbErr::Query(RuntimeErr::SqlxError(inner)) =
        &e
    {
        if let sqlx::Error::Database(d) = inner.as_ref() {
            let kind = d.kind();
            let code = d.code().map(|c| c.into_owned());
            return ForeignDatabaseError::new(engine(backend), code, d.message().to_owned(), kind)
                .into_sqlx();
        }
    }
    sqlx::Error::AnyDriverError(Box::new(e))
}

impl RawSql for DatabaseTransaction {
    fn dialect(&self) -> Dialect {
        match self.get_database_backend() {
            #[cfg(feature = "postgres")]
            DbBackend::Postgres => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            DbBackend::MySql => Dialect::MySql,
            #[cfg(feature = "sqlite")]
            DbBackend::Sqlite => Dialect::Sqlite,
            #[allow(unreachable_patterns)]
            other => unreachable!(
                "SeaORM reports a {other:?} transaction, but outbox's feature for that \
                 database is off (SeaORM's driver for it is enabled through that feature)"
            ),
        }
    }

    fn in_transaction(&mut self) -> bool {
        true
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
        Box::pin(async move {
            let backend = self.get_database_backend();
            self.execute_raw(statement(backend, sql, args))
                .await
                .map(|done| done.rows_affected())
                .map_err(|e| error(backend, e))
        })
    }

    fn query_text<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>> {
        Box::pin(async move {
            let backend = self.get_database_backend();
            let row = self
                .query_one_raw(statement(backend, sql, args))
                .await
                .map_err(|e| error(backend, e))?;
            match row {
                None => Ok(None),
                Some(row) => row
                    .try_get_by_index::<Option<String>>(0)
                    .map_err(|e| error(backend, e)),
            }
        })
    }
}

super::insert_messages_via_raw_sql!(DatabaseTransaction);
