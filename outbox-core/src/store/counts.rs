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
    /// Not sent because a suppression stops their recipient (kept until pruned).
    pub suppressed: u64,
    /// Queued but held because their type or their group is paused (counted in no other
    /// state).
    pub paused: u64,
    /// When the longest-waiting due message of the type became due (`None` if none is
    /// due): how far behind its workers are.
    pub oldest_due: Option<SystemTime>,
}

/// What the workers of one type did (delivered, failed attempts, moved to the dead
/// letters): a process's outcomes since its last report, or a minute of the history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeOutcomes {
    /// The type tag.
    pub type_tag: String,
    /// Delivered (or dropped as orphans).
    pub delivered: u64,
    /// Failed attempts that will be tried again.
    pub failed: u64,
    /// Moved to the dead letters.
    pub dead: u64,
}

/// One minute of the history of one type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinuteOutcomes {
    /// The minute's start.
    pub minute: SystemTime,
    /// What the type's workers did in it, in every process.
    pub outcomes: TypeOutcomes,
}

/// When a worker of any process was last seen, by the database's clock: the newest
/// heartbeat in the worker registry (a worker that stopped cleanly leaves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkersSeen {
    /// The newest heartbeat of a registered worker; `None` when no worker is registered.
    pub last_seen: Option<SystemTime>,
    /// The time of the read (the database's clock, or the time a test pinned).
    pub now: SystemTime,
}
