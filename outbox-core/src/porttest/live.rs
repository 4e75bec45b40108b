//! Live messages: listing and counting by filter with each row's state, keyset paging
//! under concurrent deletes, show, retry now and cancel ([`LiveMessageStore`]).

use std::collections::HashSet;

use super::{at, claim, ids, insert, message, settlement, t0, PortHarness, LEASE};
use crate::{
    clock::{Due, Now},
    enqueue::MessageId,
    enqueue::NewMessage,
    store::{
        FailedAttempt, LiveFilter, LiveMessage, LiveMessageStore, LiveState, PauseStore,
        QueueStore, Settle,
    },
};

/// The type most cases use.
const A: &str = "port_live_a";
/// Another type (paused in the filter case).
const B: &str = "port_live_b";

/// A message of `t` numbered `n` with idempotency key `key`.
fn keyed(t: &'static str, n: u32, key: &str) -> NewMessage {
    NewMessage {
        idempotency_key: Some(key.to_owned()),
        ..message(t, n)
    }
}

/// The ids of a page of live messages matching `filter` at `now_ms`.
async fn list<H: PortHarness>(h: &H, filter: &LiveFilter, now_ms: u64) -> Vec<MessageId> {
    let page = h
        .backend()
        .list_live(filter, None, 1000, Now::At(at(now_ms)))
        .await
        .expect("list live messages");
    page.into_iter().map(|m| m.id).collect()
}

/// One live message as a list shows it at `now_ms`.
async fn one<H: PortHarness>(h: &H, id: &MessageId, now_ms: u64) -> LiveMessage {
    let mut page = h
        .backend()
        .list_live(&LiveFilter::id(id.as_str()), None, 10, Now::At(at(now_ms)))
        .await
        .expect("list one live message");
    assert_eq!(page.len(), 1, "message {id} is live");
    page.remove(0)
}

/// Four messages of [`A`] in each state and one of [`B`] (paused), as of +100 ms.
struct Mixed {
    /// Retrying: failed once with "421 mailbox busy", due at +30 s. Key "order-1".
    retrying: MessageId,
    /// Running, leased to "w1" at +20 ms. Key "order-2".
    running: MessageId,
    /// Pending (due at t0). Key "invoice-9".
    pending: MessageId,
    /// Scheduled (due at +60 s), no key.
    scheduled: MessageId,
    /// Pending, of the paused type [`B`].
    paused: MessageId,
}

/// Writes [`Mixed`].
async fn mixed<H: PortHarness>(h: &H) -> Mixed {
    // Ids increase in the order the messages are made.
    let written = insert(
        h,
        &[
            keyed(A, 1, "order-1"),
            keyed(A, 2, "order-2"),
            keyed(A, 3, "invoice-9"),
            NewMessage {
                due: Due::At(at(60_000)),
                ..message(A, 4)
            },
            message(B, 5),
        ],
    )
    .await;
    let c = claim(h, A, "w1", 1, at(10)).await;
    assert_eq!(ids(&c), vec![written[0].clone()]);
    let retry = Settle::Retry {
        due: Due::At(at(30_000)),
        error: "421 mailbox busy".into(),
        give_back_attempt: false,
    };
    let s = h
        .backend()
        .settle("w1", &[settlement(&c[0], retry)], Now::At(at(15)))
        .await
        .unwrap();
    assert_eq!(s.applied, 1);
    let c = claim(h, A, "w1", 1, at(20)).await;
    assert_eq!(ids(&c), vec![written[1].clone()]);
    h.backend().pause(B, "test", Now::At(at(30))).await.unwrap();
    Mixed {
        retrying: written[0].clone(),
        running: written[1].clone(),
        pending: written[2].clone(),
        scheduled: written[3].clone(),
        paused: written[4].clone(),
    }
}

