//! The outbox on PostgreSQL: an order row and its confirmation committed in one
//! transaction, then delivered by a `drain`.
//!
//! ```sh
//! cargo run -p outbox-examples --example postgres                       # the local default
//! DATABASE_URL=postgres://app@db/app cargo run -p outbox-examples --example postgres
//! ```
//!
//! Without `DATABASE_URL` it connects to `outbox::postgres::DEFAULT_URL`
//! (`postgres://postgres@127.0.0.1:5432/test`). It creates the outbox's tables if missing
//! (`migrate`) and a table `outbox_example_orders`, uses the type tag
//! `example.postgres_order_confirmation`, and removes its rows of both again at the end.

use outbox::prelude::*;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

const TYPE: &str = "example.postgres_order_confirmation";

/// The confirmation one order implies; one per order.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "example.postgres_order_confirmation", key(order_id))]
struct OrderConfirmation {
    order_id: i64,
    email: String,
}

/// The handler: prints instead of mailing.
async fn confirm(mail: OrderConfirmation, ctx: MessageContext) -> Result<(), HandlerError> {
    println!(
        "   order {} confirmed to {} (message {}, attempt {})",
        mail.order_id,
        mail.email,
        ctx.id(),
        ctx.attempt()
    );
    Ok(())
}

/// Removes what this example wrote: its orders, and any message or dead letter of its type.
async fn clean_up(pool: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::query("DROP TABLE IF EXISTS outbox_example_orders")
        .execute(pool)
        .await?;
    sqlx::query("DELETE FROM outbox_messages WHERE type_tag = $1")
        .bind(TYPE)
        .execute(pool)
        .await?;
    sqlx::query("DELETE FROM outbox_dead_letters WHERE type_tag = $1")
        .bind(TYPE)
        .execute(pool)
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url =
        std::env::var("DATABASE_URL").unwrap_or_else(|_| outbox::postgres::DEFAULT_URL.to_string());
    println!("PostgreSQL: {}", url.split('@').next_back().unwrap_or(&url));
    let pool = outbox::postgres::connect(&url).await?;
    let outbox =
        Outbox::new(PostgresBackend::new(pool.clone())).register::<OrderConfirmation, _>(confirm);
    outbox.migrate().await?;
    clean_up(&pool).await?;
    sqlx::query("CREATE TABLE outbox_example_orders (id BIGINT PRIMARY KEY, email TEXT NOT NULL)")
        .execute(&pool)
        .await?;

    println!("1. Three orders, each with its confirmation, each in one transaction.");
    for (order_id, email) in [
        (1, "ada@example.com"),
        (2, "bob@example.com"),
        (3, "eve@example.com"),
    ] {
        let mut tx = pool.begin().await?;
        sqlx::query("INSERT INTO outbox_example_orders (id, email) VALUES ($1, $2)")
            .bind(order_id)
            .bind(email)
            .execute(&mut *tx)
            .await?;
        let _ = OrderConfirmation {
            order_id,
            email: email.into(),
        }
        .enqueue(&mut *tx)
        .await?;
        tx.commit().await?;
    }

    println!("2. A drain delivers what is due:");
    let report = outbox.drain().await?;
    println!(
        "   {} delivered in {:?}, {} given up",
        report.counts.delivered, report.elapsed, report.counts.given_up
    );

    clean_up(&pool).await?;
    pool.close().await;
    if report.counts.delivered != 3 {
        return Err("expected three deliveries".into());
    }
    Ok(())
}
