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

            /// Entries written before addresses were normalized (stored as the old rule
            /// wrote them: trimmed and lowercased) are moved to their normal form by
            /// `migrate`, keeping their reason, source and dates, so they stop mail to
            /// every spelling; when the normal form exists already it wins; an address
            /// that cannot be normalized stays, listed and removable by its text.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn entries_written_before_normalization_are_normalized_by_migrate() {
                use outbox::store::{Now, SuppressionProbe, SuppressionStore};
                use outbox::{SuppressionFilter, SuppressionReason, SuppressionScope};
                let port: Port<$harness> = fresh().await;
                let insert = "INSERT INTO outbox_suppressions \
                    (address, scope, reason, source, created_at, expires_at) VALUES ";
                for values in [
                    "('ann@ｅｘａｍｐｌｅ.com', '*', 'hard_bounce', 'ses 1', 1000, NULL)",
                    "('@bücher.de', 'list:weekly', 'unsubscribe', NULL, 2000, NULL)",
                    "('bob@exam\u{ad}ple.com', '*', 'complaint', 'old', 3000, NULL)",
                    "('bob@example.com', '*', 'manual', 'new', 4000, NULL)",
                    "('cy@exa\u{fffd}mple.com', '*', 'manual', NULL, 5000, NULL)",
                ] {
                    sqlx::query(sqlx::AssertSqlSafe(format!("{insert}{values}")))
                        .execute(port.db.pool())
                        .await
                        .unwrap();
                }
                let b = port.backend();
                b.migrate().await.expect("migrate again");
                let all = SuppressionFilter::default();
                let mut listed: Vec<(String, String, SuppressionReason, Option<String>)> = b
                    .list_suppressions(&all, 10, 0)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|e| (e.address, e.scope.key(), e.reason, e.source))
                    .collect();
                listed.sort_by(|x, y| x.0.cmp(&y.0));
                use SuppressionReason::*;
                let s = |t: &str| Some(t.to_owned());
                assert_eq!(
                    listed,
                    [
                        (
                            "@xn--bcher-kva.de".into(),
                            "list:weekly".into(),
                            Unsubscribe,
                            None
                        ),
                        ("ann@example.com".into(), "*".into(), HardBounce, s("ses 1")),
                        ("bob@example.com".into(), "*".into(), Manual, s("new")),
                        ("cy@exa\u{fffd}mple.com".into(), "*".into(), Manual, None),
                    ]
                );
                let probe = |a: &str, list: Option<&str>| {
                    SuppressionProbe::new(a, list, false, "t", None).expect("an address")
                };
                let probes = [
                    probe("ANN@ｅｘａｍｐｌｅ.com", None),
                    probe("ann@example.com", None),
                    probe("zoe@Bücher.de", Some("weekly")),
                    probe("zoe@xn--bcher-kva.de", Some("weekly")),
                ];
                let found = b.check_suppressions(&probes, Now::Database).await.unwrap();
                assert!(found.iter().all(Option::is_some), "{found:?}");
                assert!(b
                    .remove_suppression("cy@exa\u{fffd}mple.com", &SuppressionScope::All)
                    .await
                    .unwrap());
                b.migrate().await.expect("a third time changes nothing");
                assert_eq!(b.count_suppressions(&all).await.unwrap(), 3);
            }
        }
    };
}

port!(sqlite, SqliteHarness, "sqlite");
port!(postgres, PostgresHarness, "postgres");
port!(mysql, MySqlHarness, "mysql");

/// PostgreSQL: a heartbeat never waits for a row another transaction holds (this
/// process's own settlement of it, being written). Waiting could deadlock with a
/// settlement that locks the same rows in another order, and PostgreSQL finds a deadlock
/// only after `deadlock_timeout` (1 s by default), stalling the settlement with it. The row
/// it skipped keeps its old lease; the others are extended.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_heartbeat_skips_rows_another_transaction_holds() {
    use std::time::Duration;

    use outbox::{
        porttest::{at, claim, insert, message, LEASE},
        store::{Held, Now, QueueStore, WorkerBeat},
    };

    let port: Port<harness::PostgresHarness> = fresh().await;
    let t = "port_beat_locked";
    insert(&port, &[message(t, 1), message(t, 2)]).await;
    let claimed = claim(&port, t, "w1", 2, at(0)).await;
    assert_eq!(claimed.len(), 2);
    let (free, locked) = (&claimed[0], &claimed[1]);

    // Another transaction holds one of the two rows, as a settlement being written does.
    let mut other = port.db.pool().begin().await.unwrap();
    sqlx::query("SELECT id FROM outbox_messages WHERE id = $1 FOR UPDATE")
        .bind(locked.id.as_str())
        .fetch_one(&mut *other)
        .await
        .unwrap();

    let held: Vec<Held> = claimed
        .iter()
        .map(|c| Held {
            id: c.id.clone(),
            claim: c.claim,
        })
        .collect();
    let beats = [WorkerBeat {
        owner: "w1",
        type_tag: t,
        lease: LEASE,
        held: &held,
    }];
    let beat = port.backend().heartbeat(&beats, Now::At(at(10_000)));
    tokio::time::timeout(Duration::from_secs(5), beat)
        .await
        .expect("the heartbeat did not wait for the locked row")
        .unwrap();
    other.rollback().await.unwrap();

    // Just after the first lease ran out: the skipped row is rescued, the extended one
    // is not.
    let rescued = port
        .backend()
        .rescue_expired(&[t], Now::At(at(LEASE.as_millis() as u64 + 1)))
        .await
        .unwrap();
    assert_eq!(rescued, 1, "only the row the heartbeat skipped expired");
    let again = claim(&port, t, "w2", 2, at(LEASE.as_millis() as u64 + 2)).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, locked.id);
    assert_ne!(again[0].id, free.id);
}
