//! Enqueue through the connection layer an application already has — sqlx 0.8, SeaORM 2,
//! diesel-async and sync diesel — on every database each one reaches: messages are written
//! with the application's rows in its transaction (a rollback leaves neither), duplicates
//! are reported with the holder's id, the test helpers read through the layer, the
//! outbox's own workers deliver what was committed, a missing migration and a lost
//! transaction are told apart as on the sqlx 0.9 path.

use std::future::Future;

use outbox::{enqueue_many, prelude::*, testing, EnqueueError, Enqueued, InsertMessages};

use super::{cases::Mail, harness::Harness};

/// One connection layer on one database, as the cases drive it.
pub trait Layer: Sized {
    /// What the layer calls an open transaction.
    type Tx<'a>
    where
        Self: 'a;
    /// What messages are enqueued through.
    type Conn: InsertMessages + ?Sized;

    /// Connects to the database at `url` (the harness's sqlx 0.9 URL).
    fn connect(url: &str) -> impl Future<Output = Self>;
    /// Begins a transaction.
    fn begin(&mut self) -> impl Future<Output = Self::Tx<'_>>;
    /// The connection inside `tx`.
    fn conn<'t>(tx: &'t mut Self::Tx<'_>) -> &'t mut Self::Conn;
    /// Runs one statement in `tx`.
    fn execute(tx: &mut Self::Tx<'_>, sql: &str) -> impl Future<Output = Result<(), String>>;
    /// Commits (`true`) or rolls back `tx`.
    fn finish(tx: Self::Tx<'_>, commit: bool) -> impl Future<Output = Result<(), String>>;
}

fn ns(queued: &[testing::Queued<Mail>]) -> Vec<i64> {
    queued.iter().map(|m| m.message.n).collect()
}

async fn insert_user<L: Layer>(tx: &mut L::Tx<'_>, id: i64) {
    let sql = format!("INSERT INTO users (id, email) VALUES ({id}, 'user{id}@example.com')");
    L::execute(tx, &sql).await.unwrap();
}

/// Commit, duplicates, a batch, the helpers through the layer, a rollback, delivery.
pub async fn enqueue_commit_rollback_and_deliver<H: Harness, L: Layer>() {
    let h = H::new().await;
    let mut layer = L::connect(&h.url()).await;

    let mut tx = layer.begin().await;
    insert_user::<L>(&mut tx, 1).await;
    let first = Mail { n: 1 }.enqueue(L::conn(&mut tx)).await.unwrap();
    assert!(!first.is_duplicate());
    let again = Mail { n: 1 }.enqueue(L::conn(&mut tx)).await.unwrap();
    assert_eq!(
        again,
        Enqueued::Duplicate {
            existing: first.id().clone()
        }
    );
    let batch = [Mail { n: 2 }, Mail { n: 1 }, Mail { n: 3 }];
    let done = enqueue_many(L::conn(&mut tx), &batch).await.unwrap();
    assert!(
        !done[0].is_duplicate() && !done[2].is_duplicate(),
        "{done:?}"
    );
    assert_eq!(done[1].id(), first.id(), "{done:?}");
    // The helpers read the uncommitted messages through the layer's transaction.
    let seen = testing::queued::<Mail, _>(L::conn(&mut tx)).await;
    assert_eq!(ns(&seen), [1, 2, 3], "{}", H::NAME);
    assert_eq!(seen[0].max_attempts, 5);
    L::finish(tx, true).await.unwrap();
    assert_eq!(h.count_messages("conf.mail").await, 3, "{}", H::NAME);
    assert_eq!(h.count_users().await, 1);

    let mut tx = layer.begin().await;
    insert_user::<L>(&mut tx, 2).await;
    let _ = Mail { n: 10 }.enqueue(L::conn(&mut tx)).await.unwrap();
    L::finish(tx, false).await.unwrap();
    assert_eq!(
        h.count_messages("conf.mail").await,
        3,
        "{}: a rolled-back message was written",
        H::NAME
    );
    assert_eq!(h.count_users().await, 1);

    // The outbox's own pool and workers deliver what the layer committed.
    let report = Outbox::new(h.backend())
        .register::<Mail, _>(|_: Mail, _: MessageContext| async { Ok::<(), HandlerError>(()) })
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.delivered, 3, "{}", H::NAME);
    let mut conn = h.pool().acquire().await.unwrap();
    testing::refute_enqueued::<Mail, _>(&mut *conn, |_| true).await;
}

/// An enqueue through the layer into a database without the outbox's tables says to
/// migrate.
pub async fn an_unmigrated_database_says_migrate<H: Harness, L: Layer>() {
    let h = H::unmigrated().await;
    let mut layer = L::connect(&h.url()).await;
    let mut tx = layer.begin().await;
    let err = Mail { n: 1 }.enqueue(L::conn(&mut tx)).await.unwrap_err();
    assert!(
        matches!(err, EnqueueError::NotMigrated { .. }),
        "{}: {err:?}",
        H::NAME
    );
    assert!(err.to_string().contains("migrate()"), "{err}");
    let _ = L::finish(tx, false).await;
}

/// An enqueue through the layer that waits out the lock timeout on a key another
/// transaction holds loses the caller's transaction: nothing of it commits afterwards.
pub async fn a_timed_out_enqueue_commits_nothing<H: Harness, L: Layer>() {
    let h = H::new().await;
    let mut holder = h.pool().begin().await.unwrap();
    let _ = Mail { n: 5 }.enqueue(&mut *holder).await.unwrap();
    let mut layer = L::connect(&h.url()).await;
    let mut tx = layer.begin().await;
    let short = match H::NAME {
        "postgres" => "SET lock_timeout = '1s'",
        "mysql" => "SET SESSION innodb_lock_wait_timeout = 1",
        _ => "PRAGMA busy_timeout = 1000",
    };
    L::execute(&mut tx, short).await.unwrap();
    // SQLite has one writer: the caller cannot have written while another holds the key.
    if H::NAME != "sqlite" {
        insert_user::<L>(&mut tx, 1).await;
    }
    let err = Mail { n: 5 }.enqueue(L::conn(&mut tx)).await.unwrap_err();
    assert!(
        matches!(err, EnqueueError::LockTimeout { .. }),
        "{}: {err:?}",
        H::NAME
    );
    holder.commit().await.unwrap();
    let sql = "INSERT INTO users (id, email) VALUES (2, 'user2@example.com')";
    let after = L::execute(&mut tx, sql).await;
    let commit = L::finish(tx, true).await;
    assert!(
        after.is_err() || commit.is_err(),
        "{}: the statement after the failed enqueue and the commit both succeeded",
        H::NAME
    );
    assert_eq!(
        h.user_ids().await,
        Vec::<i64>::new(),
        "{}: rows of the lost transaction were committed (after: {after:?}, commit: {commit:?})",
        H::NAME
    );
    assert_eq!(h.count_messages("conf.mail").await, 1);
}

/// The SQLite file path of a `sqlite://` URL (diesel opens paths).
#[allow(dead_code)]
fn sqlite_path(url: &str) -> &str {
    url.strip_prefix("sqlite://").unwrap_or(url)
}

#[cfg(feature = "sqlx08")]
pub mod sqlx08_layer {
    //! sqlx 0.8: a `Transaction` from the application's 0.8 pool.
    use sqlx08::{Database, Executor};

