//! The consumer's inbox on a real SQLite file: the handler's rows and the processed id
//! commit together; a redelivery is skipped; a failed handler leaves nothing and runs again.

use outbox_core::{sqlite, sqlx, Outbox, SqliteBackend};
use outbox_publish::{Handled, Inbox, InboxError, Received};

async fn pool() -> (sqlx::SqlitePool, std::path::PathBuf) {
    let path = std::env::temp_dir().join(format!(
        "outbox-publish-inbox-{}-{}.db",
        std::process::id(),
        ulid_like()
    ));
    let pool = sqlite::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    Outbox::new(SqliteBackend::new(pool.clone()))
        .migrate()
        .await
        .unwrap();
    sqlx::query("CREATE TABLE seen (id TEXT NOT NULL, n INTEGER NOT NULL)")
        .execute(&pool)
        .await
        .unwrap();
    (pool, path)
}

fn ulid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

async fn rows(pool: &sqlx::SqlitePool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM seen")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The handler of the test: one row per event, from its JSON.
fn record<'t>(
    tx: &'t mut sqlx::Transaction<'static, sqlx::Sqlite>,
    e: &'t Received,
) -> futures::future::BoxFuture<'t, Result<(), sqlx::Error>> {
    Box::pin(async move {
        let n: serde_json::Value = e.json().map_err(|e| sqlx::Error::Decode(e.into()))?;
        sqlx::query("INSERT INTO seen (id, n) VALUES (?, ?)")
            .bind(&e.id)
            .bind(n["n"].as_i64())
            .execute(&mut **tx)
            .await
            .map(|_| ())
    })
}

#[tokio::test]
async fn a_redelivered_event_is_skipped_and_a_failed_one_runs_again() {
    let (pool, path) = pool().await;
    let inbox = Inbox::new(pool.clone(), "billing");
    let event = Received::new("01JOUTBOXID", "orders.created", br#"{"n":7}"#.to_vec());

    // The handler fails: nothing of its transaction stays, the id is not recorded.
    let failed = inbox
        .handle(&event, |tx, e| {
            Box::pin(async move {
                sqlx::query("INSERT INTO seen (id, n) VALUES (?, 1)")
                    .bind(&e.id)
                    .execute(&mut **tx)
                    .await
                    .unwrap();
                Err::<(), _>("the ledger is closed")
            })
        })
        .await;
    assert!(matches!(
        failed,
        Err(InboxError::Handler("the ledger is closed"))
    ));
    assert_eq!(rows(&pool).await, 0);

    let handler = record;
    // Delivered again: runs, and commits with its id.
    assert_eq!(
        inbox.handle(&event, handler).await.unwrap(),
        Handled::Processed
    );
    // A third delivery (the broker lost the ack): skipped.
    let again = event.clone().redelivered(true);
    assert_eq!(
        inbox.handle(&again, handler).await.unwrap(),
        Handled::Skipped
    );
    assert_eq!(rows(&pool).await, 1);
    // Another consumer of the same event processes it once too.
    let search = Inbox::new(pool.clone(), "search");
    assert_eq!(
        search.handle(&event, handler).await.unwrap(),
        Handled::Processed
    );
    assert_eq!(rows(&pool).await, 2);
    // No id: refused, nothing written.
    let anonymous = Received::new("", "orders.created", vec![]);
    assert!(matches!(
        inbox.handle(&anonymous, handler).await,
        Err(InboxError::NoId)
    ));
    pool.close().await;
    let _ = std::fs::remove_file(path);
}
