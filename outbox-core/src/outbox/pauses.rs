//! Keeps each type's pause switch, the process's paused and cancelled groups and its
//! circuit breakers in step with the database: one read of all of them, five times a
//! second.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio::{sync::watch, task::JoinHandle};

use super::breakers;
use crate::{
    admin::LIVE_BATCH,
    clock::Clock,
    layers::{breaker::BreakerSwitch, pause::PauseSwitch},
    store::{Backend, Steering, GROUP_PAUSE_POLL},
    worker::{unreachable, Hub, WorkerNames},
};

/// What the process steers by the shared rows: the pause switch of each type, the paused
/// groups (in the hub), and one switch per circuit breaker, whose probes it asks for as
/// `owner`.
pub(super) struct Steer<B> {
    pub(super) pauses: HashMap<&'static str, Arc<PauseSwitch>>,
    pub(super) breakers: Vec<Arc<BreakerSwitch>>,
    pub(super) hub: Arc<Hub<B>>,
    pub(super) owner: Arc<str>,
    /// When this process last deleted what its cancelled groups had left in the queue.
    pub(super) swept: Mutex<Option<Instant>>,
}

/// How often a process deletes what recently cancelled groups left in the queue (messages
/// given back, or running at the cancel and back for a retry), besides right after it gave
/// some back.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

impl<B: Backend> Steer<B> {
    /// Steers the `pauses` and `breakers` of one start, through `hub`, asking for probes as
    /// the start's `names` prefix. Cannot fail.
    pub(super) fn new(
        pauses: &HashMap<&'static str, Arc<PauseSwitch>>,
        breakers: &HashMap<&'static str, Arc<BreakerSwitch>>,
        hub: &Arc<Hub<B>>,
        names: &WorkerNames,
    ) -> Self {
        Self {
            pauses: pauses.clone(),
            breakers: breakers::distinct(breakers),
            hub: Arc::clone(hub),
            owner: Arc::from(names.prefix()),
            swept: Mutex::new(None),
        }
    }

    /// Reads and applies everything every [`GROUP_PAUSE_POLL`] (sooner when a breaker's
    /// probe is due), until stopped.
    pub(super) fn watch(
        self,
        backend: B,
        clock: Arc<dyn Clock>,
        mut stopped: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        tokio::spawn(async move {
            // The start read the steering a moment ago: the next read waits for the
            // workers' first claim.
            self.hub.signals.after_first_claim().await;
            loop {
                let wait = self.read_once(&backend, clock.as_ref()).await;
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stopped.wait_for(|s| *s) => return,
                }
            }
        })
    }

    /// Reads the paused types and groups and the open breakers once (one statement) and
    /// applies them; gives back the buffered messages of newly paused groups; takes the
    /// due probes. On an error the last known state stays. Returns how long to wait before
    /// the next read.
    pub(super) async fn read_once(&self, backend: &B, clock: &dyn Clock) -> Duration {
        // Taken before the read: a breaker this process moves meanwhile is not undone by it.
        let versions = breakers::versions(&self.breakers);
        let steering = match self
            .hub
            .reach
            .watch(backend.steering(clock.database_now()))
            .await
        {
            Ok(steering) => steering,
            Err(e) if unreachable(&e) => {
                // Said once for the process (`Reach`).
                tracing::debug!(error = %e, "cannot read the paused types, groups and circuit breakers; keeping the last known state");
                return GROUP_PAUSE_POLL;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the paused types, groups and circuit breakers; keeping the last known state");
                return GROUP_PAUSE_POLL;
            }
        };
        self.apply(steering, versions, backend, clock).await
    }

    /// Applies `steering` (read by [`read_once`](Self::read_once), or before the workers
    /// start), given the breakers' `versions` from before it was read; returns how long to
    /// wait before the next read.
    pub(super) async fn apply(
        &self,
        steering: Steering,
        versions: Vec<u64>,
        backend: &B,
        clock: &dyn Clock,
    ) -> Duration {
        for (queue, switch) in &self.pauses {
            switch.set(steering.paused_types.iter().any(|p| p.type_tag == *queue));
        }
        let groups = &self.hub.paused_groups;
        let changed = groups.set(steering.paused_groups.into_iter().collect());
        let cancelled = groups.set_cancelled(&steering.cancelled_groups);
        if changed.resumed {
            // Idle workers start the resumed messages now, not at their next probe.
            self.hub.wake_all();
        }
        if changed.paused || cancelled {
            let released = self.hub.release_paused_groups();
            if released > 0 {
                tracing::debug!(
                    released,
                    "gave back claimed messages of paused or cancelled groups before they started"
                );
            }
        }
        self.sweep_cancelled(backend).await;
        let open = &steering.open_breakers;
        let wait = breakers::apply(backend, clock, &self.breakers, &versions, open, &self.owner);
        wait.await.min(GROUP_PAUSE_POLL)
    }

    /// Deletes, as cancelled, the messages that recently cancelled groups left in the queue:
    /// right after this process gave one back, and every [`SWEEP_EVERY`] while a group
    /// was cancelled in the last [`crate::store::CANCEL_WINDOW`]. Errors are logged and
    /// the next sweep tries again.
    async fn sweep_cancelled(&self, backend: &B) {
        let groups = &self.hub.paused_groups;
        let given_back = groups.take_given_back();
        let names = groups.cancelled_names();
        if names.is_empty() {
            return;
        }
        {
            let mut swept = self.swept.lock().unwrap_or_else(|e| e.into_inner());
            let due = swept.is_none_or(|at| at.elapsed() >= SWEEP_EVERY);
            if !(given_back || due) {
                return;
            }
            *swept = Some(Instant::now());
        }
        for name in names {
            match backend.cancel_group_leftovers(&name, LIVE_BATCH).await {
                Ok(0) => {}
                Ok(deleted) => tracing::debug!(
                    group = %name,
                    deleted,
                    "deleted messages of a cancelled group that came back to the queue"
                ),
                Err(e) => tracing::debug!(
                    group = %name,
                    error = %e,
                    "cannot delete what a cancelled group left; trying again in a second"
                ),
            }
        }
    }
}
