//! The lettre drop-in: messages built with lettre's builder and "sent" through
//! `QueuedTransport` (lettre's `AsyncTransport`) are enqueued, in or outside the
//! application's transaction, and a worker delivers them into a real SMTP server on
//! loopback with the outbox's classification, their own Message-ID and the test redirect.

mod common;
#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::time::Duration;

use common::TestDb;
use lettre::{AsyncTransport, Message};
use outbox::{
    prelude::*,
    smtp::{
        Mailer, MailerConfig, QueuedTransport, RawEmail, SmtpConfig, TestRedirect, TxTransport,
    },
    DeadLetterFilter,
};
use smtp_sink::{Script, SinkOptions, SmtpSink};

fn mailer(sink: &SmtpSink, config: impl FnOnce(MailerConfig) -> MailerConfig) -> Mailer {
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    Mailer::new(config(MailerConfig::smtp(smtp))).unwrap()
}

fn message(to: &str) -> Message {
    Message::builder()
        .from("Shop <shop@example.com>".parse().unwrap())
        .to(to.parse().unwrap())
        .subject("Your order")
        .body(String::from("Thanks for your order."))
        .unwrap()
}

async fn drain(db: &TestDb, mailer: &Mailer) -> outbox::DrainReport {
    Outbox::new(db.backend())
        .register::<RawEmail, _>(mailer.raw_handler())
        .drain()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lettre_message_is_enqueued_then_delivered_with_its_message_id() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let db = TestDb::new().await;
    // The one line an application changes: the transport it builds.
    let transport = QueuedTransport::new(db.pool.clone());
    let id = "<order-1@shop.example.com>";
    let email = Message::builder()
        .from("Shop <shop@example.com>".parse().unwrap())
        .to("ada@example.com".parse().unwrap())
        .subject("Your order")
        .message_id(Some(id.into()))
        .body(String::from("Thanks for your order."))
        .unwrap();
    let queued = transport.send(email).await.unwrap();
    assert_eq!(sink.received().len(), 0, "enqueued, not sent");
    assert_eq!(db.count("outbox.raw_email").await, 1);
    let report = drain(&db, &mailer(&sink, |c| c)).await;
    assert_eq!(report.counts.delivered, 1);
    let received = sink.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].rcpt, ["ada@example.com"]);
    assert_eq!(received[0].from, "shop@example.com");
    assert_eq!(
        received[0].message_id.as_deref(),
        Some(id),
        "its own Message-ID kept"
    );
    assert!(!queued.as_str().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_transaction_a_commit_sends_and_a_rollback_sends_nothing() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    TxTransport::new(&mut *tx)
        .send(message("kept@example.com"))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    TxTransport::new(&mut *tx)
        .send(message("rolled-back@example.com"))
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let report = drain(&db, &mailer(&sink, |c| c)).await;
    assert_eq!(report.counts.delivered, 1);
    let to: Vec<Vec<String>> = sink.received().into_iter().map(|r| r.rcpt).collect();
    assert_eq!(
        to,
        [["kept@example.com"]],
        "the rolled-back email was never sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_redirect_rewrites_the_envelope_and_keeps_the_originals() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let db = TestDb::new().await;
    QueuedTransport::new(db.pool.clone())
        .send(message("customer@example.com"))
        .await
        .unwrap();
    let redirect = TestRedirect::to_address("qa@example.com");
    drain(&db, &mailer(&sink, |c| c.test_redirect(redirect))).await;
    let received = sink.received();
    assert_eq!(received[0].rcpt, ["qa@example.com"]);
    let data = String::from_utf8_lossy(&received[0].data);
    assert!(
        data.contains("X-Outbox-Original-To: customer@example.com\r\n"),
        "{data}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_is_classified_and_a_missing_message_id_is_assigned() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([Script::AfterData("550 5.7.1 content rejected")]);
    let db = TestDb::new().await;
    let transport = QueuedTransport::new(db.pool.clone());
    transport.send(message("ada@example.com")).await.unwrap();
    let mailer = mailer(&sink, |c| c);
    let report = drain(&db, &mailer).await;
    assert_eq!((report.counts.delivered, report.counts.given_up), (0, 1));
    // lettre's builder writes no Message-ID unless given one: one is assigned from the
    // outbox id, the same on every attempt.
    let bare_id = transport.send(message("bob@example.com")).await.unwrap();
    let report = drain(&db, &mailer).await;
    assert_eq!(report.counts.delivered, 1);
    let dead = Outbox::new(db.backend())
        .admin()
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert!(
        dead[0].last_error.contains("550 5.7.1 content rejected"),
        "{}",
        dead[0].last_error
    );
    let delivered = sink
        .received()
        .into_iter()
        .find(|r| r.rcpt == ["bob@example.com"]);
    let delivered = delivered.expect("the bare message arrived");
    assert_eq!(
        delivered.message_id,
        Some(format!("<{}@example.com>", bare_id.as_str()))
    );
}

#[tokio::test]
async fn raw_bytes_the_outbox_cannot_send_are_refused_at_send() {
    let db = TestDb::new().await;
    let transport = QueuedTransport::new(db.pool.clone());
    let to = vec!["bob@example.com".parse().unwrap()];
    let envelope =
        lettre::address::Envelope::new(Some("shop@example.com".parse().unwrap()), to.clone())
            .unwrap();
    let lf_only = b"From: shop@example.com\nTo: bob@example.com\n\nHello\n";
    let err = transport.send_raw(&envelope, lf_only).await.unwrap_err();
    assert!(err.to_string().contains("CRLF"), "{err}");
    let bounce = lettre::address::Envelope::new(None, to).unwrap();
    let ok = b"From: shop@example.com\r\nTo: bob@example.com\r\n\r\nHello\r\n";
    let err = transport.send_raw(&bounce, ok).await.unwrap_err();
    assert!(err.to_string().contains("null sender"), "{err}");
    assert_eq!(db.count("outbox.raw_email").await, 0, "nothing written");
}
