//! What the suppression list costs: the same messages enqueued and drained as a type that
//! names no recipient (the baseline, measured in the same run) and as a type that does
//! (checked at enqueue inside the insert, and again per claimed batch), against a list of
//! 100,000 entries that stops 1 in 100 of the messages. SQLite in a temporary file and the
//! machine's PostgreSQL.
//!
//! ```sh
//! cargo run --release -p outbox-bench --bin suppression_bench -- [messages]
//! ```
//!
//! Figures: messages per second enqueued (transactions of 100) and drained (a handler that
//! does nothing), and the ratio to the baseline.

#[path = "scratch.rs"]
mod scratch;

use std::time::Instant;

use outbox::{prelude::*, Admin, NewSuppression, Recipient, SuppressionReason, SuppressionScope};
use serde::{Deserialize, Serialize};

/// The baseline: no recipient named.
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "bench.plain")]
struct Plain {
    email: String,
    n: u64,
}

/// The same message naming its recipient (bulk mail of a list).
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "bench.mail", recipient = "Mail::recipient_of")]
struct Mail {
    email: String,
    n: u64,
}

impl Mail {
    fn recipient_of(&self) -> Option<Recipient> {
        Some(Recipient::bulk(self.email.clone(), Some("weekly".into())))
    }
}

fn address(n: u64) -> String {
    format!("reader{n}@example{}.com", n % 50)
}

async fn noop<M>(_: M, _: MessageContext<()>) -> Result<(), HandlerError> {
    Ok(())
}

/// 100,000 entries: every 100th message's address, the rest addresses nobody mails.
fn entries(total: u64) -> Vec<NewSuppression> {
    (0..100_000u64)
        .map(|i| {
            let a = if i * 100 < total {
                address(i * 100)
            } else {
                format!("gone{i}@elsewhere{}.org", i % 97)
            };
            NewSuppression::new(&a, SuppressionScope::All, SuppressionReason::HardBounce)
                .expect("address")
        })
        .collect()
}

macro_rules! measure {
    ($pool:expr, $backend:expr, $total:expr) => {{
        let (pool, backend, total) = ($pool, $backend, $total);
        let admin = Admin::new(backend.clone());
        for chunk in entries(total).chunks(1_000) {
            admin
                .suppressions()
                .add_all(chunk)
                .await
                .expect("add suppressions");
        }
        let mut figures = Vec::new();
        for with_recipient in [false, true] {
            let started = Instant::now();
            for start in (0..total).step_by(100) {
                let mut tx = pool.begin().await.expect("begin");
                let ns = start..(start + 100).min(total);
                if with_recipient {
                    let batch: Vec<Mail> = ns
                        .map(|n| Mail {
                            email: address(n),
                            n,
                        })
                        .collect();
                    outbox::enqueue_many(&mut *tx, &batch)
                        .await
                        .expect("enqueue");
                } else {
                    let batch: Vec<Plain> = ns
                        .map(|n| Plain {
                            email: address(n),
                            n,
                        })
                        .collect();
                    outbox::enqueue_many(&mut *tx, &batch)
                        .await
                        .expect("enqueue");
                }
                tx.commit().await.expect("commit");
            }
            let enqueue = total as f64 / started.elapsed().as_secs_f64();
            let started = Instant::now();
            let outbox = Outbox::new(backend.clone());
            let outbox = if with_recipient {
                outbox.register::<Mail, _>(noop::<Mail>)
            } else {
                outbox.register::<Plain, _>(noop::<Plain>)
            };
            let report = outbox.drain().await.expect("drain");
            let drain = report.counts.delivered as f64 / started.elapsed().as_secs_f64();
            figures.push((enqueue, drain, report.counts.delivered));
        }
        figures
    }};
}

fn print(db: &str, total: u64, f: &[(f64, f64, u64)]) {
    let (base, checked) = (f[0], f[1]);
    println!("{db}: {total} messages, a suppression list of 100,000 entries");
    println!(
        "  enqueue  no recipient (baseline) {:>8.0}/s   with recipient {:>8.0}/s   ratio {:.2}",
        base.0,
        checked.0,
        checked.0 / base.0
    );
    println!(
        "  drain    no recipient (baseline) {:>8.0}/s   with recipient {:>8.0}/s   ratio {:.2}   ({} of {total} sent, the rest suppressed)",
        base.1, checked.1, checked.1 / base.1, checked.2
    );
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
    scratch::with_postgres("outbox_suppression_bench", |pool, backend| async move {
        let f = measure!(pool, backend, total);
        print("PostgreSQL", total, &f);
    })
    .await;
}
