//! The Postmark transport (feature `providers`) end to end: emails enqueued on a real
//! SQLite file, sent by the mailer's handler to a loopback stand-in for Postmark's Email
//! API, and each class of answer applied by the outbox.
//!
//! The stand-in follows postmarkapp.com's developer docs, "Email API" (send a single
//! email): `POST /email` with `Accept: application/json`, `Content-Type:
//! application/json` and the `X-Postmark-Server-Token` header; the request fields `From`,
//! `To`, `Cc`, `Bcc`, `ReplyTo`, `Subject`, `Tag`, `HtmlBody`, `TextBody`, `Headers`
//! [{Name, Value}], `Attachments` [{Name, Content (base64), ContentType}],
//! `MessageStream`; a success answers 200 `{"To", "SubmittedAt", "MessageID",
//! "ErrorCode": 0, "Message": "OK"}`, an error `{"ErrorCode": n, "Message": "..."}`
//! ("API error codes": 10 bad token with HTTP 401, 300 invalid request, 406 inactive
//! recipient with HTTP 422; 429 rate limited; 500 internal error).
//!
//! The Mailgun transport likewise, against a stand-in that follows Mailgun's API docs,
//! "Sending > messages.mime" (send a message in MIME format): `POST
//! /v3/{domain_name}/messages.mime`, `multipart/form-data` with the fields `to` (the
//! recipients, comma-separated) and `message` (the MIME message, as a file), HTTP basic
//! auth `api:API_KEY`; a success answers 200 `{"id": "<...>", "message": "Queued. Thank
//! you."}`, an error `{"message": "..."}` (400 bad request, 401 unauthorized, 429 too
//! many requests).

mod common;

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    routing::post,
    Router,
};
use common::{eventually, TestDb};
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, Unsubscribe, UnsubscribeKeys},
    DeadLetterFilter, RetrySchedule, SuppressionFilter, SuppressionReason,
};
use serde_json::Value;

const TOKEN: &str = "server-token-0f3c";

/// One request the stand-in received: its headers and JSON body.
#[derive(Clone, Debug)]
struct Received {
    headers: HeaderMap,
    json: Value,
}

/// What the stand-in answers every request with.
#[derive(Clone)]
struct Answer {
    status: u16,
    body: &'static str,
    retry_after: Option<&'static str>,
}

#[derive(Clone)]
struct Stand {
    answer: Answer,
    received: Arc<Mutex<Vec<Received>>>,
}

async fn email_endpoint(
    State(stand): State<Stand>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, String) {
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    stand
        .received
        .lock()
        .unwrap()
        .push(Received { headers, json });
    let mut out = HeaderMap::new();
    out.insert("content-type", "application/json".parse().unwrap());
    if let Some(after) = stand.answer.retry_after {
        out.insert("retry-after", after.parse().unwrap());
    }
    (
        StatusCode::from_u16(stand.answer.status).unwrap(),
        out,
        stand.answer.body.to_owned(),
    )
}

/// A stand-in for Postmark on 127.0.0.1; its port and what it received.
async fn postmark(answer: Answer) -> (u16, Arc<Mutex<Vec<Received>>>) {
    let (port, received, _) = postmark_counting(answer).await;
    (port, received)
}

/// [`postmark`], also counting the connections it accepted.
async fn postmark_counting(answer: Answer) -> (u16, Arc<Mutex<Vec<Received>>>, Arc<AtomicUsize>) {
    use axum::serve::ListenerExt as _;
    let received = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route("/email", post(email_endpoint))
        .with_state(Stand {
            answer,
            received: received.clone(),
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    let listener = listener.tap_io(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, received, connections)
}

const OK: Answer = Answer {
    status: 200,
    body: r#"{"To":"ann@example.org","SubmittedAt":"2024-05-01T10:00:00.0000000-04:00","MessageID":"0a129aee-e1cd-480d-b08d-4f48548ff48d","ErrorCode":0,"Message":"OK"}"#,
    retry_after: None,
};

fn url(port: u16) -> String {
    format!("postmark://{TOKEN}@127.0.0.1:{port}?tls=none&stream=outbound")
}

async fn enqueue(db: &TestDb, email: Email) -> String {
    let mut tx = db.pool.begin().await.unwrap();
    let id = email.enqueue(&mut *tx).await.unwrap().id().to_string();
    tx.commit().await.unwrap();
    id
}

/// Retries an hour later, so a retried message is attempted once in a test.
fn outbox_for(db: &TestDb, mailer: &Mailer) -> Outbox<SqliteBackend> {
    Outbox::new(db.backend())
        .retention(outbox::Retention::keep_for(Duration::from_secs(3600)))
        .register_with::<Email, _>(
            mailer.handler(),
            QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_secs(3600)])),
        )
}

