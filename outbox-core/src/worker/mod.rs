//! Workers: one apalis worker per registered message type, over the shared engine,
//! supervised and restarted; the process's due probe and heartbeat serve them all.

mod claim_size;
mod dispatch;
mod engine;
mod hub;
mod idle_poll;
mod names;
mod reach;
mod runner;
mod settings;
mod settle;
mod shared;
mod signals;
mod supervisor;
mod suppress;

pub(crate) use crate::counters::Counters;
pub(crate) use dispatch::{Dispatch, ErasedHandler, TypedHandler};
pub(crate) use hub::{heartbeat, watch_due, Hub, Process};
pub(crate) use idle_poll::IdlePoll;
pub(crate) use names::WorkerNames;
pub(crate) use reach::{unreachable, watch_reach, Reach};
pub(crate) use settings::{RecipientOf, WorkerSettings};
pub(crate) use signals::Signals;
pub(crate) use supervisor::supervise;
