//! The dead letters of the shared SQL store: listed, counted, requeued and purged by filter.

use futures::future::BoxFuture;

use super::{
    rows::{self, filter_args},
    write, Arg, Dialect, Statement,
};
use crate::{
    clock::Now,
    error::Error,
    store::{DeadLetter, DeadLetterFilter, DeadLetterStore, Requeued},
};

impl<D: Dialect> DeadLetterStore for D {
    fn list_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        limit: u32,
        offset: u64,
    ) -> BoxFuture<'a, Result<Vec<DeadLetter>, Error>> {
        Box::pin(async move {
            let [id, type_tag, before, recipient] = filter_args(filter);
            let offset = i64::try_from(offset).unwrap_or(i64::MAX);
            let args = [
                id,
                type_tag,
                before,
                recipient,
                Arg::Int(i64::from(limit)),
                Arg::Int(offset),
            ];
            let rows = self
                .fetch(None, self.queries().dead_letters_list, &args)
                .await?;
            let letters = rows.iter().map(rows::dead_letter);
            Ok(letters.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn count_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = filter_args(filter);
            let rows = self
                .fetch(None, self.queries().dead_letters_count, &args)
                .await?;
            Ok(rows::count(&rows)?)
        })
    }

    fn requeue_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        now: Now,
    ) -> BoxFuture<'a, Result<Requeued, Error>> {
        Box::pin(async move {
            let [id, type_tag, before, recipient] = filter_args(filter);
            let args = [
                Arg::OptInt(self.now_ms(now)),
                id,
                type_tag,
                before,
                recipient,
            ];
            let statements: Vec<Statement<'_>> = self
                .queries()
                .requeue
                .iter()
                .map(|sql| (*sql, &args[..]))
                .collect();
            // The last statement removes the dead letters now in the queue: its count is
            // what this call moved.
            let changed = write(self, &statements).await?;
            let left = self.count_dead(filter).await?;
            Ok(Requeued {
                requeued: changed.last().copied().unwrap_or_default(),
                key_taken: left,
            })
        })
    }

    fn purge_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = filter_args(filter);
            let changed = write(self, &[(self.queries().dead_letters_purge, &args)]).await?;
            Ok(changed[0])
        })
    }
}
