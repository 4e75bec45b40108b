//! Keeps each type's pause switch in step with `outbox_paused`.

use std::{collections::HashMap, sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use crate::{layers::pause::PauseSwitch, store::Backend};

/// How often the paused types are read.
pub(crate) const PAUSE_POLL: Duration = Duration::from_millis(500);

/// Reads the paused types every [`PAUSE_POLL`] and sets the switches, until stopped.
pub(super) fn watch<B: Backend>(
    backend: B,
    switches: HashMap<&'static str, Arc<PauseSwitch>>,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            match backend.paused().await {
                Ok(paused) => {
                    for (queue, switch) in &switches {
                        switch.set(paused.iter().any(|p| p.type_tag == *queue));
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the paused types; keeping the last known state")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(PAUSE_POLL) => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
        }
    })
}
