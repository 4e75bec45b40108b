//! A message kind of your own: chat notices posted to a room's HTTP endpoint, plugged into
//! the outbox without touching it. The kind supplies the three things the core asks of
//! every kind (the guide "Writing a message kind" walks through them):
//!
//! 1. its **destination**: the endpoint's host, which traffic shaping groups by;
//! 2. its **failure classes**: `429` is "slow this destination" (the chat server's site is
//!    slowed in the database; the notice waits, no attempt used), `410` is "permanent",
//!    `5xx` or a refused connection is "downstream down" (the circuit breaker);
//! 3. its **admin view**: how the web admin shows a notice on a dead letter's page.
//!
//! Run it with `cargo run -p outbox-examples --example message_kind`. It needs no server:
//! the chat endpoint and the web admin run on loopback, the queue is a SQLite file.

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicU32, Ordering},
        Arc,
    },
    time::Duration,
};

use axum::{extract::Path, http::StatusCode, response::IntoResponse, routing::post, Router};
use outbox::{
    kind::{Body, BodyFormat, Field, KindView, PayloadView},
    prelude::*,
    MessageId, Shaping, SiteLimit,
};
use serde::{Deserialize, Serialize};

type Error = Box<dyn std::error::Error + Send + Sync>;

// ---------------------------------------------------------------- the kind

/// A notice for a chat room, posted as JSON to the room's URL.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "chat.notice", destination = "ChatNotice::host")]
struct ChatNotice {
    /// `http://host:port/rooms/{room}`.
    url: String,
    text: String,
}

impl ChatNotice {
    /// The destination: the endpoint's `host:port`, so one chat server is shaped as one.
    fn host(&self) -> Option<String> {
        let rest = self.url.split_once("://")?.1;
        Some(rest.split('/').next()?.to_ascii_lowercase())
    }
}

/// Posts the notice and classifies the answer into the outbox's failure classes.
async fn post_notice(notice: ChatNotice, _: MessageContext<()>) -> Result<(), HandlerError> {
    let rest = notice.url.split_once("://").map_or("", |(_, r)| r);
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let tcp = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| HandlerError::down(format!("cannot reach {authority}: {e}")))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(HandlerError::down)?;
    tokio::spawn(connection);
    let body = serde_json::json!({ "text": notice.text }).to_string();
    let request = hyper::Request::post(format!("/{path}"))
        .header("host", authority)
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(axum::body::Bytes::from(body)))
        .map_err(HandlerError::permanent)?;
    let response = sender
        .send_request(request)
        .await
        .map_err(HandlerError::down)?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    match status.as_u16() {
        200..=299 => Ok(()),
        429 => Err(HandlerError::slow_down(
            Duration::from_secs(retry_after.unwrap_or(1)),
            Duration::from_secs(60),
            format!("{status}: the room asks us to slow down"),
        )),
        500..=599 => Err(HandlerError::down(format!(
            "the chat server answered {status}"
        ))),
        _ => Err(HandlerError::permanent(format!(
            "the chat server refused the notice: {status}"
        ))),
    }
}

/// The web admin shows a notice as its room and text.
struct ChatView;

impl KindView for ChatView {
    fn show(&self, _: &MessageId, payload: &[u8]) -> Option<PayloadView> {
        let notice: ChatNotice = serde_json::from_slice(payload).ok()?;
        let room = notice.url.rsplit('/').next().unwrap_or_default().to_owned();
        Some(PayloadView {
            title: "Chat notice".into(),
            anchor: "chat-notice".into(),
            fields: vec![
                Field::new("Room", room),
                Field::new("URL", notice.url).muted(),
            ],
            bodies: vec![Body {
                title: "Text".into(),
                anchor: "chat-text".into(),
                content: notice.text,
                format: BodyFormat::Text,
            }],
        })
    }

    fn attempts_label(&self) -> &str {
        "Error (the chat server's answer)"
    }
}

// ---------------------------------------------------------------- a chat server

