//! Circuit breakers: of several callers exactly one opens, probes or closes a breaker; a
//! probe is due on its backoff and held by one owner at a time until its lease runs out;
//! the listing shows each breaker's state ([`BreakerStore`]).

use std::time::Duration;

use super::{at, PortHarness};
use crate::{
    clock::Now,
    store::{BreakerState, BreakerStore, ProbeFailure},
};

const NAME: &str = "relay:relay.example:587";

/// Breaker [`NAME`] as listed at `now_ms`.
async fn state<H: PortHarness>(h: &H, now_ms: u64) -> BreakerState {
    let all = h
        .backend()
        .breakers(Now::At(at(now_ms)))
        .await
        .expect("list the breakers");
    all.into_iter()
        .find(|b| b.name == NAME)
        .unwrap_or_else(|| panic!("breaker {NAME} is listed"))
}

/// Opening: the first call opens (true), a second one while open changes nothing (false)
/// and keeps the first reason and probe time; the listing shows it open since then, with
/// the first probe due after the given delay; closing: once (true, then false), and the
/// breaker opens again afterwards, counted twice.
pub async fn a_breaker_opens_once_and_closes_once<H: PortHarness>(h: &H) {
    let b = h.backend();
    let second = Duration::from_secs(1);
    assert!(b.breakers(Now::At(at(0))).await.unwrap().is_empty());
    assert!(b
        .open_breaker(NAME, "connection refused", Now::At(at(1_000)), second)
        .await
        .unwrap());
    assert!(!b
        .open_breaker(NAME, "421 too busy", Now::At(at(1_200)), second)
        .await
        .unwrap());
    let open = state(h, 1_500).await;
    assert!(open.is_open());
    assert_eq!(open.opened_at, Some(at(1_000)));
    assert_eq!(open.reason.as_deref(), Some("connection refused"));
    assert_eq!(open.next_probe_in, Some(Duration::from_millis(500)));
    assert_eq!(
        (open.probes_failed, open.probing, open.times_opened),
        (0, false, 1)
    );
    assert_eq!(state(h, 9_000).await.next_probe_in, Some(Duration::ZERO));
    assert!(b.close_breaker(NAME, Now::At(at(3_000))).await.unwrap());
    assert!(!b.close_breaker(NAME, Now::At(at(3_001))).await.unwrap());
    let closed = state(h, 3_500).await;
    assert!(!closed.is_open());
    assert_eq!(closed.closed_at, Some(at(3_000)));
    assert_eq!(closed.next_probe_in, None);
    assert!(b
        .open_breaker(NAME, "again", Now::At(at(4_000)), second)
        .await
        .unwrap());
    assert_eq!(state(h, 4_000).await.times_opened, 2);
}

/// Probing: nobody gets a probe before it is due; at its time one owner gets it and the
/// other does not; a failure recorded by another owner changes nothing; the holder's
/// failure counts it, makes the next probe due after the given wait and frees the probe;
/// a holder that never reports loses it when its lease runs out; a closed breaker has no
/// probe; "probe now" makes it due at once.
pub async fn one_probe_at_a_time_on_its_backoff<H: PortHarness>(h: &H) {
    let b = h.backend();
    let lease = Duration::from_secs(60);
    b.open_breaker(NAME, "down", Now::At(at(0)), Duration::from_secs(1))
        .await
        .unwrap();
    let take = |owner: &'static str, ms: u64| b.take_probe(NAME, owner, Now::At(at(ms)), lease);
    assert_eq!(take("a", 999).await.unwrap(), None, "not due yet");
    let grant = take("a", 1_000).await.unwrap().expect("due at 1 s");
    assert_eq!(grant.probes_failed, 0);
    assert_eq!(grant.since_warned, Duration::from_secs(1));
    assert_eq!(take("b", 1_001).await.unwrap(), None, "held by a");
    assert!(state(h, 1_001).await.probing);
    let failure = ProbeFailure {
        reason: "still refused",
        next_in: Duration::from_secs(2),
        warned: false,
    };
    b.probe_failed(NAME, "b", failure, Now::At(at(1_100)))
        .await
        .unwrap();
    assert!(state(h, 1_101).await.probing, "b does not hold the probe");
    b.probe_failed(NAME, "a", failure, Now::At(at(1_100)))
        .await
        .unwrap();
    let after = state(h, 1_100).await;
    assert!(after.is_open() && !after.probing);
    assert_eq!(after.probes_failed, 1);
    assert_eq!(after.reason.as_deref(), Some("still refused"));
    assert_eq!(after.next_probe_in, Some(Duration::from_secs(2)));
    assert_eq!(take("b", 3_099).await.unwrap(), None);
    let grant = take("b", 3_100)
        .await
        .unwrap()
        .expect("due 2 s after the failure");
    assert_eq!(grant.probes_failed, 1);
    // The WARN was logged at the opening (0 ms): 3.1 s ago; a failure logged now resets it.
    assert_eq!(grant.since_warned, Duration::from_millis(3_100));
    b.probe_failed(
        NAME,
        "b",
        ProbeFailure {
            warned: true,
            next_in: Duration::ZERO,
            ..failure
        },
        Now::At(at(3_200)),
    )
    .await
    .unwrap();
    let grant = take("a", 3_300).await.unwrap().expect("due at once");
    assert_eq!(grant.since_warned, Duration::from_millis(100));
    // a never reports: its lease runs out and b takes the probe.
    assert_eq!(take("b", 3_300 + 59_999).await.unwrap(), None);
    assert!(take("b", 3_300 + 60_000).await.unwrap().is_some());
    assert!(b.close_breaker(NAME, Now::At(at(70_000))).await.unwrap());
    assert_eq!(take("a", 200_000).await.unwrap(), None, "closed: no probe");
    assert!(!b
        .probe_breaker_now(NAME, Now::At(at(200_000)))
        .await
        .unwrap());
    b.open_breaker(NAME, "down", Now::At(at(300_000)), Duration::from_secs(60))
        .await
        .unwrap();
    assert!(b
        .probe_breaker_now(NAME, Now::At(at(300_001)))
        .await
        .unwrap());
    assert!(take("a", 300_001).await.unwrap().is_some());
}

