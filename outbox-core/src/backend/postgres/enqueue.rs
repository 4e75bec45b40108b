//! Transactional enqueue on PostgreSQL: one statement per chunk (`jsonb_to_recordset`,
//! `ON CONFLICT DO NOTHING RETURNING`): a duplicate key never raises 23505, so the
//! caller's transaction stays usable. The statements NOTIFY the written types themselves
//! (`pg_notify` on their `RETURNING` rows); PostgreSQL delivers it at commit. Due and
//! enqueue times come from the database's clock (`now()`).

use futures::future::BoxFuture;
use sqlx::PgConnection;

use crate::{
    backend::sql::{
        bind,
        enqueue::{
            encode_rows, one_args, queued_row, resolve, select_args, select_statement, FindByKeys,
            Written,
        },
        Arg,
    },
    enqueue::{Enqueued, InsertMessages, NewMessage, QueuedRow, SelectInsert, SelectWritten},
};

impl InsertMessages for PgConnection {
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        Box::pin(async move {
            let ids: Vec<String> = match rows {
                // One message (the common case): a plain one-row insert.
                // (One with a recipient goes through the batch statement, which checks the
                // suppression list.)
                [m] if m.suppression.is_none() && m.order_key.is_none() => {
                    let args = one_args(m, None);
                    let query = bind(
                        sqlx::query(include_str!("queries/enqueue/enqueue_one.sql")),
                        &args,
                    );
                    query
                        .try_map(|row| sqlx::Row::try_get(&row, 0))
                        .fetch_all(&mut *self)
                        .await?
                }
                _ => {
                    let encoded = encode_rows(rows)?;
                    let args = [Arg::Text(&encoded), Arg::OptInt(None)];
                    let query = bind(
                        sqlx::query(include_str!("queries/enqueue/enqueue.sql")),
                        &args,
                    );
                    query
                        .try_map(|row| sqlx::Row::try_get(&row, 0))
                        .fetch_all(&mut *self)
                        .await?
                }
            };
            // Ids are fresh: as many written as given means all of them.
            let written = if ids.len() == rows.len() {
                Written::All
            } else {
                Written::Ids(ids.into_iter().collect())
            };
            resolve(self, rows, written).await
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
                true,
            );
            let args = select_args(insert, None);
            let inserted: i64 = bind(sqlx::query(sqlx::AssertSqlSafe(sql)), &args)
                .try_map(|row| sqlx::Row::try_get(&row, 0))
                .fetch_one(&mut *self)
                .await?;
            if inserted > 0 {
                // Wakes idle workers of the type at commit.
                sqlx::query("SELECT pg_notify('outbox_messages', $1)")
                    .bind(insert.queue)
                    .execute(&mut *self)
                    .await?;
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

impl FindByKeys for PgConnection {
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
