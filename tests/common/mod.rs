//! Helpers shared by the integration tests: a fresh SQLite file per test and row probes.
#![allow(dead_code)]

use std::time::Duration;

use outbox::{sqlite, Outbox, SqliteBackend};
use sqlx::SqlitePool;

/// A SQLite database in its own temporary directory (removed on drop).
pub struct TestDb {
    pub pool: SqlitePool,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl TestDb {
    /// A new, migrated database file.
    pub async fn new() -> Self {
        Self::with_options(|o| o).await
    }

    /// A new, migrated database file with adjusted connection options.
    pub async fn with_options(
        adjust: impl FnOnce(sqlx::sqlite::SqliteConnectOptions) -> sqlx::sqlite::SqliteConnectOptions,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("outbox-test.db").display());
        let options = adjust(sqlite::connect_options(&url).expect("options"));
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .expect("open test database");
        Outbox::new(SqliteBackend::new(pool.clone()))
            .migrate()
            .await
            .expect("migrate");
        sqlx::query("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL)")
            .execute(&pool)
            .await
            .expect("create app table");
        Self {
            pool,
            url,
            _dir: dir,
        }
    }

    pub fn backend(&self) -> SqliteBackend {
        SqliteBackend::new(self.pool.clone())
    }

    /// Number of queued rows of one type, whatever their status.
    pub async fn count(&self, type_tag: &str) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM outbox_messages WHERE type_tag = ?")
            .bind(type_tag)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Rows with this id in the queue (0 or 1).
    pub async fn count_id(&self, id: &str) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM outbox_messages WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// The status of one row, or `None` once it left the queue (delivered and deleted, or
    /// moved to the dead letters), read in one statement.
    pub async fn status(&self, id: &str) -> Option<String> {
        sqlx::query_scalar("SELECT status FROM outbox_messages WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .unwrap()
    }

    /// (status, attempts, last_error) of one row.
    pub async fn row(&self, id: &str) -> (String, i64, Option<String>) {
        sqlx::query_as("SELECT status, attempts, last_error FROM outbox_messages WHERE id = ?")
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// Inserts a row the way other software might: any type tag, any bytes.
    pub async fn insert_raw(&self, id: &str, type_tag: &str, payload: &[u8]) {
        sqlx::query(
            "INSERT INTO outbox_messages (payload, id, type_tag, status, attempts, max_attempts, due_at, priority, enqueued_at) \
             VALUES (?, ?, ?, 'queued', 0, 3, unixepoch('subsec') * 1000, 0, unixepoch('subsec') * 1000)",
        )
        .bind(payload)
        .bind(id)
        .bind(type_tag)
        .execute(&self.pool)
        .await
        .unwrap();
    }
}

/// Waits until `check` holds, polling every 20 ms, for at most `limit`.
pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// A fresh ULID string for hand-inserted rows.
pub fn ulid() -> String {
    // Any valid ULID works; derive one from the time and a counter.
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let value: u128 =
        ((ms as u128) << 80) | (n as u128 + 1) << 16 | (std::process::id() as u128 & 0xffff);
    crockford(value)
}

fn crockford(mut v: u128) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut out = [b'0'; 26];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(v & 31) as usize];
        v >>= 5;
    }
    String::from_utf8(out.to_vec()).unwrap()
}