/// The same verbs at the database's own clock ([`Now::Database`], how a running outbox
/// calls them): open, list (the first probe not due yet), probe now, take it, fail it,
/// close.
pub async fn breakers_run_at_the_database_clock<H: PortHarness>(h: &H) {
    let b = h.backend();
    let minute = Duration::from_secs(60);
    assert!(b
        .open_breaker(NAME, "down", Now::Database, minute)
        .await
        .unwrap());
    let open = b.breakers(Now::Database).await.unwrap().remove(0);
    assert!(open.is_open());
    let wait = open.next_probe_in.expect("open: a next probe");
    assert!(wait > Duration::from_secs(50) && wait <= minute, "{wait:?}");
    assert_eq!(
        b.take_probe(NAME, "a", Now::Database, minute)
            .await
            .unwrap(),
        None
    );
    assert!(b.probe_breaker_now(NAME, Now::Database).await.unwrap());
    let grant = b
        .take_probe(NAME, "a", Now::Database, minute)
        .await
        .unwrap();
    assert!(grant.is_some_and(|g| g.since_warned < minute));
    let failure = ProbeFailure {
        reason: "refused",
        next_in: minute,
        warned: true,
    };
    b.probe_failed(NAME, "a", failure, Now::Database)
        .await
        .unwrap();
    let after = b.breakers(Now::Database).await.unwrap().remove(0);
    assert_eq!((after.probes_failed, after.probing), (1, false));
    assert!(b.close_breaker(NAME, Now::Database).await.unwrap());
    assert!(!b.breakers(Now::Database).await.unwrap()[0].is_open());
}

/// The steering read returns, in one statement, the paused types (with their reason), the
/// paused groups and the open breakers with their probe state — not the closed ones.
pub async fn steering_reads_pauses_groups_and_open_breakers<H: PortHarness>(h: &H) {
    use crate::store::{GroupStore, PauseStore};
    let b = h.backend();
    let empty = b.steering(Now::At(at(0))).await.unwrap();
    assert_eq!(empty, crate::store::Steering::default());
    b.pause("port_t", "typo", Now::At(at(10))).await.unwrap();
    b.pause_group("g1", "hold", Now::At(at(20))).await.unwrap();
    b.open_breaker(NAME, "refused", Now::At(at(1_000)), Duration::from_secs(1))
        .await
        .unwrap();
    b.open_breaker(
        "closed-one",
        "x",
        Now::At(at(1_000)),
        Duration::from_secs(1),
    )
    .await
    .unwrap();
    b.close_breaker("closed-one", Now::At(at(1_100)))
        .await
        .unwrap();
    let s = b.steering(Now::At(at(1_250))).await.unwrap();
    assert_eq!(s.paused_types.len(), 1);
    assert_eq!(
        (
            s.paused_types[0].type_tag.as_str(),
            s.paused_types[0].reason.as_str()
        ),
        ("port_t", "typo")
    );
    assert_eq!(s.paused_types[0].paused_at, at(10));
    assert_eq!(s.paused_groups, ["g1"]);
    assert_eq!(s.open_breakers.len(), 1, "{:?}", s.open_breakers);
    let open = &s.open_breakers[0];
    assert_eq!(open.name, NAME);
    assert_eq!(open.opened_at, Some(at(1_000)));
    assert_eq!(open.next_probe_in, Some(Duration::from_millis(750)));
    assert!(!open.probing);
    let s = b.steering(Now::Database).await.unwrap();
    assert_eq!(
        (
            s.paused_types.len(),
            s.paused_groups.len(),
            s.open_breakers.len()
        ),
        (1, 1, 1)
    );
}
