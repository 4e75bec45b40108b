//! Claims: order, batching, due times, pauses, concurrent claimers and the counters a
//! claim moves ([`QueueStore::claim`]).

use std::collections::HashSet;

use super::{at, claim, claim_ordered, ids, insert, message, settlement, t0, PortHarness, LEASE};
use crate::{
    clock::{Due, Now},
    enqueue::NewMessage,
    store::{Claimed, PauseStore, QueueStore, Settle},
};

/// Claim order is priority (higher first), then due time (earlier first), then id (older
/// first), whatever order the rows were written in; a claim returns each message's
/// payload, attempts, priority and due time as enqueued, attempt 1 and claim 1; a message
/// not yet due is left.
pub async fn claim_order_is_priority_then_due_then_id<H: PortHarness>(h: &H) {
    let t = "port_order";
    // Made in this order, so their ids increase: a < d < e.
    let a = message(t, 1);
    let b = NewMessage {
        priority: 5,
        due: Due::At(at(2_000)),
        max_attempts: 7,
        ..message(t, 2)
    };
    let c = NewMessage {
        priority: 5,
        due: Due::At(at(1_000)),
        ..message(t, 3)
    };
    let d = message(t, 4);
    let e = message(t, 5);
    let later = NewMessage {
        priority: 9,
        due: Due::At(at(5_000)),
        ..message(t, 6)
    };
    // Written in an order that matches none of the keys.
    insert(
        h,
        &[
            e.clone(),
            later.clone(),
            a.clone(),
            b.clone(),
            d.clone(),
            c.clone(),
        ],
    )
    .await;

    let claimed = claim(h, t, "w1", 10, at(3_000)).await;
    // Written at the database's time: read back within a minute of it, then set aside.
    let now = std::time::SystemTime::now();
    for c in &claimed {
        let age = now.duration_since(c.enqueued_at).unwrap_or_default();
        assert!(
            age.as_secs() < 60,
            "{:?} is its enqueue time",
            c.enqueued_at
        );
    }
    let claimed: Vec<Claimed> = claimed
        .into_iter()
        .map(|c| Claimed {
            enqueued_at: t0(),
            ..c
        })
        .collect();
    let expect = |m: &NewMessage, due_ms: u64| Claimed {
        id: m.id.clone(),
        payload: m.payload.clone(),
        attempt: 1,
        max_attempts: m.max_attempts,
        priority: i32::from(m.priority),
        due_at: at(due_ms),
        claim: 1,
        group: None,
        enqueued_at: t0(),
    };
    assert_eq!(
        claimed,
        vec![
            expect(&c, 1_000),
            expect(&b, 2_000),
            expect(&a, 0),
            expect(&d, 0),
            expect(&e, 0),
        ],
        "priority desc, due asc, id asc; the message due at +5s is not claimed at +3s"
    );
}

/// A claim returns at most `limit` messages, the first ones in claim order; the next
/// claim continues where it stopped, and an empty queue gives an empty claim.
pub async fn claim_respects_the_limit<H: PortHarness>(h: &H) {
    let t = "port_limit";
    let rows: Vec<_> = (0..5).map(|n| message(t, n)).collect();
    let all = insert(h, &rows).await;
    let first = claim(h, t, "w1", 2, t0()).await;
    assert_eq!(ids(&first), all[0..2], "the first two");
    let second = claim(h, t, "w1", 2, t0()).await;
    assert_eq!(ids(&second), all[2..4], "the next two");
    let third = claim(h, t, "w1", 2, t0()).await;
    assert_eq!(ids(&third), all[4..5], "the last one");
    assert!(claim(h, t, "w1", 2, t0()).await.is_empty(), "nothing left");
}

/// A message is claimable from its due time on (due at or before `now`), not a
/// millisecond earlier, and only by a claim of its own type.
pub async fn claim_takes_only_due_messages_of_its_type<H: PortHarness>(h: &H) {
    let t = "port_due";
    let m = NewMessage {
        due: Due::At(at(1_000)),
        ..message(t, 1)
    };
    let other = message("port_due_other", 2);
    insert(h, &[m.clone(), other.clone()]).await;
    assert!(
        claim(h, t, "w1", 10, at(999)).await.is_empty(),
        "not due 1 ms before its due time (and the other type's message is not this type's)"
    );
    let claimed = claim(h, t, "w1", 10, at(1_000)).await;
    assert_eq!(ids(&claimed), vec![m.id.clone()], "due at its due time");
    assert_eq!(claimed[0].due_at, at(1_000));
    let claimed = claim(h, "port_due_other", "w1", 10, at(1_000)).await;
    assert_eq!(ids(&claimed), vec![other.id], "the other type's own claim");
}

