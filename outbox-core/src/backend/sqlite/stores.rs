//! Retry, rate-bucket and pause storage on SQLite.

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use super::SqliteBackend;
use crate::{
    admin::PausedType,
    backend::{
        from_unix_millis, unix_millis, unix_secs_ceil, PauseStore, RateBucketStore, RetryStore,
        TokenGrant,
    },
    layers::rate_limit::{BucketState, RateLimit},
    Error, MessageId,
};

impl RetryStore for SqliteBackend {
    fn reschedule<'a>(
        &'a self,
        id: &'a str,
        due: SystemTime,
        give_back_attempt: bool,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            sqlx::query(include_str!("queries/reschedule.sql"))
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
            sqlx::query(include_str!("queries/dead_letter_insert.sql"))
                .bind(id)
                .bind(i64::from(attempts))
                .bind(reason)
                .bind(enqueued_at)
                .bind(unix_millis(SystemTime::now()))
                .execute(&mut *tx)
                .await?;
            sqlx::query(include_str!("queries/dead_letter_delete_job.sql"))
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        })
    }
}

impl RateBucketStore for SqliteBackend {
    fn take_token<'a>(
        &'a self,
        bucket: &'a str,
        now: f64,
    ) -> BoxFuture<'a, Result<TokenGrant, Error>> {
        Box::pin(async move {
            let taken = sqlx::query(include_str!("queries/bucket_take.sql"))
                .bind(bucket)
                .bind(now)
                .execute(&self.pool)
                .await?;
            if taken.rows_affected() == 1 {
                return Ok(TokenGrant::Granted);
            }
            Ok(match self.bucket(bucket).await? {
                None => TokenGrant::NoSuchBucket,
                Some(state) => TokenGrant::Wait(state.wait_for_token(now)),
            })
        })
    }

    fn set_bucket<'a>(
        &'a self,
        bucket: &'a str,
        limit: RateLimit,
        now: f64,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            sqlx::query(include_str!("queries/bucket_set.sql"))
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
                sqlx::query_as(include_str!("queries/bucket_get.sql"))
                    .bind(bucket)
                    .fetch_optional(&self.pool)
                    .await?;
            Ok(
                row.map(|(burst, per_second, tokens, updated_at)| BucketState {
                    limit: RateLimit { burst, per_second },
                    tokens,
                    updated_at,
                }),
            )
        })
    }
}

impl PauseStore for SqliteBackend {
    fn pause<'a>(&'a self, type_tag: &'a str, reason: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            sqlx::query(include_str!("queries/pause.sql"))
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
            let done = sqlx::query(include_str!("queries/resume.sql"))
                .bind(type_tag)
                .execute(&self.pool)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn paused(&self) -> BoxFuture<'_, Result<Vec<PausedType>, Error>> {
        Box::pin(async move {
            let rows: Vec<(String, i64, String)> =
                sqlx::query_as(include_str!("queries/paused.sql"))
                    .fetch_all(&self.pool)
                    .await?;
            Ok(rows
                .into_iter()
                .map(|(type_tag, at, reason)| PausedType {
                    type_tag,
                    paused_at: from_unix_millis(at),
                    reason,
                })
                .collect())
        })
    }
}

impl BucketState {
    /// How long until the bucket holds one token, at `now` (unix seconds).
    pub fn wait_for_token(&self, now: f64) -> Duration {
        let tokens = (self.tokens + (now - self.updated_at).max(0.0) * self.limit.per_second)
            .min(self.limit.burst);
        let missing = (1.0 - tokens).max(0.0);
        Duration::from_secs_f64(missing / self.limit.per_second)
    }
}
