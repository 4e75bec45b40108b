//! Pause and resume a message type, or a group of messages, across processes.
//!
//! `outbox_paused` lists the paused types; every running outbox reads it five times a
//! second and flips a [`PauseSwitch`] per type. While a type's switch is on, its worker
//! reports "not ready": nothing new starts, heartbeats go on, messages stay queued (a
//! batch already claimed waits in memory) and everything goes out after resume — stop a
//! newsletter mid-flight, fix the text, let it continue.
//!
//!
//! Paused groups (`outbox_groups.paused_at`) are read at the same time into
//! [`PausedGroups`]. No claim takes a message of a paused group; a message a worker had
//! already claimed is given back unchanged (its place in line kept) instead of started, and
//! the ones waiting in a worker's buffer are given back as soon as the pause is read.
//!
//! A cancelled group is read the same way, with the time of its cancel: its messages
//! enqueued before it are never claimed again, and a worker gives back the ones it holds
//! (they are then deleted as cancelled) instead of starting them.
//!
//! Failure mode: if reading the tables fails, the switches keep their last state.

mod groups;
mod layer;
mod service;
mod switch;

pub use groups::{HeldBack, PausedGroups};
pub use layer::PauseLayer;
pub use service::PauseService;
pub use switch::PauseSwitch;
