//! Email around the edges: enqueue-time validation, test-mode redirect, the development
//! transports, secrets in output, and TLS policies that refuse to send.

mod common;
#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::time::Duration;

use common::TestDb;
use mail_parser::MessageParser;
use outbox::{
    prelude::*,
    smtp::{
        Attachment, Email, Header, Mailbox, Mailer, MailerConfig, SmtpConfig, TestRedirect,
        MAX_ATTACHMENT_BYTES,
    },
    EnqueueError,
};
use smtp_sink::{SinkOptions, SmtpSink, TestCa};

fn welcome(to: &str) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(to)
        .subject("Welcome")
        .text("Hello")
        .build()
        .unwrap()
}

fn smtp(sink: &SmtpSink) -> SmtpConfig {
    SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5))
}

/// Spoils one field of a valid email.
type Spoil = Box<dyn Fn(&mut Email)>;

#[tokio::test]
async fn enqueue_refuses_each_invalid_field_and_writes_nothing() {
    let db = TestDb::new().await;
    let cases: Vec<(&str, Spoil)> = vec![
        ("from", Box::new(|e| e.from = Mailbox::from("shop@"))),
        ("to[1]", Box::new(|e| e.to.push("not an address".into()))),
        ("cc[0]", Box::new(|e| e.cc.push("a@b@c".into()))),
        ("to", Box::new(|e| e.to.clear())),
        (
            "subject",
            Box::new(|e| e.subject = "Hi\r\nBcc: all@evil.example".into()),
        ),
        (
            "to[0]",
            Box::new(|e| e.to[0] = Mailbox::named("Ada\nX-Evil: 1", "ada@example.com")),
        ),
        (
            "reply_to",
            Box::new(|e| e.reply_to = Some(Mailbox::named("Help\r", "help@example.com"))),
        ),
        (
            "headers[\"X-Foo\"]",
            Box::new(|e| {
                e.headers.push(Header {
                    name: "X-Foo".into(),
                    value: "a\r\nBcc: x@evil.example".into(),
                })
            }),
        ),
        (
            "headers[\"Bad Name\"]",
            Box::new(|e| {
                e.headers.push(Header {
                    name: "Bad Name".into(),
                    value: "v".into(),
                })
            }),
        ),
        (
            "attachments[1]",
            Box::new(|e| {
                e.attachments.push(Attachment::new(
                    "a.bin",
                    "application/octet-stream",
                    vec![0; 10],
                ));
                e.attachments.push(Attachment::new(
                    "b.bin",
                    "application/octet-stream",
                    vec![0; MAX_ATTACHMENT_BYTES],
                ));
            }),
        ),
        (
            "attachments[0]",
            Box::new(|e| {
                e.attachments
                    .push(Attachment::new("../etc/passwd", "text/plain", vec![1]))
            }),
        ),
        ("text", Box::new(|e| e.text = None)),
    ];
    for (field, spoil) in cases {
        let mut email = welcome("ada@example.com");
        spoil(&mut email);
        let mut tx = db.pool.begin().await.unwrap();
        let err = email.enqueue(&mut *tx).await.unwrap_err();
        tx.commit().await.unwrap();
        match err {
            EnqueueError::InvalidMessage { source, .. } => {
                assert_eq!(source.field, field, "{}", source.reason);
                assert!(!source.reason.is_empty());
            }
            other => panic!("{field}: unexpected {other}"),
        }
    }
    assert_eq!(db.count("outbox.email").await, 0, "nothing was enqueued");
    // The builder refuses the same way.
    let err = Email::builder()
        .from("shop@example.com")
        .to("ada@example.com")
        .to("nope")
        .text("x")
        .build()
        .unwrap_err();
    assert_eq!(err.field, "to[1]");
}

#[tokio::test]
async fn the_idempotency_key_makes_a_second_email_a_duplicate() {
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let mut email = welcome("ada@example.com");
    email.idempotency_key = Some("registration-42:user".into());
    assert!(!email.enqueue(&mut *tx).await.unwrap().is_duplicate());
    assert!(email.enqueue(&mut *tx).await.unwrap().is_duplicate());
    tx.commit().await.unwrap();
    assert_eq!(db.count("outbox.email").await, 1);
}