/// Lists (by id) and counts narrow by id, type, state (as the status counts define them),
/// key prefix and error text (both case-sensitive) and their combinations; every row says
/// its state, attempts, due time, last error, attempt log, lease and whether its type is
/// paused; show adds the payload. Done rows are not live.
pub async fn live_list_and_count_by_filters<H: PortHarness>(h: &H) {
    let m = mixed(h).await;
    let b = h.backend();
    let now = Now::At(at(100));
    let all = vec![
        m.retrying.clone(),
        m.running.clone(),
        m.pending.clone(),
        m.scheduled.clone(),
        m.paused.clone(),
    ];
    let cases: Vec<(LiveFilter, Vec<MessageId>)> = vec![
        (LiveFilter::all(), all.clone()),
        (LiveFilter::type_tag(B), vec![m.paused.clone()]),
        (
            LiveFilter::all().state(LiveState::Pending),
            vec![m.pending.clone()],
        ),
        (
            LiveFilter::all().state(LiveState::Paused),
            vec![m.paused.clone()],
        ),
        (
            LiveFilter::all().state(LiveState::Scheduled),
            vec![m.scheduled.clone()],
        ),
        (
            LiveFilter::all().state(LiveState::Running),
            vec![m.running.clone()],
        ),
        (
            LiveFilter::all().state(LiveState::Retrying),
            vec![m.retrying.clone()],
        ),
        (
            LiveFilter::type_tag(A).state(LiveState::Pending),
            vec![m.pending.clone()],
        ),
        (
            LiveFilter::all().key_prefix("order-"),
            vec![m.retrying.clone(), m.running.clone()],
        ),
        (LiveFilter::all().key_prefix("Order-"), vec![]),
        (
            LiveFilter::all().key_prefix("invoice"),
            vec![m.pending.clone()],
        ),
        (
            LiveFilter::all()
                .key_prefix("order-")
                .state(LiveState::Running),
            vec![m.running.clone()],
        ),
        (
            LiveFilter::all().error_contains("mailbox"),
            vec![m.retrying.clone()],
        ),
        (LiveFilter::all().error_contains("MAILBOX"), vec![]),
        (
            LiveFilter::id(m.scheduled.as_str()),
            vec![m.scheduled.clone()],
        ),
        (LiveFilter::id(m.scheduled.as_str()).of_type(B), vec![]),
    ];
    for (filter, expected) in &cases {
        assert_eq!(&list(h, filter, 100).await, expected, "list {filter:?}");
        assert_eq!(
            b.count_live(filter, now).await.unwrap(),
            expected.len() as u64,
            "count {filter:?}"
        );
    }

    // The state is read at the time given: at +60 s the scheduled one is pending.
    let later = list(h, &LiveFilter::all().state(LiveState::Pending), 60_000).await;
    assert!(later.contains(&m.scheduled));

    let retrying = one(h, &m.retrying, 100).await;
    assert_eq!(retrying.state, LiveState::Retrying);
    assert_eq!((retrying.attempts, retrying.max_attempts), (1, 3));
    assert_eq!(retrying.due_at, at(30_000));
    assert_eq!(retrying.idempotency_key.as_deref(), Some("order-1"));
    assert_eq!(retrying.last_error.as_deref(), Some("421 mailbox busy"));
    assert_eq!(
        retrying.attempt_log,
        vec![FailedAttempt {
            attempt: 1,
            at: at(15),
            error: "421 mailbox busy".into(),
        }]
    );
    assert_eq!(
        (retrying.lease_owner, retrying.lease_expires_at),
        (None, None)
    );
    assert_eq!(retrying.group, None);

    let running = one(h, &m.running, 100).await;
    assert_eq!(running.state, LiveState::Running);
    assert_eq!(running.attempts, 1);
    assert_eq!(running.lease_owner.as_deref(), Some("w1"));
    assert_eq!(running.lease_expires_at, Some(at(20) + LEASE));
    assert!(running.attempt_log.is_empty());
    assert_eq!(running.last_error, None);

    let scheduled = one(h, &m.scheduled, 100).await;
    assert_eq!(scheduled.state, LiveState::Scheduled);
    assert_eq!((scheduled.attempts, scheduled.due_at), (0, at(60_000)));
    assert_eq!(scheduled.type_tag, A);

    let paused = one(h, &m.paused, 100).await;
    assert_eq!(paused.state, LiveState::Paused);
    assert_eq!(paused.due_at, t0());

    let shown = b
        .show_live(m.retrying.as_str(), now)
        .await
        .unwrap()
        .expect("show a live message");
    assert_eq!(shown.payload, b"{\"n\":1}");
    assert_eq!(shown.message, one(h, &m.retrying, 100).await);
    assert_eq!(b.show_live("no-such-id", now).await.unwrap(), None);

    // Delivered and kept (retention): not live any more.
    let c = claim(h, A, "w2", 10, at(200)).await;
    assert_eq!(ids(&c), vec![m.pending.clone()]);
    let done = Settle::Done {
        keep: true,
        note: None,
    };
    b.settle("w2", &[settlement(&c[0], done)], Now::At(at(300)))
        .await
        .unwrap();
    assert!(list(h, &LiveFilter::id(m.pending.as_str()), 300)
        .await
        .is_empty());
    assert_eq!(b.show_live(m.pending.as_str(), now).await.unwrap(), None);
    assert_eq!(b.count_live(&LiveFilter::all(), now).await.unwrap(), 4);
}

