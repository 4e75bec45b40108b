//! The dead-letter sink.
//!
//! The outermost layer: a message the retry layer gave up (permanent failure, attempts
//! exhausted, undecodable payload) is moved into `outbox_dead_letters` in one transaction
//! — type, payload, attempts, last error, enqueued and failed times — and leaves the
//! queue. [`Admin::dead_letters`](crate::admin::Admin::dead_letters) lists, counts,
//! requeues and purges them.
//!
//! Failure mode: if the move fails, the row stays in the queue marked killed; status
//! counts report it as dead and nothing is lost.

mod layer;
mod service;

pub use layer::DeadLetterLayer;
pub use service::DeadLetterService;
