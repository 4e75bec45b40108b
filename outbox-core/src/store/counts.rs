//! Message counts per type and status.

use std::time::SystemTime;

/// How many messages of one type are in which state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeCounts {
    /// The type tag.
    pub type_tag: String,
    /// Due now, waiting for a worker.
    pub pending: u64,
    /// Waiting for a later time (delayed, snoozed) without a failure.
    pub scheduled: u64,
    /// Claimed by a worker (being handled, or about to be).
    pub running: u64,
    /// Failed at least once, waiting for their next attempt.
    pub retrying: u64,
    /// Delivered (or dropped as orphans) and kept for the retention window.
    pub done: u64,
    /// Given up: in the dead letters.
    pub dead: u64,
    /// Queued but held because their type or their group is paused (counted in no other
    /// state).
    pub paused: u64,
    /// When the longest-waiting due message of the type became due (`None` if none is
    /// due): how far behind its workers are.
    pub oldest_due: Option<SystemTime>,
}
