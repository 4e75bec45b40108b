//! The stable identity of one queued message.

use std::{fmt, sync::Mutex, time::SystemTime};

/// The bits a reserved block numbers (the last 10 characters of a ULID).
const BLOCK_BITS: u32 = 50;

/// The process's id source: the ULID generator, and the last id it gave out or reserved.
struct Ids {
    generator: ulid::Generator,
    last: u128,
}

impl Ids {
    fn new() -> Self {
        Self {
            generator: ulid::Generator::new(),
            last: 0,
        }
    }

    /// A fresh id: the current time and random bits, greater than every id given out or
    /// reserved before.
    fn next(&mut self) -> u128 {
        // Overflow needs 2^80 ids in one millisecond; it then moves on to the next one.
        let made = self
            .generator
            .generate()
            .unwrap_or_else(|overflow| overflow.commit_overflow_increment())
            .0;
        let id = made.max(self.last.saturating_add(1));
        self.last = id;
        id
    }
}

static IDS: Mutex<Option<Ids>> = Mutex::new(None);

/// The id of a queued message: a ULID, unique across types, stable across retries, so a
/// duplicate delivery after a crash can be recognised (an email's Message-ID derives
/// from it). Ids made by one process increase strictly, also within a millisecond, so
/// messages of equal priority and due time are claimed in the order they were enqueued.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId(String);

impl MessageId {
    /// A fresh id for a message created now, greater than every id this process made
    /// (and than every block it reserved).
    pub(crate) fn generate() -> Self {
        let mut ids = IDS.lock().unwrap_or_else(|e| e.into_inner());
        let id = ids.get_or_insert_with(Ids::new).next();
        Self(ulid::Ulid(id).to_string())
    }

    /// The first 16 characters of a block of 10^10 ids after a fresh id (the current
    /// millisecond and 30 random bits, so blocks of other processes do not meet it) and
    /// after every id this process made, which the ids it makes afterwards all follow (the
    /// last 10 characters of a ULID are its lowest 50 bits: written as 10 decimal digits,
    /// valid base-32 characters, they number the block's ids in order). An
    /// `INSERT … SELECT` names its rows with it.
    pub(crate) fn reserve_block() -> String {
        let mut ids = IDS.lock().unwrap_or_else(|e| e.into_inner());
        let ids = ids.get_or_insert_with(Ids::new);
        // Starting from a fresh id, not from the last one: a process that has made no id
        // yet would otherwise reserve the block at time zero, the same in every process.
        let block = ((ids.next() >> BLOCK_BITS) + 1) << BLOCK_BITS;
        ids.last = block | ((1 << BLOCK_BITS) - 1);
        let mut prefix = ulid::Ulid(block).to_string();
        prefix.truncate(16);
        prefix
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
    fn a_reserved_block_follows_the_last_id_and_numbers_in_order() {
        let before = MessageId::generate();
        let prefix = MessageId::reserve_block();
        assert_eq!(prefix.len(), 16);
        let first = format!("{prefix}0000000001");
        let last = format!("{prefix}9999999999");
        assert!(before.as_str() < first.as_str(), "{before} < {first}");
        for id in [&first, &last] {
            assert!(ulid::Ulid::from_string(id).is_ok(), "{id} is a ULID");
        }
        assert!(first < format!("{prefix}0000000002") && format!("{prefix}0000000010") < last);
        let next = MessageId::reserve_block();
        assert!(next > prefix, "blocks do not overlap: {prefix} then {next}");
        let after = MessageId::generate();
        assert!(
            after.as_str() > format!("{next}9999999999").as_str(),
            "later ids follow the block"
        );
    }

    #[test]
    fn a_reserved_block_carries_the_current_time() {
        let prefix = MessageId::reserve_block();
        let id = MessageId::from_string(format!("{prefix}0000000001"));
        let at = id.enqueued_at().expect("a ULID");
        let age = SystemTime::now().duration_since(at).unwrap_or_default();
        assert!(
            age < std::time::Duration::from_secs(60),
            "the block is stamped now, not at {at:?}"
        );
    }

    #[test]
    fn ids_increase_within_a_millisecond() {
        let ids: Vec<MessageId> = (0..10_000).map(|_| MessageId::generate()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids are strictly increasing"
        );
    }
}
