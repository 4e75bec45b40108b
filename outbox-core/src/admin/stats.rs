//! Message counts per type and status.

/// How many messages of one type are in which state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeCounts {
    /// The type tag.
    pub type_tag: String,
    /// Due now, waiting for a worker.
    pub pending: u64,
    /// Waiting for a later time (delayed, or deferred by a rate limit) without a failure.
    pub scheduled: u64,
    /// Claimed or being handled by a worker.
    pub running: u64,
    /// Failed at least once, waiting for their next attempt.
    pub retrying: u64,
    /// Delivered (or dropped as orphans) and still retained.
    pub done: u64,
    /// Given up: in the dead letters (or, if moving them failed, marked dead in the queue).
    pub dead: u64,
}
