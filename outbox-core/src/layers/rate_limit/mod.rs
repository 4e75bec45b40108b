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
//! `max_inline_wait`, 1 s by default), otherwise it goes back to the queue unchanged —
//! its due time and place in line kept, its attempt given back — the worker slot is
//! freed, and the worker starts nothing more of that type until the token is due (at most
//! 2 s at a time, so a rate raised at runtime is seen quickly); claimed messages that wait
//! longer than half their lease are given back too. Waiting is never a failed attempt.
//! Messages ask for tokens one at a time, the oldest started first (claim order), and while
//! the worker is held the newer ones already started go back in line without asking, so
//! tokens go out oldest first even after a message was put back.
//!
//! Failure modes: a bucket that does not exist defers its messages by a minute and logs
//! how to create it; a database error while taking a token defers by a few seconds. The
//! bound assumes the processes' clocks agree (NTP); skew widens it by rate × skew.

mod layer;
mod line;
mod service;

/// The `tracing` target of the event emitted at every token grant (fields `bucket` and
/// `granted_at`, the bucket clock in unix seconds), for audits and for the benchmark.
pub const GRANT_EVENT_TARGET: &str = "outbox::rate_limit::grant";

pub use crate::store::RateLimit;
pub use layer::RateLimitLayer;
pub use service::RateLimitService;