/// Runs the outbox until `done` holds (at most 20 s).
async fn run_until<F, Fut>(outbox: &Outbox<SqliteBackend>, what: &str, done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    outbox
        .run_until(async {
            assert!(eventually(Duration::from_secs(20), done).await, "{what}");
        })
        .await
        .unwrap();
}

fn to_one(to: &str) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(to)
        .subject("Your order")
        .text("Thanks")
        .build()
        .unwrap()
}

/// Requests go over kept-alive connections: 60 emails at concurrency 4 open at most a
/// few connections, not one each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_to_the_api_are_kept_alive_and_reused() {
    let db = TestDb::new().await;
    let (port, received, connections) = postmark_counting(OK).await;
    let mailer = Mailer::new(MailerConfig::from_url(&url(port)).unwrap()).unwrap();
    let mut ids = Vec::new();
    for i in 0..60 {
        ids.push(enqueue(&db, to_one(&format!("user{i}@example.org"))).await);
    }
    let outbox = Outbox::new(db.backend())
        .register_with::<Email, _>(mailer.handler(), QueueOptions::new().concurrency(4));
    run_until(&outbox, "all delivered", || async {
        received.lock().unwrap().len() >= 60
    })
    .await;
    let opened = connections.load(Ordering::SeqCst);
    println!("60 emails over {opened} connection(s)");
    assert!(
        (1..=8).contains(&opened),
        "60 emails at concurrency 4 opened {opened} connections"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueued_email_reaches_postmark_field_by_field() {
    let db = TestDb::new().await;
    let (port, received) = postmark(OK).await;
    let keys = UnsubscribeKeys::new("2026-11", [7u8; 32]).unwrap();
    let config = MailerConfig::from_url(&url(port))
        .unwrap()
        .unsubscribe(Unsubscribe::new("https://news.example.com/u/", keys).unwrap());
    let mailer = Mailer::new(config).unwrap();
    assert!(!format!("{mailer:?}").contains(TOKEN));
    assert_eq!(
        mailer.downstream().as_deref(),
        Some(&*format!("postmark:127.0.0.1:{port}"))
    );
    let email = Email::builder()
        .from("Shop <shop@example.com>")
        .to("Ann <ann@example.org>")
        .cc("cc@example.org")
        .bcc("bcc@example.org")
        .reply_to("help@example.com")
        .subject("Your receipt")
        .text("Plain text")
        .html("<p>HTML</p>")
        .header("X-Campaign", "november")
        .tag("receipt")
        .tag("second-tag")
        .attach("note.txt", "text/plain", b"hello".to_vec())
        .build()
        .unwrap();
    let id = enqueue(&db, email).await;
    // A list email (to one recipient) carries the one-click unsubscribe headers.
    let news = Email::builder()
        .from("News <news@example.com>")
        .to("bob@example.org")
        .subject("November news")
        .html("<p>News</p>")
        .list("november")
        .build()
        .unwrap();
    let news_id = enqueue(&db, news).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "delivered", || async {
        db.status(&id).await.as_deref() == Some("done")
            && db.status(&news_id).await.as_deref() == Some("done")
    })
    .await;

    let mut received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 2, "{received:?}");
    received.sort_by_key(|r| r.json["Subject"] == "November news");
    let Received { headers, json } = &received[0];
    assert_eq!(headers["x-postmark-server-token"], TOKEN);
    assert_eq!(headers["accept"], "application/json");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(json["From"], "Shop <shop@example.com>");
    assert_eq!(json["To"], "Ann <ann@example.org>");
    assert_eq!(json["Cc"], "cc@example.org");
    assert_eq!(json["Bcc"], "bcc@example.org");
    assert_eq!(json["ReplyTo"], "help@example.com");
    assert_eq!(json["Subject"], "Your receipt");
    assert_eq!(json["TextBody"], "Plain text");
    assert_eq!(json["HtmlBody"], "<p>HTML</p>");
    assert_eq!(json["Tag"], "receipt");
    assert_eq!(json["MessageStream"], "outbound");
    let attachments = json["Attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 1);
    assert_eq!(attachments[0]["Name"], "note.txt");
    assert_eq!(attachments[0]["Content"], "aGVsbG8="); // base64 of "hello"
    assert_eq!(attachments[0]["ContentType"], "text/plain");
    let header = |json: &Value, name: &str| -> Option<String> {
        json["Headers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["Name"].as_str().unwrap().eq_ignore_ascii_case(name))
            .map(|h| h["Value"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        header(json, "Message-ID"),
        Some(format!("<{id}@example.com>"))
    );
    assert_eq!(header(json, "X-Campaign").as_deref(), Some("november"));
    assert_eq!(header(json, "List-Unsubscribe"), None, "not a list email");

    let news = &received[1].json;
    assert_eq!(news["To"], "bob@example.org");
    assert_eq!(news["HtmlBody"], "<p>News</p>");
    assert!(news.get("TextBody").is_none() && news.get("Cc").is_none());
    assert_eq!(
        header(news, "Message-ID"),
        Some(format!("<{news_id}@example.com>"))
    );
    let unsubscribe = header(news, "List-Unsubscribe").expect("List-Unsubscribe");
    assert!(
        unsubscribe.starts_with("<https://news.example.com/u/"),
        "{unsubscribe}"
    );
    assert_eq!(
        header(news, "List-Unsubscribe-Post").as_deref(),
        Some("List-Unsubscribe=One-Click")
    );
    assert_eq!(
        header(news, "List-Id").as_deref(),
        Some("<november.example.com>")
    );
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in &keys {
        assert!(
            [
                "From",
                "To",
                "Cc",
                "Bcc",
                "ReplyTo",
                "Subject",
                "TextBody",
                "HtmlBody",
                "Headers",
                "Tag",
                "MessageStream",
                "Attachments"
            ]
            .contains(key),
            "a field Postmark does not define: {key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inactive_recipient_is_suppressed_and_the_email_is_a_dead_letter() {
    let db = TestDb::new().await;
    let (port, received) = postmark(Answer {
        status: 422,
        body: r#"{"ErrorCode":406,"Message":"You tried to send to recipient(s) that have been marked as inactive."}"#,
        retry_after: None,
    })
    .await;
    let mailer = Mailer::from_url(&url(port)).unwrap();
    let id = enqueue(&db, to_one("gone@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    let admin = outbox.admin();
    run_until(&outbox, "dead letter", || async {
        db.status(&id).await.is_none()
    })
    .await;
    assert_eq!(received.lock().unwrap().len(), 1);
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::type_tag("outbox.email"), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let listed = admin
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].address, "gone@example.org");
    assert_eq!(listed[0].reason, SuppressionReason::HardBounce);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_defers_without_using_an_attempt() {
    let db = TestDb::new().await;
    let (port, received) = postmark(Answer {
        status: 429,
        body: r#"{"ErrorCode":0,"Message":"Too many requests"}"#,
        retry_after: Some("120"),
    })
    .await;
    let mailer = Mailer::from_url(&url(port)).unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    // No `Shaping` configured: the slow-down is a snooze of `Retry-After`.
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "snoozed", || async {
        !received.lock().unwrap().is_empty()
            && db.row(&id).await.2.is_some_and(|e| e.contains("429"))
    })
    .await;
    let (status, attempts, error) = db.row(&id).await;
    assert_eq!((status.as_str(), attempts), ("queued", 0), "{error:?}");
    let error = error.unwrap();
    assert!(error.contains("Too many requests"), "{error}");
    assert_eq!(received.lock().unwrap().len(), 1, "not tried again at once");
    let dead = outbox
        .admin()
        .dead_letters()
        .count(&DeadLetterFilter::all())
        .await
        .unwrap();
    assert_eq!(dead, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_opens_the_breaker() {
    let db = TestDb::new().await;
    let (port, _received) = postmark(Answer {
        status: 401,
        body: r#"{"ErrorCode":10,"Message":"Bad or missing Server API token."}"#,
        retry_after: None,
    })
    .await;
    let mailer = Mailer::from_url(&url(port)).unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    let admin = outbox.admin();
    let name = format!("postmark:127.0.0.1:{port}");
    run_until(&outbox, "breaker opened", || async {
        admin
            .breakers()
            .await
            .unwrap()
            .iter()
            .any(|b| b.name == name && b.times_opened >= 1)
    })
    .await;
    let breakers = admin.breakers().await.unwrap();
    let breaker = breakers.iter().find(|b| b.name == name).unwrap();
    let reason = breaker.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("401") && reason.contains("ErrorCode 10"),
        "{breaker:?}"
    );
    assert!(!reason.contains(TOKEN));
    let (status, _, _) = db.row(&id).await;
    assert_ne!(status, "dead", "an outage never makes a dead letter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_retried() {
    let db = TestDb::new().await;
    let (port, received) = postmark(Answer {
        status: 500,
        body: r#"{"ErrorCode":0,"Message":"Internal server error"}"#,
        retry_after: None,
    })
    .await;
    let mailer = Mailer::from_url(&url(port)).unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "failed attempt", || async {
        db.row(&id).await.1 == 1
    })
    .await;
    let (status, attempts, error) = db.row(&id).await;
    assert_eq!((status.as_str(), attempts), ("queued", 1));
    let error = error.unwrap();
    assert!(
        error.contains("HTTP 500") && error.contains("Internal server error"),
        "{error}"
    );
    assert_eq!(received.lock().unwrap().len(), 1);
}

// ---- Mailgun ----

const MAILGUN_KEY: &str = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0";
const MAILGUN_DOMAIN: &str = "mg.example.com";
const MAILGUN_ID: &str = "<20240501100000.1.A1B2C3D4E5F6@mg.example.com>";

/// An Ed25519 key made for this test only (`openssl genpkey -algorithm ed25519`).
const DKIM_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEILW5RxOWbE4voLMrX4yeoZlBKZPFEcPOuXt51NF0Gr5i
-----END PRIVATE KEY-----
";

/// One request the Mailgun stand-in received: its headers and form fields (name, value).
#[derive(Clone, Debug)]
struct Form {
    headers: HeaderMap,
    fields: Vec<(String, Vec<u8>)>,
}

impl Form {
    fn field(&self, name: &str) -> &[u8] {
        let found = self.fields.iter().find(|(n, _)| n == name);
        &found
            .unwrap_or_else(|| panic!("no field {name}: {self:?}"))
            .1
    }

    fn text(&self, name: &str) -> String {
        String::from_utf8(self.field(name).to_vec()).unwrap()
    }
}

#[derive(Clone)]
struct MailgunStand {
    answer: Answer,
    received: Arc<Mutex<Vec<Form>>>,
}

/// The fields of `multipart/form-data` `body` (RFC 7578) with `boundary`.
fn form_fields(boundary: &str, body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let find =
        |haystack: &[u8], needle: &[u8]| haystack.windows(needle.len()).position(|w| w == needle);
    let mut fields = Vec::new();
    let mut rest = &body[find(body, delimiter).expect("a first boundary") + delimiter.len()..];
    loop {
        if rest.starts_with(b"--") {
            return fields;
        }
        rest = rest.strip_prefix(b"\r\n").expect("CRLF after a boundary");
        let head_end = find(rest, b"\r\n\r\n").expect("a part's header");
        let head = std::str::from_utf8(&rest[..head_end]).unwrap();
        let name = head
            .split("\r\n")
            .find(|l| {
                l.to_ascii_lowercase()
                    .starts_with("content-disposition: form-data")
            })
            .and_then(|l| l.split("name=\"").nth(1))
            .and_then(|n| n.split('"').next())
            .expect("a field name")
            .to_owned();
        let content = &rest[head_end + 4..];
        let end = find(content, &[b"\r\n", delimiter].concat()).expect("the closing boundary");
        fields.push((name, content[..end].to_vec()));
        rest = &content[end + 2 + delimiter.len()..];
    }
}

async fn messages_mime(
    State(stand): State<MailgunStand>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, String) {
    let content_type = headers["content-type"].to_str().unwrap().to_owned();
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("not a form: {content_type}"));
    let fields = form_fields(boundary, &body);
    stand
        .received
        .lock()
        .unwrap()
        .push(Form { headers, fields });
    let mut out = HeaderMap::new();
    out.insert("content-type", "application/json".parse().unwrap());
    if let Some(after) = stand.answer.retry_after {
        out.insert("retry-after", after.parse().unwrap());
    }
    (
        StatusCode::from_u16(stand.answer.status).unwrap(),
        out,
        stand.answer.body.to_owned(),
    )
}

/// A stand-in for Mailgun on 127.0.0.1 (the domain `mg.example.com`); its port and what
/// it received.
async fn mailgun(answer: Answer) -> (u16, Arc<Mutex<Vec<Form>>>) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new()
        .route(
            &format!("/v3/{MAILGUN_DOMAIN}/messages.mime"),
            post(messages_mime),
        )
        .with_state(MailgunStand {
            answer,
            received: received.clone(),
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, received)
}

fn mailgun_url(port: u16) -> String {
    format!("mailgun://{MAILGUN_KEY}@{MAILGUN_DOMAIN}?host=127.0.0.1:{port}&tls=none")
}

const QUEUED: Answer = Answer {
    status: 200,
    body: r#"{"id":"<20240501100000.1.A1B2C3D4E5F6@mg.example.com>","message":"Queued. Thank you."}"#,
    retry_after: None,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueued_email_reaches_mailgun_as_our_signed_mime() {
    use base64::Engine as _;
    let db = TestDb::new().await;
    let (port, received) = mailgun(QUEUED).await;
    let signer = outbox::smtp::DkimSigner::from_pem("example.com", "s1", DKIM_KEY).unwrap();
    let config = MailerConfig::from_url(&mailgun_url(port))
        .unwrap()
        .dkim(signer);
    let mailer = Mailer::new(config).unwrap();
    assert!(!format!("{mailer:?}").contains(MAILGUN_KEY));
    assert_eq!(
        mailer.downstream().as_deref(),
        Some(&*format!("mailgun:127.0.0.1:{port}"))
    );
    let email = Email::builder()
        .from("Shop <shop@example.com>")
        .to("Ann <ann@example.org>")
        .to("ben@example.org")
        .cc("cc@example.org")
        .bcc("hidden@example.org")
        .subject("Your receipt")
        .text("Plain text")
        .html("<p>HTML</p>")
        .attach("note.txt", "text/plain", b"hello".to_vec())
        .build()
        .unwrap();
    let id = enqueue(&db, email).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "delivered", || async {
        db.status(&id).await.as_deref() == Some("done")
    })
    .await;

    let received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "{received:?}");
    let form = &received[0];
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("api:{MAILGUN_KEY}"));
    assert_eq!(form.headers["authorization"], format!("Basic {basic}"));
    let names: Vec<&str> = form.fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["to", "message"]);
    let mut to: Vec<String> = form
        .text("to")
        .split(',')
        .map(|a| a.trim().to_owned())
        .collect();
    to.sort();
    assert_eq!(
        to,
        [
            "ann@example.org",
            "ben@example.org",
            "cc@example.org",
            "hidden@example.org"
        ],
        "every envelope recipient, Bcc included"
    );
    let raw = form.field("message");
    assert!(raw.starts_with(b"DKIM-Signature: "), "signed first");
    let message = mail_parser::MessageParser::default()
        .parse(raw)
        .expect("the message parses as MIME");
    assert_eq!(message.subject(), Some("Your receipt"));
    assert_eq!(
        message.message_id(),
        Some(&*format!("{id}@example.com")),
        "our Message-ID"
    );
    let signature = message
        .header_raw("DKIM-Signature")
        .expect("a DKIM signature");
    assert!(signature.contains("d=example.com"), "{signature}");
    assert!(
        message.header_raw("Bcc").is_none(),
        "Bcc is not in the headers"
    );
    assert_eq!(message.body_text(0).as_deref(), Some("Plain text"));
    assert_eq!(message.attachment_count(), 1);

    // Mailgun's id of the email is kept on the delivery.
    let delivery = mailer
        .deliver_now(&to_one("ann@example.org"))
        .await
        .unwrap();
    assert_eq!(delivery.provider_id.as_deref(), Some(MAILGUN_ID));
    assert_eq!(delivery.accepted, ["ann@example.org"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_mailgun_refuses_is_a_dead_letter_with_its_message() {
    let db = TestDb::new().await;
    let (port, received) = mailgun(Answer {
        status: 400,
        body: r#"{"message":"to parameter is not a valid address. please check documentation"}"#,
        retry_after: None,
    })
    .await;
    let mailer = Mailer::from_url(&mailgun_url(port)).unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    let admin = outbox.admin();
    run_until(&outbox, "dead letter", || async {
        db.status(&id).await.is_none()
    })
    .await;
    assert_eq!(received.lock().unwrap().len(), 1);
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::type_tag("outbox.email"), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let error = &dead[0].last_error;
    assert!(
        error.contains("mailgun answered HTTP 400: to parameter is not a valid address"),
        "{error}"
    );
    assert!(!error.contains(MAILGUN_KEY));
    let suppressed = admin
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await
        .unwrap();
    assert!(suppressed.is_empty(), "{suppressed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mailgun_too_many_requests_defers_without_using_an_attempt() {
    let db = TestDb::new().await;
    let (port, received) = mailgun(Answer {
        status: 429,
        body: r#"{"message":"Too many requests"}"#,
        retry_after: Some("120"),
    })
    .await;
    let mailer = Mailer::from_url(&mailgun_url(port)).unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "snoozed", || async {
        !received.lock().unwrap().is_empty()
            && db.row(&id).await.2.is_some_and(|e| e.contains("429"))
    })
    .await;
    let (status, attempts, error) = db.row(&id).await;
    assert_eq!((status.as_str(), attempts), ("queued", 0), "{error:?}");
    let error = error.unwrap();
    assert!(
        error.contains("mailgun answered HTTP 429: Too many requests"),
        "{error}"
    );
    assert_eq!(received.lock().unwrap().len(), 1, "not tried again at once");
    let dead = outbox
        .admin()
        .dead_letters()
        .count(&DeadLetterFilter::all())
        .await
        .unwrap();
    assert_eq!(dead, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_mailgun_key_opens_the_breaker() {
    let db = TestDb::new().await;
    let (port, _received) = mailgun(Answer {
        status: 401,
        body: "Forbidden",
        retry_after: None,
    })
    .await;
    let mailer = Mailer::from_url(&mailgun_url(port)).unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    let admin = outbox.admin();
    let name = format!("mailgun:127.0.0.1:{port}");
    run_until(&outbox, "breaker opened", || async {
        admin
            .breakers()
            .await
            .unwrap()
            .iter()
            .any(|b| b.name == name && b.times_opened >= 1)
    })
    .await;
    let breakers = admin.breakers().await.unwrap();
    let breaker = breakers.iter().find(|b| b.name == name).unwrap();
    let reason = breaker.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("mailgun answered HTTP 401: Forbidden"),
        "{breaker:?}"
    );
    assert!(!reason.contains(MAILGUN_KEY));
    let (status, _, _) = db.row(&id).await;
    assert_ne!(status, "dead", "an outage never makes a dead letter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_email_goes_to_mailgun_as_it_is() {
    let (port, received) = mailgun(QUEUED).await;
    let mailer = Mailer::from_url(&mailgun_url(port)).unwrap();
    let data = b"From: shop@example.com\r\nTo: ann@example.org\r\nSubject: Raw\r\n\r\nHello\r\n";
    let raw = outbox::smtp::RawEmail {
        from: Some("shop@example.com".into()),
        to: vec!["ann@example.org".into(), "hidden@example.org".into()],
        data: data.to_vec(),
    };
    let id = outbox::MessageId::from_string("01J0000000000000000000RAW0");
    let delivery = mailer
        .deliver_raw(&raw, &id, "outbox.raw_email")
        .await
        .unwrap();
    assert_eq!(delivery.provider_id.as_deref(), Some(MAILGUN_ID));
    let received = received.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    assert_eq!(
        received[0].text("to"),
        "ann@example.org, hidden@example.org"
    );
    // The message as it was, with the Message-ID it lacked put in front.
    let message = received[0].field("message");
    let front = format!("Message-ID: <{id}@example.com>\r\n");
    assert_eq!(message, [front.as_bytes(), data].concat());
}
