//! A message kind that is not email, plugged in from outside the core, on a real SQLite
//! file: its destination is shaped as a site, and its failure classes are acted on as
//! values — "slow this destination" slows the destination's site in the database without
//! using an attempt (and, unshaped, waits like a snooze), "suppress this destination"
//! writes the recipient's suppression and dead-letters the message, "this destination does
//! not answer" suspends that destination's site alone, its messages waiting without
//! attempts until a probe gets through.

mod common;

use std::{
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc,
    },
    time::Duration,
};

use common::TestDb;
use outbox::{prelude::*, Recipient, Shaping, SiteLimit, SuppressionFilter, SuppressionReason};
use serde::{Deserialize, Serialize};

/// A text message to a phone, through a gateway host.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(
    type = "kind_test.sms",
    destination = "Sms::gateway",
    recipient = "Sms::person"
)]
struct Sms {
    gateway: String,
    to: String,
    text: String,
}

impl Sms {
    fn gateway(&self) -> Option<String> {
        Some(self.gateway.clone())
    }

    fn person(&self) -> Option<Recipient> {
        Some(Recipient::transactional(&self.to))
    }
}

/// What the gateway answers, in order; `ok` once the list is used up.
struct Gateway {
    calls: AtomicU32,
    answers: Vec<&'static str>,
}

async fn send(sms: Sms, ctx: MessageContext<Arc<Gateway>>) -> Result<(), HandlerError> {
    let gateway = ctx.state();
    let n = gateway.calls.fetch_add(1, Ordering::SeqCst) as usize;
    match gateway.answers.get(n).copied().unwrap_or("ok") {
        "slow" => Err(HandlerError::slow_down(
            Duration::from_secs(2),
            Duration::from_secs(600),
            format!("429 from {}: too many messages", sms.gateway),
        )),
        "down" if sms.gateway.starts_with("down.") => Err(HandlerError::destination_down(format!(
            "connection refused by {}",
            sms.gateway
        ))),
        "gone" => Err(HandlerError::suppress(
            SuppressionReason::HardBounce,
            format!("{} does not exist", sms.to),
        )),
        _ => Ok(()),
    }
}

async fn enqueue(db: &TestDb, to: &str) {
    enqueue_to(db, "sms.example:443", to).await;
}

async fn enqueue_to(db: &TestDb, gateway: &str, to: &str) {
    let mut tx = db.pool.begin().await.unwrap();
    let _ = Sms {
        gateway: gateway.into(),
        to: to.into(),
        text: "Your code is 1234".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

async fn attempts_and_error(db: &TestDb) -> (i64, String) {
    sqlx::query_as("SELECT attempts, COALESCE(last_error, '') FROM outbox_messages")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn slow_this_destination_slows_its_site_without_using_an_attempt() {
    let db = TestDb::new().await;
    enqueue(&db, "+4930123456@sms").await;
    let gateway = Arc::new(Gateway {
        calls: AtomicU32::new(0),
        answers: vec!["slow"],
    });
    let outbox = Outbox::with_state(SqliteBackend::new(db.pool.clone()), Arc::clone(&gateway))
        .shaping(
            Shaping::new()
                .site("gateways", SiteLimit::unlimited())
                .route("sms.example:443", "gateways"),
        )
        .register::<Sms, _>(send);
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.delivered, 0);
    assert_eq!(report.counts.failed_attempts, 0, "{:?}", report.counts);
    assert_eq!(report.counts.deferred, 1, "{:?}", report.counts);
    // The site is slowed in the database, for every process, with the gateway's words.
    let sites = outbox.admin().shaping().sites().await.unwrap();
    let site = sites
        .iter()
        .find(|s| s.site == "gateways")
        .expect("the site's row");
    assert_eq!(site.slow_per_second, Some(0.5), "{site:?}");
    assert!(
        site.reason
            .as_deref()
            .unwrap_or("")
            .contains("too many messages"),
        "{site:?}"
    );
    // The message waits for the slowed site, its attempt given back.
    let (attempts, error) = attempts_and_error(&db).await;
    assert_eq!(attempts, 0, "{error}");
    assert!(error.contains("429"), "{error}");
}

#[tokio::test]
async fn unshaped_a_slowdown_waits_like_a_snooze() {
    let db = TestDb::new().await;
    enqueue(&db, "+4930123456@sms").await;
    let gateway = Arc::new(Gateway {
        calls: AtomicU32::new(0),
        answers: vec!["slow"],
    });
    let outbox =
        Outbox::with_state(SqliteBackend::new(db.pool.clone()), gateway).register::<Sms, _>(send);
    let report = outbox.drain().await.unwrap();
    assert_eq!(
        (report.counts.failed_attempts, report.counts.deferred),
        (0, 1)
    );
    let (attempts, _) = attempts_and_error(&db).await;
    assert_eq!(attempts, 0);
    // `due_at` is in milliseconds since the epoch.
    let due_in: f64 = sqlx::query_scalar(
        "SELECT (due_at - CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)) \
         / 1000.0 FROM outbox_messages",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert!(
        due_in > 0.5,
        "due again after the gateway's interval: {due_in}"
    );
}

#[tokio::test]
async fn suppress_this_destination_suppresses_the_recipient_and_dead_letters_the_message() {
    let db = TestDb::new().await;
    enqueue(&db, "nobody@sms.example").await;
    let gateway = Arc::new(Gateway {
        calls: AtomicU32::new(0),
        answers: vec!["gone"],
    });
    let outbox =
        Outbox::with_state(SqliteBackend::new(db.pool.clone()), gateway).register::<Sms, _>(send);
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.given_up, 1, "{:?}", report.counts);
    let admin = outbox.admin();
    let listed = admin
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await
        .unwrap();
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?} {}", dead[0].last_error);
    assert_eq!(listed[0].address, "nobody@sms.example");
    assert_eq!(listed[0].reason, SuppressionReason::HardBounce);
    assert!(
        dead[0].last_error.contains("does not exist")
            && dead[0].last_error.contains("suppressed nobody@sms.example"),
        "{}",
        dead[0].last_error
    );
    // The next message to it is stopped by the list, not sent.
    enqueue(&db, "nobody@sms.example").await;
    let again = outbox.drain().await.unwrap();
    assert_eq!(again.counts.delivered, 0, "{:?}", again.counts);
}

#[tokio::test]
async fn a_destination_that_cannot_be_a_site_is_refused_at_enqueue_with_the_reason() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let err = Sms {
        gateway: "sms gateway".into(),
        to: "+49@sms".into(),
        text: "hi".into(),
    }
    .enqueue(&mut *tx)
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("destination") && err.contains("without spaces"),
        "{err}"
    );
}

