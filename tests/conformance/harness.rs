//! One harness per backend: a fresh, isolated database per test (a temp SQLite file, or a
//! new database on the PostgreSQL / MariaDB server), the application's `users` table, and
//! the few probes the generic cases need. A server that cannot be reached fails the test
//! with the URL and how to point the suite elsewhere; nothing is skipped.
#![allow(dead_code)]

use futures::future::BoxFuture;
use outbox::backend::Backend;

/// A fresh database for one test, on one backend.
#[allow(async_fn_in_trait)]
pub trait Harness: Sized + Send + Sync + 'static {
    /// The sqlx database.
    type Db: sqlx::Database<Connection: outbox::InsertMessages>;
    /// The outbox backend.
    type Backend: Backend;
    /// "sqlite", "postgres" or "mysql".
    const NAME: &'static str;

    /// A new, migrated database with the application's tables.
    async fn new() -> Self;
    /// A new, empty database: no outbox tables, no application tables.
    async fn unmigrated() -> Self;
    /// Reconnects to the database at `url` (in a child process).
    async fn attach(url: &str) -> Self;
    /// The application's pool.
    fn pool(&self) -> &sqlx::Pool<Self::Db>;
    /// The outbox backend over that pool.
    fn backend(&self) -> Self::Backend;
    /// The URL child processes connect to.
    fn url(&self) -> String;

    /// Inserts a business row in the caller's transaction.
    fn insert_user<'c>(
        conn: &'c mut <Self::Db as sqlx::Database>::Connection,
        id: i64,
    ) -> BoxFuture<'c, ()>;
    /// Inserts a business row in the caller's transaction, reporting a refusal.
    fn try_insert_user<'c>(
        conn: &'c mut <Self::Db as sqlx::Database>::Connection,
        id: i64,
    ) -> BoxFuture<'c, Result<(), sqlx::Error>>;
    /// Reads the outbox table in the caller's transaction (at `SERIALIZABLE` this locks
    /// what it read on MariaDB and PostgreSQL, and takes SQLite's read snapshot).
    fn read_outbox<'c>(conn: &'c mut <Self::Db as sqlx::Database>::Connection)
        -> BoxFuture<'c, ()>;
    /// A new transaction at `SERIALIZABLE` (SQLite: a deferred one, SQLite is serializable).
    async fn begin_serializable(&self) -> sqlx::Transaction<'static, Self::Db>;
    /// The ids of the committed business rows, in order.
    async fn user_ids(&self) -> Vec<i64>;
    /// The ids of the committed business rows, in order, streamed from a pool connection.
    fn user_id_stream(&self) -> futures::stream::BoxStream<'_, Result<i64, sqlx::Error>>;
    /// Business rows.
    async fn count_users(&self) -> i64;
    /// Queued rows of one type, whatever their status.
    async fn count_messages(&self, type_tag: &str) -> i64;
    /// Attempts recorded on a queued message.
    async fn attempts(&self, id: &str) -> i64;
    /// Records that `id` was handled, in table `deliveries`.
    fn record_delivery(&self, id: &str) -> impl std::future::Future<Output = ()> + Send;
    /// (message id, process id) of every recorded delivery.
    async fn deliveries(&self) -> Vec<(String, i64)>;
    /// Running messages whose lease has expired (by the database's clock).
    async fn expired_leases(&self) -> i64;
    /// (message id, process id, the database's time in unix ms) of every recorded delivery.
    async fn delivery_times(&self) -> Vec<(String, i64, i64)>;
    /// (id, enqueued at, due at, attempts) of every stored message.
    async fn message_times(&self) -> Vec<(String, i64, i64, i64)>;
    /// Records this process's own clock (unix ms) beside the database's, in table `clocks`.
    fn record_clock(&self, local_ms: i64) -> impl std::future::Future<Output = ()> + Send;
    /// (process id, its clock, the database's) of every recorded clock.
    async fn clocks(&self) -> Vec<(i64, i64, i64)>;
    /// Makes lock waits on `conn` give up after about a second, inside or outside a
    /// transaction (for the rest of the session; on PostgreSQL, unless its transaction
    /// rolls back).
    fn short_lock_timeout<'c>(
        conn: &'c mut <Self::Db as sqlx::Database>::Connection,
    ) -> BoxFuture<'c, ()>;
}

