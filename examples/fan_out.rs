//! Fan-out: 10,000 messages enqueued with `enqueue_many` in one transaction (one statement
//! per 1,000 rows), then delivered by one `drain`; prints both rates.
//!
//! Run it with `cargo run -p outbox-examples --example fan_out` (or `cargo run --release -p outbox-examples --example fan_out`
//! for representative rates). It needs no server: a SQLite file in the system's temp
//! directory.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

use outbox::prelude::*;
use serde::{Deserialize, Serialize};

const SUBSCRIBERS: i64 = 10_000;

/// One subscriber's copy of an announcement; the key makes a repeated fan-out harmless.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "fan_out_demo.announcement", key(subscriber, issue))]
struct Announcement {
    subscriber: i64,
    issue: i64,
}

/// Counts deliveries instead of sending anything.
async fn deliver(_: Announcement, ctx: MessageContext<AtomicU64>) -> Result<(), HandlerError> {
    ctx.state().fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("outbox-fan-out-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;
    let outbox = Outbox::with_state(SqliteBackend::new(pool.clone()), AtomicU64::new(0))
        .register::<Announcement, _>(deliver);
    outbox.migrate().await?;

    let messages: Vec<Announcement> = (1..=SUBSCRIBERS)
        .map(|subscriber| Announcement {
            subscriber,
            issue: 7,
        })
        .collect();

    let started = Instant::now();
    let mut tx = pool.begin().await?;
    let results = outbox::enqueue_many(&mut *tx, &messages).await?;
    tx.commit().await?;
    let took = started.elapsed();
    println!(
        "Enqueued {} messages in one transaction in {:.0} ms ({:.0} messages/s).",
        results.len(),
        took.as_secs_f64() * 1e3,
        results.len() as f64 / took.as_secs_f64()
    );

    // The same fan-out again: every key is taken, nothing is written.
    let mut tx = pool.begin().await?;
    let again = outbox::enqueue_many(&mut *tx, &messages).await?;
    tx.commit().await?;
    let duplicates = again.iter().filter(|r| r.is_duplicate()).count();
    println!("The same fan-out again: {duplicates} duplicates, nothing written.");

    let report = outbox.drain().await?;
    println!(
        "Drained {} messages in {:.0} ms ({:.0} messages/s).",
        report.counts.delivered,
        report.elapsed.as_secs_f64() * 1e3,
        report.counts.delivered as f64 / report.elapsed.as_secs_f64()
    );

    pool.close().await;
    let _ = std::fs::remove_file(&path);
    if report.counts.delivered != SUBSCRIBERS as u64 || duplicates != SUBSCRIBERS as usize {
        return Err("expected every message delivered once".into());
    }
    Ok(())
}
