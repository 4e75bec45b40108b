//! Enqueue through the connection layer the application already has: sqlx 0.8 (feature
//! `sqlx08`), SeaORM 2 (`sea-orm`), diesel-async (`diesel-async`) and sync diesel
//! (`diesel-postgres`, `diesel-mysql`, `diesel-sqlite`), each with the database features.
//!
//! Every layer can run a statement with parameters and read one text column of one row,
//! and that is all the enqueue needs ([`RawSql`]): the same batch statement as the sqlx
//! 0.9 path (`enqueue.sql`, one JSON parameter), then, when a row had an idempotency key,
//! which ids were written and who holds the taken keys, each read as one JSON text
//! (`bridge_*.sql`). The results, the duplicate reports and the failure handling are the
//! sqlx 0.9 path's: a deadlock or lock timeout that loses the caller's transaction leaves
//! nothing of it to commit (MariaDB/MySQL: a read-only transaction in its place; SQLite:
//! a mark that fails its commit).
//!
//! What differs: workers are woken by PostgreSQL's NOTIFY (sent by the statements
//! themselves) on PostgreSQL, and by their poll elsewhere (the SQLite commit hook that
//! wakes this process's workers at once needs sqlx's own connection).

#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite",
    feature = "diesel-async"
))]
mod diesel;
#[cfg(feature = "sea-orm")]
mod sea_orm;
#[cfg(feature = "sqlx08")]
mod sqlx08;

#[cfg(all(feature = "sqlx08", not(any(feature = "postgres", feature = "mysql"))))]
compile_error!(
    "outbox's `sqlx08` feature enqueues through sqlx 0.8 on PostgreSQL and MariaDB/MySQL: \
     enable `postgres` or `mysql` beside it (SQLite cannot be bridged: sqlx 0.8 and 0.9 link \
     different versions of the SQLite C library, which Cargo refuses in one build)"
);

use std::collections::HashSet;

use futures::future::BoxFuture;
use serde::Deserialize;

use super::sql::{
    enqueue::{resolve, select_args, select_statement, FindByKeys, Written},
    rows::json,
    Arg,
};
use crate::{
    enqueue::{Enqueued, MessageId, NewMessage, QueuedRow, SelectInsert, SelectWritten},
    error::Fault,
};

/// The database behind a bridged connection: which statement texts it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    #[cfg(feature = "postgres")]
    Postgres,
    #[cfg(feature = "mysql")]
    MySql,
    #[cfg(feature = "sqlite")]
    Sqlite,
}

/// What the enqueue needs of a connection of another layer: a statement with parameters,
/// and a query whose one row's one text column (`j`) is read. Errors come back as sqlx
/// 0.9 errors, a database's own as a
/// [`ForeignDatabaseError`](crate::foreign_error::ForeignDatabaseError), so that they are told
/// apart the same way as the sqlx 0.9 path's.
pub(crate) trait RawSql: Send {
    /// The database this connection talks to.
    fn dialect(&self) -> Dialect;

    /// True inside a transaction (after a lost one, nothing of it may commit).
    fn in_transaction(&mut self) -> bool;

    /// Runs `sql` with `args`; how many rows it changed.
    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>>;

    /// Runs `sql` with `args` and reads its first row's column `j` (text or NULL).
    fn query_text<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<Option<String>, sqlx::Error>>;
}

/// One database's statement texts for the bridged enqueue.
struct Queries {
    enqueue: &'static str,
    enqueue_select: &'static str,
    written: &'static str,
    find_by_keys: &'static str,
    queued: &'static str,
    select_written: &'static str,
    /// Records a processed id (the inbox).
    inbox_record: &'static str,
    /// Run after an insert that lost the caller's transaction.
    lost: Lost,
}