/// Paging 2,500 messages 100 at a time by key, while rows are deleted between page reads
/// (the last row read, the next row to read) and by a concurrent task: no message shows
/// twice, and every message that exists throughout shows once, in id order.
pub async fn keyset_paging_survives_concurrent_deletes<H: PortHarness>(h: &H) {
    let b = h.backend();
    let mut written = Vec::new();
    for chunk in 0..5u32 {
        let rows: Vec<NewMessage> = (0..500).map(|n| message(A, chunk * 500 + n)).collect();
        written.extend(insert(h, &rows).await);
    }
    let mut sorted = written.clone();
    sorted.sort();
    let now = Now::At(at(100));
    let cancel = |id: MessageId| async move {
        b.cancel_live(&LiveFilter::id(id.as_str()), now, 10)
            .await
            .expect("cancel one")
    };

    // Every 7th message (by id) goes while the pages are read.
    let doomed: Vec<MessageId> = sorted.iter().skip(3).step_by(7).cloned().collect();
    let deleter = async {
        for id in &doomed {
            cancel(id.clone()).await;
            tokio::task::yield_now().await;
        }
    };
    let mut deleted_between = HashSet::new();
    let pager = async {
        let mut seen: Vec<MessageId> = Vec::new();
        let mut after: Option<MessageId> = None;
        let mut pages = 0u32;
        loop {
            let page = b
                .list_live(
                    &LiveFilter::all(),
                    after.as_ref().map(|a| a.as_str()),
                    100,
                    now,
                )
                .await
                .expect("read a page");
            let Some(last) = page.last().map(|m| m.id.clone()) else {
                break;
            };
            seen.extend(page.into_iter().map(|m| m.id));
            pages += 1;
            // On every other page, the cursor's own row; on the others, the row that
            // would come next.
            let doomed_now = if pages % 2 == 0 {
                Some(last.clone())
            } else {
                sorted.iter().find(|id| **id > last).cloned()
            };
            if let Some(id) = doomed_now {
                if cancel(id.clone()).await == 1 {
                    deleted_between.insert(id);
                }
            }
            after = Some(last);
        }
        seen
    };
    let ((), seen) = tokio::join!(deleter, pager);

    let unique: HashSet<&MessageId> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no message listed twice");
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "pages come in id order"
    );
    let gone: HashSet<&MessageId> = doomed.iter().chain(deleted_between.iter()).collect();
    for id in &sorted {
        if !gone.contains(id) {
            assert!(
                unique.contains(id),
                "message {id} existed throughout and was listed"
            );
        }
    }
    let left = b.count_live(&LiveFilter::all(), now).await.unwrap();
    assert_eq!(left, (sorted.len() - gone.len()) as u64);
    assert!(
        deleted_between.len() > 20,
        "rows were deleted between pages"
    );
}