/// The URL of a server, from `var` or the default, with the database name replaced.
pub fn server_url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

/// `url` with its database (the last path segment) replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let cut = base.rfind('/').expect("a database URL has a path");
    let mut out = format!("{}/{db}", &base[..cut]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// A database name unique to this test.
pub fn fresh_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "outbox_t_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Drops a server-side test database from a plain thread (usable from `Drop`).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub fn drop_database_later(admin_url: String, statement: String) {
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            use sqlx::{Connection, Executor};
            if admin_url.starts_with("postgres") {
                if let Ok(mut c) = sqlx::PgConnection::connect(&admin_url).await {
                    let _ = c
                        .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone())))
                        .await;
                }
            } else if let Ok(mut c) = sqlx::MySqlConnection::connect(&admin_url).await {
                let _ = c
                    .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone())))
                    .await;
            }
        });
    })
    .join();
}

/// The probe methods of a harness, written once; only the SQL differs per database.
macro_rules! probes {
    (
        conn = $conn:ty,
        insert_user = $insert:literal,
        count_messages = $count:literal,
        attempts = $attempts:literal as $attempts_ty:ty,
        record_delivery = $record:literal,
        record_clock = $record_clock:literal,
        message_times = $message_times:literal,
        expired_leases = $expired:literal,
        short_lock_timeout = $short:literal,
        begin_serializable = $serializable:literal $(,)?
    ) => {
        fn try_insert_user<'c>(
            conn: &'c mut $conn,
            id: i64,
        ) -> BoxFuture<'c, Result<(), sqlx::Error>> {
            Box::pin(async move {
                sqlx::query($insert).bind(id).execute(conn).await?;
                Ok(())
            })
        }
        fn read_outbox<'c>(conn: &'c mut $conn) -> BoxFuture<'c, ()> {
            Box::pin(async move {
                sqlx::query("SELECT COUNT(*) FROM outbox_messages")
                    .execute(conn)
                    .await
                    .unwrap();
            })
        }
        async fn begin_serializable(&self) -> sqlx::Transaction<'static, Self::Db> {
            self.pool.begin_with($serializable).await.unwrap()
        }
        async fn user_ids(&self) -> Vec<i64> {
            sqlx::query_scalar("SELECT id FROM users ORDER BY id")
                .fetch_all(&self.pool)
                .await
                .unwrap()
        }
        fn user_id_stream(&self) -> futures::stream::BoxStream<'_, Result<i64, sqlx::Error>> {
            sqlx::query_scalar("SELECT id FROM users ORDER BY id").fetch(&self.pool)
        }
        fn short_lock_timeout<'c>(conn: &'c mut $conn) -> BoxFuture<'c, ()> {
            Box::pin(async move {
                sqlx::query($short).execute(conn).await.unwrap();
            })
        }
        async fn expired_leases(&self) -> i64 {
            sqlx::query_scalar($expired)
                .fetch_one(&self.pool)
                .await
                .unwrap()
        }
        fn insert_user<'c>(conn: &'c mut $conn, id: i64) -> BoxFuture<'c, ()> {
            Box::pin(async move {
                sqlx::query($insert).bind(id).execute(conn).await.unwrap();
            })
        }
        async fn count_users(&self) -> i64 {
            sqlx::query_scalar("SELECT COUNT(*) FROM users")
                .fetch_one(&self.pool)
                .await
                .unwrap()
        }
        async fn count_messages(&self, type_tag: &str) -> i64 {
            sqlx::query_scalar($count)
                .bind(type_tag)
                .fetch_one(&self.pool)
                .await
                .unwrap()
        }
        async fn attempts(&self, id: &str) -> i64 {
            let n: $attempts_ty = sqlx::query_scalar($attempts)
                .bind(id)
                .fetch_one(&self.pool)
                .await
                .unwrap();
            i64::from(n)
        }
        async fn record_delivery(&self, id: &str) {
            sqlx::query($record)
                .bind(id)
                .bind(i64::from(std::process::id()))
                .execute(&self.pool)
                .await
                .unwrap();
        }
        async fn delivery_times(&self) -> Vec<(String, i64, i64)> {
            sqlx::query_as("SELECT id, pid, at FROM deliveries")
                .fetch_all(&self.pool)
                .await
                .unwrap()
        }
        async fn message_times(&self) -> Vec<(String, i64, i64, i64)> {
            sqlx::query_as($message_times)
                .fetch_all(&self.pool)
                .await
                .unwrap()
        }
        async fn record_clock(&self, local_ms: i64) {
            sqlx::query($record_clock)
                .bind(i64::from(std::process::id()))
                .bind(local_ms)
                .execute(&self.pool)
                .await
                .unwrap();
        }
        async fn clocks(&self) -> Vec<(i64, i64, i64)> {
            sqlx::query_as("SELECT pid, local_ms, at FROM clocks")
                .fetch_all(&self.pool)
                .await
                .unwrap()
        }
        async fn deliveries(&self) -> Vec<(String, i64)> {
            sqlx::query_as("SELECT id, pid FROM deliveries")
                .fetch_all(&self.pool)
                .await
                .unwrap()
        }
    };
}