/// What makes sure nothing of a lost transaction commits.
enum Lost {
    /// Statements run one by one (MariaDB/MySQL: roll back, open a read-only transaction).
    #[cfg(feature = "mysql")]
    End(&'static str),
    /// Statements that mark the transaction so its commit fails, then a query saying
    /// whether foreign keys (which the mark needs) are on (SQLite).
    #[cfg(feature = "sqlite")]
    Mark(&'static str, &'static str),
    /// Nothing to do: the database itself refuses the rest of the transaction
    /// (PostgreSQL).
    #[cfg(feature = "postgres")]
    Refused,
}

fn queries(dialect: Dialect) -> &'static Queries {
    match dialect {
        #[cfg(feature = "postgres")]
        Dialect::Postgres => &Queries {
            enqueue: include_str!("../postgres/queries/enqueue/enqueue.sql"),
            enqueue_select: include_str!("../postgres/queries/enqueue/enqueue_select.sql"),
            written: include_str!("../postgres/queries/bridge/bridge_written.sql"),
            find_by_keys: include_str!("../postgres/queries/bridge/bridge_find_by_keys.sql"),
            queued: include_str!("../postgres/queries/bridge/bridge_queued.sql"),
            inbox_record: include_str!("../postgres/queries/inbox/inbox_record.sql"),
            select_written: include_str!("../postgres/queries/bridge/bridge_select_written.sql"),
            lost: Lost::Refused,
        },
        #[cfg(feature = "mysql")]
        Dialect::MySql => &Queries {
            enqueue: include_str!("../mysql/queries/enqueue/enqueue.sql"),
            enqueue_select: include_str!("../mysql/queries/enqueue/enqueue_select.sql"),
            written: include_str!("../mysql/queries/bridge/bridge_written.sql"),
            find_by_keys: include_str!("../mysql/queries/bridge/bridge_find_by_keys.sql"),
            queued: include_str!("../mysql/queries/bridge/bridge_queued.sql"),
            inbox_record: include_str!("../mysql/queries/inbox/inbox_record.sql"),
            select_written: include_str!("../mysql/queries/bridge/bridge_select_written.sql"),
            lost: Lost::End(include_str!(
                "../mysql/queries/enqueue/end_lost_transaction.sql"
            )),
        },
        #[cfg(feature = "sqlite")]
        Dialect::Sqlite => &Queries {
            enqueue: include_str!("../sqlite/queries/enqueue/enqueue.sql"),
            enqueue_select: include_str!("../sqlite/queries/enqueue/enqueue_select.sql"),
            written: include_str!("../sqlite/queries/bridge/bridge_written.sql"),
            find_by_keys: include_str!("../sqlite/queries/bridge/bridge_find_by_keys.sql"),
            queued: include_str!("../sqlite/queries/bridge/bridge_queued.sql"),
            inbox_record: include_str!("../sqlite/queries/inbox/inbox_record.sql"),
            select_written: include_str!("../sqlite/queries/bridge/bridge_select_written.sql"),
            lost: Lost::Mark(
                include_str!("../sqlite/queries/enqueue/mark_lost_transaction.sql"),
                include_str!("../sqlite/queries/bridge/bridge_foreign_keys.sql"),
            ),
        },
    }
}

