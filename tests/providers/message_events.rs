//! A provider's receipt and its later events, end to end on a real SQLite file: emails
//! sent through a loopback stand-in for Postmark's Email API (published format: `POST
//! /email`, answer `{"MessageID", "ErrorCode": 0, ...}`) keep Postmark's `MessageID` with
//! the outbox message; a bounce webhook that names only that `MessageID` (Postmark's
//! bounce record carries no `Message-ID` of ours) is tied back to the message, suppresses
//! the address, and shows on the message's page in the web admin, served on loopback,
//! after the message itself was delivered and deleted. A repeated webhook is recorded once.

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use crate::common::{eventually, TestDb};
use axum::{routing::post, Router};
use base64::Engine as _;
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig},
    web::{WebAdmin, Webhooks},
    Admin, SuppressionFilter,
};
use serde_json::json;

/// A stand-in for Postmark: every email gets the next `MessageID`.
async fn postmark() -> u16 {
    let next = Arc::new(AtomicUsize::new(1));
    let app = Router::new().route(
        "/email",
        post(move || {
            let n = next.fetch_add(1, Ordering::SeqCst);
            async move {
                let body = json!({
                    "To": "someone@example.org", "SubmittedAt": "2026-11-28T10:00:00Z",
                    "MessageID": format!("pm-{n:04}"), "ErrorCode": 0, "Message": "OK",
                });
                ([("content-type", "application/json")], body.to_string())
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// The webhooks and the web admin of the outbox on `db`, on loopback.
async fn serve(db: &TestDb) -> String {
    let hooks = Webhooks::new(Admin::new(db.backend())).postmark("postmark", "hook-password");
    let app = outbox::web::axum::Router::new()
        .nest("/hooks", hooks.into_router())
        .nest(
            "/outbox",
            WebAdmin::new(Admin::new(db.backend())).into_router(),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        outbox::web::axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap()
    });
    format!("http://{addr}")
}

fn email(to: &str) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(to)
        .subject("Your order")
        .text("Thanks")
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounce_naming_the_providers_id_is_tied_to_the_delivered_message() {
    let db = TestDb::new().await;
    let port = postmark().await;
    let url = format!("postmark://token@127.0.0.1:{port}?tls=none");
    let mailer = Mailer::new(MailerConfig::from_url(&url).unwrap()).unwrap();
    let mut ids = Vec::new();
    for to in ["ann@example.org", "bob@example.org"] {
        let mut tx = db.pool.begin().await.unwrap();
        ids.push(email(to).enqueue(&mut *tx).await.unwrap().id().clone());
        tx.commit().await.unwrap();
    }
    let outbox = Outbox::new(db.backend()).register::<Email, _>(mailer.handler());
    let admin = Admin::new(db.backend());
    outbox
        .run_until(async {
            let delivered = eventually(Duration::from_secs(20), || async {
                // Delivered, and the receipts written while the outbox runs (in batches,
                // not only when it stops).
                db.status(ids[0].as_str()).await.is_none()
                    && db.status(ids[1].as_str()).await.is_none()
                    && admin.messages().events(&ids[0]).await.unwrap().len() == 1
                    && admin.messages().events(&ids[1]).await.unwrap().len() == 1
            })
            .await;
            assert!(
                delivered,
                "both emails delivered and their receipts written"
            );
        })
        .await
        .unwrap();

    // Each message keeps Postmark's id of it, and Postmark's id finds the message.
    let mut theirs = Vec::new();
    for id in &ids {
        let events = admin.messages().events(id).await.unwrap();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(
            (events[0].provider.as_str(), events[0].kind.as_str()),
            ("postmark", "accepted")
        );
        assert!(events[0].external_id.starts_with("pm-"), "{events:?}");
        let found = admin
            .messages()
            .by_receipt("postmark", &events[0].external_id)
            .await
            .unwrap();
        assert_eq!(found.as_ref(), Some(id));
        theirs.push(events[0].external_id.clone());
    }
    assert_ne!(theirs[0], theirs[1]);

    // Postmark's bounce webhook names the email by its MessageID only.
    // The bounce comes after the delivery it reports: five minutes from now (a fixed date
    // would fall before the delivery once the calendar passes it).
    let bounced_at =
        humantime::format_rfc3339_seconds(std::time::SystemTime::now() + Duration::from_secs(300))
            .to_string();
    let base = serve(&db).await;
    let bounce = serde_json::to_vec(&json!({
        "RecordType": "Bounce", "ID": 4242, "Type": "HardBounce", "MessageID": theirs[1],
        "Email": "bob@example.org", "BouncedAt": bounced_at,
        "Description": "The server was unable to deliver your message",
        "Details": "smtp;550 5.1.1 The email account that you tried to reach does not exist",
    }))
    .unwrap();
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("postmark:hook-password")
    );
    let client = reqwest::Client::new();
    for _ in 0..2 {
        let r = client
            .post(format!("{base}/hooks/postmark"))
            .header("Authorization", &auth)
            .body(bounce.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{:?}", r.text().await);
    }

    let events = admin.messages().events(&ids[1]).await.unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["accepted", "hard_bounce"],
        "the repeat recorded once"
    );
    assert_eq!(events[1].recipient.as_deref(), Some("bob@example.org"));
    assert!(events[1].detail.contains("550 5.1.1"), "{events:?}");
    assert_eq!(admin.messages().events(&ids[0]).await.unwrap().len(), 1);
    let suppressed = admin
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await
        .unwrap();
    assert_eq!(suppressed.len(), 1);
    assert_eq!(suppressed[0].address, "bob@example.org");

    // The delivered message is gone from the queue; its page shows what Postmark said.
    let page = client
        .get(format!("{base}/outbox/messages/{}", ids[1]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("id=\"events\""), "{page}");
    assert!(
        page.contains("hard_bounce") && page.contains(&theirs[1]),
        "{page}"
    );
}
