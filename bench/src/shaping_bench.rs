//! What traffic shaping costs a drain: the same messages (a type that names its recipient,
//! a handler that does nothing) drained without shaping (the baseline, measured in the same
//! run), with the shipped provider shaping while no recipient's site has limits (the common
//! case: one decode and a lookup in memory per message), and with every recipient in one
//! site capped at 1,000 messages at once (one transaction on the site's row per message,
//! and one to free its slot). SQLite in a temporary file and the machine's PostgreSQL.
//!
//! ```sh
//! cargo run --release -p outbox-bench --bin shaping_bench -- [messages]
//! ```

#[path = "scratch.rs"]
mod scratch;

use std::time::Instant;

use outbox::{
    prelude::*,
    smtp::{domain_of, EmailShaping},
    Recipient, Shaping, SiteLimit,
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(
    type = "bench.mail",
    recipient = "Mail::recipient_of",
    destination = "Mail::destination"
)]
struct Mail {
    email: String,
    n: u64,
}

impl Mail {
    fn recipient_of(&self) -> Option<Recipient> {
        Some(Recipient::bulk(self.email.clone(), None))
    }

    fn destination(&self) -> Option<String> {
        domain_of(&self.email)
    }
}

fn domain(n: u64) -> String {
    format!("example{}.com", n % 50)
}

async fn noop(_: Mail, _: MessageContext<()>) -> Result<(), HandlerError> {
    Ok(())
}

/// The three ways, in order: none, providers (no limits in force), one capped site.
fn configs() -> Vec<(&'static str, Option<Shaping>)> {
    let mut capped = Shaping::new().site("bulk", SiteLimit::concurrent(1_000));
    for n in 0..50 {
        capped = capped.domain(&domain(n), "bulk");
    }
    vec![
        ("no shaping (baseline)", None),
        ("providers, no site limited", Some(Shaping::providers())),
        ("one capped site", Some(capped)),
    ]
}

macro_rules! measure {
    ($pool:expr, $backend:expr, $total:expr) => {{
        let (pool, backend, total) = ($pool, $backend, $total);
        let mut figures = Vec::new();
        for (name, shaping) in configs() {
            for start in (0..total).step_by(500) {
                let mut tx = pool.begin().await.expect("begin");
                let batch: Vec<Mail> = (start..(start + 500).min(total))
                    .map(|n| Mail {
                        email: format!("reader{n}@{}", domain(n)),
                        n,
                    })
                    .collect();
                outbox::enqueue_many(&mut *tx, &batch)
                    .await
                    .expect("enqueue");
                tx.commit().await.expect("commit");
            }
            let mut outbox = Outbox::new(backend.clone());
            if let Some(shaping) = shaping {
                outbox = outbox.shaping(shaping);
            }
            let outbox = outbox.register::<Mail, _>(noop);
            let started = Instant::now();
            let report = outbox.drain().await.expect("drain");
            let rate = report.counts.delivered as f64 / started.elapsed().as_secs_f64();
            assert_eq!(report.counts.delivered, total, "{name}: every message sent");
            figures.push((name, rate));
        }
        figures
    }};
}

fn print(db: &str, total: u64, f: &[(&str, f64)]) {
    println!("{db}: drain of {total} messages (no-op handler)");
    let base = f[0].1;
    for (name, rate) in f {
        println!("  {name:<28} {rate:>8.0}/s   ratio {:.2}", rate / base);
    }
}

#[tokio::main]
async fn main() {
    let total: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("messages: a number"))
        .unwrap_or(20_000);

    let dir = tempfile::tempdir().expect("temp dir");
    let (pool, backend) = scratch::sqlite(dir.path()).await;
    let f = measure!(pool, backend, total);
    print("SQLite", total, &f);

    #[cfg(feature = "postgres")]
    scratch::with_postgres("outbox_shaping_bench", |pool, backend| async move {
        let f = measure!(pool, backend, total);
        print("PostgreSQL", total, &f);
    })
    .await;
}
