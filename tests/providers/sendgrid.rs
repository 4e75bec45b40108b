//! The SendGrid transport (feature `providers`) end to end: emails enqueued on a real
//! SQLite file, sent by the mailer's handler to a loopback stand-in for SendGrid's v3 Mail
//! Send API, and each class of answer applied by the outbox.
//!
//! The stand-in follows SendGrid's (Twilio's) API reference, "Mail Send": `POST
//! /v3/mail/send` with `Authorization: Bearer <API key>` and `Content-Type:
//! application/json`; the request's `personalizations` [{`to`, `cc`, `bcc`: [{`email`,
//! `name`}]}], `from`, `reply_to`, `subject`, `content` [{`type`, `value`}] (`text/plain`
//! first), `headers`, `categories`, `attachments` [{`content`, `filename`, `type`,
//! `disposition`}], `custom_args`; a success answers `202 Accepted` with an empty body and
//! the `X-Message-Id` header; an error `{"errors": [{"message", "field", "help"}]}` ("Mail
//! Send errors": 400 bad request, 401 unauthorized, 429 too many requests with
//! `X-RateLimit-Reset`, a Unix time, from "Rate limits"; 500 server unavailable).

use std::time::{Duration, SystemTime};

use crate::api_stand::{
    dead_letter, deferred_without_an_attempt, enqueue, opens_the_breaker, outbox_for, retried,
    run_until, waits_for, Answer, Stand,
};
use crate::common::TestDb;
use outbox::smtp::{Email, Mailer, MailerConfig, Unsubscribe, UnsubscribeKeys};
use serde_json::json;

const KEY: &str = "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";
const MESSAGE_ID: &str = "W9e0XJbJSNaJqVjk-aN1fA";
const PATH: &str = "/v3/mail/send";

const ACCEPTED: Answer = Answer::new(202, "").with_headers(&[("x-message-id", MESSAGE_ID)]);

