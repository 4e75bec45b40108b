//! Transactional enqueue on MySQL/MariaDB: one statement per chunk (`JSON_TABLE`), a taken
//! key becomes a no-op `ON DUPLICATE KEY UPDATE`, then a locking read tells which rows
//! are ours (MySQL has no `RETURNING`). Due and enqueue times come from the database's
//! clock (`@@timestamp`).
//!
//! An enqueue that loses the caller's transaction (a deadlock, a lock wait timeout) leaves
//! the connection in a read-only transaction, so that nothing of the lost transaction
//! commits (see [`end_lost_transaction`]).

use futures::future::BoxFuture;
use sqlx::{Connection, MySqlConnection};

use crate::{
    backend::sql::{
        bind,
        enqueue::{
            due_parts, encode_rows, queued_row, resolve, select_args, select_statement, FindByKeys,
            Written,
        },
        Arg,
    },
    enqueue::{Enqueued, InsertMessages, NewMessage, QueuedRow, SelectInsert, SelectWritten},
    error::Fault,
};

impl InsertMessages for MySqlConnection {
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        Box::pin(async move {
            let result = insert(self, rows).await;
            if let Err(e) = &result {
                if Fault::of(e).loses_transaction() && self.is_in_transaction() {
                    end_lost_transaction(self).await;
                }
            }
            result
        })
    }

    fn insert_select<'a>(
        &'a mut self,
        insert: &'a SelectInsert<'a>,
    ) -> BoxFuture<'a, Result<SelectWritten, sqlx::Error>> {
        Box::pin(async move {
            let sql = select_statement(
                include_str!("queries/enqueue/enqueue_select.sql"),
                insert,
                false,
            );
            let args = select_args(insert, None);
            let result = bind(sqlx::query(sqlx::AssertSqlSafe(sql)), &args)
                .execute(&mut *self)
                .await;
            if let Err(e) = &result {
                if Fault::of(e).loses_transaction() && self.is_in_transaction() {
                    end_lost_transaction(self).await;
                }
            }
            result?;
            let (lo, hi) = insert.id_range();
            let (count, first): (i64, Option<Vec<u8>>) =
                sqlx::query_as(include_str!("queries/enqueue/select_written.sql"))
                    .bind(lo)
                    .bind(hi)
                    .fetch_one(&mut *self)
                    .await?;
            Ok(SelectWritten {
                inserted: count.max(0) as u64,
                first_payload: first,
            })
        })
    }

    fn queued_rows<'a>(
        &'a mut self,
        type_tag: &'a str,
    ) -> BoxFuture<'a, Result<Vec<QueuedRow>, sqlx::Error>> {
        Box::pin(async move {
            let rows = sqlx::query(include_str!("queries/testing/testing_queued.sql"))
                .bind(type_tag)
                .fetch_all(&mut *self)
                .await?;
            rows.iter().map(queued_row).collect()
        })
    }

    fn record_processed<'a>(
        &'a mut self,
        consumer: &'a str,
        id: &'a str,
        at_ms: i64,
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>> {
        Box::pin(async move {
            let done = sqlx::query(include_str!("queries/inbox/inbox_record.sql"))
                .bind(consumer)
                .bind(id)
                .bind(at_ms)
                .execute(&mut *self)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }
}

/// The insert and the locking read that tells which rows are ours.
async fn insert(
    conn: &mut MySqlConnection,
    rows: &[NewMessage],
) -> Result<Vec<Enqueued>, sqlx::Error> {
    match rows {
        // One message (the common case): a plain one-row insert.
        // (One with a recipient goes through the batch statement, which checks the
        // suppression list.)
        [m] if m.suppression.is_none() && m.order_key.is_none() => {
            // The database's clock in the statement itself (see enqueue_one.sql).
            let (due, delay) = due_parts(m.due);
            let args = [
                Arg::Text(m.id.as_str()),
                Arg::Text(m.queue),
                Arg::Bytes(&m.payload),
                Arg::Int(i64::from(m.max_attempts)),
                Arg::OptInt(due),
                Arg::Int(delay),
                Arg::Int(i64::from(m.priority)),
                Arg::OptText(m.idempotency_key.as_deref()),
                Arg::OptText(m.group.as_deref()),
            ];
            bind(
                sqlx::query(include_str!("queries/enqueue/enqueue_one.sql")),
                &args,
            )
            .execute(&mut *conn)
            .await?
        }
        _ => {
            let encoded = encode_rows(rows)?;
            let args = [Arg::Text(&encoded), Arg::OptInt(None)];
            bind(
                sqlx::query(include_str!("queries/enqueue/enqueue.sql")),
                &args,
            )
            .execute(&mut *conn)
            .await?
        }
    };
    // The row count cannot tell (a taken key is a no-op update, and sqlx counts
    // found rows): every keyed row is looked up by its key.
    resolve(conn, rows, Written::Unkeyed).await
}

/// Makes sure nothing of a transaction that an enqueue lost commits. After a deadlock
/// MariaDB/MySQL have already rolled the transaction back and the session goes on in
/// autocommit, so the caller's later statements would commit one by one; after a lock
/// wait timeout (1205) only the statement was undone, so the caller's rows would commit
/// without the message. The transaction is rolled back and a read-only one opened in its
/// place: the caller's later writes fail, and its `commit()` or rollback ends it. Only
/// inside a transaction begun through sqlx (`pool.begin()`, `conn.begin()`): a connection
/// in autocommit lost nothing but the statement, and must not be left in a transaction.
async fn end_lost_transaction(conn: &mut MySqlConnection) {
    let sql = include_str!("queries/enqueue/end_lost_transaction.sql");
    if let Err(e) = sqlx::raw_sql(sql).execute(&mut *conn).await {
        tracing::error!(
            error = %e,
            "cannot end the transaction an enqueue lost; roll it back: its later statements \
             may commit without the message"
        );
    }
}

impl FindByKeys for MySqlConnection {
    fn find_by_keys<'a>(
        &'a mut self,
        queue: &'a str,
        keys: String,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, sqlx::Error>> {
        Box::pin(async move {
            sqlx::query_as(include_str!("queries/enqueue/find_by_keys.sql"))
                .bind(queue)
                .bind(keys)
                .fetch_all(&mut *self)
                .await
        })
    }
}
