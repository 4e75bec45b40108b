//! An application that already sends with lettre, switched to the outbox by one line: the
//! transport it builds. Its code keeps building `lettre::Message`s and calling
//! `transport.send(message)`; the messages are enqueued (in the request's transaction
//! where it has one) and a worker delivers them with the outbox's retries, breaker and
//! test redirect, keeping each message's own Message-ID.
//!
//! Run it with `cargo run -p outbox-examples --example lettre_dropin`. The worker's mailer comes from
//! `MAIL_URL` (`smtp://user:pass@host:587`), by default a directory of `.eml` files in the
//! system's temp directory, so it needs no server.

use lettre::{AsyncTransport, Message};
use outbox::{
    prelude::*,
    smtp::{Mailer, QueuedTransport, RawEmail, TxTransport},
};

/// The application's existing code: it knows lettre's trait, not the outbox.
async fn send_receipt<T>(transport: &T, to: &str, order: u32) -> Result<T::Ok, T::Error>
where
    T: AsyncTransport + Sync,
{
    let message = Message::builder()
        .from("Shop <shop@example.com>".parse().expect("a valid sender"))
        .to(to.parse().expect("a valid recipient"))
        .subject(format!("Receipt for order #{order}"))
        .body(format!("Thanks for order #{order}."))
        .expect("a valid message");
    transport.send(message).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("outbox-lettre-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let pool =
        outbox::sqlite::connect(&format!("sqlite://{}", dir.join("app.db").display())).await?;
    let mail_url = std::env::var("MAIL_URL").unwrap_or(format!("file://{}", dir.display()));
    let mailer = Mailer::from_url(&mail_url)?;
    let outbox =
        Outbox::new(SqliteBackend::new(pool.clone())).register::<RawEmail, _>(mailer.raw_handler());
    outbox.migrate().await?;

    // Before: let transport = AsyncSmtpTransport::<Tokio1Executor>::relay("smtp.example.com")?.build();
    let transport = QueuedTransport::new(pool.clone());
    let id = send_receipt(&transport, "ada@example.com", 1).await?;
    println!("1. Receipt #1 enqueued as message {id} (nothing sent yet).");

    // Inside the request's transaction: the receipt goes out only if the order commits.
    let mut tx = pool.begin().await?;
    sqlx::query("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)")
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO orders (id) VALUES (2)")
        .execute(&mut *tx)
        .await?;
    send_receipt(&TxTransport::new(&mut *tx), "bob@example.com", 2).await?;
    tx.commit().await?;
    let mut tx = pool.begin().await?;
    send_receipt(&TxTransport::new(&mut *tx), "eve@example.com", 3).await?;
    tx.rollback().await?;
    println!("2. Receipt #2 enqueued with its order; receipt #3 rolled back with its order.");

    let report = outbox.drain().await?;
    println!(
        "3. A worker sent {} receipts through {}.",
        report.counts.delivered,
        mailer.config()
    );
    if report.counts.delivered != 2 {
        return Err(format!("expected 2 receipts, sent {}", report.counts.delivered).into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
