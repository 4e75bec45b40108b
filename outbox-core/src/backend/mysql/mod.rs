//! MySQL 8 and MariaDB ≥ 10.6 (feature `mysql`).
//!
//! apalis-mysql 1.0.0-rc.8 does not build against apalis 1.0 and its schema needs MySQL 8
//! (notes/apalis-1.0.md §0.1), so this backend is ours: apalis-core's `Persistence`
//! implemented on sqlx 0.9 (one sqlx for every user), with `FOR UPDATE SKIP LOCKED`
//! claims, heartbeats and orphan recovery, over tables laid out like apalis' MySQL schema
//! (`outbox_jobs`, `outbox_workers`; times as unix seconds). Every statement is static with
//! bound parameters (batches travel as one JSON parameter through `JSON_TABLE`), so the
//! statement cache never churns — the path on which sqlx 0.9's missing TCP_NODELAY costs
//! 40 ms (field-facts.md).
//!
//! Failure modes: a worker whose connection breaks stops and is restarted by the outbox;
//! its claimed messages return once its heartbeat is stale (`attempts + 1`, as apalis does:
//! the crash may have happened mid-handler). Claimed messages not yet started when a
//! worker shuts down go back without using an attempt.

mod enqueue;
mod persistence;
mod storage;

use std::time::Duration;

use apalis_core::{
    backend::ext::{poll_strategy::PollWith, BackendExt},
    error::WorkerError,
    worker::builder::WorkerBuilder,
    worker::context::WorkerContext,
};
use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    mysql::{MySqlConnectOptions, MySqlPoolOptions},
    MySqlPool,
};

use self::{persistence::MySqlPersistence, storage::MySqlStorage};
use super::{sql_stores::sql_stores, Backend, QueueSettings, TickStrategy};
use crate::{layers::OutboxLayers, worker::Dispatch, Error};

/// Where the tests and examples look for MariaDB/MySQL unless told otherwise.
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// Table recording which of the outbox's migrations ran.
const OUTBOX_MIGRATIONS_TABLE: &str = "_outbox_migrations";

/// Opens a pool on `url` (e.g. `mysql://user@host/db`) with a statement cache large
/// enough for every statement the outbox uses.
pub async fn connect(url: &str) -> Result<MySqlPool, Error> {
    let options: MySqlConnectOptions = url.parse()?;
    Ok(MySqlPoolOptions::new()
        .max_connections(20)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.statement_cache_capacity(256))
        .await?)
}

/// The MySQL/MariaDB backend over an application's pool.
#[derive(Debug, Clone)]
pub struct MySqlBackend {
    pool: MySqlPool,
}

impl MySqlBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: MySqlPool) -> Self {
        Self { pool }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    /// Our storage for one queue, polled on the outbox's tick.
    fn storage(&self, settings: &QueueSettings) -> PollWith<MySqlStorage, TickStrategy> {
        MySqlStorage::new(MySqlPersistence {
            pool: self.pool.clone(),
            queue: settings.queue.to_owned(),
            batch_size: settings.batch_size,
            heartbeat_interval: settings.heartbeat_interval,
            missed_heartbeats: settings.missed_heartbeats,
        })
        .poll_with_strategy(TickStrategy::every(settings.poll_interval))
    }
}

sql_stores!(
    MySqlBackend,
    "src/backend/mysql/queries",
    take = |now, bucket| [now, now, bucket, now]
);

impl Backend for MySqlBackend {
    fn name(&self) -> &'static str {
        "mysql"
    }

    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut ours: Migrator = sqlx::migrate!("./migrations/mysql");
            ours.dangerous_set_table_name(OUTBOX_MIGRATIONS_TABLE);
            ours.run(&self.pool).await?;
            Ok(())
        })
    }

    fn run_worker(
        &self,
        worker: WorkerContext,
        settings: QueueSettings,
        layers: OutboxLayers,
        service: Dispatch,
    ) -> BoxFuture<'static, Result<(), WorkerError>> {
        let storage = self.storage(&settings);
        let worker = WorkerBuilder::new(&worker)
            .backend(storage)
            .layer(layers)
            .build(service);
        Box::pin(worker.run())
    }

    fn run_bare_worker(
        &self,
        worker: WorkerContext,
        settings: QueueSettings,
    ) -> BoxFuture<'static, Result<(), WorkerError>> {
        let storage = self.storage(&settings);
        let worker = WorkerBuilder::new(&worker)
            .backend(storage)
            .layer(tower::limit::ConcurrencyLimitLayer::new(
                settings.concurrency,
            ))
            .build(super::bare_service());
        Box::pin(worker.run())
    }
}
