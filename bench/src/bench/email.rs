//! Email through the whole path (enqueue → worker → SMTP) into a local sink, and the sender
//! alone, pooled.

use std::{
    sync::{atomic::AtomicUsize, Arc},
    time::Instant,
};

use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, Security, SmtpConfig},
    MessageId,
};

use super::{pools::BenchPool, Figure};

/// Where the sink listens (`OUTBOX_BENCH_SMTP`, default 127.0.0.1:2525).
pub fn sink() -> (String, u16) {
    let addr = std::env::var("OUTBOX_BENCH_SMTP").unwrap_or_else(|_| "127.0.0.1:2525".into());
    let (host, port) = addr
        .rsplit_once(':')
        .expect("OUTBOX_BENCH_SMTP is host:port");
    (host.to_owned(), port.parse().expect("port"))
}

/// Whether something accepts connections at the sink's address.
pub async fn sink_is_up() -> bool {
    let (host, port) = sink();
    tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .is_ok()
}

fn mailer(pool: usize) -> Mailer {
    let (host, port) = sink();
    Mailer::new(MailerConfig::smtp(
        SmtpConfig::new(host)
            .port(port)
            .security(Security::None)
            .pool_size(pool),
    ))
    .expect("mailer config")
}

fn email(i: u64) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(format!("buyer{i}@example.com"))
        .subject(format!("Your order {i}"))
        .text("Thanks for your order! It ships tomorrow.\n".repeat(8))
        .build()
        .expect("valid email")
}

/// CPU seconds (user and system) a process has used so far, from Linux's
/// `/proc/<pid>/stat` (in units of 1/100 s); `None` where there is no such file.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) close with ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// The CPU this process and the sink (`OUTBOX_BENCH_SINK_PID`, when set) have used.
fn cpu_now() -> (Option<f64>, Option<f64>) {
    let sink = std::env::var("OUTBOX_BENCH_SINK_PID").ok();
    (cpu_seconds("self"), sink.as_deref().and_then(cpu_seconds))
}

/// How many cores a phase kept busy: the bench's CPU and the sink's (when known) since
/// `before`, over `wall` seconds; the figure says whether a phase waited or was bound by
/// the machine's two cores.
fn cores_used(name: &str, n: u64, before: (Option<f64>, Option<f64>), wall: f64) -> Vec<Figure> {
    let after = cpu_now();
    let mut figures = Vec::new();
    if let (Some(b0), Some(b1)) = (before.0, after.0) {
        figures.push(Figure::new(
            &format!("{name}.cores.bench"),
            n,
            (b1 - b0) / wall,
            "cores",
        ));
    }
    if let (Some(s0), Some(s1)) = (before.1, after.1) {
        figures.push(Figure::new(
            &format!("{name}.cores.sink"),
            n,
            (s1 - s0) / wall,
            "cores",
        ));
    }
    figures
}

/// `n` emails enqueued, then drained through the full stack with a pool of 16.
pub async fn end_to_end<P: BenchPool>(pool: &P, n: u64) -> Vec<Figure> {
    let mails: Vec<Email> = (0..n).map(email).collect();
    pool.fan_out(&mails).await;
    let mailer = mailer(16);
    let outbox = Outbox::new(pool.backend())
        .register_with::<Email, _>(mailer.handler(), QueueOptions::new().concurrency(16));
    let cpu = cpu_now();
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    let wall = started.elapsed().as_secs_f64();
    let rate = n as f64 / wall;
    let cores = cores_used("email.end_to_end", n, cpu, wall);
    assert_eq!(
        report.counts.delivered, n,
        "every email was delivered: {report:?}"
    );
    mailer.close().await;
    let mut figures = vec![Figure::new("email.end_to_end", n, rate, "msgs/s")];
    figures.extend(cores);
    figures
}

/// The sender alone: `n` emails, 16 at a time over a pool of 16.
pub async fn sender_alone(n: u64) -> Vec<Figure> {
    let mailer = mailer(16);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu = cpu_now();
    let started = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (mailer, next) = (mailer.clone(), Arc::clone(&next));
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) as u64;
                    if i >= n {
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
    for t in tasks {
        t.await.expect("sender task");
    }
    let wall = started.elapsed().as_secs_f64();
    let rate = n as f64 / wall;
    let cores = cores_used("email.sender_pooled", n, cpu, wall);
    mailer.close().await;
    let mut figures = vec![Figure::new("email.sender_pooled", n, rate, "msgs/s")];
    figures.extend(cores);
    figures
}
