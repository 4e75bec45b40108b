//! The test helpers of `outbox::testing` on every database: what a transaction enqueued is
//! asserted and read back typed through that transaction, a rollback leaves nothing to
//! find, and a pooled connection sees what was committed.

use std::time::Duration;

use outbox::{prelude::*, testing};

use super::{cases::Mail, harness::Harness};

pub async fn assert_and_refute_what_a_transaction_enqueued<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    let options = EnqueueOptions::new()
        .group("spring")
        .priority(7)
        .after(Duration::from_secs(3600));
    let _ = Mail { n: 2 }.enqueue_with(&mut *tx, options).await.unwrap();
    // Uncommitted, seen through the transaction.
    let one = testing::assert_enqueued::<Mail, _>(&mut *tx, |m| m.message.n == 1).await;
    assert_eq!((one.max_attempts, one.attempts, one.priority), (5, 0, 0));
    assert_eq!(one.idempotency_key.as_deref(), Some("1"));
    let two = testing::assert_enqueued::<Mail, _>(&mut *tx, |m| m.in_group("spring")).await;
    assert_eq!((two.message.n, two.priority), (2, 7));
    assert!(two.due_after(Duration::from_secs(3000)), "{:?}", two.due_at);
    testing::refute_enqueued::<Mail, _>(&mut *tx, |m| m.message.n == 3).await;
    let all = testing::queued::<Mail, _>(&mut *tx).await;
    assert_eq!(all.iter().map(|m| m.message.n).collect::<Vec<_>>(), [1, 2]);
    tx.rollback().await.unwrap();
    // Rolled back: nothing to find.
    let mut conn = h.pool().acquire().await.unwrap();
    testing::refute_enqueued::<Mail, _>(&mut *conn, |_| true).await;
    drop(conn);
    let mut tx = h.pool().begin().await.unwrap();
    let _ = Mail { n: 4 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let mut conn = h.pool().acquire().await.unwrap();
    testing::assert_enqueued::<Mail, _>(&mut *conn, |m| m.message.n == 4).await;
    // A failed assertion lists what is queued.
    let missing =
        std::panic::AssertUnwindSafe(testing::assert_enqueued::<Mail, _>(&mut *conn, |m| {
            m.message.n == 5
        }));
    let panic = futures::FutureExt::catch_unwind(missing).await.unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(
        text.contains("no queued `conf.mail` message matches") && text.contains(r#"{"n":4}"#),
        "{text}"
    );
}
