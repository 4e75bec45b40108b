//! The Resend transport (feature `providers`) end to end: emails enqueued on a real SQLite
//! file, sent by the mailer's handler to a loopback stand-in for Resend's Email API, and
//! each class of answer applied by the outbox.
//!
//! The stand-in follows Resend's API reference, "Send Email": `POST /emails` with
//! `Authorization: Bearer re_...`, `Content-Type: application/json` and the
//! `Idempotency-Key` header ("Idempotency keys": the same key returns the first answer for
//! 24 hours); the request's `from` (`"Name <address>"`), `to`, `cc`, `bcc`, `reply_to`,
//! `subject`, `html`, `text`, `headers`, `attachments` [{`filename`, `content`,
//! `content_type`}], `tags` [{`name`, `value`}]; a success answers 200 `{"id": "..."}`;
//! an error `{"statusCode", "name", "message"}` ("Errors": 401 and 403 for a missing or
//! invalid key, 422 `validation_error`, 429 `rate_limit_exceeded` and
//! `daily_quota_exceeded` with `retry-after` and `ratelimit-reset` in seconds from "Rate
//! limit", 500 `internal_server_error`).

use std::time::Duration;

use crate::api_stand::{
    dead_letter, deferred_without_an_attempt, enqueue, opens_the_breaker, outbox_for, retried,
    run_until, to_one, waits_for, Answer, Stand,
};
use crate::common::TestDb;
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, Unsubscribe, UnsubscribeKeys},
    DeadLetterFilter, RetrySchedule,
};
use serde_json::json;

const KEY: &str = "re_c1tpEyD8_NKFusih9vKVQknRAQfmFcWCv";
const RESEND_ID: &str = "49a3999c-0ce1-4ea6-ab68-afcd6dc2e794";
const PATH: &str = "/emails";

const OK: Answer = Answer::new(200, r#"{"id":"49a3999c-0ce1-4ea6-ab68-afcd6dc2e794"}"#);

fn url(port: u16) -> String {
    format!("resend://{KEY}?host=127.0.0.1:{port}&tls=none")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueued_email_reaches_resend_field_by_field() {
    let db = TestDb::new().await;
    let stand = Stand::answering(PATH, OK).await;
    let keys = UnsubscribeKeys::new("2026-11", [7u8; 32]).unwrap();
    let config = MailerConfig::from_url(&url(stand.port))
        .unwrap()
        .unsubscribe(Unsubscribe::new("https://news.example.com/u/", keys).unwrap());
    let mailer = Mailer::new(config).unwrap();
    assert!(!format!("{mailer:?}").contains(KEY));
    assert_eq!(
        mailer.downstream().as_deref(),
        Some(&*format!("resend:127.0.0.1:{}", stand.port))
    );
    let email = Email::builder()
        .from("Shop <shop@example.com>")
        .to("Ann <ann@example.org>")
        .to("ben@example.org")
        .cc("cc@example.org")
        .bcc("bcc@example.org")
        .reply_to("help@example.com")
        .subject("Your receipt")
        .text("Plain text")
        .html("<p>HTML</p>")
        .header("X-Campaign", "november")
        .tag("receipt")
        .tag("registration.user")
        .attach("note.txt", "text/plain", b"hello".to_vec())
        .build()
        .unwrap();
    let id = enqueue(&db, email).await;
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
    assert_eq!(
        request.header("idempotency-key"),
        id,
        "the outbox message id"
    );
    let json = request.json();
    assert_eq!(json["from"], "Shop <shop@example.com>");
    assert_eq!(
        json["to"],
        json!(["Ann <ann@example.org>", "ben@example.org"])
    );
    assert_eq!(json["cc"], json!(["cc@example.org"]));
    assert_eq!(json["bcc"], json!(["bcc@example.org"]));
    assert_eq!(json["reply_to"], "help@example.com");
    assert_eq!(json["subject"], "Your receipt");
    assert_eq!(json["text"], "Plain text");
    assert_eq!(json["html"], "<p>HTML</p>");
    assert_eq!(
        json["headers"],
        json!({"Message-ID": format!("<{id}@example.com>"), "X-Campaign": "november"})
    );
    assert_eq!(
        json["attachments"],
        json!([{"filename": "note.txt", "content": "aGVsbG8=", "content_type": "text/plain"}])
    );
    assert_eq!(
        json["tags"],
        json!([
            {"name": "receipt", "value": "true"},
            {"name": "registration_user", "value": "true"},
            {"name": "outbox_message_id", "value": id}
        ])
    );
    for key in json.as_object().unwrap().keys() {
        assert!(
            [
                "from",
                "to",
                "cc",
                "bcc",
                "reply_to",
                "subject",
                "html",
                "text",
                "headers",
                "attachments",
                "tags"
            ]
            .contains(&key.as_str()),
            "a field Resend does not define: {key}"
        );
    }

    let news = &received[1];
    assert_eq!(news.header("idempotency-key"), news_id);
    let news = news.json();
    assert_eq!(news["to"], json!(["bob@example.org"]));
    assert!(news.get("text").is_none() && news.get("cc").is_none());
    let headers = &news["headers"];
    assert_eq!(headers["Message-ID"], format!("<{news_id}@example.com>"));
    assert!(headers["List-Unsubscribe"]
        .as_str()
        .unwrap()
        .starts_with("<https://news.example.com/u/"));
    assert_eq!(
        headers["List-Unsubscribe-Post"],
        "List-Unsubscribe=One-Click"
    );
    assert_eq!(headers["List-Id"], "<november.example.com>");

    // Resend's id is kept on the delivery.
    let delivery = mailer
        .deliver_now(&to_one("ann@example.org"))
        .await
        .unwrap();
    assert_eq!(delivery.provider_id.as_deref(), Some(RESEND_ID));
}

/// A failed attempt and its retry carry the same `Idempotency-Key`, the outbox message
/// id: had the first one been sent after all, Resend would not send it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_carries_the_same_idempotency_key() {
    let db = TestDb::new().await;
    let stand = Stand::start(
        PATH,
        vec![
            Answer::new(
                500,
                r#"{"statusCode":500,"name":"internal_server_error","message":"An unexpected error occurred."}"#,
            ),
            OK,
        ],
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = Outbox::new(db.backend())
        .retention(outbox::Retention::keep_for(Duration::from_secs(3600)))
        .register_with::<Email, _>(
            mailer.handler(),
            QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_millis(200)])),
        );
    run_until(&outbox, "delivered on the retry", || async {
        db.status(&id).await.as_deref() == Some("done")
    })
    .await;
    let received = stand.received();
    assert_eq!(received.len(), 2, "{received:?}");
    let keys: Vec<&str> = received
        .iter()
        .map(|r| r.header("idempotency-key"))
        .collect();
    assert_eq!(keys, [id.as_str(), id.as_str()]);
    assert_eq!(
        received[0].json(),
        received[1].json(),
        "the same request both times"
    );
    let (_, attempts, _) = db.row(&id).await;
    assert_eq!(attempts, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resend_rate_limit_defers_without_using_an_attempt() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            429,
            r#"{"statusCode":429,"name":"rate_limit_exceeded","message":"Too many requests. You can only make 2 requests per second."}"#,
        )
        .with_headers(&[
            ("ratelimit-limit", "2"),
            ("ratelimit-remaining", "0"),
            ("ratelimit-reset", "60"),
        ]),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = deferred_without_an_attempt(&db, &mailer, &stand).await;
    assert!(
        error.contains("resend answered HTTP 429: rate_limit_exceeded: Too many requests."),
        "{error}"
    );
    // It waits as long as `ratelimit-reset` said.
    let wait = waits_for(&db).await;
    assert!(
        (Duration::from_secs(50)..=Duration::from_secs(60)).contains(&wait),
        "{wait:?}"
    );
}

