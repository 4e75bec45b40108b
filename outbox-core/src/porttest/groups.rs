//! Groups: a group's progress in every state and what outlives its rows, pause (claims,
//! due probe, drains and counts), cancel in batches, the delivered count under fencing and
//! retention, a group kept through the dead letters, and the completion hook
//! ([`GroupStore`]).

use super::{at, claim, counts, ids, insert, message, settlement, PortHarness, LEASE};
use crate::{
    clock::{Due, Now},
    enqueue::{MessageId, NewMessage},
    store::{
        DeadLetterFilter, DeadLetterStore, GroupHook, GroupStore, LiveFilter, LiveMessageStore,
        LiveState, PauseStore, QueueStore, Settle,
    },
};

/// The type every case uses.
const T: &str = "port_group";

/// Message `n` of [`T`] in group `group`.
fn grouped(group: &str, n: u32) -> NewMessage {
    NewMessage {
        group: Some(group.to_owned()),
        ..message(T, n)
    }
}

/// A delivery.
fn done() -> Settle {
    Settle::Done {
        keep: false,
        note: None,
    }
}

/// Group `name`'s progress at `now_ms`, which must exist.
async fn progress<H: PortHarness>(h: &H, name: &str, now_ms: u64) -> crate::store::GroupProgress {
    h.backend()
        .group(name, Now::At(at(now_ms)))
        .await
        .expect("read a group's progress")
        .unwrap_or_else(|| panic!("group {name} is known"))
}

/// One group's messages in every state — pending, scheduled, running, retrying, delivered
/// (its row deleted) and dead — are counted as such; the totals add up to what was
/// enqueued; other groups and ungrouped messages are not counted; the listing shows every
/// group by name with the same figures; an unknown group reads as `None`.
pub async fn group_progress_counts_every_state<H: PortHarness>(h: &H) {
    let b = h.backend();
    let written = insert(
        h,
        &[
            grouped("g1", 1),
            grouped("g1", 2),
            grouped("g1", 3),
            grouped("g1", 4),
            grouped("g1", 5),
            NewMessage {
                due: Due::At(at(60_000)),
                ..grouped("g1", 6)
            },
            grouped("g2", 7),
            message(T, 8),
        ],
    )
    .await;
    // Claim the first four of g1: deliver one, bury one, retry one, keep one running.
    let c = claim(h, T, "w1", 4, at(10)).await;
    assert_eq!(ids(&c), written[..4].to_vec());
    assert!(c.iter().all(|m| m.group.as_deref() == Some("g1")));
    let retry = Settle::Retry {
        due: Due::At(at(30_000)),
        error: "busy".into(),
        give_back_attempt: false,
    };
    let bury = Settle::Bury {
        reason: "rejected".into(),
    };
    let settled = b
        .settle(
            "w1",
            &[
                settlement(&c[0], done()),
                settlement(&c[1], bury),
                settlement(&c[2], retry),
            ],
            Now::At(at(20)),
        )
        .await
        .expect("settle");
    assert_eq!(settled.applied, 3);

    let p = progress(h, "g1", 100).await;
    assert_eq!(
        (p.pending, p.scheduled, p.running, p.retrying, p.paused),
        (1, 1, 1, 1, 0),
        "{p:?}"
    );
    assert_eq!((p.delivered, p.dead, p.cancelled), (1, 1, 0), "{p:?}");
    assert_eq!((p.remaining(), p.total()), (4, 6));
    assert_eq!(p.first_delivered_at, Some(at(20)));
    assert_eq!(p.last_delivered_at, Some(at(20)));
    assert!(p.rate > 0.0, "a delivery was recorded: {p:?}");
    assert!(!p.is_paused() && p.hook.is_none() && p.completed_at.is_none());

    let all = b.groups(Now::At(at(100))).await.expect("list groups");
    let names: Vec<&str> = all.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["g1", "g2"]);
    assert_eq!(all[0], p);
    assert_eq!((all[1].pending, all[1].total()), (1, 1));
    assert_eq!(b.group("nope", Now::At(at(100))).await.unwrap(), None);
}

