//! The stable identity of one queued message.

use std::{fmt, sync::Mutex, time::SystemTime};

/// The id of a queued message: a ULID, unique across types, stable across retries, so a
/// duplicate delivery after a crash can be recognised (an email's Message-ID derives
/// from it). Ids made by one process increase strictly, also within a millisecond, so
/// messages of equal priority and due time are claimed in the order they were enqueued.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);

impl MessageId {
    /// A fresh id for a message created now, greater than every id this process made.
    pub(crate) fn generate() -> Self {
        static GENERATOR: Mutex<Option<ulid::Generator>> = Mutex::new(None);
        let mut generator = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
        let generator = generator.get_or_insert_with(ulid::Generator::new);
        // Overflow needs 2^80 ids in one millisecond; it then moves on to the next one.
        let id = generator
            .generate()
            .unwrap_or_else(|overflow| overflow.commit_overflow_increment());
        Self(id.to_string())
    }

    /// Wraps an id read back from the database.
    pub fn from_string(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as stored in the database.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// When the message was enqueued, read from the id itself (millisecond precision);
    /// `None` for an id that is not a ULID (a row written by other software).
    pub fn enqueued_at(&self) -> Option<SystemTime> {
        ulid::Ulid::from_string(&self.0).ok().map(|u| u.datetime())
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_within_a_millisecond() {
        let ids: Vec<MessageId> = (0..10_000).map(|_| MessageId::generate()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids are strictly increasing"
        );
    }
}