/// A paused type is not claimed (other types are); once resumed it is. `resume` says
/// whether the type was paused, and `paused` lists it with its reason and time.
pub async fn paused_type_is_not_claimed<H: PortHarness>(h: &H) {
    let (t, u) = ("port_paused", "port_running");
    let m = message(t, 1);
    let n = message(u, 2);
    insert(h, &[m.clone(), n.clone()]).await;
    let b = h.backend();
    b.pause(t, "maintenance", Now::At(at(5))).await.unwrap();
    b.pause(t, "maintenance", Now::At(at(6))).await.unwrap();
    let paused = b.paused().await.unwrap();
    assert_eq!(paused.len(), 1, "pausing twice keeps one entry");
    assert_eq!(
        (paused[0].type_tag.as_str(), paused[0].reason.as_str()),
        (t, "maintenance")
    );
    assert_eq!(paused[0].paused_at, at(5), "the first pause's time");
    assert!(claim(h, t, "w1", 10, at(10)).await.is_empty(), "paused");
    assert_eq!(ids(&claim(h, u, "w1", 10, at(10)).await), vec![n.id]);
    assert!(b.resume(t).await.unwrap(), "it was paused");
    assert!(!b.resume(t).await.unwrap(), "no longer paused");
    assert!(b.paused().await.unwrap().is_empty());
    assert_eq!(ids(&claim(h, t, "w1", 10, at(10)).await), vec![m.id]);
}

/// Claimers running at once never get the same message, and together they get every
/// message exactly once.
pub async fn concurrent_claimers_never_share_a_message<H: PortHarness>(h: &H) {
    let t = "port_concurrent";
    let rows: Vec<_> = (0..60).map(|n| message(t, n)).collect();
    let all: HashSet<_> = insert(h, &rows).await.into_iter().collect();
    let drain = |owner: &'static str| async move {
        let mut got = Vec::new();
        loop {
            let batch = claim(h, t, owner, 4, t0()).await;
            if batch.is_empty() {
                return got;
            }
            assert!(batch.iter().all(|c| c.attempt == 1 && c.claim == 1));
            got.extend(ids(&batch));
        }
    };
    let (w1, w2, w3) = futures::join!(drain("w1"), drain("w2"), drain("w3"));
    let total = w1.len() + w2.len() + w3.len();
    let union: HashSet<_> = w1.into_iter().chain(w2).chain(w3).collect();
    assert_eq!(union.len(), total, "no message was claimed twice");
    assert_eq!(union, all, "every message was claimed");
}

/// Each claim counts an attempt and a claim; a release or a snooze gives the attempt back
/// but never the claim number, a failed retry and an expired lease keep both.
pub async fn claim_counts_attempts_and_claims<H: PortHarness>(h: &H) {
    let t = "port_counters";
    let id = insert(h, &[message(t, 1)]).await.remove(0);
    let b = h.backend();
    let claim_one = |ms: u64, expect: (u32, u32)| {
        let id = id.clone();
        async move {
            let c = claim(h, t, "w1", 1, at(ms)).await;
            assert_eq!(ids(&c), vec![id]);
            assert_eq!((c[0].attempt, c[0].claim), expect, "(attempt, claim)");
            (c.into_iter().next().unwrap(), at(ms))
        }
    };

    let (c, when) = claim_one(10, (1, 1)).await;
    let s = b
        .settle("w1", &[settlement(&c, Settle::Release)], Now::At(when))
        .await
        .unwrap();
    assert_eq!(s.applied, 1);
    let (c, when) = claim_one(20, (1, 2)).await;
    let snooze = Settle::Retry {
        due: Due::At(when),
        error: "snoozed".into(),
        give_back_attempt: true,
    };
    b.settle("w1", &[settlement(&c, snooze)], Now::At(when))
        .await
        .unwrap();
    let (c, when) = claim_one(30, (1, 3)).await;
    let fail = Settle::Retry {
        due: Due::At(when),
        error: "failed".into(),
        give_back_attempt: false,
    };
    b.settle("w1", &[settlement(&c, fail)], Now::At(when))
        .await
        .unwrap();
    let (_, when) = claim_one(40, (2, 4)).await;
    // The lease runs out: rescued with the attempt counted.
    let expired = when + LEASE + std::time::Duration::from_millis(1);
    assert_eq!(b.rescue_expired(&[t], Now::At(expired)).await.unwrap(), 1);
    let c = claim(h, t, "w1", 1, expired).await;
    assert_eq!((c[0].attempt, c[0].claim), (3, 5), "(attempt, claim)");
}

