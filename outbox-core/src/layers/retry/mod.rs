//! Durable retry with backoff.
//!
//! A failed attempt is never retried by sleeping in memory: [`RetryService`] decides the
//! next due time, the worker's flusher writes it into the message's row and the worker
//! moves on; any worker (in any process) picks the message up when it is due, also after
//! a crash.
//!
//! What the handler returned decides what happens ([`HandlerErrorKind`](crate::HandlerErrorKind)):
//! `Retry` follows the type's [`RetrySchedule`]; `RetryAt` and `RetryAfter` use the given time and
//! count
//! as an attempt; `Snooze` comes back after the delay and its attempt is given back;
//! `Permanent`, and any failure once attempts are exhausted, gives the message up
//! (the worker's settle step hands it to the flusher, which moves it into the dead letters).
//! A message deferred by the rate limit is not an attempt either. Timeouts and panics are
//! ordinary failed attempts. The decision itself is one pure function, [`decide`], which
//! the test helpers use too.
//!
//! Failure mode: if writing the new due time fails (database unreachable), the flusher
//! keeps it and tries again; if the process dies first, the message comes back when its
//! lease expires. A message whose previous worker died during its last attempt is given
//! up without calling the handler again. Nothing is lost.

mod decide;
mod layer;
mod schedule;
mod service;

pub(crate) use decide::{decide, Decision};
pub use layer::RetryLayer;
pub use schedule::RetrySchedule;
pub use service::RetryService;
