//! A fresh database per run on each backend, the business table of the enqueue workload,
//! and the raw-SQL drain floor.

use std::time::Instant;

use outbox::backend::Backend;

/// The backends the bench can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
    Mysql,
}

impl Kind {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "sqlite" => Ok(Kind::Sqlite),
            "postgres" => Ok(Kind::Postgres),
            "mysql" => Ok(Kind::Mysql),
            other => Err(format!(
                "unknown backend `{other}`: use sqlite, postgres or mysql"
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
            Kind::Mysql => "mysql",
        }
    }
}

/// One fresh database and its pool.
pub enum Db {
    Sqlite(sqlx::SqlitePool, tempfile::TempDir),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool, String),
    #[cfg(feature = "mysql")]
    Mysql(sqlx::MySqlPool, String),
}

fn fresh_name() -> String {
    format!(
        "outbox_bench_{}_{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() ^ rand_u32() as u128
    )
}

fn rand_u32() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

/// The server URL the bench connects to first (overridable like the tests').
fn admin_url(kind: Kind) -> String {
    match kind {
        #[cfg(feature = "postgres")]
        Kind::Postgres => std::env::var("OUTBOX_TEST_POSTGRES_URL")
            .unwrap_or(outbox::postgres::DEFAULT_URL.into()),
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            std::env::var("OUTBOX_TEST_MYSQL_URL").unwrap_or(outbox::mysql::DEFAULT_URL.into())
        }
        _ => panic!("backend `{}` has no server URL", kind.name()),
    }
}

fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let cut = base.rfind('/').expect("a database URL has a path");
    match query {
        Some(q) => format!("{}/{db}?{q}", &base[..cut]),
        None => format!("{}/{db}", &base[..cut]),
    }
}

