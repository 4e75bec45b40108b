//! Dead letters: paging and counting by filter, purge and requeue by id, type, failure
//! time and their combinations ([`DeadLetterStore`]).

use super::{at, claim, ids, insert, message, settlement, PortHarness};
use crate::{
    clock::Now,
    enqueue::MessageId,
    enqueue::NewMessage,
    store::{DeadLetterFilter, DeadLetterStore, QueueStore, Requeued, Settle},
};

/// The two types the cases bury.
const A: &str = "port_dead_a";
/// The other type.
const B: &str = "port_dead_b";

/// Writes a message of `t` (with `key`), claims it and buries it at `failed_ms`; its id.
async fn bury_at<H: PortHarness>(
    h: &H,
    t: &'static str,
    key: Option<&str>,
    failed_ms: u64,
) -> MessageId {
    let m = NewMessage {
        idempotency_key: key.map(str::to_owned),
        ..message(t, failed_ms as u32)
    };
    let id = insert(h, &[m]).await.remove(0);
    let c = claim(h, t, "w1", 1, at(failed_ms)).await;
    assert_eq!(ids(&c), vec![id.clone()]);
    let bury = Settle::Bury {
        reason: format!("failed at {failed_ms}"),
    };
    let s = h
        .backend()
        .settle("w1", &[settlement(&c[0], bury)], Now::At(at(failed_ms)))
        .await
        .unwrap();
    assert_eq!(s.applied, 1);
    id
}

/// Five dead letters: a1 (+1s), b1 (+2s), a2 (+3s), a3 (+4s, key "k"), b2 (+5s).
struct Five {
    a1: MessageId,
    b1: MessageId,
    a2: MessageId,
    a3: MessageId,
    b2: MessageId,
}

/// Buries [`Five`].
async fn five<H: PortHarness>(h: &H) -> Five {
    Five {
        a1: bury_at(h, A, None, 1_000).await,
        b1: bury_at(h, B, None, 2_000).await,
        a2: bury_at(h, A, None, 3_000).await,
        a3: bury_at(h, A, Some("k"), 4_000).await,
        b2: bury_at(h, B, None, 5_000).await,
    }
}

/// The ids of a page of dead letters matching `filter`.
async fn page<H: PortHarness>(
    h: &H,
    filter: &DeadLetterFilter,
    limit: u32,
    offset: u64,
) -> Vec<MessageId> {
    let letters = h.backend().list_dead(filter, limit, offset).await.unwrap();
    letters.into_iter().map(|d| d.id).collect()
}

/// Lists are newest first and paged by limit and offset; lists and counts narrow by id,
/// by type, by failure time (strictly before) and by their combination.
pub async fn list_and_count_by_filters<H: PortHarness>(h: &H) {
    let f = five(h).await;
    let b = h.backend();
    let all = DeadLetterFilter::all();
    let newest_first = vec![
        f.b2.clone(),
        f.a3.clone(),
        f.a2.clone(),
        f.b1.clone(),
        f.a1.clone(),
    ];
    assert_eq!(page(h, &all, 10, 0).await, newest_first);
    assert_eq!(page(h, &all, 2, 1).await, newest_first[1..3]);
    assert_eq!(page(h, &all, 10, 4).await, newest_first[4..]);
    assert!(page(h, &all, 10, 5).await.is_empty());
    assert_eq!(b.count_dead(&all).await.unwrap(), 5);

    let type_a = DeadLetterFilter::type_tag(A);
    assert_eq!(
        page(h, &type_a, 10, 0).await,
        vec![f.a3.clone(), f.a2.clone(), f.a1.clone()]
    );
    assert_eq!(b.count_dead(&type_a).await.unwrap(), 3);

    let before = DeadLetterFilter::all().failed_before(at(3_000));
    assert_eq!(
        page(h, &before, 10, 0).await,
        vec![f.b1.clone(), f.a1.clone()],
        "strictly before: the one failed at +3s is not"
    );
    assert_eq!(b.count_dead(&before).await.unwrap(), 2);

    let a_before = DeadLetterFilter::type_tag(A).failed_before(at(3_000));
    assert_eq!(page(h, &a_before, 10, 0).await, vec![f.a1.clone()]);
    assert_eq!(b.count_dead(&a_before).await.unwrap(), 1);

    let one = DeadLetterFilter::id(f.a2.as_str());
    assert_eq!(page(h, &one, 10, 0).await, vec![f.a2.clone()]);
    assert_eq!(b.count_dead(&one).await.unwrap(), 1);
    let wrong_type = DeadLetterFilter {
        type_tag: Some(B.into()),
        ..DeadLetterFilter::id(f.a2.as_str())
    };
    assert!(page(h, &wrong_type, 10, 0).await.is_empty());
    assert_eq!(b.count_dead(&wrong_type).await.unwrap(), 0);

    let letter = &b
        .list_dead(&DeadLetterFilter::id(f.a3.as_str()), 1, 0)
        .await
        .unwrap()[0];
    assert_eq!(
        (letter.type_tag.as_str(), letter.idempotency_key.as_deref()),
        (A, Some("k"))
    );
    assert_eq!(letter.last_error, "failed at 4000");
    assert_eq!(letter.failed_at, at(4_000));
    assert_eq!(letter.payload, b"{\"n\":4000}");
}

