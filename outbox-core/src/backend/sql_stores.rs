//! The store traits, written once for every SQL backend.
//!
//! Each backend keeps its SQL in `.sql` files of its own (`src/backend/<db>/queries/`);
//! the Rust that binds and reads them is the same everywhere because every query takes
//! its parameters in one canonical order, each parameter once (queries that need a value
//! twice read it from a one-row derived table, so MySQL's positional `?` works too).
//! `sql_stores!(Type, "dir")` implements [`RetryStore`](super::RetryStore),
//! [`RateBucketStore`](super::RateBucketStore), [`PauseStore`](super::PauseStore),
//! [`DeadLetterStore`](super::DeadLetterStore), [`StatsStore`](super::StatsStore) and the
//! shared half of [`Backend`](super::Backend) for a backend struct with a `pool` field.

/// Implements the store traits for `$backend`, reading queries from `$dir` (relative to
/// the crate root). `take = |now, bucket| [...]` lists the parameters of
/// `bucket_take.sql` in order, the one query where MySQL needs a value more than once.
macro_rules! sql_stores {
    ($backend:ty, $dir:literal, take = |$now:ident, $bucket:ident| [$($take:ident),+]) => {
        const _: () = {
            use std::{collections::BTreeMap, time::SystemTime};

            use futures::future::BoxFuture;

            use $crate::{
                admin::{DeadLetter, DeadLetterFilter, PausedType, Requeued, TypeCounts},
                backend::{
                    from_unix_millis, unix_millis, unix_secs_ceil, DeadLetterStore, PauseStore, QueueStore,
                    RateBucketStore, RetryStore, StatsStore, TokenGrant,
                },
                layers::rate_limit::{BucketState, RateLimit},
                Error, MessageId,
            };

            macro_rules! query {
                ($file:literal) => {
                    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $dir, "/", $file))
                };
            }

            /// The three optional dead-letter filter parameters, in query order.
            fn filter_params(f: &DeadLetterFilter) -> (Option<&str>, Option<&str>, Option<i64>) {
                (f.id.as_deref(), f.type_tag.as_deref(), f.failed_before.map(unix_millis))
            }

            fn unix_secs(t: SystemTime) -> i64 {
                t.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
            }

            type DeadLetterRow = (String, String, Vec<u8>, i64, i64, Option<String>, String, Option<i64>, i64);

            impl RetryStore for $backend {
                fn reschedule<'a>(
                    &'a self,
                    id: &'a str,
                    due: SystemTime,
                    give_back_attempt: bool,
                ) -> BoxFuture<'a, Result<(), Error>> {
                    Box::pin(async move {
                        sqlx::query(query!("reschedule.sql"))
                            .bind(id)
                            .bind(unix_secs_ceil(due))
                            .bind(i64::from(give_back_attempt))
                            .execute(&self.pool)
                            .await?;
                        Ok(())
                    })
                }

                fn dead_letter<'a>(
                    &'a self,
                    id: &'a str,
                    reason: &'a str,
                    attempts: u32,
                ) -> BoxFuture<'a, Result<(), Error>> {
                    Box::pin(async move {
                        let enqueued_at = MessageId::from_string(id).enqueued_at().map(unix_millis);
                        let mut tx = self.pool.begin().await?;
                        sqlx::query(query!("dead_letter_insert.sql"))
                            .bind(id)
                            .bind(i64::from(attempts))
                            .bind(reason)
                            .bind(enqueued_at)
                            .bind(unix_millis(SystemTime::now()))
                            .execute(&mut *tx)
                            .await?;
                        sqlx::query(query!("dead_letter_delete_job.sql")).bind(id).execute(&mut *tx).await?;
                        tx.commit().await?;
                        Ok(())
                    })
                }
            }

            impl RateBucketStore for $backend {
                fn take_token<'a>(&'a self, bucket: &'a str, now: f64) -> BoxFuture<'a, Result<TokenGrant, Error>> {
                    Box::pin(async move {
                        let ($now, $bucket) = (now, bucket);
                        let taken = sqlx::query(query!("bucket_take.sql"))$(.bind($take))+.execute(&self.pool).await?;
                        if taken.rows_affected() == 1 {
                            return Ok(TokenGrant::Granted);
                        }
                        Ok(match self.bucket(bucket).await? {
                            None => TokenGrant::NoSuchBucket,
                            Some(state) => TokenGrant::Wait(state.wait_for_token(now)),
                        })
                    })
                }

                fn set_bucket<'a>(&'a self, bucket: &'a str, limit: RateLimit, now: f64) -> BoxFuture<'a, Result<(), Error>> {
                    Box::pin(async move {
                        sqlx::query(query!("bucket_set.sql"))
                            .bind(bucket)
                            .bind(limit.burst)
                            .bind(limit.per_second)
                            .bind(now)
                            .execute(&self.pool)
                            .await?;
                        Ok(())
                    })
                }

                fn bucket<'a>(&'a self, bucket: &'a str) -> BoxFuture<'a, Result<Option<BucketState>, Error>> {
                    Box::pin(async move {
                        let row: Option<(f64, f64, f64, f64)> =
                            sqlx::query_as(query!("bucket_get.sql")).bind(bucket).fetch_optional(&self.pool).await?;
                        Ok(row.map(|(burst, per_second, tokens, updated_at)| BucketState {
                            limit: RateLimit { burst, per_second },
                            tokens,
                            updated_at,
                        }))
                    })
                }
            }

            impl PauseStore for $backend {
                fn pause<'a>(&'a self, type_tag: &'a str, reason: &'a str) -> BoxFuture<'a, Result<(), Error>> {
                    Box::pin(async move {
                        sqlx::query(query!("pause.sql"))
                            .bind(type_tag)
                            .bind(unix_millis(SystemTime::now()))
                            .bind(reason)
                            .execute(&self.pool)
                            .await?;
                        Ok(())
                    })
                }

                fn resume<'a>(&'a self, type_tag: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
                    Box::pin(async move {
                        let done = sqlx::query(query!("resume.sql")).bind(type_tag).execute(&self.pool).await?;
                        Ok(done.rows_affected() > 0)
                    })
                }

                fn paused(&self) -> BoxFuture<'_, Result<Vec<PausedType>, Error>> {
                    Box::pin(async move {
                        let rows: Vec<(String, i64, String)> = sqlx::query_as(query!("paused.sql")).fetch_all(&self.pool).await?;
                        Ok(rows
                            .into_iter()
                            .map(|(type_tag, at, reason)| PausedType { type_tag, paused_at: from_unix_millis(at), reason })
                            .collect())
                    })
                }
            }

            impl DeadLetterStore for $backend {
                fn list_dead<'a>(
                    &'a self,
                    filter: &'a DeadLetterFilter,
                    limit: u32,
                    offset: u64,
                ) -> BoxFuture<'a, Result<Vec<DeadLetter>, Error>> {
                    Box::pin(async move {
                        let (id, type_tag, before) = filter_params(filter);
                        let rows: Vec<DeadLetterRow> = sqlx::query_as(query!("dead_letters_list.sql"))
                            .bind(id)
                            .bind(type_tag)
                            .bind(before)
                            .bind(i64::from(limit))
                            .bind(offset as i64)
                            .fetch_all(&self.pool)
                            .await?;
                        Ok(rows
                            .into_iter()
                            .map(|(id, type_tag, payload, attempts, max_attempts, key, last_error, enqueued_at, failed_at)| {
                                DeadLetter {
                                    id: MessageId::from_string(id),
                                    type_tag,
                                    payload,
                                    attempts: attempts as u32,
                                    max_attempts: max_attempts as u32,
                                    idempotency_key: key,
                                    last_error,
                                    enqueued_at: enqueued_at.map(from_unix_millis),
                                    failed_at: from_unix_millis(failed_at),
                                }
                            })
                            .collect())
                    })
                }

                fn count_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(async move {
                        let (id, type_tag, before) = filter_params(filter);
                        let n: i64 = sqlx::query_scalar(query!("dead_letters_count.sql"))
                            .bind(id)
                            .bind(type_tag)
                            .bind(before)
                            .fetch_one(&self.pool)
                            .await?;
                        Ok(n as u64)
                    })
                }

                fn requeue_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<Requeued, Error>> {
                    Box::pin(async move {
                        let (id, type_tag, before) = filter_params(filter);
                        // Writes first: a transaction that reads before writing can fail at
                        // once on SQLite when another writer commits in between.
                        let mut tx = self.pool.begin().await?;
                        sqlx::query(query!("dead_letters_requeue.sql"))
                            .bind(unix_secs(SystemTime::now()))
                            .bind(id)
                            .bind(type_tag)
                            .bind(before)
                            .execute(&mut *tx)
                            .await?;
                        let moved = sqlx::query(query!("dead_letters_delete_requeued.sql"))
                            .bind(id)
                            .bind(type_tag)
                            .bind(before)
                            .execute(&mut *tx)
                            .await?
                            .rows_affected();
                        let left: i64 = sqlx::query_scalar(query!("dead_letters_count.sql"))
                            .bind(id)
                            .bind(type_tag)
                            .bind(before)
                            .fetch_one(&mut *tx)
                            .await?;
                        tx.commit().await?;
                        Ok(Requeued { requeued: moved, key_taken: left as u64 })
                    })
                }

                fn purge_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(async move {
                        let (id, type_tag, before) = filter_params(filter);
                        let done = sqlx::query(query!("dead_letters_purge.sql"))
                            .bind(id)
                            .bind(type_tag)
                            .bind(before)
                            .execute(&self.pool)
                            .await?;
                        Ok(done.rows_affected())
                    })
                }
            }

            impl StatsStore for $backend {
                fn status_counts(&self, now: SystemTime) -> BoxFuture<'_, Result<Vec<TypeCounts>, Error>> {
                    Box::pin(async move {
                        let rows: Vec<(String, i64, i64, i64, i64, i64, i64)> =
                            sqlx::query_as(query!("status_counts.sql")).bind(unix_secs(now)).fetch_all(&self.pool).await?;
                        let mut by_type: BTreeMap<String, TypeCounts> = BTreeMap::new();
                        for (type_tag, pending, scheduled, running, retrying, done, dead) in rows {
                            let c = by_type
                                .entry(type_tag.clone())
                                .or_insert_with(|| TypeCounts { type_tag, ..TypeCounts::default() });
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

            impl QueueStore for $backend {
                fn recover_orphans<'a>(&'a self, queue: &'a str, lease: std::time::Duration) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(self.recover_orphans_sql(queue, lease))
                }

                fn count_unfinished<'a>(&'a self, queues: &'a [&'static str], prefix: &'a str) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(self.count_unfinished_sql(queues, prefix))
                }

                fn unregistered_pending<'a>(
                    &'a self,
                    registered: &'a [&'static str],
                ) -> BoxFuture<'a, Result<Vec<$crate::backend::UnregisteredType>, Error>> {
                    Box::pin(self.unregistered_pending_sql(registered))
                }

                fn fail_unregistered<'a>(&'a self, registered: &'a [&'static str], reason: &'a str) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(self.fail_unregistered_sql(registered, reason))
                }
            }

            impl $backend {
                /// Due or claimed messages of `queues` (see `QueueStore::count_unfinished`).
                async fn count_unfinished_sql(&self, queues: &[&str], prefix: &str) -> Result<u64, Error> {
                    let n: i64 = sqlx::query_scalar(query!("count_unfinished.sql"))
                        .bind(json_list(queues))
                        .bind(prefix)
                        .bind(unix_secs(SystemTime::now()))
                        .fetch_one(&self.pool)
                        .await?;
                    Ok(n as u64)
                }

                /// Re-enqueues the claimed messages of dead workers (see `Backend::recover_orphans`).
                async fn recover_orphans_sql(&self, queue: &str, lease: std::time::Duration) -> Result<u64, Error> {
                    let dead_before = unix_secs(SystemTime::now()) - lease.as_secs() as i64;
                    let done = sqlx::query(query!("recover_orphans.sql")).bind(queue).bind(dead_before).execute(&self.pool).await?;
                    Ok(done.rows_affected())
                }

                /// Pending counts of unregistered types (see `Backend::unregistered_pending`).
                async fn unregistered_pending_sql(
                    &self,
                    registered: &[&str],
                ) -> Result<Vec<$crate::backend::UnregisteredType>, Error> {
                    let rows: Vec<(String, i64)> =
                        sqlx::query_as(query!("unregistered_pending.sql")).bind(json_list(registered)).fetch_all(&self.pool).await?;
                    Ok(rows
                        .into_iter()
                        .map(|(type_tag, n)| $crate::backend::UnregisteredType { type_tag, pending: n as u64 })
                        .collect())
                }

                /// Dead-letters pending messages of unregistered types (see `Backend::fail_unregistered`).
                async fn fail_unregistered_sql(&self, registered: &[&str], reason: &str) -> Result<u64, Error> {
                    let ids: Vec<String> =
                        sqlx::query_scalar(query!("unregistered_ids.sql")).bind(json_list(registered)).fetch_all(&self.pool).await?;
                    for id in &ids {
                        self.dead_letter(id, reason, 0).await?;
                    }
                    Ok(ids.len() as u64)
                }
            }

            /// Type tags as the JSON array the queries take.
            fn json_list(items: &[&str]) -> String {
                serde_json::to_string(items).expect("a list of strings always serializes")
            }
        };
    };
}

pub(crate) use sql_stores;