impl Db {
    /// A new, migrated database with the `orders` business table.
    pub async fn fresh(kind: Kind) -> Db {
        use sqlx::{Connection, Executor};
        let db = match kind {
            Kind::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}", dir.path().join("bench.db").display());
                Db::Sqlite(outbox::sqlite::connect(&url).await.unwrap(), dir)
            }
            #[cfg(feature = "postgres")]
            Kind::Postgres => {
                let admin = admin_url(Kind::Postgres);
                let name = fresh_name();
                let mut c = sqlx::PgConnection::connect(&admin)
                    .await
                    .expect("PostgreSQL unreachable");
                c.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "CREATE DATABASE {name}"
                ))))
                .await
                .unwrap();
                Db::Postgres(
                    outbox::postgres::connect(&with_database(&admin, &name))
                        .await
                        .unwrap(),
                    name,
                )
            }
            #[cfg(feature = "mysql")]
            Kind::Mysql => {
                let admin = admin_url(Kind::Mysql);
                let name = fresh_name();
                let mut c = sqlx::MySqlConnection::connect(&admin)
                    .await
                    .expect("MariaDB/MySQL unreachable");
                c.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "CREATE DATABASE {name}"
                ))))
                .await
                .unwrap();
                Db::Mysql(
                    outbox::mysql::connect(&with_database(&admin, &name))
                        .await
                        .unwrap(),
                    name,
                )
            }
            #[allow(unreachable_patterns)]
            _ => panic!("backend `{}` needs its cargo feature", kind.name()),
        };
        let ddl = match kind {
            Kind::Sqlite => "CREATE TABLE orders (id INTEGER PRIMARY KEY, email TEXT NOT NULL)",
            _ => "CREATE TABLE orders (id BIGINT PRIMARY KEY, email TEXT NOT NULL)",
        };
        db.migrate().await;
        db.execute(ddl).await;
        let notes = match kind {
            Kind::Sqlite => "CREATE TABLE order_notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
            _ => "CREATE TABLE order_notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL)",
        };
        db.execute(notes).await;
        db
    }

    /// Which backend this database is on.
    pub fn kind(&self) -> Kind {
        match self {
            Db::Sqlite(..) => Kind::Sqlite,
            #[cfg(feature = "postgres")]
            Db::Postgres(..) => Kind::Postgres,
            #[cfg(feature = "mysql")]
            Db::Mysql(..) => Kind::Mysql,
        }
    }

    /// Where another process finds this database: the SQLite URL, or the server URL.
    pub fn locator(&self) -> String {
        match self {
            Db::Sqlite(_, dir) => format!("sqlite://{}", dir.path().join("bench.db").display()),
            #[cfg(feature = "postgres")]
            Db::Postgres(_, name) => with_database(&admin_url(Kind::Postgres), name),
            #[cfg(feature = "mysql")]
            Db::Mysql(_, name) => with_database(&admin_url(Kind::Mysql), name),
        }
    }

    async fn migrate(&self) {
        match self {
            Db::Sqlite(p, _) => outbox::SqliteBackend::new(p.clone())
                .migrate()
                .await
                .unwrap(),
            #[cfg(feature = "postgres")]
            Db::Postgres(p, _) => outbox::PostgresBackend::new(p.clone())
                .migrate()
                .await
                .unwrap(),
            #[cfg(feature = "mysql")]
            Db::Mysql(p, _) => outbox::MySqlBackend::new(p.clone())
                .migrate()
                .await
                .unwrap(),
        }
    }

    pub async fn execute(&self, sql: &'static str) {
        match self {
            Db::Sqlite(p, _) => drop(sqlx::query(sql).execute(p).await.unwrap()),
            #[cfg(feature = "postgres")]
            Db::Postgres(p, _) => drop(sqlx::query(sql).execute(p).await.unwrap()),
            #[cfg(feature = "mysql")]
            Db::Mysql(p, _) => drop(sqlx::query(sql).execute(p).await.unwrap()),
        }
    }

    /// Drops a server database (SQLite's directory goes with the value).
    pub async fn cleanup(self) {
        use sqlx::{Connection, Executor};
        match self {
            Db::Sqlite(p, _) => p.close().await,
            #[cfg(feature = "postgres")]
            Db::Postgres(p, name) => {
                p.close().await;
                let admin = admin_url(Kind::Postgres);
                let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
                let _ = c
                    .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE {name} WITH (FORCE)"
                    ))))
                    .await;
            }
            #[cfg(feature = "mysql")]
            Db::Mysql(p, name) => {
                p.close().await;
                let admin = admin_url(Kind::Mysql);
                let mut c = sqlx::MySqlConnection::connect(&admin).await.unwrap();
                let _ = c
                    .execute(sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE {name}"
                    ))))
                    .await;
            }
        }
    }

    /// The raw-SQL floor: claim any 10 pending rows (no priority order: the cheapest
    /// claim), then delete them, on one connection, until none is left. Returns how many
    /// rows it consumed.
    pub async fn raw_floor(&self, queue: &str) -> u64 {
        let mut total = 0u64;
        match self {
            Db::Sqlite(p, _) => {
                let mut c = p.acquire().await.unwrap();
                loop {
                    let ids: Vec<String> = sqlx::query_scalar(
                        "UPDATE outbox_messages SET status = 'running' WHERE id IN (SELECT id FROM outbox_messages \
                         WHERE type_tag = ? AND status = 'queued' LIMIT 10) RETURNING id",
                    )
                    .bind(queue)
                    .fetch_all(&mut *c)
                    .await
                    .unwrap();
                    if ids.is_empty() {
                        return total;
                    }
                    total += ids.len() as u64;
                    sqlx::query(
                        "DELETE FROM outbox_messages WHERE id IN (SELECT value FROM json_each(?))",
                    )
                    .bind(serde_json::to_string(&ids).unwrap())
                    .execute(&mut *c)
                    .await
                    .unwrap();
                }
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(p, _) => {
                let mut c = p.acquire().await.unwrap();
                loop {
                    let ids: Vec<String> = sqlx::query_scalar(
                        "UPDATE outbox_messages SET status = 'running' WHERE id IN (SELECT id FROM outbox_messages \
                         WHERE type_tag = $1 AND status = 'queued' LIMIT 10 \
                         FOR UPDATE SKIP LOCKED) RETURNING id",
                    )
                    .bind(queue)
                    .fetch_all(&mut *c)
                    .await
                    .unwrap();
                    if ids.is_empty() {
                        return total;
                    }
                    total += ids.len() as u64;
                    sqlx::query("DELETE FROM outbox_messages WHERE id = ANY($1)")
                        .bind(&ids)
                        .execute(&mut *c)
                        .await
                        .unwrap();
                }
            }
            #[cfg(feature = "mysql")]
            Db::Mysql(p, _) => {
                let mut c = p.acquire().await.unwrap();
                loop {
                    let mut tx = sqlx::Connection::begin(&mut *c).await.unwrap();
                    let ids: Vec<String> = sqlx::query_scalar(
                        "SELECT id FROM outbox_messages WHERE type_tag = ? AND status = 'queued' \
                         LIMIT 10 FOR UPDATE SKIP LOCKED",
                    )
                    .bind(queue)
                    .fetch_all(&mut *tx)
                    .await
                    .unwrap();
                    if ids.is_empty() {
                        tx.commit().await.unwrap();
                        return total;
                    }
                    total += ids.len() as u64;
                    sqlx::query(
                        "DELETE j FROM outbox_messages AS j \
                         JOIN JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t ON j.id = t.i",
                    )
                    .bind(serde_json::to_string(&ids).unwrap())
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                    tx.commit().await.unwrap();
                }
            }
        }
    }

    /// The lean floor: a bare `(id, payload)` table holding `n` rows like the bench's
    /// messages, drained on one connection by transactions that each read (and lock) 10
    /// rows in id order and delete them. Returns rows per second of the drain alone.
    pub async fn lean_floor(&self, n: u64) -> f64 {
        let payload = br#"{"n":1,"template":"order_confirmation"}"#.to_vec();
        let rows = serde_json::to_string(&(0..n).collect::<Vec<u64>>()).unwrap();
        match self {
            Db::Sqlite(p, _) => {
                self.execute(
                    "CREATE TABLE bench_lean (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)",
                )
                .await;
                sqlx::query(
                    "INSERT INTO bench_lean (id, payload) SELECT value, ?2 FROM json_each(?1)",
                )
                .bind(&rows)
                .bind(&payload)
                .execute(p)
                .await
                .unwrap();
                let mut c = p.acquire().await.unwrap();
                let started = std::time::Instant::now();
                loop {
                    let mut tx = sqlx::Connection::begin_with(&mut *c, "BEGIN IMMEDIATE")
                        .await
                        .unwrap();
                    let got: Vec<(i64, Vec<u8>)> =
                        sqlx::query_as("SELECT id, payload FROM bench_lean ORDER BY id LIMIT 10")
                            .fetch_all(&mut *tx)
                            .await
                            .unwrap();
                    if got.is_empty() {
                        tx.commit().await.unwrap();
                        return n as f64 / started.elapsed().as_secs_f64();
                    }
                    let ids = serde_json::to_string(&got.iter().map(|r| r.0).collect::<Vec<_>>())
                        .unwrap();
                    sqlx::query(
                        "DELETE FROM bench_lean WHERE id IN (SELECT value FROM json_each(?))",
                    )
                    .bind(ids)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                    tx.commit().await.unwrap();
                }
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(p, _) => {
                self.execute(
                    "CREATE TABLE bench_lean (id BIGINT PRIMARY KEY, payload BYTEA NOT NULL)",
                )
                .await;
                sqlx::query("INSERT INTO bench_lean (id, payload) SELECT v::bigint, $2 FROM jsonb_array_elements_text($1::jsonb) AS v")
                    .bind(&rows)
                    .bind(&payload)
                    .execute(p)
                    .await
                    .unwrap();
                let mut c = p.acquire().await.unwrap();
                let started = std::time::Instant::now();
                loop {
                    let mut tx = sqlx::Connection::begin(&mut *c).await.unwrap();
                    let got: Vec<(i64, Vec<u8>)> = sqlx::query_as(
                        "SELECT id, payload FROM bench_lean ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED",
                    )
                    .fetch_all(&mut *tx)
                    .await
                    .unwrap();
                    if got.is_empty() {
                        tx.commit().await.unwrap();
                        return n as f64 / started.elapsed().as_secs_f64();
                    }
                    let ids: Vec<i64> = got.iter().map(|r| r.0).collect();
                    sqlx::query("DELETE FROM bench_lean WHERE id = ANY($1)")
                        .bind(&ids)
                        .execute(&mut *tx)
                        .await
                        .unwrap();
                    tx.commit().await.unwrap();
                }
            }
            #[cfg(feature = "mysql")]
            Db::Mysql(p, _) => {
                self.execute(
                    "CREATE TABLE bench_lean (id BIGINT PRIMARY KEY, payload LONGBLOB NOT NULL)",
                )
                .await;
                sqlx::query("INSERT INTO bench_lean (id, payload) SELECT t.v, ? FROM JSON_TABLE(?, '$[*]' COLUMNS (v BIGINT PATH '$')) AS t")
                    .bind(&payload)
                    .bind(&rows)
                    .execute(p)
                    .await
                    .unwrap();
                let mut c = p.acquire().await.unwrap();
                let started = std::time::Instant::now();
                loop {
                    let mut tx = sqlx::Connection::begin(&mut *c).await.unwrap();
                    let got: Vec<(i64, Vec<u8>)> = sqlx::query_as(
                        "SELECT id, payload FROM bench_lean ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED",
                    )
                    .fetch_all(&mut *tx)
                    .await
                    .unwrap();
                    if got.is_empty() {
                        tx.commit().await.unwrap();
                        return n as f64 / started.elapsed().as_secs_f64();
                    }
                    let ids = serde_json::to_string(&got.iter().map(|r| r.0).collect::<Vec<_>>())
                        .unwrap();
                    sqlx::query(
                        "DELETE l FROM bench_lean AS l \
                         JOIN JSON_TABLE(?, '$[*]' COLUMNS (i BIGINT PATH '$')) AS t ON l.id = t.i",
                    )
                    .bind(ids)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                    tx.commit().await.unwrap();
                }
            }
        }
    }
}

/// What a database server saw from the bench's database, counted from a connection of the
/// meter's own: PostgreSQL's transactions, MariaDB's statements. SQLite has no server, so
/// nothing to count.
pub enum Meter {
    /// SQLite: no counter.
    None,
    /// `xact_commit + xact_rollback` of the bench's database in `pg_stat_database`, read
    /// over a connection to the admin database, so the reads are not counted. Backends
    /// flush their counts lazily (at most once a second while busy), so a reading can lag
    /// by a second.
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgConnection, String),
    /// The server's `Questions` (statements from clients, of every database: other
    /// clients count too, see [`Meter::others`]), and the bench database's name.
    #[cfg(feature = "mysql")]
    Mysql(sqlx::MySqlConnection, String),
}

