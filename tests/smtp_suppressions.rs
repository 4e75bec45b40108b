//! Suppressions end to end: a list email delivered into a real SMTP server on loopback
//! carries a one-click URL; `curl` POSTs it to the unsubscribe endpoint served on loopback,
//! which suppresses the address for that list; the next list email to it is recorded as
//! suppressed at enqueue and nothing reaches the server, while its transactional mail still
//! goes; a forged, a foreign-key and a replayed token are refused and write nothing; an
//! address suppressed after its email was queued is stopped by the workers' check before
//! sending.

mod common;
#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::{net::SocketAddr, process::Command, time::Duration};

use common::TestDb;
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, SmtpConfig, Unsubscribe, UnsubscribeKeys},
    web::UnsubscribeEndpoint,
    NewSuppression, SuppressionFilter, SuppressionReason, SuppressionScope,
};
use smtp_sink::{SinkOptions, SmtpSink};

const BASE: &str = "https://news.example.com/u/";

fn keys() -> UnsubscribeKeys {
    UnsubscribeKeys::new("2026-11", [7u8; 32]).unwrap()
}

fn mailer(sink: &SmtpSink) -> Mailer {
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    let unsubscribe = Unsubscribe::new(BASE, keys()).unwrap();
    Mailer::new(MailerConfig::smtp(smtp).unsubscribe(unsubscribe)).unwrap()
}

fn newsletter(to: &str) -> Email {
    Email::builder()
        .from(("News", "news@example.com"))
        .to(to)
        .subject("November")
        .text("The news.")
        .list("november")
        .build()
        .unwrap()
}

fn receipt(to: &str) -> Email {
    Email::builder()
        .from("shop@example.com")
        .to(to)
        .subject("Your receipt")
        .text("Thanks.")
        .build()
        .unwrap()
}

async fn enqueue(db: &TestDb, email: Email) -> String {
    let mut tx = db.pool.begin().await.unwrap();
    let id = email.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    id.id().to_string()
}

async fn drain(db: &TestDb, mailer: &Mailer) -> outbox::DrainReport {
    Outbox::new(db.backend())
        .register::<Email, _>(mailer.handler())
        .drain()
        .await
        .unwrap()
}

/// The token in the one-click URL of a received message.
fn token_in(data: &[u8]) -> String {
    let text = String::from_utf8_lossy(data)
        .replace("\r\n ", " ")
        .replace("\r\n\t", " ");
    let line = text
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("list-unsubscribe:"))
        .unwrap_or_else(|| panic!("no List-Unsubscribe header in\n{text}"));
    let start = line.find(BASE).expect("the one-click URL") + BASE.len();
    let end = line[start..].find('>').expect("the URL's end") + start;
    line[start..end].to_owned()
}

/// `curl` against the endpoint: the status code and the body.
fn curl(method: &str, url: &str) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args([
        "-s",
        "-S",
        "-X",
        method,
        "-w",
        "\n%{http_code}",
        "--max-time",
        "10",
    ]);
    if method == "POST" {
        cmd.args(["-d", "List-Unsubscribe=One-Click"]);
    }
    let out = cmd
        .arg(url)
        .output()
        .expect("curl must be installed (apt-get install curl)");
    assert!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.trim().parse().unwrap(), body.to_owned())
}

