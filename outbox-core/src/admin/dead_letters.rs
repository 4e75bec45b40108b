//! The dead letters: messages given up for good, kept with their payload and last error
//! until requeued or purged.

use std::time::SystemTime;

use crate::{backend::Backend, Error, MessageId};

/// One dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// The message's id (kept when requeued).
    pub id: MessageId,
    /// Its type tag.
    pub type_tag: String,
    /// The payload as stored (JSON bytes).
    pub payload: Vec<u8>,
    /// Attempts made.
    pub attempts: u32,
    /// Attempts it had.
    pub max_attempts: u32,
    /// Its idempotency key, if any.
    pub idempotency_key: Option<String>,
    /// Why it was given up.
    pub last_error: String,
    /// When it was enqueued.
    pub enqueued_at: Option<SystemTime>,
    /// When it was given up.
    pub failed_at: SystemTime,
}

/// Which dead letters an operation applies to: all, one type, one message, or those that
/// failed before a time (the conditions combine).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadLetterFilter {
    /// Only this message.
    pub id: Option<String>,
    /// Only this type.
    pub type_tag: Option<String>,
    /// Only those given up before this time.
    pub failed_before: Option<SystemTime>,
}

impl DeadLetterFilter {
    /// Every dead letter.
    pub fn all() -> Self {
        Self::default()
    }

    /// One message.
    pub fn id(id: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            ..Self::default()
        }
    }

    /// One type.
    pub fn type_tag(type_tag: impl Into<String>) -> Self {
        Self {
            type_tag: Some(type_tag.into()),
            ..Self::default()
        }
    }

    /// Narrows to dead letters given up before `t`.
    pub fn failed_before(mut self, t: SystemTime) -> Self {
        self.failed_before = Some(t);
        self
    }
}

/// What a requeue did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requeued {
    /// Moved back to the queue, due now with attempts reset.
    pub requeued: u64,
    /// Left in the dead letters because a newer message of the same type holds their
    /// idempotency key (purge them, or requeue after that message is gone).
    pub key_taken: u64,
}

/// List, count, requeue and purge dead letters. Safe while workers run: each operation
/// is one transaction, and a requeued message is an ordinary pending message.
#[derive(Debug, Clone)]
pub struct DeadLetters<B> {
    backend: B,
}

impl<B: Backend> DeadLetters<B> {
    pub(crate) fn new(backend: B) -> Self {
        Self { backend }
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

    /// Moves one dead letter back to the queue; false if no such dead letter (or its key
    /// is taken, see [`Requeued::key_taken`]).
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
        self.backend.requeue_dead(filter).await
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