impl Dialect {
    /// The `now` parameter of the insert statements: the database's clock (NULL), but
    /// SQLite's statements take the process clock (one host: it is the time authority).
    fn now(self) -> Option<i64> {
        match self {
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => Some(crate::clock::unix_millis(crate::clock::system_now())),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The rows of a batch as the dialect's `enqueue.sql` reads them.
    fn encode(self, rows: &[NewMessage]) -> Result<String, sqlx::Error> {
        match self {
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => super::sql::enqueue::encode_row_arrays(rows),
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            #[allow(unreachable_patterns)]
            _ => super::sql::enqueue::encode_rows(rows),
        }
    }
}

/// [`InsertMessages::insert_messages`](crate::enqueue::InsertMessages::insert_messages)
/// through `conn`.
pub(crate) async fn insert_messages<C: RawSql + ?Sized>(
    conn: &mut C,
    rows: &[NewMessage],
) -> Result<Vec<Enqueued>, sqlx::Error> {
    let result = insert(conn, rows).await;
    if let Err(e) = &result {
        if Fault::of(e).loses_transaction() && conn.in_transaction() {
            lose_transaction(conn).await;
        }
    }
    result
}

async fn insert<C: RawSql + ?Sized>(
    conn: &mut C,
    rows: &[NewMessage],
) -> Result<Vec<Enqueued>, sqlx::Error> {
    let dialect = conn.dialect();
    let q = queries(dialect);
    let encoded = dialect.encode(rows)?;
    conn.execute(
        q.enqueue,
        &[Arg::Text(&encoded), Arg::OptInt(dialect.now())],
    )
    .await?;
    // Ids are fresh: only a taken key can have kept a row out, and only then is it asked
    // which rows are in the table (this transaction sees its own).
    let written = if rows.iter().all(|m| m.idempotency_key.is_none()) {
        Written::All
    } else {
        let ids: Vec<&str> = rows.iter().map(|m| m.id.as_str()).collect();
        let ids = json(&ids)?;
        let found: Vec<String> = read_json(conn.query_text(q.written, &[Arg::Text(&ids)]).await?)?;
        Written::Ids(found.into_iter().collect::<HashSet<_>>())
    };
    resolve(&mut Keys(conn), rows, written).await
}

/// [`InsertMessages::insert_select`](crate::enqueue::InsertMessages::insert_select)
/// through `conn`.
pub(crate) async fn insert_select<C: RawSql + ?Sized>(
    conn: &mut C,
    insert: &SelectInsert<'_>,
) -> Result<SelectWritten, sqlx::Error> {
    let dialect = conn.dialect();
    let q = queries(dialect);
    #[cfg(feature = "postgres")]
    let numbered = dialect == Dialect::Postgres;
    #[cfg(not(feature = "postgres"))]
    let numbered = false;
    let sql = select_statement(q.enqueue_select, insert, numbered);
    let args = select_args(insert, dialect.now());
    let result = conn.execute(&sql, &args).await;
    if let Err(e) = &result {
        if Fault::of(e).loses_transaction() && conn.in_transaction() {
            lose_transaction(conn).await;
        }
    }
    result?;
    let (lo, hi) = insert.id_range();
    let args = [Arg::Text(&lo), Arg::Text(&hi)];
    let (count, first): (i64, Option<String>) =
        read_json(conn.query_text(q.select_written, &args).await?)?;
    #[cfg(feature = "postgres")]
    if dialect == Dialect::Postgres && count > 0 {
        // Wakes idle workers of the type at commit.
        let sql = include_str!("../postgres/queries/bridge/bridge_notify.sql");
        conn.execute(sql, &[Arg::Text(insert.queue)]).await?;
    }
    Ok(SelectWritten {
        inserted: count.max(0) as u64,
        first_payload: first.map(String::into_bytes),
    })
}

/// [`InsertMessages::queued_rows`](crate::enqueue::InsertMessages::queued_rows) through
/// `conn`.
/// Records a processed id in the inbox through a bridged connection (see
/// [`InsertMessages::record_processed`](crate::enqueue::InsertMessages::record_processed)).
pub(crate) async fn record_processed<C: RawSql + ?Sized>(
    conn: &mut C,
    consumer: &str,
    id: &str,
    at_ms: i64,
) -> Result<bool, sqlx::Error> {
    let q = queries(conn.dialect());
    let args = [Arg::Text(consumer), Arg::Text(id), Arg::Int(at_ms)];
    Ok(conn.execute(q.inbox_record, &args).await? > 0)
}

pub(crate) async fn queued_rows<C: RawSql + ?Sized>(
    conn: &mut C,
    type_tag: &str,
) -> Result<Vec<QueuedRow>, sqlx::Error> {
    /// One row of `bridge_queued.sql`.
    #[derive(Deserialize)]
    struct Row {
        id: String,
        payload: String,
        group: Option<String>,
        due_at: i64,
        priority: i64,
        attempts: i64,
        max_attempts: i64,
        key: Option<String>,
        running: i64,
    }
    let q = queries(conn.dialect());
    let rows: Vec<Row> = read_json(conn.query_text(q.queued, &[Arg::Text(type_tag)]).await?)?;
    let count = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
    let mut rows: Vec<QueuedRow> = rows
        .into_iter()
        .map(|r| QueuedRow {
            id: MessageId::from_string(r.id),
            payload: r.payload.into_bytes(),
            group: r.group,
            due_at: crate::clock::from_unix_millis(r.due_at),
            priority: r.priority,
            attempts: count(r.attempts),
            max_attempts: count(r.max_attempts),
            idempotency_key: r.key,
            running: r.running != 0,
        })
        .collect();
    rows.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    Ok(rows)
}

/// The holders of taken keys, read through a bridged connection.
struct Keys<'c, C: ?Sized>(&'c mut C);

impl<C: RawSql + ?Sized> FindByKeys for Keys<'_, C> {
    fn find_by_keys<'a>(
        &'a mut self,
        queue: &'a str,
        keys: String,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, sqlx::Error>> {
        Box::pin(async move {
            let q = queries(self.0.dialect());
            let args = [Arg::Text(queue), Arg::Text(&keys)];
            read_json(self.0.query_text(q.find_by_keys, &args).await?)
        })
    }
}