#[cfg(feature = "sqlite")]
pub use sqlite::SqliteHarness;
#[cfg(feature = "sqlite")]
mod sqlite {
    use super::*;
    use outbox::{sqlite, SqliteBackend};
    use sqlx::{Sqlite, SqliteConnection, SqlitePool};

    /// A SQLite file in a temporary directory.
    pub struct SqliteHarness {
        pool: SqlitePool,
        url: String,
        _dir: Option<tempfile::TempDir>,
    }

    impl Harness for SqliteHarness {
        type Db = Sqlite;
        type Backend = SqliteBackend;
        const NAME: &'static str = "sqlite";

        async fn unmigrated() -> Self {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("conformance.db").display());
            let mut h = Self::attach(&url).await;
            h._dir = Some(dir);
            h
        }

        async fn new() -> Self {
            let h = Self::unmigrated().await;
            outbox::Outbox::new(h.backend())
                .migrate()
                .await
                .expect("migrate");
            for ddl in [
                "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)",
                "CREATE TABLE deliveries (id TEXT NOT NULL, pid INTEGER NOT NULL, \
                 at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)))",
                "CREATE TABLE clocks (pid INTEGER NOT NULL, local_ms INTEGER NOT NULL, \
                 at INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)))",
            ] {
                sqlx::query(ddl)
                    .execute(&h.pool)
                    .await
                    .expect("create table");
            }
            h
        }

        async fn attach(url: &str) -> Self {
            let pool = sqlite::connect(url).await.expect("open SQLite file");
            Self {
                pool,
                url: url.to_owned(),
                _dir: None,
            }
        }

        fn pool(&self) -> &SqlitePool {
            &self.pool
        }
        fn backend(&self) -> SqliteBackend {
            SqliteBackend::new(self.pool.clone())
        }
        fn url(&self) -> String {
            self.url.clone()
        }

        probes!(
            conn = SqliteConnection,
            insert_user = "INSERT INTO users (id, email) VALUES (?, 'u@example.test')",
            count_messages = "SELECT COUNT(*) FROM outbox_messages WHERE type_tag = ?",
            attempts = "SELECT attempts FROM outbox_messages WHERE id = ?" as i64,
            record_delivery = "INSERT INTO deliveries (id, pid) VALUES (?, ?)",
            record_clock = "INSERT INTO clocks (pid, local_ms) VALUES (?, ?)",
            message_times = "SELECT id, enqueued_at, due_at, attempts FROM outbox_messages",
            expired_leases = "SELECT COUNT(*) FROM outbox_messages WHERE status = 'running' \
                              AND lease_expires_at < unixepoch('subsec') * 1000",
            short_lock_timeout = "PRAGMA busy_timeout = 1000",
            begin_serializable = "BEGIN",
        );
    }
}

