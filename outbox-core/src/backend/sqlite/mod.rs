//! SQLite, the embedded default: one file, no server.
//!
//! Workers use apalis-sqlite 1.0 for fetching, locking and heartbeats; the enqueue is our
//! own statement so it can run in the caller's transaction and report duplicates.
//!
//! Failure modes: SQLite allows one writer at a time. Every connection made by
//! [`connect`] waits up to 30 s for the write lock (`busy_timeout`); a worker whose query
//! still fails (the file is locked longer, the disk is full) stops and is restarted by the
//! outbox with a growing delay, and its claimed messages come back after the lease.

mod enqueue;

use std::{str::FromStr, time::Duration};

use super::{sql_stores::sql_stores, Backend, QueueSettings, RawBytes, TickStrategy};
use crate::{layers::OutboxLayers, worker::Dispatch, Error};
use apalis_core::{
    backend::ext::{poll_strategy::PollWith, BackendExt},
    error::WorkerError,
    worker::builder::WorkerBuilder,
    worker::context::WorkerContext,
};
use apalis_sqlite::{Config, SqliteStorage};
use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
    SqlitePool,
};

/// Name of the table that records which apalis migrations ran (kept apart from
/// `_sqlx_migrations`, so the application's own sqlx migrations are not disturbed).
const APALIS_MIGRATIONS_TABLE: &str = "_outbox_apalis_migrations";
/// Name of the table that records which of the outbox's own migrations ran.
const OUTBOX_MIGRATIONS_TABLE: &str = "_outbox_migrations";

/// Connection options the outbox expects of a SQLite file: created if missing, WAL
/// journal, `synchronous = NORMAL` (durable across application crashes; a power loss may
/// lose the last commits), a 30 s busy timeout (several worker processes on one file
/// queue for the write lock; measured waits reach seconds) and foreign keys on.
pub fn connect_options(url: &str) -> Result<SqliteConnectOptions, Error> {
    Ok(SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true))
}

/// Opens a pool on `url` (e.g. `sqlite://app.db`) with [`connect_options`]. Use the same
/// pool for the application's transactions and for the outbox.
pub async fn connect(url: &str) -> Result<SqlitePool, Error> {
    Ok(SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(connect_options(url)?)
        .await?)
}

/// The SQLite backend over an application's pool.
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    pool: SqlitePool,
}

impl SqliteBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: SqlitePool) -> Self {
        Self { pool }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// apalis-sqlite's storage for one queue, polled on the outbox's tick.
    fn storage(
        &self,
        settings: &QueueSettings,
    ) -> RawBytes<PollWith<SqliteStorage<()>, TickStrategy>> {
        let config = Config::default()
            .queue(settings.queue)
            .batch_size(settings.batch_size)
            .heartbeat_interval(settings.heartbeat_interval)
            .missed_heartbeats(settings.missed_heartbeats);
        let storage = SqliteStorage::<()>::new(&self.pool).with_config(config);
        RawBytes(storage.poll_with_strategy(TickStrategy::every(settings.poll_interval)))
    }
}

sql_stores!(
    SqliteBackend,
    "src/backend/sqlite/queries",
    take = |now, bucket| [now, bucket]
);

impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut apalis: Migrator = SqliteStorage::migrations();
            apalis.dangerous_set_table_name(APALIS_MIGRATIONS_TABLE);
            apalis.run(&self.pool).await?;
            let mut ours: Migrator = sqlx::migrate!("./migrations/sqlite");
            ours.dangerous_set_table_name(OUTBOX_MIGRATIONS_TABLE);
            ours.run(&self.pool).await?;
            sqlx::raw_sql(include_str!("queries/planner_stats.sql"))
                .execute(&self.pool)
                .await?;
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
        let backend = self.storage(&settings);
        let worker = WorkerBuilder::new(&worker)
            .backend(backend)
            .layer(layers)
            .build(service);
        Box::pin(worker.run())
    }

    fn run_bare_worker(
        &self,
        worker: WorkerContext,
        settings: QueueSettings,
    ) -> BoxFuture<'static, Result<(), WorkerError>> {
        let backend = self.storage(&settings);
        let worker = WorkerBuilder::new(&worker)
            .backend(backend)
            .layer(tower::limit::ConcurrencyLimitLayer::new(
                settings.concurrency,
            ))
            .build(super::bare_service());
        Box::pin(worker.run())
    }
}
