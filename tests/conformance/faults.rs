//! The database out of reach: a TCP proxy (tests/common/proxy.rs) between the worker and
//! its database black-holes connections (a partition), resets them, or loses one reply.
//! PostgreSQL and MariaDB only: SQLite is a file in the worker's own process, with no
//! network to lose.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use outbox::prelude::*;
use serde::{Deserialize, Serialize};

use super::{harness::Harness, proxy::Proxy};

#[derive(Debug, Clone, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "faults.job")]
pub struct Job {
    pub n: i64,
}

/// Enqueues jobs `range` in one transaction.
async fn enqueue<H: Harness>(h: &H, range: std::ops::Range<i64>) {
    let mut tx = h.pool().begin().await.unwrap();
    for n in range {
        let _ = Job { n }.enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
}

/// Waits up to `limit` for `done`, failing the test with `what` after that.
async fn until(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done().await {
        assert!(Instant::now() < deadline, "no {what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

type Starts = Arc<Mutex<Vec<(i64, Instant)>>>;

/// A worker with a batch of claimed messages in its buffer loses its database for 4 s (the
/// proxy black-holes every connection): its heartbeat cannot extend the leases, so it
/// starts no message once its lease may have run out by the worker's own clock (lease 1 s,
/// heartbeat every 0.5 s); the messages it gave back and the rest are delivered once the
/// database is back.
pub async fn a_worker_cut_off_from_its_database_starts_nothing_whose_lease_ran_out<H: Harness>() {
    const JOBS: i64 = 40;
    let lease = Duration::from_secs(1);
    let h = H::new().await;
    let proxy = Proxy::for_url(&h.url()).await;
    let cut = H::attach(&proxy.url(&h.url())).await;
    enqueue(&h, 0..JOBS).await;
    let starts: Starts = Arc::default();
    let outbox = Outbox::with_state(cut.backend(), Arc::clone(&starts))
        .register_with::<Job, _>(
            |job: Job, ctx: MessageContext<Starts>| async move {
                ctx.state().lock().unwrap().push((job.n, Instant::now()));
                tokio::time::sleep(Duration::from_millis(300)).await;
                Ok::<(), HandlerError>(())
            },
            QueueOptions::new()
                .concurrency(1)
                .batch_size(20)
                .heartbeat_interval(lease / 2)
                .missed_heartbeats(2),
        )
        .shutdown_timeout(Duration::from_millis(400));
    let partition = Duration::from_secs(4);
    let cut_at = Arc::new(Mutex::new(None));
    outbox
        .run_until({
            let (starts, cut_at, proxy, h) = (Arc::clone(&starts), Arc::clone(&cut_at), &proxy, &h);
            async move {
                until("start", Duration::from_secs(30), async || {
                    starts.lock().unwrap().len() >= 2
                })
                .await;
                *cut_at.lock().unwrap() = Some(Instant::now());
                proxy.black_hole();
                tokio::time::sleep(partition).await;
                proxy.forward();
                until(
                    "delivery of every job",
                    Duration::from_secs(60),
                    async || h.count_messages("faults.job").await == 0,
                )
                .await;
            }
        })
        .await
        .unwrap();
    let cut_at = cut_at.lock().unwrap().unwrap();
    let starts = starts.lock().unwrap().clone();
    let late: Vec<(i64, Duration)> = starts
        .iter()
        .filter(|(_, at)| *at > cut_at + lease && *at < cut_at + partition)
        .map(|(n, at)| (*n, *at - cut_at))
        .collect();
    let during = starts
        .iter()
        .filter(|(_, at)| *at > cut_at && *at < cut_at + partition)
        .count();
    println!(
        "{}: {during} started in the first {partition:?} of the partition, {} of them after the \
         lease ({lease:?}): {late:?}; {} starts for {JOBS} jobs",
        H::NAME,
        late.len(),
        starts.len()
    );
    assert!(
        late.is_empty(),
        "started after their lease may have run out: {late:?}"
    );
    let mut started: Vec<i64> = starts.iter().map(|(n, _)| *n).collect();
    started.sort();
    started.dedup();
    assert_eq!(started.len() as i64, JOBS, "every job ran");
}

type Gate = Arc<(tokio::sync::Notify, tokio::sync::Notify)>;

/// The reply to a settlement's `COMMIT` is lost (the proxy passes the `COMMIT` to the
/// server, drops its answer and resets the connection): the worker cannot know the outcome,
/// tries the settlement again and finds the message no longer running under its claim. It
/// reads back where the message is (gone: delivered and deleted) and counts it as
/// delivered, not as fenced.
pub async fn a_settlement_whose_commit_reply_was_lost_counts_as_delivered<H: Harness>() {
    let h = H::new().await;
    let proxy = Proxy::for_url(&h.url()).await;
    let cut = H::attach(&proxy.url(&h.url())).await;
    enqueue(&h, 0..1).await;
    // (started, go)
    let gate: Gate = Arc::default();
    let outbox = Outbox::with_state(cut.backend(), Arc::clone(&gate)).register_with::<Job, _>(
        |_: Job, ctx: MessageContext<Gate>| async move {
            let (started, go) = &**ctx.state();
            started.notify_one();
            go.notified().await;
            Ok::<(), HandlerError>(())
        },
        // No heartbeat commits while the test runs (the first, as the worker starts, aside).
        QueueOptions::new()
            .concurrency(1)
            .heartbeat_interval(Duration::from_secs(10)),
    );
    outbox
        .run_until(async {
            gate.0.notified().await;
            // The worker's start-up writes (its first heartbeat, the claims) are done.
            tokio::time::sleep(Duration::from_millis(500)).await;
            // The statement `COMMIT` as the client sends it (PostgreSQL: a query message
            // ending in NUL; MariaDB: a COM_QUERY packet, command byte 3).
            let commit: &[u8] = match H::NAME {
                "postgres" => b"COMMIT\0",
                _ => b"\x03COMMIT",
            };
            proxy.lose_reply_after(commit);
            gate.1.notify_one();
            until(
                "the message's settlement",
                Duration::from_secs(30),
                async || h.count_messages("faults.job").await == 0,
            )
            .await;
            // The worker counts once its retry of the settlement returns.
            let deadline = Instant::now() + Duration::from_secs(5);
            while outbox.delivery_counts().delivered == 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
        .await
        .unwrap();
    let counts = outbox.delivery_counts();
    println!(
        "{}: {} reply lost; delivered {}, {:?}",
        H::NAME,
        proxy.lost_replies(),
        counts.delivered,
        counts
    );
    assert_eq!(proxy.lost_replies(), 1, "the COMMIT's reply was lost");
    assert_eq!(counts.delivered, 1, "counted as delivered: {counts:?}");
}

/// The database becomes unreachable for 8 s (`reset`: every connection is reset at once and
/// on every try; otherwise black-holed: a partition) while the worker has work: the worker
/// says so in one WARN within 5 s, nothing else at WARN meanwhile, and one INFO once the
/// database answers again; the messages enqueued meanwhile are delivered after it.
pub async fn an_unreachable_database_is_one_warn_and_its_return_one_info<H: Harness>(reset: bool) {
    let captured = super::captured::Captured::default();
    // sqlx says its own pool's troubles (slow acquires, failed connection tests) at WARN
    // under `sqlx`, once per connection: an application keeps to the outbox's word with
    // this filter.
    let _log = tracing::subscriber::set_default(captured.subscriber("info,sqlx=error"));
    let h = H::new().await;
    let proxy = Proxy::for_url(&h.url()).await;
    let cut = H::attach(&proxy.url(&h.url())).await;
    let outbox = Outbox::new(cut.backend())
        .register_with::<Job, _>(
            |_: Job, _: MessageContext| async { Ok::<(), HandlerError>(()) },
            QueueOptions::new().heartbeat_interval(Duration::from_secs(1)),
        )
        .shutdown_timeout(Duration::from_millis(500));
    let outage = Duration::from_secs(8);
    let mut logs = String::new();
    let mut warned_after = None;
    outbox
        .run_until(async {
            enqueue(&h, 0..10).await;
            until(
                "the first deliveries",
                Duration::from_secs(30),
                async || h.count_messages("faults.job").await == 0,
            )
            .await;
            let _ = captured.take();
            let cut_at = Instant::now();
            if reset {
                proxy.reset();
            } else {
                proxy.black_hole();
            }
            enqueue(&h, 10..20).await;
            while cut_at.elapsed() < outage {
                tokio::time::sleep(Duration::from_millis(100)).await;
                logs.push_str(&captured.take());
                if warned_after.is_none() && logs.lines().any(|l| l.contains(" WARN ")) {
                    warned_after = Some(cut_at.elapsed());
                }
            }
            proxy.forward();
            until(
                "the deliveries after the outage",
                Duration::from_secs(60),
                async || h.count_messages("faults.job").await == 0,
            )
            .await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            logs.push_str(&captured.take());
        })
        .await
        .unwrap();
    let warns: Vec<&str> = logs.lines().filter(|l| l.contains(" WARN ")).collect();
    let back: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains(" INFO ") && l.contains("database answers again"))
        .collect();
    println!(
        "{} ({}): first WARN after {warned_after:?}; {} WARN line(s) in {outage:?}, {} INFO on the return:\n{}",
        H::NAME,
        if reset { "reset" } else { "black hole" },
        warns.len(),
        back.len(),
        warns.iter().take(5).copied().collect::<Vec<_>>().join("\n")
    );
    assert_eq!(warns.len(), 1, "one WARN for the outage:\n{logs}");
    assert!(
        warns[0].contains("cannot reach the database"),
        "the WARN says the database is out of reach: {}",
        warns[0]
    );
    assert!(
        warned_after.is_some_and(|d| d <= Duration::from_secs(5)),
        "the WARN came {warned_after:?} after the cut"
    );
    assert_eq!(back.len(), 1, "one INFO for the return:\n{logs}");
}
