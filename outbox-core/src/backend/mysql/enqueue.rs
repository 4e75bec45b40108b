//! Transactional enqueue on MySQL/MariaDB: one statement per chunk (`JSON_TABLE`), a taken
//! key becomes a no-op `ON DUPLICATE KEY UPDATE`, then a locking read tells which rows
//! are ours (MySQL has no `RETURNING`).

use std::collections::{HashMap, HashSet};

use futures::future::BoxFuture;
use sqlx::MySqlConnection;

use crate::{
    backend::enqueue_batch::{bind_message, encode_rows, resolve},
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
                    bind_message!(sqlx::query(include_str!("queries/enqueue_one.sql")), m)
                        .execute(&mut *self)
                        .await?
                }
                _ => {
                    sqlx::query(include_str!("queries/enqueue.sql"))
                        .bind(encode_rows(rows)?)
                        .execute(&mut *self)
                        .await?
                }
            };
            // Rows without a key cannot conflict: they were written.
            let mut written: HashSet<String> = rows
                .iter()
                .filter(|m| m.idempotency_key.is_none())
                .map(|m| m.id.to_string())
                .collect();
            let mut by_queue: HashMap<&'static str, Vec<&str>> = HashMap::new();
            for m in rows {
                if let Some(k) = &m.idempotency_key {
                    by_queue.entry(m.queue).or_default().push(k.as_str());
                }
            }
            let mut holders = HashMap::new();
            for (queue, keys) in by_queue {
                let found: Vec<(String, String)> =
                    sqlx::query_as(include_str!("queries/find_by_keys.sql"))
                        .bind(queue)
                        .bind(
                            serde_json::to_string(&keys)
                                .map_err(|e| sqlx::Error::Encode(e.into()))?,
                        )
                        .fetch_all(&mut *self)
                        .await?;
                holders.extend(
                    found
                        .into_iter()
                        .map(|(key, id)| ((queue.to_owned(), key), id)),
                );
            }
            for m in rows {
                if let Some(k) = &m.idempotency_key {
                    if holders
                        .get(&(m.queue.to_owned(), k.clone()))
                        .map(String::as_str)
                        == Some(m.id.as_str())
                    {
                        written.insert(m.id.to_string());
                    }
                }
            }
            resolve(rows, &written, &holders)
        })
    }
}
