//! diesel: enqueue through the application's diesel connection, in its transaction.
//!
//! * Sync diesel (features `diesel-postgres`, `diesel-mysql`, `diesel-sqlite`: each links
//!   its database's C client library): `PgConnection`, `MysqlConnection`,
//!   `SqliteConnection`, inside `conn.transaction(|conn| …)` with
//!   [`EnqueueBlocking`](crate::EnqueueBlocking), or `.await`ed where the application
//!   already calls diesel from async code.
//! * diesel-async (feature `diesel-async` with the database features):
//!   `AsyncPgConnection`, `AsyncMysqlConnection` and `SyncConnectionWrapper<SqliteConnection>`
//!   (pooled ones too, through `&mut *conn`).
//!
//! The statements run through diesel's `sql_query` with the parameters bound in order;
//! the values are owned copies (diesel-async's SQLite wrapper runs a statement on another
//! thread).

use diesel::{
    backend::Backend,
    query_builder::{BoxedSqlQuery, SqlQuery},
    serialize::ToSql,
    sql_types::{BigInt, Binary, Double, HasSqlType, Nullable, Text},
    QueryableByName,
};
#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
use futures::future::BoxFuture;

#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
use super::{Dialect, RawSql};
use crate::backend::sql::Arg;
use crate::foreign_error::ForeignDatabaseError;

/// The one column every bridged query returns.
#[derive(QueryableByName)]
pub(super) struct TextCell {
    #[diesel(sql_type = Nullable<Text>)]
    j: Option<String>,
}

impl TextCell {
    /// The column's text, if any.
    pub(super) fn text(cell: Option<TextCell>) -> Option<String> {
        cell.and_then(|c| c.j)
    }
}

/// `sql` with `args` bound in order, as an owned diesel query.
pub(super) fn query<DB>(sql: &str, args: &[Arg<'_>]) -> BoxedSqlQuery<'static, DB, SqlQuery>
where
    DB: Backend + HasSqlType<BigInt> + HasSqlType<Double> + HasSqlType<Text> + HasSqlType<Binary>,
    i64: ToSql<BigInt, DB>,
    f64: ToSql<Double, DB>,
    String: ToSql<Text, DB>,
    Vec<u8>: ToSql<Binary, DB>,
    Option<i64>: ToSql<Nullable<BigInt>, DB>,
    Option<f64>: ToSql<Nullable<Double>, DB>,
    Option<String>: ToSql<Nullable<Text>, DB>,
{
    let mut query = diesel::sql_query(sql).into_boxed::<DB>();
    for arg in args {
        query = match *arg {
            Arg::Int(v) => query.bind::<BigInt, _>(v),
            Arg::OptInt(v) => query.bind::<Nullable<BigInt>, _>(v),
            Arg::Real(v) => query.bind::<Double, _>(v),
            Arg::OptReal(v) => query.bind::<Nullable<Double>, _>(v),
            Arg::Text(v) => query.bind::<Text, _>(v.to_owned()),
            Arg::OptText(v) => query.bind::<Nullable<Text>, _>(v.map(str::to_owned)),
            Arg::Bytes(v) => query.bind::<Binary, _>(v.to_vec()),
        };
    }
    query
}

/// A diesel error as a sqlx error: a database's own (its message, and the SQLSTATE its
/// kind or message stands for), else the diesel error as it is.
pub(super) fn error(engine: &'static str, e: diesel::result::Error) -> sqlx::Error {
    use diesel::result::DatabaseErrorKind as D;
    use sqlx::error::ErrorKind as K;
    match e {
        diesel::result::Error::DatabaseError(kind, info) => {
            let code = matches!(kind, D::SerializationFailure).then(|| "40001".to_owned());
            let kind = match kind {
                D::UniqueViolation => K::UniqueViolation,
                D::ForeignKeyViolation => K::ForeignKeyViolation,
                D::NotNullViolation => K::NotNullViolation,
                D::CheckViolation => K::CheckViolation,
                D::ExclusionViolation => K::ExclusionViolation,
                _ => K::Other,
            };
            ForeignDatabaseError::new(engine, code, info.message().to_owned(), kind).into_sqlx()
        }
        other => sqlx::Error::AnyDriverError(Box::new(other)),
    }
}

/// True when diesel's transaction manager says the connection is in a transaction (or in
/// a broken one).
#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
fn in_transaction<C: diesel::Connection>(conn: &mut C) -> bool {
    use diesel::connection::TransactionManager;
    let status = C::TransactionManager::transaction_manager_status_mut(conn);
    !matches!(status.transaction_depth(), Ok(None))
}

/// [`RawSql`], [`InsertMessages`](crate::enqueue::InsertMessages) and
/// [`BlockingConnection`](crate::BlockingConnection) for a sync diesel connection: the
/// statements run when the future is first polled, and it is then ready.
#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
macro_rules! sync_connection {
    ($conn:ty, $db:ty, $dialect:expr, $engine:literal) => {
        impl RawSql for $conn {
            fn dialect(&self) -> Dialect {
                $dialect
            }

            fn in_transaction(&mut self) -> bool {
                in_transaction(self)
            }

            fn execute<'a>(
                &'a mut self,
                sql: &'a str,
                args: &'a [Arg<'a>],
            ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
                Box::pin(async move {
                    diesel::RunQueryDsl::execute(query::<$db>(sql, args), self)
                        .map(|n| n as u64)
                        .map_err(|e| error($engine, e))
                })
            }

            fn query_text<'a>(
                &'a mut self,
                sql: &'a str,
                args: &'a [Arg<'a>],
            ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>> {
                Box::pin(async move {
                    use diesel::OptionalExtension;
                    diesel::RunQueryDsl::get_result::<TextCell>(query::<$db>(sql, args), self)
                        .optional()
                        .map(TextCell::text)
                        .map_err(|e| error($engine, e))
                })
            }
        }

        super::insert_messages_via_raw_sql!($conn);

        impl crate::enqueue::BlockingConnection for $conn {}
    };
}