/// The daily quota used up: the email waits for the reset Resend names, never a dead
/// letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_used_up_daily_quota_defers_and_is_never_a_dead_letter() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            429,
            r#"{"statusCode":429,"name":"daily_quota_exceeded","message":"You have reached your daily email sending quota."}"#,
        )
        .with_headers(&[("retry-after", "3600")]),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = deferred_without_an_attempt(&db, &mailer, &stand).await;
    assert!(
        error.contains("daily_quota_exceeded: You have reached your daily email sending quota."),
        "{error}"
    );
    assert!(error.contains("slows down to one per 3600s"), "{error}");
    let wait = waits_for(&db).await;
    assert!(
        (Duration::from_secs(3590)..=Duration::from_secs(3600)).contains(&wait),
        "{wait:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_resend_key_opens_the_breaker() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            401,
            r#"{"statusCode":401,"name":"validation_error","message":"API key is invalid"}"#,
        ),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let name = format!("resend:127.0.0.1:{}", stand.port);
    let reason = opens_the_breaker(&db, &mailer, &name).await;
    assert!(
        reason.contains("resend answered HTTP 401: validation_error: API key is invalid"),
        "{reason}"
    );
    assert!(!reason.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_resend_refuses_is_a_dead_letter_with_its_message() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            400,
            r#"{"statusCode":400,"name":"validation_error","message":"Invalid `from` field. The email address needs to follow the `email@example.com` or `Name <email@example.com>` format."}"#,
        ),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = dead_letter(&db, &mailer, &stand).await;
    assert!(
        error.contains("resend answered HTTP 400: validation_error: Invalid `from` field."),
        "{error}"
    );
    assert!(!error.contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_server_error_is_retried() {
    let db = TestDb::new().await;
    let stand = Stand::answering(
        PATH,
        Answer::new(
            500,
            r#"{"statusCode":500,"name":"internal_server_error","message":"An unexpected error occurred."}"#,
        ),
    )
    .await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let error = retried(&db, &mailer, &stand).await;
    assert!(
        error.contains("resend answered HTTP 500: internal_server_error"),
        "{error}"
    );
}

/// More recipients than Resend takes: a dead letter naming the limit, and nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_email_over_resends_recipient_limit_is_refused_before_sending() {
    let db = TestDb::new().await;
    let stand = Stand::answering(PATH, OK).await;
    let mailer = Mailer::from_url(&url(stand.port)).unwrap();
    let mut builder = Email::builder()
        .from("shop@example.com")
        .subject("Everyone")
        .text("Hello");
    for i in 0..51 {
        builder = builder.to(format!("user{i}@example.org"));
    }
    let id = enqueue(&db, builder.build().unwrap()).await;
    let outbox = outbox_for(&db, &mailer);
    let admin = outbox.admin();
    run_until(&outbox, "dead letter", || async {
        db.status(&id).await.is_none()
    })
    .await;
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    let error = &dead[0].last_error;
    assert!(
        error.contains("51 recipients") && error.contains("Resend takes at most 50 per email"),
        "{error}"
    );
    assert_eq!(stand.count(), 0, "nothing was sent");
}
