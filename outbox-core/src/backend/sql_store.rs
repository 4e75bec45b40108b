//! The storage port, written once for every SQL backend.
//!
//! Each backend keeps its SQL in `.sql` files of its own (`src/backend/<db>/queries/`);
//! the Rust that binds and reads them is the same everywhere because every query takes
//! its parameters in one canonical order, each parameter once (MySQL's positional `?`
//! reads repeated values from a one-row derived table). Batches travel as one JSON
//! parameter, so every statement is static whatever the batch size.
//!
//! `sql_store!(Type, "dir", bury = [...], bury_unregistered = [...], requeue = [...], take = …)` implements every
//! trait of the port except `claim` (the claim differs per database: `UPDATE … RETURNING`
//! or a locking read) for a backend struct with a `pool` field and three inherent helpers:
//! `claim_rows`, `write_tx` (a write transaction as the database wants it) and
//! `is_transient` (an error after which the whole transaction may simply run again).

/// Implements the port for `$backend`. `bury` and `bury_unregistered` list the statement
/// files of those moves, run in order in one transaction with the same parameters.
macro_rules! sql_store {
    (
        $backend:ty,
        $dir:literal,
        bury = [$($bury:literal),+],
        bury_unregistered = [$($bury_unreg:literal),+],
        requeue = [$($requeue:literal),+],
        take = |$now:ident, $bucket:ident| [$($take:ident),+] $(,)?
    ) => {
        const _: () = {
            use std::{collections::BTreeMap, time::SystemTime};

            use futures::future::BoxFuture;
            use serde::Serialize;

            use $crate::{
                clock::{from_unix_millis, unix_millis, unix_millis_ceil},
                store::{
                    BucketState, ClaimRequest, Claimed, DeadLetter, DeadLetterFilter, DeadLetterStore, FailedAttempt,
                    Held, PauseStore, PausedType, QueueStore, RateBucketStore, RateLimit, Requeued,
                    Settle, Settled, Settlement, StatsStore, TokenGrant, TypeCounts, UnregisteredType,
                },
                Error, MessageId,
            };

            macro_rules! query {
                ($file:literal) => {
                    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $dir, "/", $file))
                };
            }

            /// Runs `$body` (which uses the transaction `$tx` and yields a value) in a write
            /// transaction, again from the start after a transient error (deadlock,
            /// serialization failure, lock wait timeout), up to 8 times. Every write of the
            /// admin surface goes through it, like the workers' own.
            macro_rules! in_write_tx {
                ($self:ident, |$tx:ident| $body:block) => {{
                    let mut attempt = 0u32;
                    loop {
                        let result: Result<_, sqlx::Error> = async {
                            let mut $tx = $self.write_tx().await?;
                            let value = $body;
                            $tx.commit().await?;
                            Ok(value)
                        }
                        .await;
                        match result {
                            Err(e) if <$backend>::is_transient(&e) && attempt < 8 => {
                                attempt += 1;
                                let jitter = u64::from(attempt * 7 % 11);
                                tokio::time::sleep(std::time::Duration::from_millis(5 * u64::from(attempt) + jitter)).await;
                            }
                            other => break other.map_err(Error::from),
                        }
                    }
                }};
            }

            /// A settlement as the statements read it from their JSON parameter.
            #[derive(Serialize)]
            struct Row<'a> {
                id: &'a str,
                attempt: u32,
                claim: u32,
                #[serde(skip_serializing_if = "Option::is_none")]
                due: Option<i64>,
                #[serde(skip_serializing_if = "Option::is_none")]
                text: Option<&'a str>,
                #[serde(skip_serializing_if = "Option::is_none")]
                give_back: Option<i64>,
            }

            fn json<T: Serialize>(value: &T) -> Result<String, sqlx::Error> {
                serde_json::to_string(value).map_err(|e| sqlx::Error::Encode(e.into()))
            }

            /// The three optional dead-letter filter parameters, in query order.
            fn filter_params(f: &DeadLetterFilter) -> (Option<&str>, Option<&str>, Option<i64>) {
                (f.id.as_deref(), f.type_tag.as_deref(), f.failed_before.map(unix_millis))
            }

            type DeadLetterRow = (String, String, Vec<u8>, i64, i64, Option<String>, String, Option<i64>, i64, Option<String>);

            impl QueueStore for $backend {
                fn claim<'a>(&'a self, request: &'a ClaimRequest<'a>) -> BoxFuture<'a, Result<Vec<Claimed>, Error>> {
                    Box::pin(async move {
                        let mut claimed = self.claim_rows(request).await?;
                        claimed.sort_by(Claimed::claim_order);
                        Ok(claimed)
                    })
                }

                fn settle<'a>(
                    &'a self,
                    owner: &'a str,
                    settlements: &'a [Settlement],
                    now: SystemTime,
                ) -> BoxFuture<'a, Result<Settled, Error>> {
                    Box::pin(async move {
                        let (mut delete, mut done, mut retry, mut release, mut bury) =
                            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
                        for s in settlements {
                            let row = |due, text, give_back| Row { id: s.id.as_str(), attempt: s.attempt, claim: s.claim, due, text, give_back };
                            match &s.settle {
                                Settle::Done { keep: false, .. } => delete.push(row(None, None, None)),
                                Settle::Done { keep: true, note } => done.push(row(None, note.as_deref(), None)),
                                Settle::Retry { due, error, give_back_attempt } => retry.push(row(
                                    Some(unix_millis_ceil(*due)),
                                    Some(error.as_str()),
                                    Some(i64::from(*give_back_attempt)),
                                )),
                                Settle::Release => release.push(row(None, None, None)),
                                Settle::Bury { reason } => bury.push(row(None, Some(reason.as_str()), None)),
                            }
                        }
                        let now_ms = unix_millis(now);
                        let groups: [(&Vec<Row<'_>>, &[&str]); 5] = [
                            (&delete, &[query!("settle_delete.sql")]),
                            (&done, &[query!("settle_done.sql")]),
                            (&retry, &[query!("settle_retry.sql")]),
                            (&release, &[query!("settle_release.sql")]),
                            (&bury, &[$(query!($bury)),+]),
                        ];
                        let encoded = groups
                            .iter()
                            .map(|(rows, _)| if rows.is_empty() { Ok(None) } else { json(rows).map(Some) })
                            .collect::<Result<Vec<_>, sqlx::Error>>()?;
                        let applied = in_write_tx!(self, |tx| {
                            let mut applied = 0u64;
                            for ((_, statements), rows) in groups.iter().zip(&encoded) {
                                let Some(rows) = rows else { continue };
                                // The first statement of a group decides how many applied.
                                for (i, sql) in statements.iter().enumerate() {
                                    let done = sqlx::query(*sql)
                                        .bind(owner)
                                        .bind(now_ms)
                                        .bind(rows.as_str())
                                        .execute(&mut *tx)
                                        .await?;
                                    if i == 0 {
                                        applied += done.rows_affected();
                                    }
                                }
                            }
                            applied
                        })?;
                        let applied = applied.min(settlements.len() as u64);
                        Ok(Settled { applied, fenced: settlements.len() as u64 - applied })
                    })
                }

                fn heartbeat<'a>(
                    &'a self,
                    owner: &'a str,
                    type_tag: &'a str,
                    held: &'a [Held],
                    now: SystemTime,
                    lease_until: SystemTime,
                ) -> BoxFuture<'a, Result<(), Error>> {
                    Box::pin(async move {
                        // The registry is for operators; the leases come first.
                        let registered = sqlx::query(query!("worker_heartbeat.sql"))
                            .bind(owner)
                            .bind(type_tag)
                            .bind(unix_millis(now))
                            .execute(&self.pool)
                            .await;
                        if held.is_empty() {
                            return registered.map(drop).map_err(Error::from);
                        }
                        let rows: Vec<Row<'_>> = held
                            .iter()
                            .map(|h| Row { id: h.id.as_str(), attempt: 0, claim: h.claim, due: None, text: None, give_back: None })
                            .collect();
                        let rows = json(&rows)?;
                        let until = unix_millis(lease_until);
                        in_write_tx!(self, |tx| {
                            sqlx::query(query!("extend_leases.sql"))
                                .bind(owner)
                                .bind(until)
                                .bind(rows.as_str())
                                .execute(&mut *tx)
                                .await?;
                        })?;
                        registered.map(drop).map_err(Error::from)
                    })
                }

                fn deregister<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<(), Error>> {
                    Box::pin(async move {
                        sqlx::query(query!("worker_delete.sql")).bind(owner).execute(&self.pool).await?;
                        Ok(())
                    })
                }

                fn rescue_expired<'a>(&'a self, type_tag: &'a str, now: SystemTime) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(async move {
                        let now_ms = unix_millis(now);
                        let n = in_write_tx!(self, |tx| {
                            sqlx::query(query!("rescue_expired.sql"))
                                .bind(type_tag)
                                .bind(now_ms)
                                .execute(&mut *tx)
                                .await?
                                .rows_affected()
                        })?;
                        Ok(n)
                    })
                }

                fn prune_done(&self, before: SystemTime, limit: u32) -> BoxFuture<'_, Result<u64, Error>> {
                    Box::pin(async move {
                        let done = sqlx::query(query!("prune_done.sql"))
                            .bind(unix_millis(before))
                            .bind(i64::from(limit))
                            .execute(&self.pool)
                            .await?;
                        Ok(done.rows_affected())
                    })
                }

                fn count_unfinished<'a>(
                    &'a self,
                    type_tags: &'a [&'static str],
                    owner_prefix: &'a str,
                    now: SystemTime,
                ) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(async move {
                        let n: i64 = sqlx::query_scalar(query!("count_unfinished.sql"))
                            .bind(json(&type_tags)?)
                            .bind(owner_prefix)
                            .bind(unix_millis(now))
                            .fetch_one(&self.pool)
                            .await?;
                        Ok(n as u64)
                    })
                }

                fn unregistered_pending<'a>(
                    &'a self,
                    registered: &'a [&'static str],
                ) -> BoxFuture<'a, Result<Vec<UnregisteredType>, Error>> {
                    Box::pin(async move {
                        let rows: Vec<(String, i64)> = sqlx::query_as(query!("unregistered_pending.sql"))
                            .bind(json(&registered)?)
                            .fetch_all(&self.pool)
                            .await?;
                        Ok(rows
                            .into_iter()
                            .map(|(type_tag, n)| UnregisteredType { type_tag, pending: n as u64 })
                            .collect())
                    })
                }

                fn bury_unregistered<'a>(
                    &'a self,
                    registered: &'a [&'static str],
                    reason: &'a str,
                    now: SystemTime,
                ) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(async move {
                        let registered = json(&registered)?;
                        let now_ms = unix_millis(now);
                        let n = in_write_tx!(self, |tx| {
                            let mut moved = None;
                            for sql in [$(query!($bury_unreg)),+] {
                                let done = sqlx::query(sql)
                                    .bind(registered.as_str())
                                    .bind(reason)
                                    .bind(now_ms)
                                    .execute(&mut *tx)
                                    .await?;
                                moved.get_or_insert(done.rows_affected());
                            }
                            moved.unwrap_or_default()
                        })?;
                        Ok(n)
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
                        in_write_tx!(self, |tx| {
                            sqlx::query(query!("bucket_set.sql"))
                                .bind(bucket)
                                .bind(limit.burst)
                                .bind(limit.per_second)
                                .bind(now)
                                .execute(&mut *tx)
                                .await?;
                        })
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

                fn buckets(&self) -> BoxFuture<'_, Result<Vec<(String, BucketState)>, Error>> {
                    Box::pin(async move {
                        let rows: Vec<(String, f64, f64, f64, f64)> =
                            sqlx::query_as(query!("bucket_list.sql")).fetch_all(&self.pool).await?;
                        Ok(rows
                            .into_iter()
                            .map(|(name, burst, per_second, tokens, updated_at)| {
                                (name, BucketState { limit: RateLimit { burst, per_second }, tokens, updated_at })
                            })
                            .collect())
                    })
                }
            }

            impl PauseStore for $backend {
                fn pause<'a>(&'a self, type_tag: &'a str, reason: &'a str, now: SystemTime) -> BoxFuture<'a, Result<(), Error>> {
                    Box::pin(async move {
                        in_write_tx!(self, |tx| {
                            sqlx::query(query!("pause.sql"))
                                .bind(type_tag)
                                .bind(unix_millis(now))
                                .bind(reason)
                                .execute(&mut *tx)
                                .await?;
                        })
                    })
                }

                fn resume<'a>(&'a self, type_tag: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
                    Box::pin(async move {
                        let done = in_write_tx!(self, |tx| {
                            sqlx::query(query!("resume.sql")).bind(type_tag).execute(&mut *tx).await?.rows_affected()
                        })?;
                        Ok(done > 0)
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
                            .map(|(id, type_tag, payload, attempts, max_attempts, key, last_error, enqueued_at, failed_at, log)| {
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
                                    attempt_log: FailedAttempt::parse_log(log.as_deref()),
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

                fn requeue_dead<'a>(&'a self, filter: &'a DeadLetterFilter, now: SystemTime) -> BoxFuture<'a, Result<Requeued, Error>> {
                    Box::pin(async move {
                        let (id, type_tag, before) = filter_params(filter);
                        let now_ms = unix_millis(now);
                        let moved = in_write_tx!(self, |tx| {
                            // The last statement removes the dead letters now in the queue:
                            // its count is what this call moved.
                            let mut moved = 0;
                            for sql in [$(query!($requeue)),+] {
                                moved = sqlx::query(sql)
                                    .bind(now_ms)
                                    .bind(id)
                                    .bind(type_tag)
                                    .bind(before)
                                    .execute(&mut *tx)
                                    .await?
                                    .rows_affected();
                            }
                            moved
                        })?;
                        let left = self.count_dead(filter).await?;
                        Ok(Requeued { requeued: moved, key_taken: left })
                    })
                }

                fn purge_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
                    Box::pin(async move {
                        let (id, type_tag, before) = filter_params(filter);
                        in_write_tx!(self, |tx| {
                            sqlx::query(query!("dead_letters_purge.sql"))
                                .bind(id)
                                .bind(type_tag)
                                .bind(before)
                                .execute(&mut *tx)
                                .await?
                                .rows_affected()
                        })
                    })
                }
            }

            impl StatsStore for $backend {
                fn status_counts(&self, now: SystemTime) -> BoxFuture<'_, Result<Vec<TypeCounts>, Error>> {
                    Box::pin(async move {
                        type CountRow = (String, i64, i64, i64, i64, i64, i64, Option<i64>);
                        let rows: Vec<CountRow> =
                            sqlx::query_as(query!("status_counts.sql")).bind(unix_millis(now)).fetch_all(&self.pool).await?;
                        let mut by_type: BTreeMap<String, TypeCounts> = BTreeMap::new();
                        for (type_tag, pending, scheduled, running, retrying, done, dead, oldest) in rows {
                            let c = by_type
                                .entry(type_tag.clone())
                                .or_insert_with(|| TypeCounts { type_tag, ..TypeCounts::default() });
                            c.pending += pending as u64;
                            c.scheduled += scheduled as u64;
                            c.running += running as u64;
                            c.retrying += retrying as u64;
                            c.done += done as u64;
                            c.dead += dead as u64;
                            if let Some(ms) = oldest {
                                let t = from_unix_millis(ms);
                                c.oldest_due = Some(c.oldest_due.map_or(t, |o| o.min(t)));
                            }
                        }
                        Ok(by_type.into_values().collect())
                    })
                }
            }
        };
    };
}

pub(crate) use sql_store;