#[cfg(feature = "diesel-postgres")]
sync_connection!(
    diesel::PgConnection,
    diesel::pg::Pg,
    Dialect::Postgres,
    "postgres"
);
#[cfg(feature = "diesel-mysql")]
sync_connection!(
    diesel::MysqlConnection,
    diesel::mysql::Mysql,
    Dialect::MySql,
    "mysql"
);
#[cfg(feature = "diesel-sqlite")]
sync_connection!(
    diesel::SqliteConnection,
    diesel::sqlite::Sqlite,
    Dialect::Sqlite,
    "sqlite"
);

#[cfg(feature = "diesel-async")]
mod async_connections {
    use futures::future::BoxFuture;

    use super::{error, query, TextCell};
    use crate::backend::{
        bridge::{Dialect, RawSql},
        sql::Arg,
    };

    /// True when diesel-async's transaction manager says the connection is in a
    /// transaction (or in a broken one).
    fn in_transaction<C: diesel_async::AsyncConnection>(conn: &mut C) -> bool {
        use diesel_async::TransactionManager;
        let status = C::TransactionManager::transaction_manager_status_mut(conn);
        !matches!(status.transaction_depth(), Ok(None))
    }

    /// [`RawSql`] and [`InsertMessages`](crate::enqueue::InsertMessages) for a
    /// diesel-async connection.
    macro_rules! async_connection {
        ($conn:ty, $db:ty, $dialect:expr, $engine:literal) => {
            impl RawSql for $conn {
                fn dialect(&self) -> Dialect {
                    $dialect
                }

                fn in_transaction(&mut self) -> bool {
                    in_transaction(self)
                }

                fn execute<'a>(
                    &'a mut self,
                    sql: &'a str,
                    args: &'a [Arg<'a>],
                ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
                    Box::pin(async move {
                        diesel_async::RunQueryDsl::execute(query::<$db>(sql, args), self)
                            .await
                            .map(|n| n as u64)
                            .map_err(|e| error($engine, e))
                    })
                }

                fn query_text<'a>(
                    &'a mut self,
                    sql: &'a str,
                    args: &'a [Arg<'a>],
                ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>> {
                    Box::pin(async move {
                        use diesel::OptionalExtension;
                        diesel_async::RunQueryDsl::get_result::<TextCell>(
                            query::<$db>(sql, args),
                            self,
                        )
                        .await
                        .optional()
                        .map(TextCell::text)
                        .map_err(|e| error($engine, e))
                    })
                }
            }

            crate::backend::bridge::insert_messages_via_raw_sql!($conn);
        };
    }

    #[cfg(feature = "postgres")]
    async_connection!(
        diesel_async::AsyncPgConnection,
        diesel::pg::Pg,
        Dialect::Postgres,
        "postgres"
    );
    #[cfg(feature = "mysql")]
    async_connection!(
        diesel_async::AsyncMysqlConnection,
        diesel::mysql::Mysql,
        Dialect::MySql,
        "mysql"
    );
    #[cfg(feature = "sqlite")]
    async_connection!(
        diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>,
        diesel::sqlite::Sqlite,
        Dialect::Sqlite,
        "sqlite"
    );
}