    use super::Layer;

    /// A sqlx 0.8 pool of `DB`.
    pub struct Sqlx08<DB: Database>(sqlx08::Pool<DB>);

    macro_rules! sqlx08_layer {
        ($db:ty) => {
            impl Layer for Sqlx08<$db> {
                type Tx<'a> = sqlx08::Transaction<'static, $db>;
                type Conn = sqlx08::Transaction<'static, $db>;

                async fn connect(url: &str) -> Self {
                    Sqlx08(sqlx08::Pool::<$db>::connect(url).await.unwrap())
                }

                async fn begin(&mut self) -> Self::Tx<'_> {
                    self.0.begin().await.unwrap()
                }

                fn conn<'t>(tx: &'t mut Self::Tx<'_>) -> &'t mut Self::Conn {
                    tx
                }

                async fn execute(tx: &mut Self::Tx<'_>, sql: &str) -> Result<(), String> {
                    tx.execute(sql).await.map(drop).map_err(|e| e.to_string())
                }

                async fn finish(tx: Self::Tx<'_>, commit: bool) -> Result<(), String> {
                    if commit {
                        tx.commit().await
                    } else {
                        tx.rollback().await
                    }
                    .map_err(|e| e.to_string())
                }
            }
        };
    }

    #[cfg(feature = "postgres")]
    sqlx08_layer!(sqlx08::Postgres);
    #[cfg(feature = "mysql")]
    sqlx08_layer!(sqlx08::MySql);
}

