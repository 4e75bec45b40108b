//! A token bucket shared through the database.
//!
//! Named buckets live in `outbox_rate_buckets`: capacity (the burst), refill rate, tokens
//! and the time they were counted. Every worker of every process on the database takes
//! its tokens from the same row with one conditional `UPDATE`, before the handler runs,
//! so in any window W of the bucket's clock at most `burst + rate × W` tokens are granted,
//! and a crash after the take cannot spend the token twice (a crashed send is simply not
//! refunded). The handler starts right after its grant; on a loaded machine a start can
//! lag its grant by the scheduler's delay, so a window of handler start times can hold a
//! few more than the bound (BENCHMARKS.md, `ratelimit`). Each grant is traced at TRACE
//! level under [`GRANT_EVENT_TARGET`] with its `bucket` and `granted_at` (unix seconds).
//!
//! Several message types can share one bucket (user mails and organizer mails through one
//! provider). Changing a bucket's rate ([`Admin::set_rate_limit`](crate::admin::Admin::set_rate_limit))
//! takes effect at the next token, in every process, without a restart.
//!
//! A message that finds no token waits in place when the next token is near (up to
//! `max_inline_wait`, 1 s by default), otherwise it is deferred: its row is rescheduled for
//! when the token is due and the worker slot is freed, and the worker stops fetching that
//! type until then (at most 2 s at a time, so a rate raised at runtime is seen quickly):
//! a large backlog stays pending in the database rather than being rescheduled row by row
//! at every token. Waiting is never a failed attempt.
//!
//! Failure modes: a bucket that does not exist defers its messages by a minute and logs
//! how to create it; a database error while taking a token defers by a few seconds. The
//! bound assumes the processes' clocks agree (NTP); skew widens it by rate × skew.

mod layer;
mod rate;
mod service;

/// The `tracing` target of the event emitted at every token grant (fields `bucket` and
/// `granted_at`, the bucket clock in unix seconds), for audits and for the benchmark.
pub const GRANT_EVENT_TARGET: &str = "outbox::rate_limit::grant";

pub use layer::RateLimitLayer;
pub use rate::{BucketState, RateLimit};
pub use service::RateLimitService;
