//! Retries and snoozes: a handler that fails twice and then succeeds, and one that asks to
//! come back later without failing.
//!
//! Run it with `cargo run -p outbox-examples --example retry_and_snooze`. It needs no server (a SQLite file in
//! the system's temp directory) and finishes in about two seconds: the type's retry
//! schedule is 300 ms, then 600 ms, instead of the default minutes. It prints each attempt
//! as it runs, with the time since the start.

use std::{
    sync::atomic::{AtomicU32, Ordering},
    time::{Duration, Instant},
};

use outbox::prelude::*;
use serde::{Deserialize, Serialize};

/// A call to a service that is down for its first two attempts.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "retry_demo.flaky_call", max_attempts = 5)]
struct FlakyCall {
    order: i64,
}

/// A report that is not ready yet the first time its handler looks.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "retry_demo.report")]
struct Report {
    month: String,
}

/// What the handlers share: the start time, and how often the report was not ready.
struct Demo {
    started: Instant,
    not_ready: AtomicU32,
}

impl Demo {
    fn at(&self) -> String {
        format!("{:>6.2} s", self.started.elapsed().as_secs_f64())
    }
}

/// Fails while the "service" is down (attempts 1 and 2), then succeeds.
async fn call_service(call: FlakyCall, ctx: MessageContext<Demo>) -> Result<(), HandlerError> {
    let demo = ctx.state();
    if ctx.attempt() <= 2 {
        println!(
            "{}  flaky_call order {}: attempt {} of {} fails (503 from the service)",
            demo.at(),
            call.order,
            ctx.attempt(),
            ctx.max_attempts()
        );
        return Err(HandlerError::retry("the service answered 503"));
    }
    println!(
        "{}  flaky_call order {}: attempt {} succeeds",
        demo.at(),
        call.order,
        ctx.attempt()
    );
    Ok(())
}

/// Snoozes once (not a failure: the attempt is given back), then succeeds.
async fn build_report(report: Report, ctx: MessageContext<Demo>) -> Result<(), HandlerError> {
    let demo = ctx.state();
    if demo.not_ready.fetch_add(1, Ordering::SeqCst) == 0 {
        println!(
            "{}  report {}: data not ready, snooze 500 ms (attempt {} is given back)",
            demo.at(),
            report.month,
            ctx.attempt()
        );
        return Err(HandlerError::snooze(Duration::from_millis(500)));
    }
    println!(
        "{}  report {}: built on attempt {}",
        demo.at(),
        report.month,
        ctx.attempt()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::temp_dir().join(format!("outbox-retry-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;

    let demo = Demo {
        started: Instant::now(),
        not_ready: AtomicU32::new(0),
    };
    let short = RetrySchedule::fixed([Duration::from_millis(300), Duration::from_millis(600)]);
    let outbox = Outbox::with_state(SqliteBackend::new(pool.clone()), demo)
        .register_with::<FlakyCall, _>(call_service, QueueOptions::new().retry(short))
        .register::<Report, _>(build_report);
    outbox.migrate().await?;

    let mut tx = pool.begin().await?;
    let _ = FlakyCall { order: 42 }.enqueue(&mut *tx).await?;
    let _ = Report {
        month: "2026-10".into(),
    }
    .enqueue(&mut *tx)
    .await?;
    tx.commit().await?;
    println!("Enqueued one flaky call and one report; the workers run until both are done.\n");

    // The workers run until both messages are delivered (or 30 s pass, which would be a bug).
    let both_delivered = async {
        let deadline = Instant::now() + Duration::from_secs(30);
        while outbox.delivery_counts().delivered < 2 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    outbox.run_until(both_delivered).await?;

    let counts = outbox.delivery_counts();
    println!(
        "\n{} delivered, {} failed attempts retried, {} deferred without an attempt (the snooze), {} given up.",
        counts.delivered, counts.failed_attempts, counts.deferred, counts.given_up
    );
    pool.close().await;
    let _ = std::fs::remove_file(&path);
    if counts.delivered != 2 || counts.failed_attempts != 2 {
        return Err("expected two deliveries after two failed attempts".into());
    }
    Ok(())
}
