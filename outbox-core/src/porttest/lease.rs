//! Leases: when a claim's lease runs out, how a heartbeat extends it, the rescue of
//! expired leases, and the worker registry ([`QueueStore::heartbeat`],
//! [`QueueStore::rescue_expired`], [`QueueStore::deregister`]).

use std::time::Duration;

use super::{at, claim, counts, ids, insert, message, settlement, PortHarness, LEASE};
use crate::{
    clock::Now,
    store::{DeadLetterFilter, DeadLetterStore, Held, PauseStore, QueueStore, Settle, WorkerBeat},
};

/// One millisecond.
const MS: Duration = Duration::from_millis(1);

/// One worker's heartbeat, for `LEASE`.
async fn heartbeat<H: PortHarness>(h: &H, owner: &str, t: &str, held: &[Held], now: Now) {
    let beats = [WorkerBeat {
        owner,
        type_tag: t,
        lease: LEASE,
        held,
    }];
    h.backend().heartbeat(&beats, now).await.unwrap();
}

/// The messages `claimed` as a heartbeat names them.
fn held(claimed: &[crate::store::Claimed]) -> Vec<Held> {
    claimed
        .iter()
        .map(|c| Held {
            id: c.id.clone(),
            claim: c.claim,
        })
        .collect()
}

/// A lease taken at `t` for `LEASE` is not rescued at `t + LEASE - 1ms` (nor by a rescue
/// of another type), and is at `t + LEASE + 1ms`: the rescue counts it, the message is
/// claimable again with its attempt counted, and the expired attempt joins its log.
pub async fn lease_expires_after_its_duration<H: PortHarness>(h: &H) {
    let t = "port_lease";
    let id = insert(h, &[message(t, 1)]).await.remove(0);
    let b = h.backend();
    let start = at(1_000);
    let c = claim(h, t, "w1", 10, start).await;
    assert_eq!(ids(&c), vec![id.clone()]);

    let before = start + LEASE - MS;
    assert_eq!(b.rescue_expired(&[t], Now::At(before)).await.unwrap(), 0);
    assert!(claim(h, t, "w2", 10, before).await.is_empty(), "still held");
    let after = start + LEASE + MS;
    assert_eq!(
        b.rescue_expired(&["port_lease_other"], Now::At(after))
            .await
            .unwrap(),
        0,
        "a rescue of another type"
    );
    assert_eq!(b.rescue_expired(&[t], Now::At(after)).await.unwrap(), 1);
    assert_eq!(
        b.rescue_expired(&[t], Now::At(after)).await.unwrap(),
        0,
        "rescued once"
    );
    let n = counts(h, t, after).await;
    assert_eq!(
        (n.running, n.retrying),
        (0, 1),
        "queued with its attempt counted"
    );

    let c = claim(h, t, "w2", 10, after).await;
    assert_eq!(ids(&c), vec![id]);
    assert_eq!((c[0].attempt, c[0].claim), (2, 2));
    let bury = Settle::Bury {
        reason: "gave up".into(),
    };
    b.settle("w2", &[settlement(&c[0], bury)], Now::At(after))
        .await
        .unwrap();
    let dead = b.list_dead(&DeadLetterFilter::all(), 10, 0).await.unwrap();
    let log = &dead[0].attempt_log;
    assert_eq!(
        log.len(),
        2,
        "the expired attempt and the last one: {log:?}"
    );
    assert_eq!((log[0].attempt, log[0].at), (1, after));
    assert!(!log[0].error.is_empty(), "the expired attempt says why");
    assert_eq!((log[1].attempt, log[1].error.as_str()), (2, "gave up"));
}

