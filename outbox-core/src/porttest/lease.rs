//! Leases: when a claim's lease runs out, how a heartbeat extends it, the rescue of
//! expired leases, and the worker registry ([`QueueStore::heartbeat`],
//! [`QueueStore::rescue_expired`], [`QueueStore::deregister`]).

use std::time::Duration;

use super::{at, claim, counts, ids, insert, message, settlement, PortHarness, LEASE};
use crate::{
    clock::Now,
    store::{DeadLetterFilter, DeadLetterStore, Held, QueueStore, Settle},
};

/// One millisecond.
const MS: Duration = Duration::from_millis(1);

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
    assert_eq!(b.rescue_expired(t, Now::At(before)).await.unwrap(), 0);
    assert!(claim(h, t, "w2", 10, before).await.is_empty(), "still held");
    let after = start + LEASE + MS;
    assert_eq!(
        b.rescue_expired("port_lease_other", Now::At(after))
            .await
            .unwrap(),
        0,
        "a rescue of another type"
    );
    assert_eq!(b.rescue_expired(t, Now::At(after)).await.unwrap(), 1);
    assert_eq!(
        b.rescue_expired(t, Now::At(after)).await.unwrap(),
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
    b.heartbeat("w1", t, &held(&c), Now::At(beat), LEASE)
        .await
        .unwrap();
    let old_expiry = start + LEASE + MS;
    assert_eq!(b.rescue_expired(t, Now::At(old_expiry)).await.unwrap(), 0);
    let new_expiry = beat + LEASE;
    assert_eq!(
        b.rescue_expired(t, Now::At(new_expiry - MS)).await.unwrap(),
        0
    );
    assert_eq!(
        b.rescue_expired(t, Now::At(new_expiry + MS)).await.unwrap(),
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
    b.heartbeat("w1", t, &both, Now::At(beat), LEASE)
        .await
        .unwrap();
    let expiry = start + LEASE + MS;
    assert_eq!(
        b.rescue_expired(t, Now::At(expiry)).await.unwrap(),
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
    assert_eq!((r.applied, r.fenced), (1, 0));
    let second = claim(h, t, "w1", 1, start).await;
    assert_eq!((first[0].claim, second[0].claim), (1, 2));
    let beat = start + Duration::from_secs(20);
    b.heartbeat("w1", t, &held(&first), Now::At(beat), LEASE)
        .await
        .unwrap();
    assert_eq!(
        b.rescue_expired(t, Now::At(start + LEASE + MS))
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
    b.heartbeat("w1", t, &held(&c), Now::At(at(10)), LEASE)
        .await
        .unwrap();
    b.heartbeat("w1", t, &held(&c), Now::At(at(20)), LEASE)
        .await
        .unwrap();
    b.heartbeat("w2", t, &[], Now::At(at(20)), LEASE)
        .await
        .unwrap();
    assert_eq!(h.workers().await.unwrap(), vec!["w1", "w2"]);
    b.deregister("w1").await.unwrap();
    assert_eq!(h.workers().await.unwrap(), vec!["w2"]);
    b.deregister("w1").await.unwrap();
    b.deregister("nobody").await.unwrap();
    assert_eq!(h.workers().await.unwrap(), vec!["w2"]);
    let before = at(20) + LEASE - MS;
    assert_eq!(
        b.rescue_expired(t, Now::At(before)).await.unwrap(),
        0,
        "the lease is the message's, not the registry's"
    );
    assert_eq!(
        b.rescue_expired(t, Now::At(at(20) + LEASE + MS))
            .await
            .unwrap(),
        1
    );
}
