//! Settlements: what each kind does to a claimed message, and that a settlement only
//! applies while the message is leased to its worker under its claim
//! ([`QueueStore::settle`]).

use std::time::Duration;

use super::{at, claim, counts, ids, insert, message, settlement, t0, PortHarness, LEASE};
use crate::{
    clock::{Due, Now},
    enqueue::Enqueued,
    enqueue::NewMessage,
    store::{
        DeadLetterFilter, DeadLetterStore, FailedAttempt, Fenced, QueueStore, Settle, Settled,
    },
};

/// A settlement kind that is not Done{keep: false}, for the cases that need every kind.
fn every_kind() -> [Settle; 5] {
    [
        Settle::Done {
            keep: false,
            note: None,
        },
        Settle::Done {
            keep: true,
            note: Some("kept".into()),
        },
        Settle::Retry {
            due: Due::After(Duration::from_secs(60)),
            error: "failed".into(),
            give_back_attempt: false,
        },
        Settle::Release,
        Settle::Bury {
            reason: "given up".into(),
        },
    ]
}

/// Done without keep deletes the message: nothing left to claim or count, and its
/// idempotency key is free again.
pub async fn done_without_keep_deletes<H: PortHarness>(h: &H) {
    let t = "port_done_delete";
    let m = NewMessage {
        idempotency_key: Some("k1".into()),
        ..message(t, 1)
    };
    insert(h, &[m]).await;
    let c = claim(h, t, "w1", 10, at(10)).await;
    let done = Settle::Done {
        keep: false,
        note: None,
    };
    let s = h
        .backend()
        .settle("w1", &[settlement(&c[0], done)], Now::At(at(20)))
        .await
        .unwrap();
    assert_eq!(
        s,
        Settled {
            applied: 1,
            fenced: vec![]
        }
    );
    let n = counts(h, t, at(30)).await;
    assert_eq!((n.pending, n.running, n.done, n.dead), (0, 0, 0, 0));
    assert!(claim(h, t, "w1", 10, at(LEASE.as_millis() as u64 * 3))
        .await
        .is_empty());
    let again = NewMessage {
        idempotency_key: Some("k1".into()),
        ..message(t, 2)
    };
    insert(h, &[again]).await; // asserts it is new: the key was freed
}

/// Done with keep leaves a done row: counted as done, not claimable, not rescued, and its
/// idempotency key stays taken.
pub async fn done_with_keep_keeps_a_done_row<H: PortHarness>(h: &H) {
    let t = "port_done_keep";
    let m = NewMessage {
        idempotency_key: Some("k1".into()),
        ..message(t, 1)
    };
    insert(h, std::slice::from_ref(&m)).await;
    let c = claim(h, t, "w1", 10, at(10)).await;
    let done = Settle::Done {
        keep: true,
        note: Some("orphan: the user is gone".into()),
    };
    let b = h.backend();
    let s = b
        .settle("w1", &[settlement(&c[0], done)], Now::At(at(20)))
        .await
        .unwrap();
    assert_eq!(
        s,
        Settled {
            applied: 1,
            fenced: vec![]
        }
    );
    let n = counts(h, t, at(30)).await;
    assert_eq!(
        (
            n.pending,
            n.scheduled,
            n.running,
            n.retrying,
            n.done,
            n.dead
        ),
        (0, 0, 0, 0, 1, 0)
    );
    let much_later = at(10) + LEASE * 10;
    assert_eq!(
        b.rescue_expired(&[t], Now::At(much_later)).await.unwrap(),
        0
    );
    assert!(claim(h, t, "w1", 10, much_later).await.is_empty());
    let again = NewMessage {
        idempotency_key: Some("k1".into()),
        ..message(t, 2)
    };
    let written = h.insert(&[again]).await.unwrap();
    assert_eq!(
        written,
        vec![Enqueued::Duplicate { existing: m.id }],
        "the done row keeps its key"
    );
}