/// A paused group's messages are not claimed, make no type due and keep no drain open;
/// they count as paused (in the group and in the type's status counts), list as paused,
/// and keep their place: after resume they are claimed first. Other groups and ungrouped
/// messages of the same type are claimed meanwhile.
pub async fn a_paused_group_is_not_claimed<H: PortHarness>(h: &H) {
    let b = h.backend();
    let written = insert(
        h,
        &[
            grouped("g1", 1),
            grouped("g1", 2),
            grouped("g2", 3),
            message(T, 4),
        ],
    )
    .await;
    b.pause_group("g1", "wrong subject", Now::At(at(5)))
        .await
        .expect("pause a group");
    b.pause_group("g1", "again", Now::At(at(6)))
        .await
        .expect("pause twice");
    assert_eq!(b.paused_groups().await.unwrap(), ["g1"]);
    let p = progress(h, "g1", 10).await;
    assert_eq!((p.paused, p.pending), (2, 0));
    assert_eq!(
        p.paused_at,
        Some(at(5)),
        "a second pause keeps the first time"
    );
    assert_eq!(p.pause_reason.as_deref(), Some("again"));
    let c = counts(h, T, at(10)).await;
    assert_eq!((c.paused, c.pending), (2, 2));
    let live = b
        .list_live(&LiveFilter::all().in_group("g1"), None, 10, Now::At(at(10)))
        .await
        .unwrap();
    assert!(
        live.iter().all(|m| m.state == LiveState::Paused),
        "{live:?}"
    );
    assert_eq!(
        b.count_live(&LiveFilter::all().state(LiveState::Paused), Now::At(at(10)))
            .await
            .unwrap(),
        2
    );

    let c = claim(h, T, "w1", 10, at(20)).await;
    assert_eq!(ids(&c), written[2..].to_vec(), "only the unpaused ones");
    assert_eq!(c[0].group.as_deref(), Some("g2"));
    assert_eq!(c[1].group, None);
    assert!(b.due_types(&[T], Now::At(at(30))).await.unwrap().is_empty());
    assert_eq!(
        b.count_unfinished(&[T], "nobody", Now::At(at(30)))
            .await
            .unwrap(),
        0
    );

    assert!(b.resume_group("g1").await.unwrap());
    assert!(!b.resume_group("g1").await.unwrap(), "not paused any more");
    assert!(b.paused_groups().await.unwrap().is_empty());
    assert_eq!(b.due_types(&[T], Now::At(at(40))).await.unwrap(), [T]);
    let c = claim(h, T, "w2", 10, at(40)).await;
    assert_eq!(ids(&c), written[..2].to_vec());
}

/// Cancel deletes a group's queued, scheduled and retrying messages in batches, never a
/// running one, counts them as cancelled, and touches no other group; a message cancelled
/// through a live-message filter counts in its group too.
pub async fn cancel_removes_a_groups_queued_messages<H: PortHarness>(h: &H) {
    let b = h.backend();
    let mut rows: Vec<NewMessage> = (1..=7).map(|n| grouped("g1", n)).collect();
    rows.push(NewMessage {
        due: Due::At(at(60_000)),
        ..grouped("g1", 8)
    });
    rows.push(grouped("g2", 9));
    let written = insert(h, &rows).await;
    let c = claim(h, T, "w1", 2, at(10)).await;
    let retry = Settle::Retry {
        due: Due::At(at(30_000)),
        error: "busy".into(),
        give_back_attempt: false,
    };
    b.settle("w1", &[settlement(&c[0], retry)], Now::At(at(20)))
        .await
        .unwrap();
    // Now: 1 retrying, 1 running, 5 pending, 1 scheduled in g1.
    let cancelled = b
        .cancel_group("g1", Now::At(at(30)), 2)
        .await
        .expect("cancel a group");
    assert_eq!(cancelled, 7);
    let p = progress(h, "g1", 40).await;
    assert_eq!((p.remaining(), p.running, p.cancelled), (1, 1, 7), "{p:?}");
    assert_eq!(p.total(), 8);
    let left = b
        .list_live(&LiveFilter::all(), None, 10, Now::At(at(40)))
        .await
        .unwrap();
    let left: Vec<MessageId> = left.into_iter().map(|m| m.id).collect();
    assert_eq!(left, vec![written[1].clone(), written[8].clone()]);

    let by_filter = b
        .cancel_live(&LiveFilter::all().in_group("g2"), Now::At(at(50)), 10)
        .await
        .unwrap();
    assert_eq!(by_filter, 1);
    assert_eq!(progress(h, "g2", 60).await.cancelled, 1);
    assert_eq!(b.cancel_group("g1", Now::At(at(70)), 10).await.unwrap(), 0);

    // The running one comes back to the queue (a retry): no claim takes it, since it was
    // enqueued before the cancel, and the leftovers' sweep deletes it as cancelled.
    let retry_now = Settle::Retry {
        due: Due::At(at(80)),
        error: "busy".into(),
        give_back_attempt: false,
    };
    b.settle("w1", &[settlement(&c[1], retry_now)], Now::At(at(80)))
        .await
        .unwrap();
    assert!(
        claim(h, T, "w1", 10, at(90)).await.is_empty(),
        "not claimed"
    );
    let steering = b.steering(Now::At(at(90))).await.unwrap();
    let cancels: Vec<&str> = steering
        .cancelled_groups
        .iter()
        .map(|g| g.name.as_str())
        .collect();
    assert_eq!(cancels, ["g1"], "processes read the recent cancel");
    assert_eq!(b.cancel_group_leftovers("g1", 10).await.unwrap(), 1);
    assert_eq!(b.cancel_group_leftovers("g2", 10).await.unwrap(), 0);
    let p = progress(h, "g1", 100).await;
    assert_eq!((p.remaining(), p.cancelled), (0, 8), "{p:?}");
}