/// Retry now makes the matching queued messages due later due now, keeping attempts, the
/// attempt log and the error; running messages and messages already due are left as
/// they are (and not counted); the type is then due and claimed in the usual order.
pub async fn retry_now_moves_due_keeps_attempts_skips_running<H: PortHarness>(h: &H) {
    let m = mixed(h).await;
    let b = h.backend();
    let now = Now::At(at(100));
    let running_before = one(h, &m.running, 100).await;
    let retrying_before = one(h, &m.retrying, 100).await;

    assert_eq!(
        b.retry_live_now(&LiveFilter::id(m.running.as_str()), now, 10)
            .await
            .unwrap(),
        0,
        "a running message is left alone"
    );
    let behind = Now::At(t0() - std::time::Duration::from_millis(1));
    assert_eq!(
        b.retry_live_now(&LiveFilter::id(m.running.as_str()), behind, 10)
            .await
            .unwrap(),
        0,
        "a running message is left alone even by a clock behind its due time"
    );
    assert_eq!(
        b.retry_live_now(&LiveFilter::id(m.pending.as_str()), now, 10)
            .await
            .unwrap(),
        0,
        "a due message keeps its place"
    );
    assert_eq!(b.due_types(&[A], Now::At(at(100))).await.unwrap(), vec![A]);
    // Batches of one: two batches move two messages.
    assert_eq!(
        b.retry_live_now(&LiveFilter::type_tag(A), now, 1)
            .await
            .unwrap(),
        2
    );

    let retrying = one(h, &m.retrying, 100).await;
    assert_eq!(retrying.due_at, at(100));
    assert_eq!(retrying.state, LiveState::Retrying, "attempts are kept");
    assert_eq!(
        LiveMessage {
            due_at: retrying_before.due_at,
            ..retrying.clone()
        },
        retrying_before,
        "only the due time changed"
    );
    let scheduled = one(h, &m.scheduled, 100).await;
    assert_eq!(
        (scheduled.due_at, scheduled.state),
        (at(100), LiveState::Pending)
    );
    assert_eq!(one(h, &m.running, 100).await, running_before);
    assert_eq!(
        one(h, &m.paused, 100).await.due_at,
        t0(),
        "other type untouched"
    );

    // Nothing left to move.
    assert_eq!(
        b.retry_live_now(&LiveFilter::all(), now, 10).await.unwrap(),
        0
    );
    let c = claim(h, A, "w2", 10, at(100)).await;
    assert_eq!(
        ids(&c),
        vec![m.pending.clone(), m.retrying.clone(), m.scheduled.clone()],
        "claimed by due time then id"
    );
    assert_eq!(c[1].attempt, 2, "the retried message's next attempt");
}

/// Cancel deletes exactly the matching queued messages, however many batches that takes,
/// never a running one (which still settles), and says how many.
pub async fn cancel_removes_queued_matching_in_batches<H: PortHarness>(h: &H) {
    let b = h.backend();
    let now = Now::At(at(100));
    let rows: Vec<NewMessage> = (0..250).map(|n| keyed(A, n, &format!("c-{n}"))).collect();
    insert(h, &rows).await;
    let others = insert(h, &[keyed(B, 1, "c-x"), keyed(B, 2, "d-y"), message(B, 3)]).await;
    let running = claim(h, A, "w1", 5, at(10)).await;
    assert_eq!(running.len(), 5);

    assert_eq!(
        b.cancel_live(&LiveFilter::id(running[0].id.as_str()), now, 100)
            .await
            .unwrap(),
        0,
        "a running message is not cancelled"
    );
    assert_eq!(
        b.cancel_live(&LiveFilter::type_tag(A), now, 100)
            .await
            .unwrap(),
        245
    );
    let left = list(h, &LiveFilter::type_tag(A), 100).await;
    assert_eq!(left, ids(&running), "only the running ones are left");
    assert_eq!(
        b.count_live(&LiveFilter::type_tag(B), now).await.unwrap(),
        3
    );

    assert_eq!(
        b.cancel_live(&LiveFilter::all().key_prefix("d-"), now, 100)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        b.cancel_live(&LiveFilter::id(others[0].as_str()), now, 100)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        b.cancel_live(&LiveFilter::id(others[0].as_str()), now, 100)
            .await
            .unwrap(),
        0,
        "already gone"
    );
    assert_eq!(
        list(h, &LiveFilter::type_tag(B), 100).await,
        vec![others[2].clone()]
    );

    // The running ones finish as usual.
    let done: Vec<_> = running
        .iter()
        .map(|c| {
            settlement(
                c,
                Settle::Done {
                    keep: false,
                    note: None,
                },
            )
        })
        .collect();
    let s = b.settle("w1", &done, Now::At(at(200))).await.unwrap();
    assert_eq!(s.applied, 5);
}

