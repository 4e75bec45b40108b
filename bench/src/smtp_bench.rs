//! SMTP throughput into a local sink: our sender on one connection and with pools of
//! 4, 8 and 16, and plain lettre 0.11 (no `TCP_NODELAY`) on one connection as the baseline.
//!
//! ```sh
//! scripts/bench-smtp.sh                    # installs and starts postfix's smtp-sink, runs this
//! cargo run --release -p outbox-bench --bin smtp_bench -- 127.0.0.1:2525 [messages]
//! ```
//!
//! Each send renders the email (lettre's builder) and runs MAIL, RCPT, DATA; the sink
//! accepts everything. Figures are messages per second, wall time.

use std::{sync::Arc, time::Instant};

use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use outbox::{
    smtp::{Email, Mailer, MailerConfig, Security, SmtpConfig},
    MessageId,
};

const BASELINE_MESSAGES: usize = 60;

fn email(i: usize) -> Email {
    Email::builder()
        .from("Bench <bench@example.com>")
        .to(format!("user{i}@example.com"))
        .subject(format!("Benchmark message {i}"))
        .text("A short text body, about as long as a confirmation mail.\n".repeat(8))
        .build()
        .expect("valid email")
}

/// Sends `total` messages through a mailer with `pool` connections, `pool` at a time.
async fn ours(host: &str, port: u16, pool: usize, total: usize) -> f64 {
    let config = SmtpConfig::new(host)
        .port(port)
        .security(Security::None)
        .pool_size(pool);
    let mailer = Mailer::new(MailerConfig::smtp(config)).expect("config");
    // Open the connections before the clock starts.
    let warm: Vec<_> = (0..pool)
        .map(|i| {
            let mailer = mailer.clone();
            tokio::spawn(async move { mailer.deliver_now(&email(i)).await })
        })
        .collect();
    for w in warm {
        w.await.expect("task").expect("warm-up send");
    }
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..pool)
        .map(|_| {
            let (mailer, next) = (mailer.clone(), Arc::clone(&next));
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let id = MessageId::from_string(format!("01BENCH{i:019}"));
                    mailer
                        .deliver(&email(i), &id, "outbox.email")
                        .await
                        .expect("send");
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("task");
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    mailer.close().await;
    rate
}

/// Plain lettre: its own pooled transport (one connection), which never sets TCP_NODELAY.
async fn plain_lettre(host: &str, port: u16, total: usize) -> f64 {
    let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(port)
        .pool_config(lettre::transport::smtp::PoolConfig::new().max_size(1))
        .build();
    let message = |i: usize| {
        lettre::Message::builder()
            .from("Bench <bench@example.com>".parse().unwrap())
            .to(format!("user{i}@example.com").parse().unwrap())
            .subject(format!("Benchmark message {i}"))
            .body("A short text body, about as long as a confirmation mail.\n".repeat(8))
            .unwrap()
    };
    transport.send(message(0)).await.expect("warm-up send");
    let started = Instant::now();
    for i in 0..total {
        transport.send(message(i)).await.expect("send");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = args.first().map_or("127.0.0.1:2525", String::as_str);
    let total: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    let port: u16 = port.parse().expect("port");
    println!("SMTP sink at {host}:{port}, {total} messages per run\n");
    println!("{:<48} {:>10}", "sender", "msgs/s");
    let rate = ours(host, port, 1, total / 4).await;
    println!("{:<48} {:>10.0}", "outbox-smtp, 1 connection", rate);
    for pool in [4, 8, 16] {
        let rate = ours(host, port, pool, total).await;
        println!(
            "{:<48} {:>10.0}",
            format!("outbox-smtp, pool of {pool}"),
            rate
        );
    }
    let rate = plain_lettre(host, port, BASELINE_MESSAGES).await;
    println!(
        "{:<48} {:>10.1}",
        format!("plain lettre 0.11, 1 connection ({BASELINE_MESSAGES} msgs)"),
        rate
    );
}
