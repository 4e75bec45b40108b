//! The records of the dead-letter table and the filter its operations take.

use std::time::SystemTime;

use crate::MessageId;

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