/// Retry with `Due::After(d)` puts the message back due `d` after the settlement's time:
/// not claimable a millisecond before, claimable then (a new attempt), and counted as
/// retrying meanwhile.
pub async fn retry_after_a_delay<H: PortHarness>(h: &H) {
    let t = "port_retry_after";
    let id = insert(h, &[message(t, 1)]).await.remove(0);
    let c = claim(h, t, "w1", 10, at(10)).await;
    let retry = Settle::Retry {
        due: Due::After(Duration::from_secs(10)),
        error: "temporary".into(),
        give_back_attempt: false,
    };
    let s = h
        .backend()
        .settle("w1", &[settlement(&c[0], retry)], Now::At(at(100)))
        .await
        .unwrap();
    assert_eq!(s.applied, 1);
    let n = counts(h, t, at(200)).await;
    assert_eq!((n.pending, n.running, n.retrying), (0, 0, 1));
    assert_eq!(n.oldest_due, None, "nothing due yet");
    assert!(
        claim(h, t, "w1", 10, at(10_099)).await.is_empty(),
        "due at +10.1s"
    );
    let c = claim(h, t, "w1", 10, at(10_100)).await;
    assert_eq!(ids(&c), vec![id]);
    assert_eq!((c[0].attempt, c[0].claim), (2, 2));
    assert_eq!(c[0].due_at, at(10_100));
}

/// Retry with `Due::At(t)` makes the message due at `t`; a time already past means due at
/// the settlement's time.
pub async fn retry_at_a_time<H: PortHarness>(h: &H) {
    let t = "port_retry_at";
    let id = insert(h, &[message(t, 1)]).await.remove(0);
    let b = h.backend();
    let c = claim(h, t, "w1", 10, at(10)).await;
    let retry = Settle::Retry {
        due: Due::At(at(7_000)),
        error: "later".into(),
        give_back_attempt: false,
    };
    b.settle("w1", &[settlement(&c[0], retry)], Now::At(at(20)))
        .await
        .unwrap();
    assert!(claim(h, t, "w1", 10, at(6_999)).await.is_empty());
    let c = claim(h, t, "w1", 10, at(7_000)).await;
    assert_eq!(ids(&c), vec![id.clone()]);
    assert_eq!(c[0].due_at, at(7_000));

    let past = Settle::Retry {
        due: Due::At(t0()),
        error: "at once".into(),
        give_back_attempt: false,
    };
    b.settle("w1", &[settlement(&c[0], past)], Now::At(at(8_000)))
        .await
        .unwrap();
    assert!(claim(h, t, "w1", 10, at(7_999)).await.is_empty());
    let c = claim(h, t, "w1", 10, at(8_000)).await;
    assert_eq!(ids(&c), vec![id]);
    assert_eq!(
        c[0].due_at,
        at(8_000),
        "a past time means the settlement's time"
    );
}

/// A retry that gives its attempt back (a snooze) logs nothing; a failed retry logs its
/// attempt, and a bury ends the log: the dead letter shows exactly those entries, with
/// the attempt numbers, times and errors.
pub async fn given_back_attempts_are_not_logged<H: PortHarness>(h: &H) {
    let t = "port_attempt_log";
    let m = NewMessage {
        max_attempts: 5,
        ..message(t, 1)
    };
    let id = insert(h, &[m]).await.remove(0);
    let b = h.backend();
    let settle = |c, s, ms| async move {
        let done = b
            .settle("w1", &[settlement(c, s)], Now::At(at(ms)))
            .await
            .unwrap();
        assert_eq!(done.applied, 1);
    };

    let c = claim(h, t, "w1", 1, at(100)).await;
    let snooze = Settle::Retry {
        due: Due::At(at(200)),
        error: "snoozed".into(),
        give_back_attempt: true,
    };
    settle(&c[0], snooze, 150).await;
    let c = claim(h, t, "w1", 1, at(200)).await;
    assert_eq!(c[0].attempt, 1, "the snooze gave its attempt back");
    let fail = Settle::Retry {
        due: Due::At(at(300)),
        error: "e1".into(),
        give_back_attempt: false,
    };
    settle(&c[0], fail, 250).await;
    let c = claim(h, t, "w1", 1, at(300)).await;
    assert_eq!(c[0].attempt, 2);
    let bury = Settle::Bury {
        reason: "gave up".into(),
    };
    settle(&c[0], bury, 350).await;

    let dead = b.list_dead(&DeadLetterFilter::all(), 10, 0).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id, id);
    assert_eq!(dead[0].attempts, 2);
    assert_eq!(
        dead[0].attempt_log,
        vec![
            FailedAttempt {
                attempt: 1,
                at: at(250),
                error: "e1".into()
            },
            FailedAttempt {
                attempt: 2,
                at: at(350),
                error: "gave up".into()
            },
        ]
    );
}

