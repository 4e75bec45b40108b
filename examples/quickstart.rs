//! Quickstart: save rows and the mails they imply in one transaction, then deliver them.
//!
//! Run it with `cargo run --example quickstart`. It needs no server: it creates a SQLite
//! file in the system's temp directory, and the "mail" handler prints instead of sending.

use std::sync::Arc;

use outbox::prelude::*;
use serde::{Deserialize, Serialize};
use sqlx::SqliteConnection;

/// The welcome mail one registration implies. Its idempotency key is the email address:
/// a second registration of the same address does not mail twice.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "quickstart.welcome_mail", key(email), max_attempts = 5)]
struct WelcomeMail {
    email: String,
    name: String,
}

/// The handler: a real application would send the mail here.
async fn send_welcome(
    mail: WelcomeMail,
    ctx: MessageContext<Arc<String>>,
) -> Result<(), HandlerError> {
    println!(
        "  {} handled message {} (attempt {}): \"Welcome, {}!\" to {}",
        ctx.state(),
        ctx.id(),
        ctx.attempt(),
        mail.name,
        mail.email
    );
    Ok(())
}

/// Saves a registration and its welcome mail in the caller's transaction.
async fn register(
    tx: &mut SqliteConnection,
    name: &str,
    email: &str,
) -> Result<Enqueued, Box<dyn std::error::Error>> {
    sqlx::query("INSERT INTO registrations (name, email) VALUES (?, ?)")
        .bind(name)
        .bind(email)
        .execute(&mut *tx)
        .await?;
    let mail = WelcomeMail {
        email: email.into(),
        name: name.into(),
    };
    Ok(mail.enqueue(tx).await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("outbox-quickstart-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;
    println!("Database: {}", path.display());

    let outbox = Outbox::with_state(
        SqliteBackend::new(pool.clone()),
        Arc::new("the mail worker".to_string()),
    )
    .register::<WelcomeMail, _>(send_welcome);
    outbox.migrate().await?;
    sqlx::query("CREATE TABLE registrations (id INTEGER PRIMARY KEY, name TEXT, email TEXT)")
        .execute(&pool)
        .await?;

    println!("\n1. Ada registers: her row and her welcome mail are committed together.");
    let mut tx = pool.begin().await?;
    let ada = register(&mut tx, "Ada", "ada@example.com").await?;
    tx.commit().await?;
    println!("   queued message {}", ada.id());

    println!("2. Bob registers, but his payment fails: the transaction rolls back.");
    let mut tx = pool.begin().await?;
    let bob = register(&mut tx, "Bob", "bob@example.com").await?;
    tx.rollback().await?;
    println!(
        "   message {} was written in the transaction, and rolled back with it",
        bob.id()
    );
    println!("   no row, and no mail to Bob either");

    println!("3. Ada submits the form twice: the second mail is a duplicate and is skipped.");
    let mut tx = pool.begin().await?;
    let again = register(&mut tx, "Ada", "ada@example.com").await?;
    tx.commit().await?;
    if let Enqueued::Duplicate { existing } = &again {
        println!("   skipped: message {existing} already holds this key; the transaction went on");
    }

    let (rows,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM registrations")
        .fetch_one(&pool)
        .await?;
    println!("\nRegistrations saved: {rows}. Delivering what is queued:");
    let report = outbox.drain().await?;
    println!(
        "\nDone in {:?}: {} delivered, {} failed attempts, {} given up.",
        report.elapsed,
        report.counts.delivered,
        report.counts.failed_attempts,
        report.counts.given_up
    );
    pool.close().await;
    let _ = std::fs::remove_file(&path);
    Ok(())
}
