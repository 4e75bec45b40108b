//! The records of the dead-letter table and the filter its operations take.

use std::time::SystemTime;

use crate::enqueue::MessageId;

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
    /// Its failed attempts, oldest first: the last [`FailedAttempt::LOG_LIMIT`], each with
    /// its error (for email, the server's reply). The last entry is why it was given up.
    pub attempt_log: Vec<FailedAttempt>,
}

/// One failed attempt of a message, as its attempt log keeps it.
///
/// An attempt joins the log when it fails (an error, a timeout, a lease that ran out
/// because its worker died) or when the message is given up; a snooze or a rate-limit
/// deferral does not count as an attempt and is not logged. A message delivered on its
/// first attempt writes no log at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedAttempt {
    /// The attempt's number (1 for the first; a requeued dead letter counts from 1 again,
    /// after its older entries).
    pub attempt: u32,
    /// When the attempt ended.
    pub at: SystemTime,
    /// What went wrong.
    pub error: String,
}

impl FailedAttempt {
    /// How many entries a message's log keeps (the oldest go first).
    pub const LOG_LIMIT: usize = 20;

    /// Reads a log as the tables store it: a JSON array of `{"attempt", "at" (unix ms),
    /// "error"}`. `None` (nothing failed yet) and anything unreadable give an empty log.
    pub fn parse_log(stored: Option<&str>) -> Vec<FailedAttempt> {
        #[derive(serde::Deserialize)]
        struct Entry {
            attempt: serde_json::Value,
            at: serde_json::Value,
            #[serde(default)]
            error: Option<String>,
        }
        // Databases give numbers back as numbers or as strings, depending on the path.
        fn int(v: &serde_json::Value) -> Option<i64> {
            v.as_i64().or_else(|| v.as_str()?.parse().ok())
        }
        let Some(stored) = stored else {
            return Vec::new();
        };
        let entries: Vec<Entry> = serde_json::from_str(stored).unwrap_or_default();
        entries
            .into_iter()
            .filter_map(|e| {
                Some(FailedAttempt {
                    attempt: u32::try_from(int(&e.attempt)?).ok()?,
                    at: crate::clock::from_unix_millis(int(&e.at)?),
                    error: e.error.unwrap_or_default(),
                })
            })
            .collect()
    }
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
    /// Only those to this recipient (stored lowercased; see [`DeadLetterFilter::to`]).
    pub recipient: Option<String>,
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

    /// Narrows to dead letters to `address` (trimmed and lowercased): the recipient their
    /// type names, kept from the message (see `LiveFilter::to`).
    pub fn to(mut self, address: impl AsRef<str>) -> Self {
        self.recipient = Some(address.as_ref().trim().to_lowercase());
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

impl DeadLetter {
    /// The payload as an `M`; an error if the dead letter is of another type or its
    /// payload does not decode as `M`.
    pub fn decode<M: crate::message::OutboxMessage>(
        &self,
    ) -> Result<M, crate::message::DecodeError> {
        crate::message::decode_stored::<M>(&self.type_tag, &self.payload)
    }
}
