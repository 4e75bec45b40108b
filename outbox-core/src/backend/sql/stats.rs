//! The statistics of the shared SQL store: status counts per type, the per-minute
//! history of outcomes, and the newest worker heartbeat.

use std::time::SystemTime;

use futures::future::BoxFuture;

use super::{
    rows::{fold_counts, json},
    write, Arg, Dialect, SqlRow,
};
use crate::{
    clock::{unix_millis, Now},
    error::Error,
    store::{MinuteOutcomes, StatsStore, TypeCounts, TypeOutcomes, WorkersSeen},
};

impl<D: Dialect> StatsStore for D {
    fn status_counts(&self, now: Now) -> BoxFuture<'_, Result<Vec<TypeCounts>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self
                .fetch(None, self.queries().status_counts, &args)
                .await?;
            Ok(fold_counts(&rows)?)
        })
    }

    fn add_history<'a>(
        &'a self,
        outcomes: &'a [TypeOutcomes],
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = self.now_ms(now);
            let rows: Vec<(&str, u64, u64, u64)> = outcomes
                .iter()
                .map(|o| (o.type_tag.as_str(), o.delivered, o.failed, o.dead))
                .collect();
            let rows = json(&rows)?;
            let add = [Arg::OptInt(now), Arg::Text(&rows)];
            let prune = [Arg::OptInt(now)];
            write(self, &[(q.stats_add, &add), (q.stats_prune, &prune)]).await?;
            Ok(())
        })
    }

    fn history(&self, since: SystemTime) -> BoxFuture<'_, Result<Vec<MinuteOutcomes>, Error>> {
        Box::pin(async move {
            let args = [Arg::Int(unix_millis(since))];
            let rows = self.fetch(None, self.queries().stats_list, &args).await?;
            let minutes = rows.iter().map(|r| {
                let n = |i| r.int(i).map(|v| v.max(0) as u64);
                Ok(MinuteOutcomes {
                    minute: crate::clock::from_unix_millis(r.int(0)?),
                    outcomes: TypeOutcomes {
                        type_tag: r.text(1)?,
                        delivered: n(2)?,
                        failed: n(3)?,
                        dead: n(4)?,
                    },
                })
            });
            Ok(minutes.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn workers_seen(&self, now: Now) -> BoxFuture<'_, Result<WorkersSeen, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self.fetch(None, self.queries().workers_seen, &args).await?;
            let row = rows
                .first()
                .ok_or_else(|| Error::Database(sqlx::Error::RowNotFound))?;
            Ok(WorkersSeen {
                last_seen: row.opt_int(0)?.map(crate::clock::from_unix_millis),
                now: crate::clock::from_unix_millis(row.int(1)?),
            })
        })
    }
}
