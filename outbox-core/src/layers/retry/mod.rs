//! Durable retry with backoff.
//!
//! A failed attempt is never retried by sleeping in memory: [`RetryService`] writes the
//! next due time into the message's row and lets the worker move on; any worker (in any
//! process) picks the message up when it is due, also after a crash.
//!
//! What the handler returned decides what happens ([`HandlerErrorKind`](crate::HandlerErrorKind)):
//! `Retry` follows the type's [`RetrySchedule`]; `RetryAt` uses the given time and counts
//! as an attempt; `Snooze` comes back after the delay without using an attempt;
//! `Permanent`, and any failure once attempts are exhausted, gives the message up
//! (the dead-letter layer then moves it out). A message deferred by the rate limit is not
//! an attempt either. Timeouts and panics are ordinary failed attempts.
//!
//! Failure mode: if writing the new due time fails (database unreachable), the row is
//! left failed with its old due time, so it is retried at once by whichever worker sees
//! it next; nothing is lost.

mod layer;
mod schedule;
mod service;

pub use layer::RetryLayer;
pub use schedule::RetrySchedule;
pub use service::RetryService;
