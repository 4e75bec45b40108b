//! An enqueue that fails on a lock leaves nothing of its transaction to commit: after a
//! deadlock (or serialization failure) and after a lock timeout, neither the caller's row
//! written before the enqueue nor one written after it is stored, whatever `commit()`
//! returns, and the caller hears of it (a later statement or the commit fails).

use outbox::{prelude::*, BoxError, RetryableError};
use sqlx::Connection;

use super::{cases::Mail, harness::Harness};

/// What one of two racing transactions saw.
struct Party {
    /// Its business row written before the enqueue (`id + 100` is written after).
    id: i64,
    enqueued: Result<Enqueued, EnqueueError>,
    /// The business row written after a failed enqueue.
    after: Option<Result<(), sqlx::Error>>,
    commit: Result<(), sqlx::Error>,
}

/// The later statement and the commit of a transaction whose enqueue failed are refused,
/// loudly, and the enqueue's error `text` said how.
fn assert_refused<H: Harness>(
    after: &Result<(), sqlx::Error>,
    commit: &Result<(), sqlx::Error>,
    text: &str,
) {
    let (after, commit) = (format!("{after:?}"), format!("{commit:?}"));
    let (refused, how) = match H::NAME {
        // A read-only transaction replaced the lost one; its COMMIT writes nothing.
        "mysql" => (&after, "READ ONLY transaction"),
        // The aborted transaction refuses statements; its COMMIT rolls back.
        "postgres" => (&after, "current transaction is aborted"),
        // The marked transaction's COMMIT fails.
        _ => (&commit, "FOREIGN KEY constraint failed"),
    };
    assert!(
        refused.contains(how),
        "{}: expected \"{how}\"; the statement after the failed enqueue: {after}, \
         the commit: {commit}",
        H::NAME
    );
    assert!(text.contains(how), "{}: the error says so: {text}", H::NAME);
}

/// Enqueues `Mail { n: 9 }`; after a failure goes on as a careless caller would: writes
/// another row and commits.
async fn party<H: Harness>(mut tx: sqlx::Transaction<'static, H::Db>, id: i64) -> Party {
    let enqueued = Mail { n: 9 }.enqueue(&mut *tx).await;
    let after = match enqueued {
        Ok(_) => None,
        Err(_) => Some(H::try_insert_user(&mut tx, id + 100).await),
    };
    let commit = tx.commit().await;
    Party {
        id,
        enqueued,
        after,
        commit,
    }
}

/// Two transactions read the outbox table, write a business row each and enqueue the
/// same key: MariaDB detects a deadlock, PostgreSQL a serialization failure, and on SQLite
/// the second writer's snapshot is stale. The loser's transaction commits nothing.
pub async fn a_deadlocked_enqueue_commits_nothing_after_it<H: Harness>() {
    let h = H::new().await;
    let mut a = h.begin_serializable().await;
    let mut b = h.begin_serializable().await;
    H::read_outbox(&mut a).await;
    H::read_outbox(&mut b).await;
    // SQLite has one writer: a transaction that wrote holds the write lock, so only one
    // that has written nothing yet can fail on a lock.
    let rows_before = H::NAME != "sqlite";
    if rows_before {
        H::insert_user(&mut a, 1).await;
        H::insert_user(&mut b, 2).await;
    }
    let (a, b) = tokio::join!(party::<H>(a, 1), party::<H>(b, 2));
    let (won, lost) = match (&a.enqueued, &b.enqueued) {
        (Ok(_), Err(_)) => (a, b),
        (Err(_), Ok(_)) => (b, a),
        _ => panic!(
            "{}: exactly one enqueue fails: {:?} / {:?}",
            H::NAME,
            a.enqueued,
            b.enqueued
        ),
    };
    won.commit.unwrap();
    let err = lost.enqueued.unwrap_err();
    if H::NAME == "sqlite" {
        assert!(matches!(err, EnqueueError::LockTimeout { .. }), "{err:?}");
    } else {
        assert!(
            matches!(err, EnqueueError::TransactionAborted { .. }),
            "{}: {err:?}",
            H::NAME
        );
    }
    assert!(err.is_retryable(), "{err}");
    let text = err.to_string();
    assert!(text.contains("retry_transaction"), "{text}");
    let after = lost.after.expect("the loser wrote after its enqueue");
    assert!(
        after.is_err() || lost.commit.is_err(),
        "{}: the loser's later statement and its commit both succeeded ({text})",
        H::NAME
    );
    assert_refused::<H>(&after, &lost.commit, &text);
    let ids = h.user_ids().await;
    assert!(
        !ids.contains(&lost.id) && !ids.contains(&(lost.id + 100)),
        "{}: the loser's rows were committed: {ids:?} (after: {after:?}, commit: {:?})",
        H::NAME,
        lost.commit
    );
    if rows_before {
        assert_eq!(ids, vec![won.id], "{}", H::NAME);
    }
    assert_eq!(h.count_messages("conf.mail").await, 1, "{}", H::NAME);
}

