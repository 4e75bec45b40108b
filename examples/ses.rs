//! Email through Amazon SES's API (feature `providers`) instead of SMTP: the seed
//! application's "100 emails per second through SES". Order confirmations are enqueued in
//! the order's transaction, checked against SES's limits first (`Mailer::check`), sent at
//! most 100 a second (a rate bucket every process shares), shaped by the provider (a
//! throttle from SES slows every email, not the one that met it), and each email's SES
//! `MessageId` is kept with it (its receipt), so SES's bounce and complaint events find it.
//!
//! Run it against SES (keys from the environment, `~/.aws`, or an instance or container
//! role; the recipients are SES's mailbox simulator, which accepts mail without sending
//! it; `SES_FROM` must be an identity verified in your account):
//!
//! ```sh
//! MAILER_URL=ses://eu-west-1 SES_FROM=shop@your-domain.example \
//!     cargo run -p outbox-examples --example ses
//! ```
//!
//! CI runs it against moto's SES emulator on loopback
//! (`MAILER_URL=ses://us-east-1?host=127.0.0.1:PORT&tls=none`).

use std::time::{Duration, Instant};

use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig},
    DeadLetterFilter, RateLimit, Shaping,
};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Orders placed by the demo.
const ORDERS: usize = 200;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .init();
    let Ok(url) = std::env::var("MAILER_URL") else {
        eprintln!(
            "set MAILER_URL to an SES URL, e.g. MAILER_URL=ses://eu-west-1 \
             SES_FROM=shop@your-domain.example (an identity verified in your account)"
        );
        std::process::exit(2);
    };
    let from = std::env::var("SES_FROM").unwrap_or_else(|_| "shop@shop.example".into());
    let mailer = Mailer::new(MailerConfig::from_url(&url)?)?;
    let site = mailer.site().ok_or("MAILER_URL is not a provider's API")?;

    let path = std::env::temp_dir().join(format!("outbox-ses-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;
    let outbox = Outbox::new(SqliteBackend::new(pool.clone()))
        .rate_limit("ses", RateLimit::per_second(100.0).burst(2))
        .shaping(Shaping::new().one_site(&site))
        .register_with::<Email, _>(
            mailer.handler(),
            QueueOptions::new().rate_limit("ses").concurrency(16),
        );
    outbox.migrate().await?;
    sqlx::query("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, email TEXT)")
        .execute(&pool)
        .await?;

    // Each order and its confirmation commit together, or neither does.
    let mut ids = Vec::new();
    for n in 0..ORDERS {
        let to = format!("success+order{n}@simulator.amazonses.com");
        let email = Email::builder()
            .from(from.as_str())
            .to(to.as_str())
            .subject(format!("Order {n} confirmed"))
            .text(format!("Thanks for order {n}. It ships tomorrow."))
            .build()?;
        mailer.check(&email)?;
        let mut tx = pool.begin().await?;
        sqlx::query("INSERT INTO orders (email) VALUES (?)")
            .bind(&to)
            .execute(&mut *tx)
            .await?;
        ids.push(email.enqueue(&mut *tx).await?.id().clone());
        tx.commit().await?;
    }

    let started = Instant::now();
    let report = outbox.drain().await?;
    let took = started.elapsed();
    let admin = outbox.admin();
    let dead = admin
        .dead_letters()
        .list(&DeadLetterFilter::all(), 0, 5)
        .await?;
    for d in &dead {
        eprintln!("dead letter {}: {}", d.id, d.last_error);
    }
    let mut receipts = 0;
    for id in &ids {
        let events = admin.messages().events(id).await?;
        if let Some(r) = events.iter().find(|e| e.kind == "accepted") {
            receipts += 1;
            if receipts <= 3 {
                println!("order email {id}: SES MessageId {}", r.external_id);
            }
        }
    }
    println!(
        "{} of {ORDERS} confirmations sent through {site} in {:.1} s ({:.0}/s, limit 100/s); \
         {receipts} receipts kept; {} dead letters",
        report.counts.delivered,
        took.as_secs_f64(),
        report.counts.delivered as f64 / took.as_secs_f64().max(f64::EPSILON),
        dead.len()
    );
    let _ = std::fs::remove_file(&path);
    if report.counts.delivered as usize != ORDERS || receipts != ORDERS || !dead.is_empty() {
        return Err("not every confirmation was sent and kept its receipt".into());
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}
