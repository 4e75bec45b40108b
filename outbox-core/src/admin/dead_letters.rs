//! The dead letters: messages given up for good, kept with their payload and last error
//! until requeued or purged.

use std::{sync::Arc, time::SystemTime};

use super::{DeadLetter, DeadLetterFilter, Requeued};
use crate::{clock::Clock, enqueue::MessageId, error::Error, store::Backend};

/// List, count, requeue and purge dead letters. Safe while workers run: each operation
/// is one transaction, and a requeued message is an ordinary pending message.
#[derive(Clone)]
pub struct DeadLetters<B> {
    backend: B,
    clock: Arc<dyn Clock>,
}

impl<B: Backend> DeadLetters<B> {
    pub(crate) fn new(backend: B, clock: Arc<dyn Clock>) -> Self {
        Self { backend, clock }
    }

    /// A page of dead letters (newest first), `page` counting from 0.
    pub async fn list(
        &self,
        filter: &DeadLetterFilter,
        page: u64,
        page_size: u32,
    ) -> Result<Vec<DeadLetter>, Error> {
        let size = page_size.clamp(1, 1000);
        self.backend
            .list_dead(filter, size, page * u64::from(size))
            .await
    }

    /// How many dead letters match.
    pub async fn count(&self, filter: &DeadLetterFilter) -> Result<u64, Error> {
        self.backend.count_dead(filter).await
    }

    /// Moves one dead letter back to the queue; false if there is no such dead letter
    /// (another caller requeued or purged it first), or if its key is taken (see
    /// [`Requeued::key_taken`]).
    pub async fn requeue(&self, id: &MessageId) -> Result<bool, Error> {
        Ok(self
            .requeue_where(&DeadLetterFilter::id(id.as_str()))
            .await?
            .requeued
            == 1)
    }

    /// Moves every dead letter of `type_tag` back to the queue.
    pub async fn requeue_type(&self, type_tag: &str) -> Result<Requeued, Error> {
        self.requeue_where(&DeadLetterFilter::type_tag(type_tag))
            .await
    }

    /// Moves every dead letter back to the queue.
    pub async fn requeue_all(&self) -> Result<Requeued, Error> {
        self.requeue_where(&DeadLetterFilter::all()).await
    }

    /// Moves matching dead letters back to the queue.
    pub async fn requeue_where(&self, filter: &DeadLetterFilter) -> Result<Requeued, Error> {
        self.backend
            .requeue_dead(filter, self.clock.database_now())
            .await
    }

    /// Deletes one dead letter; false if there was none.
    pub async fn purge(&self, id: &MessageId) -> Result<bool, Error> {
        Ok(self.purge_where(&DeadLetterFilter::id(id.as_str())).await? == 1)
    }

    /// Deletes dead letters given up before `t`.
    pub async fn purge_older_than(&self, t: SystemTime) -> Result<u64, Error> {
        self.purge_where(&DeadLetterFilter::all().failed_before(t))
            .await
    }

    /// Deletes matching dead letters.
    pub async fn purge_where(&self, filter: &DeadLetterFilter) -> Result<u64, Error> {
        self.backend.purge_dead(filter).await
    }
}