#[tokio::test]
async fn test_redirect_to_an_address_keeps_the_originals_in_headers() {
    // The capture transport keeps the rendered bytes, as they would go on the wire.
    let redirect = TestRedirect::to_address("qa@test.example");
    let m = Mailer::new(MailerConfig::capture().test_redirect(redirect)).unwrap();
    let email = Email::builder()
        .from("shop@example.com")
        .to("ada@example.com")
        .to("bob@example.com")
        .cc("carol@example.com")
        .bcc("audit@example.com")
        .subject("Hi")
        .text("Hello")
        .build()
        .unwrap();
    let delivery = m.deliver_now(&email).await.unwrap();
    assert!(delivery.redirected);
    let sent = m.assert_sent_to("qa@test.example");
    assert_eq!(sent.to, ["qa@test.example"]);
    assert_eq!(sent.header("To").as_deref(), Some("qa@test.example"));
    assert_eq!(sent.header("Cc"), None);
    assert_eq!(
        sent.header("X-Outbox-Original-To").as_deref(),
        Some("ada@example.com, bob@example.com")
    );
    assert_eq!(
        sent.header("X-Outbox-Original-Cc").as_deref(),
        Some("carol@example.com")
    );
    assert_eq!(
        sent.header("X-Outbox-Original-Bcc").as_deref(),
        Some("audit@example.com")
    );
}

#[tokio::test]
async fn test_redirect_by_domain_applies_only_to_the_tags_given_and_off_means_off() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let url = format!(
        "smtp://127.0.0.1:{}?test_redirect_domain=sink.test&test_redirect_only=newsletter",
        sink.port
    );
    let m = Mailer::from_url(&url).unwrap();
    let mut tagged = welcome("ada@example.com");
    tagged.tags.push("newsletter".into());
    tagged.cc.push("bob@example.org".into());
    m.deliver_now(&tagged).await.unwrap();
    m.deliver_now(&welcome("carol@example.com")).await.unwrap();
    let off = Mailer::new(MailerConfig::smtp(smtp(&sink))).unwrap();
    off.deliver_now(&tagged).await.unwrap();

    let received = sink.received();
    assert_eq!(received[0].rcpt, ["ada@sink.test", "bob@sink.test"]);
    let first = MessageParser::default().parse(&received[0].data).unwrap();
    assert!(first.cc().unwrap().contains("bob@sink.test"));
    assert_eq!(
        first.header_raw("X-Outbox-Original-To").map(str::trim),
        Some("ada@example.com")
    );
    for r in &received[1..] {
        assert_ne!(r.rcpt[0].split('@').nth(1), Some("sink.test"));
        let msg = MessageParser::default().parse(&r.data).unwrap();
        assert!(msg.header_raw("X-Outbox-Original-To").is_none());
    }
    assert_eq!(received[2].rcpt, ["ada@example.com", "bob@example.org"]);
}

#[tokio::test]
async fn the_file_transport_writes_one_eml_per_message_named_by_its_id() {
    let db = TestDb::new().await;
    let dir = tempfile::tempdir().unwrap();
    let mailer = Mailer::from_url(&format!(
        "file://{}?message_id_domain=mail.test",
        dir.path().display()
    ))
    .unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let mut ids = Vec::new();
    for to in ["ada@example.com", "bob@example.com"] {
        let mut email = welcome(to);
        email.bcc.push("audit@example.com".into());
        ids.push(email.enqueue(&mut *tx).await.unwrap().id().to_string());
    }
    tx.commit().await.unwrap();
    let outbox = Outbox::new(db.backend()).register::<Email, _>(mailer.handler());
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.delivered, 2);
    for id in &ids {
        let bytes = std::fs::read(dir.path().join(format!("{id}.eml"))).unwrap();
        let msg = MessageParser::default().parse(&bytes).unwrap();
        assert_eq!(msg.message_id(), Some(format!("{id}@mail.test").as_str()));
        assert!(
            msg.bcc().unwrap().contains("audit@example.com"),
            "kept in .eml"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temp files left"
    );
    let log = Mailer::from_url("log://").unwrap();
    assert!(log.deliver_now(&welcome("ada@example.com")).await.is_ok());
}

