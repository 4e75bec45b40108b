//! Two signals from a process's workers to its loops, so that start and end cost no
//! guessing:
//!
//! * **the first claim**: what runs beside the workers at start (the heartbeat's first
//!   beat with its rescue scan, the sweeps, a drain's own rescue and its count of
//!   unregistered types) waits until a worker's first claim has returned, so none of it
//!   queues before that claim for the database (SQLite's single writer, a pool's idle
//!   connection). It waits [`FIRST_CLAIM_WAIT`] at most: a claim held up by a lock or an
//!   unreachable database does not hold up the rest.
//! * **holding nothing**: a worker whose last claim came back short (its backlog ran dry)
//!   and that holds no message says so, after that claim or after its flusher wrote the
//!   last settlement; a drain checks at once whether it is done instead of at its next
//!   poll.

use std::time::Duration;

use tokio::sync::{watch, Notify};

/// Longest the loops wait for a worker's first claim before going on regardless.
pub(crate) const FIRST_CLAIM_WAIT: Duration = Duration::from_millis(500);

/// The signals of one process's workers (one per start).
#[derive(Debug)]
pub(crate) struct Signals {
    /// True once a worker's claim returned (with messages, none, or an error).
    first_claim: watch::Sender<bool>,
    /// A worker holds nothing: no message claimed, running or unwritten.
    quiet: Notify,
}

impl Default for Signals {
    fn default() -> Self {
        Self {
            first_claim: watch::Sender::new(false),
            quiet: Notify::new(),
        }
    }
}

impl Signals {
    /// A claim returned (the engine calls this after every claim; only the first counts).
    pub(crate) fn claim_returned(&self) {
        self.first_claim
            .send_if_modified(|c| !std::mem::replace(c, true));
    }

    /// Waits until a worker's first claim has returned, or [`FIRST_CLAIM_WAIT`].
    pub(crate) async fn after_first_claim(&self) {
        let mut claimed = self.first_claim.subscribe();
        let _ = tokio::time::timeout(FIRST_CLAIM_WAIT, claimed.wait_for(|c| *c)).await;
    }

    /// A worker holds nothing now.
    pub(crate) fn holding_nothing(&self) {
        self.quiet.notify_one();
    }

    /// Completes when a worker said it holds nothing (at once if one said so since the
    /// last wait).
    pub(crate) async fn quiet(&self) {
        self.quiet.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Instant};

    use super::*;

    #[tokio::test]
    async fn the_loops_wait_for_the_first_claim_or_the_limit() {
        let signals = Arc::new(Signals::default());
        let waiter = tokio::spawn({
            let signals = Arc::clone(&signals);
            async move { signals.after_first_claim().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "no claim has returned yet");
        signals.claim_returned();
        tokio::time::timeout(FIRST_CLAIM_WAIT, waiter)
            .await
            .expect("the claim opened the wait")
            .unwrap();

        // Once open, it stays open.
        tokio::time::timeout(Duration::from_millis(50), signals.after_first_claim())
            .await
            .expect("open for every later wait");

        // No claim ever returns: the wait ends at the limit, not before.
        let fresh = Signals::default();
        let started = Instant::now();
        fresh.after_first_claim().await;
        assert!(started.elapsed() >= FIRST_CLAIM_WAIT);
    }

    #[tokio::test]
    async fn a_quiet_worker_is_not_missed_by_a_later_wait() {
        let signals = Signals::default();
        signals.holding_nothing();
        // Said before anyone waited: the next wait completes at once.
        tokio::time::timeout(Duration::from_millis(50), signals.quiet())
            .await
            .expect("the signal was kept");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), signals.quiet())
                .await
                .is_err(),
            "one signal wakes one wait"
        );
    }
}