/// Purge deletes exactly the matching dead letters and says how many: by id, by type and
/// failure time, by type, then all.
pub async fn purge_by_filters<H: PortHarness>(h: &H) {
    let f = five(h).await;
    let b = h.backend();
    assert_eq!(
        b.purge_dead(&DeadLetterFilter::id(f.a2.as_str()))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        b.purge_dead(&DeadLetterFilter::id(f.a2.as_str()))
            .await
            .unwrap(),
        0,
        "already gone"
    );
    let b_before = DeadLetterFilter::type_tag(B).failed_before(at(3_000));
    assert_eq!(b.purge_dead(&b_before).await.unwrap(), 1, "b1");
    assert_eq!(
        b.purge_dead(&DeadLetterFilter::type_tag(A)).await.unwrap(),
        2,
        "a1 and a3"
    );
    assert_eq!(
        page(h, &DeadLetterFilter::all(), 10, 0).await,
        vec![f.b2.clone()]
    );
    assert_eq!(b.purge_dead(&DeadLetterFilter::all()).await.unwrap(), 1);
    assert_eq!(b.count_dead(&DeadLetterFilter::all()).await.unwrap(), 0);
}

/// Requeue moves exactly the matching dead letters back to the queue, due at the given
/// time, attempts reset (the claim number and the attempt log carry on): by id, by type
/// and failure time, then all.
pub async fn requeue_by_filters<H: PortHarness>(h: &H) {
    let f = five(h).await;
    let b = h.backend();
    let now = at(10_000);
    let one = b
        .requeue_dead(&DeadLetterFilter::id(f.a1.as_str()), Now::At(now))
        .await
        .unwrap();
    assert_eq!(
        one,
        Requeued {
            requeued: 1,
            key_taken: 0
        }
    );
    assert!(
        claim(h, A, "w1", 10, at(9_999)).await.is_empty(),
        "due at the requeue's time"
    );
    let c = claim(h, A, "w1", 10, now).await;
    assert_eq!(ids(&c), vec![f.a1.clone()]);
    assert_eq!(
        (c[0].attempt, c[0].claim),
        (1, 2),
        "attempts reset, claims go on"
    );
    assert_eq!(c[0].due_at, now);
    let bury = Settle::Bury {
        reason: "again".into(),
    };
    b.settle("w1", &[settlement(&c[0], bury)], Now::At(now))
        .await
        .unwrap();
    let letter = &b
        .list_dead(&DeadLetterFilter::id(f.a1.as_str()), 1, 0)
        .await
        .unwrap()[0];
    let log: Vec<_> = letter
        .attempt_log
        .iter()
        .map(|a| (a.attempt, a.error.as_str()))
        .collect();
    assert_eq!(
        log,
        [(1, "failed at 1000"), (1, "again")],
        "the log goes on"
    );

    let b_before = DeadLetterFilter::type_tag(B).failed_before(at(3_000));
    assert_eq!(
        b.requeue_dead(&b_before, Now::At(now)).await.unwrap(),
        Requeued {
            requeued: 1,
            key_taken: 0
        }
    );
    assert_eq!(ids(&claim(h, B, "w1", 10, now).await), vec![f.b1.clone()]);
    assert_eq!(
        b.requeue_dead(&DeadLetterFilter::all(), Now::At(now))
            .await
            .unwrap(),
        Requeued {
            requeued: 4,
            key_taken: 0
        },
        "a1 (buried again), a2, a3, b2"
    );
    assert_eq!(b.count_dead(&DeadLetterFilter::all()).await.unwrap(), 0);
    let c = claim(h, A, "w1", 10, now).await;
    assert_eq!(c.len(), 3);
    assert!(c.iter().all(|c| c.attempt == 1));
}

/// A dead letter whose idempotency key a queued message of its type holds is left in the
/// dead letters and counted as `key_taken` (the same key on another type is no
/// conflict); once the key is free, it is requeued.
pub async fn requeue_skips_a_taken_key<H: PortHarness>(h: &H) {
    let taken = bury_at(h, A, Some("k"), 1_000).await;
    let free = bury_at(h, B, Some("k"), 2_000).await;
    let plain = bury_at(h, A, None, 3_000).await;
    let holder = NewMessage {
        idempotency_key: Some("k".into()),
        ..message(A, 99)
    };
    insert(h, std::slice::from_ref(&holder)).await;
    let b = h.backend();
    let now = at(10_000);
    assert_eq!(
        b.requeue_dead(&DeadLetterFilter::all(), Now::At(now))
            .await
            .unwrap(),
        Requeued {
            requeued: 2,
            key_taken: 1
        }
    );
    assert_eq!(
        page(h, &DeadLetterFilter::all(), 10, 0).await,
        vec![taken.clone()]
    );
    let c = claim(h, B, "w1", 10, now).await;
    assert_eq!(ids(&c), vec![free]);
    // The holder (due at t0) comes before the requeued one (due at +10s).
    let c = claim(h, A, "w1", 10, now).await;
    assert_eq!(ids(&c), vec![holder.id.clone(), plain]);
    let delivered = Settle::Done {
        keep: false,
        note: None,
    };
    b.settle("w1", &[settlement(&c[0], delivered)], Now::At(now))
        .await
        .unwrap();
    assert_eq!(
        b.requeue_dead(&DeadLetterFilter::type_tag(A), Now::At(now))
            .await
            .unwrap(),
        Requeued {
            requeued: 1,
            key_taken: 0
        }
    );
    assert_eq!(ids(&claim(h, A, "w1", 10, now).await), vec![taken]);
}
