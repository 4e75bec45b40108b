//! Pause and resume a message type across processes.
//!
//! `outbox_paused` lists the paused types; every running outbox reads it about twice a
//! second and flips a [`PauseSwitch`] per type. While a type's switch is on, its worker
//! reports "not ready": nothing new starts, heartbeats go on, messages stay queued (a
//! batch already claimed waits in memory) and everything goes out after resume — stop a
//! newsletter mid-flight, fix the text, let it continue.
//!
//! Failure mode: if reading the table fails, the switches keep their last state.

mod layer;
mod service;
mod switch;

pub use layer::PauseLayer;
pub use service::PauseService;
pub use switch::PauseSwitch;
