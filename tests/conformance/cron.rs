//! Rate limits in practice: a cron drain that sends what the limit allows now and exits
//! (alone and two at a time), messages starting oldest first under a limit, and no token
//! spent on a message that can never be delivered.

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

/// 100 mails under 5/s with a burst of 1, the worker deferring (not waiting) whenever the
/// bucket is empty: they start in enqueue order though most were deferred, and mail 5,
/// given up at its first attempt and requeued while the rest wait, starts after all of
/// them (a requeue goes to the back). About 20 s.
pub async fn oldest_first_under_a_limit<H: Harness>() {
    let h = H::new().await;
    let mails: Vec<Mail> = (1..=100).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&calls))
        .rate_limit("fifo", RateLimit::per_second(5.0).burst(1))
        .register_with::<Mail, _>(
            |m: Mail, ctx: MessageContext<Arc<Calls>>| async move {
                if ctx.state().record(m.n) == 1 && m.n == 5 {
                    return Err(HandlerError::permanent("550 mailbox unavailable"));
                }
                Ok(())
            },
            QueueOptions::new()
                .rate_limit("fifo")
                .max_inline_wait(Duration::ZERO),
        );
    let admin = outbox.admin();
    outbox
        .run_until(async {
            let dead = async {
                while admin
                    .dead_letters()
                    .count(&Default::default())
                    .await
                    .unwrap()
                    == 0
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(20), dead)
                .await
                .expect("mail 5 was given up");
            let requeued = admin.dead_letters().requeue_all().await.unwrap();
            assert_eq!(requeued.requeued, 1);
            let all = async {
                while calls.len() < 101 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(60), all)
                .await
                .expect("every mail started");
        })
        .await
        .unwrap();
    let deferred = outbox.delivery_counts().deferred;
    assert!(
        deferred >= 50,
        "most mails were deferred by the limit first: {deferred}"
    );
    let order: Vec<i64> = calls.0.lock().unwrap().iter().map(|c| c.0).collect();
    let mut expected: Vec<i64> = (1..=100).collect();
    expected.push(5);
    assert_eq!(order, expected, "oldest first, the requeued one last");
}

/// A message that can never be delivered (its payload does not decode) is given up before
/// the rate limit: the one token of a bucket that refills once an hour goes to the
/// deliverable mail behind it.
pub async fn an_undeliverable_message_spends_no_token<H: Harness>() {
    let h = H::new().await;
    let bad = outbox::Select::new(match H::NAME {
        "postgres" => "SELECT '{\"bad\":1}'::text AS payload, NULL::text AS idempotency_key",
        _ => "SELECT '{\"bad\":1}' AS payload, NULL AS idempotency_key",
    });
    let mut tx = h.pool().begin().await.unwrap();
    // An application writing a payload of the wrong shape: the enqueue says so, the
    // application commits anyway.
    let refused = outbox::enqueue_select::<Mail, _>(&mut *tx, &bad, EnqueueOptions::new()).await;
    assert!(refused.is_err());
    let _ = Mail { n: 1 }.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let calls = Arc::new(Calls::default());
    let report = Outbox::with_state(h.backend(), Arc::clone(&calls))
        .rate_limit("scarce", RateLimit::per_hour(1.0).burst(1))
        .register_with::<Mail, _>(ok, QueueOptions::new().rate_limit("scarce"))
        .drain()
        .await
        .unwrap();
    assert_eq!(
        (report.counts.delivered, report.counts.given_up),
        (1, 1),
        "the mail got the token, the undecodable one none: {:?}",
        report.counts
    );
    assert_eq!(calls.len(), 1);
    let letters = Outbox::new(h.backend())
        .admin()
        .dead_letters()
        .list(&outbox::DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert!(
        letters[0].last_error.contains("does not decode"),
        "{}",
        letters[0].last_error
    );
}

/// An email that fails its own checks (no recipient: written by other code, past the
/// enqueue's validation) is given up before the rate limit, with the check's reason: the
/// one token of a bucket that refills once an hour goes to the valid email behind it,
/// which the mailer sends.
pub async fn an_invalid_email_spends_no_token<H: Harness>() {
    use outbox::smtp::{Email, Mailer, MailerConfig};
    let h = H::new().await;
    let valid = Email::builder()
        .from("Shop <shop@example.com>")
        .to("ada@example.com")
        .subject("Your order")
        .text("Thanks.")
        .build()
        .unwrap();
    let mut invalid = serde_json::to_value(&valid).unwrap();
    invalid["to"] = serde_json::json!([]);
    let select = match H::NAME {
        "postgres" => "SELECT $1::text AS payload, NULL::text AS idempotency_key",
        _ => "SELECT ? AS payload, NULL AS idempotency_key",
    };
    let bad = outbox::Select::new(select).bind(invalid.to_string());
    let mut tx = h.pool().begin().await.unwrap();
    // Whether or not the enqueue checks it, the application commits what it wrote.
    let _ = outbox::enqueue_select::<Email, _>(&mut *tx, &bad, EnqueueOptions::new()).await;
    let _ = valid.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mailer = Mailer::new(MailerConfig::file(dir.path())).unwrap();
    let report = Outbox::new(h.backend())
        .rate_limit("scarce", RateLimit::per_hour(1.0).burst(1))
        .register_with::<Email, _>(mailer.handler(), QueueOptions::new().rate_limit("scarce"))
        .drain()
        .await
        .unwrap();
    assert_eq!(
        (report.counts.delivered, report.counts.given_up),
        (1, 1),
        "the valid email got the token, the invalid one none: {:?}",
        report.counts
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "one .eml written"
    );
    let letters = Outbox::new(h.backend())
        .admin()
        .dead_letters()
        .list(&outbox::DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert!(
        letters[0].last_error.contains("invalid"),
        "{}",
        letters[0].last_error
    );
}
