//! Transactional enqueue on SQLite: one statement per chunk, duplicates skipped by the
//! unique `(job_type, idempotency_key)` index and reported back.

use std::collections::{HashMap, HashSet};

use futures::future::BoxFuture;
use sqlx::SqliteConnection;

use crate::{
    backend::enqueue_batch::{encode_rows, keys_to_resolve, resolve},
    enqueue::{EnqueueConnection, Enqueued, NewMessage},
};

impl EnqueueConnection for SqliteConnection {
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        Box::pin(async move {
            let written: Vec<String> = sqlx::query_scalar(include_str!("queries/enqueue.sql"))
                .bind(encode_rows(rows)?)
                .fetch_all(&mut *self)
                .await?;
            let written: HashSet<String> = written.into_iter().collect();
            let mut holders = HashMap::new();
            for (queue, keys) in keys_to_resolve(rows, &written) {
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
            resolve(rows, &written, &holders)
        })
    }
}
