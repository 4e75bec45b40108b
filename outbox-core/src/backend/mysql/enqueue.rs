//! Transactional enqueue on MySQL/MariaDB: one statement per chunk (`JSON_TABLE`), a taken
//! key becomes a no-op `ON DUPLICATE KEY UPDATE`, then a locking read tells which rows
//! are ours (MySQL has no `RETURNING`). Due and enqueue times come from the database's
//! clock (`@@timestamp`).

use futures::future::BoxFuture;
use sqlx::MySqlConnection;

use crate::{
    backend::sql::{
        bind,
        enqueue::{due_parts, encode_rows, resolve, FindByKeys, Written},
        Arg,
    },
    enqueue::{Enqueued, InsertMessages, NewMessage},
};

impl InsertMessages for MySqlConnection {
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        Box::pin(async move {
            match rows {
                // One message (the common case): a plain one-row insert.
                [m] => {
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
                    ];
                    bind(sqlx::query(include_str!("queries/enqueue_one.sql")), &args)
                        .execute(&mut *self)
                        .await?
                }
                _ => {
                    let encoded = encode_rows(rows)?;
                    let args = [Arg::Text(&encoded), Arg::OptInt(None)];
                    bind(sqlx::query(include_str!("queries/enqueue.sql")), &args)
                        .execute(&mut *self)
                        .await?
                }
            };
            // The row count cannot tell (a taken key is a no-op update, and sqlx counts
            // found rows): every keyed row is looked up by its key.
            resolve(self, rows, Written::Unkeyed).await
        })
    }
}

impl FindByKeys for MySqlConnection {
    fn find_by_keys<'a>(
        &'a mut self,
        queue: &'a str,
        keys: String,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, sqlx::Error>> {
        Box::pin(async move {
            sqlx::query_as(include_str!("queries/find_by_keys.sql"))
                .bind(queue)
                .bind(keys)
                .fetch_all(&mut *self)
                .await
        })
    }
}
