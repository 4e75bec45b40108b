//! The SMTP connection pool against a real server on loopback (tests/common/smtp_sink.rs):
//! no delayed-ACK stalls, connections the server closed, servers that stop answering.

#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::time::Duration;

use outbox::smtp::{Email, Mailer, MailerConfig, SendError, SmtpConfig, Stage};
use smtp_sink::{Script, SinkOptions, SmtpSink};

fn mailer(sink: &SmtpSink, pool: usize, timeout: Duration) -> Mailer {
    let config = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .pool_size(pool)
        .command_timeout(timeout);
    Mailer::new(MailerConfig::smtp(config)).expect("valid config")
}

fn welcome(to: &str) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(to)
        .subject("Welcome")
        .text("Hello")
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_pooled_connection_the_server_closed_is_replaced_within_the_attempt() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([Script::AcceptThenClose]);
    let m = mailer(&sink, 1, Duration::from_secs(5));
    m.deliver_now(&welcome("ada@example.com")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    m.deliver_now(&welcome("bob@example.com")).await.unwrap();
    assert_eq!(sink.received().len(), 2);
    assert_eq!(sink.connections(), 2);
}

/// A network blip (a reset, a NAT timeout) drops every idle connection at once: the first
/// found dead is not replaced by the next dead one from the pool, but by a fresh connection,
/// so the message goes out in the same attempt and no "down" failure reaches the breaker.
#[tokio::test]
async fn idle_connections_dropped_together_are_replaced_by_a_fresh_one() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([
        Script::AcceptThenClose,
        Script::AcceptThenClose,
        Script::AcceptThenClose,
    ]);
    let m = mailer(&sink, 3, Duration::from_secs(5));
    let (ada, bob, cy) = (
        welcome("ada@example.com"),
        welcome("bob@example.com"),
        welcome("cy@example.com"),
    );
    let (a, b, c) = tokio::join!(m.deliver_now(&ada), m.deliver_now(&bob), m.deliver_now(&cy));
    a.and(b).and(c).unwrap();
    assert_eq!(
        sink.connections(),
        3,
        "three connections, all idle in the pool"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    m.deliver_now(&welcome("dee@example.com")).await.unwrap();
    assert_eq!(sink.received().len(), 4);
    assert_eq!(
        sink.connections(),
        4,
        "one dead connection tried, then a fresh one"
    );
}

#[tokio::test]
async fn a_server_that_stops_answering_times_out_and_is_retried() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([Script::HangAfterData]);
    let m = mailer(&sink, 4, Duration::from_millis(300));
    let err = m
        .deliver_now(&welcome("ada@example.com"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            SendError::Timeout {
                stage: Stage::Message,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_permanent());
    m.deliver_now(&welcome("ada@example.com")).await.unwrap();
    assert_eq!(sink.connections(), 2, "the hung connection was dropped");
}

#[tokio::test]
async fn one_connection_does_not_stall_on_delayed_acks() {
    // lettre alone waits ~40 ms per message for a delayed ACK (no TCP_NODELAY): 20
    // messages would take over 0.8 s. Ours set TCP_NODELAY on the socket they hand lettre.
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let m = mailer(&sink, 1, Duration::from_secs(5));
    m.deliver_now(&welcome("warm@example.com")).await.unwrap();
    let started = std::time::Instant::now();
    for i in 0..20 {
        m.deliver_now(&welcome(&format!("user{i}@example.com")))
            .await
            .unwrap();
    }
    let took = started.elapsed();
    println!("20 messages on one connection in {took:?}");
    assert!(took < Duration::from_millis(600), "{took:?}");
    assert_eq!(sink.connections(), 1);
}

#[tokio::test]
async fn a_server_that_keeps_a_failed_transaction_does_not_fail_the_next_message() {
    // The server refuses the first message's data with 500 and keeps its transaction
    // open; without a reset, the next MAIL FROM on that connection would get `503 nested
    // MAIL command` and an innocent message would be dead-lettered.
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([Script::AfterDataKeepState("500 5.0.0 internal error")]);
    let m = mailer(&sink, 1, Duration::from_secs(5));
    let err = m
        .deliver_now(&welcome("ada@example.com"))
        .await
        .unwrap_err();
    assert!(err.is_permanent(), "the server refused this message: {err}");
    for i in 0..3 {
        m.deliver_now(&welcome(&format!("user{i}@example.com")))
            .await
            .unwrap();
    }
    assert_eq!(sink.received().len(), 3);
    assert_eq!(sink.connections(), 1, "the reset connection was reused");
}

#[tokio::test]
async fn a_bad_sequence_reply_is_retried_and_never_dead_lettered() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let m = mailer(&sink, 1, Duration::from_secs(5));
    // On a fresh connection: a retried error, and the connection is dropped.
    sink.script([Script::AtMail("503 5.5.1 bad sequence of commands")]);
    let err = m
        .deliver_now(&welcome("ada@example.com"))
        .await
        .unwrap_err();
    assert!(!err.is_permanent(), "{err}");
    assert!(err.to_string().contains("will be retried"), "{err}");
    // On a pooled connection: replaced at once, within the same attempt.
    m.deliver_now(&welcome("bob@example.com")).await.unwrap();
    sink.script([Script::AtMail("503 5.5.1 bad sequence of commands")]);
    m.deliver_now(&welcome("cy@example.com")).await.unwrap();
    let to: Vec<_> = sink.received().into_iter().map(|r| r.rcpt).collect();
    assert_eq!(
        to,
        [
            vec!["bob@example.com".to_string()],
            vec!["cy@example.com".to_string()]
        ]
    );
    assert_eq!(sink.connections(), 3);
}
