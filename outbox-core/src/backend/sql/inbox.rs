//! The inbox of the shared SQL store: pruning and counting processed ids (they are written
//! by the consumers' own connections, [`crate::inbox`]).

use std::time::Duration;

use futures::future::BoxFuture;

use super::{rows::millis_ceil, Arg, Dialect, SqlRow};
use crate::{
    clock::{from_unix_millis, Now},
    error::Error,
    store::{InboxStore, ProcessedCount},
};

impl<D: Dialect> InboxStore for D {
    fn prune_processed(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>> {
        Box::pin(async move {
            let args = [
                Arg::OptInt(self.now_ms(now)),
                Arg::Int(millis_ceil(window)),
                Arg::Int(i64::from(limit)),
            ];
            Ok(self
                .execute(None, self.queries().inbox_prune, &args)
                .await?)
        })
    }

    fn processed_counts(&self) -> BoxFuture<'_, Result<Vec<ProcessedCount>, Error>> {
        Box::pin(async move {
            let rows = self.fetch(None, self.queries().inbox_counts, &[]).await?;
            let count = |r: &D::Row| -> Result<ProcessedCount, sqlx::Error> {
                Ok(ProcessedCount {
                    consumer: r.text(0)?,
                    ids: u64::try_from(r.int(1)?).unwrap_or(0),
                    oldest: from_unix_millis(r.int(2)?),
                    newest: from_unix_millis(r.int(3)?),
                })
            };
            Ok(rows.iter().map(count).collect::<Result<_, _>>()?)
        })
    }
}
