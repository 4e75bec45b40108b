//! The housekeeping reads and moves the workers need: whether a drain is complete, and the
//! queued messages of types no handler is registered for ([`QueueStore::count_unfinished`],
//! [`QueueStore::unregistered_pending`], [`QueueStore::bury_unregistered`]), and a smoke
//! test of the database's own clock ([`Now::Database`]).

use std::time::Duration;

use super::{at, claim, counts, ids, insert, message, settlement, PortHarness, LEASE};
use crate::{
    clock::{Due, Now},
    enqueue::NewMessage,
    store::{
        ClaimRequest, DeadLetterFilter, DeadLetterStore, PauseStore, QueueStore, Settle,
        StatsStore, UnregisteredType,
    },
};

/// A drain is unfinished while a message of its types is due (unless the type is paused)
/// or held by a worker whose name starts with its prefix; a message due later, or held by
/// another process's worker, does not count.
pub async fn count_unfinished_sees_due_and_held_messages<H: PortHarness>(h: &H) {
    let (t, u) = ("port_drain", "port_drain_paused");
    let due = message(t, 1);
    let later = NewMessage {
        due: Due::At(at(10_000)),
        ..message(t, 2)
    };
    insert(h, &[due, later, message(u, 3)]).await;
    let b = h.backend();
    b.pause(u, "hold", Now::At(at(0))).await.unwrap();
    let types: &[&'static str] = &["port_drain", "port_drain_paused"];
    let left = |prefix: &'static str, ms: u64| async move {
        b.count_unfinished(types, prefix, Now::At(at(ms)))
            .await
            .unwrap()
    };
    assert_ne!(left("p2-", 0).await, 0, "a due message");
    let c = claim(h, t, "p1-w1", 10, at(0)).await;
    assert_eq!(c.len(), 1);
    assert_eq!(
        left("p2-", 0).await,
        0,
        "held by another process; later and paused ones wait"
    );
    assert_ne!(left("p1-", 0).await, 0, "held by this process");
    assert_ne!(left("p2-", 10_000).await, 0, "the later one is due");
    let done = Settle::Done {
        keep: false,
        note: None,
    };
    b.settle("p1-w1", &[settlement(&c[0], done)], Now::At(at(1)))
        .await
        .unwrap();
    assert_eq!(left("p1-", 1).await, 0, "delivered");
    b.resume(u).await.unwrap();
    assert_ne!(left("p2-", 1).await, 0, "resumed");
}

/// Queued messages of types not registered are counted per type and can be buried with a
/// reason at a given time; registered types and claimed (running) messages stay.
pub async fn unregistered_types_are_counted_and_buried<H: PortHarness>(h: &H) {
    let (known, gone, other) = ("port_known", "port_gone", "port_other");
    let rows = [
        message(known, 1),
        message(gone, 2),
        message(gone, 3),
        message(other, 4),
        message(other, 5),
    ];
    insert(h, &rows).await;
    let b = h.backend();
    let held = claim(h, other, "w1", 1, at(0)).await;
    assert_eq!(ids(&held), vec![rows[3].id.clone()]);
    let registered: &[&'static str] = &["port_known"];
    assert_eq!(
        b.unregistered_pending(registered).await.unwrap(),
        vec![
            UnregisteredType {
                type_tag: gone.into(),
                pending: 2
            },
            UnregisteredType {
                type_tag: other.into(),
                pending: 1
            },
        ]
    );
    let buried = b
        .bury_unregistered(registered, "no handler", Now::At(at(50)))
        .await
        .unwrap();
    assert_eq!(buried, 3);
    assert!(b.unregistered_pending(registered).await.unwrap().is_empty());
    let dead = b.list_dead(&DeadLetterFilter::all(), 10, 0).await.unwrap();
    assert_eq!(dead.len(), 3);
    assert!(dead
        .iter()
        .all(|d| d.last_error == "no handler" && d.failed_at == at(50)));
    assert_eq!(counts(h, known, at(50)).await.pending, 1);
    let n = counts(h, other, at(50)).await;
    assert_eq!((n.running, n.dead), (1, 1), "the claimed one stays");
}

/// The verbs also run on the database's own clock ([`Now::Database`], the process clock
/// on SQLite): a message due now is claimed, a retry an hour out is not due, and a rescue
/// finds no expired lease.
pub async fn database_clock_runs_the_verbs<H: PortHarness>(h: &H) {
    let t = "port_db_clock";
    let m = NewMessage {
        due: Due::After(Duration::ZERO),
        ..message(t, 1)
    };
    insert(h, std::slice::from_ref(&m)).await;
    let b = h.backend();
    let request = ClaimRequest {
        type_tag: t,
        owner: "w1",
        limit: 10,
        now: Now::Database,
        lease: LEASE,
        ordered: false,
    };
    let c = b.claim(&request).await.unwrap();
    assert_eq!(ids(&c), vec![m.id.clone()]);
    let held = [crate::store::Held {
        id: m.id.clone(),
        claim: 1,
    }];
    let beats = [crate::store::WorkerBeat {
        owner: "w1",
        type_tag: t,
        lease: LEASE,
        held: &held,
    }];
    b.heartbeat(&beats, Now::Database).await.unwrap();
    assert_eq!(b.rescue_expired(&[t], Now::Database).await.unwrap(), 0);
    let retry = Settle::Retry {
        due: Due::After(Duration::from_secs(3600)),
        error: "later".into(),
        give_back_attempt: false,
    };
    let s = b
        .settle("w1", &[settlement(&c[0], retry)], Now::Database)
        .await
        .unwrap();
    assert_eq!(s.applied, 1);
    assert!(
        b.claim(&request).await.unwrap().is_empty(),
        "due in an hour"
    );
    let statuses = b.status_counts(Now::Database).await.unwrap();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0].retrying, 1);
}