/// A heartbeat at `t + x` extends the lease to `t + x + LEASE`: a rescue at the old
/// expiry finds nothing, one after the new expiry rescues it.
pub async fn heartbeat_extends_the_lease<H: PortHarness>(h: &H) {
    let t = "port_heartbeat";
    insert(h, &[message(t, 1)]).await;
    let b = h.backend();
    let start = at(1_000);
    let c = claim(h, t, "w1", 10, start).await;
    let beat = start + Duration::from_secs(20);
    heartbeat(h, "w1", t, &held(&c), Now::At(beat)).await;
    let old_expiry = start + LEASE + MS;
    assert_eq!(
        b.rescue_expired(&[t], Now::At(old_expiry)).await.unwrap(),
        0
    );
    let new_expiry = beat + LEASE;
    assert_eq!(
        b.rescue_expired(&[t], Now::At(new_expiry - MS))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        b.rescue_expired(&[t], Now::At(new_expiry + MS))
            .await
            .unwrap(),
        1
    );
}

/// A heartbeat extends only the leases its worker holds: naming a message another worker
/// holds changes nothing, so that message is rescued at its own expiry while the
/// heartbeat's own message is not.
pub async fn heartbeat_extends_only_the_owners_claims<H: PortHarness>(h: &H) {
    let t = "port_heartbeat_owner";
    let rows = [message(t, 1), message(t, 2)];
    insert(h, &rows).await;
    let b = h.backend();
    let start = at(1_000);
    let mine = claim(h, t, "w1", 1, start).await;
    let theirs = claim(h, t, "w2", 1, start).await;
    assert_eq!(ids(&mine), vec![rows[0].id.clone()]);
    assert_eq!(ids(&theirs), vec![rows[1].id.clone()]);
    let beat = start + Duration::from_secs(20);
    let both: Vec<_> = held(&mine).into_iter().chain(held(&theirs)).collect();
    heartbeat(h, "w1", t, &both, Now::At(beat)).await;
    let expiry = start + LEASE + MS;
    assert_eq!(
        b.rescue_expired(&[t], Now::At(expiry)).await.unwrap(),
        1,
        "only w2's message"
    );
    let c = claim(h, t, "w3", 10, expiry).await;
    assert_eq!(ids(&c), ids(&theirs), "w1's message is still leased to w1");
}

/// A heartbeat extends only the claim it names: after a release and a new claim of the
/// same message by the same worker, a heartbeat naming the old claim leaves the new lease
/// alone (fencing, as for settlements).
pub async fn heartbeat_extends_only_the_named_claim<H: PortHarness>(h: &H) {
    let t = "port_heartbeat_claim";
    insert(h, &[message(t, 1)]).await;
    let b = h.backend();
    let start = at(1_000);
    let first = claim(h, t, "w1", 1, start).await;
    let released = [settlement(&first[0], Settle::Release)];
    let r = b.settle("w1", &released, Now::At(start)).await.unwrap();
    assert_eq!((r.applied, r.fenced.len()), (1, 0));
    let second = claim(h, t, "w1", 1, start).await;
    assert_eq!((first[0].claim, second[0].claim), (1, 2));
    let beat = start + Duration::from_secs(20);
    heartbeat(h, "w1", t, &held(&first), Now::At(beat)).await;
    assert_eq!(
        b.rescue_expired(&[t], Now::At(start + LEASE + MS))
            .await
            .unwrap(),
        1,
        "the stale claim's heartbeat did not extend the new claim's lease"
    );
}

/// A heartbeat registers its worker (once, however often it beats, also with nothing
/// held); `deregister` removes it, leaves its leases alone, and is harmless for a name
/// not registered.
pub async fn heartbeat_registers_and_deregister_removes<H: PortHarness>(h: &H) {
    let t = "port_registry";
    insert(h, &[message(t, 1)]).await;
    let b = h.backend();
    let c = claim(h, t, "w1", 10, at(0)).await;
    heartbeat(h, "w1", t, &held(&c), Now::At(at(10))).await;
    heartbeat(h, "w1", t, &held(&c), Now::At(at(20))).await;
    heartbeat(h, "w2", t, &[], Now::At(at(20))).await;
    assert_eq!(h.workers().await.unwrap(), vec!["w1", "w2"]);
    b.deregister("w1").await.unwrap();
    assert_eq!(h.workers().await.unwrap(), vec!["w2"]);
    b.deregister("w1").await.unwrap();
    b.deregister("nobody").await.unwrap();
    assert_eq!(h.workers().await.unwrap(), vec!["w2"]);
    let before = at(20) + LEASE - MS;
    assert_eq!(
        b.rescue_expired(&[t], Now::At(before)).await.unwrap(),
        0,
        "the lease is the message's, not the registry's"
    );
    assert_eq!(
        b.rescue_expired(&[t], Now::At(at(20) + LEASE + MS))
            .await
            .unwrap(),
        1
    );
}

