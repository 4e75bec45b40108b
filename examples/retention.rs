//! Retention: with `Retention::keep_for`, a delivered message stays as a `done` row for a
//! window, and its idempotency key stays taken until the row is pruned.
//!
//! Run it with `cargo run -p outbox-examples --example retention`. It needs no server (a SQLite file in the
//! system's temp directory) and takes about three seconds: the window is 2 s.

use std::time::{Duration, Instant};

use outbox::prelude::*;
use serde::{Deserialize, Serialize};

const WINDOW: Duration = Duration::from_secs(2);

/// A password-reset mail; one per request id.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "retention_demo.reset_mail", key(request))]
struct ResetMail {
    request: String,
}

/// The handler: prints instead of mailing.
async fn send(mail: ResetMail, _ctx: MessageContext) -> Result<(), HandlerError> {
    println!("   reset mail for request {} sent", mail.request);
    Ok(())
}

/// Enqueues the mail of request `r-1` in its own transaction and says what happened.
async fn enqueue_reset(pool: &sqlx::SqlitePool) -> Result<Enqueued, Box<dyn std::error::Error>> {
    let mut tx = pool.begin().await?;
    let result = ResetMail {
        request: "r-1".into(),
    }
    .enqueue(&mut *tx)
    .await?;
    tx.commit().await?;
    match &result {
        Enqueued::New(id) => println!("   enqueue: new message {id}"),
        Enqueued::Duplicate { existing } => {
            println!("   enqueue: duplicate, the key is held by {existing}")
        }
    }
    Ok(result)
}

/// The type's `done` rows (delivered messages kept for the window).
async fn done_rows(admin: &Admin<SqliteBackend>) -> Result<u64, Box<dyn std::error::Error>> {
    Ok(admin.status_counts().await?.iter().map(|c| c.done).sum())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("outbox-retention-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;
    let outbox = Outbox::new(SqliteBackend::new(pool.clone()))
        .retention(Retention::keep_for(WINDOW))
        .register::<ResetMail, _>(send);
    outbox.migrate().await?;
    let admin = outbox.admin();

    println!("1. The mail is enqueued and delivered.");
    let _ = enqueue_reset(&pool).await?;
    outbox.drain().await?;
    println!("   done rows kept: {}", done_rows(&admin).await?);

    println!("2. Within the window the key is still taken: a second enqueue is a duplicate.");
    let second = enqueue_reset(&pool).await?;

    println!("3. After the window, the pruner (running with the workers) deletes the done row.");
    tokio::time::sleep(WINDOW + Duration::from_millis(200)).await;
    let pruned = async {
        let deadline = Instant::now() + Duration::from_secs(30);
        while done_rows(&admin).await.unwrap_or(1) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    outbox.run_until(pruned).await?;
    let left = done_rows(&admin).await?;
    println!("   done rows kept: {left}");

    println!("4. The key is free again: the same enqueue writes a new message.");
    let third = enqueue_reset(&pool).await?;
    outbox.drain().await?;

    pool.close().await;
    let _ = std::fs::remove_file(&path);
    if !second.is_duplicate() || left != 0 || third.is_duplicate() {
        return Err("expected a duplicate within the window and a new message after it".into());
    }
    Ok(())
}
