//! Queue depth and oldest-due-age gauges per type, sampled from the status counts while
//! workers run (and once more after they stopped, so a drain leaves the final figures).

use std::{sync::Arc, time::Duration};

use tokio::{sync::watch, task::JoinHandle};

use crate::{
    clock::Clock,
    counters::names,
    store::{Backend, TypeCounts},
};

/// Samples the status counts every `every` and sets the gauges, until stopped; the first
/// sample one interval after the start (the count scans the queue: at start it would
/// compete with the first claims over a backlog; a drain samples once when it ends).
pub(super) fn sample<B: Backend>(
    backend: B,
    clock: Arc<dyn Clock>,
    every: Duration,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = stopped.wait_for(|s| *s) => return,
            }
            sample_once(&backend, clock.as_ref()).await;
        }
    })
}

/// Reads the status counts once and sets the gauges.
pub(super) async fn sample_once<B: Backend>(backend: &B, clock: &dyn Clock) {
    match backend.status_counts(clock.database_now()).await {
        Ok(counts) => counts.iter().for_each(|c| record(c, clock)),
        Err(e) => tracing::debug!(error = %e, "cannot read the status counts for the gauges"),
    }
}

/// Sets the gauges of one type.
fn record(c: &TypeCounts, clock: &dyn Clock) {
    let t = c.type_tag.clone();
    for (state, n) in [
        ("pending", c.pending),
        ("scheduled", c.scheduled),
        ("running", c.running),
        ("retrying", c.retrying),
        ("paused", c.paused),
        ("done", c.done),
        ("suppressed", c.suppressed),
        ("dead", c.dead),
    ] {
        metrics::gauge!(names::QUEUE_DEPTH, "type" => t.clone(), "state" => state).set(n as f64);
    }
    let age = c
        .oldest_due
        .and_then(|due| clock.now().duration_since(due).ok())
        .map_or(0.0, |d| d.as_secs_f64());
    metrics::gauge!(names::OLDEST_DUE_AGE, "type" => t).set(age);
}
