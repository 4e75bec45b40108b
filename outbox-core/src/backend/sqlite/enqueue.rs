//! Transactional enqueue on SQLite: one statement per chunk (`jsonb_each`; its row count
//! tells whether every message was written), duplicates skipped by the unique
//! `(type_tag, idempotency_key)` index and reported back.
//! A commit hook on the caller's connection wakes this process's idle workers of the
//! written types as soon as the transaction commits.
//!
//! No `RETURNING`: SQLite runs it through a temporary table (1.4–1.7× the time of the
//! insert alone for a large fan-out, a fifth of a one-row insert's instructions), so the
//! row count says whether all were written, and only when some keys were taken does
//! `written_ids.sql` ask which.
//!
//! An enqueue that loses the caller's transaction (SQLITE_BUSY) marks it, so that its
//! commit fails and nothing of it is written (see [`mark_lost_transaction`]).

use std::collections::HashSet;

use futures::future::BoxFuture;
use sqlx::{Connection, Row, SqliteConnection};

use crate::{
    backend::sql::{
        bind,
        enqueue::{
            encode_row_arrays, ids_json, one_args, queued_row, resolve, select_args,
            select_statement, FindByKeys, Written,
        },
        Arg,
    },
    clock::{system_now, unix_millis},
    enqueue::{Enqueued, InsertMessages, NewMessage, QueuedRow, SelectInsert, SelectWritten},
    error::Fault,
};

impl InsertMessages for SqliteConnection {
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        Box::pin(async move {
            let result = insert(self, rows).await;
            if let Err(e) = &result {
                if Fault::of(e).loses_transaction() && self.is_in_transaction() {
                    mark_lost_transaction(self).await;
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
            let args = select_args(insert, Some(unix_millis(system_now())));
            let result = bind(sqlx::query(sqlx::AssertSqlSafe(sql)), &args)
                .execute(&mut *self)
                .await;
            if let Err(e) = &result {
                if Fault::of(e).loses_transaction() && self.is_in_transaction() {
                    mark_lost_transaction(self).await;
                }
            }
            if result?.rows_affected() > 0 {
                wake_at_commit(self, vec![insert.queue]).await?;
            }
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

/// The insert, and the look-ups that tell which rows are ours.
async fn insert(
    conn: &mut SqliteConnection,
    rows: &[NewMessage],
) -> Result<Vec<Enqueued>, sqlx::Error> {
    // One host: the process clock is the time authority.
    let now = unix_millis(system_now());
    let inserted = match rows {
        // One message (the common case): a plain one-row insert.
        // (One with a recipient goes through the batch statement, which checks the
        // suppression list.)
        [m] if m.suppression.is_none() && m.order_key.is_none() => {
            let args = one_args(m, Some(now));
            bind(
                sqlx::query(include_str!("queries/enqueue/enqueue_one.sql")),
                &args,
            )
            .execute(&mut *conn)
            .await?
        }
        _ => {
            let rows = encode_row_arrays(rows)?;
            let args = [Arg::Text(&rows), Arg::Int(now)];
            bind(
                sqlx::query(include_str!("queries/enqueue/enqueue.sql")),
                &args,
            )
            .execute(&mut *conn)
            .await?
        }
    }
    .rows_affected();
    let written = if inserted == rows.len() as u64 {
        Written::All
    } else if rows.len() == 1 {
        Written::Ids(HashSet::new())
    } else {
        Written::Ids(written_ids(conn, rows).await?)
    };
    if inserted > 0 {
        let mut types: Vec<&'static str> = rows.iter().map(|m| m.queue).collect();
        types.sort_unstable();
        types.dedup();
        wake_at_commit(conn, types).await?;
    }
    resolve(conn, rows, written).await
}

/// Which of a batch's ids are in the table (after some of its keys were taken).
async fn written_ids(
    conn: &mut SqliteConnection,
    rows: &[NewMessage],
) -> Result<HashSet<String>, sqlx::Error> {
    let ids = ids_json(rows)?;
    let query = include_str!("queries/enqueue/written_ids.sql");
    let found: Vec<String> = sqlx::query_scalar(query)
        .bind(ids)
        .fetch_all(&mut *conn)
        .await?;
    Ok(found.into_iter().collect())
}

impl FindByKeys for SqliteConnection {
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

/// Makes sure nothing of a transaction that an enqueue lost commits. SQLite keeps a
/// transaction open after SQLITE_BUSY (the busy timeout ran out waiting for the write
/// lock, or, SQLITE_BUSY_SNAPSHOT, another connection wrote since the transaction read),
/// and the caller's later writes could succeed once the lock is free and commit without
/// the message. A marker that breaks a deferred foreign key in a temporary table makes the
/// transaction's COMMIT fail and leaves it open until the caller rolls it back (a commit
/// hook that refused the COMMIT would end the transaction behind sqlx's back, which
/// would then take the connection to be still inside one). Only inside a transaction
/// begun through sqlx (`pool.begin()`, `conn.begin()`): a connection in autocommit lost
/// nothing but the statement.
async fn mark_lost_transaction(conn: &mut SqliteConnection) {
    let sql = include_str!("queries/enqueue/mark_lost_transaction.sql");
    match sqlx::raw_sql(sql).fetch_one(&mut *conn).await {
        Ok(row) if row.try_get::<bool, _>(0).unwrap_or(false) => {}
        Ok(_) => tracing::error!(
            "an enqueue lost its transaction, and with foreign_keys off on this connection \
             the outbox cannot keep the transaction's later statements from committing \
             without the message: roll it back (or connect with foreign_keys on, as sqlx and \
             outbox::sqlite::connect do)"
        ),
        Err(e) => tracing::error!(
            error = %e,
            "cannot mark the transaction an enqueue lost; roll it back: its later statements \
             may commit without the message"
        ),
    }
}

/// Arranges for the next commit of `conn` to wake this process's workers of `types` (once; a rolled-back transaction wakes nobody until the connection's next
/// commit). Skipped when no worker of this process waits: it costs a round trip to the
/// connection's thread.
async fn wake_at_commit(
    conn: &mut SqliteConnection,
    types: Vec<&'static str>,
) -> Result<(), sqlx::Error> {
    if !super::wakeups().has_subscribers() {
        return Ok(());
    }
    let mut pending = Some(types);
    conn.lock_handle().await?.set_commit_hook(move || {
        if let Some(types) = pending.take() {
            let wakeups = super::wakeups();
            types.iter().for_each(|t| wakeups.notify(t));
        }
        true
    });
    Ok(())
}
