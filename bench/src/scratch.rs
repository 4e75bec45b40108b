//! Scratch databases for the small benches: a SQLite file in a temporary directory, and a
//! PostgreSQL database of its own on the machine's server (dropped afterwards).

/// A migrated SQLite backend in `dir`, and its pool.
pub async fn sqlite(dir: &std::path::Path) -> (outbox::sqlx::SqlitePool, outbox::SqliteBackend) {
    use outbox::prelude::*;
    let url = format!("sqlite://{}", dir.join("bench.db").display());
    let pool = outbox::sqlite::connect(&url).await.expect("sqlite");
    let backend = outbox::SqliteBackend::new(pool.clone());
    Outbox::new(backend.clone())
        .migrate()
        .await
        .expect("migrate");
    (pool, backend)
}

/// A fresh PostgreSQL database `name` (from `OUTBOX_BENCH_POSTGRES_URL`, else the machine's
/// server), migrated; `run` gets its pool and backend, then the database is dropped.
#[cfg(feature = "postgres")]
pub async fn with_postgres<F, Fut>(name: &str, run: F)
where
    F: FnOnce(outbox::sqlx::PgPool, outbox::PostgresBackend) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    use outbox::prelude::*;
    let url = std::env::var("OUTBOX_BENCH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let admin_pool = outbox::postgres::connect(&url).await.expect("postgres");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name}"
    )))
    .execute(&admin_pool)
    .await
    .expect("drop");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin_pool)
        .await
        .expect("create");
    let url = format!(
        "{}/{name}",
        url.rsplit_once('/').expect("a database in the URL").0
    );
    let pool = outbox::postgres::connect(&url).await.expect("postgres");
    let backend = outbox::PostgresBackend::new(pool.clone());
    Outbox::new(backend.clone())
        .migrate()
        .await
        .expect("migrate");
    run(pool.clone(), backend).await;
    pool.close().await;
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name}"
    )))
    .execute(&admin_pool)
    .await;
}
