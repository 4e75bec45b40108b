//! The INFO summary per type: while work flows, every [`DEFAULT_SUMMARY_EVERY`] (see
//! [`Outbox::log_summary_every`](crate::Outbox::log_summary_every)) one line per type that
//! did something — delivered, retried, dead and the delivery rate — and once more when the
//! workers stop. Per-message lines are DEBUG; this is what an operator reads at INFO.
//!
//! It reads the counters the workers bump anyway (one relaxed atomic add per outcome):
//! nothing is added to a message's path.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio::{sync::watch, task::JoinHandle};

use crate::{counters::DeliveryCounts, worker::Counters};

/// How often a running outbox logs its summary by default.
pub const DEFAULT_SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// The types' counters and what the last summary saw of each, with its time.
pub(super) struct Summary {
    types: Vec<(&'static str, Arc<Counters>)>,
    last: Mutex<(Instant, HashMap<&'static str, DeliveryCounts>)>,
}

impl Summary {
    /// A summary of `types`' counters, starting from what they hold now.
    pub(super) fn new(types: Vec<(&'static str, Arc<Counters>)>) -> Arc<Self> {
        let seen = types.iter().map(|(t, c)| (*t, c.snapshot())).collect();
        Arc::new(Self {
            types,
            last: Mutex::new((Instant::now(), seen)),
        })
    }

    /// Logs every `every` until stopped.
    pub(super) fn start(
        self: &Arc<Self>,
        every: Duration,
        mut stopped: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = stopped.wait_for(|s| *s) => return,
                }
                this.log();
            }
        })
    }

    /// One INFO line per type whose messages were delivered, retried or given up since
    /// the last summary; nothing when nothing happened.
    pub(super) fn log(&self) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let secs = now.duration_since(last.0).as_secs_f64().max(0.001);
        for (type_tag, counters) in &self.types {
            let counts = counters.snapshot();
            let d = counts.since(last.1.get(type_tag).copied().unwrap_or_default());
            last.1.insert(type_tag, counts);
            let delivered = d.delivered + d.orphaned;
            if delivered + d.failed_attempts + d.given_up == 0 {
                continue;
            }
            let per_second = (delivered as f64 / secs * 10.0).round() / 10.0;
            tracing::info!(
                message.type = *type_tag,
                delivered,
                retried = d.failed_attempts,
                dead = d.given_up,
                per_second,
                over_secs = secs.round() as u64,
                "{type_tag}: {delivered} delivered, {} retried, {} dead ({per_second}/s)",
                d.failed_attempts,
                d.given_up,
            );
        }
        last.0 = now;
    }
}