#[cfg(feature = "sea-orm")]
pub mod sea_orm_layer {
    //! SeaORM 2: a `DatabaseTransaction` from `db.begin()`.
    use sea_orm::{ConnectionTrait, DatabaseConnection, DatabaseTransaction, TransactionTrait};

    use super::Layer;

    /// A SeaORM database connection (a pool).
    pub struct SeaOrm(DatabaseConnection);

    impl Layer for SeaOrm {
        type Tx<'a> = DatabaseTransaction;
        type Conn = DatabaseTransaction;

        async fn connect(url: &str) -> Self {
            SeaOrm(sea_orm::Database::connect(url).await.unwrap())
        }

        async fn begin(&mut self) -> Self::Tx<'_> {
            self.0.begin().await.unwrap()
        }

        fn conn<'t>(tx: &'t mut Self::Tx<'_>) -> &'t mut Self::Conn {
            tx
        }

        async fn execute(tx: &mut Self::Tx<'_>, sql: &str) -> Result<(), String> {
            tx.execute_unprepared(sql)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        }

        async fn finish(tx: Self::Tx<'_>, commit: bool) -> Result<(), String> {
            if commit {
                tx.commit().await
            } else {
                tx.rollback().await
            }
            .map_err(|e| e.to_string())
        }
    }
}

#[cfg(feature = "diesel-async")]
pub mod diesel_async_layer {
    //! diesel-async: a connection inside a transaction its transaction manager began.
    use diesel_async::{AsyncConnection, RunQueryDsl, TransactionManager};

    use super::Layer;

    /// One diesel-async connection.
    pub struct DieselAsync<C>(C);

    macro_rules! diesel_async_layer {
        ($conn:ty, $path:expr) => {
            impl Layer for DieselAsync<$conn> {
                type Tx<'a> = &'a mut $conn;
                type Conn = $conn;

                async fn connect(url: &str) -> Self {
                    let path: fn(&str) -> &str = $path;
                    let mut conn = <$conn>::establish(path(url)).await.unwrap();
                    if url.starts_with("sqlite") {
                        // The lost-transaction mark needs foreign keys (diesel leaves them off).
                        diesel::sql_query("PRAGMA foreign_keys = ON")
                            .execute(&mut conn)
                            .await
                            .unwrap();
                    }
                    DieselAsync(conn)
                }

                async fn begin(&mut self) -> Self::Tx<'_> {
                    <$conn as AsyncConnection>::TransactionManager::begin_transaction(&mut self.0)
                        .await
                        .unwrap();
                    &mut self.0
                }

                fn conn<'t>(tx: &'t mut Self::Tx<'_>) -> &'t mut Self::Conn {
                    tx
                }

                async fn execute(tx: &mut Self::Tx<'_>, sql: &str) -> Result<(), String> {
                    diesel::sql_query(sql)
                        .execute(&mut **tx)
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                }

                async fn finish(tx: Self::Tx<'_>, commit: bool) -> Result<(), String> {
                    type M = <$conn as AsyncConnection>::TransactionManager;
                    if commit {
                        M::commit_transaction(tx).await
                    } else {
                        M::rollback_transaction(tx).await
                    }
                    .map_err(|e| e.to_string())
                }
            }
        };
    }

    #[cfg(feature = "postgres")]
    diesel_async_layer!(diesel_async::AsyncPgConnection, |url| url);
    #[cfg(feature = "mysql")]
    diesel_async_layer!(diesel_async::AsyncMysqlConnection, |url| url);
    #[cfg(feature = "sqlite")]
    diesel_async_layer!(
        diesel_async::sync_connection_wrapper::SyncConnectionWrapper<diesel::SqliteConnection>,
        super::sqlite_path
    );
}