/// Rooms: `general` takes every notice, `busy` answers 429 once, `archived` answers 410.
async fn chat_server(busy_hits: Arc<AtomicU32>) -> Result<SocketAddr, Error> {
    let app = Router::new().route(
        "/rooms/{room}",
        post(move |Path(room): Path<String>| {
            let busy_hits = Arc::clone(&busy_hits);
            async move {
                match room.as_str() {
                    "busy" if busy_hits.fetch_add(1, Ordering::SeqCst) == 0 => {
                        (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "1")]).into_response()
                    }
                    "archived" => StatusCode::GONE.into_response(),
                    _ => StatusCode::OK.into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// GETs `path` from the web admin; the page's text.
async fn get(addr: SocketAddr, path: &str) -> Result<String, Error> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
    tokio::spawn(connection);
    let request = hyper::Request::get(path)
        .header("host", addr.to_string())
        .body(http_body_util::Empty::<axum::body::Bytes>::new())?;
    let response = sender.send_request(request).await?;
    use http_body_util::BodyExt;
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let busy_hits = Arc::new(AtomicU32::new(0));
    let chat = chat_server(Arc::clone(&busy_hits)).await?;
    let path = std::env::temp_dir().join(format!("outbox-kind-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;

    // The kind's destination is the chat server's host: shape it as one site.
    let shaping = Shaping::new()
        .site(
            "chat",
            SiteLimit::per(50.0, Duration::from_secs(1)).burst(10),
        )
        .route(&chat.to_string(), "chat");
    let outbox = Outbox::new(SqliteBackend::new(pool.clone()))
        .shaping(shaping)
        .register::<ChatNotice, _>(post_notice);
    outbox.migrate().await?;

    let mut tx = pool.begin().await?;
    for (room, text) in [
        ("general", "Deploy 42 is live."),
        ("busy", "Standup moved to 10:30."),
        ("archived", "Nobody reads this room any more."),
    ] {
        let notice = ChatNotice {
            url: format!("http://{chat}/rooms/{room}"),
            text: text.into(),
        };
        let _ = notice.enqueue(&mut *tx).await?;
    }
    tx.commit().await?;

    println!("1. The first drain: general takes its notice, busy says 429, archived says 410.");
    let first = outbox.drain().await?;
    println!(
        "   {} delivered, {} waiting for the slowed site (no attempt used), {} given up",
        first.counts.delivered, first.counts.deferred, first.counts.given_up
    );
    let sites = outbox.admin().shaping().sites().await?;
    if let Some(chat) = sites.iter().find(|s| s.site == "chat") {
        println!(
            "   site `chat` slowed to {:?}/s: {}",
            chat.slow_per_second,
            chat.reason.as_deref().unwrap_or("")
        );
    }

    println!("2. After busy's Retry-After, the next drain delivers its notice.");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let second = outbox.drain().await?;
    println!("   {} delivered", second.counts.delivered);

    println!("3. The web admin shows the archived room's dead letter with the kind's view.");
    let dead = outbox
        .admin()
        .dead_letters()
        .list(&DeadLetterFilter::type_tag("chat.notice"), 0, 10)
        .await?;
    let [letter] = dead.as_slice() else {
        return Err(format!("expected one dead letter, found {}", dead.len()).into());
    };
    let web = outbox::web::WebAdmin::new(outbox.admin())
        .view("chat.notice", ChatView)
        .into_router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let admin_addr = listener.local_addr()?;
    tokio::spawn(async move {
        axum::serve(
            listener,
            web.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
    });
    let page = get(admin_addr, &format!("/dead/{}", letter.id)).await?;
    let shown = page.contains(r#"id="chat-notice""#)
        && page.contains("archived")
        && page.contains("Nobody reads this room any more.")
        && (page.contains("the chat server&#39;s answer")
            || page.contains("the chat server's answer"));
    println!("   dead letter {}: {}", letter.id, letter.last_error);
    println!("   the page shows the notice's room and text: {shown}");

    pool.close().await;
    let _ = std::fs::remove_file(&path);
    let expected = (
        first.counts.delivered,
        first.counts.deferred,
        first.counts.given_up,
    );
    if expected != (1, 1, 1) || second.counts.delivered != 1 || !shown {
        return Err("the kind did not behave as described".into());
    }
    Ok(())
}