/// A JSON text read back (NULL: an aggregate over no rows, read as the empty value).
fn read_json<T: serde::de::DeserializeOwned + Default>(
    text: Option<String>,
) -> Result<T, sqlx::Error> {
    match text {
        None => Ok(T::default()),
        Some(text) => serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(e.into())),
    }
}

/// The statements of a `.sql` file, one by one (comment lines dropped first).
#[cfg(any(feature = "mysql", feature = "sqlite"))]
fn statements(sql: &str) -> Vec<String> {
    let text: Vec<&str> = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect();
    text.join("\n")
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Makes sure nothing of a transaction that an enqueue lost commits (see the sqlx 0.9
/// path of each database for why each does what it does).
async fn lose_transaction<C: RawSql + ?Sized>(conn: &mut C) {
    match queries(conn.dialect()).lost {
        #[cfg(feature = "postgres")]
        Lost::Refused => {}
        #[cfg(feature = "mysql")]
        Lost::End(sql) => {
            for statement in statements(sql).iter() {
                if let Err(e) = conn.execute(statement, &[]).await {
                    tracing::error!(
                        error = %e,
                        "cannot end the transaction an enqueue lost; roll it back: its later \
                         statements may commit without the message"
                    );
                    return;
                }
            }
        }
        #[cfg(feature = "sqlite")]
        Lost::Mark(mark, foreign_keys) => {
            for statement in statements(mark).iter().filter(|s| !s.starts_with("SELECT")) {
                if let Err(e) = conn.execute(statement, &[]).await {
                    tracing::error!(
                        error = %e,
                        "cannot mark the transaction an enqueue lost; roll it back: its later \
                         statements may commit without the message"
                    );
                    return;
                }
            }
            if conn
                .query_text(foreign_keys, &[])
                .await
                .ok()
                .flatten()
                .as_deref()
                != Some("1")
            {
                tracing::error!(
                    "an enqueue lost its transaction, and with foreign_keys off on this \
                     connection the outbox cannot keep the transaction's later statements \
                     from committing without the message: roll it back (or turn \
                     foreign_keys on for the connection)"
                );
            }
        }
    }
}

/// Implements [`InsertMessages`](crate::enqueue::InsertMessages) for connection types
/// that implement [`RawSql`].
macro_rules! insert_messages_via_raw_sql {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::enqueue::InsertMessages for $ty {
            fn insert_messages<'a>(
                &'a mut self,
                rows: &'a [$crate::enqueue::NewMessage],
            ) -> futures::future::BoxFuture<
                'a,
                Result<Vec<$crate::enqueue::Enqueued>, sqlx::Error>,
            > {
                Box::pin($crate::backend::bridge::insert_messages(self, rows))
            }

            fn insert_select<'a>(
                &'a mut self,
                insert: &'a $crate::enqueue::SelectInsert<'a>,
            ) -> futures::future::BoxFuture<
                'a,
                Result<$crate::enqueue::SelectWritten, sqlx::Error>,
            > {
                Box::pin($crate::backend::bridge::insert_select(self, insert))
            }

            fn queued_rows<'a>(
                &'a mut self,
                type_tag: &'a str,
            ) -> futures::future::BoxFuture<
                'a,
                Result<Vec<$crate::enqueue::QueuedRow>, sqlx::Error>,
            > {
                Box::pin($crate::backend::bridge::queued_rows(self, type_tag))
            }

            fn record_processed<'a>(
                &'a mut self,
                consumer: &'a str,
                id: &'a str,
                at_ms: i64,
            ) -> futures::future::BoxFuture<'a, Result<bool, sqlx::Error>> {
                Box::pin($crate::backend::bridge::record_processed(self, consumer, id, at_ms))
            }
        }
    )*};
}
pub(crate) use insert_messages_via_raw_sql;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_files_split_into_statements_without_comments() {
        let sql = "-- one\n-- two; still a comment\nROLLBACK;\nSTART TRANSACTION READ ONLY;\n";
        assert_eq!(
            statements(sql),
            vec!["ROLLBACK", "START TRANSACTION READ ONLY"]
        );
    }
}