/// Serves the unsubscribe endpoint of `db` at `/u` on a loopback port.
async fn serve(db: &TestDb, keys: UnsubscribeKeys) -> SocketAddr {
    let app = outbox::web::axum::Router::new().nest(
        "/u",
        UnsubscribeEndpoint::new(Admin::new(db.backend()), keys).into_router(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { outbox::web::axum::serve(listener, app).await.unwrap() });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_click_unsubscribe_suppresses_the_next_list_email_and_refuses_forged_and_replayed_tokens(
) {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let mailer = mailer(&sink);
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let suppressions = admin.suppressions();
    let all = SuppressionFilter::default();

    enqueue(&db, newsletter("Ann@Example.com")).await;
    assert_eq!(drain(&db, &mailer).await.counts.delivered, 1);
    let token = token_in(&sink.received()[0].data);

    let addr = serve(&db, keys()).await;
    let url = format!("http://{addr}/u/{token}");

    // GET shows a confirmation page and changes nothing.
    let (code, body) = curl("GET", &url);
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("ann@example.com") && body.contains("november"),
        "{body}"
    );
    assert!(body.contains("method=\"post\""), "{body}");
    assert_eq!(suppressions.count(&all).await.unwrap(), 0);

    // A forged token (its signature changed) and one signed with another key: refused.
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    let (code, _) = curl("POST", &format!("http://{addr}/u/{forged}"));
    assert_eq!(code, 400);
    let foreign = UnsubscribeKeys::new("2026-11", [8u8; 32]).unwrap();
    let foreign_token = foreign.sign(&keys().verify(&token).unwrap());
    let (code, _) = curl("POST", &format!("http://{addr}/u/{foreign_token}"));
    assert_eq!(code, 400);
    assert_eq!(
        suppressions.count(&all).await.unwrap(),
        0,
        "refused tokens write nothing"
    );

    // The one-click POST suppresses the address for the list.
    let (code, body) = curl("POST", &url);
    assert_eq!(code, 200, "{body}");
    let listed = suppressions.list(&all, 10, 0).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].address, "ann@example.com");
    assert_eq!(listed[0].scope, SuppressionScope::List("november".into()));
    assert_eq!(listed[0].reason, SuppressionReason::Unsubscribe);
    assert!(listed[0]
        .source
        .as_deref()
        .unwrap()
        .starts_with("one-click"));

    // The next list email to the address is recorded as suppressed; nothing is sent.
    let second = enqueue(&db, newsletter("ann@example.com")).await;
    let counts = admin.status_counts().await.unwrap();
    let email = counts
        .iter()
        .find(|c| c.type_tag == "outbox.email")
        .unwrap();
    assert_eq!((email.suppressed, email.pending), (1, 0), "{email:?}");
    let stopped = suppressions.stopped_messages(10).await.unwrap();
    assert_eq!(stopped[0].id, second);
    assert_eq!(
        stopped[0].reason,
        "suppressed: unsubscribe of ann@example.com (list:november)"
    );
    let report = drain(&db, &mailer).await;
    assert_eq!(report.counts.delivered, 0, "{report:?}");
    assert_eq!(
        sink.received().len(),
        1,
        "nothing more reached the SMTP server"
    );
    assert_eq!(
        admin
            .dead_letters()
            .count(&outbox::DeadLetterFilter::all())
            .await
            .unwrap(),
        0,
        "suppressed, not dead-lettered"
    );

    // Transactional mail to the address still goes.
    enqueue(&db, receipt("ann@example.com")).await;
    assert_eq!(drain(&db, &mailer).await.counts.delivered, 1);
    assert_eq!(sink.received().len(), 2);

    // A replay is refused; after the reader re-subscribed (the entry removed), the old link
    // does not suppress again.
    let (code, _) = curl("POST", &url);
    assert_eq!(code, 409);
    // The same token written another way (the mailto subject's form) is the same token.
    let (code, _) = curl("POST", &format!("http://{addr}/u/unsubscribe%20{token}"));
    assert_eq!(code, 409);
    let scope = SuppressionScope::List("november".into());
    assert!(suppressions
        .remove("ann@example.com", &scope)
        .await
        .unwrap());
    let (code, body) = curl("POST", &url);
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("used already"), "{body}");
    assert_eq!(suppressions.count(&all).await.unwrap(), 0);
    enqueue(&db, newsletter("ann@example.com")).await;
    assert_eq!(drain(&db, &mailer).await.counts.delivered, 1);
    assert_eq!(sink.received().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_suppressed_after_its_email_was_queued_is_stopped_before_sending() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let mailer = mailer(&sink);
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let bob = enqueue(&db, newsletter("bob@example.org")).await;
    enqueue(&db, newsletter("carol@example.org")).await;
    // A hard bounce for bob (from another campaign) arrives while these wait.
    let bounce = NewSuppression::new(
        "bob@example.org",
        SuppressionScope::All,
        SuppressionReason::HardBounce,
    )
    .unwrap()
    .source("test bounce");
    admin.suppressions().add(bounce).await.unwrap();
    let report = drain(&db, &mailer).await;
    assert_eq!(report.counts.delivered, 1, "{report:?}");
    let received = sink.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].rcpt, ["carol@example.org"]);
    let stopped = admin.suppressions().stopped_messages(10).await.unwrap();
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].id, bob);
    assert_eq!(
        stopped[0].reason,
        "suppressed: hard_bounce of bob@example.org (*)"
    );
    let counts = admin.status_counts().await.unwrap();
    let email = counts
        .iter()
        .find(|c| c.type_tag == "outbox.email")
        .unwrap();
    assert_eq!(email.suppressed, 1);
    assert_eq!(
        admin
            .dead_letters()
            .count(&outbox::DeadLetterFilter::all())
            .await
            .unwrap(),
        0
    );
}

/// Unicode spellings of a suppressed address (full-width letters, a soft hyphen, a trailing
/// zero-width space, `。` for `.`) name the same mailbox and are stopped: at enqueue when
/// the entry was there first, before sending when it came after; each is recorded as
/// suppressed and nothing reaches the SMTP server, while mail to another address goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unicode_spellings_of_a_suppressed_address_are_suppressed_not_sent() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let mailer = mailer(&sink);
    let db = TestDb::new().await;
    let admin = Admin::new(db.backend());
    let suppressions = admin.suppressions();
    let spellings = [
        "ann@ｅｘａｍｐｌｅ.com",
        "ann@exam\u{ad}ple.com",
        "ann@example.com\u{200b}",
        "ann@example\u{3002}com",
    ];
    // Queued before the entry exists: the workers' check stops them.
    let mut queued = Vec::new();
    for to in spellings {
        queued.push(enqueue(&db, receipt(to)).await);
    }
    let bounce = NewSuppression::new(
        "ann@example.com",
        SuppressionScope::All,
        SuppressionReason::HardBounce,
    )
    .unwrap();
    suppressions.add(bounce).await.unwrap();
    // Enqueued after: stopped at enqueue.
    for to in spellings {
        queued.push(enqueue(&db, receipt(to)).await);
    }
    enqueue(&db, receipt("bob@example.com")).await;
    let report = drain(&db, &mailer).await;
    assert_eq!(report.counts.delivered, 1, "{report:?}");
    let received = sink.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].rcpt, ["bob@example.com"]);
    let stopped = suppressions.stopped_messages(20).await.unwrap();
    let mut stopped_ids: Vec<_> = stopped.iter().map(|m| m.id.clone()).collect();
    stopped_ids.sort();
    queued.sort();
    assert_eq!(stopped_ids, queued, "all 8 recorded as suppressed");
    assert!(stopped
        .iter()
        .all(|m| m.reason == "suppressed: hard_bounce of ann@example.com (*)"));
    let counts = admin.status_counts().await.unwrap();
    let email = counts
        .iter()
        .find(|c| c.type_tag == "outbox.email")
        .unwrap();
    assert_eq!(email.suppressed, 8, "{email:?}");
    assert_eq!(
        admin
            .dead_letters()
            .count(&outbox::DeadLetterFilter::all())
            .await
            .unwrap(),
        0
    );
}
