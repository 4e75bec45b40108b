//! Transactional enqueue on SQLite: one statement per chunk, duplicates skipped by the
//! unique `(job_type, idempotency_key)` index and reported back.

use std::collections::{HashMap, HashSet};

use futures::future::BoxFuture;
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::{
    enqueue::{EnqueueConnection, Enqueued, NewMessage},
    MessageId,
};

/// One row as the insert statement reads it from its JSON parameter.
#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    queue: &'a str,
    job: &'a str,
    run_at: i64,
    priority: u16,
    max_attempts: u32,
    key: Option<&'a str>,
}

impl EnqueueConnection for SqliteConnection {
    fn insert_messages<'a>(
        &'a mut self,
        rows: &'a [NewMessage],
    ) -> BoxFuture<'a, Result<Vec<Enqueued>, sqlx::Error>> {
        Box::pin(async move {
            let encoded = rows
                .iter()
                .map(|m| {
                    Ok(Row {
                        id: m.id.as_str(),
                        queue: m.queue,
                        job: std::str::from_utf8(&m.payload)
                            .map_err(|e| sqlx::Error::Encode(e.into()))?,
                        run_at: m.run_at,
                        priority: m.priority,
                        max_attempts: m.max_attempts,
                        key: m.idempotency_key.as_deref(),
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()?;
            let batch =
                serde_json::to_string(&encoded).map_err(|e| sqlx::Error::Encode(e.into()))?;
            let written: Vec<(String,)> = sqlx::query_as(include_str!("queries/enqueue.sql"))
                .bind(batch)
                .fetch_all(&mut *self)
                .await?;
            let written: HashSet<String> = written.into_iter().map(|(id,)| id).collect();
            let holders = find_key_holders(self, rows, &written).await?;
            rows.iter()
                .map(|m| {
                    if written.contains(m.id.as_str()) {
                        return Ok(Enqueued::New(m.id.clone()));
                    }
                    m.idempotency_key
                        .as_ref()
                        .and_then(|k| holders.get(&(m.queue, k.as_str())))
                        .map(|id| Enqueued::Duplicate {
                            existing: MessageId::from_string(id.clone()),
                        })
                        .ok_or_else(|| {
                            sqlx::Error::Protocol(format!(
                                "message {} was neither written nor found as a duplicate",
                                m.id
                            ))
                        })
                })
                .collect()
        })
    }
}

/// For rows that were skipped, the ids of the messages holding their keys.
async fn find_key_holders<'r>(
    conn: &mut SqliteConnection,
    rows: &'r [NewMessage],
    written: &HashSet<String>,
) -> Result<HashMap<(&'r str, &'r str), String>, sqlx::Error> {
    let mut wanted: HashMap<&'static str, Vec<&'r str>> = HashMap::new();
    for m in rows.iter().filter(|m| !written.contains(m.id.as_str())) {
        if let Some(k) = &m.idempotency_key {
            wanted.entry(m.queue).or_default().push(k.as_str());
        }
    }
    let mut holders = HashMap::new();
    for (queue, keys) in wanted {
        let found: Vec<(String, String)> = sqlx::query_as(include_str!("queries/find_by_keys.sql"))
            .bind(queue)
            .bind(serde_json::to_string(&keys).map_err(|e| sqlx::Error::Encode(e.into()))?)
            .fetch_all(&mut *conn)
            .await?;
        for (key, id) in found {
            if let Some(k) = keys.iter().find(|k| **k == key) {
                holders.insert((queue, *k), id);
            }
        }
    }
    Ok(holders)
}
