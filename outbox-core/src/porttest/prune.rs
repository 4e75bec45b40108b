//! Retention: done rows are deleted once older than the window, in bounded batches
//! ([`QueueStore::prune_done`]).

use std::time::Duration;

use super::{at, claim, counts, insert, message, settlement, PortHarness};
use crate::{
    clock::Now,
    enqueue::NewMessage,
    store::{QueueStore, Settle},
};

/// Kept as done at `done_ms` after [`super::t0`]: claims one message of `t` and settles it
/// Done with keep.
async fn done_at<H: PortHarness>(h: &H, t: &str, done_ms: u64) {
    let c = claim(h, t, "w1", 1, at(done_ms)).await;
    assert_eq!(c.len(), 1);
    let keep = Settle::Done {
        keep: true,
        note: None,
    };
    let s = h
        .backend()
        .settle("w1", &[settlement(&c[0], keep)], Now::At(at(done_ms)))
        .await
        .unwrap();
    assert_eq!(s.applied, 1);
}

/// Done rows that finished more than the window before `now` are deleted; one that
/// finished exactly the window before, and younger ones, are kept; queued and running
/// messages are never pruned. A pruned row's key is free again.
pub async fn prune_deletes_only_done_rows_older_than_the_window<H: PortHarness>(h: &H) {
    let t = "port_prune";
    let rows: Vec<_> = (0..5)
        .map(|n| NewMessage {
            idempotency_key: Some(format!("k{n}")),
            ..message(t, n)
        })
        .collect();
    insert(h, &rows).await;
    done_at(h, t, 0).await; // k0
    done_at(h, t, 10_000).await; // k1
    done_at(h, t, 20_000).await; // k2
    let running = claim(h, t, "w1", 1, at(20_000)).await; // k3; k4 stays queued
    assert_eq!(running.len(), 1);
    let b = h.backend();
    let window = Duration::from_secs(15);

    // Cut-off at +10s: only the row done at +0s is older.
    assert_eq!(
        b.prune_done(window, Now::At(at(25_000)), 100)
            .await
            .unwrap(),
        1
    );
    assert_eq!(counts(h, t, at(25_000)).await.done, 2);
    // Cut-off at +16s: the row done at +10s goes too, the one at +20s stays.
    assert_eq!(
        b.prune_done(window, Now::At(at(31_000)), 100)
            .await
            .unwrap(),
        1
    );
    let n = counts(h, t, at(31_000)).await;
    assert_eq!((n.pending, n.running, n.done), (1, 1, 1));
    // Much later, only the done row can go.
    let late = Now::At(at(10_000_000));
    assert_eq!(b.prune_done(window, late, 100).await.unwrap(), 1);
    let n = counts(h, t, at(31_000)).await;
    assert_eq!((n.pending, n.running, n.done), (1, 1, 0));
    let again: Vec<_> = (0..3)
        .map(|n| NewMessage {
            idempotency_key: Some(format!("k{n}")),
            ..message(t, 10 + n)
        })
        .collect();
    insert(h, &again).await; // asserts every key was free again
}

/// One call deletes at most `limit` rows; repeated calls finish the job, then find
/// nothing.
pub async fn prune_limit_bounds_one_call<H: PortHarness>(h: &H) {
    let t = "port_prune_limit";
    let rows: Vec<_> = (0..5).map(|n| message(t, n)).collect();
    insert(h, &rows).await;
    for _ in 0..5 {
        done_at(h, t, 0).await;
    }
    let b = h.backend();
    let (window, now) = (Duration::from_secs(1), Now::At(at(60_000)));
    assert_eq!(b.prune_done(window, now, 2).await.unwrap(), 2);
    assert_eq!(b.prune_done(window, now, 2).await.unwrap(), 2);
    assert_eq!(b.prune_done(window, now, 2).await.unwrap(), 1);
    assert_eq!(b.prune_done(window, now, 2).await.unwrap(), 0);
    assert_eq!(counts(h, t, at(60_000)).await.done, 0);
}

/// Kept done rows are sent again in place, by delivery time, by id and by type: queued,
/// due at the time given, attempts reset, the same id; queued and running messages, and
/// done rows outside the filter, are not touched.
pub async fn kept_done_rows_are_replayed_by_filter<H: PortHarness>(h: &H) {
    use crate::store::{LiveFilter, LiveMessageStore, LiveState, ReplayFilter};
    let t = "port_replay";
    let ids = insert(h, &(0..5).map(|n| message(t, n)).collect::<Vec<_>>()).await;
    done_at(h, t, 1_000).await; // ids[0]
    done_at(h, t, 2_000).await; // ids[1]
    done_at(h, t, 3_000).await; // ids[2]
    let running = claim(h, t, "w1", 1, at(3_000)).await; // ids[3]; ids[4] stays queued
    assert_eq!(running.len(), 1);
    let b = h.backend();
    let live = |id: &crate::enqueue::MessageId, ms: u64| {
        let filter = LiveFilter::id(id.as_str());
        async move {
            let page = b
                .list_live(&filter, None, 10, Now::At(at(ms)))
                .await
                .unwrap();
            page.into_iter().next()
        }
    };
    assert!(
        live(&ids[1], 4_000).await.is_none(),
        "a done row is not live"
    );

    let other = ReplayFilter {
        type_tag: Some("port_replay_other".into()),
        ..ReplayFilter::default()
    };
    assert_eq!(b.replay_done(&other, Now::At(at(5_000))).await.unwrap(), 0);
    // Delivered in [1.5 s, 3 s): the second one only.
    let range = ReplayFilter {
        type_tag: Some(t.into()),
        done_after: Some(at(1_500)),
        done_before: Some(at(3_000)),
        ..ReplayFilter::default()
    };
    assert_eq!(b.replay_done(&range, Now::At(at(5_000))).await.unwrap(), 1);
    let replayed = live(&ids[1], 5_000).await.expect("replayed: live again");
    assert_eq!(replayed.state, LiveState::Pending);
    assert_eq!((replayed.attempts, replayed.due_at), (0, at(5_000)));
    // By id.
    let one = ReplayFilter {
        id: Some(ids[2].to_string()),
        ..ReplayFilter::default()
    };
    assert_eq!(b.replay_done(&one, Now::At(at(6_000))).await.unwrap(), 1);
    assert_eq!(live(&ids[2], 6_000).await.unwrap().due_at, at(6_000));
    // The rest of the type: only the first done row is left.
    let all = ReplayFilter {
        type_tag: Some(t.into()),
        ..ReplayFilter::default()
    };
    assert_eq!(b.replay_done(&all, Now::At(at(7_000))).await.unwrap(), 1);
    let n = counts(h, t, at(7_000)).await;
    assert_eq!((n.pending, n.running, n.done), (4, 1, 0), "{n:?}");
    // Claimed again, they are delivered as any message.
    let again = claim(h, t, "w2", 10, at(8_000)).await;
    assert_eq!(again.len(), 4);
}
