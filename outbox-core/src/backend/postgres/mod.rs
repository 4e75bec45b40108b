//! PostgreSQL (feature `postgres`).
//!
//! Workers use apalis-postgres 1.0 for fetching (`FOR UPDATE SKIP LOCKED`), locking and
//! heartbeats. Fresh messages wake idle workers through apalis' LISTEN/NOTIFY (the insert
//! trigger notifies at commit); delayed and retried messages, which NOTIFY does not cover,
//! are found by the poll tick. The enqueue is our own `INSERT … ON CONFLICT DO NOTHING`
//! in the caller's transaction: apalis' own insert raises 23505 on a duplicate key and
//! aborts the caller's transaction (notes/apalis-1.0.md §0.8).
//!
//! Failure modes: a worker whose connection breaks stops and is restarted by the outbox;
//! its claimed messages return once its heartbeat is stale. Each worker holds one extra
//! connection for LISTEN: size the pool for `types × 2 + application`.

mod enqueue;

use std::time::Duration;

use apalis_core::{
    backend::ext::{
        poll_strategy::{PollWith, StreamStrategy},
        BackendExt,
    },
    error::WorkerError,
    worker::builder::WorkerBuilder,
    worker::context::WorkerContext,
};
use apalis_postgres::{Config, PostgresStorage, Pubsub};
use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    postgres::{PgConnectOptions, PgPoolOptions},
    PgPool,
};

use super::{sql_stores::sql_stores, Backend, QueueSettings, RawBytes, TickStrategy};
use crate::{layers::OutboxLayers, worker::Dispatch, Error};

/// Where the tests and examples look for PostgreSQL unless told otherwise.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Tables recording which migrations ran (apart from `_sqlx_migrations`, so the
/// application's own sqlx migrations are not disturbed).
const APALIS_MIGRATIONS_TABLE: &str = "_outbox_apalis_migrations";
const OUTBOX_MIGRATIONS_TABLE: &str = "_outbox_migrations";

/// Opens a pool on `url` (e.g. `postgres://user@host/db`). Use the same database for the
/// application's transactions and for the outbox.
pub async fn connect(url: &str) -> Result<PgPool, Error> {
    let options: PgConnectOptions = url.parse()?;
    Ok(PgPoolOptions::new()
        .max_connections(20)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await?)
}

/// The PostgreSQL backend over an application's pool.
#[derive(Debug, Clone)]
pub struct PostgresBackend {
    pool: PgPool,
}

impl PostgresBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// apalis-postgres' storage for one queue: LISTEN/NOTIFY plus the outbox's tick.
    fn storage(
        &self,
        settings: &QueueSettings,
    ) -> PollWith<PollWith<PostgresStorage<()>, StreamStrategy<Pubsub>>, TickStrategy> {
        let config = Config::default()
            .queue(settings.queue)
            .batch_size(settings.batch_size)
            .heartbeat_interval(settings.heartbeat_interval)
            .missed_heartbeats(settings.missed_heartbeats);
        PostgresStorage::<()>::new(&self.pool)
            .with_config(config)
            .with_pubsub()
            .poll_with_strategy(TickStrategy::every(settings.poll_interval))
    }
}

sql_stores!(
    PostgresBackend,
    "src/backend/postgres/queries",
    take = |now, bucket| [now, bucket]
);

impl Backend for PostgresBackend {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut apalis: Migrator = PostgresStorage::<()>::migrations();
            apalis.dangerous_set_table_name(APALIS_MIGRATIONS_TABLE);
            apalis.run(&self.pool).await?;
            let mut ours: Migrator = sqlx::migrate!("./migrations/postgres");
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
            .backend(RawBytes(storage))
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
            .backend(RawBytes(storage))
            .layer(tower::limit::ConcurrencyLimitLayer::new(
                settings.concurrency,
            ))
            .build(super::bare_service());
        Box::pin(worker.run())
    }
}
