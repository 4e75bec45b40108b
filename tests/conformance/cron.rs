//! Drains for cron: a drain that sends what the rate limit allows now and exits, alone and
//! two at a time.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use outbox::{enqueue_many, prelude::*, DrainOptions, RateLimit};

use super::{
    cases::{ok, Calls, Mail},
    harness::Harness,
};

/// A cron run's outbox: `conf.mail` under the bucket `cron` (2 per second, burst 3).
fn cron<H: Harness>(h: &H, calls: &Arc<Calls>) -> Outbox<H::Backend, Arc<Calls>> {
    Outbox::with_state(h.backend(), Arc::clone(calls))
        .rate_limit("cron", RateLimit::per_second(2.0).burst(3))
        .register_with::<Mail, _>(ok, QueueOptions::new().rate_limit("cron"))
}

/// 30 mails under 2/s (burst 3): a limited drain sends the burst and exits at once (a plain
/// drain would take 13 s); 1.5 s later two overlapping limited drains together send what
/// the bucket refilled, never more than its bound, each mail once; the rest stays queued.
pub async fn a_limited_drain_sends_what_the_limit_allows<H: Harness>() {
    let h = H::new().await;
    let mails: Vec<Mail> = (1..=30).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());

    let started = Instant::now();
    let first = cron(&h, &calls)
        .drain_with(DrainOptions::until_limited())
        .await
        .unwrap();
    let took = started.elapsed();
    println!(
        "{}: a limited drain delivered {} of 30 and exited after {took:?}",
        H::NAME,
        first.counts.delivered
    );
    assert!(
        (3..=4).contains(&first.counts.delivered),
        "the burst, and at most one refilled token: {:?}",
        first.counts
    );
    assert!(took < Duration::from_secs(2), "exited after {took:?}");

    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let (one, other) = (cron(&h, &calls), cron(&h, &calls));
    let overlap = Instant::now();
    let (a, b) = tokio::join!(
        one.drain_with(DrainOptions::until_limited()),
        other.drain_with(DrainOptions::until_limited()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let window = overlap.elapsed().as_secs_f64();
    let together = a.counts.delivered + b.counts.delivered;
    println!(
        "{}: two overlapping limited drains delivered {} + {} in {window:.2} s",
        H::NAME,
        a.counts.delivered,
        b.counts.delivered
    );
    // Tokens at the overlap's start: at most the burst; then 2 per second.
    let bound = 3.0 + 2.0 * window + 1.0;
    assert!(
        together >= 1 && together as f64 <= bound,
        "{together} delivered in {window:.2} s; the bucket allows {bound:.1}"
    );
    let delivered = first.counts.delivered + together;
    let mut per_mail: HashMap<i64, usize> = HashMap::new();
    for (n, _) in calls.0.lock().unwrap().iter() {
        *per_mail.entry(*n).or_default() += 1;
    }
    assert!(
        per_mail.values().all(|&c| c == 1),
        "a mail ran twice: {per_mail:?}"
    );
    assert_eq!(per_mail.len() as u64, delivered);
    // One drain alone takes tokens oldest first (two at once each take theirs in their own
    // order).
    let calls_in_order: Vec<i64> = calls.0.lock().unwrap().iter().map(|c| c.0).collect();
    let alone = first.counts.delivered as usize;
    assert_eq!(
        calls_in_order[..alone],
        (1..=alone as i64).collect::<Vec<_>>()[..],
        "the first drain sent the oldest"
    );
    let counts = Outbox::new(h.backend())
        .admin()
        .status_counts()
        .await
        .unwrap();
    let mail = counts.iter().find(|c| c.type_tag == "conf.mail").unwrap();
    assert_eq!(
        (mail.pending, mail.running),
        (30 - delivered, 0),
        "the rest is queued"
    );
}
