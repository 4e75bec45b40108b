//! PostgreSQL (feature `postgres`).
//!
//! The outbox's own engine: a claim is one `UPDATE … FROM (SELECT … FOR UPDATE SKIP
//! LOCKED) RETURNING`, so concurrent workers in any number of processes never take the same
//! message; settlements are written in batches in one transaction. Enqueues wake idle
//! workers through LISTEN/NOTIFY (the insert statements notify at commit; one
//! listening connection per backend); delayed and retried messages are found at the poll
//! tick.
//!
//! Failure modes: a claim or a settlement that fails is retried after a pause (a
//! serialization failure or deadlock at once); a lost LISTEN connection is reopened and
//! the workers are woken in case they missed a notification; a process that dies loses
//! its leases, so its messages come back.

mod enqueue;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    postgres::{PgConnectOptions, PgListener, PgPoolOptions},
    PgPool, Postgres,
};

use super::{claimed_from_row, sql_store::sql_store};
use crate::{
    clock::unix_millis,
    store::{Backend, ClaimRequest, Claimed, Wakeups},
    Error,
};

/// Where the tests and examples look for PostgreSQL unless told otherwise.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Table recording which of the outbox's migrations ran (apart from `_sqlx_migrations`, so
/// the application's own sqlx migrations are not disturbed).
const OUTBOX_MIGRATIONS_TABLE: &str = "_outbox_migrations";

/// The channel the insert trigger notifies (payload: the type tag).
const CHANNEL: &str = "outbox_messages";

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
    wake: Arc<Wake>,
}

/// The idle workers of this backend, and whether its LISTEN task runs (it runs while any
/// worker waits, and holds one pooled connection meanwhile).
#[derive(Debug, Default)]
struct Wake {
    wakeups: Arc<Wakeups>,
    listening: AtomicBool,
}

impl PostgresBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            wake: Arc::default(),
        }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// One claim statement (see `claim.sql`).
    async fn claim_rows(&self, r: &ClaimRequest<'_>) -> Result<Vec<Claimed>, Error> {
        type Row = (String, Vec<u8>, i32, i32, i32, i64, i32);
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
                claimed_from_row(
                    id,
                    payload,
                    attempt.into(),
                    max.into(),
                    priority.into(),
                    due,
                    claims.into(),
                )
            })
            .collect())
    }

    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, Postgres>, sqlx::Error> {
        self.pool.begin().await
    }

    /// Serialization failure (40001) and deadlock (40P01): the transaction was rolled back
    /// and may simply run again.
    fn is_transient(e: &sqlx::Error) -> bool {
        matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001") | Some("40P01")))
    }

    /// Listens for the insert trigger's notifications and wakes the workers, reconnecting
    /// after a lost connection, until no worker waits any more.
    fn listen(&self) {
        let pool = self.pool.clone();
        let wake = Arc::clone(&self.wake);
        tokio::spawn(async move {
            let wakeups = Arc::clone(&wake.wakeups);
            let mut pause = Duration::from_millis(100);
            loop {
                let listener = async {
                    let mut l = PgListener::connect_with(&pool).await?;
                    l.listen(CHANNEL).await?;
                    Ok::<_, sqlx::Error>(l)
                };
                match listener.await {
                    Ok(mut l) => {
                        pause = Duration::from_millis(100);
                        // Anything committed while not listening is found by this claim.
                        wakeups.notify_all();
                        let lost = loop {
                            let received = tokio::select! {
                                r = l.recv() => r,
                                // Now and then, see whether anyone still listens.
                                _ = tokio::time::sleep(Duration::from_secs(1)) => {
                                    if wakeups.has_subscribers() {
                                        continue;
                                    }
                                    break false;
                                }
                            };
                            match received {
                                Ok(n) => wakeups.notify(n.payload()),
                                Err(e) => {
                                    tracing::warn!(error = %e, "lost the LISTEN connection; reopening it");
                                    break true;
                                }
                            }
                        };
                        if !lost {
                            wake.listening.store(false, Ordering::SeqCst);
                            // A worker that subscribed meanwhile needs this task after all.
                            if !wakeups.has_subscribers()
                                || wake.listening.swap(true, Ordering::SeqCst)
                            {
                                return;
                            }
                            continue;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, retry_in = ?pause, "cannot LISTEN for new messages; workers poll meanwhile");
                    }
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(10));
            }
        });
    }
}

sql_store!(
    PostgresBackend,
    "src/backend/postgres/queries",
    bury = ["settle_bury.sql"],
    bury_unregistered = ["unregistered_bury.sql"],
    requeue = ["requeue_copy.sql", "requeue_delete.sql"],
    take = |now, bucket| [now, bucket]
);

impl Backend for PostgresBackend {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut ours: Migrator = sqlx::migrate!("./migrations/postgres");
            ours.dangerous_set_table_name(OUTBOX_MIGRATIONS_TABLE);
            // A pre-release schema step that read apalis' tables was withdrawn.
            ours.set_ignore_missing(true);
            ours.run(&self.pool).await?;
            Ok(())
        })
    }

    fn wakeups(&self) -> Arc<Wakeups> {
        if !self.wake.listening.swap(true, Ordering::SeqCst) {
            self.listen();
        }
        Arc::clone(&self.wake.wakeups)
    }
}