/// Release puts the message back as if never claimed: its due time and place in line are
/// kept and its attempt is given back (the claim number is not).
pub async fn release_keeps_due_time_and_place<H: PortHarness>(h: &H) {
    let t = "port_release";
    let first = message(t, 1);
    let second = NewMessage {
        due: Due::At(at(1)),
        ..message(t, 2)
    };
    insert(h, &[second.clone(), first.clone()]).await;
    let b = h.backend();
    let c = claim(h, t, "w1", 1, at(10)).await;
    assert_eq!(ids(&c), vec![first.id.clone()]);
    let s = b
        .settle(
            "w1",
            &[settlement(&c[0], Settle::Release)],
            Now::At(at(500)),
        )
        .await
        .unwrap();
    assert_eq!(s.applied, 1);
    let n = counts(h, t, at(600)).await;
    assert_eq!(
        (n.pending, n.running, n.retrying),
        (2, 0, 0),
        "pending again"
    );
    assert_eq!(n.oldest_due, Some(t0()), "the released message's due time");
    let c = claim(h, t, "w1", 10, at(600)).await;
    assert_eq!(ids(&c), vec![first.id, second.id], "still first in line");
    assert_eq!(c[0].due_at, t0(), "due time kept");
    assert_eq!((c[0].attempt, c[0].claim), (1, 2));
}

/// Bury moves the message to the dead letters with its reason, at the settlement's time,
/// with its type, payload, attempts and key; it is no longer in the queue.
pub async fn bury_moves_to_the_dead_letters<H: PortHarness>(h: &H) {
    let t = "port_bury";
    let m = NewMessage {
        max_attempts: 4,
        idempotency_key: Some("order-7".into()),
        ..message(t, 7)
    };
    insert(h, std::slice::from_ref(&m)).await;
    let b = h.backend();
    let c = claim(h, t, "w1", 10, at(10)).await;
    let bury = Settle::Bury {
        reason: "bad address".into(),
    };
    let s = b
        .settle("w1", &[settlement(&c[0], bury)], Now::At(at(20)))
        .await
        .unwrap();
    assert_eq!(
        s,
        Settled {
            applied: 1,
            fenced: vec![]
        }
    );
    let dead = b.list_dead(&DeadLetterFilter::all(), 10, 0).await.unwrap();
    assert_eq!(dead.len(), 1);
    let d = &dead[0];
    assert_eq!(d.id, m.id);
    assert_eq!(d.type_tag, t);
    assert_eq!(d.payload, m.payload);
    assert_eq!((d.attempts, d.max_attempts), (1, 4));
    assert_eq!(d.idempotency_key.as_deref(), Some("order-7"));
    assert_eq!(d.last_error, "bad address");
    assert_eq!(d.failed_at, at(20));
    assert!(d.enqueued_at.is_some());
    assert_eq!(b.count_dead(&DeadLetterFilter::all()).await.unwrap(), 1);
    let n = counts(h, t, at(30)).await;
    assert_eq!((n.pending, n.running, n.done, n.dead), (0, 0, 0, 1));
    assert!(claim(h, t, "w1", 10, at(10) + LEASE * 2).await.is_empty());
}