fn url(port: u16) -> String {
    format!("sendgrid://{KEY}?host=127.0.0.1:{port}&tls=none")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueued_email_reaches_sendgrid_field_by_field() {
    let db = TestDb::new().await;
    let stand = Stand::answering(PATH, ACCEPTED).await;
    let keys = UnsubscribeKeys::new("2026-11", [7u8; 32]).unwrap();
    let config = MailerConfig::from_url(&url(stand.port))
        .unwrap()
        .unsubscribe(Unsubscribe::new("https://news.example.com/u/", keys).unwrap());
    let mailer = Mailer::new(config).unwrap();
    assert!(!format!("{mailer:?}").contains(KEY));
    assert_eq!(
        mailer.downstream().as_deref(),
        Some(&*format!("sendgrid:127.0.0.1:{}", stand.port))
    );
    let email = Email::builder()
        .from("Shop <shop@example.com>")
        .to("Ann <ann@example.org>")
        .to("ben@example.org")
        .cc("cc@example.org")
        .bcc("bcc@example.org")
        .reply_to("Help <help@example.com>")
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
    received.sort_by_key(|r| r.json()["subject"] == "November news");
    let request = &received[0];
    assert_eq!(request.header("authorization"), format!("Bearer {KEY}"));
    assert_eq!(request.header("content-type"), "application/json");
    assert_eq!(request.header("accept"), "application/json");
    let json = request.json();
    assert_eq!(
        json["personalizations"],
        json!([{
            "to": [{"email": "ann@example.org", "name": "Ann"}, {"email": "ben@example.org"}],
            "cc": [{"email": "cc@example.org"}],
            "bcc": [{"email": "bcc@example.org"}]
        }])
    );
    assert_eq!(
        json["from"],
        json!({"email": "shop@example.com", "name": "Shop"})
    );
    assert_eq!(
        json["reply_to"],
        json!({"email": "help@example.com", "name": "Help"})
    );
    assert_eq!(json["subject"], "Your receipt");
    assert_eq!(
        json["content"],
        json!([
            {"type": "text/plain", "value": "Plain text"},
            {"type": "text/html", "value": "<p>HTML</p>"}
        ]),
        "text/plain first"
    );
    assert_eq!(
        json["headers"],
        json!({"Message-ID": format!("<{id}@example.com>"), "X-Campaign": "november"})
    );
    assert_eq!(json["categories"], json!(["receipt", "second-tag"]));
    assert_eq!(
        json["attachments"],
        json!([{
            "content": "aGVsbG8=", // base64 of "hello"
            "filename": "note.txt",
            "type": "text/plain",
            "disposition": "attachment"
        }])
    );
    assert_eq!(json["custom_args"], json!({ "outbox_message_id": id }));
    for key in json.as_object().unwrap().keys() {
        assert!(
            [
                "personalizations",
                "from",
                "reply_to",
                "subject",
                "content",
                "headers",
                "categories",
                "attachments",
                "custom_args"
            ]
            .contains(&key.as_str()),
            "a field SendGrid does not define: {key}"
        );
    }

    let news = received[1].json();
    assert_eq!(
        news["personalizations"],
        json!([{"to": [{"email": "bob@example.org"}]}])
    );
    assert_eq!(
        news["content"],
        json!([{"type": "text/html", "value": "<p>News</p>"}])
    );
    let headers = &news["headers"];
    assert_eq!(headers["Message-ID"], format!("<{news_id}@example.com>"));
    let unsubscribe = headers["List-Unsubscribe"].as_str().unwrap();
    assert!(
        unsubscribe.starts_with("<https://news.example.com/u/"),
        "{unsubscribe}"
    );
    assert_eq!(
        headers["List-Unsubscribe-Post"],
        "List-Unsubscribe=One-Click"
    );
    assert_eq!(headers["List-Id"], "<november.example.com>");
    assert!(news.get("categories").is_none() && news.get("reply_to").is_none());

    // SendGrid's X-Message-Id is kept on the delivery.
    let delivery = mailer
        .deliver_now(&crate::api_stand::to_one("ann@example.org"))
        .await
        .unwrap();
    assert_eq!(delivery.provider_id.as_deref(), Some(MESSAGE_ID));
    assert_eq!(delivery.accepted, ["ann@example.org"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sendgrid_too_many_requests_defers_without_using_an_attempt() {
    let db = TestDb::new().await;
    // SendGrid's 429 names when the limit resets as a Unix time.
    let reset = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        + Duration::from_secs(120);
    let reset: &'static str = Box::leak(reset.as_secs().to_string().into_boxed_str());
    let headers: &'static [(&'static str, &'static str)] =
        Box::leak(Box::new([("x-ratelimit-reset", reset)]));
    let stand = Stand::answering(
        PATH,
        Answer::new(
            429,
            r#"{"errors":[{"field":null,"message":"too many requests"}]}"#,
        )
        .with_headers(headers),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = deferred_without_an_attempt(&db, &mailer, &stand).await;
    assert!(
        error.contains("sendgrid answered HTTP 429: too many requests"),
        "{error}"
    );
    // It waits until the reset SendGrid named.
    let wait = waits_for(&db).await;
    assert!(
        (Duration::from_secs(110)..=Duration::from_secs(121)).contains(&wait),
        "{wait:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_sendgrid_key_opens_the_breaker() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            401,
            r#"{"errors":[{"field":null,"message":"The provided authorization grant is invalid, expired, or revoked","help":null}]}"#,
        ),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let name = format!("sendgrid:127.0.0.1:{}", stand.port);
    let reason = opens_the_breaker(&db, &mailer, &name).await;
    assert!(
        reason.contains("sendgrid answered HTTP 401: The provided authorization grant is invalid"),
        "{reason}"
    );
    assert!(!reason.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_sendgrid_refuses_is_a_dead_letter_with_its_message() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            400,
            r#"{"errors":[{"message":"The from email does not contain a valid address.","field":"from.email","help":"http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.from"}]}"#,
        ),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = dead_letter(&db, &mailer, &stand).await;
    assert!(
        error.contains(
            "sendgrid answered HTTP 400: from.email: The from email does not contain a valid \
             address."
        ),
        "{error}"
    );
    assert!(!error.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sendgrid_server_error_is_retried() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            500,
            r#"{"errors":[{"field":null,"message":"internal error"}]}"#,
        ),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = retried(&db, &mailer, &stand).await;
    assert!(
        error.contains("sendgrid answered HTTP 500: internal error"),
        "{error}"
    );
}

/// More recipients than SendGrid takes in one request: a dead letter naming the limit,
/// and nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_over_sendgrids_recipient_limit_is_refused_before_sending() {
    let db = TestDb::new().await;
    let stand = Stand::answering(PATH, ACCEPTED).await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let mut builder = Email::builder()
        .from("shop@example.com")
        .subject("Everyone")
        .text("Hello");
    for i in 0..1001 {
        builder = builder.bcc(format!("user{i}@example.org"));
    }
    let id = enqueue(&db, builder.to("ann@example.org").build().unwrap()).await;
    let outbox = outbox_for(&db, &mailer);
    let admin = outbox.admin();
    run_until(&outbox, "dead letter", || async {
        db.status(&id).await.is_none()
    })
    .await;
    let dead = admin
        .dead_letters()
        .list(&outbox::DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    let error = &dead[0].last_error;
    assert!(
        error.contains("1002 recipients") && error.contains("SendGrid takes at most 1000"),
        "{error}"
    );
    assert_eq!(stand.count(), 0, "nothing was sent");
}