/// A message whose type names a recipient is found by it: the enqueue writes the probe's
/// address (lowercased) as the row's recipient, one message alone or in a batch; the filter
/// (lowercased by [`LiveFilter::to`]) lists, counts, retries and cancels only that
/// recipient's messages, never one without a recipient; a dead letter keeps it, is found
/// by it, and a requeue by it brings it back with it.
pub async fn live_messages_are_found_by_recipient<H: PortHarness>(h: &H) {
    use crate::store::{DeadLetterFilter, DeadLetterStore, SuppressionProbe};
    let to = |n: u32, address: &str| NewMessage {
        suppression: SuppressionProbe::new(address, None, true, A, None),
        ..message(A, n)
    };
    let alone = insert(h, &[to(1, "Ann@Example.COM")]).await;
    let batch = insert(
        h,
        &[
            to(2, "bob@example.com"),
            message(A, 3),
            to(4, "ann@example.com"),
        ],
    )
    .await;
    let (ann1, bob, none, ann2) = (
        alone[0].clone(),
        batch[0].clone(),
        batch[1].clone(),
        batch[2].clone(),
    );
    let b = h.backend();
    let ann = LiveFilter::all().to(" ANN@example.com");
    assert_eq!(ann.recipient.as_deref(), Some("ann@example.com"));
    assert_eq!(list(h, &ann, 0).await, vec![ann1.clone(), ann2.clone()]);
    assert_eq!(b.count_live(&ann, Now::At(at(0))).await.unwrap(), 2);
    let bobs = LiveFilter::all().to("bob@example.com");
    assert_eq!(list(h, &bobs, 0).await, vec![bob.clone()]);
    assert_eq!(
        list(h, &LiveFilter::all().to("nobody@example.com"), 0).await,
        vec![]
    );
    assert_eq!(list(h, &LiveFilter::all(), 0).await.len(), 4);
    assert!(list(h, &LiveFilter::id(none.as_str()), 0).await == vec![none.clone()]);

    // Retry now and cancel apply to that recipient only.
    let later = NewMessage {
        due: Due::At(at(60_000)),
        ..to(5, "carol@example.com")
    };
    let carol = insert(h, &[later, message(B, 6)]).await[0].clone();
    let carols = LiveFilter::all().to("carol@example.com");
    assert_eq!(
        b.retry_live_now(&carols, Now::At(at(10)), 10)
            .await
            .unwrap(),
        1
    );
    assert_eq!(one(h, &carol, 20).await.state, LiveState::Pending);
    assert_eq!(b.cancel_live(&bobs, Now::At(at(20)), 10).await.unwrap(), 1);
    assert_eq!(list(h, &bobs, 30).await, vec![]);
    assert_eq!(list(h, &LiveFilter::all().of_type(A), 30).await.len(), 4);

    // Buried, the recipient stays with the dead letter; requeued, it is found again.
    let c = claim(h, A, "w1", 1, at(100)).await;
    assert_eq!(ids(&c), vec![ann1.clone()]);
    let bury = Settle::Bury {
        reason: "550 no such user".into(),
    };
    b.settle("w1", &[settlement(&c[0], bury)], Now::At(at(200)))
        .await
        .unwrap();
    assert_eq!(list(h, &ann, 300).await, vec![ann2.clone()]);
    let dead = DeadLetterFilter::all().to("ANN@example.com");
    assert_eq!(dead.recipient.as_deref(), Some("ann@example.com"));
    let found = b.list_dead(&dead, 10, 0).await.unwrap();
    assert_eq!(
        found.iter().map(|d| d.id.clone()).collect::<Vec<_>>(),
        vec![ann1.clone()]
    );
    assert_eq!(b.count_dead(&dead).await.unwrap(), 1);
    let nobody = DeadLetterFilter::all().to("bob@example.com");
    assert_eq!(b.count_dead(&nobody).await.unwrap(), 0);
    assert_eq!(b.purge_dead(&nobody).await.unwrap(), 0);
    let requeued = b.requeue_dead(&nobody, Now::At(at(400))).await.unwrap();
    assert_eq!(requeued.requeued, 0);
    let requeued = b.requeue_dead(&dead, Now::At(at(400))).await.unwrap();
    assert_eq!(requeued.requeued, 1);
    assert_eq!(list(h, &ann, 500).await, vec![ann1, ann2]);
}
