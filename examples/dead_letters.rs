//! Dead letters: a message fails permanently, an operator finds it with `Admin`, fixes the
//! cause and requeues it from code, and it is delivered.
//!
//! Run it with `cargo run -p outbox-examples --example dead_letters`. It needs no server (a SQLite file in the
//! system's temp directory).

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use outbox::prelude::*;
use serde::{Deserialize, Serialize};

/// An invoice; it cannot be sent while its customer has no billing address.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "dead_letter_demo.invoice", key(number))]
struct Invoice {
    number: i64,
    customer: String,
}

/// Stands for the application's data: whether the customer's address has been fixed.
struct Billing {
    address_fixed: AtomicBool,
}

/// A missing address is not going to fix itself: a permanent error, dead letter at once.
async fn send_invoice(
    invoice: Invoice,
    ctx: MessageContext<Arc<Billing>>,
) -> Result<(), HandlerError> {
    if !ctx.state().address_fixed.load(Ordering::SeqCst) {
        return Err(HandlerError::permanent(format!(
            "customer {} has no billing address",
            invoice.customer
        )));
    }
    println!(
        "   invoice {} sent to {} (attempt {})",
        invoice.number,
        invoice.customer,
        ctx.attempt()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("outbox-dead-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;
    let billing = Arc::new(Billing {
        address_fixed: AtomicBool::new(false),
    });
    let outbox = Outbox::with_state(SqliteBackend::new(pool.clone()), Arc::clone(&billing))
        .register::<Invoice, _>(send_invoice);
    outbox.migrate().await?;

    let mut tx = pool.begin().await?;
    let _ = Invoice {
        number: 1001,
        customer: "ACME Ltd".into(),
    }
    .enqueue(&mut *tx)
    .await?;
    tx.commit().await?;

    println!("1. The first drain: the handler refuses the invoice for good.");
    let report = outbox.drain().await?;
    println!(
        "   {} delivered, {} given up",
        report.counts.delivered, report.counts.given_up
    );

    println!("2. The operator lists the dead letters of the type (newest first, page 0):");
    let dead = outbox.admin().dead_letters();
    let letters = dead
        .list(
            &DeadLetterFilter::type_tag("dead_letter_demo.invoice"),
            0,
            50,
        )
        .await?;
    for letter in &letters {
        println!(
            "   {} after {} of {} attempt(s): {}",
            letter.id, letter.attempts, letter.max_attempts, letter.last_error
        );
        println!(
            "   payload {}, key {:?}",
            String::from_utf8_lossy(&letter.payload),
            letter.idempotency_key
        );
        for attempt in &letter.attempt_log {
            println!("   attempt log: #{} {}", attempt.attempt, attempt.error);
        }
    }
    let Some(letter) = letters.first() else {
        return Err("expected one dead letter".into());
    };

    println!("3. The address is fixed; the dead letter is requeued (due now, attempts reset).");
    billing.address_fixed.store(true, Ordering::SeqCst);
    let requeued = dead.requeue(&letter.id).await?;
    println!("   requeued: {requeued}");

    println!("4. The next drain delivers it, with the same id:");
    let report = outbox.drain().await?;
    let left = dead.count(&DeadLetterFilter::all()).await?;
    println!(
        "   {} delivered, {} given up; {} dead letter(s) left",
        report.counts.delivered, report.counts.given_up, left
    );

    pool.close().await;
    let _ = std::fs::remove_file(&path);
    if report.counts.delivered != 1 || left != 0 {
        return Err("expected the requeued invoice to be delivered".into());
    }
    Ok(())
}
