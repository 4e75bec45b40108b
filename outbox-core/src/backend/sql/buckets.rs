//! The shared rate buckets of the shared SQL store: a token is taken by one conditional
//! update, so processes sharing a bucket never overspend it.

use futures::future::BoxFuture;

use super::{from_unix_secs, write, Arg, Dialect, SqlRow};
use crate::{
    clock::Now,
    error::Error,
    store::{BucketState, RateBucketStore, RateLimit, TokenGrant},
};

/// A bucket from the columns of `bucket_get.sql` starting at `at`: capacity, refill per
/// second, tokens, updated at, read at (unix seconds).
fn bucket_state<R: SqlRow>(row: &R, at: usize) -> Result<BucketState, sqlx::Error> {
    Ok(BucketState {
        limit: RateLimit {
            burst: row.real(at)?,
            per_second: row.real(at + 1)?,
        },
        tokens: row.real(at + 2)?,
        updated_at: from_unix_secs(row.real(at + 3)?),
        read_at: from_unix_secs(row.real(at + 4)?),
    })
}

impl<D: Dialect> RateBucketStore for D {
    fn take_token<'a>(
        &'a self,
        bucket: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<TokenGrant, Error>> {
        Box::pin(async move {
            let args = D::take_token_args(self.now_secs(now), bucket);
            let taken = self
                .execute(None, self.queries().bucket_take, &args)
                .await?;
            if taken == 1 {
                return Ok(TokenGrant::Granted);
            }
            Ok(match self.bucket(bucket, now).await? {
                None => TokenGrant::NoSuchBucket,
                Some(state) => TokenGrant::Wait(state.wait_for_token()),
            })
        })
    }

    fn set_bucket<'a>(
        &'a self,
        bucket: &'a str,
        limit: RateLimit,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(bucket),
                Arg::Real(limit.burst),
                Arg::Real(limit.per_second),
                Arg::OptReal(self.now_secs(now)),
            ];
            write(self, &[(self.queries().bucket_set, &args)]).await?;
            Ok(())
        })
    }

    fn bucket<'a>(
        &'a self,
        bucket: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<BucketState>, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(bucket), Arg::OptReal(self.now_secs(now))];
            let rows = self.fetch(None, self.queries().bucket_get, &args).await?;
            Ok(rows.first().map(|r| bucket_state(r, 0)).transpose()?)
        })
    }

    fn buckets(&self, now: Now) -> BoxFuture<'_, Result<Vec<(String, BucketState)>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptReal(self.now_secs(now))];
            let rows = self.fetch(None, self.queries().bucket_list, &args).await?;
            let buckets = rows.iter().map(|r| Ok((r.text(0)?, bucket_state(r, 1)?)));
            Ok(buckets.collect::<Result<_, sqlx::Error>>()?)
        })
    }
}