/// The history adds outcomes into the minute `now` falls in (two reports of one minute add
/// up; another type or minute is its own row), lists them from a minute on, oldest first,
/// and deletes minutes older than two days when it adds.
pub async fn history_adds_per_minute_and_prunes<H: PortHarness>(h: &H) {
    use crate::store::TypeOutcomes;
    let b = h.backend();
    let o = |t: &str, delivered, failed, dead| TypeOutcomes {
        type_tag: t.to_owned(),
        delivered,
        failed,
        dead,
    };
    b.add_history(&[o("a", 3, 1, 0), o("b", 1, 0, 1)], Now::At(at(1_000)))
        .await
        .expect("add to the history");
    b.add_history(&[o("a", 2, 0, 1)], Now::At(at(59_000)))
        .await
        .unwrap();
    b.add_history(&[o("a", 7, 0, 0)], Now::At(at(61_000)))
        .await
        .unwrap();
    let rows = b.history(at(0)).await.expect("read the history");
    let seen: Vec<(std::time::SystemTime, TypeOutcomes)> =
        rows.into_iter().map(|m| (m.minute, m.outcomes)).collect();
    assert_eq!(
        seen,
        vec![
            (at(0), o("a", 5, 1, 1)),
            (at(0), o("b", 1, 0, 1)),
            (at(60_000), o("a", 7, 0, 0)),
        ]
    );
    assert_eq!(b.history(at(60_000)).await.unwrap().len(), 1);
    let three_days = 3 * 24 * 3_600_000;
    b.add_history(&[o("c", 1, 0, 0)], Now::At(at(three_days)))
        .await
        .unwrap();
    let left = b.history(at(0)).await.unwrap();
    assert_eq!(left.len(), 1, "older than two days: pruned");
    assert_eq!(left[0].outcomes.type_tag, "c");
}

/// The worker registry's newest heartbeat and the read's time: none while no worker is
/// registered; the latest of several workers' heartbeats; none again once they
/// deregistered; on the database's own clock, a time near the process's.
pub async fn workers_seen_reads_the_newest_heartbeat<H: PortHarness>(h: &H) {
    let b = h.backend();
    let seen = b.workers_seen(Now::At(at(100))).await.unwrap();
    assert_eq!((seen.last_seen, seen.now), (None, at(100)));
    for (owner, ms) in [("w1", 1_000), ("w2", 5_000), ("w1", 3_000)] {
        let beats = [crate::store::WorkerBeat {
            owner,
            type_tag: "port_seen",
            lease: LEASE,
            held: &[],
        }];
        b.heartbeat(&beats, Now::At(at(ms))).await.unwrap();
    }
    let seen = b.workers_seen(Now::At(at(9_000))).await.unwrap();
    assert_eq!((seen.last_seen, seen.now), (Some(at(5_000)), at(9_000)));
    b.deregister("w1").await.unwrap();
    b.deregister("w2").await.unwrap();
    let seen = b.workers_seen(Now::Database).await.unwrap();
    assert_eq!(seen.last_seen, None);
    let skew = seen
        .now
        .duration_since(crate::clock::system_now())
        .unwrap_or_else(|e| e.duration());
    assert!(
        skew < Duration::from_secs(60),
        "the database's clock: {seen:?}"
    );
}
