//! The dead-letter sink.
//!
//! The outermost layer: a message the retry layer gave up (permanent failure, attempts
//! exhausted, undecodable payload) is noted here at DEBUG, and the worker's flusher
//! moves it into `outbox_dead_letters` in one transaction — type, payload, attempts, last
//! error, enqueued and failed times — out of the queue, then counts it and logs the move
//! (a WARN). A worker whose lease was taken over meanwhile moves, counts and logs nothing.
//! [`Admin::dead_letters`](crate::admin::Admin::dead_letters) lists, counts, requeues and
//! purges them.
//!
//! Failure mode: if the move cannot be written, the flusher keeps trying; if the process
//! dies first, the message comes back after its lease and is given up again. Nothing is
//! lost.

mod layer;
mod service;

pub use layer::DeadLetterLayer;
pub use service::DeadLetterService;