impl Db {
    /// A meter of this database's transactions or statements (see [`Meter`]).
    pub async fn meter(&self) -> Meter {
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        use sqlx::Connection;
        match self {
            Db::Sqlite(..) => Meter::None,
            #[cfg(feature = "postgres")]
            Db::Postgres(_, name) => Meter::Postgres(
                sqlx::PgConnection::connect(&admin_url(Kind::Postgres))
                    .await
                    .expect("PostgreSQL unreachable"),
                name.clone(),
            ),
            #[cfg(feature = "mysql")]
            Db::Mysql(_, name) => Meter::Mysql(
                sqlx::MySqlConnection::connect(&admin_url(Kind::Mysql))
                    .await
                    .expect("MariaDB/MySQL unreachable"),
                name.clone(),
            ),
        }
    }
}

impl Meter {
    /// The counter now; `None` on SQLite.
    pub async fn read(&mut self) -> Option<u64> {
        match self {
            Meter::None => None,
            #[cfg(feature = "postgres")]
            Meter::Postgres(c, name) => {
                let n: i64 = sqlx::query_scalar(
                    "SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database WHERE datname = $1",
                )
                .bind(&*name)
                .fetch_one(&mut *c)
                .await
                .unwrap();
                Some(n as u64)
            }
            #[cfg(feature = "mysql")]
            Meter::Mysql(c, _) => {
                let n: String = sqlx::query_scalar(
                    "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
                     WHERE VARIABLE_NAME = 'QUESTIONS'",
                )
                .fetch_one(&mut *c)
                .await
                .unwrap();
                Some(n.parse().expect("Questions is a number"))
            }
        }
    }

    /// How much of the difference between two successive readings is the meter's own:
    /// on MariaDB each reading counts itself, so the later one is in the difference; on
    /// PostgreSQL the readings are made in another database.
    pub fn own_per_interval(&self) -> u64 {
        match self {
            #[cfg(feature = "mysql")]
            Meter::Mysql(..) => 1,
            _ => 0,
        }
    }

    /// The unit of the counter, per second.
    pub fn unit(&self) -> &'static str {
        match self {
            #[cfg(feature = "postgres")]
            Meter::Postgres(..) => "xact/s",
            _ => "stmt/s",
        }
    }

    /// Client connections to other databases, on servers where the counter is global
    /// (MariaDB): what they run is counted too. Call it outside the measured interval.
    pub async fn others(&mut self) -> u64 {
        match self {
            #[cfg(feature = "mysql")]
            Meter::Mysql(c, name) => {
                let n: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE ID <> CONNECTION_ID() AND USER <> 'system user' \
                     AND COMMAND <> 'Daemon' AND (DB IS NULL OR DB <> ?)",
                )
                .bind(&*name)
                .fetch_one(&mut *c)
                .await
                .unwrap();
                n as u64
            }
            _ => 0,
        }
    }
}
