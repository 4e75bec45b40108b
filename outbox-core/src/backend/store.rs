//! The durable operations the layers and the admin API need, one trait per concern.
//! Every backend implements all of them; the layers only see the trait they use.

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use crate::{
    admin::{DeadLetter, DeadLetterFilter, PausedType, Requeued, TypeCounts},
    layers::rate_limit::{BucketState, RateLimit},
    Error,
};

/// Moving a failed message's due time, and giving it up.
pub trait RetryStore: Send + Sync + 'static {
    /// Sets when the message is due again; `give_back_attempt` raises its `max_attempts` by
    /// one (the attempt did not count).
    fn reschedule<'a>(
        &'a self,
        id: &'a str,
        due: SystemTime,
        give_back_attempt: bool,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// Moves the message into the dead letters, in one transaction.
    fn dead_letter<'a>(
        &'a self,
        id: &'a str,
        reason: &'a str,
        attempts: u32,
    ) -> BoxFuture<'a, Result<(), Error>>;
}

/// The outcome of trying to take one token from a bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TokenGrant {
    /// A token was taken (durably).
    Granted,
    /// No token now; one will be there after this long.
    Wait(Duration),
    /// The bucket does not exist.
    NoSuchBucket,
}

/// Named token buckets shared by every process on the database.
pub trait RateBucketStore: Send + Sync + 'static {
    /// Takes one token at time `now` (unix seconds) if there is one.
    fn take_token<'a>(
        &'a self,
        bucket: &'a str,
        now: f64,
    ) -> BoxFuture<'a, Result<TokenGrant, Error>>;

    /// Creates the bucket full, or changes its rate keeping the tokens it has (capped).
    fn set_bucket<'a>(
        &'a self,
        bucket: &'a str,
        limit: RateLimit,
        now: f64,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// The bucket's settings and tokens as of its last update.
    fn bucket<'a>(&'a self, bucket: &'a str) -> BoxFuture<'a, Result<Option<BucketState>, Error>>;
}

/// Message types paused across processes.
pub trait PauseStore: Send + Sync + 'static {
    /// Pauses `type_tag` (idempotent).
    fn pause<'a>(&'a self, type_tag: &'a str, reason: &'a str) -> BoxFuture<'a, Result<(), Error>>;
    /// Resumes `type_tag`; false if it was not paused.
    fn resume<'a>(&'a self, type_tag: &'a str) -> BoxFuture<'a, Result<bool, Error>>;
    /// Every paused type.
    fn paused(&self) -> BoxFuture<'_, Result<Vec<PausedType>, Error>>;
}

/// The dead-letter table.
pub trait DeadLetterStore: Send + Sync + 'static {
    /// A page of dead letters, newest first.
    fn list_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        limit: u32,
        offset: u64,
    ) -> BoxFuture<'a, Result<Vec<DeadLetter>, Error>>;
    /// How many dead letters match.
    fn count_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>>;
    /// Moves matching dead letters back to the queue, due now, attempts reset.
    fn requeue_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
    ) -> BoxFuture<'a, Result<Requeued, Error>>;
    /// Deletes matching dead letters.
    fn purge_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>>;
}

/// Housekeeping over the queue itself: crash recovery, drain progress, unknown types.
pub trait QueueStore: Send + Sync + 'static {
    /// Re-enqueues the messages of `queue` claimed by workers that sent no heartbeat for
    /// `lease` (crashed processes); run when an outbox starts, so a cron-style `drain`
    /// recovers what an earlier, killed run held.
    fn recover_orphans<'a>(
        &'a self,
        queue: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<u64, Error>>;

    /// Messages of `queues` (except paused types) that are due now or held by a worker
    /// whose name starts with `worker_prefix`: zero means a drain is complete.
    fn count_unfinished<'a>(
        &'a self,
        queues: &'a [&'static str],
        worker_prefix: &'a str,
    ) -> BoxFuture<'a, Result<u64, Error>>;

    /// Pending messages of types other than `registered`.
    fn unregistered_pending<'a>(
        &'a self,
        registered: &'a [&'static str],
    ) -> BoxFuture<'a, Result<Vec<crate::backend::UnregisteredType>, Error>>;

    /// Gives up (dead-letters) pending messages of types other than `registered`,
    /// recording `reason`; returns how many.
    fn fail_unregistered<'a>(
        &'a self,
        registered: &'a [&'static str],
        reason: &'a str,
    ) -> BoxFuture<'a, Result<u64, Error>>;
}

/// Counts per type and status.
pub trait StatsStore: Send + Sync + 'static {
    /// Message counts per type, at time `now`.
    fn status_counts(&self, now: SystemTime) -> BoxFuture<'_, Result<Vec<TypeCounts>, Error>>;
}

/// Whole unix seconds of `t`, rounded up (a due time is never early).
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub(crate) fn unix_secs_ceil(t: SystemTime) -> i64 {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    d.as_secs() as i64 + i64::from(d.subsec_nanos() > 0)
}

/// Unix milliseconds of `t`.
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub(crate) fn unix_millis(t: SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// The time `ms` unix milliseconds stand for.
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub(crate) fn from_unix_millis(ms: i64) -> SystemTime {
    std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}
