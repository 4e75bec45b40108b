//! PostgreSQL at REPEATABLE READ: a concurrent transaction that commits the same idempotency
//! key first aborts the caller's whole transaction. The error says so, and
//! `retry_transaction` runs the transaction again, this time seeing the duplicate.

use std::sync::Arc;

use outbox::{prelude::*, retry_transaction, BoxError};

use super::{
    cases::Mail,
    harness::{Harness, PostgresHarness as H},
};

const REPEATABLE_READ: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";

/// Commits `Mail { n }` in a transaction of its own.
async fn commit_elsewhere(h: &H, n: i64) {
    let mut other = h.pool().begin().await.unwrap();
    let _ = Mail { n }.enqueue(&mut *other).await.unwrap();
    other.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_transaction_is_reported_as_such() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    sqlx::query(REPEATABLE_READ)
        .execute(&mut *tx)
        .await
        .unwrap();
    H::insert_user(&mut tx, 1).await; // the snapshot is taken here
    commit_elsewhere(&h, 7).await;
    let err = Mail { n: 7 }.enqueue(&mut *tx).await.unwrap_err();
    assert!(
        matches!(err, EnqueueError::TransactionAborted { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("not even your own rows"), "{text}");
    assert!(text.contains("retry_transaction"), "{text}");
    // What the error warns about: PostgreSQL answers COMMIT with a rollback.
    tx.commit().await.unwrap();
    assert_eq!(h.count_users().await, 0, "the business row is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_transaction_runs_an_aborted_transaction_again() {
    let h = Arc::new(H::new().await);
    let mut runs = 0;
    let mut errors = Vec::new();
    let result = retry_transaction(h.pool(), async |conn| {
        runs += 1;
        sqlx::query(REPEATABLE_READ).execute(&mut *conn).await?;
        H::insert_user(conn, 1).await;
        if runs == 1 {
            commit_elsewhere(&h, 7).await;
        }
        match (Mail { n: 7 }).enqueue(&mut *conn).await {
            Ok(r) => Ok(r),
            Err(e) => {
                errors.push(e.to_string());
                Err(BoxError::from(e))
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(runs, 2, "{errors:?}");
    assert!(
        result.is_duplicate(),
        "the second run sees the committed key"
    );
    assert_eq!(h.count_users().await, 1, "the business row is committed");
    assert_eq!(h.count_messages("conf.mail").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_transaction_returns_other_errors_at_once() {
    let h = H::new().await;
    let mut runs = 0;
    let err = retry_transaction(h.pool(), async |conn| {
        runs += 1;
        sqlx::query("SELECT * FROM no_such_table")
            .execute(&mut *conn)
            .await?;
        Ok::<_, BoxError>(())
    })
    .await
    .unwrap_err();
    assert_eq!(runs, 1);
    assert!(err.to_string().contains("no_such_table"), "{err}");
}