#[cfg(feature = "postgres")]
pub use postgres::PostgresHarness;
#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use outbox::PostgresBackend;
    use sqlx::{PgConnection, PgPool, Postgres};

    /// The server the suite uses; override with `OUTBOX_TEST_POSTGRES_URL`.
    pub fn admin_url() -> String {
        server_url("OUTBOX_TEST_POSTGRES_URL", outbox::postgres::DEFAULT_URL)
    }

    /// A new database on the PostgreSQL server, dropped when the harness is.
    pub struct PostgresHarness {
        pool: PgPool,
        url: String,
        owned: Option<String>,
    }

    impl Drop for PostgresHarness {
        fn drop(&mut self) {
            if let Some(db) = self.owned.take() {
                drop_database_later(
                    admin_url(),
                    format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
                );
            }
        }
    }

    impl Harness for PostgresHarness {
        type Db = Postgres;
        type Backend = PostgresBackend;
        const NAME: &'static str = "postgres";

        async fn unmigrated() -> Self {
            use sqlx::{Connection, Executor};
            let admin = admin_url();
            let db = fresh_name();
            let mut c = PgConnection::connect(&admin).await.unwrap_or_else(|e| {
                panic!("PostgreSQL at {admin} is unreachable ({e}); start it or set OUTBOX_TEST_POSTGRES_URL")
            });
            c.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "CREATE DATABASE {db}"
            ))))
            .await
            .expect("create test database");
            let mut h = Self::attach(&with_database(&admin, &db)).await;
            h.owned = Some(db);
            h
        }

        async fn new() -> Self {
            let h = Self::unmigrated().await;
            outbox::Outbox::new(h.backend())
                .migrate()
                .await
                .expect("migrate");
            for ddl in [
                "CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT NOT NULL)",
                "CREATE TABLE deliveries (id TEXT NOT NULL, pid BIGINT NOT NULL, \
                 at BIGINT NOT NULL DEFAULT (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
                "CREATE TABLE clocks (pid BIGINT NOT NULL, local_ms BIGINT NOT NULL, \
                 at BIGINT NOT NULL DEFAULT (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
            ] {
                sqlx::query(ddl)
                    .execute(&h.pool)
                    .await
                    .expect("create table");
            }
            h
        }

        async fn attach(url: &str) -> Self {
            let pool = outbox::postgres::connect(url)
                .await
                .expect("connect to the test database");
            Self {
                pool,
                url: url.to_owned(),
                owned: None,
            }
        }

        fn pool(&self) -> &PgPool {
            &self.pool
        }
        fn backend(&self) -> PostgresBackend {
            PostgresBackend::new(self.pool.clone())
        }
        fn url(&self) -> String {
            self.url.clone()
        }

        probes!(
            conn = PgConnection,
            insert_user = "INSERT INTO users (id, email) VALUES ($1, 'u@example.test')",
            count_messages = "SELECT COUNT(*) FROM outbox_messages WHERE type_tag = $1",
            attempts = "SELECT attempts FROM outbox_messages WHERE id = $1" as i32,
            record_delivery = "INSERT INTO deliveries (id, pid) VALUES ($1, $2)",
            record_clock = "INSERT INTO clocks (pid, local_ms) VALUES ($1, $2)",
            message_times = "SELECT id, enqueued_at, due_at, attempts::bigint FROM outbox_messages",
            expired_leases = "SELECT COUNT(*) FROM outbox_messages WHERE status = 'running' \
                              AND lease_expires_at < (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
            short_lock_timeout = "SET lock_timeout = '1s'",
            begin_serializable = "BEGIN ISOLATION LEVEL SERIALIZABLE",
        );
    }
}

