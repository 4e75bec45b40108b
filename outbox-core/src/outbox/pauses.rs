//! Keeps each type's pause switch and the process's paused groups in step with the
//! database.

use std::{collections::HashMap, sync::Arc};

use tokio::{sync::watch, task::JoinHandle};

use crate::{
    layers::pause::PauseSwitch,
    store::{Backend, GROUP_PAUSE_POLL},
    worker::Hub,
};

/// Reads the paused types and groups every [`GROUP_PAUSE_POLL`], sets the switches and
/// the paused groups, and gives back the buffered messages of newly paused groups, until
/// stopped.
pub(super) fn watch<B: Backend>(
    backend: B,
    switches: HashMap<&'static str, Arc<PauseSwitch>>,
    hub: Arc<Hub<B>>,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            read_once(&backend, &switches, &hub).await;
            tokio::select! {
                _ = tokio::time::sleep(GROUP_PAUSE_POLL) => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
        }
    })
}

/// Reads the paused types and groups once and applies them; on an error the last known
/// state stays.
pub(super) async fn read_once<B: Backend>(
    backend: &B,
    switches: &HashMap<&'static str, Arc<PauseSwitch>>,
    hub: &Hub<B>,
) {
    match backend.paused().await {
        Ok(paused) => {
            for (queue, switch) in switches {
                switch.set(paused.iter().any(|p| p.type_tag == *queue));
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the paused types; keeping the last known state")
        }
    }
    match backend.paused_groups().await {
        Ok(groups) => {
            let changed = hub.paused_groups.set(groups.into_iter().collect());
            if changed.resumed {
                // Idle workers start the resumed messages now, not at their next probe.
                hub.wake_all();
            }
            if changed.paused {
                let released = hub.release_paused_groups();
                if released > 0 {
                    tracing::debug!(
                        released,
                        "gave back claimed messages of paused groups before they started"
                    );
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the paused groups; keeping the last known state")
        }
    }
}
