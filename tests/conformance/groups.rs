//! Groups steered while workers in two processes deliver them, and live listing while
//! workers delete rows.

use std::{
    collections::HashSet,
    process::Child,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use outbox::{enqueue_many_with, prelude::*, LiveFilter};
use serde::{Deserialize, Serialize};

use super::{cases::Mail, harness::Harness, processes::spawn_child};

/// The completion message of a group, delivered by a worker process.
#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "conf.group_done")]
pub struct GroupDone {
    pub group: String,
}

/// The group the cases steer.
const GROUP: &str = "campaign-7";

/// Prefix of a completion message's delivery record (a mail's record is its id alone).
const DONE: &str = "done:";

/// The worker process of the group case: delivers `conf.mail` (4 ms each, 4 at a time)
/// and the group's completion message, recording each start, until killed.
pub async fn group_child<H: Harness>(h: Arc<H>) {
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&h))
        .register_with::<Mail, _>(
            |_: Mail, ctx: MessageContext<Arc<H>>| async move {
                ctx.state().record_delivery(ctx.id().as_str()).await;
                tokio::time::sleep(Duration::from_millis(4)).await;
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new().concurrency(4),
        )
        .register_with::<GroupDone, _>(
            |_: GroupDone, ctx: MessageContext<Arc<H>>| async move {
                let record = format!("{DONE}{}", ctx.id());
                ctx.state().record_delivery(&record).await;
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new(),
        )
        .shutdown_timeout(Duration::from_secs(1));
    outbox.run_until(std::future::pending()).await.unwrap();
}

/// The group the cancel case cancels.
const CANCELLED: &str = "campaign-9";

/// The worker process of the cancel case: delivers `conf.mail` slowly (40 ms each, 4 at a
/// time) from claims of 100, so each process holds many claimed messages not yet started,
/// recording each start, until killed.
pub async fn slow_group_child<H: Harness>(h: Arc<H>) {
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&h))
        .register_with::<Mail, _>(
            |_: Mail, ctx: MessageContext<Arc<H>>| async move {
                ctx.state().record_delivery(ctx.id().as_str()).await;
                tokio::time::sleep(Duration::from_millis(40)).await;
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new().concurrency(4).batch_size(100),
        )
        .shutdown_timeout(Duration::from_secs(1));
    outbox.run_until(std::future::pending()).await.unwrap();
}

/// Two worker processes each hold up to 150 claimed mails of a group (a second of work)
/// when it is cancelled: no mail starts later than 0.5 s after `cancel()` returned, the
/// bound pause keeps (the figure is printed); delivered + cancelled add up to what was
/// enqueued, and a mail enqueued into the group after the cancel is delivered.
pub async fn cancel_stops_claimed_mails_in_two_processes<H: Harness>() {
    const N: u64 = 3_000;
    let h = H::new().await;
    let mails: Vec<Mail> = (0..N as i64).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many_with(&mut *tx, &mails, EnqueueOptions::new().group(CANCELLED))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let groups = Outbox::new(h.backend()).admin().groups();
    let mut children: Vec<Child> = (0..2)
        .map(|_| spawn_child(H::NAME, "slow-group", &h.url()))
        .collect();
    until("100 starts", Duration::from_secs(60), async || {
        h.deliveries().await.len() >= 100
    })
    .await;

    let cancelled = groups.cancel(CANCELLED).await.unwrap();
    let cancel_ms = unix_ms(SystemTime::now());
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let starts = h.delivery_times().await;
    let late: Vec<i64> = starts
        .iter()
        .map(|d| d.2 - cancel_ms)
        .filter(|late| *late > 0)
        .collect();
    let last = late.iter().copied().max().unwrap_or(0);
    println!(
        "{}: {} mails started after cancel() returned, the last {last} ms after ({} in all)",
        H::NAME,
        late.len(),
        starts.len()
    );
    assert!(
        last <= 500,
        "a mail started {last} ms after the group was cancelled ({} started after it)",
        late.len()
    );
    until(
        "the group's running mails to finish",
        Duration::from_secs(30),
        async || groups.show(CANCELLED).await.unwrap().unwrap().remaining() == 0,
    )
    .await;

    // The group's name can be used again: a mail enqueued after the cancel goes out.
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many_with(
        &mut *tx,
        &[Mail { n: 99_999 }],
        EnqueueOptions::new().group(CANCELLED),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    until(
        "the later mail's delivery",
        Duration::from_secs(30),
        async || {
            groups.show(CANCELLED).await.unwrap().unwrap().remaining() == 0
                && h.deliveries().await.len() > starts.len()
        },
    )
    .await;
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }

    let deliveries = h.deliveries().await;
    let distinct: HashSet<&str> = deliveries.iter().map(|d| d.0.as_str()).collect();
    let p = groups.show(CANCELLED).await.unwrap().unwrap();
    println!(
        "{}: {cancelled} cancelled by the call; final {p:?}",
        H::NAME
    );
    assert_eq!(distinct.len(), deliveries.len(), "no mail started twice");
    assert_eq!(
        (
            p.delivered,
            p.delivered + p.cancelled,
            p.dead,
            p.remaining()
        ),
        (deliveries.len() as u64, N + 1, 0, 0),
        "delivered and cancelled add up; {p:?}"
    );
    assert!(p.cancelled >= cancelled && cancelled > 0, "{p:?}");
}

fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// Waits until `done` says so, polling every 20 ms; panics after `limit`.
async fn until(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within {limit:?}");
}

/// 3,000 mails in one group, delivered by two worker processes while the test pauses,
/// resumes and cancels the group: no new start later than 0.5 s after `pause()` returned
/// (the figure is printed), nothing starts while paused, the progress adds up to 3,000 at
/// every sample, cancel removes exactly what had not started (delivered + cancelled =
/// 3,000, no mail started twice; claimed mails are cancelled by the workers), the delivered count equals the starts recorded, and the
/// completion hook's message is delivered once.
pub async fn two_processes_steer_a_group<H: Harness>() {
    const N: u64 = 3_000;
    let h = H::new().await;
    let mails: Vec<Mail> = (0..N as i64).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many_with(&mut *tx, &mails, EnqueueOptions::new().group(GROUP))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let groups = Outbox::new(h.backend()).admin().groups();
    groups
        .on_complete(
            GROUP,
            &GroupDone {
                group: GROUP.into(),
            },
        )
        .await
        .unwrap();

    // Every sample of the progress adds up to what was enqueued.
    let sampling = Arc::new(AtomicBool::new(true));
    let samples = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (groups, sampling, samples) = (groups.clone(), sampling.clone(), samples.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::SeqCst) {
                let p = groups
                    .show(GROUP)
                    .await
                    .unwrap()
                    .expect("the group is known");
                assert_eq!(
                    p.total(),
                    N,
                    "a sample of the progress does not add up: {p:?}"
                );
                samples.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let delivered = async || groups.show(GROUP).await.unwrap().unwrap().delivered;

    let mut children: Vec<Child> = (0..2)
        .map(|_| spawn_child(H::NAME, "group", &h.url()))
        .collect();
    until("600 deliveries", Duration::from_secs(60), async || {
        delivered().await >= 600
    })
    .await;

    groups.pause(GROUP, "wrong subject").await.unwrap();
    let paused_ms = unix_ms(SystemTime::now());
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let starts = h.delivery_times().await;
    let last_start = starts.iter().map(|d| d.2).max().unwrap_or(0);
    let late = (last_start - paused_ms).max(0);
    println!(
        "{}: the last mail started {late} ms after pause() returned ({} started before)",
        H::NAME,
        starts.len()
    );
    assert!(
        late <= 500,
        "a mail started {late} ms after the group was paused"
    );
    let p = groups.show(GROUP).await.unwrap().unwrap();
    assert!(p.is_paused(), "{p:?}");
    assert_eq!(
        (p.running, p.pending, p.retrying, p.scheduled),
        (0, 0, 0, 0),
        "every unfinished mail is paused: {p:?}"
    );
    assert!(p.paused > 0 && p.eta().is_none(), "{p:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        h.deliveries().await.len(),
        starts.len(),
        "nothing starts while paused"
    );

    assert!(groups.resume(GROUP).await.unwrap());
    let resumed_at = starts.len() as u64;
    until("600 more deliveries", Duration::from_secs(60), async || {
        delivered().await >= resumed_at + 600
    })
    .await;
    let cancelled = groups.cancel(GROUP).await.unwrap();
    until(
        "the group's running mails to finish",
        Duration::from_secs(30),
        async || groups.show(GROUP).await.unwrap().unwrap().remaining() == 0,
    )
    .await;
    until(
        "the completion message's delivery",
        Duration::from_secs(30),
        async || h.deliveries().await.iter().any(|d| d.0.starts_with(DONE)),
    )
    .await;
    // Long enough for a second firing of the hook to show.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    sampling.store(false, Ordering::SeqCst);
    sampler.await.expect("every sample added up");
    for c in &mut children {
        let _ = c.kill();
        let _ = c.wait();
    }

    let deliveries = h.deliveries().await;
    let (hooks, mails): (Vec<_>, Vec<_>) = deliveries.iter().partition(|d| d.0.starts_with(DONE));
    let distinct: HashSet<&str> = mails.iter().map(|d| d.0.as_str()).collect();
    let pids: HashSet<i64> = mails.iter().map(|d| d.1).collect();
    let p = groups.show(GROUP).await.unwrap().unwrap();
    println!(
        "{}: {} mails delivered by {} processes, {cancelled} cancelled, {} progress samples all adding up to {N}; final {p:?}",
        H::NAME,
        mails.len(),
        pids.len(),
        samples.load(Ordering::SeqCst)
    );
    assert_eq!(distinct.len(), mails.len(), "no mail started twice");
    // The call deletes what was queued; the workers delete what they had claimed.
    assert_eq!(
        mails.len() as u64 + p.cancelled,
        N,
        "cancel removed exactly the mails that had not started"
    );
    assert_eq!(
        (p.delivered, p.dead, p.remaining()),
        (mails.len() as u64, 0, 0)
    );
    assert!(
        cancelled > 0 && p.cancelled >= cancelled,
        "the cancel came before the end: {p:?}"
    );
    assert_eq!(hooks.len(), 1, "the completion message was delivered once");
    assert!(p.completed_at.is_some(), "{p:?}");
}

/// Paging through 10,000 live messages 500 at a time while a worker delivers (deletes)
/// them: no message is listed twice, and every message is either listed or was delivered
/// by the end of the listing (no gaps).
pub async fn live_listing_pages_without_repeats_or_gaps<H: Harness>() {
    let h = Arc::new(H::new().await);
    let mails: Vec<Mail> = (0..10_000).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    let written = outbox::enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let all: HashSet<String> = written.iter().map(|e| e.id().to_string()).collect();
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&h)).register_with::<Mail, _>(
        |_: Mail, ctx: MessageContext<Arc<H>>| async move {
            ctx.state().record_delivery(ctx.id().as_str()).await;
            Ok::<(), HandlerError>(())
        },
        QueueOptions::new().concurrency(2),
    );
    let live = outbox.admin().messages();
    outbox
        .run_until(async {
            until(
                "the first deliveries",
                Duration::from_secs(30),
                async || !h.deliveries().await.is_empty(),
            )
            .await;
            let before = h.deliveries().await.len();
            let mut listed: Vec<String> = Vec::new();
            let mut after = None;
            let mut pages = 0;
            loop {
                let page = live
                    .list(&LiveFilter::all(), after.as_ref(), 500)
                    .await
                    .unwrap();
                pages += 1;
                listed.extend(page.messages.iter().map(|m| m.id.to_string()));
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            let delivered: HashSet<String> =
                h.deliveries().await.into_iter().map(|d| d.0).collect();
            let distinct: HashSet<&String> = listed.iter().collect();
            let gaps: Vec<&String> = all
                .iter()
                .filter(|id| !distinct.contains(id) && !delivered.contains(*id))
                .collect();
            println!(
                "{}: {pages} pages listed {} of 10,000 while {} more were delivered",
                H::NAME,
                listed.len(),
                delivered.len() - before
            );
            assert_eq!(distinct.len(), listed.len(), "a message was listed twice");
            assert!(
                gaps.is_empty(),
                "messages neither listed nor delivered: {gaps:?}"
            );
            assert!(
                delivered.len() > before,
                "the workers delivered (deleted) messages while the listing ran"
            );
        })
        .await
        .unwrap();
}
