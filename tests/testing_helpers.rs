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

/// What the message-only handler saw.
static ALONE: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A handler that needs neither the message's id nor the state: the message alone.
async fn note_alone(ping: Ping) -> Result<(), HandlerError> {
    ALONE.lock().unwrap().push(ping.how);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_may_take_the_message_alone() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    for how in ["alone-1", "alone-2"] {
        let _ = ping(how).enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    let report = Outbox::new(db.backend())
        .register::<Ping, _>(note_alone)
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.delivered, 2, "{report:?}");
    let mut seen = ALONE.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, ["alone-1", "alone-2"]);
    // A closure of the message alone, run by `perform` as by the workers.
    let refuse = |p: Ping| async move {
        match p.how.as_str() {
            "ok" => Ok(()),
            _ => Err(HandlerError::permanent("refused")),
        }
    };
    assert_eq!(
        testing::perform(&refuse, ping("ok"), 1, ()).await,
        Performed::Delivered
    );
    assert!(testing::perform(&refuse, ping("no"), 1, ())
        .await
        .gives_up(1, 3));
}

/// Where the panics of this thread happened, for the tests that check a failing helper
/// points at the test's own line (the default hook prints the same location).
fn panic_locations() -> &'static std::sync::Mutex<Vec<(std::thread::ThreadId, String, u32)>> {
    static SEEN: std::sync::OnceLock<std::sync::Mutex<Vec<(std::thread::ThreadId, String, u32)>>> =
        std::sync::OnceLock::new();
    SEEN.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(l) = info.location() {
                panic_locations().lock().unwrap().push((
                    std::thread::current().id(),
                    l.file().to_owned(),
                    l.line(),
                ));
            }
            previous(info);
        }));
        std::sync::Mutex::new(Vec::new())
    })
}

/// The location of the last panic on this thread.
fn last_panic_here() -> (String, u32) {
    let me = std::thread::current().id();
    let seen = panic_locations().lock().unwrap();
    let (_, file, line) = seen
        .iter()
        .rev()
        .find(|(t, _, _)| *t == me)
        .expect("a panic on this thread")
        .clone();
    (file, line)
}

#[tokio::test]
async fn a_failing_enqueue_assertion_points_at_the_test_line() {
    panic_locations();
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let _ = ping("present").enqueue(&mut *tx).await.unwrap();
    // Polled on this thread (a current-thread runtime), as a test awaits it.
    let line = line!() + 2;
    let failed = std::panic::AssertUnwindSafe(async {
        testing::assert_enqueued::<Ping, _>(&mut *tx, |m| m.message.how == "absent").await;
    });
    let caught = futures::FutureExt::catch_unwind(failed).await.unwrap_err();
    let text = caught.downcast::<String>().unwrap();
    assert!(
        text.contains("no queued `helpers.ping` message matches") && text.contains("present"),
        "{text}"
    );
    let (file, at) = last_panic_here();
    assert!(
        file.ends_with("testing_helpers.rs"),
        "panicked in {file}:{at}"
    );
    assert_eq!(at, line, "panicked at {file}:{at}");

    let line = line!() + 2;
    let failed = std::panic::AssertUnwindSafe(async {
        testing::refute_enqueued::<Ping, _>(&mut *tx, |_| true).await;
    });
    let caught = futures::FutureExt::catch_unwind(failed).await.unwrap_err();
    assert!(caught
        .downcast::<String>()
        .unwrap()
        .contains("expected no matching"));
    let (file, at) = last_panic_here();
    assert!(
        file.ends_with("testing_helpers.rs") && at == line,
        "panicked at {file}:{at}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_email_assertion_points_at_the_test_and_shows_the_email_decoded() {
    panic_locations();
    let db = TestDb::new().await;
    let mailer = Mailer::new(MailerConfig::capture()).unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let mail = Email::builder()
        .from("club@example.com")
        .to("ada@example.com")
        .subject("Grüße aus Köln — Ihr Zugang")
        .text("Hallo Ada, hier ist Ihr Zugang: Schlüssel №42. Viel Spaß!")
        .build()
        .unwrap();
    let _ = mail.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    Outbox::new(db.backend())
        .register::<Email, _>(mailer.handler())
        .drain()
        .await
        .unwrap();
    let sent = mailer.assert_sent_to("ada@example.com");
    // On the wire the subject is an encoded word and the body is encoded...
    let wire = String::from_utf8_lossy(&sent.data).into_owned();
    assert!(!wire.contains("Grüße aus Köln"), "{wire}");
    // ...the readers decode them.
    assert_eq!(
        sent.subject().as_deref(),
        Some("Grüße aus Köln — Ihr Zugang")
    );
    assert_eq!(
        sent.text().as_deref().map(str::trim_end),
        Some("Hallo Ada, hier ist Ihr Zugang: Schlüssel №42. Viel Spaß!")
    );
    assert_eq!(sent.html(), None);
    let debug = format!("{sent:?}");
    assert!(
        debug.contains("Grüße aus Köln") && debug.contains("Schlüssel №42"),
        "{debug}"
    );

    let line = line!() + 2;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        mailer.assert_sent_to("eve@example.com")
    }))
    .unwrap_err();
    let text = caught.downcast::<String>().unwrap();
    println!("{text}");
    assert!(
        text.contains("no email was sent to eve@example.com")
            && text.contains("Grüße aus Köln — Ihr Zugang")
            && text.contains("Hallo Ada, hier ist Ihr Zugang"),
        "{text}"
    );
    let (file, at) = last_panic_here();
    assert!(
        file.ends_with("testing_helpers.rs") && at == line,
        "panicked at {file}:{at}"
    );
}
