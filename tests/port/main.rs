//! The storage-port conformance suite (`outbox::porttest`, feature `porttest`) on every
//! backend enabled: each case drives the port's verbs directly on a fresh database of its
//! own — a temporary SQLite file, or a new database on the PostgreSQL / MariaDB server
//! (`OUTBOX_TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/test`;
//! `OUTBOX_TEST_MYSQL_URL`, default `mysql://root@127.0.0.1:3306/test`), created and
//! dropped the way the conformance suite does it. An unreachable server fails loudly.

#[path = "../conformance/harness.rs"]
mod harness;

use futures::future::BoxFuture;
use harness::Harness;
use outbox::{porttest::PortHarness, store::Backend, Enqueued, Error, InsertMessages, NewMessage};

/// A database of the conformance harness, migrated by the backend itself, with nothing
/// else in it that the port reads.
struct Port<H: Harness> {
    db: H,
    backend: H::Backend,
}

/// The worker registry, read with each database's SQL.
trait Registry: Harness {
    /// Names in `outbox_workers`, sorted.
    fn workers(&self) -> BoxFuture<'_, Result<Vec<String>, Error>>;
}

impl<H: Registry> PortHarness for Port<H> {
    type Backend = H::Backend;

    fn backend(&self) -> &H::Backend {
        &self.backend
    }

    fn insert<'a>(&'a self, rows: &'a [NewMessage]) -> BoxFuture<'a, Result<Vec<Enqueued>, Error>> {
        Box::pin(async move {
            let mut conn = self.db.pool().acquire().await?;
            Ok(conn.insert_messages(rows).await?)
        })
    }

    fn workers(&self) -> BoxFuture<'_, Result<Vec<String>, Error>> {
        self.db.workers()
    }
}

/// A new, empty database with the outbox's tables.
async fn fresh<H: Registry>() -> Port<H> {
    let db = H::unmigrated().await;
    let backend = db.backend();
    backend.migrate().await.expect("migrate");
    Port { db, backend }
}

/// The registry reader and the suite for one backend.
macro_rules! port {
    ($backend:ident, $harness:ident, $feature:literal) => {
        #[cfg(feature = $feature)]
        mod $backend {
            use super::*;
            use harness::$harness;

            impl Registry for $harness {
                fn workers(&self) -> BoxFuture<'_, Result<Vec<String>, Error>> {
                    Box::pin(async move {
                        Ok(
                            sqlx::query_scalar("SELECT name FROM outbox_workers ORDER BY name")
                                .fetch_all(self.pool())
                                .await?,
                        )
                    })
                }
            }

            /// A fresh database for one case.
            async fn fresh() -> Port<$harness> {
                super::fresh().await
            }

            outbox::port_suite!(fresh);
        }
    };
}

port!(sqlite, SqliteHarness, "sqlite");
port!(postgres, PostgresHarness, "postgres");
port!(mysql, MySqlHarness, "mysql");