/// An enqueue waits for a key that another open transaction holds until the lock
/// timeout. The caller's transaction commits nothing afterwards, even once the lock is
/// free, and its connection is left outside any transaction; through a connection outside
/// any transaction only the statement failed, and the connection goes on committing its
/// own statements.
pub async fn a_timed_out_enqueue_commits_nothing_after_it<H: Harness>() {
    let h = H::new().await;
    let mut holder = h.pool().begin().await.unwrap();
    let _ = Mail { n: 5 }.enqueue(&mut *holder).await.unwrap();
    let mut conn = h.pool().acquire().await.unwrap();
    H::short_lock_timeout(&mut conn).await;
    let mut tx = conn.begin().await.unwrap();
    // SQLite has one writer: the caller cannot have written while another holds the key.
    if H::NAME != "sqlite" {
        H::insert_user(&mut tx, 1).await;
    }
    let err = Mail { n: 5 }.enqueue(&mut *tx).await.unwrap_err();
    assert!(
        matches!(err, EnqueueError::LockTimeout { .. }),
        "{}: {err:?}",
        H::NAME
    );
    assert!(err.is_retryable(), "{err}");
    let text = err.to_string();
    assert!(text.contains("retry_transaction"), "{text}");
    // The lock is free again: nothing stops a later write but the outbox.
    holder.commit().await.unwrap();
    let after = H::try_insert_user(&mut tx, 2).await;
    let commit = tx.commit().await;
    assert!(
        after.is_err() || commit.is_err(),
        "{}: the statement after the failed enqueue and the commit both succeeded ({text})",
        H::NAME
    );
    assert_refused::<H>(&after, &commit, &text);
    assert_eq!(
        h.user_ids().await,
        Vec::<i64>::new(),
        "{}: rows of the failed transaction were committed (after: {after:?}, commit: {commit:?})",
        H::NAME
    );
    assert_eq!(h.count_messages("conf.mail").await, 1);
    assert!(
        !conn.is_in_transaction(),
        "{}: the connection is left inside a transaction",
        H::NAME
    );

    let mut holder = h.pool().begin().await.unwrap();
    let _ = Mail { n: 6 }.enqueue(&mut *holder).await.unwrap();
    let err = Mail { n: 6 }.enqueue(&mut *conn).await.unwrap_err();
    assert!(
        matches!(err, EnqueueError::LockTimeout { .. }),
        "{}: {err:?}",
        H::NAME
    );
    holder.rollback().await.unwrap();
    H::insert_user(&mut conn, 3).await;
    assert_eq!(
        h.user_ids().await,
        vec![3],
        "{}: a connection outside a transaction commits its statements",
        H::NAME
    );
    let _ = Mail { n: 6 }.enqueue(&mut *conn).await.unwrap();
    assert_eq!(h.count_messages("conf.mail").await, 2);
}

/// `retry_transaction` runs a transaction that lost a lock wait again: the first run times
/// out on a key another transaction holds (on SQLite already at its own row: one writer),
/// the other transaction commits, and the second run finds the key taken and commits.
pub async fn retry_transaction_runs_a_timed_out_transaction_again<H: Harness>() {
    let h = H::new().await;
    let mut holder = h.pool().begin().await.unwrap();
    let _ = Mail { n: 7 }.enqueue(&mut *holder).await.unwrap();
    let holder = tokio::sync::Mutex::new(Some(holder));
    let mut runs = 0;
    let mut errors = Vec::new();
    let result = retry_transaction(h.pool(), async |conn| {
        runs += 1;
        H::short_lock_timeout(conn).await;
        let outcome = async {
            H::try_insert_user(conn, 1).await?;
            Ok::<_, BoxError>(Mail { n: 7 }.enqueue(&mut *conn).await?)
        }
        .await;
        if let Err(e) = &outcome {
            errors.push(e.to_string());
            if let Some(holder) = holder.lock().await.take() {
                holder.commit().await.unwrap();
            }
        }
        outcome
    })
    .await
    .unwrap_or_else(|e| panic!("{}: {e} (after {errors:?})", H::NAME));
    assert_eq!(runs, 2, "{}: {errors:?}", H::NAME);
    assert!(
        result.is_duplicate(),
        "the second run sees the committed key"
    );
    assert_eq!(h.user_ids().await, vec![1], "{}", H::NAME);
    assert_eq!(h.count_messages("conf.mail").await, 1);
}
