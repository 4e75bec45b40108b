//! The stable identity of one queued message.

use std::{fmt, time::SystemTime};

/// The id of a queued message: a ULID, unique across types, stable across retries, so a
/// duplicate delivery after a crash can be recognised (an email's Message-ID derives
/// from it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);

impl MessageId {
    /// A fresh id for a message created now.
    pub(crate) fn generate() -> Self {
        Self(ulid::Ulid::generate().to_string())
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
