//! Workers: one apalis worker per registered message type, over the shared engine,
//! supervised and restarted.

mod claim_size;
mod dispatch;
mod engine;
mod names;
mod runner;
mod settings;
mod settle;
mod shared;
mod supervisor;

pub(crate) use crate::counters::Counters;
pub(crate) use dispatch::{Dispatch, ErasedHandler, TypedHandler};
pub(crate) use names::WorkerNames;
pub(crate) use settings::WorkerSettings;
pub(crate) use supervisor::supervise;