#[cfg(feature = "mysql")]
pub use mysql::MySqlHarness;
#[cfg(feature = "mysql")]
mod mysql {
    use super::*;
    use outbox::MySqlBackend;
    use sqlx::{MySql, MySqlConnection, MySqlPool};

    /// The server the suite uses; override with `OUTBOX_TEST_MYSQL_URL`.
    pub fn admin_url() -> String {
        server_url("OUTBOX_TEST_MYSQL_URL", outbox::mysql::DEFAULT_URL)
    }

    /// A new database on the MariaDB/MySQL server, dropped when the harness is.
    pub struct MySqlHarness {
        pool: MySqlPool,
        url: String,
        owned: Option<String>,
    }

    impl Drop for MySqlHarness {
        fn drop(&mut self) {
            if let Some(db) = self.owned.take() {
                drop_database_later(admin_url(), format!("DROP DATABASE IF EXISTS {db}"));
            }
        }
    }

    impl Harness for MySqlHarness {
        type Db = MySql;
        type Backend = MySqlBackend;
        const NAME: &'static str = "mysql";

        async fn unmigrated() -> Self {
            use sqlx::{Connection, Executor};
            let admin = admin_url();
            let db = fresh_name();
            let mut c = MySqlConnection::connect(&admin).await.unwrap_or_else(|e| {
                panic!("MariaDB/MySQL at {admin} is unreachable ({e}); start it or set OUTBOX_TEST_MYSQL_URL")
            });
            c.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                "CREATE DATABASE {db}"
            ))))
            .await
            .expect("create test database");
            let mut h = Self::attach(&with_database(&admin, &db)).await;
            h.owned = Some(db);
            h
        }

        async fn new() -> Self {
            let h = Self::unmigrated().await;
            outbox::Outbox::new(h.backend())
                .migrate()
                .await
                .expect("migrate");
            for ddl in [
                "CREATE TABLE users (id BIGINT PRIMARY KEY, email TEXT NOT NULL)",
                "CREATE TABLE deliveries (id VARCHAR(36) NOT NULL, pid BIGINT NOT NULL, \
                 at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)))",
                "CREATE TABLE clocks (pid BIGINT NOT NULL, local_ms BIGINT NOT NULL, \
                 at BIGINT NOT NULL DEFAULT (CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)))",
            ] {
                sqlx::query(ddl)
                    .execute(&h.pool)
                    .await
                    .expect("create table");
            }
            h
        }

        async fn attach(url: &str) -> Self {
            let pool = outbox::mysql::connect(url)
                .await
                .expect("connect to the test database");
            Self {
                pool,
                url: url.to_owned(),
                owned: None,
            }
        }

        fn pool(&self) -> &MySqlPool {
            &self.pool
        }
        fn backend(&self) -> MySqlBackend {
            MySqlBackend::new(self.pool.clone())
        }
        fn url(&self) -> String {
            self.url.clone()
        }

        probes!(
            conn = MySqlConnection,
            insert_user = "INSERT INTO users (id, email) VALUES (?, 'u@example.test')",
            count_messages = "SELECT COUNT(*) FROM outbox_messages WHERE type_tag = ?",
            attempts = "SELECT attempts FROM outbox_messages WHERE id = ?" as i32,
            record_delivery = "INSERT INTO deliveries (id, pid) VALUES (?, ?)",
            record_clock = "INSERT INTO clocks (pid, local_ms) VALUES (?, ?)",
            message_times =
                "SELECT id, enqueued_at, due_at, CAST(attempts AS SIGNED) FROM outbox_messages",
            expired_leases = "SELECT COUNT(*) FROM outbox_messages WHERE status = 'running' \
                              AND lease_expires_at < ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)",
            short_lock_timeout = "SET SESSION innodb_lock_wait_timeout = 1",
            begin_serializable = "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; START TRANSACTION",
        );
    }
}