/// Every kind of settlement by a stale claim is fenced and changes nothing: the previous
/// owner after its lease expired and another worker claimed the message, the new owner
/// naming the old claim, the old owner naming the new claim, and a settlement of a
/// message already settled. The current owner's settlements then apply.
pub async fn stale_claims_are_fenced<H: PortHarness>(h: &H) {
    let t = "port_fenced";
    let rows: Vec<_> = (0..5).map(|n| message(t, n)).collect();
    insert(h, &rows).await;
    let b = h.backend();
    let old = claim(h, t, "w1", 10, at(0)).await;
    assert_eq!(old.len(), 5);
    let expired = at(0) + LEASE + Duration::from_millis(1);
    assert_eq!(b.rescue_expired(&[t], Now::At(expired)).await.unwrap(), 5);
    let new = claim(h, t, "w2", 10, expired).await;
    assert_eq!(ids(&new), ids(&old));
    assert!(new.iter().all(|c| c.claim == 2));

    let now = Now::At(expired + Duration::from_millis(10));
    let kinds = every_kind();
    let batch = |cs: &[crate::store::Claimed], claim_of: &dyn Fn(usize) -> u32| {
        cs.iter()
            .zip(kinds.iter())
            .enumerate()
            .map(|(i, (c, k))| crate::store::Settlement {
                claim: claim_of(i),
                ..settlement(c, k.clone())
            })
            .collect::<Vec<_>>()
    };
    let all_fenced = |batch: &[crate::store::Settlement]| Settled {
        applied: 0,
        fenced: batch.iter().map(Fenced::of).collect(),
    };
    let old_owner_old_claim = batch(&old, &|_| 1);
    assert_eq!(
        b.settle("w1", &old_owner_old_claim, now).await.unwrap(),
        all_fenced(&old_owner_old_claim),
        "the old owner's settlements"
    );
    let new_owner_old_claim = batch(&new, &|_| 1);
    assert_eq!(
        b.settle("w2", &new_owner_old_claim, now).await.unwrap(),
        all_fenced(&new_owner_old_claim),
        "the new owner naming the old claim"
    );
    let old_owner_new_claim = batch(&new, &|_| 2);
    assert_eq!(
        b.settle("w1", &old_owner_new_claim, now).await.unwrap(),
        all_fenced(&old_owner_new_claim),
        "another owner naming the current claim"
    );
    let n = counts(h, t, expired).await;
    assert_eq!(
        (n.pending, n.running, n.retrying, n.done, n.dead),
        (0, 5, 0, 0, 0),
        "nothing changed"
    );
    assert_eq!(
        b.settle("w2", &batch(&new, &|_| 2), now).await.unwrap(),
        Settled {
            applied: 5,
            fenced: vec![]
        },
        "the current owner's settlements apply"
    );
    assert_eq!(
        b.settle("w2", &batch(&new, &|_| 2), now).await.unwrap(),
        all_fenced(&batch(&new, &|_| 2)),
        "a settlement of a settled message"
    );
    assert_eq!(
        b.count_dead(&DeadLetterFilter::all()).await.unwrap(),
        1,
        "only the current owner's bury wrote a dead letter"
    );
}

/// A batch mixing every kind, a stale claim and an unknown message counts exactly what
/// applied and what was fenced, and each message ends where its settlement says.
pub async fn mixed_batch_counts_exactly<H: PortHarness>(h: &H) {
    let t = "port_mixed";
    let rows: Vec<_> = (0..6).map(|n| message(t, n)).collect();
    insert(h, &rows).await;
    let b = h.backend();
    let c = claim(h, t, "w1", 10, at(10)).await;
    assert_eq!(c.len(), 6);
    let mut batch: Vec<_> = c
        .iter()
        .zip(every_kind())
        .map(|(c, k)| settlement(c, k))
        .collect();
    batch.push(crate::store::Settlement {
        claim: c[5].claim + 1,
        ..settlement(&c[5], Settle::Release)
    });
    batch.push(crate::store::Settlement {
        id: crate::enqueue::MessageId::from_string("01J0000000000000000NOSUCH0"),
        ..settlement(&c[5], Settle::Release)
    });
    let s = b.settle("w1", &batch, Now::At(at(20))).await.unwrap();
    assert_eq!(
        s,
        Settled {
            applied: 5,
            fenced: vec![Fenced::of(&batch[5]), Fenced::of(&batch[6])],
        },
        "the stale claim and the unknown message, by message and claim"
    );
    let n = counts(h, t, at(30)).await;
    assert_eq!(
        (
            n.pending,
            n.scheduled,
            n.running,
            n.retrying,
            n.done,
            n.dead
        ),
        (1, 0, 1, 1, 1, 1),
        "released, still held (stale claim), retrying, done, dead; the delivered one is gone"
    );
}

