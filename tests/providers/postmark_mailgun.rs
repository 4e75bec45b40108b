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

use crate::api_stand::{
    dead_letter, deferred_without_an_attempt, enqueue, opens_the_breaker, outbox_for, retried,
    run_until, to_one, Answer, Received, Stand,
};
use crate::common::TestDb;
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, Unsubscribe, UnsubscribeKeys},
    DeadLetterFilter, SuppressionFilter, SuppressionReason,
};
use serde_json::Value;

const TOKEN: &str = "server-token-0f3c";

/// A stand-in for Postmark's `POST /email` on 127.0.0.1.
async fn postmark(answer: Answer) -> Stand {
    Stand::answering("/email", answer).await
}

const OK: Answer = Answer::new(
    200,
    r#"{"To":"ann@example.org","SubmittedAt":"2024-05-01T10:00:00.0000000-04:00","MessageID":"0a129aee-e1cd-480d-b08d-4f48548ff48d","ErrorCode":0,"Message":"OK"}"#,
);

fn url(port: u16) -> String {
    format!("postmark://{TOKEN}@127.0.0.1:{port}?tls=none&stream=outbound")
}

/// Requests go over kept-alive connections: 60 emails at concurrency 4 open at most a
/// few connections, not one each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_to_the_api_are_kept_alive_and_reused() {
    let db = TestDb::new().await;
    let stand = postmark(OK).await;
    let mailer = Mailer::new(MailerConfig::from_url(&url(stand.port)).unwrap()).unwrap();
    let mut ids = Vec::new();
    for i in 0..60 {
        ids.push(enqueue(&db, to_one(&format!("user{i}@example.org"))).await);
    }
    let outbox = Outbox::new(db.backend())
        .register_with::<Email, _>(mailer.handler(), QueueOptions::new().concurrency(4));
    run_until(&outbox, "all delivered", || async { stand.count() >= 60 }).await;
    let opened = stand.connections();
    println!("60 emails over {opened} connection(s)");
    assert!(
        (1..=8).contains(&opened),
        "60 emails at concurrency 4 opened {opened} connections"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueued_email_reaches_postmark_field_by_field() {
    let db = TestDb::new().await;
    let stand = postmark(OK).await;
    let port = stand.port;
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

    let mut received = stand.received();
    assert_eq!(received.len(), 2, "{received:?}");
    received.sort_by_key(|r| r.json()["Subject"] == "November news");
    let (headers, json) = (&received[0].headers, &received[0].json());
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

    let news = &received[1].json();
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
    let stand = postmark(Answer::new(
        422,
        r#"{"ErrorCode":406,"Message":"You tried to send to recipient(s) that have been marked as inactive."}"#,
    ))
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let id = enqueue(&db, to_one("gone@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    let admin = outbox.admin();
    run_until(&outbox, "dead letter", || async {
        db.status(&id).await.is_none()
    })
    .await;
    assert_eq!(stand.count(), 1);
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
    let stand = postmark(
        Answer::new(429, r#"{"ErrorCode":0,"Message":"Too many requests"}"#)
            .with_headers(&[("retry-after", "120")]),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = deferred_without_an_attempt(&db, &mailer, &stand).await;
    assert!(error.contains("Too many requests"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_opens_the_breaker() {
    let db = TestDb::new().await;
    let stand = postmark(Answer::new(
        401,
        r#"{"ErrorCode":10,"Message":"Bad or missing Server API token."}"#,
    ))
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let name = format!("postmark:127.0.0.1:{}", stand.port);
    let reason = opens_the_breaker(&db, &mailer, &name).await;
    assert!(
        reason.contains("401") && reason.contains("ErrorCode 10"),
        "{reason}"
    );
    assert!(!reason.contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_retried() {
    let db = TestDb::new().await;
    let stand = postmark(Answer::new(
        500,
        r#"{"ErrorCode":0,"Message":"Internal server error"}"#,
    ))
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = retried(&db, &mailer, &stand).await;
    assert!(
        error.contains("HTTP 500") && error.contains("Internal server error"),
        "{error}"
    );
}

// ---- Mailgun ----

const MAILGUN_KEY: &str = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0";
const MAILGUN_DOMAIN: &str = "mg.example.com";
/// Mailgun's id of the email as kept: its answer's `id` without the angle brackets (as its
/// events name the message).
const MAILGUN_ID: &str = "20240501100000.1.A1B2C3D4E5F6@mg.example.com";

/// An Ed25519 key made for this test only (`openssl genpkey -algorithm ed25519`).
const DKIM_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEILW5RxOWbE4voLMrX4yeoZlBKZPFEcPOuXt51NF0Gr5i
-----END PRIVATE KEY-----
";

/// One request the Mailgun stand-in received: its headers and form fields (name, value).
#[derive(Clone, Debug)]
struct Form {
    headers: axum::http::HeaderMap,
    fields: Vec<(String, Vec<u8>)>,
}

impl Form {
    /// The form `received` carries (the test fails when it is not one).
    fn of(received: &Received) -> Self {
        let content_type = received.header("content-type");
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .unwrap_or_else(|| panic!("not a form: {content_type}"));
        Self {
            headers: received.headers.clone(),
            fields: form_fields(boundary, &received.body),
        }
    }

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

/// A stand-in for Mailgun on 127.0.0.1 (the domain `mg.example.com`).
async fn mailgun(answer: Answer) -> Stand {
    Stand::answering(&format!("/v3/{MAILGUN_DOMAIN}/messages.mime"), answer).await
}

/// The forms the Mailgun stand-in received.
fn forms(stand: &Stand) -> Vec<Form> {
    stand.received().iter().map(Form::of).collect()
}

fn mailgun_url(port: u16) -> String {
    format!("mailgun://{MAILGUN_KEY}@{MAILGUN_DOMAIN}?host=127.0.0.1:{port}&tls=none")
}

const QUEUED: Answer = Answer::new(
    200,
    r#"{"id":"<20240501100000.1.A1B2C3D4E5F6@mg.example.com>","message":"Queued. Thank you."}"#,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueued_email_reaches_mailgun_as_our_signed_mime() {
    use base64::Engine as _;
    let db = TestDb::new().await;
    let stand = mailgun(QUEUED).await;
    let port = stand.port;
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

    let received = forms(&stand);
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
    let stand = mailgun(Answer::new(
        400,
        r#"{"message":"to parameter is not a valid address. please check documentation"}"#,
    ))
    .await;
    let mailer = Mailer::from_url(&mailgun_url(stand.port)).unwrap();
    let error = dead_letter(&db, &mailer, &stand).await;
    assert!(
        error.contains("mailgun answered HTTP 400: to parameter is not a valid address"),
        "{error}"
    );
    assert!(!error.contains(MAILGUN_KEY));
    let suppressed = outbox_for(&db, &mailer)
        .admin()
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await
        .unwrap();
    assert!(suppressed.is_empty(), "{suppressed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mailgun_too_many_requests_defers_without_using_an_attempt() {
    let db = TestDb::new().await;
    let stand = mailgun(
        Answer::new(429, r#"{"message":"Too many requests"}"#)
            .with_headers(&[("retry-after", "120")]),
    )
    .await;
    let mailer = Mailer::from_url(&mailgun_url(stand.port)).unwrap();
    let error = deferred_without_an_attempt(&db, &mailer, &stand).await;
    assert!(
        error.contains("mailgun answered HTTP 429: Too many requests"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_mailgun_key_opens_the_breaker() {
    let db = TestDb::new().await;
    let stand = mailgun(Answer::new(401, "Forbidden")).await;
    let mailer = Mailer::from_url(&mailgun_url(stand.port)).unwrap();
    let name = format!("mailgun:127.0.0.1:{}", stand.port);
    let reason = opens_the_breaker(&db, &mailer, &name).await;
    assert!(
        reason.contains("mailgun answered HTTP 401: Forbidden"),
        "{reason}"
    );
    assert!(!reason.contains(MAILGUN_KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_email_goes_to_mailgun_as_it_is() {
    let stand = mailgun(QUEUED).await;
    let mailer = Mailer::from_url(&mailgun_url(stand.port)).unwrap();
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
    let received = forms(&stand);
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

/// An email over Postmark's recipient limit (50, To, Cc and Bcc together) is refused by
/// `Mailer::check` before it is enqueued, naming the limit; one enqueued anyway is a dead
/// letter naming it at its first attempt, nothing sent, and the email beside it goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_over_the_providers_limits_is_refused_before_it_is_enqueued() {
    let db = TestDb::new().await;
    let stand = postmark(OK).await;
    let mailer = Mailer::new(MailerConfig::from_url(&url(stand.port)).unwrap()).unwrap();
    let mut builder = Email::builder()
        .from("Shop <shop@example.com>")
        .subject("To everyone")
        .text("Hello");
    for i in 0..51 {
        builder = builder.to(format!("user{i}@example.org"));
    }
    let crowd = builder.build().unwrap();
    let e = mailer.check(&crowd).unwrap_err();
    assert!(e.is_permanent());
    let said = e.to_string();
    assert!(
        said.contains("51 recipients") && said.contains("at most 50"),
        "{said}"
    );
    assert!(mailer.check(&to_one("ann@example.org")).is_ok());
    assert!(mailer.deliver_now(&crowd).await.is_err());
    assert_eq!(stand.count(), 0, "nothing was sent");

    let id = enqueue(&db, crowd).await;
    let fine = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "one dead letter, one delivered", || async {
        db.status(&id).await.is_none() && db.status(&fine).await.as_deref() == Some("done")
    })
    .await;
    let dead = outbox
        .admin()
        .dead_letters()
        .list(&DeadLetterFilter::id(&id), 0, 1)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert!(
        dead[0].last_error.contains("at most 50"),
        "{}",
        dead[0].last_error
    );
    assert_eq!(
        stand.count(),
        1,
        "only the email within the limits was sent"
    );
}

/// A 200 that lists inactive addresses (Postmark took the email but will not deliver to
/// them: an earlier hard bounce or complaint there): the email is delivered to the others
/// and done, each inactive address is suppressed, the active one is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_listing_inactive_addresses_suppresses_them() {
    let db = TestDb::new().await;
    let stand = postmark(Answer::new(
        200,
        r#"{"To":"ann@example.org, gone@example.org","SubmittedAt":"2024-05-01T10:00:00Z","MessageID":"5f2a-1","ErrorCode":0,"Message":"Message OK, but will not deliver to these inactive addresses: gone@example.org. Inactive recipients are ones that have generated a hard bounce or a spam complaint."}"#,
    ))
    .await;
    let mailer = Mailer::new(MailerConfig::from_url(&url(stand.port)).unwrap()).unwrap();
    let email = Email::builder()
        .from("Shop <shop@example.com>")
        .to("ann@example.org")
        .to("gone@example.org")
        .subject("Your order")
        .text("Thanks")
        .build()
        .unwrap();
    let id = enqueue(&db, email).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "delivered", || async {
        db.status(&id).await.as_deref() == Some("done")
    })
    .await;
    let suppressed = outbox
        .admin()
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await
        .unwrap();
    let addresses: Vec<&str> = suppressed.iter().map(|s| s.address.as_str()).collect();
    assert_eq!(addresses, ["gone@example.org"]);
    assert_eq!(suppressed[0].reason, SuppressionReason::HardBounce);
    assert!(
        suppressed[0]
            .source
            .as_deref()
            .is_some_and(|s| s.contains("postmark") && s.contains(&id)),
        "{:?}",
        suppressed[0].source
    );
}
