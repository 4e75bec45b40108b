//! The background services one start runs beside its workers, as one list: the steering
//! read (pauses, groups, breakers), group completion hooks, the reach and due watchers,
//! the heartbeat, the gauges, the history and the summary reporters, and the pruners.

use std::{sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use super::{gauges, groups, history, pauses::Steer, retention, summary::Summary, Outbox, Start};
use crate::{
    store::{Backend, Retention},
    worker::{heartbeat, watch_due, watch_reach, Hub, IdlePoll, Signals},
};

/// The started services, and the reporters the stop flushes.
pub(super) struct Services<B: Backend> {
    /// Aborted once the workers stopped.
    pub(super) tasks: Vec<JoinHandle<()>>,
    /// Reports the workers' outcomes to the history.
    pub(super) history: Arc<history::Reporter<B>>,
    /// Logs the workers' outcomes per type at INFO, unless turned off.
    pub(super) summary: Option<Arc<Summary>>,
}

impl<B: Backend, S: Send + Sync + 'static> Outbox<B, S> {
    /// Starts every background service of a start as `how`, each stopping when `stopped`
    /// turns true (the heartbeat is aborted after the workers stopped: it extends their
    /// leases while they finish). Cannot fail: a service's failed round is logged and
    /// tried again.
    pub(super) fn services(
        &self,
        how: Start,
        steer: Steer<B>,
        hub: Arc<Hub<B>>,
        signals: &Arc<Signals>,
        stopped: watch::Receiver<bool>,
    ) -> Services<B> {
        let (store, clock) = (&self.backend, &self.clock);
        let (min, max) = self.idle_poll;
        let counters = || {
            self.registrations
                .iter()
                .map(|r| (r.queue, Arc::clone(&r.counters)))
                .collect()
        };
        let history = history::Reporter::new(store.clone(), Arc::clone(clock), counters());
        let summary = self.summary_every.map(|_| Summary::new(counters()));
        // Suppressed rows are kept as long as done rows, or a week without retention.
        let suppressed_for = match self.retention {
            Retention::KeepFor(window) => window,
            Retention::DeleteOnSuccess => retention::SUPPRESSED_KEPT,
        };
        // Message events: 30 days, or as long as done rows when that is longer.
        let events_for = match self.retention {
            Retention::KeepFor(window) => window.max(crate::message_events::EVENTS_KEPT),
            Retention::DeleteOnSuccess => crate::message_events::EVENTS_KEPT,
        };
        let prune = |rows, window| {
            let signals = Arc::clone(signals);
            retention::prune(
                store.clone(),
                Arc::clone(clock),
                rows,
                window,
                signals,
                stopped.clone(),
            )
        };
        let mut tasks = vec![
            steer.watch(store.clone(), Arc::clone(clock), stopped.clone()),
            groups::fire_hooks(
                store.clone(),
                Arc::clone(clock),
                Arc::clone(signals),
                stopped.clone(),
            ),
            watch_reach(Arc::clone(&hub.reach), stopped.clone()),
            watch_due(
                Arc::clone(&hub),
                store.clone(),
                Arc::clone(clock),
                IdlePoll::new(min, max),
                stopped.clone(),
            ),
            // A drain rescues expired leases at its start itself.
            heartbeat(
                hub,
                store.clone(),
                Arc::clone(clock),
                self.beat_every(),
                how == Start::Run,
            ),
            history.start(stopped.clone()),
            prune(retention::Rows::Suppressed, suppressed_for),
            prune(retention::Rows::Events, events_for),
            prune(retention::Rows::Processed, self.inbox_keep),
        ];
        if let Retention::KeepFor(window) = self.retention {
            tasks.push(prune(retention::Rows::Done, window));
        }
        if let Some(every) = self.gauge_interval {
            tasks.push(gauges::sample(
                store.clone(),
                Arc::clone(clock),
                every,
                stopped.clone(),
            ));
        }
        if let (Some(every), Some(summary)) = (self.summary_every, &summary) {
            tasks.push(summary.start(every, stopped.clone()));
        }
        Services {
            tasks,
            history,
            summary,
        }
    }

    /// How often the heartbeat beats: the shortest interval any type asks for.
    fn beat_every(&self) -> Duration {
        self.registrations
            .iter()
            .map(|r| self.settings_of(r).heartbeat_interval)
            .min()
            .unwrap_or(Duration::from_secs(10))
    }
}