/// A destination that refuses connections is suspended in the database (every process
/// holds its messages) while another destination of the same type goes on; its messages
/// wait without using attempts, probes come at doubling intervals, and the first answer
/// delivers the rest.
#[tokio::test]
async fn a_destination_that_does_not_answer_is_suspended_alone_and_costs_no_attempts() {
    let db = TestDb::new().await;
    for i in 0..3 {
        enqueue_to(&db, "down.example:443", &format!("+49301234{i}@sms")).await;
    }
    enqueue_to(&db, "up.example:443", "+4930999@sms").await;
    // The first three calls say "down" (only the down gateway's calls fail by it): the
    // first failure and at least one failed probe.
    let gateway = Arc::new(Gateway {
        calls: AtomicU32::new(0),
        answers: vec!["down"; 3],
    });
    let outbox = Outbox::with_state(SqliteBackend::new(db.pool.clone()), Arc::clone(&gateway))
        .shaping(Shaping::new())
        .register_with::<Sms, _>(send, QueueOptions::new().concurrency(1));
    let admin = outbox.admin();
    let run = outbox.run_until(async {
        // The other destination is delivered at once, while the down one is suspended.
        let mut suspended = None;
        for _ in 0..100 {
            let sites = admin.shaping().sites().await.unwrap();
            suspended = sites.into_iter().find(|s| s.site == "down.example:443");
            let queued: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM outbox_messages WHERE payload LIKE '%up.example%'",
            )
            .fetch_one(&db.pool)
            .await
            .unwrap();
            if suspended.is_some() && queued == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let site = suspended.expect("the down destination's site is suspended in the database");
        assert!(site.suspended_until.is_some(), "{site:?}");
        assert!(
            site.reason
                .as_deref()
                .unwrap_or("")
                .contains("connection refused"),
            "{site:?}"
        );
        // Then the gateway answers again: every message arrives.
        for _ in 0..300 {
            let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox_messages")
                .fetch_one(&db.pool)
                .await
                .unwrap();
            if left == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the messages to the down destination were not delivered after it came back");
    });
    run.await.unwrap();
    let counts = outbox.delivery_counts();
    assert_eq!(counts.delivered, 4, "{counts:?}");
    assert_eq!(counts.failed_attempts, 0, "no attempt used: {counts:?}");
    assert_eq!(counts.given_up, 0, "{counts:?}");
    // The refusals and the messages held behind the suspension.
    assert!(counts.deferred >= 3, "{counts:?}");
    assert!(gateway.calls.load(Ordering::SeqCst) >= 6);
}
