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
