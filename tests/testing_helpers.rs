//! `outbox::testing::perform` (one handler call, classified as the worker would) and the
//! capture mailer (emails kept in memory, read back with their headers), without a
//! database or a server; and a drain that delivers through a capture mailer.

mod common;

use std::time::Duration;

use common::TestDb;
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, TestRedirect},
    testing::{self, Performed},
    HandlerErrorKind,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "helpers.ping", max_attempts = 3)]
struct Ping {
    how: String,
}

async fn handler(ping: Ping, ctx: MessageContext<u32>) -> Result<(), HandlerError> {
    match ping.how.as_str() {
        "ok" => Ok(()),
        "retry" => Err(HandlerError::retry(format!("busy (state {})", ctx.state()))),
        "permanent" => Err(HandlerError::permanent("no such account")),
        "down" => Err(HandlerError::down("connection refused")),
        "snooze" => Err(HandlerError::snooze(Duration::from_secs(60))),
        "attempt" if ctx.attempt() < 2 => Err(HandlerError::retry("first attempt fails")),
        "attempt" => Ok(()),
        _ => panic!("unexpected ping {}", ping.how),
    }
}

fn ping(how: &str) -> Ping {
    Ping { how: how.into() }
}

#[tokio::test]
async fn perform_runs_one_handler_call_and_classifies_it() {
    let h = handler;
    assert_eq!(
        testing::perform(&h, ping("ok"), 1, 0).await,
        Performed::Delivered
    );
    let retry = testing::perform(&h, ping("retry"), 1, 42).await;
    assert_eq!(
        retry,
        Performed::Failed {
            kind: HandlerErrorKind::Retry,
            reason: "busy (state 42)".into()
        }
    );
    assert!(!retry.gives_up(1, 3) && retry.gives_up(3, 3));
    let permanent = testing::perform(&h, ping("permanent"), 1, 0).await;
    assert!(permanent.gives_up(1, 3));
    let down = testing::perform(&h, ping("down"), 3, 0).await;
    assert!(matches!(
        down,
        Performed::Failed {
            kind: HandlerErrorKind::Down,
            ..
        }
    ));
    assert!(!down.gives_up(3, 3), "an outage never gives a message up");
    let snooze = testing::perform(&h, ping("snooze"), 1, 0).await;
    assert!(matches!(
        snooze,
        Performed::Failed {
            kind: HandlerErrorKind::Snooze(_),
            ..
        }
    ));
    assert!(!testing::perform(&h, ping("attempt"), 1, 0)
        .await
        .is_delivered());
    assert!(testing::perform(&h, ping("attempt"), 2, 0)
        .await
        .is_delivered());
    assert_eq!(
        testing::perform(&h, ping("boom"), 1, 0).await,
        Performed::Panicked("unexpected ping boom".into())
    );
}

fn email(to: &str) -> Email {
    Email::builder()
        .from("Club <club@example.com>")
        .to(to)
        .subject("Welcome, Ada")
        .text("Hello")
        .header("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capture_mailer_keeps_what_a_drain_sent() {
    let db = TestDb::new().await;
    let redirect = TestRedirect::to_address("qa@example.com");
    let mailer = Mailer::new(MailerConfig::capture().test_redirect(redirect)).unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let queued = email("ada@example.com").enqueue(&mut *tx).await.unwrap();
    let _ = email("bob@example.com").enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let report = Outbox::new(db.backend())
        .register::<Email, _>(mailer.handler())
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.delivered, 2);
    assert_eq!(mailer.sent().len(), 2);
    // The redirect sent both to QA, keeping the original recipients in a header.
    assert!(mailer.sent_to("ada@example.com").is_empty());
    let first = mailer.sent().remove(0);
    assert!(
        first.redirected && first.is_to("qa@example.com"),
        "{first:?}"
    );
    assert_eq!(first.outbox_id, queued.id().to_string());
    assert_eq!(first.header("subject").as_deref(), Some("Welcome, Ada"));
    assert_eq!(
        first.header("List-Unsubscribe-Post").as_deref(),
        Some("List-Unsubscribe=One-Click")
    );
    assert_eq!(first.header("Message-ID"), Some(first.message_id.clone()));
    let last = mailer.assert_sent_to("QA@example.com");
    assert_eq!(last.outbox_id, mailer.sent()[1].outbox_id);
    let none = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        mailer.assert_sent_to("eve@example.com")
    }));
    let text = none.unwrap_err().downcast::<String>().unwrap();
    assert!(
        text.contains("no email was sent to eve@example.com"),
        "{text}"
    );
}
