//! The pruner: deletes done rows older than the retention window, in bounded batches.

use std::{sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use crate::{clock::Clock, store::Backend};

/// Rows deleted per statement, so a prune never holds locks for long.
const PRUNE_BATCH: u32 = 1_000;
/// Pause between prunes once nothing old is left.
const PRUNE_EVERY: Duration = Duration::from_secs(30);

/// Prunes done rows older than `window` until stopped.
pub(super) fn prune<B: Backend>(
    backend: B,
    clock: Arc<dyn Clock>,
    window: Duration,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let now = clock.database_now();
            let pause = match backend.prune_done(window, now, PRUNE_BATCH).await {
                // A full batch: more may be waiting; go on after a breath.
                Ok(n) if n >= u64::from(PRUNE_BATCH) => Duration::from_millis(50),
                Ok(_) => PRUNE_EVERY,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot prune delivered messages; trying again later");
                    PRUNE_EVERY
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
        }
    })
}
