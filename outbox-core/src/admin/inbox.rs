//! The consumers' inbox from code: what it holds, and pruning it.

use std::{sync::Arc, time::Duration};

use crate::{
    clock::Clock,
    error::Error,
    store::{Backend, ProcessedCount},
};

/// Rows deleted per statement by [`ProcessedIds::prune`].
const PRUNE_BATCH: u32 = 1_000;

/// The processed ids of consumers' inboxes ([`crate::inbox`]), from any process on the
/// database ([`Admin::inbox`](crate::Admin::inbox)).
#[derive(Clone)]
pub struct ProcessedIds<B> {
    backend: B,
    clock: Arc<dyn Clock>,
}

impl<B: Backend> ProcessedIds<B> {
    pub(crate) fn new(backend: B, clock: Arc<dyn Clock>) -> Self {
        Self { backend, clock }
    }

    /// Per consumer, by name: how many processed ids are kept, the oldest and the newest.
    pub async fn counts(&self) -> Result<Vec<ProcessedCount>, Error> {
        self.backend.processed_counts().await
    }

    /// Deletes the ids processed more than `older_than` ago (in batches of 1,000); how
    /// many. A message redelivered after its id is gone runs again.
    pub async fn prune(&self, older_than: Duration) -> Result<u64, Error> {
        let mut total = 0;
        loop {
            let n = self
                .backend
                .prune_processed(older_than, self.clock.database_now(), PRUNE_BATCH)
                .await?;
            total += n;
            if n < u64::from(PRUNE_BATCH) {
                return Ok(total);
            }
        }
    }
}