#[tokio::test]
async fn passwords_never_show_in_debug_display_or_errors() {
    const SECRET: &str = "hunter2-Sup3rS3cret";
    let ca = TestCa::new();
    let sink = SmtpSink::start(SinkOptions {
        starttls: Some(ca.server.clone()),
        auth: Some(("mailer".into(), "another-password".into(), "PLAIN")),
        ..SinkOptions::default()
    })
    .await;
    let url = format!("smtp://mailer:{SECRET}@127.0.0.1:{}?timeout=5s", sink.port);
    let config = MailerConfig::from_url(&url).unwrap();
    let m = Mailer::new(match config.transport().clone() {
        outbox::smtp::Transport::Smtp(s) => {
            MailerConfig::smtp(s.add_root_certificate_pem(ca.ca_pem.as_bytes()))
        }
        _ => unreachable!(),
    })
    .unwrap();
    let err = m
        .deliver_now(&welcome("ada@example.com"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("535"), "{err}");
    assert!(!err.is_permanent(), "a refused login is retried: {err}");
    let handler_error = err.into_handler_error();
    let mut shown = vec![
        format!("{config}"),
        format!("{config:?}"),
        format!("{m:?}"),
        format!("{}", m.config()),
        format!("{handler_error}"),
        format!("{handler_error:?}"),
    ];
    for bad in [
        format!("smtp://mailer:{SECRET}@host?tls=bogus"),
        format!("smtp://mailer:{SECRET}@host?nope=1"),
        format!("smtp://mailer:{SECRET}@[::1"),
        format!("smtp://mailer:{SECRET}@host/path"),
    ] {
        let e = MailerConfig::from_url(&bad).unwrap_err();
        shown.push(format!("{e}"));
        shown.push(format!("{e:?}"));
    }
    for text in &shown {
        assert!(!text.contains(SECRET), "password leaked: {text}");
    }
    assert!(shown[0].contains("mailer:***@127.0.0.1"), "{}", shown[0]);
}

#[tokio::test]
async fn credentials_are_never_sent_over_an_unencrypted_connection() {
    let sink = SmtpSink::start(SinkOptions {
        auth: Some(("mailer".into(), "pw".into(), "PLAIN")),
        ..SinkOptions::default()
    })
    .await;
    let m = Mailer::new(MailerConfig::smtp(smtp(&sink).credentials("mailer", "pw"))).unwrap();
    let err = m
        .deliver_now(&welcome("ada@example.com"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unencrypted"), "{err}");
    assert!(!err.is_permanent());
    assert!(!sink.commands().contains(&"AUTH".to_string()));

    let required =
        Mailer::from_url(&format!("smtp://127.0.0.1:{}?tls=required", sink.port)).unwrap();
    let err = required
        .deliver_now(&welcome("ada@example.com"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("STARTTLS"), "{err}");
    assert!(sink.received().is_empty());
}

#[tokio::test]
async fn the_message_id_is_the_same_on_every_attempt() {
    let db = TestDb::new().await;
    let dir = tempfile::tempdir().unwrap();
    let mailer = Mailer::new(MailerConfig::file(dir.path())).unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let id = welcome("ada@example.com")
        .enqueue(&mut *tx)
        .await
        .unwrap()
        .id()
        .clone();
    tx.commit().await.unwrap();
    let email = welcome("ada@example.com");
    let a = mailer.deliver(&email, &id, "outbox.email").await.unwrap();
    let b = mailer.deliver(&email, &id, "outbox.email").await.unwrap();
    assert_eq!(a.message_id, b.message_id);
    assert_eq!(a.message_id, format!("<{id}@example.com>"));
    assert_eq!(
        a.file, b.file,
        "a duplicate delivery overwrites the same file"
    );
}