/// A message of `t` numbered `n` with ordering key `key`.
fn ordered(t: &'static str, n: u32, key: &str) -> NewMessage {
    NewMessage {
        order_key: Some(key.to_owned()),
        ..message(t, n)
    }
}

/// Order per key: only the oldest message of a type and key is claimed while it is queued,
/// running, retrying or a dead letter; other keys, unkeyed messages and the same key of
/// another type are not held; once the oldest is delivered (or its dead letter purged), the
/// next one of its key is claimed.
pub async fn a_key_holds_its_later_messages_until_the_first_is_finished<H: PortHarness>(h: &H) {
    use crate::store::{DeadLetterFilter, DeadLetterStore};
    let t = "port_ordered";
    let other = "port_ordered_other";
    let rows = [
        ordered(t, 1, "a"),
        ordered(t, 2, "a"),
        ordered(t, 3, "a"),
        ordered(t, 4, "b"),
        message(t, 5),
        ordered(other, 6, "a"),
    ];
    let made = insert(h, &rows).await;
    let b = h.backend();

    let first = claim_ordered(h, t, "w1", 10, at(0)).await;
    assert_eq!(
        ids(&first),
        vec![made[0].clone(), made[3].clone(), made[4].clone()],
        "the first of `a`, the first of `b`, the unkeyed one"
    );
    let elsewhere = claim_ordered(h, other, "w1", 10, at(0)).await;
    assert_eq!(elsewhere.len(), 1, "another type's key `a` is its own");
    // While the first of `a` runs, nothing more of `a`.
    assert!(claim_ordered(h, t, "w2", 10, at(0)).await.is_empty());

    // It fails and waits for a retry: it still holds `a`.
    let retry = Settle::Retry {
        due: Due::At(at(60_000)),
        error: "503".into(),
        give_back_attempt: false,
    };
    let done = Settle::Done {
        keep: false,
        note: None,
    };
    let settled = b
        .settle(
            "w1",
            &[
                settlement(&first[0], retry),
                settlement(&first[1], done.clone()),
                settlement(&first[2], done.clone()),
            ],
            Now::At(at(10)),
        )
        .await
        .unwrap();
    assert_eq!(settled.applied, 3);
    assert!(
        claim_ordered(h, t, "w2", 10, at(20)).await.is_empty(),
        "a retrying message holds its key"
    );
    use crate::store::{HeldBy, LiveMessageStore};
    let held = b.held_keys(t, 100).await.unwrap();
    assert_eq!(held.len(), 1, "only `a` is held: {held:?}");
    assert_eq!(
        (held[0].key.as_str(), held[0].message_id.as_str()),
        ("a", made[0].as_str())
    );
    assert_eq!(held[0].held_by, HeldBy::Retrying);
    assert_eq!((held[0].last_error.as_str(), held[0].waiting), ("503", 2));
    assert!(b.held_keys(other, 100).await.unwrap().is_empty());

    // Retried and given up: its dead letter holds `a` too.
    let again = claim_ordered(h, t, "w3", 10, at(60_000)).await;
    assert_eq!(ids(&again), vec![made[0].clone()]);
    let bury = Settle::Bury {
        reason: "gave up".into(),
    };
    b.settle("w3", &[settlement(&again[0], bury)], Now::At(at(60_010)))
        .await
        .unwrap();
    assert!(
        claim_ordered(h, t, "w2", 10, at(60_020)).await.is_empty(),
        "a dead letter holds its key"
    );
    let held = b.held_keys(t, 100).await.unwrap();
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        (
            held[0].held_by,
            held[0].message_id.as_str(),
            held[0].waiting
        ),
        (HeldBy::Dead, made[0].as_str(), 2)
    );
    // Skipped by purging it: the second of `a` goes, and only it.
    let purged = b
        .purge_dead(&DeadLetterFilter {
            id: Some(made[0].to_string()),
            ..DeadLetterFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert!(b.held_keys(t, 100).await.unwrap().is_empty());
    let second = claim_ordered(h, t, "w2", 10, at(60_030)).await;
    assert_eq!(ids(&second), vec![made[1].clone()]);
    b.settle("w2", &[settlement(&second[0], done)], Now::At(at(60_040)))
        .await
        .unwrap();
    let third = claim_ordered(h, t, "w2", 10, at(60_050)).await;
    assert_eq!(ids(&third), vec![made[2].clone()]);
}