/// One heartbeat serves every worker of a process: each worker's leases are extended by
/// its own lease and only for its own claims, every worker is registered, and one rescue
/// covers several types.
pub async fn one_heartbeat_serves_every_worker<H: PortHarness>(h: &H) {
    let (t1, t2) = ("port_beat_one", "port_beat_two");
    insert(h, &[message(t1, 1), message(t2, 2)]).await;
    let b = h.backend();
    let start = at(1_000);
    let c1 = claim(h, t1, "w1", 10, start).await;
    let c2 = claim(h, t2, "w2", 10, start).await;
    let (h1, h2) = (held(&c1), held(&c2));
    let long = LEASE * 2;
    let beats = [
        WorkerBeat {
            owner: "w1",
            type_tag: t1,
            lease: LEASE,
            held: &h1,
        },
        WorkerBeat {
            owner: "w2",
            type_tag: t2,
            lease: long,
            held: &h2,
        },
        // A worker naming another's message changes nothing.
        WorkerBeat {
            owner: "w3",
            type_tag: t1,
            lease: long * 10,
            held: &h1,
        },
    ];
    let beat_at = start + Duration::from_secs(5);
    b.heartbeat(&beats, Now::At(beat_at)).await.unwrap();
    assert_eq!(h.workers().await.unwrap(), vec!["w1", "w2", "w3"]);
    let both = [t1, t2];
    assert_eq!(
        b.rescue_expired(&both, Now::At(beat_at + LEASE - MS))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        b.rescue_expired(&both, Now::At(beat_at + LEASE + MS))
            .await
            .unwrap(),
        1,
        "w1's message, at w1's lease"
    );
    assert_eq!(
        b.rescue_expired(&both, Now::At(beat_at + long + MS))
            .await
            .unwrap(),
        1,
        "w2's message, at w2's longer lease"
    );
    b.heartbeat(&[], Now::At(beat_at)).await.unwrap();
}

/// `due_types` names exactly the given types that have a queued message due now and are
/// not paused: not a type whose messages are all due later, running or unknown.
pub async fn due_types_names_the_types_with_due_messages<H: PortHarness>(h: &H) {
    let b = h.backend();
    let now = at(1_000);
    let later = crate::enqueue::NewMessage {
        due: crate::clock::Due::At(at(5_000)),
        ..message("port_due_later", 3)
    };
    insert(
        h,
        &[
            message("port_due_now", 1),
            message("port_due_paused", 2),
            later,
            message("port_due_running", 4),
        ],
    )
    .await;
    claim(h, "port_due_running", "w1", 10, now).await;
    b.pause("port_due_paused", "test", Now::At(now))
        .await
        .unwrap();
    let asked = [
        "port_due_now",
        "port_due_paused",
        "port_due_later",
        "port_due_running",
        "port_due_unknown",
    ];
    let mut due = b.due_types(&asked, Now::At(now)).await.unwrap();
    due.sort();
    assert_eq!(due, vec!["port_due_now"]);
    let mut due = b.due_types(&asked, Now::At(at(5_000))).await.unwrap();
    due.sort();
    assert_eq!(due, vec!["port_due_later", "port_due_now"]);
    assert!(b.due_types(&[], Now::At(now)).await.unwrap().is_empty());
    // Asked again and again, as an idle process does (a prepared statement re-executed),
    // the answer stays.
    for _ in 0..20 {
        let mut due = b.due_types(&asked, Now::At(at(5_000))).await.unwrap();
        due.sort();
        assert_eq!(due, vec!["port_due_later", "port_due_now"]);
    }
}
