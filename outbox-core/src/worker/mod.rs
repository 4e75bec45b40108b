//! Workers: one apalis worker per registered message type, supervised and restarted.

mod counters;
mod dispatch;
mod names;
mod supervisor;

pub use counters::DeliveryCounts;
pub use dispatch::Dispatch;

pub(crate) use counters::Counters;
pub(crate) use dispatch::{ErasedHandler, TypedHandler};
pub(crate) use names::WorkerNames;
pub(crate) use supervisor::supervise;
