//! The circuit breakers of the shared SQL store: one row per downstream, changed only by
//! conditional updates, so that of several processes exactly one opens, probes or closes a
//! breaker.

use std::time::Duration;

use futures::future::BoxFuture;

use super::{rows::millis_ceil, transient_retries, write, Arg, Dialect, SqlRow};
use crate::{
    clock::{from_unix_millis, Now},
    error::Error,
    store::{BreakerState, BreakerStore, ProbeFailure, ProbeGrant},
};

impl<D: Dialect> BreakerStore for D {
    fn open_breaker<'a>(
        &'a self,
        name: &'a str,
        reason: &'a str,
        now: Now,
        first_probe: Duration,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let insert = [Arg::Text(name)];
            let open = [
                Arg::Text(name),
                Arg::OptInt(self.now_ms(now)),
                Arg::Text(reason),
                Arg::Int(millis_ceil(first_probe)),
            ];
            let changed = write(
                self,
                &[(q.breaker_insert, &insert), (q.breaker_open, &open)],
            )
            .await?;
            Ok(changed[1] > 0)
        })
    }

    fn take_probe<'a>(
        &'a self,
        name: &'a str,
        owner: &'a str,
        now: Now,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<ProbeGrant>, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = self.now_ms(now);
            let take = [
                Arg::Text(name),
                Arg::OptInt(now),
                Arg::Text(owner),
                Arg::Int(millis_ceil(lease)),
            ];
            let grant = [Arg::Text(name), Arg::OptInt(now)];
            let (take, grant) = (&take, &grant);
            let row = transient_retries::<D, _, _, _>(|| async move {
                let mut tx = self.begin_write().await?;
                if self
                    .execute(Some(&mut tx), q.breaker_take_probe, take)
                    .await?
                    == 0
                {
                    D::rollback(tx).await?;
                    return Ok(None);
                }
                let rows = self
                    .fetch(Some(&mut tx), q.breaker_probe_grant, grant)
                    .await?;
                D::commit(tx).await?;
                Ok(rows.into_iter().next())
            })
            .await?;
            let Some(row) = row else { return Ok(None) };
            Ok(Some(ProbeGrant {
                probes_failed: u32::try_from(row.int(0)?.max(0)).unwrap_or(u32::MAX),
                since_warned: Duration::from_millis(row.int(1)?.max(0) as u64),
            }))
        })
    }

    fn probe_failed<'a>(
        &'a self,
        name: &'a str,
        owner: &'a str,
        failure: ProbeFailure<'a>,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(name),
                Arg::OptInt(self.now_ms(now)),
                Arg::Text(owner),
                Arg::Text(failure.reason),
                Arg::Int(millis_ceil(failure.next_in)),
                Arg::Int(i64::from(failure.warned)),
            ];
            write(self, &[(self.queries().breaker_probe_failed, &args)]).await?;
            Ok(())
        })
    }

    fn close_breaker<'a>(&'a self, name: &'a str, now: Now) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(name), Arg::OptInt(self.now_ms(now))];
            let changed = write(self, &[(self.queries().breaker_close, &args)]).await?;
            Ok(changed[0] > 0)
        })
    }

    fn probe_breaker_now<'a>(
        &'a self,
        name: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(name), Arg::OptInt(self.now_ms(now))];
            let changed = write(self, &[(self.queries().breaker_probe_now, &args)]).await?;
            Ok(changed[0] > 0)
        })
    }

    fn breakers(&self, now: Now) -> BoxFuture<'_, Result<Vec<BreakerState>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self
                .fetch(None, self.queries().breakers_list, &args)
                .await?;
            let states = rows.iter().map(|r| breaker_state(r, 0));
            Ok(states.collect::<Result<_, sqlx::Error>>()?)
        })
    }
}

/// A breaker's state from the row's columns `at..at + 8`: name, opened_at, reason,
/// probes_failed, ms to the next probe, probing, closed_at, times_opened.
pub(super) fn breaker_state<R: SqlRow>(r: &R, at: usize) -> Result<BreakerState, sqlx::Error> {
    Ok(BreakerState {
        name: r.text(at)?,
        opened_at: r.opt_int(at + 1)?.map(from_unix_millis),
        reason: r.opt_text(at + 2)?,
        probes_failed: u32::try_from(r.int(at + 3)?.max(0)).unwrap_or(u32::MAX),
        next_probe_in: r
            .opt_int(at + 4)?
            .map(|ms| Duration::from_millis(ms.max(0) as u64)),
        probing: r.int(at + 5)? != 0,
        closed_at: r.opt_int(at + 6)?.map(from_unix_millis),
        times_opened: r.int(at + 7)?.max(0) as u64,
    })
}
