//! Reports what this process's workers did to the history table (`outbox_stats`): every
//! [`HISTORY_EVERY`], and once more when the workers stopped. A report that cannot be
//! written is kept and added to the next one; a process that dies loses at most its last
//! interval.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{sync::watch, task::JoinHandle};

use crate::{
    clock::Clock,
    counters::DeliveryCounts,
    store::{Backend, TypeOutcomes},
    worker::Counters,
};

/// How often a running outbox reports its workers' outcomes.
pub(crate) const HISTORY_EVERY: Duration = Duration::from_secs(10);

/// The types' counters and what was last reported of each.
pub(super) struct Reporter<B> {
    backend: B,
    clock: Arc<dyn Clock>,
    types: Vec<(&'static str, Arc<Counters>)>,
    reported: Mutex<HashMap<&'static str, DeliveryCounts>>,
}

impl<B: Backend> Reporter<B> {
    /// A reporter of `types`' counters, starting from what they hold now.
    pub(super) fn new(
        backend: B,
        clock: Arc<dyn Clock>,
        types: Vec<(&'static str, Arc<Counters>)>,
    ) -> Arc<Self> {
        let reported = types.iter().map(|(t, c)| (*t, c.snapshot())).collect();
        Arc::new(Self {
            backend,
            clock,
            types,
            reported: Mutex::new(reported),
        })
    }

    /// Reports every [`HISTORY_EVERY`] until stopped.
    pub(super) fn start(self: &Arc<Self>, mut stopped: watch::Receiver<bool>) -> JoinHandle<()> {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(HISTORY_EVERY) => {}
                    _ = stopped.wait_for(|s| *s) => return,
                }
                this.report().await;
            }
        })
    }

    /// Writes what the types did since the last written report, if anything.
    pub(super) async fn report(&self) {
        let (outcomes, now) = {
            let reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
            let now: Vec<(&'static str, DeliveryCounts)> =
                self.types.iter().map(|(t, c)| (*t, c.snapshot())).collect();
            let outcomes: Vec<TypeOutcomes> = now
                .iter()
                .filter_map(|(t, counts)| {
                    let d = counts.since(reported.get(t).copied().unwrap_or_default());
                    let o = TypeOutcomes {
                        type_tag: (*t).to_owned(),
                        delivered: d.delivered + d.orphaned,
                        failed: d.failed_attempts,
                        dead: d.given_up,
                    };
                    (o.delivered + o.failed + o.dead > 0).then_some(o)
                })
                .collect();
            (outcomes, now)
        };
        if outcomes.is_empty() {
            return;
        }
        match self
            .backend
            .add_history(&outcomes, self.clock.database_now())
            .await
        {
            Ok(()) => {
                let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
                reported.extend(now);
            }
            Err(e) => {
                tracing::debug!(error = %e, "cannot write the delivery history; kept for the next report")
            }
        }
    }
}
