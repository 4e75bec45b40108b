//! In-process tallies of what the workers did, for drain reports and logs: bumped by the
//! worker and the layers, read by the outbox.

use std::sync::atomic::{AtomicU64, Ordering};

/// Shared counters, bumped by every dispatch.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    delivered: AtomicU64,
    failed_attempts: AtomicU64,
    given_up: AtomicU64,
    orphaned: AtomicU64,
    deferred: AtomicU64,
}

/// How many handler calls ended which way, since a point in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    /// Messages whose handler returned `Ok`.
    pub delivered: u64,
    /// Attempts that failed and will be tried again.
    pub failed_attempts: u64,
    /// Messages given up (moved to the dead letters): permanent errors, undecodable
    /// payloads, attempts exhausted.
    pub given_up: u64,
    /// Messages completed without the handler because their orphan check said so.
    pub orphaned: u64,
    /// Times a message was put back without an attempt (rate limit, snooze).
    pub deferred: u64,
}

impl Counters {
    pub(crate) fn delivered(&self) {
        self.delivered.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed_attempt(&self) {
        self.failed_attempts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn given_up(&self) {
        self.given_up.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn orphaned(&self) {
        self.orphaned.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn deferred(&self) {
        self.deferred.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> DeliveryCounts {
        DeliveryCounts {
            delivered: self.delivered.load(Ordering::Relaxed),
            failed_attempts: self.failed_attempts.load(Ordering::Relaxed),
            given_up: self.given_up.load(Ordering::Relaxed),
            orphaned: self.orphaned.load(Ordering::Relaxed),
            deferred: self.deferred.load(Ordering::Relaxed),
        }
    }
}

impl DeliveryCounts {
    /// What happened between `earlier` and `self`.
    pub(crate) fn since(self, earlier: DeliveryCounts) -> DeliveryCounts {
        DeliveryCounts {
            delivered: self.delivered - earlier.delivered,
            failed_attempts: self.failed_attempts - earlier.failed_attempts,
            given_up: self.given_up - earlier.given_up,
            orphaned: self.orphaned - earlier.orphaned,
            deferred: self.deferred - earlier.deferred,
        }
    }
}
