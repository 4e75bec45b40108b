//! In-process tallies of what the workers did, for drain reports and logs.

use std::sync::atomic::{AtomicU64, Ordering};

/// Shared counters, bumped by every dispatch.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    delivered: AtomicU64,
    failed_attempts: AtomicU64,
    given_up: AtomicU64,
}

/// How many handler calls ended which way, since a point in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    /// Messages whose handler returned `Ok`.
    pub delivered: u64,
    /// Attempts that failed and will be tried again.
    pub failed_attempts: u64,
    /// Messages given up: permanent errors, undecodable payloads, attempts exhausted.
    pub given_up: u64,
}

impl Counters {
    pub(crate) fn delivered(&self) {
        self.delivered.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn failed(&self, given_up: bool) {
        if given_up {
            self.given_up.fetch_add(1, Ordering::Relaxed);
        } else {
            self.failed_attempts.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> DeliveryCounts {
        DeliveryCounts {
            delivered: self.delivered.load(Ordering::Relaxed),
            failed_attempts: self.failed_attempts.load(Ordering::Relaxed),
            given_up: self.given_up.load(Ordering::Relaxed),
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
        }
    }
}
