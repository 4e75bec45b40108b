//! The pruners: delete done rows older than the retention window, suppressed rows, message
//! events and consumers' processed ids older than theirs, in bounded batches.

use std::{sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use crate::{clock::Clock, store::Backend, worker::Signals};

/// Rows deleted per statement, so a prune never holds locks for long.
const PRUNE_BATCH: u32 = 1_000;
/// Longest pause between prunes once nothing old is left.
const PRUNE_EVERY: Duration = Duration::from_secs(30);
/// Shortest pause between prunes.
const PRUNE_AT_MOST_EVERY: Duration = Duration::from_millis(100);

/// The pause between prunes once nothing old is left: a tenth of the window (between
/// 100 ms and 30 s), so a row, and its idempotency key, outlives its window by at most that
/// much plus one prune pass.
pub(super) fn prune_period(window: Duration) -> Duration {
    (window / 10).clamp(PRUNE_AT_MOST_EVERY, PRUNE_EVERY)
}

/// How long the rows of messages a suppression stopped are kept when the outbox keeps no
/// done rows (with [`crate::Retention::keep_for`], as long as done rows).
pub(crate) const SUPPRESSED_KEPT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Which rows a pruner deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rows {
    /// Delivered messages kept for retention.
    Done,
    /// Messages a suppression stopped (grouped ones stay counted in their groups).
    Suppressed,
    /// Receipts and events of messages ([`crate::message_events`]).
    Events,
    /// Consumers' processed ids ([`crate::inbox`]).
    Processed,
}

/// Prunes `rows` older than `window` until stopped (the first time after the workers'
/// first claim).
pub(super) fn prune<B: Backend>(
    backend: B,
    clock: Arc<dyn Clock>,
    rows: Rows,
    window: Duration,
    signals: Arc<Signals>,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let every = prune_period(window);
    tokio::spawn(async move {
        signals.after_first_claim().await;
        loop {
            let now = clock.database_now();
            let pruned = match rows {
                Rows::Done => backend.prune_done(window, now, PRUNE_BATCH).await,
                Rows::Suppressed => backend.prune_suppressed(window, now, PRUNE_BATCH).await,
                Rows::Events => backend.prune_events(window, now, PRUNE_BATCH).await,
                Rows::Processed => backend.prune_processed(window, now, PRUNE_BATCH).await,
            };
            let pause = match pruned {
                // A full batch: more may be waiting; go on after a breath.
                Ok(n) if n >= u64::from(PRUNE_BATCH) => Duration::from_millis(50),
                Ok(_) => every,
                Err(e) => {
                    // An unreachable database is reported once by the workers.
                    if crate::worker::unreachable(&e) {
                        tracing::debug!(error = %e, ?rows, "cannot prune old rows; trying again later");
                    } else {
                        tracing::warn!(error = %e, ?rows, "cannot prune old rows; trying again later");
                    }
                    PRUNE_EVERY.max(every)
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prune_period_follows_the_window() {
        let s = Duration::from_secs;
        assert_eq!(prune_period(s(3)), Duration::from_millis(300));
        assert_eq!(
            prune_period(Duration::from_millis(200)),
            Duration::from_millis(100)
        );
        assert_eq!(prune_period(s(7 * 86400)), s(30));
    }
}
