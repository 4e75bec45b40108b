//! SQLite, the embedded default: one file, no server.
//!
//! The outbox's own engine: a claim is one `UPDATE … RETURNING` over the partial claim
//! index (SQLite has one writer, so claims never collide); settlements are written in
//! batches in one `BEGIN IMMEDIATE` transaction; a commit of an enqueue on a connection of
//! this process wakes the idle workers of its types at once, other processes' enqueues are
//! found at the poll tick.
//!
//! Failure modes: SQLite allows one writer at a time. Every connection made by
//! [`connect`] waits up to 30 s for the write lock (`busy_timeout`); a claim that still
//! fails is retried after a pause, a settlement that cannot be written is kept and
//! retried, and a process that dies loses its leases, so its messages come back.

mod enqueue;

use std::{
    str::FromStr,
    sync::{Arc, OnceLock},
    time::Duration,
};

use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous},
    Sqlite, SqlitePool,
};

use super::{claimed_from_row, sql_store::sql_store};
use crate::{
    clock::unix_millis,
    store::{Backend, ClaimRequest, Claimed, Wakeups},
    Error,
};

/// Name of the table that records which of the outbox's own migrations ran (kept apart
/// from `_sqlx_migrations`, so the application's own sqlx migrations are not disturbed).
const OUTBOX_MIGRATIONS_TABLE: &str = "_outbox_migrations";

/// The idle workers of every SQLite database in this process: a commit of an enqueue wakes
/// the workers of its types (a spurious wake-up for another file costs one claim query).
fn wakeups() -> Arc<Wakeups> {
    static WAKEUPS: OnceLock<Arc<Wakeups>> = OnceLock::new();
    Arc::clone(WAKEUPS.get_or_init(|| Arc::new(Wakeups::new())))
}

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

    /// One claim statement (see `claim.sql`).
    async fn claim_rows(&self, r: &ClaimRequest<'_>) -> Result<Vec<Claimed>, Error> {
        type Row = (String, Vec<u8>, i64, i64, i64, i64, i64);
        let rows: Vec<Row> = sqlx::query_as(include_str!("queries/claim.sql"))
            .bind(r.type_tag)
            .bind(unix_millis(r.now))
            .bind(i64::from(r.limit))
            .bind(r.owner)
            .bind(unix_millis(r.lease_until))
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, payload, attempt, max, priority, due, claims)| {
                claimed_from_row(id, payload, attempt, max, priority, due, claims)
            })
            .collect())
    }

    /// A write transaction that takes the write lock at once (a deferred one that reads
    /// first could fail with SQLITE_BUSY instead of waiting).
    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, Sqlite>, sqlx::Error> {
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }

    /// SQLite waits for its lock itself (`busy_timeout`): nothing is worth running again.
    fn is_transient(_: &sqlx::Error) -> bool {
        false
    }
}

sql_store!(
    SqliteBackend,
    "src/backend/sqlite/queries",
    bury = ["settle_bury_copy.sql", "settle_delete.sql"],
    bury_unregistered = ["unregistered_bury_copy.sql", "unregistered_bury_delete.sql"],
    requeue = ["requeue_copy.sql", "requeue_delete.sql"],
    take = |now, bucket| [now, bucket]
);

impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut ours: Migrator = sqlx::migrate!("./migrations/sqlite");
            ours.dangerous_set_table_name(OUTBOX_MIGRATIONS_TABLE);
            ours.run(&self.pool).await?;
            Ok(())
        })
    }

    fn wakeups(&self) -> Arc<Wakeups> {
        wakeups()
    }

    /// No growth: larger SQLite transactions drained a no-op backlog about 30 % faster but
    /// raised a worker's peak memory from about 27 to 46 MB (the allocator keeps what each
    /// connection thread used).
    fn max_default_batch(&self) -> usize {
        100
    }
}
