//! The inbox: a processed id recorded in the consumer's transaction commits or rolls back
//! with the handler's rows; a second record of the id says "seen"; two transactions racing
//! on one id cannot both record it; old ids are counted and pruned from the admin.

use std::time::Duration;

use outbox::{inbox::first_delivery, prelude::*, Error};

use super::harness::Harness;

pub async fn a_processed_id_commits_with_the_handlers_rows<H: Harness>() {
    let h = H::new().await;
    // Rolled back: neither the row nor the id stays, so the redelivery runs again.
    let mut tx = h.pool().begin().await.unwrap();
    assert!(first_delivery(&mut *tx, "billing", "msg-1").await.unwrap());
    H::insert_user(&mut tx, 1).await;
    tx.rollback().await.unwrap();
    assert_eq!(h.count_users().await, 0);

    let mut tx = h.pool().begin().await.unwrap();
    assert!(first_delivery(&mut *tx, "billing", "msg-1").await.unwrap());
    H::insert_user(&mut tx, 1).await;
    tx.commit().await.unwrap();

    // Committed: the redelivery is told, and another consumer still gets its first time.
    let mut tx = h.pool().begin().await.unwrap();
    assert!(!first_delivery(&mut *tx, "billing", "msg-1").await.unwrap());
    assert!(first_delivery(&mut *tx, "search", "msg-1").await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(h.count_users().await, 1);

    // Bad names are refused with the reason, before any statement.
    let mut conn = h.pool().acquire().await.unwrap();
    for (consumer, id) in [("", "x"), ("billing", ""), ("bil\nling", "x")] {
        let err = first_delivery(&mut *conn, consumer, id).await.unwrap_err();
        assert!(matches!(err, Error::Config(_)), "{err}");
        assert!(err.to_string().contains("1 to"), "{err}");
    }
    let long = "x".repeat(256);
    assert!(first_delivery(&mut *conn, "billing", &long).await.is_err());
}

pub async fn two_transactions_racing_on_one_id_record_it_once<H: Harness>() {
    let h = H::new().await;
    for (round, first_commits) in [(0, true), (1, false)] {
        let id = format!("race-{round}");
        let mut first = h.pool().begin().await.unwrap();
        assert!(first_delivery(&mut *first, "billing", &id).await.unwrap());
        let pool = h.pool().clone();
        let second_id = id.clone();
        let second = tokio::spawn(async move {
            let mut tx = pool.begin().await.unwrap();
            let fresh = first_delivery(&mut *tx, "billing", &second_id)
                .await
                .unwrap();
            tx.commit().await.unwrap();
            fresh
        });
        // The second waits for the first transaction to end.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !second.is_finished(),
            "{}: the second did not wait",
            H::NAME
        );
        if first_commits {
            first.commit().await.unwrap();
        } else {
            first.rollback().await.unwrap();
        }
        let fresh = tokio::time::timeout(Duration::from_secs(10), second)
            .await
            .expect("the second record ends once the first transaction has")
            .unwrap();
        // Committed first: the second was a redelivery. Rolled back: the second is the one.
        assert_eq!(fresh, !first_commits, "{}: round {round}", H::NAME);
    }
}

pub async fn old_processed_ids_are_counted_and_pruned<H: Harness>() {
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    for i in 0..1_500 {
        assert!(first_delivery(&mut *tx, "billing", &format!("m-{i}"))
            .await
            .unwrap());
    }
    assert!(first_delivery(&mut *tx, "search", "m-0").await.unwrap());
    tx.commit().await.unwrap();
    let admin = Admin::new(h.backend());
    let counts = admin.inbox().counts().await.unwrap();
    let seen: Vec<(&str, u64)> = counts
        .iter()
        .map(|c| (c.consumer.as_str(), c.ids))
        .collect();
    assert_eq!(seen, [("billing", 1_500), ("search", 1)]);
    assert!(counts[0].oldest <= counts[0].newest);
    // Nothing is a day old yet.
    assert_eq!(
        admin
            .inbox()
            .prune(Duration::from_secs(86_400))
            .await
            .unwrap(),
        0
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Everything is older than 10 ms: two batches of 1,000 and the rest.
    assert_eq!(
        admin
            .inbox()
            .prune(Duration::from_millis(10))
            .await
            .unwrap(),
        1_501
    );
    assert!(admin.inbox().counts().await.unwrap().is_empty());
    // A pruned id is new again.
    let mut conn = h.pool().acquire().await.unwrap();
    assert!(first_delivery(&mut *conn, "billing", "m-0").await.unwrap());
}
