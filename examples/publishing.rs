//! Publishing events to NATS JetStream, end to end: orders are saved with their events in
//! one transaction (one transaction rolls back, and its event never leaves), a relay
//! publishes them in order per order, a lost acknowledgement is simulated (the re-publish is
//! dropped by the stream), and a consumer handles every event once through the inbox, in
//! its own database transaction.
//!
//! Needs NATS with JetStream on 127.0.0.1:4222 (`NATS_URL` to use another):
//! `cargo run -p outbox-examples --example publishing`.

use std::time::Duration;

use futures::StreamExt;
use outbox::prelude::*;
use outbox::publish::{
    nats::{async_nats, consume, ensure_stream, NatsRelay, StreamSettings},
    Event, Handled, Inbox, PublishEvent, Received,
};
use serde::Serialize;

/// The event a paid order publishes: on `shop.<run>.orders.<id>.paid`, ordered per order.
#[derive(Serialize, PublishEvent)]
#[publish(subject = "shop.{run}.orders.{id}.paid", key = "order-{id}")]
struct OrderPaid {
    #[serde(skip)]
    run: u32,
    id: i64,
    cents: i64,
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
    sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY, state TEXT NOT NULL)")
        .execute(&pool)
        .await?;
    sqlx::query("CREATE TABLE invoices (event_id TEXT PRIMARY KEY, subject TEXT NOT NULL)")
        .execute(&pool)
        .await?;

    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let client = async_nats::connect(&url)
        .await
        .map_err(|e| format!("no NATS server at {url} ({e}): start nats-server -js"))?;
    let js = async_nats::jetstream::new(client);
    let run = std::process::id();
    let stream = format!("SHOP_{run}");
    ensure_stream(&js, StreamSettings::new(&stream, [format!("shop.{run}.>")])).await?;

    // Each order and its events in one transaction.
    for id in 1..=3 {
        let mut tx = pool.begin().await?;
        sqlx::query("INSERT INTO orders (id, state) VALUES (?, 'paid')")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let created = serde_json::json!({ "order": id });
        let _ = Event::json(format!("shop.{run}.orders.{id}.created"), &created)?
            .key(format!("order-{id}"))
            .enqueue(&mut *tx)
            .await?;
        let _ = OrderPaid {
            run,
            id,
            cents: 1999 * id,
        }
        .publish(&mut *tx)
        .await?;
        tx.commit().await?;
    }
    // Rolled back: the order is not saved, and its event is never published.
    let mut tx = pool.begin().await?;
    let _ = OrderPaid {
        run,
        id: 4,
        cents: 1,
    }
    .publish(&mut *tx)
    .await?;
    tx.rollback().await?;

    // The relay: every event, in order per order, each marked done on JetStream's ack.
    let relay = NatsRelay::new(js.clone());
    let report = Outbox::new(backend.clone())
        .register::<Event, _>(relay.clone())
        .drain()
        .await?;
    println!("relay: {} events published", report.counts.delivered);
    assert_eq!(report.counts.delivered, 6);

    // A lost acknowledgement: the relay publishes an event again with the same id, and
    // the stream's duplicate window drops it.
    let again = Event::json(
        format!("shop.{run}.orders.1.created"),
        &serde_json::json!({}),
    )?;
    let ack = relay
        .publish("example-lost-ack", &again)
        .await
        .map_err(|e| e.to_string())?;
    let twice = relay
        .publish("example-lost-ack", &again)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "a re-published event: duplicate = {} (stored once, sequence {})",
        twice.duplicate, ack.sequence
    );
    assert!(twice.duplicate && twice.sequence == ack.sequence);

    // The consumer: each event handled once, in the inbox's transaction.
    let consumer = js
        .get_stream(&stream)
        .await?
        .create_consumer(async_nats::jetstream::consumer::pull::Config {
            durable_name: Some("billing".into()),
            ..Default::default()
        })
        .await?;
    let messages = consumer.messages().await?.take(7);
    let consumed = tokio::time::timeout(
        Duration::from_secs(30),
        consume(
            messages,
            Inbox::new(pool.clone(), "billing"),
            |tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>, event: &Received| {
                Box::pin(async move {
                    sqlx::query("INSERT INTO invoices (event_id, subject) VALUES (?, ?)")
                        .bind(&event.id)
                        .bind(&event.subject)
                        .execute(&mut **tx)
                        .await?;
                    Ok::<_, sqlx::Error>(())
                })
            },
        ),
    )
    .await??;
    let invoices: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM invoices")
        .fetch_one(&pool)
        .await?;
    println!(
        "consumer: {} events handled, {} redeliveries skipped; {invoices} invoice rows",
        consumed.processed, consumed.skipped
    );
    assert_eq!(invoices, 7);
    // Delivered once more (a consumer that crashed before its ack): the inbox skips it.
    let redelivered = Received::new("example-lost-ack", "shop", vec![]).redelivered(true);
    let handled = Inbox::new(pool.clone(), "billing")
        .handle(&redelivered, |_tx, _event| {
            Box::pin(async { Ok::<_, sqlx::Error>(()) })
        })
        .await?;
    println!("the same event delivered again: {handled:?}");
    assert_eq!(handled, Handled::Skipped);
    js.delete_stream(&stream).await?;
    Ok(())
}