/// A batch in which some settlements are fenced (their messages were rescued and claimed
/// by another worker) applies the others and names exactly the fenced ones, each by
/// message and claim: every kind, on both sides. The fenced messages stay as the other
/// worker holds them; a fenced bury writes no dead letter.
pub async fn a_partly_fenced_batch_names_the_fenced<H: PortHarness>(h: &H) {
    let t = "port_partly_fenced";
    let rows: Vec<_> = (0..10).map(|n| message(t, n)).collect();
    insert(h, &rows).await;
    let b = h.backend();
    // w1 claims the first five; they expire and w2 takes them over.
    let taken = claim(h, t, "w1", 5, at(0)).await;
    let expired = at(0) + LEASE + Duration::from_millis(1);
    assert_eq!(b.rescue_expired(&[t], Now::At(expired)).await.unwrap(), 5);
    let over = claim(h, t, "w2", 5, expired).await;
    assert_eq!(ids(&over), ids(&taken));
    // w1 claims the other five and settles all ten, each kind twice: once stale, once held.
    let held = claim(h, t, "w1", 10, expired).await;
    assert_eq!(held.len(), 5);
    let mut batch = Vec::new();
    for (i, kind) in every_kind().into_iter().enumerate() {
        batch.push(settlement(&held[i], kind.clone()));
        batch.push(settlement(&taken[i], kind));
    }
    let now = Now::At(expired + Duration::from_millis(10));
    let s = b.settle("w1", &batch, now).await.unwrap();
    let stale: Vec<_> = batch.iter().skip(1).step_by(2).map(Fenced::of).collect();
    assert_eq!(
        s,
        Settled {
            applied: 5,
            fenced: stale
        },
        "the five held applied; the five taken over are named, in the batch's order"
    );
    let n = counts(h, t, now.or_system()).await;
    assert_eq!(
        (n.pending, n.running, n.retrying, n.done, n.dead),
        (1, 5, 1, 1, 1),
        "the held five: released, retrying, done, dead, deleted; the taken five: still w2's"
    );
    let dead = b.list_dead(&DeadLetterFilter::all(), 10, 0).await.unwrap();
    assert_eq!(
        dead.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        vec![held[4].id.clone()],
        "only the held message's bury wrote a dead letter"
    );
    // w2 still holds its five under claim 2: its own settlements apply.
    let theirs: Vec<_> = over
        .iter()
        .map(|c| {
            let done = Settle::Done {
                keep: false,
                note: None,
            };
            settlement(c, done)
        })
        .collect();
    assert_eq!(
        b.settle("w2", &theirs, now).await.unwrap(),
        Settled {
            applied: 5,
            fenced: vec![]
        }
    );
}

/// A bury whose message was taken over writes no dead letter and leaves the message with
/// its new holder, alone in its batch or beside buries that apply.
pub async fn a_fenced_bury_writes_no_dead_letter<H: PortHarness>(h: &H) {
    let t = "port_fenced_bury";
    let rows: Vec<_> = (0..3).map(|n| message(t, n)).collect();
    insert(h, &rows).await;
    let b = h.backend();
    let stale = claim(h, t, "w1", 2, at(0)).await;
    let expired = at(0) + LEASE + Duration::from_millis(1);
    assert_eq!(b.rescue_expired(&[t], Now::At(expired)).await.unwrap(), 2);
    let over = claim(h, t, "w2", 2, expired).await;
    assert_eq!(ids(&over), ids(&stale));
    let bury = || Settle::Bury {
        reason: "gave up".into(),
    };
    let now = Now::At(expired + Duration::from_millis(10));
    let alone = [settlement(&stale[0], bury())];
    assert_eq!(
        b.settle("w1", &alone, now).await.unwrap(),
        Settled {
            applied: 0,
            fenced: vec![Fenced::of(&alone[0])]
        }
    );
    assert_eq!(b.count_dead(&DeadLetterFilter::all()).await.unwrap(), 0);
    let held = claim(h, t, "w1", 1, expired).await;
    let beside = [
        settlement(&stale[1], bury()),
        settlement(&held[0], bury()),
        settlement(&stale[0], bury()),
    ];
    assert_eq!(
        b.settle("w1", &beside, now).await.unwrap(),
        Settled {
            applied: 1,
            fenced: vec![Fenced::of(&beside[0]), Fenced::of(&beside[2])]
        }
    );
    let dead = b.list_dead(&DeadLetterFilter::all(), 10, 0).await.unwrap();
    assert_eq!(
        dead.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        vec![held[0].id.clone()],
        "only the held message is dead"
    );
    let n = counts(h, t, now.or_system()).await;
    assert_eq!((n.running, n.dead), (2, 1), "w2 still holds its two");
}

