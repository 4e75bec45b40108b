//! Email through the outbox into a real SMTP server on loopback (tests/common/smtp_sink.rs):
//! what arrives, how failures are classified, TLS, AUTH, partial recipients, the pool.

#[path = "common/captured.rs"]
mod captured;
mod common;
#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::{collections::HashMap, time::Duration};

use captured::Captured;
use common::{eventually, TestDb};
use mail_parser::{MessageParser, MimeHeaders};
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, Security, SmtpConfig, Stage},
    DeadLetterFilter, RetrySchedule,
};
use smtp_sink::{Script, SinkOptions, SmtpSink, TestCa};

fn config(sink: &SmtpSink) -> SmtpConfig {
    SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5))
}

fn mailer(config: SmtpConfig) -> Mailer {
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

async fn enqueue(db: &TestDb, emails: &[Email]) -> Vec<String> {
    let mut tx = db.pool.begin().await.unwrap();
    let mut ids = Vec::new();
    for e in emails {
        ids.push(e.enqueue(&mut *tx).await.unwrap().id().to_string());
    }
    tx.commit().await.unwrap();
    ids
}

/// Delivered rows are kept (retention), so tests can read their attempts.
fn outbox_for(db: &TestDb, mailer: &Mailer) -> Outbox<SqliteBackend> {
    Outbox::new(db.backend())
        .retention(outbox::Retention::keep_for(Duration::from_secs(3600)))
        .register_with::<Email, _>(
            mailer.handler(),
            QueueOptions::new().retry(RetrySchedule::fixed([Duration::ZERO])),
        )
}

/// Runs the outbox until every row in `ids` is done or has left the queue (dead letter).
async fn settle(db: &TestDb, outbox: &Outbox<SqliteBackend>, ids: &[String]) {
    outbox
        .run_until(async {
            let settled = eventually(Duration::from_secs(20), || async {
                for id in ids {
                    // One read: a row can leave the queue between two.
                    if db.status(id).await.is_some_and(|s| s != "done") {
                        return false;
                    }
                }
                true
            })
            .await;
            assert!(settled, "messages did not settle");
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn delivered_bytes_carry_headers_bodies_attachments_and_the_message_id() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let m = mailer(config(&sink));
    let email = Email::builder()
        .from("Shop <shop@example.com>")
        .to("Ada Lovelace <ada@example.com>")
        .to("bob@example.com")
        .cc("carol@example.com")
        .bcc("audit@example.com")
        .reply_to("help@example.com")
        .subject("Ihre Bestellung – Nr. 42")
        .text("Thanks for your order.\n.leading dot line")
        .html("<p>Thanks for your <b>order</b>.</p>")
        .header("X-Campaign", "spring")
        .attach("invoice.pdf", "application/pdf", b"%PDF-1.4 fake".to_vec())
        .attach("data.csv", "text/csv", b"a,b\n1,2\n".to_vec())
        .build()
        .unwrap();
    let ids = enqueue(&db, &[email]).await;
    settle(&db, &outbox_for(&db, &m), &ids).await;

    let received = sink.received();
    assert_eq!(received.len(), 1);
    let r = &received[0];
    assert_eq!(r.from, "shop@example.com");
    assert_eq!(
        r.rcpt,
        [
            "ada@example.com",
            "bob@example.com",
            "carol@example.com",
            "audit@example.com"
        ]
    );
    let msg = MessageParser::default().parse(&r.data).expect("parses");
    assert_eq!(
        msg.message_id(),
        Some(format!("{}@example.com", ids[0]).as_str())
    );
    assert_eq!(msg.subject(), Some("Ihre Bestellung – Nr. 42"));
    let to: Vec<_> = msg
        .to()
        .unwrap()
        .iter()
        .map(|a| a.address().unwrap())
        .collect();
    assert_eq!(to, ["ada@example.com", "bob@example.com"]);
    assert_eq!(
        msg.to().unwrap().first().unwrap().name(),
        Some("Ada Lovelace")
    );
    assert!(msg.cc().unwrap().contains("carol@example.com"));
    assert!(msg.bcc().is_none(), "Bcc must not be in the sent headers");
    assert!(msg.reply_to().unwrap().contains("help@example.com"));
    assert_eq!(msg.header_raw("X-Campaign").map(str::trim), Some("spring"));
    assert_eq!(
        msg.body_text(0).unwrap().replace("\r\n", "\n").trim_end(),
        "Thanks for your order.\n.leading dot line"
    );
    assert_eq!(
        msg.body_html(0).unwrap().trim_end(),
        "<p>Thanks for your <b>order</b>.</p>"
    );
    let files: Vec<(String, String, Vec<u8>)> = msg
        .attachments()
        .map(|a| {
            let ct = a.content_type().unwrap();
            (
                a.attachment_name().unwrap().to_string(),
                format!("{}/{}", ct.ctype(), ct.subtype().unwrap()),
                a.contents().to_vec(),
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            (
                "invoice.pdf".into(),
                "application/pdf".into(),
                b"%PDF-1.4 fake".to_vec()
            ),
            ("data.csv".into(), "text/csv".into(), b"a,b\n1,2\n".to_vec()),
        ]
    );
    assert_eq!(
        sink.commands()
            .iter()
            .filter(|c| *c == "STARTTLS" || *c == "AUTH")
            .count(),
        0
    );
}

#[tokio::test]
async fn a_451_is_retried_then_delivered() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([Script::AfterData("451 4.3.0 try again later")]);
    let m = mailer(config(&sink));
    let ids = enqueue(&db, &[welcome("ada@example.com")]).await;
    settle(&db, &outbox_for(&db, &m), &ids).await;
    let (status, attempts, _) = db.row(&ids[0]).await;
    assert_eq!((status.as_str(), attempts), ("done", 2));
    assert_eq!(sink.received().len(), 1, "delivered once");
}

#[tokio::test]
async fn a_550_is_dead_lettered_with_the_server_reply() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([Script::AfterData("550 5.7.1 message content rejected")]);
    let m = mailer(config(&sink));
    let outbox = outbox_for(&db, &m);
    let ids = enqueue(&db, &[welcome("ada@example.com")]).await;
    settle(&db, &outbox, &ids).await;
    let dead = outbox
        .admin()
        .dead_letters()
        .list(&DeadLetterFilter::type_tag("outbox.email"), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id.as_str(), ids[0]);
    assert_eq!(dead[0].attempts, 1, "a 5xx is not retried");
    assert!(
        dead[0]
            .last_error
            .contains("550 5.7.1 message content rejected"),
        "{}",
        dead[0].last_error
    );
    assert!(sink.received().is_empty());
}

#[tokio::test]
async fn a_connection_dropped_mid_data_is_retried_and_delivered_once() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([Script::DropMidData]);
    let m = mailer(config(&sink));
    let ids = enqueue(&db, &[welcome("ada@example.com")]).await;
    settle(&db, &outbox_for(&db, &m), &ids).await;
    let (status, attempts, _) = db.row(&ids[0]).await;
    assert_eq!((status.as_str(), attempts), ("done", 2));
    assert_eq!(sink.received().len(), 1);
    assert_eq!(
        sink.connections(),
        2,
        "the broken connection was not reused"
    );
}

#[tokio::test]
async fn starttls_with_the_test_ca_and_auth_plain() {
    let ca = TestCa::new();
    let sink = SmtpSink::start(SinkOptions {
        starttls: Some(ca.server.clone()),
        auth: Some(("mailer".into(), "s3cret".into(), "PLAIN LOGIN")),
        ..SinkOptions::default()
    })
    .await;
    let url = format!(
        "smtp://mailer:s3cret@127.0.0.1:{}?tls=required&timeout=5s",
        sink.port
    );
    let config = match MailerConfig::from_url(&url).unwrap().transport().clone() {
        outbox::smtp::Transport::Smtp(s) => s.add_root_certificate_pem(ca.ca_pem.as_bytes()),
        other => panic!("{other:?}"),
    };
    let m = mailer(config);
    m.deliver_now(&welcome("ada@example.com")).await.unwrap();
    let r = &sink.received()[0];
    assert!(r.tls, "sent after STARTTLS");
    assert_eq!(r.auth_user.as_deref(), Some("mailer"));
    let commands = sink.commands();
    let starttls = commands.iter().position(|c| c == "STARTTLS").unwrap();
    let auth = commands.iter().position(|c| c == "AUTH").unwrap();
    assert!(starttls < auth, "{commands:?}");
}

#[tokio::test]
async fn implicit_tls_with_auth_login() {
    let ca = TestCa::new();
    let sink = SmtpSink::start(SinkOptions {
        implicit_tls: Some(ca.server.clone()),
        auth: Some(("mailer".into(), "pa:ss word".into(), "LOGIN")),
        ..SinkOptions::default()
    })
    .await;
    let m = mailer(
        config(&sink)
            .security(Security::Implicit)
            .credentials("mailer", "pa:ss word")
            .add_root_certificate_pem(ca.ca_pem.as_bytes()),
    );
    m.deliver_now(&welcome("ada@example.com")).await.unwrap();
    m.deliver_now(&welcome("bob@example.com")).await.unwrap();
    let received = sink.received();
    assert_eq!(received.len(), 2);
    assert!(received.iter().all(|r| r.tls && r.auth_user.is_some()));
    assert_eq!(sink.connections(), 1, "the TLS connection is pooled");
}

#[tokio::test]
async fn an_untrusted_certificate_is_retried_and_nothing_is_sent() {
    let ca = TestCa::new();
    let sink = SmtpSink::start(SinkOptions {
        starttls: Some(ca.server.clone()),
        ..SinkOptions::default()
    })
    .await;
    let m = mailer(config(&sink)); // does not trust the test CA
    let err = m
        .deliver_now(&welcome("ada@example.com"))
        .await
        .unwrap_err();
    assert!(!err.is_permanent(), "{err}");
    assert!(
        matches!(
            err,
            outbox::smtp::SendError::Connection {
                stage: Stage::Tls,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(sink.received().is_empty());
    assert!(!sink.commands().contains(&"MAIL".to_string()));
}

#[tokio::test]
async fn partial_recipients_deliver_to_the_accepted_ones_and_complete() {
    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions {
        rcpt_replies: HashMap::from([("gone@example.com".into(), "550 5.1.1 no such user")]),
        ..SinkOptions::default()
    })
    .await;
    let m = mailer(config(&sink));
    let email = Email::builder()
        .from("shop@example.com")
        .to("ada@example.com")
        .to("gone@example.com")
        .cc("bob@example.com")
        .subject("Hi")
        .text("Hello")
        .build()
        .unwrap();
    let delivery = m.deliver_now(&email).await.unwrap();
    assert_eq!(delivery.accepted, ["ada@example.com", "bob@example.com"]);
    assert_eq!(delivery.refused.len(), 1);
    assert_eq!(delivery.refused[0].address, "gone@example.com");
    assert_eq!(delivery.refused[0].code, 550);
    assert!(delivery.refused[0].reply.contains("no such user"));

    let ids = enqueue(&db, &[email]).await;
    settle(&db, &outbox_for(&db, &m), &ids).await;
    assert_eq!(
        db.row(&ids[0]).await.0,
        "done",
        "a partial delivery completes"
    );
    let received = sink.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[1].rcpt, ["ada@example.com", "bob@example.com"]);
}

#[tokio::test]
async fn every_recipient_refused_is_classified_by_the_replies() {
    let sink = SmtpSink::start(SinkOptions {
        rcpt_replies: HashMap::from([
            ("gone@example.com".into(), "550 5.1.1 no such user"),
            ("full@example.com".into(), "452 4.2.2 mailbox full"),
        ]),
        ..SinkOptions::default()
    })
    .await;
    let m = mailer(config(&sink).pool_size(1));
    let err = m
        .deliver_now(&welcome("gone@example.com"))
        .await
        .unwrap_err();
    assert!(err.is_permanent(), "all 5xx: {err}");
    assert!(err.to_string().contains("550 5.1.1 no such user"), "{err}");
    let mut both = welcome("gone@example.com");
    both.to.push("full@example.com".into());
    let err = m.deliver_now(&both).await.unwrap_err();
    assert!(!err.is_permanent(), "a 4xx among them: {err}");
    assert!(err.to_string().contains("452 4.2.2 mailbox full"), "{err}");
    // The refused transactions were reset and the connection kept.
    m.deliver_now(&welcome("ada@example.com")).await.unwrap();
    assert_eq!(sink.connections(), 1);
    assert_eq!(
        sink.commands().iter().filter(|c| *c == "RSET").count(),
        2,
        "{:?}",
        sink.commands()
    );
}

/// A campaign's INFO log is a summary per type, not a line per message: a run that sends
/// 20 emails (one 451 retried, one 550 dead) logs no INFO line naming a message, and its
/// summary lines add up to 19 delivered, 1 retried and 1 dead. The per-message lines are
/// still there at DEBUG.
#[tokio::test]
async fn info_logs_a_summary_per_type_not_a_line_per_message() {
    let captured = Captured::default();
    let subscriber = captured.subscriber("debug,sqlx=warn");
    // This test's runtime runs every task on this thread, so a thread default suffices.
    let _guard = tracing::subscriber::set_default(subscriber);

    let db = TestDb::new().await;
    let sink = SmtpSink::start(SinkOptions::default()).await;
    sink.script([
        Script::AfterData("451 4.3.0 try again later"),
        Script::AfterData("550 5.7.1 message content rejected"),
    ]);
    let m = mailer(config(&sink));
    let emails: Vec<Email> = (0..20)
        .map(|i| welcome(&format!("user{i}@example.com")))
        .collect();
    let ids = enqueue(&db, &emails).await;
    let outbox = outbox_for(&db, &m).log_summary_every(Some(Duration::from_millis(100)));
    settle(&db, &outbox, &ids).await;
    assert_eq!(sink.received().len(), 19, "all but the 550");

    let logs = captured.take();
    let per_message: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains(" INFO ") && l.contains("message.id"))
        .collect();
    assert!(
        per_message.is_empty(),
        "per-message INFO lines:\n{}",
        per_message.join("\n")
    );
    let debug_sent = logs
        .lines()
        .filter(|l| l.contains(" DEBUG ") && l.contains("email sent"))
        .count();
    assert_eq!(debug_sent, 19, "each send at DEBUG:\n{logs}");
    let field = |line: &str, name: &str| -> u64 {
        line.split(&format!(" {name}="))
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    let summaries: Vec<&str> = logs
        .lines()
        .filter(|l| {
            l.contains(" INFO ")
                && l.contains("message.type=\"outbox.email\"")
                && l.contains(" delivered=")
        })
        .collect();
    assert!(!summaries.is_empty(), "no summary line:\n{logs}");
    let total = |name| summaries.iter().map(|l| field(l, name)).sum::<u64>();
    assert_eq!(
        (total("delivered"), total("retried"), total("dead")),
        (19, 1, 1),
        "{}",
        summaries.join("\n")
    );
    assert!(
        summaries.iter().all(|l| l.contains("per_second=")),
        "{summaries:?}"
    );
}
