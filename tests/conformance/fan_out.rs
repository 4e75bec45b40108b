//! Fan-out from an iterator and from a stream: written one chunk at a time in the caller's
//! transaction, counted, duplicates skipped, and a failing stream reported with what was
//! written before it failed.

use futures::StreamExt;
use outbox::{enqueue_iter, enqueue_stream, EnqueueOptions, FanOut, FanOutError};

use super::{cases::Mail, harness::Harness};

/// 2,500 from a lazy iterator, then 1,000 of which 500 are taken: counts add up and the
/// table holds each key once.
pub async fn fan_out_from_an_iterator<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let first = enqueue_iter(
        &mut *tx,
        (0..2_500).map(|n| Mail { n }),
        EnqueueOptions::new(),
    )
    .await
    .unwrap();
    // Borrowed items work too.
    let again: Vec<Mail> = (2_000..3_000).map(|n| Mail { n }).collect();
    let second = enqueue_iter::<Mail, _, _>(&mut *tx, &again, EnqueueOptions::new())
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        first,
        FanOut {
            inserted: 2_500,
            duplicates: 0
        }
    );
    assert_eq!(
        second,
        FanOut {
            inserted: 500,
            duplicates: 500
        }
    );
    assert_eq!(h.count_messages("conf.mail").await, 3_000);
}

/// The application's own rows, streamed from another connection of the pool, become
/// messages in the transaction; a stream that fails stops the fan-out and says how many
/// were written before (one chunk of 1,000 here), and rolling back writes none.
pub async fn fan_out_from_a_stream<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    for id in 1..=2_300 {
        H::insert_user(&mut *tx, id).await;
    }
    tx.commit().await.unwrap();

    let mut tx = h.pool().begin().await.unwrap();
    let rows = h.user_id_stream().map(|id| id.map(|n| Mail { n }));
    let written = enqueue_stream(&mut *tx, rows, EnqueueOptions::new().priority(3))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        written,
        FanOut {
            inserted: 2_300,
            duplicates: 0
        }
    );
    assert_eq!(h.count_messages("conf.mail").await, 2_300);

    // A stream that fails after 1,500 messages.
    let failing = futures::stream::iter(10_000..11_500)
        .map(|n| Ok::<_, &'static str>(Mail { n }))
        .chain(futures::stream::once(async {
            Err("the source query broke")
        }));
    let mut tx = h.pool().begin().await.unwrap();
    let err = enqueue_stream(&mut *tx, failing, EnqueueOptions::new())
        .await
        .unwrap_err();
    tx.rollback().await.unwrap();
    assert!(
        matches!(
            &err,
            FanOutError::Source {
                error: "the source query broke",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.written(),
        FanOut {
            inserted: 1_000,
            duplicates: 0
        }
    );
    assert!(err.to_string().contains("the source query broke"), "{err}");
    assert_eq!(h.count_messages("conf.mail").await, 2_300);
}
