//! Workers: one apalis worker per registered message type, over the shared engine,
//! supervised and restarted.

mod claim_size;
mod dispatch;
mod engine;
mod names;
mod runner;
mod settle;
mod shared;
mod supervisor;

use std::time::Duration;

pub use crate::counters::DeliveryCounts;
pub use dispatch::Dispatch;

pub(crate) use crate::counters::Counters;
pub(crate) use dispatch::{ErasedHandler, TypedHandler};
pub(crate) use names::WorkerNames;
pub(crate) use supervisor::supervise;

/// How one message type's worker runs.
#[derive(Debug, Clone)]
pub struct QueueSettings {
    /// The type tag it delivers.
    pub type_tag: &'static str,
    /// Messages claimed per statement at first (a worker holds up to a batch and a half
    /// claimed before they start).
    pub batch_size: usize,
    /// The most a claim grows to while the handlers outpace the claims (at least
    /// `batch_size`; equal to it, the batch never grows).
    pub max_batch_size: usize,
    /// How often an idle worker looks for due messages without a wake-up.
    pub poll_interval: Duration,
    /// How often the worker extends its leases; a worker silent for
    /// `heartbeat_interval × missed_heartbeats` loses its messages to others.
    pub heartbeat_interval: Duration,
    /// Missed heartbeats before a worker's leases expire.
    pub missed_heartbeats: usize,
    /// Keep delivered messages as done rows (retention) instead of deleting them.
    pub keep_done: bool,
}

impl QueueSettings {
    /// How long a claim or a heartbeat holds a message.
    pub fn lease(&self) -> Duration {
        self.heartbeat_interval * self.missed_heartbeats as u32
    }
}
