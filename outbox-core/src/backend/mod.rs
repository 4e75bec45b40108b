//! Backends: where messages are stored and how workers fetch them.
//!
//! Each database lives in its own module behind its cargo feature; the rest of the crate
//! only talks to the [`Backend`] trait and never names a database.

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod enqueue_batch;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
mod raw_bytes;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod sql_stores;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod store;
mod tick;

use std::time::Duration;

use apalis_core::error::WorkerError;
use futures::future::BoxFuture;

pub use raw_bytes::RawBytes;

/// apalis' worker context, for [`Backend::run_bare_worker`] callers.
#[doc(hidden)]
pub use apalis_core::worker::context::WorkerContext;

/// The handler of [`Backend::run_bare_worker`]: accepts every task.
type BareHandler =
    fn(apalis_core::task::Task<Vec<u8>>) -> std::future::Ready<Result<(), crate::BoxError>>;

/// The no-op service of [`Backend::run_bare_worker`].
#[doc(hidden)]
pub fn bare_service() -> tower::util::ServiceFn<BareHandler> {
    fn noop(
        _: apalis_core::task::Task<Vec<u8>>,
    ) -> std::future::Ready<Result<(), crate::BoxError>> {
        std::future::ready(Ok(()))
    }
    tower::service_fn(noop as BareHandler)
}
pub use store::{
    DeadLetterStore, PauseStore, QueueStore, RateBucketStore, RetryStore, StatsStore, TokenGrant,
};
pub use tick::TickStrategy;

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub(crate) use store::{from_unix_millis, unix_millis, unix_secs_ceil};

use crate::{layers::OutboxLayers, worker::Dispatch, Error};

/// How one message type's worker runs.
#[derive(Debug, Clone)]
pub struct QueueSettings {
    /// The type tag, used as the queue name.
    pub queue: &'static str,
    /// Handler calls in flight at once for this type.
    pub concurrency: usize,
    /// Rows claimed per fetch.
    pub batch_size: usize,
    /// How often an idle worker looks for due messages.
    pub poll_interval: Duration,
    /// How often the worker proves it is alive; a worker silent for
    /// `heartbeat_interval × missed_heartbeats` is presumed dead and its messages are
    /// handed to others.
    pub heartbeat_interval: Duration,
    /// Missed heartbeats before a worker's messages are recovered.
    pub missed_heartbeats: usize,
}

/// A pending-message count for a type that no handler in this process is registered for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnregisteredType {
    /// The type tag found in the queue.
    pub type_tag: String,
    /// How many messages of it are waiting.
    pub pending: u64,
}

/// Storage for queued messages and the workers that deliver them, plus the side tables
/// the layers and the admin API use.
pub trait Backend:
    QueueStore
    + RetryStore
    + RateBucketStore
    + PauseStore
    + DeadLetterStore
    + StatsStore
    + Clone
    + Send
    + Sync
    + 'static
{
    /// Short name for logs ("sqlite", "postgres", "mysql").
    fn name(&self) -> &'static str;

    /// Creates or upgrades the tables the outbox needs; safe to run at every start and
    /// from several processes.
    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>>;

    /// Runs one worker for `settings.queue`, with `layers` around apalis' lifecycle and
    /// `service` at the bottom, until it is stopped through `worker` (`Ok`) or its
    /// connection to the database fails (`Err`; the caller restarts it).
    fn run_worker(
        &self,
        worker: WorkerContext,
        settings: QueueSettings,
        layers: OutboxLayers,
        service: Dispatch,
    ) -> BoxFuture<'static, Result<(), WorkerError>>;

    /// Runs apalis alone on the same storage — no outbox layers, a no-op handler, the same
    /// concurrency, batch and poll settings — until stopped: the baseline the benchmark
    /// compares the full stack with.
    #[doc(hidden)]
    fn run_bare_worker(
        &self,
        worker: WorkerContext,
        settings: QueueSettings,
    ) -> BoxFuture<'static, Result<(), WorkerError>>;
}
