//! Dead letters and status counts on SQLite.

use std::{collections::BTreeMap, time::SystemTime};

use futures::future::BoxFuture;

use super::SqliteBackend;
use crate::{
    admin::{DeadLetter, DeadLetterFilter, Requeued, TypeCounts},
    backend::{from_unix_millis, unix_millis, DeadLetterStore, StatsStore},
    Error, MessageId,
};

/// The three optional filter parameters every dead-letter query takes as ?1..?3.
fn filter_params(f: &DeadLetterFilter) -> (Option<&str>, Option<&str>, Option<i64>) {
    (
        f.id.as_deref(),
        f.type_tag.as_deref(),
        f.failed_before.map(unix_millis),
    )
}

type DeadLetterRow = (
    String,
    String,
    Vec<u8>,
    i64,
    i64,
    Option<String>,
    String,
    Option<i64>,
    i64,
);

impl DeadLetterStore for SqliteBackend {
    fn list_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        limit: u32,
        offset: u64,
    ) -> BoxFuture<'a, Result<Vec<DeadLetter>, Error>> {
        Box::pin(async move {
            let (id, type_tag, before) = filter_params(filter);
            let rows: Vec<DeadLetterRow> =
                sqlx::query_as(include_str!("queries/dead_letters_list.sql"))
                    .bind(id)
                    .bind(type_tag)
                    .bind(before)
                    .bind(i64::from(limit))
                    .bind(offset as i64)
                    .fetch_all(&self.pool)
                    .await?;
            Ok(rows
                .into_iter()
                .map(
                    |(
                        id,
                        type_tag,
                        payload,
                        attempts,
                        max_attempts,
                        key,
                        last_error,
                        enqueued_at,
                        failed_at,
                    )| DeadLetter {
                        id: MessageId::from_string(id),
                        type_tag,
                        payload,
                        attempts: attempts as u32,
                        max_attempts: max_attempts as u32,
                        idempotency_key: key,
                        last_error,
                        enqueued_at: enqueued_at.map(from_unix_millis),
                        failed_at: from_unix_millis(failed_at),
                    },
                )
                .collect())
        })
    }

    fn count_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let (id, type_tag, before) = filter_params(filter);
            let n: i64 = sqlx::query_scalar(include_str!("queries/dead_letters_count.sql"))
                .bind(id)
                .bind(type_tag)
                .bind(before)
                .fetch_one(&self.pool)
                .await?;
            Ok(n as u64)
        })
    }

    fn requeue_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
    ) -> BoxFuture<'a, Result<Requeued, Error>> {
        Box::pin(async move {
            let (id, type_tag, before) = filter_params(filter);
            let mut tx = self.pool.begin().await?;
            let matching: i64 = sqlx::query_scalar(include_str!("queries/dead_letters_count.sql"))
                .bind(id)
                .bind(type_tag)
                .bind(before)
                .fetch_one(&mut *tx)
                .await?;
            let now = super::now_unix();
            sqlx::query(include_str!("queries/dead_letters_requeue.sql"))
                .bind(id)
                .bind(type_tag)
                .bind(before)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let moved = sqlx::query(include_str!("queries/dead_letters_delete_requeued.sql"))
                .bind(id)
                .bind(type_tag)
                .bind(before)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(Requeued {
                requeued: moved,
                key_taken: (matching as u64).saturating_sub(moved),
            })
        })
    }

    fn purge_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let (id, type_tag, before) = filter_params(filter);
            let done = sqlx::query(include_str!("queries/dead_letters_purge.sql"))
                .bind(id)
                .bind(type_tag)
                .bind(before)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected())
        })
    }
}

impl StatsStore for SqliteBackend {
    fn status_counts(&self, now: SystemTime) -> BoxFuture<'_, Result<Vec<TypeCounts>, Error>> {
        Box::pin(async move {
            let now = now
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or_default();
            let rows: Vec<(String, i64, i64, i64, i64, i64, i64)> =
                sqlx::query_as(include_str!("queries/status_counts.sql"))
                    .bind(now)
                    .fetch_all(&self.pool)
                    .await?;
            let mut by_type: BTreeMap<String, TypeCounts> = BTreeMap::new();
            for (type_tag, pending, scheduled, running, retrying, done, dead) in rows {
                let c = by_type
                    .entry(type_tag.clone())
                    .or_insert_with(|| TypeCounts {
                        type_tag,
                        ..TypeCounts::default()
                    });
                c.pending += pending as u64;
                c.scheduled += scheduled as u64;
                c.running += running as u64;
                c.retrying += retrying as u64;
                c.done += done as u64;
                c.dead += dead as u64;
            }
            Ok(by_type.into_values().collect())
        })
    }
}