/// The attempt log keeps the last [`FailedAttempt::LOG_LIMIT`] entries: after more failed
/// attempts than that and a bury, the oldest entries are gone and the newest is the bury.
pub async fn attempt_log_keeps_the_last_entries<H: PortHarness>(h: &H) {
    let t = "port_log_limit";
    let m = NewMessage {
        max_attempts: 100,
        ..message(t, 1)
    };
    insert(h, &[m]).await;
    let b = h.backend();
    let failures = FailedAttempt::LOG_LIMIT as u64 + 2;
    for i in 0..failures {
        let c = claim(h, t, "w1", 1, at(i * 10)).await;
        assert_eq!(c[0].attempt as u64, i + 1);
        let fail = Settle::Retry {
            due: Due::At(at(i * 10 + 10)),
            error: format!("e{}", i + 1),
            give_back_attempt: false,
        };
        let s = b
            .settle("w1", &[settlement(&c[0], fail)], Now::At(at(i * 10 + 5)))
            .await
            .unwrap();
        assert_eq!(s.applied, 1);
    }
    let c = claim(h, t, "w1", 1, at(failures * 10)).await;
    let bury = Settle::Bury {
        reason: "last".into(),
    };
    b.settle("w1", &[settlement(&c[0], bury)], Now::At(at(failures * 10)))
        .await
        .unwrap();
    let dead = b.list_dead(&DeadLetterFilter::all(), 1, 0).await.unwrap();
    let log = &dead[0].attempt_log;
    assert_eq!(log.len(), FailedAttempt::LOG_LIMIT);
    let first_kept = failures + 1 - FailedAttempt::LOG_LIMIT as u64 + 1;
    assert_eq!(
        (log[0].attempt as u64, log[0].error.clone(), log[0].at),
        (
            first_kept,
            format!("e{first_kept}"),
            at((first_kept - 1) * 10 + 5)
        ),
        "the oldest entries went first"
    );
    let last = log.last().unwrap();
    assert_eq!(
        (last.attempt as u64, last.error.as_str()),
        (failures + 1, "last")
    );
}

/// After a try of a batch failed with its outcome unknown, `applied_before` tells which of
/// its settlements that try applied: every kind settled under its claim is found (a
/// delete or a bury by the message gone from the queue, the others by the state they
/// left under the same claim); a settlement whose message was rescued and claimed again,
/// or only rescued (back in the queue with the rescue's error), is not.
pub async fn applied_before_finds_what_a_lost_commit_applied<H: PortHarness>(h: &H) {
    let t = "port_applied_before";
    let rows: Vec<_> = (0..7).map(|n| message(t, n)).collect();
    insert(h, &rows).await;
    let b = h.backend();
    let c = claim(h, t, "w1", 10, at(0)).await;
    assert_eq!(c.len(), 7);
    let mut kinds: Vec<Settle> = every_kind().into();
    kinds.push(Settle::Suppressed {
        reason: "suppressed: bounced".into(),
    });
    let applied: Vec<_> = c
        .iter()
        .zip(&kinds)
        .map(|(c, k)| settlement(c, k.clone()))
        .collect();
    let settled = b.settle("w1", &applied, Now::At(at(10))).await.unwrap();
    assert_eq!(settled.applied, 6);
    // The seventh: its lease expired and it was rescued (back in the queue under the
    // same claim, with the rescue's error), so a retry of it did not apply.
    let rescued = settlement(
        &c[6],
        Settle::Retry {
            due: Due::After(Duration::from_secs(60)),
            error: "failed".into(),
            give_back_attempt: false,
        },
    );
    let expired = at(0) + LEASE + Duration::from_millis(1);
    assert_eq!(b.rescue_expired(&[t], Now::At(expired)).await.unwrap(), 1);
    let mut asked = applied.clone();
    asked.push(rescued.clone());
    let found = b.applied_before(&asked).await.unwrap();
    let expected: Vec<Fenced> = applied.iter().map(Fenced::of).collect();
    assert_eq!(
        found, expected,
        "every kind applied is found; the rescued one is not"
    );
    // Claimed again by another worker: the old claim's settlement is not found either.
    let again = claim(h, t, "w2", 10, expired).await;
    assert!(ids(&again).contains(&c[6].id));
    assert!(b.applied_before(&[rescued]).await.unwrap().is_empty());
}
