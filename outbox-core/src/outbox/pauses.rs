//! Keeps each type's pause switch, the process's paused groups and its circuit breakers in
//! step with the database: one read of all three, five times a second.

use std::{collections::HashMap, sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use super::breakers;
use crate::{
    clock::Clock,
    layers::{breaker::BreakerSwitch, pause::PauseSwitch},
    store::{Backend, GROUP_PAUSE_POLL},
    worker::{unreachable, Hub},
};

/// What the process steers by the shared rows: the pause switch of each type, the paused
/// groups (in the hub), and one switch per circuit breaker, whose probes it asks for as
/// `owner`.
pub(super) struct Steer<B> {
    pub(super) pauses: HashMap<&'static str, Arc<PauseSwitch>>,
    pub(super) breakers: Vec<Arc<BreakerSwitch>>,
    pub(super) hub: Arc<Hub<B>>,
    pub(super) owner: Arc<str>,
}

impl<B: Backend> Steer<B> {
    /// Reads and applies everything every [`GROUP_PAUSE_POLL`] (sooner when a breaker's
    /// probe is due), until stopped.
    pub(super) fn watch(
        self,
        backend: B,
        clock: Arc<dyn Clock>,
        mut stopped: watch::Receiver<bool>,
    ) -> JoinHandle<()> {
        tokio::spawn(async move {
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
        for (queue, switch) in &self.pauses {
            switch.set(steering.paused_types.iter().any(|p| p.type_tag == *queue));
        }
        let changed = self
            .hub
            .paused_groups
            .set(steering.paused_groups.into_iter().collect());
        if changed.resumed {
            // Idle workers start the resumed messages now, not at their next probe.
            self.hub.wake_all();
        }
        if changed.paused {
            let released = self.hub.release_paused_groups();
            if released > 0 {
                tracing::debug!(
                    released,
                    "gave back claimed messages of paused groups before they started"
                );
            }
        }
        let open = &steering.open_breakers;
        let wait = breakers::apply(backend, clock, &self.breakers, &versions, open, &self.owner);
        wait.await.min(GROUP_PAUSE_POLL)
    }
}