/// A delivery counts in its group once, in the transaction that applies it: a fenced
/// settlement counts nothing, a delivery kept as a done row (retention) counts once and
/// is not live; deliveries at different times move the rate window.
pub async fn delivered_counts_only_what_applied<H: PortHarness>(h: &H) {
    let b = h.backend();
    insert(h, &[grouped("g1", 1), grouped("g1", 2), grouped("g1", 3)]).await;
    let c = claim(h, T, "w1", 3, at(10)).await;
    // The lease of the third ran out and another worker took it over.
    let over = at(10) + LEASE + std::time::Duration::from_millis(1);
    assert_eq!(b.rescue_expired(&[T], Now::At(over)).await.unwrap(), 3);
    let again = claim(h, T, "w2", 3, over).await;
    assert_eq!(again.len(), 3);
    let kept = Settle::Done {
        keep: true,
        note: None,
    };
    let settled = b
        .settle(
            "w2",
            &[settlement(&again[0], done()), settlement(&again[1], kept)],
            Now::At(over),
        )
        .await
        .unwrap();
    assert_eq!(settled.applied, 2);
    let stale = b
        .settle("w1", &[settlement(&c[2], done())], Now::At(over))
        .await
        .unwrap();
    assert_eq!((stale.applied, stale.fenced.len()), (0, 1));
    let p = progress(h, "g1", 100_000).await;
    assert_eq!((p.delivered, p.running, p.remaining()), (2, 1, 1), "{p:?}");
    let later = over + std::time::Duration::from_secs(20);
    b.settle("w2", &[settlement(&again[2], done())], Now::At(later))
        .await
        .unwrap();
    let p = progress(h, "g1", 100_000).await;
    assert_eq!((p.delivered, p.remaining()), (3, 0), "{p:?}");
    assert_eq!(p.last_delivered_at, Some(later));
}

/// A buried message keeps its group in the dead letters (counted there as dead), and a
/// requeue brings it back into its group.
pub async fn the_dead_letters_keep_the_group<H: PortHarness>(h: &H) {
    let b = h.backend();
    let written = insert(h, &[grouped("g1", 1)]).await;
    let c = claim(h, T, "w1", 1, at(10)).await;
    let bury = Settle::Bury {
        reason: "rejected".into(),
    };
    b.settle("w1", &[settlement(&c[0], bury)], Now::At(at(20)))
        .await
        .unwrap();
    assert_eq!(progress(h, "g1", 30).await.dead, 1);
    let requeued = b
        .requeue_dead(&DeadLetterFilter::default(), Now::At(at(40)))
        .await
        .unwrap();
    assert_eq!(requeued.requeued, 1);
    let p = progress(h, "g1", 50).await;
    assert_eq!((p.dead, p.pending), (0, 1));
    let live = b
        .list_live(
            &LiveFilter::id(written[0].as_str()),
            None,
            1,
            Now::At(at(50)),
        )
        .await
        .unwrap();
    assert_eq!(live[0].group.as_deref(), Some("g1"));
}