#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
pub mod diesel_layer {
    //! Sync diesel: a connection inside a transaction its transaction manager began (the
    //! `conn.transaction(|conn| …)` form with `enqueue_blocking` has a test of its own).
    use diesel::{connection::TransactionManager, Connection, RunQueryDsl};

    use super::Layer;

    /// One sync diesel connection.
    pub struct Diesel<C>(C);

    macro_rules! diesel_layer {
        ($conn:ty, $path:expr) => {
            impl Layer for Diesel<$conn> {
                type Tx<'a> = &'a mut $conn;
                type Conn = $conn;

                async fn connect(url: &str) -> Self {
                    let path: fn(&str) -> &str = $path;
                    let mut conn = <$conn>::establish(path(url)).unwrap();
                    if url.starts_with("sqlite") {
                        // The lost-transaction mark needs foreign keys (diesel leaves them off).
                        diesel::sql_query("PRAGMA foreign_keys = ON")
                            .execute(&mut conn)
                            .unwrap();
                    }
                    Diesel(conn)
                }

                async fn begin(&mut self) -> Self::Tx<'_> {
                    <$conn as Connection>::TransactionManager::begin_transaction(&mut self.0)
                        .unwrap();
                    &mut self.0
                }

                fn conn<'t>(tx: &'t mut Self::Tx<'_>) -> &'t mut Self::Conn {
                    tx
                }

                async fn execute(tx: &mut Self::Tx<'_>, sql: &str) -> Result<(), String> {
                    diesel::sql_query(sql)
                        .execute(&mut **tx)
                        .map(drop)
                        .map_err(|e| e.to_string())
                }

                async fn finish(tx: Self::Tx<'_>, commit: bool) -> Result<(), String> {
                    type M = <$conn as Connection>::TransactionManager;
                    if commit {
                        M::commit_transaction(tx)
                    } else {
                        M::rollback_transaction(tx)
                    }
                    .map_err(|e| e.to_string())
                }
            }
        };
    }

    #[cfg(feature = "diesel-postgres")]
    diesel_layer!(diesel::PgConnection, |url| url);
    #[cfg(feature = "diesel-mysql")]
    diesel_layer!(diesel::MysqlConnection, |url| url);
    #[cfg(feature = "diesel-sqlite")]
    diesel_layer!(diesel::SqliteConnection, super::sqlite_path);
}

/// Sync diesel's own form: `conn.transaction(|conn| …)` with `enqueue_blocking`; an error
/// returned from the closure rolls the user and the message back together.
#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
pub async fn diesel_transaction_closure_enqueues_blocking<H, C>(path: fn(&str) -> &str)
where
    H: Harness,
    C: diesel::Connection + outbox::BlockingConnection,
    diesel::query_builder::SqlQuery: diesel::query_dsl::methods::ExecuteDsl<C>,
{
    use diesel::RunQueryDsl;
    use outbox::EnqueueBlocking;

    let h = H::new().await;
    let url = h.url();
    let mut conn = C::establish(path(&url)).unwrap();
    let id = conn
        .transaction(|conn| {
            diesel::sql_query("INSERT INTO users (id, email) VALUES (1, 'ada@example.com')")
                .execute(conn)?;
            let done = Mail { n: 1 }.enqueue_blocking(conn)?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(done.id().clone())
        })
        .unwrap();
    let refused = conn.transaction(|conn| {
        diesel::sql_query("INSERT INTO users (id, email) VALUES (2, 'bob@example.com')")
            .execute(conn)?;
        let _ = Mail { n: 2 }.enqueue_blocking(conn)?;
        Err::<(), Box<dyn std::error::Error + Send + Sync>>("the request failed later".into())
    });
    assert!(refused.is_err());
    assert_eq!(h.user_ids().await, vec![1], "{}", H::NAME);
    let mut pooled = h.pool().acquire().await.unwrap();
    let queued = testing::queued::<Mail, _>(&mut *pooled).await;
    assert_eq!(ns(&queued), [1], "{}", H::NAME);
    assert_eq!(&queued[0].id, &id);
}
