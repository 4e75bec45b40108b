//! Pause and resume: while the workers run, an operator pauses a message type; new messages
//! of it stay queued and nothing is delivered until it is resumed.
//!
//! Run it with `cargo run -p outbox-examples --example pause`. It needs no server (a SQLite file in the
//! system's temp directory) and takes about two seconds.

use std::time::{Duration, Instant};

use outbox::prelude::*;
use serde::{Deserialize, Serialize};

const TYPE: &str = "pause_demo.newsletter";

/// One newsletter mail.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "pause_demo.newsletter")]
struct Newsletter {
    to: String,
}

/// The handler: prints instead of mailing.
async fn send(mail: Newsletter, _ctx: MessageContext) -> Result<(), HandlerError> {
    println!("   newsletter sent to {}", mail.to);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("outbox-pause-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;
    let outbox = Outbox::new(SqliteBackend::new(pool.clone())).register::<Newsletter, _>(send);
    outbox.migrate().await?;
    let admin = outbox.admin();

    // The operator's side, while the workers below run.
    let operator = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        println!("1. Workers are running. The operator pauses `{TYPE}`.");
        admin.pause(TYPE, "typo in the text").await?;
        for p in admin.paused().await? {
            println!("   paused: {} ({})", p.type_tag, p.reason);
        }

        println!("2. Three newsletters are enqueued; the workers leave them alone for a second.");
        let mut tx = pool.begin().await?;
        for to in ["ada@example.com", "bob@example.com", "eve@example.com"] {
            let _ = Newsletter { to: to.into() }.enqueue(&mut *tx).await?;
        }
        tx.commit().await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let counts = admin.status_counts().await?;
        let pending: u64 = counts.iter().map(|c| c.pending).sum();
        let delivered = outbox.delivery_counts().delivered;
        println!("   after 1 s: {pending} pending, {delivered} delivered");
        if delivered != 0 {
            return Err("a paused type was delivered".into());
        }

        println!("3. The text is fixed; the operator resumes the type.");
        admin.resume(TYPE).await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while outbox.delivery_counts().delivered < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    };

    // `run_until` stops the workers once the operator's story is over.
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let operator = async {
        let result = operator.await;
        let _ = done_tx.send(());
        result
    };
    let (ran, story) = tokio::join!(
        outbox.run_until(async {
            let _ = done_rx.await;
        }),
        operator
    );
    ran?;
    story?;

    let delivered = outbox.delivery_counts().delivered;
    println!("\n{delivered} delivered after the resume.");
    pool.close().await;
    let _ = std::fs::remove_file(&path);
    if delivered != 3 {
        return Err("expected three deliveries after the resume".into());
    }
    Ok(())
}