/// A completion hook fires once the group has nothing queued or running, once (a second
/// call finds nothing to fire), and enqueues its message with the hook's type, payload,
/// attempts and priority; a hook set again is armed again.
pub async fn the_completion_hook_fires_once<H: PortHarness>(h: &H) {
    let b = h.backend();
    insert(h, &[grouped("g1", 1)]).await;
    let hook = GroupHook {
        type_tag: "port_group_done".into(),
        payload: br#"{"campaign":7}"#.to_vec(),
        max_attempts: 4,
        priority: 9,
    };
    b.set_group_hook("g1", &hook).await.expect("set a hook");
    let new_id = || MessageId::generate().to_string();
    let none = b.fire_group_hooks(Now::At(at(5)), &new_id).await.unwrap();
    assert!(none.is_empty(), "a queued message is left");
    let c = claim(h, T, "w1", 1, at(10)).await;
    let none = b.fire_group_hooks(Now::At(at(15)), &new_id).await.unwrap();
    assert!(none.is_empty(), "a running message is left");
    b.settle("w1", &[settlement(&c[0], done())], Now::At(at(20)))
        .await
        .unwrap();
    let fired = b.fire_group_hooks(Now::At(at(30)), &new_id).await.unwrap();
    assert_eq!(fired, ["g1"]);
    let again = b.fire_group_hooks(Now::At(at(40)), &new_id).await.unwrap();
    assert!(again.is_empty(), "fired once");
    let p = progress(h, "g1", 50).await;
    assert_eq!(p.hook.as_deref(), Some("port_group_done"));
    assert_eq!(p.completed_at, Some(at(30)));

    let done_msgs = claim(h, "port_group_done", "w1", 10, at(60)).await;
    assert_eq!(done_msgs.len(), 1);
    let m = &done_msgs[0];
    assert_eq!(m.payload, br#"{"campaign":7}"#.to_vec());
    assert_eq!(
        (m.max_attempts, m.priority, m.group.as_deref()),
        (4, 9, None)
    );
    assert_eq!(m.due_at, at(30));

    b.set_group_hook("g1", &hook).await.unwrap();
    let rearmed = b.fire_group_hooks(Now::At(at(70)), &new_id).await.unwrap();
    assert_eq!(rearmed, ["g1"], "set again, armed again");
}

/// A group's rate and ETA follow its deliveries at the read's time: right after a
/// delivery it has both; thirteen minutes after its last delivery (an idle group) and once
/// nothing remains (a finished group) it has neither.
pub async fn an_idle_or_finished_group_has_no_rate<H: PortHarness>(h: &H) {
    let b = h.backend();
    insert(h, &(1..=10).map(|n| grouped("g1", n)).collect::<Vec<_>>()).await;
    let c = claim(h, T, "w1", 6, at(10)).await;
    assert_eq!(c.len(), 6);
    let delivered: Vec<_> = c[..5].iter().map(|m| settlement(m, done())).collect();
    b.settle("w1", &delivered, Now::At(at(1_000)))
        .await
        .expect("settle");

    let p = progress(h, "g1", 2_000).await;
    assert_eq!((p.delivered, p.remaining()), (5, 5), "{p:?}");
    assert!(p.rate > 0.0, "delivering: {p:?}");
    assert!(p.eta().is_some(), "delivering: {p:?}");

    let idle = progress(h, "g1", 1_000 + 13 * 60_000).await;
    assert_eq!(
        idle.rate, 0.0,
        "13 minutes after the last delivery: {idle:?}"
    );
    assert_eq!(idle.eta(), None, "{idle:?}");
    let listed = b.groups(Now::At(at(1_000 + 13 * 60_000))).await.unwrap();
    assert_eq!(listed[0].rate, 0.0, "{listed:?}");

    // The rest delivered (the running one and the four still queued): finished.
    let rest = claim(h, T, "w1", 10, at(1_100)).await;
    let mut last: Vec<_> = rest.iter().map(|m| settlement(m, done())).collect();
    last.push(settlement(&c[5], done()));
    b.settle("w1", &last, Now::At(at(1_200)))
        .await
        .expect("settle");
    let done_now = progress(h, "g1", 1_300).await;
    assert_eq!(
        (done_now.delivered, done_now.remaining()),
        (10, 0),
        "{done_now:?}"
    );
    assert_eq!(done_now.rate, 0.0, "finished: {done_now:?}");
    assert_eq!(done_now.eta(), None);
}
