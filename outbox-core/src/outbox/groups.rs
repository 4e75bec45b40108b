//! Fires the completion hooks of groups that have nothing left.

use std::{sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use crate::{clock::Clock, enqueue::MessageId, store::Backend, worker::Signals};

/// How often a running outbox looks for groups whose completion hook is due.
pub(crate) const HOOK_POLL: Duration = Duration::from_secs(1);

/// Every [`HOOK_POLL`], enqueues the completion message of each group with an armed hook
/// and nothing queued or running (once across processes), until stopped; the first time
/// after the workers' first claim.
pub(super) fn fire_hooks<B: Backend>(
    backend: B,
    clock: Arc<dyn Clock>,
    signals: Arc<Signals>,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        signals.after_first_claim().await;
        loop {
            let _ = fire_once(&backend, clock.as_ref()).await;
            tokio::select! {
                _ = tokio::time::sleep(HOOK_POLL) => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
        }
    })
}

/// Fires the due hooks once; returns how many this call fired.
pub(super) async fn fire_once<B: Backend>(backend: &B, clock: &dyn Clock) -> usize {
    let new_id = || MessageId::generate().to_string();
    match backend
        .fire_group_hooks(clock.database_now(), &new_id)
        .await
    {
        Ok(fired) => {
            for group in &fired {
                tracing::info!(group = %group, "group finished: enqueued its completion message");
            }
            fired.len()
        }
        Err(e) => {
            if crate::worker::unreachable(&e) {
                // Said once for the process (`Reach`).
                tracing::debug!(error = %e, "cannot fire the completion hooks of finished groups");
            } else {
                tracing::warn!(error = %e, "cannot fire the completion hooks of finished groups");
            }
            0
        }
    }
}
