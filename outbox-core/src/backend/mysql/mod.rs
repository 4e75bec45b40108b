//! MySQL 8 and MariaDB ≥ 10.6 (feature `mysql`).
//!
//! The outbox's own engine on sqlx 0.9: a claim is one short READ COMMITTED transaction —
//! a `FOR UPDATE SKIP LOCKED` read of the due rows in claim order, then one `UPDATE` that
//! moves them to running with a lease (MySQL has no `UPDATE … RETURNING`); settlements are
//! written in batches in one transaction; new messages are found at the poll tick (MySQL
//! has no commit notification). Every statement is static with bound parameters (batches
//! travel as one JSON parameter through `JSON_TABLE`), so the statement cache never churns
//! — the path on which sqlx 0.9's missing TCP_NODELAY costs 40 ms.
//!
//! Failure modes: deadlocks and lock wait timeouts are run again from the start; other
//! errors are retried by the worker after a pause; a process that dies loses its leases,
//! so its messages come back.

mod enqueue;

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    mysql::{MySqlConnectOptions, MySqlPoolOptions},
    MySql, MySqlPool,
};

use super::{claimed_from_row, sql_store::sql_store};
use crate::{
    clock::unix_millis,
    store::{Backend, ClaimRequest, Claimed, Wakeups},
    Error,
};

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
    wakeups: Arc<Wakeups>,
}

impl MySqlBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: MySqlPool) -> Self {
        Self {
            pool,
            wakeups: Arc::default(),
        }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    /// One claim: a locking read of the due rows, then one update (see `claim_*.sql`).
    async fn claim_rows(&self, r: &ClaimRequest<'_>) -> Result<Vec<Claimed>, Error> {
        type Row = (String, Vec<u8>, i32, i32, i32, i64, i32);
        let mut attempt = 0;
        loop {
            let result: Result<Vec<Row>, sqlx::Error> = async {
                let mut tx = self.write_tx().await?;
                let rows: Vec<Row> = sqlx::query_as(include_str!("queries/claim_select.sql"))
                    .bind(r.type_tag)
                    .bind(unix_millis(r.now))
                    .bind(r.type_tag)
                    .bind(i64::from(r.limit))
                    .fetch_all(&mut *tx)
                    .await?;
                if !rows.is_empty() {
                    let ids: Vec<&str> = rows.iter().map(|row| row.0.as_str()).collect();
                    let ids =
                        serde_json::to_string(&ids).map_err(|e| sqlx::Error::Encode(e.into()))?;
                    sqlx::query(include_str!("queries/claim_mark.sql"))
                        .bind(r.owner)
                        .bind(unix_millis(r.lease_until))
                        .bind(ids)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(rows)
            }
            .await;
            match result {
                Err(e) if Self::is_transient(&e) && attempt < 8 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(5 * attempt)).await;
                }
                Err(e) => return Err(e.into()),
                Ok(rows) => {
                    // The rows were read before the update counted the attempt and claim.
                    return Ok(rows
                        .into_iter()
                        .map(|(id, payload, attempts, max, priority, due, claims)| {
                            let (attempt, claim) = (i64::from(attempts) + 1, i64::from(claims) + 1);
                            claimed_from_row(
                                id,
                                payload,
                                attempt,
                                max.into(),
                                priority.into(),
                                due,
                                claim,
                            )
                        })
                        .collect());
                }
            }
        }
    }

    /// A READ COMMITTED transaction (no gap locks, whatever the server's default; the
    /// setting covers this transaction only, so the application's connections are
    /// unaffected).
    async fn write_tx(&self) -> Result<sqlx::Transaction<'static, MySql>, sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        sqlx::raw_sql("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            .execute(&mut *conn)
            .await?;
        sqlx::Transaction::begin(conn, None).await
    }

    /// Deadlock (1213) and lock wait timeout (1205): the transaction was rolled back and
    /// may simply be run again.
    fn is_transient(e: &sqlx::Error) -> bool {
        matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001") | Some("HY000"))
            && (d.message().contains("Deadlock") || d.message().contains("Lock wait timeout")))
    }
}

sql_store!(
    MySqlBackend,
    "src/backend/mysql/queries",
    bury = ["settle_bury_copy.sql", "settle_delete.sql"],
    bury_unregistered = ["unregistered_bury_copy.sql", "unregistered_bury_delete.sql"],
    requeue = ["requeue_copy.sql", "requeue_delete.sql"],
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

    fn wakeups(&self) -> Arc<Wakeups> {
        Arc::clone(&self.wakeups)
    }
}
