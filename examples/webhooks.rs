//! Outgoing webhooks, both sides, in one program: a shop records orders and, in the same
//! transaction, an `order.created` event for a customer's endpoint; the outbox signs and
//! delivers them; the customer's receiver (an axum app on loopback) checks each signature,
//! its timestamp and replays with `VerifiedWebhook` before it trusts the payload.
//!
//! `cargo run -p outbox-examples --example webhooks` (SQLite in a temporary file). Halfway
//! through, the shop rotates the endpoint's secret: deliveries carry both signatures, so the
//! receiver, which still knows only the old secret, goes on verifying them.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use axum::{extract::FromRef, http::StatusCode, routing::post, Router};
use outbox::{
    prelude::*,
    webhook::{
        verify::{MemoryReplayGuard, VerifiedWebhook, Verifier},
        AddressPolicy, VerifyingKey, Webhook, WebhookClient, WebhookEndpoints, WebhookSender,
    },
    Shaping,
};

const ORDERS: usize = 20;

/// The customer's receiver: its verifier and what it accepted.
#[derive(Clone)]
struct Receiver {
    verifier: Arc<Verifier>,
    accepted: Arc<AtomicUsize>,
}

impl FromRef<Receiver> for Arc<Verifier> {
    fn from_ref(r: &Receiver) -> Self {
        Arc::clone(&r.verifier)
    }
}

/// Runs only for deliveries whose signature, timestamp and id check out.
async fn order_created(
    axum::extract::State(r): axum::extract::State<Receiver>,
    hook: VerifiedWebhook,
) -> StatusCode {
    let event: serde_json::Value = match hook.json() {
        Ok(v) => v,
        Err(_) => return StatusCode::BAD_REQUEST,
    };
    println!(
        "receiver: {} {} (webhook-id {})",
        event["type"], event["data"]["order"], hook.id
    );
    r.accepted.fetch_add(1, Ordering::SeqCst);
    StatusCode::NO_CONTENT
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let pool = outbox::sqlite::connect(&format!(
        "sqlite://{}",
        dir.path().join("shop.db").display()
    ))
    .await?;
    let backend = SqliteBackend::new(pool.clone());
    Outbox::new(backend.clone()).migrate().await?;
    sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY, total_cents INTEGER NOT NULL)")
        .execute(&pool)
        .await?;

    // The shop stores the customer's endpoint and hands it the secret, once.
    let admin = Outbox::new(backend.clone()).admin();
    let endpoints = WebhookEndpoints::new(&admin);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let hook_url = format!("http://{}/hooks/orders", listener.local_addr()?);
    let secret = endpoints.create("acme", &hook_url).await?;

    // The customer's side: it verifies with that secret.
    let verifier = Verifier::new(vec![VerifyingKey::parse(&secret.verify_with)?])?
        .with_replay_guard(MemoryReplayGuard::new());
    let receiver = Receiver {
        verifier: Arc::new(verifier),
        accepted: Arc::new(AtomicUsize::new(0)),
    };
    let app = Router::new()
        .route("/hooks/orders", post(order_created))
        .with_state(receiver.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // Orders and their events commit together, or not at all.
    let endpoint = endpoints.get("acme").await?.expect("just created");
    for order in 1..=ORDERS as i64 {
        let mut tx = pool.begin().await?;
        sqlx::query("INSERT INTO orders (id, total_cents) VALUES (?, ?)")
            .bind(order)
            .bind(order * 1_250)
            .execute(&mut *tx)
            .await?;
        let data = serde_json::json!({ "order": order, "total_cents": order * 1_250 });
        let _event = Webhook::new(&endpoint, "order.created", data)
            .enqueue(&mut *tx)
            .await?;
        tx.commit().await?;
        if order == ORDERS as i64 / 2 {
            // A rotation: both keys sign from now on; the receiver still has the old one.
            let next = endpoints.rotate("acme").await?;
            println!(
                "shop: rotated acme's secret (hand {}… to the customer)",
                &next.verify_with[..10]
            );
        }
    }

    // The customer's receiver runs on loopback over plain HTTP: allowed explicitly. By
    // default only https to public addresses is.
    let client = WebhookClient::builder()
        .policy(
            AddressPolicy::new()
                .allow("127.0.0.1/32".parse()?)
                .allow_http(true),
        )
        .build()?;
    let sender = WebhookSender::new(&admin, client);
    let outbox = Outbox::new(backend)
        .shaping(Shaping::new())
        .register::<Webhook, _>(sender);
    let accepted = Arc::clone(&receiver.accepted);
    outbox
        .run_until(async move {
            for _ in 0..600 {
                if accepted.load(Ordering::SeqCst) == ORDERS {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await?;

    let got = receiver.accepted.load(Ordering::SeqCst);
    println!("shop: {got} of {ORDERS} order events delivered and verified");
    if got != ORDERS {
        return Err(format!("only {got} of {ORDERS} webhooks were delivered").into());
    }
    Ok(())
}
